//! The keyword index's own file, written by a thread of its own.
//!
//! SQLite lets one connection write a file at a time, and FTS5's writes
//! (tokens into its hash, segments flushed and merged) were two thirds of
//! the one thread an import's chunks all go through. So the keyword index
//! lives beside the store, in `<stem>-keywords.sqlite3`, written by the
//! [`KeywordWriter`]'s thread while the store's own thread writes the same
//! batch's rows: a batch takes as long as the slower of the two, not both.
//! Every connection of the store attaches the file as `kw`; the index's
//! tables keep their names, so queries read it as before.
//!
//! One write touches both files, keyword file first, each its own
//! transaction, both inside the store's write lock (taken first, always,
//! so writers of several processes cannot interleave). Each side records
//! an epoch: the store's `meta.keyword_epoch` and the keyword file's
//! `keyword_state.epoch`, with the rowids its last write touched. Equal
//! epochs: the files agree. A keyword file one epoch ahead: a write whose
//! rows did not commit (a crash, a failure); its rowids are taken out of
//! both, and the next import's catch-up indexes those chunks anew from
//! their files. Anything else (a file deleted or replaced): the rowids one
//! side has and the other lacks are taken out.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::keyword::{fts_table, tune_merges};

/// The schema name the keyword file is attached under.
pub(super) const SCHEMA_NAME: &str = "kw";

/// Documents put in the keyword index by one statement, at most (two
/// parameters each, well under SQLite's limit of 32,766).
const KEYWORD_ROWS: usize = 1024;

/// The keyword file of the store at `store`.
pub(crate) fn path_for(store: &Path) -> PathBuf {
    let stem = store
        .file_stem()
        .map_or_else(|| "index".into(), |s| s.to_string_lossy().into_owned());
    store.with_file_name(format!("{stem}-keywords.sqlite3"))
}

/// Attaches the keyword file at `path` to `conn` as [`SCHEMA_NAME`].
pub(super) fn attach(conn: &Connection, path: &Path) -> rusqlite::Result<()> {
    conn.execute(
        &format!("ATTACH DATABASE ?1 AS {SCHEMA_NAME}"),
        [path.to_string_lossy()],
    )?;
    Ok(())
}

/// A write of the keyword index: rowids out, documents in.
pub(super) struct Job {
    pub(super) unindex: Vec<i64>,
    pub(super) index: Vec<(i64, String)>,
    /// The epoch the write makes the keyword file's.
    pub(super) epoch: i64,
}

/// A job's outcome: committed, or why not.
type Outcome = Result<(), String>;

/// A job on its way: [`Pending::wait`] for its outcome.
pub(super) struct Pending(Receiver<Outcome>);

impl Pending {
    /// Whether the job's transaction committed; its error if not.
    pub(super) fn wait(self) -> Outcome {
        self.0
            .recv()
            .unwrap_or_else(|_| Err("the keyword index's writer has ended".into()))
    }
}

/// The keyword file's writing connection, on a thread of its own.
pub(super) struct KeywordWriter {
    jobs: Option<Sender<(Job, SyncSender<Outcome>)>>,
    thread: Option<JoinHandle<()>>,
}

