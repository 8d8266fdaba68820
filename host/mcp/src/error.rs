//! Why an MCP server stops other than by its client closing the
//! connection, and what the user can do about it.

use std::net::SocketAddr;

/// Why the server stopped other than by its client closing the connection.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("the MCP session could not start: {0}")]
    Start(String),
    #[error("the MCP session ended with an error: {0}")]
    Session(String),
    #[error("refusing to listen on the non-loopback address {0}")]
    NotLoopback(SocketAddr),
    #[error("MCP over HTTP needs a token (`--token` or CHATMILL_TOKEN)")]
    NoToken,
}

impl McpError {
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Self::NotLoopback(_) => Some("chatmill mcp listens on 127.0.0.1 or ::1 only"),
            Self::NoToken => {
                Some("pass `--token SECRET`; clients send `Authorization: Bearer SECRET`")
            }
            _ => Some(
                "the MCP client closed the session or spoke something else; start `chatmill mcp` from an MCP client",
            ),
        }
    }

    /// A usage error (nothing was served), not a failed session.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::NotLoopback(_) | Self::NoToken)
    }
}
