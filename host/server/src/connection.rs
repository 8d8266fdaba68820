//! One client connection: its requests read line by line, each answered
//! on the same connection.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::line::{Line, next_line};
use crate::methods::handle;
use crate::protocol::{ErrorObject, Response, code};
use crate::shared::Shared;

pub(crate) async fn serve<S>(stream: S, shared: Arc<Shared>, trusted: bool)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    use tokio::io::AsyncWriteExt;
    shared.connections.fetch_add(1, Ordering::Relaxed);
    let mut authed = trusted || shared.token.is_none();
    let (read, mut write) = tokio::io::split(stream);
    let mut read = tokio::io::BufReader::with_capacity(64 << 10, read);
    let mut buf = Vec::new();
    let mut stopping = shared.stopping.subscribe();
    loop {
        let line = tokio::select! {
            l = next_line(&mut read, &mut buf, shared.max_line) => l,
            // Waiting for a request while the server stops: close.
            _ = stopping.wait_for(|s| *s) => break,
        };
        let Ok(Some(line)) = line else { break };
        let response = match line {
            // Bytes, not text: invalid UTF-8 is an error for that line, not
            // for the connection.
            Line::Text(bytes) => match std::str::from_utf8(&bytes) {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => handle(line, &shared, &mut authed).await,
                Err(e) => Some(Response::err(
                    Value::Null,
                    ErrorObject::new(code::PARSE_ERROR, format!("not UTF-8: {e}")),
                )),
            },
            Line::TooLong => Some(Response::err(
                Value::Null,
                ErrorObject::new(
                    code::TOO_LARGE,
                    format!("request line over {} bytes", shared.max_line),
                )
                .with_hint("send large texts in several turns, or raise the server's `--max-line`"),
            )),
        };
        if let Some(r) = response {
            let mut out = r.line();
            out.push('\n');
            if write.write_all(out.as_bytes()).await.is_err() {
                break;
            }
        }
    }
    shared.connections.fetch_sub(1, Ordering::Relaxed);
}