impl KeywordWriter {
    /// Starts the thread that writes through `conn` (the keyword file's own
    /// connection, made by [`open_writer`]).
    pub(super) fn start(conn: Connection) -> std::io::Result<Self> {
        let (jobs, rx) = std::sync::mpsc::channel::<(Job, SyncSender<Outcome>)>();
        let thread = std::thread::Builder::new()
            .name("chatmill-keywords".into())
            .spawn(move || {
                let mut conn = conn;
                for (job, answer) in rx {
                    let done = write(&mut conn, &job).map_err(|e| e.to_string());
                    let _ = answer.send(done);
                }
            })?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Hands `job` to the thread.
    pub(super) fn send(&self, job: Job) -> Pending {
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        if let Some(jobs) = &self.jobs {
            // A send fails only once the thread has ended; `wait` then says so.
            let _ = jobs.send((job, answer));
        }
        Pending(answered)
    }
}

impl Drop for KeywordWriter {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Opens (creating) the keyword file at `path` for writing; `before_table`
/// runs on the connection before the index's table is first touched (FTS5
/// makes its tokenizer then).
pub(super) fn open_writer(
    path: &Path,
    before_table: impl FnOnce(&Connection),
) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    before_table(&conn);
    conn.execute_batch(concat!(
        "PRAGMA page_size = 8192; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
         PRAGMA cache_size = -16384;",
        fts_table!(),
        "CREATE TABLE IF NOT EXISTS keyword_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    ))?;
    tune_merges(&conn)?;
    Ok(conn)
}

/// Writes `job` in a transaction of its own on the keyword file's `conn`.
fn write(conn: &mut Connection, job: &Job) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if !job.unindex.is_empty() {
        tx.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT value FROM json_each(?1))",
            [ids_json(job.unindex.iter().copied())],
        )?;
    }
    // The documents as parameters of one statement (`VALUES (?, ?), …`):
    // one new segment per statement, and no escaping. (FTS5 writes its
    // pending terms out at every statement's end inside a transaction, so
    // per-row statements would make a segment per chunk.)
    for rows in job.index.chunks(KEYWORD_ROWS) {
        let sql = format!(
            "INSERT INTO chunks_fts(rowid, document) VALUES {}",
            vec!["(?, ?)"; rows.len()].join(", ")
        );
        let mut insert = tx.prepare_cached(&sql)?;
        let params: Vec<&dyn rusqlite::ToSql> = rows
            .iter()
            .flat_map(|(id, doc)| [id as &dyn rusqlite::ToSql, doc as &dyn rusqlite::ToSql])
            .collect();
        insert.execute(params.as_slice())?;
    }
    let touched = job.unindex.iter().chain(job.index.iter().map(|(id, _)| id));
    set_state(&tx, job.epoch, &ids_json(touched.copied()))?;
    tx.commit()
}

fn ids_json(ids: impl Iterator<Item = i64>) -> String {
    let ids: Vec<i64> = ids.collect();
    serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into())
}

/// Records the keyword file's `epoch` and the rowids its last write
/// `touched` (JSON), in the transaction `tx` (any connection: the table is
/// found under either schema name).
fn set_state(tx: &Connection, epoch: i64, touched: &str) -> rusqlite::Result<()> {
    let mut set = tx.prepare_cached(
        "INSERT INTO keyword_state(key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    )?;
    set.execute(["epoch", &epoch.to_string()])?;
    set.execute(["touched", touched])?;
    Ok(())
}

/// The store's keyword epoch (`None` before its first paired write).
fn store_epoch(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT value FROM main.meta WHERE key = 'keyword_epoch'")?
        .query_row([], |r| r.get::<_, String>(0))
        .optional()
        .map(|e| e.and_then(|e| e.parse().ok()))
}

/// The keyword file's epoch and the rowids its last write touched.
fn file_state(conn: &Connection) -> rusqlite::Result<(Option<i64>, Vec<i64>)> {
    let get = |key: &str| -> rusqlite::Result<Option<String>> {
        conn.prepare_cached("SELECT value FROM kw.keyword_state WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()
    };
    let epoch = get("epoch")?.and_then(|e| e.parse().ok());
    let touched = get("touched")?
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    Ok((epoch, touched))
}

fn set_store_epoch(tx: &Connection, epoch: i64) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO main.meta(key, value) VALUES ('keyword_epoch', ?1)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [epoch.to_string()],
    )
    .map(drop)
}

/// Bumps the store's keyword epoch in its write transaction `tx`; the
/// epoch the paired keyword write is to record.
pub(super) fn next_epoch(tx: &Connection) -> rusqlite::Result<i64> {
    let next = store_epoch(tx)?.unwrap_or(0) + 1;
    set_store_epoch(tx, next)?;
    Ok(next)
}

