//! The input an adapter reads, as the host holds it behind the
//! `input.source` resource.

use std::io::Read;

/// The host side of the `input.source` resource.
pub struct SourceState {
    pub(crate) name: String,
    pub(crate) size_hint: Option<u64>,
    pub(crate) reader: Box<dyn Read + Send>,
    pub(crate) consumed: u64,
    /// The input is handed over 1 byte per `read` until this offset (a
    /// conformance check; 0 otherwise).
    pub(crate) trickle_until: u64,
}
