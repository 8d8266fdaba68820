//! The store's SQLite schema and rows: the tables, a chunk's row as vector
//! search keeps it, a hit's columns, a filter's SQL, the write generation,
//! and opening (creating or upgrading) the file.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use super::keyword::contentless;
use super::keyword_file::{self, KeywordWriter};
use super::{SqliteStore, err};
use crate::bm25::{self, Lengths};
use crate::{ChunkMeta, ChunkRecord, Filter, Hit, IndexError};

const SCHEMA: &str = "
-- A new store's pages are 8 KiB (SQLite's default is 4 KiB), set before
-- anything is written; an existing store keeps its own. A chunk's row (its
-- document and its f32 vector, ~3.5 KB) took a 4 KiB page of its own and
-- left a tenth of it empty; at 8 KiB two fit, with half the pages to log,
-- check and copy: the 100k-pair indexed import bench ran 1-5 % faster in 6
-- of 6 back-to-back runs, the search bench's inserts 41k/s -> 47-50k/s.
-- 16 KiB imported ~1 % faster still but a filtered hybrid search read more
-- bytes per row (p95 11 -> 15 ms; 12.8 ms at 8 KiB).
PRAGMA page_size = 8192;
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    timestamp INTEGER NOT NULL,
    platform TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    title TEXT,
    project TEXT,
    topics TEXT NOT NULL,
    model TEXT NOT NULL,
    turn_range TEXT NOT NULL,
    source_file TEXT NOT NULL,
    path TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_timestamp ON chunks(timestamp);
CREATE INDEX IF NOT EXISTS chunks_conversation ON chunks(conversation_id);
CREATE INDEX IF NOT EXISTS chunks_agent ON chunks(agent_id);
-- Chunks whose vectors come later (see `pending`), by rowid, with the text
-- to embed.
CREATE TABLE IF NOT EXISTS pending (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
-- The keyword index is in a file of its own (see `keyword_file`), written
-- beside the rows; a store made by an older chatmill may still carry
-- per-row triggers that wrote it.
DROP TRIGGER IF EXISTS chunks_ai;
DROP TRIGGER IF EXISTS chunks_ad;
DROP TRIGGER IF EXISTS chunks_au;
";

/// What vector search keeps in memory per chunk.
#[derive(Clone)]
pub(super) struct Row {
    pub(super) id: i64,
    pub(super) timestamp: i64,
    pub(super) platform: String,
    pub(super) agent_id: String,
    pub(super) conversation_id: String,
    pub(super) project: Option<String>,
}

impl Row {
    pub(super) fn matches(&self, f: &Filter) -> bool {
        f.agent_id.as_ref().is_none_or(|a| *a == self.agent_id)
            && f.platform.as_ref().is_none_or(|p| *p == self.platform)
            && f.conversation_id
                .as_ref()
                .is_none_or(|c| *c == self.conversation_id)
            && f.project
                .as_ref()
                .is_none_or(|p| self.project.as_ref() == Some(p))
            && f.since.is_none_or(|s| self.timestamp >= s)
            && f.until.is_none_or(|u| self.timestamp <= u)
    }
}

/// The store's generation (bumped by every write; 0 for an index that has
/// never been written by a chatmill that counts them).
pub(super) fn generation(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = 'generation'")?
        .query_row([], |r| r.get::<_, String>(0))
        .optional()
        .map(|g| g.and_then(|g| g.parse().ok()).unwrap_or(0))
}

/// Bumps the generation inside the write transaction `tx`; returns the one
/// it replaced. One statement, a write: as a transaction's first, it takes
/// the write lock before anything is read.
pub(super) fn bump_generation(tx: &Connection) -> rusqlite::Result<i64> {
    tx.prepare_cached(
        "INSERT INTO main.meta(key, value) VALUES ('generation', '1')
         ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1
         RETURNING CAST(value AS INTEGER) - 1",
    )?
    .query_row([], |r| r.get(0))
}

/// The `meta` key marking a store whose chunks were written before it kept
/// `project` (see [`crate::Store::metadata_outdated`]).
pub(super) const METADATA_OUTDATED: &str = "metadata_outdated";

/// Gives a store made before `project` was kept its column (and its
/// index); when it already holds chunks, their projects are unknown until
/// the metadata is refreshed from the chunk files.
fn add_project(conn: &Connection) -> rusqlite::Result<()> {
    let has: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info('chunks') WHERE name = 'project')",
        [],
        |r| r.get(0),
    )?;
    if !has {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE;
             ALTER TABLE chunks ADD COLUMN project TEXT;
             INSERT OR REPLACE INTO meta(key, value)
               SELECT '{METADATA_OUTDATED}', '1' WHERE EXISTS (SELECT 1 FROM chunks);
             COMMIT;"
        ))?;
    }
    conn.execute_batch("CREATE INDEX IF NOT EXISTS chunks_project ON chunks(project);")
}

