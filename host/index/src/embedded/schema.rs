//! The store's SQLite schema: the tables (and the upgrade of a store made
//! before `project` was kept), a chunk's row as vector search keeps it,
//! the write generation, and the model the vectors were made by.

use rusqlite::{Connection, OptionalExtension, params};

use crate::Filter;

pub(super) const SCHEMA: &str = "
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
pub(super) fn add_project(conn: &Connection) -> rusqlite::Result<()> {
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
