//! The keyword index's own file, written by a thread of its own.
//!
//! SQLite lets one connection write a file at a time, and FTS5's writes
//! (tokens into its hash, segments flushed and merged) are two thirds of
//! the work of the one thread an import's chunks all go through. So the keyword index
//! lives beside the store, in `<stem>-keywords.sqlite3`, written by the
//! [`KeywordWriter`]'s thread while the store's own thread writes the same
//! batch's rows: a batch takes as long as the slower of the two, not both.
//! Every connection of the store attaches the file as `kw`; the index's
//! tables keep their names, so queries read it as before.
//!
//! One write touches both files, keyword file first, each its own
//! transaction, both inside the store's write lock (taken first, always,
//! so writers of several processes cannot interleave). Each side records
//! an epoch (the store's `meta.keyword_epoch`, the keyword file's
//! `keyword_state.epoch`) and logs the rowids each epoch touched
//! (`keyword_log` in both). Equal epochs: the files agree. A write begins
//! only then; otherwise, and at every open, they are reconciled: a crash
//! between the two commits, or a power cut that lost the last commits of
//! either log, leaves one side ahead, and the rowids its extra epochs
//! touched are taken out of both. The next import's catch-up indexes those
//! chunks anew from their files. A side whose log does not reach back (a
//! file deleted or replaced) has the rows without entries and the entries
//! without rows taken out.

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
    /// The epoch the write makes the keyword file's; it is written only
    /// if the file is at the one before.
    epoch: i64,
    /// The rowids it changes, as JSON (logged on both sides).
    touched: String,
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
                    let done = write(&mut conn, &job);
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

/// Epochs whose touched rowids each side keeps (see the module's
/// documentation). A crash loses at most the last commit of one side, a
/// power cut what either log held since its last sync (a few hundred
/// commits at most: the logs are copied back and synced every 1,000 pages).
const LOG_KEEP: i64 = 4096;

/// The table of the epochs' touched rowids, in either file.
const LOG_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS keyword_log (epoch INTEGER PRIMARY KEY, touched TEXT NOT NULL);";

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
         PRAGMA cache_size = -16384; PRAGMA secure_delete = ON;",
        fts_table!(),
        "CREATE TABLE IF NOT EXISTS keyword_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    ))?;
    conn.execute_batch(LOG_TABLE)?;
    tune_merges(&conn)?;
    Ok(conn)
}

/// Makes the store's side of the epochs' log (`conn`: the store's own).
pub(super) fn create_store_log(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(LOG_TABLE)
}

/// Writes `job` in a transaction of its own on the keyword file's `conn`,
/// if the file is at the epoch before the job's (else nothing is written:
/// the files disagree, and the store reconciles them first).
fn write(conn: &mut Connection, job: &Job) -> Result<(), String> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| e.to_string())?;
    let at = file_epoch(&tx, "main").map_err(|e| e.to_string())?;
    if at != job.epoch - 1 {
        return Err(format!(
            "{OUT_OF_STEP} (at epoch {at}, the write is for {})",
            job.epoch
        ));
    }
    write_job(&tx, job).map_err(|e| e.to_string())?;
    tx.commit().map_err(|e| e.to_string())
}

/// What a keyword write that found the files disagreeing says.
pub(super) const OUT_OF_STEP: &str = "the keyword file is out of step with the store";

fn write_job(tx: &Connection, job: &Job) -> rusqlite::Result<()> {
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
    set_file_epoch(tx, "main", job.epoch)?;
    log_touched(tx, "main", job.epoch, &job.touched)
}

impl Job {
    /// The keyword side of the write in the store's write transaction
    /// `tx`: `unindex` out, `index` in, at the store's next epoch (bumped
    /// and logged in `tx`).
    pub(super) fn begin(
        tx: &Connection,
        unindex: Vec<i64>,
        index: Vec<(i64, String)>,
    ) -> rusqlite::Result<Self> {
        let touched = ids_json(
            unindex
                .iter()
                .chain(index.iter().map(|(id, _)| id))
                .copied(),
        );
        let epoch = next_epoch(tx, &touched)?;
        Ok(Self {
            unindex,
            index,
            epoch,
            touched,
        })
    }
}

fn ids_json(ids: impl Iterator<Item = i64>) -> String {
    let ids: Vec<i64> = ids.collect();
    serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into())
}

/// The store's keyword epoch (0 before its first paired write).
fn store_epoch(conn: &Connection) -> rusqlite::Result<i64> {
    read_epoch(
        conn,
        "SELECT value FROM main.meta WHERE key = 'keyword_epoch'",
    )
}

