//! What an import reports: the summary the spec asks for, with each
//! skipped, failed or warned-about input as a problem.

use serde::Serialize;

/// What happened to one skipped or failed input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileProblem {
    pub file: String,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Whether running again may help (time limits, I/O).
    pub retryable: bool,
}

/// The processing summary the spec asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub files_processed: u32,
    /// Inputs already in the manifest with the same content.
    pub files_unchanged: u32,
    pub chunks_written: u32,
    pub duplicates_skipped: u32,
    pub mechanical_excluded: u32,
    pub files_skipped: Vec<FileProblem>,
    /// Files of an export known to hold no conversations (account files,
    /// viewer pages, images), with what each is.
    pub files_ignored: Vec<FileProblem>,
    pub errors: Vec<FileProblem>,
    /// Inputs imported with something the user should know: values the
    /// trust boundary dropped or cut, an adapter that declined the file.
    pub warnings: Vec<FileProblem>,
    /// Chunks the manifest knows after the run.
    pub chunks_total: u32,
    /// Chunks handed to the index this run (new ones, and earlier ones the
    /// index was missing).
    pub chunks_indexed: u32,
    /// Chunks in the index after the run (`None` without an index, or when
    /// it could not be counted).
    pub index_total: Option<u64>,
    /// Chunks written with a stand-in header because the header model
    /// failed; queued for `chatmill backfill`.
    pub headers_pending: u32,
    /// Inputs read again by `import --reprocess`.
    pub files_reprocessed: u32,
    /// Live imports: unfinished last pairs left for a later import.
    pub pairs_waiting: u32,
    /// After the run, inputs an older chatmill read (by the adapter that
    /// read them): `import --reprocess` would read them again.
    pub inputs_outdated: std::collections::BTreeMap<String, u32>,
    /// Secrets replaced by placeholders in what this run chunked, by rule
    /// id.
    pub redactions: std::collections::BTreeMap<String, u32>,
}
