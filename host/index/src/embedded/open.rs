//! Opening a store: its file created or upgraded, the keyword file beside
//! it opened for its writer and brought into agreement with it, the
//! reader's connection, and what is registered on the connections (the
//! tokenizer ahead of SQLite's, `chatmill_bm25()`'s document lengths).

use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use super::ahead::{self, Ahead};
use super::checkpoint::Checkpoints;
use super::keyword::contentless;
use super::keyword_file::{self, KeywordWriter};
use super::schema::{SCHEMA, add_project};
use super::store::{SqliteStore, err};
use crate::IndexError;
use crate::bm25::{self, Lengths};

/// `e`, opening the store at `path`, as another process holding it locked
/// (a busy store, which a moment cures); `None` for any other error.
fn busy(path: &Path, e: &rusqlite::Error) -> Option<IndexError> {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
    .then(|| IndexError::Store {
        store: format!("sqlite ({})", path.display()),
        message: format!("the index is busy: another chatmill process is writing it ({e})"),
        hint: Some(
            "run the command again in a moment (an index made by an earlier chatmill is rebuilt once, the first time it is opened: seconds per 100k chunks)".into(),
        ),
        retryable: true,
    })
}

/// The file at `path` cannot be opened as a `what` (`e`), unless it is only
/// busy; the hint is to move it aside, and `then`.
fn unusable(path: &Path, what: &str, e: &rusqlite::Error, then: &str) -> IndexError {
    busy(path, e).unwrap_or_else(|| IndexError::Store {
        store: format!("sqlite ({})", path.display()),
        message: format!("not a usable {what}: {e}"),
        hint: Some(format!("move `{}` aside{then}", path.display())),
        retryable: false,
    })
}

/// `e`, opening the store at `path`: busy (see [`busy`]) or plain.
fn opening(path: &Path, e: rusqlite::Error) -> IndexError {
    busy(path, &e).unwrap_or_else(|| err(path, e))
}

/// The keyword file's writing connection, with the tokenizer ahead when it
/// could be registered and the thread that copies its log back.
struct KeywordConnection {
    writer: Connection,
    ahead: Option<Arc<Ahead>>,
    checkpoints: Option<Checkpoints>,
}

impl SqliteStore {
    /// Opens (creating) the store at `path`.
    pub fn open(path: &Path) -> Result<Self, IndexError> {
        let (mut conn, checkpoints) = open_rows(path)?;
        let keywords = keyword_file::path_for(path);
        let kw = open_keywords(&keywords)?;
        join_keywords(&mut conn, &keywords).map_err(|e| opening(path, e))?;
        let keyword_writer = KeywordWriter::start(kw.writer).map_err(|e| err(&keywords, e))?;
        let reader = open_reader(path, &keywords)?;
        for c in [&conn, &reader] {
            // A 16 MiB page cache (the default is 2 MiB): BM25 over FTS5
            // looks up the length of every match, and inserts update FTS5's
            // b-trees. (A memory map measured no faster and inflates RSS by
            // the file size.)
            // What is deleted is overwritten: a chunk rewritten without its
            // secrets (`import --reprocess`) must not leave them in free pages.
            c.execute_batch(
                "PRAGMA cache_size = -16384; PRAGMA kw.cache_size = -16384;
                 PRAGMA secure_delete = ON; PRAGMA kw.secure_delete = ON;",
            )
            .map_err(|e| err(path, e))?;
        }
        let lengths = register_lengths(&conn);
        Ok(Self {
            path: path.to_path_buf(),
            checkpoints,
            keyword_checkpoints: kw.checkpoints,
            keyword_writer,
            lengths,
            ahead: kw.ahead,
            conn: Mutex::new(conn),
            reader: Mutex::new(reader),
            vectors: Mutex::new(None),
            loads: AtomicUsize::new(0),
        })
    }
}

/// The store's own file at `path`, opened (its directory and tables
/// created, an older store's upgraded), with the thread that copies its
/// log back.
fn open_rows(path: &Path) -> Result<(Connection, Option<Checkpoints>), IndexError> {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir).map_err(|e| err(path, e))?;
    }
    let mut conn = Connection::open(path).map_err(|e| err(path, e))?;
    let checkpoints = Checkpoints::start(&mut conn, path)
        .inspect_err(|e| tracing::debug!("checkpoints on the writer: {e}"))
        .ok();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| err(path, e))?;
    conn.execute_batch(SCHEMA).map_err(|e| {
        unusable(
            path,
            "chatmill index",
            &e,
            " and run `chatmill reindex` to rebuild it from the chunk files",
        )
    })?;
    contentless(&conn).map_err(|e| opening(path, e))?;
    add_project(&conn).map_err(|e| opening(path, e))?;
    Ok((conn, checkpoints))
}

/// The keyword file at `keywords`, opened for its writer.
fn open_keywords(keywords: &Path) -> Result<KeywordConnection, IndexError> {
    // Before the keyword table is first touched: FTS5 makes its
    // tokenizer then.
    let ahead = Arc::new(Ahead::default());
    let mut ahead_registered = false;
    let mut writer = keyword_file::open_writer(keywords, |c| {
        match ahead::register(c, Arc::clone(&ahead)) {
            Ok(()) => ahead_registered = true,
            Err(e) => tracing::debug!("no tokenizing ahead: {e}"),
        }
    })
    .map_err(|e| {
        unusable(keywords, "keyword index", &e, ": the chunks it held are taken out of the index and the next import indexes them again")
    })?;
    let ahead = ahead_registered.then_some(ahead);
    let checkpoints = Checkpoints::start(&mut writer, keywords)
        .inspect_err(|e| tracing::debug!("checkpoints on the keyword writer: {e}"))
        .ok();
    Ok(KeywordConnection {
        writer,
        ahead,
        checkpoints,
    })
}

/// Attaches the keyword file at `keywords` to the store's `conn`, moves in
/// an index the store still holds itself, and reconciles the two files if
/// they disagree.
fn join_keywords(conn: &mut Connection, keywords: &Path) -> rusqlite::Result<()> {
    keyword_file::create_store_log(conn)?;
    keyword_file::attach(conn, keywords)?;
    keyword_file::move_in(conn)?;
    if !keyword_file::agree(conn)? {
        keyword_file::reconcile(conn)?;
    }
    Ok(())
}

/// The reader's connection to the store at `path`, the keyword file at
/// `keywords` attached.
fn open_reader(path: &Path, keywords: &Path) -> Result<Connection, IndexError> {
    let reader = Connection::open(path).map_err(|e| err(path, e))?;
    reader
        .busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| err(path, e))?;
    keyword_file::attach(&reader, keywords).map_err(|e| opening(path, e))?;
    Ok(reader)
}

/// The document lengths `chatmill_bm25()` ranks with, registered on
/// `conn`; `None` if it could not be.
fn register_lengths(conn: &Connection) -> Option<bm25::Shared> {
    let lengths: bm25::Shared = Arc::new(Mutex::new(Arc::new(Lengths {
        generation: -1,
        by_rowid: Vec::new(),
    })));
    match bm25::register(conn, Arc::clone(&lengths)) {
        Ok(()) => Some(lengths),
        Err(e) => {
            tracing::debug!("keyword search ranks with FTS5's bm25(): {e}");
            None
        }
    }
}
