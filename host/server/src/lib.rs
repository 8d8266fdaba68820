//! `chatmill serve`: inline mode behind a local socket.
//!
//! An orchestrator (a chat app, an agent loop) sends every finished
//! exchange as a `turn`; before the answer goes back, the exchange is in the
//! session's raw log, in a chunk file and in the index, so the very next
//! `search` can find it. The protocol is in `docs/protocol.md`
//! ([`protocol`]).
//!
//! Shape: connections are tokio tasks (many clients, idle ones cost little);
//! all writes go through one writer thread that owns the
//! [`InlineWriter`] (so turns of a session are logged in the order they
//! arrive). The writer takes every turn waiting in its queue, up to
//! [`ServerConfig::max_batch`], as one batch ([`InlineWriter::turns`]: one
//! embedding call, one index write, one manifest save), so that turns that
//! arrive together wait for one model call, not one each; searches run on
//! the blocking pool; a backfill thread asks the
//! slow header model for the headers that missed their deadline, without
//! holding up turns. SIGTERM/SIGINT: stop accepting, finish the turns in
//! flight, exit.
//!
//! [`InlineWriter`]: chatmill_pipeline::inline::InlineWriter
//! [`InlineWriter::turns`]: chatmill_pipeline::inline::InlineWriter::turns

mod backfill;
pub mod client;
mod config;
mod connection;
mod error;
mod lifecycle;
mod line;
mod listen;
mod methods;
pub mod protocol;
mod services;
mod shared;
pub mod token;
mod writer;

pub use config::{BATCH_WAIT, MAX_BATCH, ServerConfig};
pub use error::ServerError;
pub use lifecycle::run;
pub use services::Services;