/// The keyword file's epoch, its file attached as `schema` (`main` on the
/// keyword writer's own connection).
fn file_epoch(conn: &Connection, schema: &str) -> rusqlite::Result<i64> {
    read_epoch(
        conn,
        &format!("SELECT value FROM {schema}.keyword_state WHERE key = 'epoch'"),
    )
}

fn read_epoch(conn: &Connection, sql: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached(sql)?
        .query_row([], |r| r.get::<_, String>(0))
        .optional()
        .map(|e| e.and_then(|e| e.parse().ok()).unwrap_or(0))
}

fn set_store_epoch(tx: &Connection, epoch: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO main.meta(key, value) VALUES ('keyword_epoch', ?1)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    )?
    .execute([epoch.to_string()])
    .map(drop)
}

/// Records `epoch` as the keyword file's (attached as `schema`).
fn set_file_epoch(tx: &Connection, schema: &str, epoch: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(&format!(
        "INSERT INTO {schema}.keyword_state(key, value) VALUES ('epoch', ?1)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value"
    ))?
    .execute([epoch.to_string()])
    .map(drop)
}

/// Logs the rowids `touched` (JSON) by `epoch` in `schema`'s log, and
/// forgets the epochs older than [`LOG_KEEP`].
fn log_touched(tx: &Connection, schema: &str, epoch: i64, touched: &str) -> rusqlite::Result<()> {
    tx.prepare_cached(&format!(
        "INSERT OR REPLACE INTO {schema}.keyword_log(epoch, touched) VALUES (?1, ?2)"
    ))?
    .execute(rusqlite::params![epoch, touched])?;
    tx.prepare_cached(&format!(
        "DELETE FROM {schema}.keyword_log WHERE epoch <= ?1"
    ))?
    .execute([epoch - LOG_KEEP])?;
    Ok(())
}

/// Bumps the store's keyword epoch in its write transaction `tx` and logs
/// what the write touches; the epoch the paired keyword write is to
/// record. (The keyword file is not read here: a read would hold a
/// snapshot of it while its writer commits, and keep that commit from
/// being checkpointed. The writer checks the file's epoch itself.)
fn next_epoch(tx: &Connection, touched: &str) -> rusqlite::Result<i64> {
    let next = store_epoch(tx)? + 1;
    set_store_epoch(tx, next)?;
    log_touched(tx, "main", next, touched)?;
    Ok(next)
}

/// Whether the two files agree, read without a lock (the fast path of
/// every open).
pub(super) fn agree(conn: &Connection) -> rusqlite::Result<bool> {
    Ok(store_epoch(conn)? == file_epoch(conn, SCHEMA_NAME)?)
}

/// What [`reconcile`] took out.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Reconciled {
    /// Rows of the store taken out (their chunks are indexed anew by the
    /// next import's catch-up).
    pub(super) rows: usize,
    /// Entries of the keyword index taken out.
    pub(super) keywords: usize,
}