/// Whether the two files agree, read without a lock (the fast path of
/// every open).
pub(super) fn agree(conn: &Connection) -> rusqlite::Result<bool> {
    Ok(store_epoch(conn)? == file_state(conn)?.0)
}

/// What [`reconcile`] took out.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Reconciled {
    /// Rows of the store taken out (their chunks are indexed anew by the
    /// next import's catch-up).
    pub(super) rows: usize,
    /// Entries of the keyword index without a row, taken out.
    pub(super) keywords: usize,
}

/// Brings the store (`conn`, with the keyword file attached) and its
/// keyword file back into agreement, under both write locks; nothing to do
/// when they already agree.
pub(super) fn reconcile(conn: &mut Connection) -> rusqlite::Result<Reconciled> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let store = store_epoch(&tx)?;
    let (file, touched) = file_state(&tx)?;
    let out = match (store, file) {
        _ if store == file => return Ok(Reconciled::default()),
        (Some(s), Some(f)) if f == s + 1 => take_out(&tx, &touched)?,
        _ => take_out_unpaired(&tx)?,
    };
    tracing::warn!(
        "the keyword index and the store disagreed (epochs {file:?} and {store:?}): {} rows and {} keyword entries taken out; the next import indexes their chunks again",
        out.rows,
        out.keywords
    );
    let epoch = store.unwrap_or(0);
    set_state(&tx, epoch, "[]")?;
    set_store_epoch(&tx, epoch)?;
    super::schema::bump_generation(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// Takes the rowids `ids` out of both files.
fn take_out(tx: &Transaction<'_>, ids: &[i64]) -> rusqlite::Result<Reconciled> {
    let json = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
    let keywords = tx.execute(
        "DELETE FROM kw.chunks_fts WHERE rowid IN
           (SELECT value FROM json_each(?1) INTERSECT SELECT id FROM kw.chunks_fts_docsize)",
        [&json],
    )?;
    let rows = tx.execute(
        "DELETE FROM main.chunks WHERE id IN (SELECT value FROM json_each(?1))",
        [&json],
    )?;
    tx.execute(
        "DELETE FROM main.pending WHERE id IN (SELECT value FROM json_each(?1))",
        [&json],
    )?;
    Ok(Reconciled { rows, keywords })
}

/// Takes out the rows without keyword entries and the entries without rows.
fn take_out_unpaired(tx: &Transaction<'_>) -> rusqlite::Result<Reconciled> {
    let keywords = tx.execute(
        "DELETE FROM kw.chunks_fts WHERE rowid IN
           (SELECT id FROM kw.chunks_fts_docsize EXCEPT SELECT id FROM main.chunks)",
        [],
    )?;
    let rows = tx.execute(
        "DELETE FROM main.chunks WHERE id NOT IN (SELECT id FROM kw.chunks_fts_docsize)",
        [],
    )?;
    tx.execute(
        "DELETE FROM main.pending WHERE id NOT IN (SELECT id FROM main.chunks)",
        [],
    )?;
    Ok(Reconciled { rows, keywords })
}

/// Moves the keyword index of a store that kept it in its own file (the
/// layout of earlier chatmill versions) into the keyword file: FTS5's
/// tables copied as they are (the index is contentless: its documents
/// cannot be read back to be indexed again). `conn` has the keyword file
/// attached; its index there is new and empty.
pub(super) fn move_in(conn: &mut Connection) -> rusqlite::Result<()> {
    let in_store = |c: &Connection| -> rusqlite::Result<bool> {
        c.query_row(
            "SELECT EXISTS (SELECT 1 FROM main.sqlite_schema WHERE name = 'chunks_fts')",
            [],
            |r| r.get(0),
        )
    };
    if !in_store(conn)? {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if !in_store(&tx)? {
        return Ok(());
    }
    tracing::info!("moving the keyword index into a file of its own");
    let definition = |schema: &str| -> rusqlite::Result<String> {
        tx.query_row(
            &format!("SELECT sql FROM {schema}.sqlite_schema WHERE name = 'chunks_fts'"),
            [],
            |r| r.get(0),
        )
    };
    let same = definition("main")? == definition(SCHEMA_NAME)?;
    if same {
        for table in ["data", "idx", "docsize", "config"] {
            tx.execute_batch(&format!(
                "DELETE FROM kw.chunks_fts_{table};
                 INSERT INTO kw.chunks_fts_{table} SELECT * FROM main.chunks_fts_{table};"
            ))?;
        }
    }
    tx.execute_batch("DROP TABLE main.chunks_fts;")?;
    if !same {
        // An index made otherwise cannot be copied: its chunks are taken
        // out, and the next import's catch-up indexes them anew.
        let out = take_out_unpaired(&tx)?;
        tracing::warn!("{} chunks to index again", out.rows);
    }
    let epoch = store_epoch(&tx)?.unwrap_or(0);
    set_state(&tx, epoch, "[]")?;
    set_store_epoch(&tx, epoch)?;
    super::schema::bump_generation(&tx)?;
    tx.commit()?;
    // The store's pages the index held are free now; the file gives them
    // back. Needed for nothing else: a failure only leaves it larger.
    if let Err(e) = conn.execute_batch("VACUUM main;") {
        tracing::warn!("the index file keeps its former size: {e}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rusqlite::Connection;

    use super::path_for;
    use crate::embedded::tests::{index, rec};
    use crate::{Index, Indexer, Mode, SearchRequest};

    fn keyword_hits(ix: &Index, query: &str) -> Vec<String> {
        let mut q = SearchRequest::new(query);
        q.mode = Mode::Keyword;
        let mut ids: Vec<String> = ix
            .search(&q)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.chunk_id)
            .collect();
        ids.sort();
        ids
    }

    fn rowid(dir: &Path, chunk: &str) -> i64 {
        Connection::open(dir.join("index.sqlite3"))
            .unwrap()
            .query_row("SELECT id FROM chunks WHERE chunk_id = ?1", [chunk], |r| {
                r.get(0)
            })
            .unwrap()
    }

    fn remove(path: &Path) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }

    #[test]
    fn a_keyword_write_whose_rows_did_not_commit_is_taken_out_of_both_files() {
        let dir = tempfile::tempdir().unwrap();
        let ix = index(dir.path());
        ix.index(&[
            rec("a", 1, "local", "u", "sourdough starter feeding"),
            rec("b", 2, "local", "u", "nginx proxy timeout"),
        ])
        .unwrap();
        drop(ix);
        let (b, next) = (rowid(dir.path(), "b"), rowid(dir.path(), "b") + 1);
        // What a write leaves when its keyword side committed and its rows
        // did not (a crash between the two): `b` replaced and a new chunk
        // in the keyword file only, its epoch one ahead.
        let kw = Connection::open(path_for(&dir.path().join("index.sqlite3"))).unwrap();
        kw.execute_batch(&format!(
            "BEGIN;
             DELETE FROM chunks_fts WHERE rowid = {b};
             INSERT INTO chunks_fts(rowid, document) VALUES ({b}, 'zebra crossing'), ({next}, 'zebra stripes');
             UPDATE keyword_state SET value = CAST(value AS INTEGER) + 1 WHERE key = 'epoch';
             UPDATE keyword_state SET value = '[{b}, {b}, {next}]' WHERE key = 'touched';
             COMMIT;"
        ))
        .unwrap();
        drop(kw);
        let ix = index(dir.path());
        // `b` is out of both (the next import's catch-up indexes it again
        // from its file); `a` is untouched; nothing half-written is found.
        let ids: Vec<String> = ix.ids().unwrap().into_iter().collect();
        assert_eq!(ids, ["a"]);
        assert!(keyword_hits(&ix, "zebra").is_empty());
        assert!(keyword_hits(&ix, "nginx").is_empty());
        assert_eq!(keyword_hits(&ix, "sourdough"), ["a"]);
        // And writes go on where they left off.
        ix.index(&[
            rec("b", 2, "local", "u", "nginx proxy timeout"),
            rec("c", 3, "local", "u", "zebra stripes"),
        ])
        .unwrap();
        assert_eq!(keyword_hits(&ix, "nginx"), ["b"]);
        assert_eq!(keyword_hits(&ix, "zebra"), ["c"]);
    }

    #[test]
    fn a_lost_keyword_file_or_a_lost_store_file_leaves_no_half_indexed_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("index.sqlite3");
        let chunks = [
            rec("a", 1, "local", "u", "sourdough starter feeding"),
            rec("b", 2, "local", "u", "nginx proxy timeout"),
        ];
        index(dir.path()).index(&chunks).unwrap();
        // The keyword file gone: rows it cannot find are taken out, to be
        // indexed again.
        remove(&path_for(&store));
        let ix = index(dir.path());
        assert_eq!(ix.count().unwrap(), 0);
        ix.index(&chunks[..1]).unwrap();
        assert_eq!(keyword_hits(&ix, "sourdough"), ["a"]);
        drop(ix);
        // The store's file gone: the keyword entries without rows are taken
        // out, and a new chunk on a reused rowid is found by its own words.
        remove(&store);
        let ix = index(dir.path());
        assert!(keyword_hits(&ix, "sourdough").is_empty());
        ix.index(&[rec("c", 3, "local", "u", "zebra stripes")])
            .unwrap();
        assert_eq!(keyword_hits(&ix, "zebra"), ["c"]);
        assert!(keyword_hits(&ix, "sourdough").is_empty());
        assert_eq!(ix.count().unwrap(), 1);
    }

    #[test]
    fn a_store_with_its_keyword_index_inside_moves_it_out_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("index.sqlite3");
        index(dir.path())
            .index(&[
                rec("a", 1, "local", "u", "painting sunrises by the lake"),
                rec("b", 2, "local", "u", "nginx proxy timeout"),
            ])
            .unwrap();
        // The layout of earlier versions: the same index, in the store's
        // own file.
        let conn = Connection::open(&store).unwrap();
        conn.execute(
            "ATTACH DATABASE ?1 AS kw",
            [path_for(&store).to_string_lossy()],
        )
        .unwrap();
        conn.execute_batch(concat!(
            "BEGIN;",
            super::fts_table!(),
            "DELETE FROM main.chunks_fts_data; DELETE FROM main.chunks_fts_config;
             INSERT INTO main.chunks_fts_data SELECT * FROM kw.chunks_fts_data;
             INSERT INTO main.chunks_fts_idx SELECT * FROM kw.chunks_fts_idx;
             INSERT INTO main.chunks_fts_docsize SELECT * FROM kw.chunks_fts_docsize;
             INSERT INTO main.chunks_fts_config SELECT * FROM kw.chunks_fts_config;
             DELETE FROM main.meta WHERE key = 'keyword_epoch';
             COMMIT;"
        ))
        .unwrap();
        drop(conn);
        remove(&path_for(&store));
        let ix = index(dir.path());
        // Found as before, stemmed, without indexing anything again.
        assert_eq!(keyword_hits(&ix, "painted sunrise"), ["a"]);
        assert_eq!(keyword_hits(&ix, "proxy"), ["b"]);
        assert_eq!(ix.count().unwrap(), 2);
        let in_store: i64 = Connection::open(&store)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'chunks_fts%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(in_store, 0);
        ix.index(&[rec("c", 3, "local", "u", "painted fences")])
            .unwrap();
        assert_eq!(keyword_hits(&ix, "painting"), ["a", "c"]);
    }
}
