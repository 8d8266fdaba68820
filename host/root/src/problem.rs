//! What a check of the root finds wrong: `verify` reports these, and the
//! parts of the root that can find them while they work (a chunk file that
//! does not parse while scanning, an asset or note out of step) say them in
//! the same shape.

use serde::Serialize;

/// One thing that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// `unparsable`, `invalid-field`, `duplicate-id`, `missing-file`,
    /// `not-in-manifest`, `not-indexed`, `orphan-in-index`, `manifest`,
    /// `index`, `asset-missing`, `asset-changed`, `note-missing`,
    /// `note-outdated`, `note-orphan`.
    pub kind: &'static str,
    /// The chunk file or chunk id concerned.
    pub subject: String,
    pub message: String,
}
