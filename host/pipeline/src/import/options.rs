//! What an import is asked to do (its options), what it runs with (its
//! services), and the progress it reports.

use std::path::PathBuf;

use chatmill_chunking::header::HeaderWriter;
use chatmill_index::Indexer;
use chatmill_redact::Redactor;
use chatmill_runtime::{AdapterSet, Runtime};

use crate::processor::ProcessorConfig;

#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The root: chunk files and the manifest live here; `raw/` is the
    /// default input.
    pub root: PathBuf,
    /// Files or folders; empty means `ROOT/raw`.
    pub inputs: Vec<PathBuf>,
    /// Use this adapter for every input instead of sniffing.
    pub adapter_id: Option<String>,
    pub processor: ProcessorConfig,
    /// Read again the inputs an older chatmill read (`import --reprocess`).
    pub reprocess: Option<Reprocess>,
    /// The inputs may still be being written (a hook's transcript): a
    /// conversation's unfinished last pair waits for a later import.
    pub live: bool,
}

/// What an import runs with.
pub struct Services<'a> {
    pub runtime: &'a Runtime,
    pub adapters: &'a AdapterSet,
    pub header: &'a dyn HeaderWriter,
    /// `None`: chunk files and manifest only.
    pub indexer: Option<&'a dyn Indexer>,
    /// Replaces the secrets of every conversation parsed (and of text
    /// assets copied) before anything is made of it; `None`: redaction is
    /// off for this run (`--no-redact`, or `[redact] enabled = false`).
    pub redactor: Option<&'a Redactor>,
}

/// Progress events, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    Inventory {
        files: usize,
    },
    File {
        index: usize,
        of: usize,
        name: &'a str,
    },
}

/// `import --reprocess`: which outdated inputs to read again.
#[derive(Debug, Clone, Default)]
pub struct Reprocess {
    /// Only inputs whose chunks are of this platform, or that this adapter
    /// read (`None`: every outdated input).
    pub only: Option<String>,
}

impl Services<'_> {
    /// The rule-set version the chunks of this run are redacted with
    /// (`None`: redaction is off).
    pub fn redaction(&self) -> Option<u32> {
        self.redactor.map(|_| chatmill_redact::RULESET_VERSION)
    }
}
