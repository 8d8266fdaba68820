//! How a server is set up: where it listens, who may talk to it, and how
//! it batches turns.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::protocol::MAX_LINE;

/// Turns written as one batch at most: one embedding call takes 64 texts
/// ([`Index`](chatmill_index::Index) embeds in calls of 64).
pub const MAX_BATCH: usize = 64;

/// How long a batch waits for turns it expects
/// ([`Batcher`](crate::writer::Batcher)): about what a client on this
/// machine takes from an answer to its next request.
pub const BATCH_WAIT: Duration = Duration::from_millis(2);

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub root: PathBuf,
    /// The Unix socket (created 0600).
    pub socket: PathBuf,
    /// Also listen on this loopback TCP address.
    pub tcp: Option<std::net::SocketAddr>,
    /// Allow a non-loopback TCP address.
    pub allow_remote: bool,
    /// Required (`auth`) on TCP connections.
    pub token: Option<String>,
    pub max_line: usize,
    /// How often the backfill thread looks at the queue.
    pub backfill_every: Duration,
    /// Connections served at once (others wait to be accepted).
    pub max_connections: usize,
    /// Turns the writer takes at once (1: one at a time). Default
    /// [`MAX_BATCH`], or `CHATMILL_SERVE_BATCH`.
    pub max_batch: usize,
    /// How long a batch waits for the next turns of the clients the last
    /// batch answered, when they were several
    /// ([`Batcher`](crate::writer::Batcher)).
    pub batch_wait: Duration,
    /// Notified to stop (as SIGTERM would): for embedding the server.
    pub shutdown: Arc<tokio::sync::Notify>,
}

impl ServerConfig {
    pub fn new(root: &Path, socket: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            socket: socket.to_path_buf(),
            tcp: None,
            allow_remote: false,
            token: None,
            max_line: MAX_LINE,
            backfill_every: Duration::from_secs(5),
            max_connections: 4096,
            max_batch: std::env::var("CHATMILL_SERVE_BATCH")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|&n| n > 0)
                .unwrap_or(MAX_BATCH),
            batch_wait: BATCH_WAIT,
            shutdown: Arc::new(tokio::sync::Notify::new()),
        }
    }
}