/// Brings the store (`conn`, with the keyword file attached) and its
/// keyword file back into agreement, under both write locks; nothing to do
/// when they already agree. The side ahead logged what each of its extra
/// epochs touched: those rowids are taken out of both (a row and its entry
/// may each be a different version of the chunk). Should its log not
/// reach back far enough, the rows without entries and the entries without
/// rows are taken out.
pub(super) fn reconcile(conn: &mut Connection) -> rusqlite::Result<Reconciled> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let store = store_epoch(&tx)?;
    let file = file_epoch(&tx, SCHEMA_NAME)?;
    if store == file {
        return Ok(Reconciled::default());
    }
    let (behind, ahead, log) = if store < file {
        (store, file, SCHEMA_NAME)
    } else {
        (file, store, "main")
    };
    let out = match touched_since(&tx, log, behind, ahead)? {
        Some(ids) => take_out(&tx, &ids)?,
        None => take_out_unpaired(&tx)?,
    };
    tracing::warn!(
        "the keyword index and the store disagreed (epochs {file} and {store}): {} rows and {} keyword entries taken out; the next import indexes their chunks again",
        out.rows,
        out.keywords
    );
    // Both move on to the later epoch: an epoch number is never reused.
    set_store_epoch(&tx, ahead)?;
    set_file_epoch(&tx, SCHEMA_NAME, ahead)?;
    super::schema::bump_generation(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// The rowids `schema`'s log says its epochs after `behind`, up to
/// `ahead`, touched; `None` if the log lacks one of them.
fn touched_since(
    tx: &Connection,
    schema: &str,
    behind: i64,
    ahead: i64,
) -> rusqlite::Result<Option<Vec<i64>>> {
    let mut stmt = tx.prepare(&format!(
        "SELECT touched FROM {schema}.keyword_log WHERE epoch > ?1 AND epoch <= ?2"
    ))?;
    let logged: Vec<String> = stmt
        .query_map([behind, ahead], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if logged.len() as i64 != ahead - behind {
        return Ok(None);
    }
    let mut ids = Vec::new();
    for touched in logged {
        match serde_json::from_str::<Vec<i64>>(&touched) {
            Ok(more) => ids.extend(more),
            Err(_) => return Ok(None),
        }
    }
    Ok(Some(ids))
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
fn take_out_unpaired(tx: &Connection) -> rusqlite::Result<Reconciled> {
    let keywords = tx.execute(
        "DELETE FROM kw.chunks_fts WHERE rowid IN
           (SELECT id FROM kw.chunks_fts_docsize EXCEPT SELECT id FROM main.chunks)",
        [],
    )?;
    let rows = take_out_unindexed_rows(tx)?;
    Ok(Reconciled { rows, keywords })
}

/// Takes out the store's rows the keyword index has no entry for.
fn take_out_unindexed_rows(tx: &Connection) -> rusqlite::Result<usize> {
    let rows = tx.execute(
        "DELETE FROM main.chunks WHERE id NOT IN (SELECT id FROM kw.chunks_fts_docsize)",
        [],
    )?;
    tx.execute(
        "DELETE FROM main.pending WHERE id NOT IN (SELECT id FROM main.chunks)",
        [],
    )?;
    Ok(rows)
}

/// Moves the keyword index of a store that kept it in its own file (the
/// layout of earlier chatmill versions) into the keyword file: FTS5's
/// tables copied as they are (the index is contentless: its documents
/// cannot be read back to be indexed again). `conn` has the keyword file
/// attached. Two transactions, one per file (a transaction over two WAL
/// files is atomic in each, not across them): the copy, marked as done in
/// the keyword file, then the store's table dropped; a move stopped between
/// them is finished at the next open.
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
    let moved = |c: &Connection| -> rusqlite::Result<Option<String>> {
        c.query_row(
            "SELECT value FROM kw.keyword_state WHERE key = 'moved_in'",
            [],
            |r| r.get(0),
        )
        .optional()
    };
    if moved(conn)?.is_none() {
        copy_out(conn)?;
    }
    // The store's side: its copy dropped (and, if the index could not be
    // copied, its rows, to be indexed again).
    let tx = conn.transaction()?;
    super::schema::bump_generation(&tx)?;
    if in_store(&tx)? {
        tx.execute_batch("DROP TABLE main.chunks_fts;")?;
        if moved(&tx)?.as_deref() == Some("empty") {
            let rows = take_out_unindexed_rows(&tx)?;
            tracing::warn!("{rows} chunks to index again");
        }
    }
    tx.commit()?;
    // The store's pages the index held are free now; the file gives them
    // back. Needed for nothing else: a failure only leaves it larger.
    if let Err(e) = conn.execute_batch("VACUUM main;") {
        tracing::warn!("the index file keeps its former size: {e}");
    }
    Ok(())
}

/// The keyword file's side of [`move_in`]: the store's index copied in (if
/// it is made the same way), the keyword file at the store's epoch, and
/// the move marked, in one transaction that writes the keyword file only.
fn copy_out(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    // A write first: the keyword file's lock, before anything is read.
    tx.execute(
        "INSERT INTO kw.keyword_state(key, value) VALUES ('moving', '1')
         ON CONFLICT(key) DO UPDATE SET value = value",
        [],
    )?;
    let done: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM kw.keyword_state WHERE key = 'moved_in')",
        [],
        |r| r.get(0),
    )?;
    if done {
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
    let epoch = store_epoch(&tx)?;
    set_file_epoch(&tx, SCHEMA_NAME, epoch)?;
    tx.execute(
        "INSERT INTO kw.keyword_state(key, value) VALUES ('moved_in', ?1)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [if same { "copied" } else { "empty" }],
    )?;
    tx.commit()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rusqlite::Connection;

    use super::path_for;
    use crate::Indexer;
    use crate::embedded::tests::{index, keyword_ids, rec};

    fn rowid(dir: &Path, chunk: &str) -> i64 {
        Connection::open(dir.join("index.sqlite3"))
            .unwrap()
            .query_row("SELECT id FROM chunks WHERE chunk_id = ?1", [chunk], |r| {
                r.get(0)
            })
            .unwrap()
    }

    /// The rowids of the store's rows and of the keyword index's entries,
    /// read on plain connections.
    fn sides(dir: &Path) -> (Vec<i64>, Vec<i64>) {
        let store = dir.join("index.sqlite3");
        let read = |path: &Path, sql: &str| -> Vec<i64> {
            let conn = Connection::open(path).unwrap();
            let mut stmt = conn.prepare(sql).unwrap();
            stmt.query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        (
            read(&store, "SELECT id FROM chunks ORDER BY id"),
            read(
                &path_for(&store),
                "SELECT id FROM chunks_fts_docsize ORDER BY id",
            ),
        )
    }

    fn remove(path: &Path) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }

    /// What a write leaves when its keyword side committed and its rows did
    /// not (a crash between the two): `b` replaced and a new chunk in the
    /// keyword file only, its epoch one ahead, logged.
    fn tear(dir: &Path) {
        let (b, next) = (rowid(dir, "b"), rowid(dir, "b") + 1);
        let kw = Connection::open(path_for(&dir.join("index.sqlite3"))).unwrap();
        kw.execute_batch(&format!(
            "BEGIN;
             DELETE FROM chunks_fts WHERE rowid = {b};
             INSERT INTO chunks_fts(rowid, document) VALUES ({b}, 'zebra crossing'), ({next}, 'zebra stripes');
             UPDATE keyword_state SET value = CAST(value AS INTEGER) + 1 WHERE key = 'epoch';
             INSERT INTO keyword_log(epoch, touched)
               SELECT CAST(value AS INTEGER), '[{b}, {b}, {next}]' FROM keyword_state WHERE key = 'epoch';
             COMMIT;"
        ))
        .unwrap();
    }

    /// Puts a copy of the keyword index of the store at `store` in the
    /// store's own file (where earlier versions kept it), and runs `also`
    /// in the same transaction.
    fn index_in_store(store: &Path, also: &str) {
        let conn = Connection::open(store).unwrap();
        conn.execute(
            "ATTACH DATABASE ?1 AS kw",
            [path_for(store).to_string_lossy()],
        )
        .unwrap();
        conn.execute_batch(concat!(
            "BEGIN;",
            super::fts_table!(),
            "DELETE FROM main.chunks_fts_data; DELETE FROM main.chunks_fts_config;
             INSERT INTO main.chunks_fts_data SELECT * FROM kw.chunks_fts_data;
             INSERT INTO main.chunks_fts_idx SELECT * FROM kw.chunks_fts_idx;
             INSERT INTO main.chunks_fts_docsize SELECT * FROM kw.chunks_fts_docsize;
             INSERT INTO main.chunks_fts_config SELECT * FROM kw.chunks_fts_config;"
        ))
        .unwrap();
        conn.execute_batch(also).unwrap();
        conn.execute_batch("COMMIT;").unwrap();
    }

    fn two() -> [crate::ChunkRecord; 2] {
        [
            rec("a", 1, "local", "u", "sourdough starter feeding"),
            rec("b", 2, "local", "u", "nginx proxy timeout"),
        ]
    }

    #[test]
    fn a_keyword_write_whose_rows_did_not_commit_is_taken_out_of_both_files() {
        let dir = tempfile::tempdir().unwrap();
        index(dir.path()).index(&two()).unwrap();
        let a = rowid(dir.path(), "a");
        tear(dir.path());
        let ix = index(dir.path());
        // `b` is out of both (the next import's catch-up indexes it again
        // from its file), and so is the entry without a row; `a` is
        // untouched.
        assert_eq!(sides(dir.path()), (vec![a], vec![a]));
        let ids: Vec<String> = ix.ids().unwrap().into_iter().collect();
        assert_eq!(ids, ["a"]);
        assert_eq!(keyword_ids(&ix, "sourdough"), ["a"]);
        // And writes go on where they left off.
        ix.index(&[
            rec("b", 2, "local", "u", "nginx proxy timeout"),
            rec("c", 3, "local", "u", "zebra stripes"),
        ])
        .unwrap();
        assert_eq!(keyword_ids(&ix, "nginx"), ["b"]);
        assert_eq!(keyword_ids(&ix, "zebra"), ["c"]);
        let (rows, entries) = sides(dir.path());
        assert_eq!((rows.len(), &rows), (3, &entries));
    }

    #[test]
    fn a_store_open_when_another_process_tore_a_write_mends_it_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        // Open all along (a server), while another process's write tears.
        let ix = index(dir.path());
        ix.index(&two()).unwrap();
        tear(dir.path());
        ix.index(&[rec("c", 3, "local", "u", "painted fences")])
            .unwrap();
        let (rows, entries) = sides(dir.path());
        assert_eq!(rows, entries, "every row has its entry, and no other");
        assert_eq!(rows.len(), 2, "a and c; b to be indexed again");
        assert!(keyword_ids(&ix, "zebra").is_empty());
        assert!(keyword_ids(&ix, "nginx").is_empty());
        assert_eq!(keyword_ids(&ix, "painted"), ["c"]);
    }

    #[test]
    fn a_side_that_lost_its_last_commits_has_what_they_touched_taken_out() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("index.sqlite3");
        let keywords = path_for(&store);
        index(dir.path()).index(&two()).unwrap();
        let a = rowid(dir.path(), "a");
        let saved = dir.path().join("saved");
        // The keyword file loses its last commit (a power cut before its
        // log was synced): `b` replaced in place, in the store only.
        std::fs::copy(&keywords, &saved).unwrap();
        index(dir.path())
            .index(&[rec("b", 2, "local", "u", "zebra crossing")])
            .unwrap();
        remove(&keywords);
        std::fs::copy(&saved, &keywords).unwrap();
        let ix = index(dir.path());
        assert_eq!(sides(dir.path()), (vec![a], vec![a]));
        assert!(keyword_ids(&ix, "nginx").is_empty(), "no stale entry");
        drop(ix);
        // The store loses its last two commits: the keyword file is two
        // epochs ahead, with `c` new and `a` replaced.
        std::fs::copy(&store, &saved).unwrap();
        let ix = index(dir.path());
        ix.index(&[rec("c", 3, "local", "u", "painted fences")])
            .unwrap();
        ix.index(&[rec("a", 1, "local", "u", "bread crust")])
            .unwrap();
        drop(ix);
        remove(&store);
        std::fs::copy(&saved, &store).unwrap();
        let ix = index(dir.path());
        assert_eq!(sides(dir.path()), (vec![], vec![]));
        assert!(keyword_ids(&ix, "bread").is_empty());
        assert!(keyword_ids(&ix, "sourdough").is_empty());
        ix.index(&two()).unwrap();
        assert_eq!(keyword_ids(&ix, "sourdough"), ["a"]);
    }

    #[test]
    fn a_lost_keyword_file_or_a_lost_store_file_leaves_no_half_indexed_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("index.sqlite3");
        let chunks = two();
        index(dir.path()).index(&chunks).unwrap();
        // The keyword file gone: rows it cannot find are taken out, to be
        // indexed again.
        remove(&path_for(&store));
        let ix = index(dir.path());
        assert_eq!(ix.count().unwrap(), 0);
        ix.index(&chunks[..1]).unwrap();
        assert_eq!(keyword_ids(&ix, "sourdough"), ["a"]);
        drop(ix);
        // The store's file gone: the keyword entries without rows are taken
        // out, and a new chunk on a reused rowid is found by its own words.
        remove(&store);
        let ix = index(dir.path());
        assert_eq!(sides(dir.path()), (vec![], vec![]));
        ix.index(&[rec("c", 3, "local", "u", "zebra stripes")])
            .unwrap();
        assert_eq!(keyword_ids(&ix, "zebra"), ["c"]);
        assert!(keyword_ids(&ix, "sourdough").is_empty());
        let (rows, entries) = sides(dir.path());
        assert_eq!((rows.len(), &rows), (1, &entries));
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
        index_in_store(&store, "DELETE FROM main.meta WHERE key = 'keyword_epoch';");
        remove(&path_for(&store));
        let ix = index(dir.path());
        // Found as before, stemmed, without indexing anything again.
        assert_eq!(keyword_ids(&ix, "painted sunrise"), ["a"]);
        assert_eq!(keyword_ids(&ix, "proxy"), ["b"]);
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
        assert_eq!(keyword_ids(&ix, "painting"), ["a", "c"]);
    }

    #[test]
    fn a_move_stopped_after_the_copy_is_finished_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("index.sqlite3");
        index(dir.path()).index(&two()).unwrap();
        // The store still holds its index, the keyword file a copy of it
        // marked as moved (the first of the move's two transactions).
        index_in_store(
            &store,
            "INSERT INTO kw.keyword_state(key, value) VALUES ('moved_in', 'copied');",
        );
        let ix = index(dir.path());
        assert_eq!(keyword_ids(&ix, "sourdough"), ["a"]);
        assert_eq!(ix.count().unwrap(), 2, "nothing to index again");
        let left: i64 = Connection::open(&store)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'chunks_fts%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0);
    }
}