/// Records, in the write transaction `tx`, that the stored vectors are
/// `dim` wide and made by `model` (what [`crate::Store::stored`] reports).
pub(super) fn record_model(tx: &Connection, dim: usize, model: &str) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO meta(key, value) VALUES ('dim', ?1), ('model', ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![dim.to_string(), model],
    )
    .map(drop)
}

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

/// A hit's columns (its text is not among them: see `fts_table!`).
const COLUMNS: &str = "chunk_id, timestamp, platform, agent_id, conversation_id, title, topics, model, turn_range, source_file, path, project";

/// How many `COLUMNS` there are: a query's own column after them is at
/// this index.
pub(super) const COLUMN_COUNT: usize = 12;

fn hit_from_row(r: &rusqlite::Row<'_>, score: f32) -> rusqlite::Result<Hit> {
    let topics: String = r.get(6)?;
    Ok(Hit {
        chunk_id: r.get(0)?,
        score,
        meta: ChunkMeta {
            timestamp: r.get(1)?,
            platform: r.get(2)?,
            agent_id: r.get(3)?,
            conversation_id: r.get(4)?,
            title: r.get(5)?,
            topics: serde_json::from_str(&topics).unwrap_or_default(),
            model: r.get(7)?,
            turn_range: r.get(8)?,
            source_file: r.get(9)?,
            path: r.get(10)?,
            project: r.get(11)?,
        },
        document: String::new(),
    })
}

/// SQL for a filter: ` AND …` clauses and their parameters.
pub(super) fn filter_sql(f: &Filter) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut sql = String::new();
    let mut args = Vec::new();
    if let Some(a) = &f.agent_id {
        sql.push_str(" AND c.agent_id = ?");
        args.push(Value::Text(a.clone()));
    }
    if let Some(p) = &f.platform {
        sql.push_str(" AND c.platform = ?");
        args.push(Value::Text(p.clone()));
    }
    if let Some(c) = &f.conversation_id {
        sql.push_str(" AND c.conversation_id = ?");
        args.push(Value::Text(c.clone()));
    }
    if let Some(p) = &f.project {
        sql.push_str(" AND c.project = ?");
        args.push(Value::Text(p.clone()));
    }
    if let Some(s) = f.since {
        sql.push_str(" AND c.timestamp >= ?");
        args.push(Value::Integer(s));
    }
    if let Some(u) = f.until {
        sql.push_str(" AND c.timestamp <= ?");
        args.push(Value::Integer(u));
    }
    (sql, args)
}

