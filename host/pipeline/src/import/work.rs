//! What importing one input works on and reports to: narrow borrows of
//! what the run holds.

use chatmill_root::assets::Assets;
use chatmill_root::manifest::Manifest;

use super::ahead;
use super::options::{ImportOptions, Services};
use super::summary::Summary;
use crate::processor::Processor;
use crate::sink::IndexSink;

/// What importing one input works on and reports to.
pub struct Work<'r, 'p, 's> {
    pub svc: &'r Services<'s>,
    /// The inputs parsed ahead of their turn.
    pub ahead: &'r mut ahead::Ahead<'p, 's>,
    pub opts: &'r ImportOptions,
    pub processor: &'r mut Processor<'s>,
    pub manifest: &'r mut Manifest,
    pub summary: &'r mut Summary,
    /// The export files attachments may link.
    pub assets: &'r Assets<'r>,
    /// Inputs a reprocess reads again whatever their hash.
    pub due: Option<&'r std::collections::BTreeSet<String>>,
    /// The conversation notes: a new conversation's is written at its
    /// commit, the others' after the input.
    pub notes: &'r mut chatmill_root::notes::Notes,
    /// The run's index sink: committed chunks are indexed in batches
    /// across inputs, on a thread of their own.
    pub index: Option<&'r IndexSink<'p>>,
}
