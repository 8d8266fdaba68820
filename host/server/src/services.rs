//! What a server is given to work with: the index, the header writers,
//! and what `health` reports.

use std::sync::Arc;

use chatmill_chunking::header::HeaderWriter;
use chatmill_index::Index;

/// What the server writes and searches with.
pub struct Services {
    /// `None`: chunk files and manifest only.
    pub index: Option<Arc<Index>>,
    /// Writes headers inside the turn (the built-in writer, or a model
    /// writer behind a deadline).
    pub header: Arc<dyn HeaderWriter>,
    /// The slow writer that backfills stand-in headers (`None`: no model
    /// configured, nothing is ever queued).
    pub backfill: Option<Arc<dyn HeaderWriter>>,
    /// Replaces the secrets of each turn before it is logged, chunked or
    /// indexed (`None`: redaction is off).
    pub redactor: Option<Arc<chatmill_redact::Redactor>>,
    /// For `health`.
    pub adapters: Vec<String>,
    pub version: String,
}