/// `COLUMNS` as `c.<name>` (queries join other tables).
pub(super) fn qualified_columns() -> String {
    COLUMNS
        .split(", ")
        .map(|c| format!("c.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
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

impl SqliteStore {
    /// Opens (creating) the store at `path`.
    pub fn open(path: &Path) -> Result<Self, IndexError> {
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir).map_err(|e| err(path, e))?;
        }
        let mut conn = Connection::open(path).map_err(|e| err(path, e))?;
        let checkpoints = super::checkpoint::Checkpoints::start(&mut conn, path)
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
        let other = |e: rusqlite::Error| busy(path, &e).unwrap_or_else(|| err(path, e));
        contentless(&conn).map_err(other)?;
        add_project(&conn).map_err(other)?;
        let keywords = keyword_file::path_for(path);
        // Before the keyword table is first touched: FTS5 makes its
        // tokenizer then.
        let ahead = std::sync::Arc::new(super::ahead::Ahead::default());
        let mut ahead_registered = false;
        let mut writer = keyword_file::open_writer(&keywords, |c| {
            match super::ahead::register(c, std::sync::Arc::clone(&ahead)) {
                Ok(()) => ahead_registered = true,
                Err(e) => tracing::debug!("no tokenizing ahead: {e}"),
            }
        })
        .map_err(|e| {
            unusable(&keywords, "keyword index", &e, ": the chunks it held are taken out of the index and the next import indexes them again")
        })?;
        let ahead = ahead_registered.then_some(ahead);
        let keyword_checkpoints = super::checkpoint::Checkpoints::start(&mut writer, &keywords)
            .inspect_err(|e| tracing::debug!("checkpoints on the keyword writer: {e}"))
            .ok();
        keyword_file::create_store_log(&conn).map_err(other)?;
        keyword_file::attach(&conn, &keywords).map_err(other)?;
        keyword_file::move_in(&mut conn).map_err(other)?;
        if !keyword_file::agree(&conn).map_err(other)? {
            keyword_file::reconcile(&mut conn).map_err(other)?;
        }
        let keyword_writer = KeywordWriter::start(writer).map_err(|e| err(&keywords, e))?;
        let reader = Connection::open(path).map_err(|e| err(path, e))?;
        reader
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| err(path, e))?;
        keyword_file::attach(&reader, &keywords).map_err(other)?;
        for c in [&conn, &reader] {
            // A 16 MiB page cache (the default is 2 MiB): BM25 over FTS5
            // looks up the length of every match, and inserts update FTS5's
            // b-trees. (A memory map measured no faster and inflates RSS by
            // the file size.)
            c.execute_batch("PRAGMA cache_size = -16384; PRAGMA kw.cache_size = -16384;")
                .map_err(|e| err(path, e))?;
        }
        let lengths: bm25::Shared = std::sync::Arc::new(Mutex::new(std::sync::Arc::new(Lengths {
            generation: -1,
            by_rowid: Vec::new(),
        })));
        let lengths = match bm25::register(&conn, std::sync::Arc::clone(&lengths)) {
            Ok(()) => Some(lengths),
            Err(e) => {
                tracing::debug!("keyword search ranks with FTS5's bm25(): {e}");
                None
            }
        };
        Ok(Self {
            path: path.to_path_buf(),
            checkpoints,
            keyword_checkpoints,
            keyword_writer,
            lengths,
            ahead,
            conn: Mutex::new(conn),
            reader: Mutex::new(reader),
            vectors: Mutex::new(None),
            loads: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// The hits of the chunks `scored` (rowid, score), in that order.
    pub(super) fn hits_by_id(&self, scored: &[(i64, f32)]) -> Result<Vec<Hit>, IndexError> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM chunks WHERE id = ?1"))
            .map_err(|e| self.e(e))?;
        let mut out = Vec::with_capacity(scored.len());
        for &(id, score) in scored {
            if let Some(h) = stmt
                .query_row([id], |r| hit_from_row(r, score))
                .optional()
                .map_err(|e| self.e(e))?
            {
                out.push(h);
            }
        }
        Ok(out)
    }

    /// Runs `sql` (with `{filter}` where the filter's clauses go): the
    /// MATCH text first when given, the filter's values, then `k`.
    pub(super) fn select(
        &self,
        sql: &str,
        matching: Option<String>,
        k: usize,
        filter: &Filter,
        score: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<f32>,
    ) -> Result<Vec<Hit>, IndexError> {
        let (where_sql, filter_args) = filter_sql(filter);
        let sql = sql.replace("{filter}", &where_sql);
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        args.extend(matching.map(rusqlite::types::Value::Text));
        args.extend(filter_args);
        args.push(rusqlite::types::Value::Integer(k as i64));
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&sql).map_err(|e| self.e(e))?;
        let hits = stmt
            .query_map(rusqlite::params_from_iter(args), |r| {
                let s = score(r)?;
                hit_from_row(r, s)
            })
            .map_err(|e| self.e(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.e(e))?;
        Ok(hits)
    }

    /// Where `records` go, read in the write transaction `tx` (which holds
    /// the store's write lock, so the largest rowid cannot move): a known
    /// chunk keeps its row, a new one gets the next rowid; what the keyword
    /// index loses (a replaced chunk's entry) and gains. Known before the
    /// rows are written, so that the keyword file's writer can start.
    pub(super) fn plan_rows<'a>(
        &self,
        tx: &Connection,
        records: &'a [ChunkRecord],
    ) -> Result<Plan<'a>, IndexError> {
        let mut existing = tx
            .prepare_cached("SELECT id FROM chunks WHERE chunk_id = ?1")
            .map_err(|e| self.e(e))?;
        let mut next: i64 = tx
            .query_row("SELECT coalesce(max(id), 0) FROM chunks", [], |r| r.get(0))
            .map_err(|e| self.e(e))?;
        let mut plan = Plan {
            rows: Vec::with_capacity(records.len()),
            unindex: Vec::new(),
            index: Vec::with_capacity(records.len()),
        };
        // Chunks met earlier in this batch, by id: written before this one.
        let mut earlier: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for r in records {
            if let Some(&at) = earlier.get(r.chunk_id.as_str()) {
                // Not in the keyword index yet: the later text is the one
                // to index.
                let id = plan.index[at].0;
                plan.index[at].1 = &r.document;
                plan.rows.push((id, true));
                continue;
            }
            let old: Option<i64> = existing
                .query_row([&r.chunk_id], |row| row.get(0))
                .optional()
                .map_err(|e| self.e(e))?;
            let id = old.unwrap_or_else(|| {
                next += 1;
                next
            });
            if let Some(old) = old {
                plan.unindex.push(old);
            }
            earlier.insert(&r.chunk_id, plan.index.len());
            plan.index.push((id, &r.document));
            plan.rows.push((id, old.is_some()));
        }
        Ok(plan)
    }

    /// Writes `records` and their `vectors` to `chunks` where `plan` puts
    /// them, in the transaction `tx`: the rows written (for the in-memory
    /// vectors).
    pub(super) fn write_rows<'a>(
        &self,
        tx: &Connection,
        records: &'a [ChunkRecord],
        vectors: &'a [Vec<f32>],
        plan: &Plan<'_>,
    ) -> Result<Vec<(Row, &'a [f32])>, IndexError> {
        let mut written = Vec::with_capacity(records.len());
        // A plain INSERT of a new row, an UPDATE by rowid of a known one:
        // an upsert (`ON CONFLICT … DO UPDATE`) is a statement that may
        // abort after writing, so SQLite keeps a statement journal of the
        // pages it touches for every row (~36 KB, copied and freed per
        // chunk: most of an import's page faults).
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO chunks (chunk_id, timestamp, platform, agent_id, conversation_id, title, topics, model, turn_range, source_file, path, embedding, project, id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            )
            .map_err(|e| self.e(e))?;
        let mut update = tx
            .prepare_cached(
                "UPDATE chunks SET chunk_id = ?1, timestamp = ?2, platform = ?3, agent_id = ?4,
                   conversation_id = ?5, title = ?6, topics = ?7, model = ?8, turn_range = ?9,
                   source_file = ?10, path = ?11, embedding = ?12, project = ?13
                 WHERE id = ?14",
            )
            .map_err(|e| self.e(e))?;
        for ((r, v), &(id, known)) in records.iter().zip(vectors).zip(&plan.rows) {
            let m = &r.meta;
            let topics = serde_json::to_string(&m.topics).unwrap_or_else(|_| "[]".into());
            let values = params![
                r.chunk_id,
                m.timestamp,
                m.platform,
                m.agent_id,
                m.conversation_id,
                m.title,
                topics,
                m.model,
                m.turn_range,
                m.source_file,
                m.path,
                super::to_blob(v),
                m.project,
                id,
            ];
            let statement = if known { &mut update } else { &mut insert };
            statement.execute(values).map_err(|e| self.e(e))?;
            written.push((
                Row {
                    id,
                    timestamp: m.timestamp,
                    platform: m.platform.clone(),
                    agent_id: m.agent_id.clone(),
                    conversation_id: m.conversation_id.clone(),
                    project: m.project.clone(),
                },
                v.as_slice(),
            ));
        }
        Ok(written)
    }
}

