//! chatmill's memory as a Model Context Protocol server (`chatmill mcp`):
//! the tools `search`, `recent`, `get_chunk`, `get_conversation`, and
//! `record_turn` when the server may write. The protocol (framing, version
//! negotiation, cancellation) is the official Rust SDK's (`rmcp`); this
//! crate is the handler: [`tools`] says what each tool takes and returns,
//! [`memory`] does it against a root. Tool calls run on tokio's blocking
//! pool (searches and chunk files are blocking work); a cancelled call's
//! answer is dropped.

mod error;
mod http;
pub mod memory;
mod server;
mod stdio;
pub mod tools;

pub use error::McpError;
pub use memory::{Entries, Entry, Memory, MemoryError};
pub use server::Server;
