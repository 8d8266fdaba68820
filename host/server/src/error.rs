//! Why a server could not start, and what the user can do about it.

use std::path::PathBuf;

use chatmill_pipeline::inline::InlineError;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("a chatmill server is already listening on `{0}`")]
    AlreadyRunning(PathBuf),
    #[error("cannot listen on `{what}`: {source}")]
    Listen {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("refusing to listen on the non-loopback address {0}")]
    NotLoopback(std::net::SocketAddr),
    #[error("TCP needs a token (`--token` or CHATMILL_TOKEN)")]
    NoToken,
    #[error(transparent)]
    Inline(#[from] InlineError),
}

impl ServerError {
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::AlreadyRunning(_) => {
                Some("stop the other server, or give this one another `--socket`".into())
            }
            Self::NotLoopback(_) => Some(
                "chatmill listens on 127.0.0.1/::1 only; `--allow-remote` overrides (with a token)"
                    .into(),
            ),
            Self::NoToken => Some("pass `--token SECRET` (clients `auth` with it)".into()),
            _ => None,
        }
    }
}
