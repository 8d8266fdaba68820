//! A small blocking client (what `chatmill turn` and the tests use).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use serde_json::{Value, json};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach the chatmill server at `{at}`: {source}")]
    Connect {
        at: String,
        #[source]
        source: std::io::Error,
    },
    #[error("connection to the chatmill server lost: {0}")]
    Io(#[from] std::io::Error),
    #[error("the server answered something that is not a response: {0}")]
    Garbled(String),
    #[error("server error {code}: {message}")]
    Remote {
        code: i64,
        message: String,
        hint: Option<String>,
    },
}

impl ClientError {
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Connect { .. } => {
                Some("start it with `chatmill serve` (same `--root`), or pass `--socket`".into())
            }
            Self::Remote { hint, .. } => hint.clone(),
            _ => None,
        }
    }
}

pub struct Client {
    reader: BufReader<Box<dyn std::io::Read + Send>>,
    writer: Box<dyn Write + Send>,
    next_id: u64,
}

impl Client {
    pub fn unix(path: &Path) -> Result<Self, ClientError> {
        let s = std::os::unix::net::UnixStream::connect(path).map_err(|source| {
            ClientError::Connect {
                at: path.display().to_string(),
                source,
            }
        })?;
        let r = s.try_clone()?;
        Ok(Self {
            reader: BufReader::new(Box::new(r)),
            writer: Box::new(s),
            next_id: 1,
        })
    }

    pub fn tcp(addr: &str, token: Option<&str>) -> Result<Self, ClientError> {
        let s = std::net::TcpStream::connect(addr).map_err(|source| ClientError::Connect {
            at: addr.to_string(),
            source,
        })?;
        s.set_nodelay(true)?;
        let r = s.try_clone()?;
        let mut c = Self {
            reader: BufReader::new(Box::new(r)),
            writer: Box::new(s),
            next_id: 1,
        };
        if let Some(t) = token {
            c.call("auth", json!({ "token": t }))?;
        }
        Ok(c)
    }

    /// One request, one answer.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.writer.write_all(format!("{line}\n").as_bytes())?;
        self.writer.flush()?;
        let mut answer = String::new();
        if self.reader.read_line(&mut answer)? == 0 {
            return Err(ClientError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            )));
        }
        let v: Value =
            serde_json::from_str(&answer).map_err(|_| ClientError::Garbled(answer.clone()))?;
        if let Some(e) = v.get("error") {
            return Err(ClientError::Remote {
                code: e["code"].as_i64().unwrap_or(0),
                message: e["message"].as_str().unwrap_or("").to_string(),
                hint: e["data"]["hint"].as_str().map(str::to_string),
            });
        }
        v.get("result").cloned().ok_or(ClientError::Garbled(answer))
    }
}
