//! Line-at-a-time reading for JSONL and text formats, with a cap on line
//! length: an over-long line is skipped (and reported) instead of growing
//! memory without bound.

use std::io::Read;

use crate::model::{ErrorKind, Location, ParseError};

const BUF_SIZE: usize = 64 * 1024;

/// One line of input, without its `\n`.
#[derive(Debug)]
pub struct Line<'a> {
    /// 1-based line number.
    pub number: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    pub bytes: &'a [u8],
    /// The line was longer than the cap; `bytes` is empty.
    pub too_long: bool,
    /// The input ended without a final `\n` after this line (a partial last
    /// line, normal while a session file is still being written).
    pub unterminated: bool,
}

pub struct LineReader<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    base: u64,
    eof: bool,
    line_no: u64,
    max_line: usize,
    /// Consumed bytes of the current over-long line.
    line: Vec<u8>,
}

impl<R: Read> LineReader<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            buf: vec![0; BUF_SIZE],
            start: 0,
            end: 0,
            base: 0,
            eof: false,
            line_no: 0,
            max_line: 256 * 1024 * 1024,
            line: Vec::new(),
        }
    }

    /// Caps one line's length (default 256 MiB).
    pub fn with_max_line(mut self, bytes: usize) -> Self {
        self.max_line = bytes;
        self
    }

    fn read_more(&mut self) -> Result<usize, ParseError> {
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(ParseError::new(
                        ErrorKind::Internal,
                        format!("reading input failed: {e}"),
                    )
                    .at(Location::line(self.line_no + 1)));
                }
            }
        }
    }

    /// The next line, or `None` at the end of input.
    pub fn next_line(&mut self) -> Result<Option<Line<'_>>, ParseError> {
        self.line.clear();
        let mut too_long = false;
        let offset = self.base + self.start as u64;
        loop {
            if let Some(i) = self.buf[self.start..self.end]
                .iter()
                .position(|&b| b == b'\n')
            {
                let line_end = self.start + i;
                self.line_no += 1;
                let from = self.start;
                self.start = line_end + 1;
                if too_long || self.line.len() + (line_end - from) > self.max_line {
                    return Ok(Some(self.make(offset, &[], true, false)));
                }
                if self.line.is_empty() {
                    let number = self.line_no;
                    return Ok(Some(Line {
                        number,
                        offset,
                        bytes: &self.buf[from..line_end],
                        too_long: false,
                        unterminated: false,
                    }));
                }
                self.line.extend_from_slice(&self.buf[from..line_end]);
                return Ok(Some(Line {
                    number: self.line_no,
                    offset,
                    bytes: &self.line,
                    too_long: false,
                    unterminated: false,
                }));
            }
            // No newline in the buffer: keep the partial line and read more.
            if self.eof {
                if self.start == self.end && self.line.is_empty() && !too_long {
                    return Ok(None);
                }
                self.line_no += 1;
                let (from, to) = (self.start, self.end);
                self.start = self.end;
                if too_long || self.line.len() + (to - from) > self.max_line {
                    return Ok(Some(self.make(offset, &[], true, true)));
                }
                self.line.extend_from_slice(&self.buf[from..to]);
                return Ok(Some(Line {
                    number: self.line_no,
                    offset,
                    bytes: &self.line,
                    too_long: false,
                    unterminated: true,
                }));
            }
            if !too_long {
                self.line.extend_from_slice(&self.buf[self.start..self.end]);
                if self.line.len() > self.max_line {
                    too_long = true;
                    self.line.clear();
                }
            }
            self.base += self.end as u64;
            self.start = 0;
            self.end = 0;
            let n = self.read_more()?;
            if n == 0 {
                self.eof = true;
            }
            self.end = n;
        }
    }

    fn make(
        &self,
        offset: u64,
        bytes: &'static [u8],
        too_long: bool,
        unterminated: bool,
    ) -> Line<'_> {
        Line {
            number: self.line_no,
            offset,
            bytes,
            too_long,
            unterminated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8], max: usize, chunk: usize) -> Vec<(u64, String, bool, bool)> {
        struct Chunked<'a>(&'a [u8], usize);
        impl Read for Chunked<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut r = LineReader::new(Chunked(input, chunk)).with_max_line(max);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push((
                l.number,
                String::from_utf8_lossy(l.bytes).into_owned(),
                l.too_long,
                l.unterminated,
            ));
        }
        out
    }

    #[test]
    fn lines_are_the_same_whatever_the_read_size() {
        let text = b"one\n\ntwo two\nthree";
        for chunk in [1, 2, 3, 7, 1024] {
            assert_eq!(
                collect(text, 100, chunk),
                [
                    (1, "one".into(), false, false),
                    (2, String::new(), false, false),
                    (3, "two two".into(), false, false),
                    (4, "three".into(), false, true),
                ],
                "read size {chunk}"
            );
        }
    }

    #[test]
    fn over_long_lines_are_flagged_and_skipped() {
        for chunk in [1, 4, 1024] {
            let got = collect(b"ok\n0123456789\nfine\n", 5, chunk);
            assert_eq!(
                got,
                [
                    (1, "ok".into(), false, false),
                    (2, String::new(), true, false),
                    (3, "fine".into(), false, false),
                ],
                "read size {chunk}"
            );
        }
    }

    #[test]
    fn empty_input_has_no_lines() {
        assert!(collect(b"", 10, 4).is_empty());
    }
}
