//! Request lines as a connection reads them: `\n`-terminated, at most a
//! set number of bytes.

/// One line read from a client.
pub(crate) enum Line {
    Text(Vec<u8>),
    /// Longer than the limit: read up to its newline and thrown away.
    TooLong,
}

/// Reads the next `\n`-terminated line, keeping at most `max` bytes: an
/// oversized line is discarded up to its newline and reported, and the
/// connection carries on. `None` at end of stream.
pub(crate) async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<Line>> {
    use tokio::io::AsyncBufReadExt;
    buf.clear();
    let mut discarding = false;
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            // End of stream: a half-written last request is dropped.
            return Ok(None);
        }
        match avail.iter().position(|&b| b == b'\n') {
            Some(i) => {
                let too_long = discarding || buf.len() + i > max;
                if !too_long {
                    buf.extend_from_slice(&avail[..i]);
                }
                r.consume(i + 1);
                return Ok(Some(if too_long {
                    Line::TooLong
                } else {
                    Line::Text(std::mem::take(buf))
                }));
            }
            None => {
                let n = avail.len();
                if !discarding && buf.len() + n > max {
                    discarding = true;
                    buf.clear();
                    buf.shrink_to(64 << 10);
                }
                if !discarding {
                    buf.extend_from_slice(avail);
                }
                r.consume(n);
            }
        }
    }
}
