//! [`SqliteStore`] itself: the two connections and what is kept beside
//! them (the vectors, the document lengths, the keyword file's writer and
//! the threads that copy the logs back), with the helpers every part of
//! the store reads them through.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension};

use super::ahead::Ahead;
use super::checkpoint::Checkpoints;
use super::keyword_file::KeywordWriter;
use super::vectors::Vectors;
use crate::{IndexError, bm25};

pub struct SqliteStore {
    /// Dropped first: its thread ends before the connections close.
    #[allow(dead_code, reason = "held for its thread")]
    pub(super) checkpoints: Option<Checkpoints>,
    #[cfg_attr(not(test), allow(dead_code, reason = "held for its thread"))]
    pub(super) keyword_checkpoints: Option<Checkpoints>,
    /// Writes the keyword file; its thread ends (dropped before the
    /// connections) once its last job is done.
    pub(super) keyword_writer: KeywordWriter,
    pub(super) path: PathBuf,
    pub(super) conn: Mutex<Connection>,
    /// A second connection for the vector side's reads (rescoring, hits),
    /// so that a hybrid search's BM25 query does not hold them up (WAL lets
    /// readers run beside each other and beside the writer).
    pub(super) reader: Mutex<Connection>,
    /// Loaded on first vector search; kept up to date with this store's
    /// writes, reloaded after another's (see the module's documentation).
    pub(super) vectors: Mutex<Option<Arc<Vectors>>>,
    /// How many times the vectors were loaded (tests check that a write
    /// does not cost a reload).
    pub(super) loads: AtomicUsize,
    /// The documents' lengths `chatmill_bm25()` ranks with (see `bm25`),
    /// kept current like the vectors; `None` if it could not be registered
    /// (keyword search then ranks with FTS5's `bm25()`).
    pub(super) lengths: Option<bm25::Shared>,
    /// Documents tokenized on the workers' threads for the writing
    /// connection's keyword index; `None` if its tokenizer could not be
    /// put in front of SQLite's (SQLite's alone then tokenizes).
    pub(super) ahead: Option<Arc<Ahead>>,
}

pub(super) fn err(path: &Path, e: impl std::fmt::Display) -> IndexError {
    IndexError::Store {
        store: format!("sqlite ({})", path.display()),
        message: e.to_string(),
        hint: None,
        retryable: false,
    }
}

impl SqliteStore {
    pub(super) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn reader(&self) -> MutexGuard<'_, Connection> {
        self.reader.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn e(&self, e: impl std::fmt::Display) -> IndexError {
        err(&self.path, e)
    }

    pub(super) fn meta_get(
        &self,
        conn: &Connection,
        key: &str,
    ) -> Result<Option<String>, IndexError> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.e(e))
    }
}