impl SqliteStore {
    /// Rewrites the metadata columns of the stored chunks among `records`
    /// in the transaction `tx` (vectors and keyword index untouched).
    pub(super) fn write_metadata(
        &self,
        tx: &Connection,
        records: &[ChunkRecord],
    ) -> Result<(), IndexError> {
        let mut update = tx
            .prepare_cached(
                "UPDATE chunks SET timestamp = ?2, platform = ?3, agent_id = ?4,
                   conversation_id = ?5, title = ?6, topics = ?7, model = ?8, turn_range = ?9,
                   source_file = ?10, path = ?11, project = ?12
                 WHERE chunk_id = ?1",
            )
            .map_err(|e| self.e(e))?;
        for r in records {
            let m = &r.meta;
            let topics = serde_json::to_string(&m.topics).unwrap_or_else(|_| "[]".into());
            update
                .execute(params![
                    r.chunk_id,
                    m.timestamp,
                    m.platform,
                    m.agent_id,
                    m.conversation_id,
                    m.title,
                    topics,
                    m.model,
                    m.turn_range,
                    m.source_file,
                    m.path,
                    m.project,
                ])
                .map_err(|e| self.e(e))?;
        }
        Ok(())
    }
}

/// Where one write's chunks go (see [`SqliteStore::plan_rows`]).
pub(super) struct Plan<'a> {
    /// Each chunk's rowid, and whether its row is there already.
    pub(super) rows: Vec<(i64, bool)>,
    pub(super) unindex: Vec<i64>,
    pub(super) index: Vec<(i64, &'a str)>,
}
