//! The embedded store (the zero-setup default): one SQLite file under the
//! root. Chunk metadata in a table with a timestamp index, the documents in
//! an FTS5 table for BM25, and the vectors as little-endian f32 BLOBs.
//!
//! Vector search is exact: the vectors are loaded once into one contiguous
//! in-memory matrix of int8 codes (one scale per vector), scanned with an
//! integer dot product split over the cores, and the
//! best candidates (several times `k`) are rescored with their stored f32
//! vectors. A scan reads a quarter of the bytes f32 would (38 MB at 100k ×
//! 384 rather than 150 MB: the f32 scan was memory-bound), and the rescoring
//! keeps the ranking exact. At chat-history scale this beats sqlite-vec's
//! exact search (37–80 ms at 100k on this machine) without a native
//! extension; filters are applied from the same in-memory metadata.
//!
//! Every write bumps a generation number in the `meta` table, in the same
//! transaction. The matrix remembers the generation it reflects: this
//! store's own writes are applied to it in place (an inline turn does not
//! reload 100k vectors), and a generation it did not write — another
//! process imported into the same file — makes the next search reload it.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension, params};

use crate::bm25::{self, Lengths};
use crate::{ChunkMeta, ChunkRecord, Filter, Hit, IndexError, Store};

/// The keyword index: BM25 over the documents, words stemmed (Porter), so
/// "painting" finds "painted". Contentless: the store keeps no copy of the
/// documents (the chunk files hold them; a hit's text is composed from its
/// file, see `Index::with_documents`), and a row is taken out by its rowid
/// (`contentless_delete`). Keeping a copy made the store twice the size and
/// every chunk's row a page of its own, ~3 % of an import's CPU. (A macro:
/// `SCHEMA` is built with `concat!`.)
macro_rules! fts_table {
    () => {
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    document, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2'
);"
    };
}

const SCHEMA: &str = concat!(
    "
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
",
    fts_table!(),
    "
-- The keyword index is written by `upsert` and `delete` in one statement per
-- batch; earlier versions kept it with per-row triggers.
DROP TRIGGER IF EXISTS chunks_ai;
DROP TRIGGER IF EXISTS chunks_ad;
DROP TRIGGER IF EXISTS chunks_au;
"
);

/// What vector search keeps in memory per chunk.
#[derive(Clone)]
struct Row {
    id: i64,
    timestamp: i64,
    platform: String,
    agent_id: String,
    conversation_id: String,
}

impl Row {
    fn matches(&self, f: &Filter) -> bool {
        f.agent_id.as_ref().is_none_or(|a| *a == self.agent_id)
            && f.platform.as_ref().is_none_or(|p| *p == self.platform)
            && f.conversation_id
                .as_ref()
                .is_none_or(|c| *c == self.conversation_id)
            && f.since.is_none_or(|s| self.timestamp >= s)
            && f.until.is_none_or(|u| self.timestamp <= u)
    }
}

/// The in-memory matrix: row `i` of `codes` (`dim` bytes) times
/// `scales[i]` approximates the vector of `rows[i]`; rows in id order, as
/// of the store's `generation`.
#[derive(Clone, Default)]
struct Vectors {
    generation: i64,
    dim: usize,
    rows: Vec<Row>,
    codes: Vec<i8>,
    scales: Vec<f32>,
}

impl Vectors {
    /// Applies an upsert of `(row, vector)`s to the matrix; `false` if it
    /// cannot be applied in place (a new id below the last one: reload).
    fn apply(&mut self, written: Vec<(Row, &[f32])>) -> bool {
        for (row, vector) in written {
            if self.rows.is_empty() && self.dim == 0 {
                self.dim = vector.len();
            }
            if vector.len() != self.dim {
                // As a load skips it.
                continue;
            }
            let mut codes = Vec::with_capacity(self.dim);
            let scale = quantize(vector, &mut codes);
            match self.rows.binary_search_by_key(&row.id, |r| r.id) {
                Ok(i) => {
                    self.codes[i * self.dim..(i + 1) * self.dim].copy_from_slice(&codes);
                    self.scales[i] = scale;
                    self.rows[i] = row;
                }
                Err(i) if i == self.rows.len() => {
                    self.codes.extend_from_slice(&codes);
                    self.scales.push(scale);
                    self.rows.push(row);
                }
                Err(_) => return false,
            }
        }
        true
    }
}

/// The store's generation (bumped by every write; 0 for an index that has
/// never been written by a chatmill that counts them).
fn generation(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = 'generation'")?
        .query_row([], |r| r.get::<_, String>(0))
        .optional()
        .map(|g| g.and_then(|g| g.parse().ok()).unwrap_or(0))
}

/// Bumps the generation inside the write transaction `tx`; returns the one
/// it replaced.
fn bump_generation(tx: &Connection) -> rusqlite::Result<i64> {
    let g = generation(tx)?;
    tx.execute(
        "INSERT INTO meta(key, value) VALUES ('generation', ?1)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [(g + 1).to_string()],
    )?;
    Ok(g)
}

/// How far below the k-th approximate score a candidate may be and still be
/// rescored: ~20× the typical quantization error of a 384-d dot product.
const RESCORE_MARGIN: f32 = 0.02;

/// Symmetric int8 codes for `v` and their scale (`v[j] ≈ codes[j] * scale`).
fn quantize(v: &[f32], codes: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        codes.extend(std::iter::repeat_n(0, v.len()));
        return 0.0;
    }
    let scale = max / 127.0;
    codes.extend(
        v.iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    // Sixteen lanes of i16 products (|127²| fits) summed into i32: the
    // shape the compiler vectorizes best on plain x86-64 (2.7× the f32 scan
    // here; the straightforward iterator sum is half as fast).
    let mut acc = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += i32::from(i16::from(x[i]) * i16::from(y[i]));
        }
    }
    acc.iter().sum::<i32>() + tail
}

pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// A second connection for the vector side's reads (rescoring, hits),
    /// so that a hybrid search's BM25 query does not hold them up (WAL lets
    /// readers run beside each other and beside the writer).
    reader: Mutex<Connection>,
    /// Loaded on first vector search; kept up to date with this store's
    /// writes, reloaded after another's (see the module's documentation).
    vectors: Mutex<Option<std::sync::Arc<Vectors>>>,
    /// How many times the vectors were loaded (tests check that a write
    /// does not cost a reload).
    loads: std::sync::atomic::AtomicUsize,
    /// The documents' lengths `chatmill_bm25()` ranks with (see `bm25`),
    /// kept current like the vectors; `None` if it could not be registered
    /// (keyword search then ranks with FTS5's `bm25()`).
    lengths: Option<bm25::Shared>,
}

fn err(path: &Path, e: impl std::fmt::Display) -> IndexError {
    IndexError::Store {
        store: format!("sqlite ({})", path.display()),
        message: e.to_string(),
        hint: None,
        retryable: false,
    }
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

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(b: &[u8], out: &mut Vec<f32>) {
    out.extend(
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
}

/// A hit's columns (its text is not among them: see `fts_table!`).
const COLUMNS: &str = "chunk_id, timestamp, platform, agent_id, conversation_id, title, topics, model, turn_range, source_file, path";

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
        },
        document: String::new(),
    })
}

/// SQL for a filter: ` AND …` clauses and their parameters.
fn filter_sql(f: &Filter) -> (String, Vec<rusqlite::types::Value>) {
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

/// Function words a keyword query drops: "when did she go to the park"
/// looks for "go park". They match nearly every chunk, so they barely move
/// BM25's ranking but make FTS5 score every document. (Dropping pronouns
/// too: LoCoMo hybrid R@5 0.692 → 0.697.)
const FUNCTION_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did",
    "do", "does", "for", "from", "had", "has", "have", "he", "her", "him", "his", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "so", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "us",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will",
    "with", "would", "you", "your",
];

/// An FTS5 query from free text: every word quoted (so `"`, `*`, `-`, `:`
/// and parentheses in user text are never syntax), function words dropped
/// unless nothing else is left, any word may match.
pub fn fts_query(text: &str) -> Option<String> {
    fts_any(&query_words(text))
}

/// The words of a keyword query, function words dropped unless nothing
/// else is left.
fn query_words(text: &str) -> Vec<&str> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .take(64)
        .collect();
    let content: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !FUNCTION_WORDS.contains(&w.to_lowercase().as_str()))
        .collect();
    if content.is_empty() { words } else { content }
}

/// `"w1" OR "w2" …`, or `None` for no words.
fn fts_any(words: &[&str]) -> Option<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

/// A filtered keyword search drops the words found in more than this share
/// of the chunks it searches (see `SqliteStore::discriminating`).
const SCOPE_COMMON: f64 = 0.25;

/// … when it searches one agent's or one conversation's memory (the scopes
/// whose vocabulary differs from the index's: the other speaker's name, a
/// project's jargon) of at most this many chunks. A platform or time window
/// samples the index's own mix and is left alone; counting there cost more
/// than the search (hybrid with a platform filter over 100k chunks: 20 →
/// 140 ms).
const SCOPE_SMALL: i64 = 5_000;

/// BM25's length normalization within a scope: FTS5's 0.75 punished the
/// long exchanges that hold the answers (LoCoMo hybrid R@5, with the
/// neighbour share below: 0.682 at 0.75, 0.685 at 0.5, 0.686 at 0.3).
const SCOPE_B: f64 = 0.5;

/// Within a scope a chunk's keyword score gains this share of the better
/// score of the chunks right before and after it in its conversation, and
/// a chunk that does not match but sits next to one that does becomes a
/// candidate: the answer to a question is often the exchange after the one
/// that repeats its words (LoCoMo hybrid R@5 0.657 → 0.682 at 0.3; with
/// b = 0.3: 0.686 at 0.3 and 0.4, 0.684 at 0.5).
const NEIGHBOUR_SHARE: f64 = 0.3;

/// A scope of at most this many chunks is handed to FTS5 as rowids, so that
/// it looks only at them rather than at every match in the index: FTS5
/// evaluates the query once per rowid, which is cheap for a conversation
/// (20 chunks in 100k: 56 → 17 ms for a hybrid search) and dear for an
/// agent's 300 (LoCoMo: 4 → 168 ms per question).
const SCOPE_TINY: i64 = 64;

/// A store made before the keyword index was contentless (its chunks kept
/// their documents, which the keyword index read; some, older still, did not
/// stem words) gets its keyword index made anew from those documents, once,
/// and the documents dropped.
fn contentless(conn: &Connection) -> rusqlite::Result<()> {
    let has_documents = || -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('chunks') WHERE name = 'document')",
            [],
            |r| r.get(0),
        )
    };
    // Asked first without a lock (opening a current store writes nothing),
    // then again under it: another process may have rebuilt it meanwhile.
    if !has_documents()? {
        return Ok(());
    }
    conn.execute_batch("BEGIN IMMEDIATE;")?;
    let rebuilt = match has_documents() {
        Ok(false) => conn.execute_batch("COMMIT;").map(|()| false),
        Ok(true) => {
            tracing::info!("rebuilding the keyword index without a copy of the documents");
            conn.execute_batch(concat!(
                "DROP TABLE chunks_fts; ",
                fts_table!(),
                " INSERT INTO chunks_fts(rowid, document) SELECT id, document FROM chunks;
                  ALTER TABLE chunks DROP COLUMN document;",
                // Document lengths may change with the tokenizer: a store that
                // holds them must see a new generation.
                " INSERT INTO meta(key, value) VALUES ('generation', '1')
                    ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1;",
                " COMMIT;"
            ))
            .map(|()| true)
        }
        Err(e) => Err(e),
    };
    let rebuilt = rebuilt.inspect_err(|_| {
        let _ = conn.execute_batch("ROLLBACK;");
    })?;
    // The documents' pages are free now; the file gives them back (about
    // half of it), and the log the copy went through is emptied. Needed for
    // nothing else: a failure only leaves the files larger.
    if rebuilt && let Err(e) = conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);") {
        tracing::warn!("the index file keeps its former size: {e}");
    }
    Ok(())
}

/// Documents put in the keyword index by one statement, at most (two
/// parameters each, well under SQLite's limit of 32,766). An import writes
/// 256 at a time: one statement, one new segment.
const KEYWORD_ROWS: usize = 1024;

/// FTS5 merges its segments once `AUTOMERGE` of them sit at one level (its
/// default is 4). Every write batch adds a segment, so at 4 an import spent a
/// fifth of its index thread re-merging; at 8 the 100k-pair import bench runs
/// ~7 % faster and the search bench's keyword and hybrid p99 at 100k chunks
/// did not move.
const AUTOMERGE: i64 = 8;

/// Sets the keyword index's merge policy if it differs (a write only then,
/// so opening a tuned store for a search takes no write lock).
fn tune_merges(conn: &Connection) -> rusqlite::Result<()> {
    let current: Option<i64> = conn
        .query_row(
            "SELECT v FROM chunks_fts_config WHERE k = 'automerge'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if current != Some(AUTOMERGE) {
        conn.execute(
            "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', ?1)",
            [AUTOMERGE],
        )?;
    }
    Ok(())
}

impl SqliteStore {
    /// Opens (creating) the store at `path`.
    pub fn open(path: &Path) -> Result<Self, IndexError> {
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir).map_err(|e| err(path, e))?;
        }
        let conn = Connection::open(path).map_err(|e| err(path, e))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| err(path, e))?;
        conn.execute_batch(SCHEMA).map_err(|e| {
            busy(path, &e).unwrap_or_else(|| IndexError::Store {
                store: format!("sqlite ({})", path.display()),
                message: format!("not a usable chatmill index: {e}"),
                hint: Some(format!(
                    "move `{}` aside and run `chatmill reindex` to rebuild it from the chunk files",
                    path.display()
                )),
                retryable: false,
            })
        })?;
        let other = |e: rusqlite::Error| busy(path, &e).unwrap_or_else(|| err(path, e));
        contentless(&conn).map_err(other)?;
        tune_merges(&conn).map_err(other)?;
        let reader = Connection::open(path).map_err(|e| err(path, e))?;
        reader
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| err(path, e))?;
        for c in [&conn, &reader] {
            // A 16 MiB page cache (the default is 2 MiB): BM25 over FTS5
            // looks up the length of every match, and inserts update FTS5's
            // b-trees. (A memory map measured no faster and inflates RSS by
            // the file size.)
            c.execute_batch("PRAGMA cache_size = -16384;")
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
            lengths,
            conn: Mutex::new(conn),
            reader: Mutex::new(reader),
            vectors: Mutex::new(None),
            loads: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn reader(&self) -> MutexGuard<'_, Connection> {
        self.reader.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn e(&self, e: impl std::fmt::Display) -> IndexError {
        err(&self.path, e)
    }

    fn meta_get(&self, conn: &Connection, key: &str) -> Result<Option<String>, IndexError> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.e(e))
    }

    fn vectors(&self) -> Result<std::sync::Arc<Vectors>, IndexError> {
        let mut slot = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
        // The reader, not the main connection: a hybrid search's BM25 query
        // holds that one meanwhile.
        let mut conn = self.reader();
        let current = generation(&conn).map_err(|e| self.e(e))?;
        if let Some(v) = slot.as_ref().filter(|v| v.generation == current) {
            return Ok(std::sync::Arc::clone(v));
        }
        self.loads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // One read transaction: the generation and the rows agree.
        let tx = conn.transaction().map_err(|e| self.e(e))?;
        let dim: usize = self
            .meta_get(&tx, "dim")?
            .and_then(|d| d.parse().ok())
            .unwrap_or(0);
        let mut v = Vectors {
            generation: generation(&tx).map_err(|e| self.e(e))?,
            dim,
            ..Vectors::default()
        };
        {
            let mut stmt = tx
                .prepare("SELECT id, timestamp, platform, agent_id, conversation_id, embedding FROM chunks ORDER BY id")
                .map_err(|e| self.e(e))?;
            let mut rows = stmt.query([]).map_err(|e| self.e(e))?;
            let mut f = Vec::with_capacity(dim);
            while let Some(r) = rows.next().map_err(|e| self.e(e))? {
                let rusqlite::types::ValueRef::Blob(blob) = r.get_ref(5).map_err(|e| self.e(e))?
                else {
                    continue;
                };
                if blob.len() != dim * 4 {
                    continue;
                }
                f.clear();
                from_blob(blob, &mut f);
                v.rows.push(Row {
                    id: r.get(0).map_err(|e| self.e(e))?,
                    timestamp: r.get(1).map_err(|e| self.e(e))?,
                    platform: r.get(2).map_err(|e| self.e(e))?,
                    agent_id: r.get(3).map_err(|e| self.e(e))?,
                    conversation_id: r.get(4).map_err(|e| self.e(e))?,
                });
                let scale = quantize(&f, &mut v.codes);
                v.scales.push(scale);
            }
        }
        tx.commit().map_err(|e| self.e(e))?;
        let v = std::sync::Arc::new(v);
        *slot = Some(std::sync::Arc::clone(&v));
        Ok(v)
    }

    /// After this store's write moved the generation from `before` to
    /// `before + 1`: apply `written` to the matrix if it was current, else
    /// leave it to be reloaded.
    fn written(&self, before: i64, written: Vec<(Row, &[f32])>) {
        let mut slot = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_mut() {
            Some(v) if v.generation == before => {
                let v = std::sync::Arc::make_mut(v);
                v.generation = before + 1;
                if !v.apply(written) {
                    *slot = None;
                }
            }
            // A search reloaded it after the commit.
            Some(v) if v.generation == before + 1 => {}
            _ => *slot = None,
        }
    }

    /// Takes the rows `unindex` out of the keyword index and puts the
    /// documents `index` (rowid, text) in, one statement each, as the last
    /// writes of the transaction `tx`. FTS5 writes its pending terms out as
    /// a new segment at every statement savepoint once it is part of a
    /// transaction, so per-row statements made one segment per chunk, merged
    /// over and over (a third of an import's index time).
    fn write_keyword_index(
        &self,
        tx: &Connection,
        unindex: &[i64],
        index: &[(i64, &str)],
    ) -> Result<(), IndexError> {
        if !unindex.is_empty() {
            tx.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT value FROM json_each(?1))",
                [serde_json::to_string(unindex).map_err(|e| self.e(e))?],
            )
            .map_err(|e| self.e(e))?;
        }
        // The documents as parameters of one statement (`VALUES (?, ?), …`):
        // handed over as JSON, escaping and parsing them was 3.6 % of an
        // import's CPU.
        for rows in index.chunks(KEYWORD_ROWS) {
            let sql = format!(
                "INSERT INTO chunks_fts(rowid, document) VALUES {}",
                vec!["(?, ?)"; rows.len()].join(", ")
            );
            let mut insert = tx.prepare_cached(&sql).map_err(|e| self.e(e))?;
            let params: Vec<&dyn rusqlite::ToSql> = rows
                .iter()
                .flat_map(|(id, doc)| [id as &dyn rusqlite::ToSql, doc as &dyn rusqlite::ToSql])
                .collect();
            insert.execute(params.as_slice()).map_err(|e| self.e(e))?;
        }
        Ok(())
    }

    /// The lengths of the documents this store's write (from generation
    /// `before`) put in the keyword index, if the table was current.
    fn lengths_written(
        &self,
        conn: &Connection,
        before: i64,
        ids: impl Iterator<Item = i64>,
    ) -> Result<(), IndexError> {
        let Some(shared) = &self.lengths else {
            return Ok(());
        };
        let mut slot = shared.lock().unwrap_or_else(|p| p.into_inner());
        if slot.generation != before {
            // Stale (or never loaded): the next keyword search reloads it.
            return Ok(());
        }
        let lengths = std::sync::Arc::make_mut(&mut slot);
        let mut stmt = conn
            .prepare_cached("SELECT sz FROM chunks_fts_docsize WHERE id = ?1")
            .map_err(|e| self.e(e))?;
        for id in ids {
            let sz: Option<Vec<u8>> = stmt
                .query_row([id], |r| r.get(0))
                .optional()
                .map_err(|e| self.e(e))?;
            lengths.set(id, sz.as_deref().unwrap_or_default());
        }
        lengths.generation = before + 1;
        Ok(())
    }

    /// Makes the lengths `chatmill_bm25()` reads current (loading them on
    /// first use and after another process's write); whether keyword search
    /// may rank with it.
    fn fresh_lengths(&self) -> Result<bool, IndexError> {
        let Some(shared) = &self.lengths else {
            return Ok(false);
        };
        let mut conn = self.conn();
        let current = generation(&conn).map_err(|e| self.e(e))?;
        let mut slot = shared.lock().unwrap_or_else(|p| p.into_inner());
        if slot.generation != current {
            let tx = conn.transaction().map_err(|e| self.e(e))?;
            let g = generation(&tx).map_err(|e| self.e(e))?;
            *slot = std::sync::Arc::new(Lengths::load(&tx, g).map_err(|e| self.e(e))?);
            tx.commit().map_err(|e| self.e(e))?;
        }
        Ok(true)
    }

    fn invalidate(&self) {
        *self.vectors.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Exact scores of the chunks `ids` against `vector` (as `usize` ids so
    /// that [`top_k`] ranks them).
    fn rescore(&self, ids: &[i64], vector: &[f32]) -> Result<Vec<(usize, f32)>, IndexError> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached("SELECT embedding FROM chunks WHERE id = ?1")
            .map_err(|e| self.e(e))?;
        let mut out = Vec::with_capacity(ids.len());
        let mut f = Vec::with_capacity(vector.len());
        for &id in ids {
            let blob: Option<Vec<u8>> = stmt
                .query_row([id], |r| r.get(0))
                .optional()
                .map_err(|e| self.e(e))?;
            let Some(blob) = blob.filter(|b| b.len() == vector.len() * 4) else {
                continue;
            };
            f.clear();
            from_blob(&blob, &mut f);
            out.push((id as usize, dot(&f, vector)));
        }
        Ok(out)
    }

    fn hits_by_id(&self, scored: &[(i64, f32)]) -> Result<Vec<Hit>, IndexError> {
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
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight lanes the compiler vectorizes.
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// The `k` best (index, score) pairs.
fn top_k(mut scored: Vec<(usize, f32)>, k: usize) -> Vec<(usize, f32)> {
    if scored.len() > k {
        scored.select_nth_unstable_by(k, |a, b| b.1.total_cmp(&a.1));
        scored.truncate(k);
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
}

impl Store for SqliteStore {
    fn name(&self) -> &str {
        "sqlite"
    }

    fn upsert(
        &self,
        records: &[ChunkRecord],
        vectors: &[Vec<f32>],
        model: &str,
    ) -> Result<(), IndexError> {
        if records.is_empty() {
            return Ok(());
        }
        let dim = vectors.first().map_or(0, Vec::len);
        let mut conn = self.conn();
        let stored_dim: Option<usize> = self.meta_get(&conn, "dim")?.and_then(|d| d.parse().ok());
        let stored_model = self.meta_get(&conn, "model")?;
        let other_model = stored_model.as_deref().is_some_and(|m| m != model);
        // Only on a mismatch does it matter whether the index is empty (an
        // empty one takes any model); `count(*)` per batch was a scan each.
        if let Some(found) = stored_dim.filter(|d| *d != dim || other_model) {
            let empty: bool = conn
                .query_row("SELECT NOT EXISTS (SELECT 1 FROM chunks)", [], |r| r.get(0))
                .map_err(|e| self.e(e))?;
            if !empty {
                return Err(IndexError::DimensionMismatch {
                    found,
                    found_model: stored_model.unwrap_or_default(),
                    model: model.to_string(),
                    dim,
                });
            }
        }
        let tx = conn.transaction().map_err(|e| self.e(e))?;
        let before = bump_generation(&tx).map_err(|e| self.e(e))?;
        tx.execute(
            "INSERT INTO meta(key, value) VALUES ('dim', ?1), ('model', ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![dim.to_string(), model],
        )
        .map_err(|e| self.e(e))?;
        let mut written = Vec::with_capacity(records.len());
        // What the keyword index loses (a replaced chunk's row) and gains.
        let mut unindex: Vec<i64> = Vec::new();
        let mut index: Vec<(i64, &str)> = Vec::with_capacity(records.len());
        {
            let mut existing = tx
                .prepare_cached("SELECT id FROM chunks WHERE chunk_id = ?1")
                .map_err(|e| self.e(e))?;
            // A plain INSERT of a new row, an UPDATE by rowid of a known one:
            // an upsert (`ON CONFLICT … DO UPDATE`) is a statement that may
            // abort after writing, so SQLite kept a statement journal of
            // the pages it touched for every row (~36 KB, copied and freed
            // per chunk: most of an import's page faults).
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO chunks (chunk_id, timestamp, platform, agent_id, conversation_id, title, topics, model, turn_range, source_file, path, embedding)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                )
                .map_err(|e| self.e(e))?;
            let mut update = tx
                .prepare_cached(
                    "UPDATE chunks SET chunk_id = ?1, timestamp = ?2, platform = ?3, agent_id = ?4,
                       conversation_id = ?5, title = ?6, topics = ?7, model = ?8, turn_range = ?9,
                       source_file = ?10, path = ?11, embedding = ?12
                     WHERE id = ?13",
                )
                .map_err(|e| self.e(e))?;
            for (r, v) in records.iter().zip(vectors) {
                let m = &r.meta;
                let old: Option<i64> = existing
                    .query_row([&r.chunk_id], |row| row.get(0))
                    .optional()
                    .map_err(|e| self.e(e))?;
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
                    to_blob(v),
                ];
                let id: i64 = match &old {
                    Some(id) => {
                        let mut with_id = values.to_vec();
                        with_id.push(id);
                        update.execute(with_id.as_slice()).map_err(|e| self.e(e))?;
                        *id
                    }
                    None => {
                        insert.execute(values).map_err(|e| self.e(e))?;
                        tx.last_insert_rowid()
                    }
                };
                match old.and_then(|old| index.iter().position(|(i, _)| *i == old)) {
                    // Written earlier in this batch: not in the keyword
                    // index yet; the later text is the one to index.
                    Some(at) => index[at].1 = &r.document,
                    None => {
                        if let Some(old) = old {
                            unindex.push(old);
                        }
                        index.push((id, &r.document));
                    }
                }
                written.push((
                    Row {
                        id,
                        timestamp: m.timestamp,
                        platform: m.platform.clone(),
                        agent_id: m.agent_id.clone(),
                        conversation_id: m.conversation_id.clone(),
                    },
                    v.as_slice(),
                ));
            }
        }
        self.write_keyword_index(&tx, &unindex, &index)?;
        tx.commit().map_err(|e| self.e(e))?;
        self.lengths_written(&conn, before, written.iter().map(|(row, _)| row.id))?;
        drop(conn);
        self.written(before, written);
        Ok(())
    }

    fn delete(&self, chunk_ids: &[String]) -> Result<(), IndexError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.e(e))?;
        bump_generation(&tx).map_err(|e| self.e(e))?;
        let mut unindex = Vec::new();
        {
            let mut del = tx
                .prepare_cached("DELETE FROM chunks WHERE chunk_id = ?1 RETURNING id")
                .map_err(|e| self.e(e))?;
            for id in chunk_ids {
                if let Some(gone) = del
                    .query_row([id], |r| r.get(0))
                    .optional()
                    .map_err(|e| self.e(e))?
                {
                    unindex.push(gone);
                }
            }
        }
        self.write_keyword_index(&tx, &unindex, &[])?;
        tx.commit().map_err(|e| self.e(e))?;
        drop(conn);
        self.invalidate();
        Ok(())
    }

    fn ids(&self) -> Result<BTreeSet<String>, IndexError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT chunk_id FROM chunks")
            .map_err(|e| self.e(e))?;
        let ids = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.e(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.e(e))?;
        Ok(ids)
    }

    fn count(&self) -> Result<u64, IndexError> {
        let conn = self.conn();
        conn.query_row("SELECT count(*) FROM chunks", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.e(e))
    }

    fn model(&self) -> Result<Option<String>, IndexError> {
        let conn = self.conn();
        if self.count_locked(&conn)? == 0 {
            return Ok(None);
        }
        self.meta_get(&conn, "model")
    }

    fn knn(&self, vector: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>, IndexError> {
        let v = self.vectors()?;
        if v.rows.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        if v.dim != vector.len() {
            return Err(IndexError::DimensionMismatch {
                found: v.dim,
                found_model: self.model()?.unwrap_or_default(),
                model: "the query embedder".into(),
                dim: vector.len(),
            });
        }
        let dim = v.dim;
        let unfiltered = *filter == Filter::default();
        let mut q_codes = Vec::with_capacity(dim);
        let q_scale = quantize(vector, &mut q_codes);
        let score_range = |lo: usize, hi: usize| -> Vec<(usize, f32)> {
            (lo..hi)
                .filter(|&i| unfiltered || v.rows[i].matches(filter))
                .map(|i| {
                    let d = dot_i8(&v.codes[i * dim..(i + 1) * dim], &q_codes);
                    (i, d as f32 * v.scales[i] * q_scale)
                })
                .collect()
        };
        let n = v.rows.len();
        let scored = if n >= 20_000 {
            // Two halves on two threads (this machine has 2 cores).
            let mid = n / 2;
            let (mut a, b) = std::thread::scope(|s| {
                let h = s.spawn(|| score_range(mid, n));
                (score_range(0, mid), h.join().unwrap_or_default())
            });
            a.extend(b);
            a
        } else {
            score_range(0, n)
        };
        // An approximate score is off by ~1e-3 (int8 steps of ≤ 1/127 of a
        // component); whatever could still be in the true best `k` — within
        // `RESCORE_MARGIN` of the k-th approximate score — is rescored
        // exactly from its stored vector.
        let pool = top_k(scored, k * 4 + 64);
        let floor = pool.get(k - 1).map_or(f32::MIN, |p| p.1 - RESCORE_MARGIN);
        let candidates: Vec<i64> = pool
            .into_iter()
            .take_while(|p| p.1 >= floor)
            .map(|(i, _)| v.rows[i].id)
            .collect();
        let exact = self.rescore(&candidates, vector)?;
        let best: Vec<(i64, f32)> = top_k(exact, k)
            .into_iter()
            .map(|(id, s)| (id as i64, s.clamp(-1.0, 1.0)))
            .collect();
        self.hits_by_id(&best)
    }

    fn keyword(&self, query: &str, k: usize, filter: &Filter) -> Result<Vec<Hit>, IndexError> {
        let words = query_words(query);
        let Some(q) = fts_any(&words) else {
            return Ok(Vec::new());
        };
        let ranked = self.fresh_lengths()?;
        if ranked
            && (filter.agent_id.is_some() || filter.conversation_id.is_some())
            && let Some(hits) = self.keyword_in_scope(&q, words.len(), k, filter)?
        {
            return Ok(hits);
        }
        let cols = qualified_columns();
        let rank = if ranked {
            format!(" AND rank MATCH '{}'", bm25::RANK)
        } else {
            String::new()
        };
        // Unfiltered, FTS5 keeps only the best `k` while it scores (its
        // `ORDER BY rank LIMIT` path) and only those are joined; a filter
        // must see every match before the limit.
        let sql = if *filter == Filter::default() {
            format!(
                "SELECT {cols}, f.rank FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?{rank} ORDER BY rank LIMIT {k}) f
                 JOIN chunks c ON c.id = f.rowid ORDER BY f.rank LIMIT ?"
            )
        } else {
            format!(
                "SELECT {cols}, f.rank FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?{rank} ORDER BY rank) f
                 JOIN chunks c ON c.id = f.rowid WHERE 1 = 1{{filter}} ORDER BY f.rank LIMIT ?"
            )
        };
        self.select(
            &sql,
            Some(q),
            k,
            filter,
            // bm25() is lower-is-better and negative; flip it.
            |r| r.get::<_, f64>(11).map(|rank| (-rank) as f32),
        )
    }

    fn recent(&self, k: usize, filter: &Filter) -> Result<Vec<Hit>, IndexError> {
        let cols = qualified_columns();
        self.select(
            &format!(
                "SELECT {cols} FROM chunks c WHERE 1 = 1{{filter}} ORDER BY c.timestamp DESC, c.chunk_id DESC LIMIT ?"
            ),
            None,
            k,
            filter,
            |r| r.get::<_, i64>(1).map(|ts| ts as f32),
        )
    }
}

impl SqliteStore {
    /// Keyword search within one agent's or one conversation's memory of
    /// at most `SCOPE_SMALL` chunks (`None` for a larger scope). FTS5
    /// weighs a word by its rarity in the whole index, so a name that is
    /// rare overall but in most chunks of one agent's memory (the other
    /// speaker's name in a companion's history) outweighs the words that
    /// matter, and the best BM25 hits become "Awesome, Melanie!". The words
    /// in more than `SCOPE_COMMON` of the scope are dropped — BM25 over the
    /// scope alone would give them almost no weight — keeping the rarest if
    /// all would go, and the rest rank as `bm25()` would rank them.
    ///
    /// Words are weighed by their rarity in the scope (IDF over the
    /// scope's chunks: LoCoMo hybrid R@5 0.647 → 0.657), with `SCOPE_B`'s
    /// length normalization, and scores spill over to neighbouring chunks
    /// (`NEIGHBOUR_SHARE`).
    ///
    /// One FTS5 pass: `chatmill_terms()` returns each matching chunk's
    /// count of every query word (and what BM25 needs besides), so the
    /// words are counted and the chunks scored here. (Counting each word
    /// with its own query, then searching, evaluated the query once per
    /// word more: a 20-chunk conversation in 100k took 12.7 ms.)
    fn keyword_in_scope(
        &self,
        q: &str,
        phrases: usize,
        k: usize,
        filter: &Filter,
    ) -> Result<Option<Vec<Hit>>, IndexError> {
        let (where_sql, filter_args) = filter_sql(filter);
        let conn = self.conn();
        let total: i64 = conn
            .prepare_cached(&format!(
                "SELECT count(*) FROM (SELECT 1 FROM chunks c WHERE 1 = 1{where_sql} LIMIT {})",
                SCOPE_SMALL + 1
            ))
            .and_then(|mut st| {
                st.query_row(rusqlite::params_from_iter(filter_args.iter()), |r| r.get(0))
            })
            .map_err(|e| self.e(e))?;
        if total > SCOPE_SMALL {
            return Ok(None);
        }
        // A tiny scope goes to FTS5 as rowids (`SCOPE_TINY`); a larger one
        // is joined to every match.
        let sql = if total <= SCOPE_TINY {
            format!(
                "SELECT rowid, chatmill_terms(chunks_fts) FROM chunks_fts
                 WHERE chunks_fts MATCH ? AND rowid IN (SELECT c.id FROM chunks c WHERE 1 = 1{where_sql})"
            )
        } else {
            format!(
                "SELECT chunks_fts.rowid, chatmill_terms(chunks_fts) FROM chunks_fts
                 JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ?{where_sql}"
            )
        };
        let mut args = vec![rusqlite::types::Value::Text(q.to_string())];
        args.extend(filter_args);
        let mut st = conn.prepare_cached(&sql).map_err(|e| self.e(e))?;
        let rows: Vec<(i64, bm25::Terms)> = st
            .query_map(rusqlite::params_from_iter(args), |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
            })
            .map_err(|e| self.e(e))?
            .filter_map(|r| match r {
                Ok((id, blob)) => bm25::Terms::decode(&blob).map(|t| Ok((id, t))),
                Err(e) => Some(Err(e)),
            })
            .collect::<Result<_, _>>()
            .map_err(|e| self.e(e))?;
        drop(st);
        drop(conn);
        let mut df = vec![0i64; phrases];
        for (_, t) in &rows {
            for (d, f) in df.iter_mut().zip(&t.freq) {
                *d += i64::from(*f > 0.0);
            }
        }
        let common = (SCOPE_COMMON * total as f64) as i64;
        let mut kept: Vec<bool> = df.iter().map(|d| phrases < 2 || *d <= common).collect();
        if !kept.contains(&true)
            && let Some(rarest) = (0..phrases).min_by_key(|&p| df[p])
        {
            kept[rarest] = true;
        }
        // Rarity within the scope, not the whole index.
        let idf: Vec<f64> = df
            .iter()
            .map(|&d| {
                (((total - d) as f64 + 0.5) / (d as f64 + 0.5))
                    .ln()
                    .max(1e-6)
            })
            .collect();
        let scored: HashMap<i64, f64> = rows
            .iter()
            .filter(|(_, t)| {
                t.freq
                    .iter()
                    .enumerate()
                    .any(|(p, f)| *f > 0.0 && kept.get(p) == Some(&true))
            })
            .map(|(id, t)| {
                let s = bm25::score(
                    SCOPE_B,
                    &idf,
                    &t.freq,
                    |p| kept.get(p) == Some(&true),
                    t.len,
                    t.avgdl,
                );
                (*id, s)
            })
            .collect();
        if scored.is_empty() {
            return Ok(Some(Vec::new()));
        }
        // Each chunk of a conversation with a match, in turn order, gains
        // a share of its better neighbour's score.
        let matched: Vec<i64> = scored.keys().copied().collect();
        let order = self.scope_order(filter, &matched)?;
        let at = |i: usize| scored.get(&order[i].1).copied().unwrap_or(0.0);
        let smoothed: Vec<(usize, f32)> = (0..order.len())
            .filter_map(|i| {
                let conv = order[i].0;
                let prev = (i > 0 && order[i - 1].0 == conv).then(|| at(i - 1));
                let next = order.get(i + 1).filter(|n| n.0 == conv).map(|_| at(i + 1));
                let near = prev.unwrap_or(0.0).max(next.unwrap_or(0.0));
                let own = at(i);
                (own > 0.0 || near > 0.0)
                    .then(|| (order[i].1 as usize, (own + NEIGHBOUR_SHARE * near) as f32))
            })
            .collect();
        let best: Vec<(i64, f32)> = top_k(smoothed, k)
            .into_iter()
            .map(|(id, s)| (id as i64, s))
            .collect();
        self.hits_by_id(&best).map(Some)
    }

    /// The chunks of a filtered scope that share a conversation with one
    /// of the `matched` rowids, in conversation order: (a number for the
    /// conversation, rowid), sorted by conversation and first turn, so
    /// that neighbours in the list are neighbours in the conversation.
    fn scope_order(
        &self,
        filter: &Filter,
        matched: &[i64],
    ) -> Result<Vec<(usize, i64)>, IndexError> {
        let (where_sql, filter_args) = filter_sql(filter);
        let matched = serde_json::to_string(matched).map_err(|e| self.e(e))?;
        let mut args = vec![rusqlite::types::Value::Text(matched)];
        args.extend(filter_args);
        let conn = self.reader();
        let mut st = conn
            .prepare_cached(&format!(
                "SELECT c.id, c.conversation_id, c.turn_range FROM chunks c
                 WHERE c.conversation_id IN (SELECT conversation_id FROM chunks
                   WHERE id IN (SELECT value FROM json_each(?))){where_sql}"
            ))
            .map_err(|e| self.e(e))?;
        let mut convs: HashMap<String, usize> = HashMap::new();
        let mut rows: Vec<(usize, u32, i64)> = st
            .query_map(rusqlite::params_from_iter(args), |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.e(e))?
            .map(|r| {
                r.map(|(id, conv, range)| {
                    let n = convs.len();
                    let c = *convs.entry(conv).or_insert(n);
                    (
                        c,
                        crate::turn_pairs(&range).map_or(0, |(first, _)| first),
                        id,
                    )
                })
            })
            .collect::<Result<_, _>>()
            .map_err(|e| self.e(e))?;
        rows.sort_unstable();
        Ok(rows.into_iter().map(|(c, _, id)| (c, id)).collect())
    }
}

/// `COLUMNS` as `c.<name>` (queries join other tables).
fn qualified_columns() -> String {
    COLUMNS
        .split(", ")
        .map(|c| format!("c.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl SqliteStore {
    /// Runs `sql` (with `{filter}` where the filter's clauses go): the
    /// MATCH text first when given, the filter's values, then `k`.
    fn select(
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
}

impl SqliteStore {
    fn count_locked(&self, conn: &Connection) -> Result<i64, IndexError> {
        conn.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))
            .map_err(|e| self.e(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Embedder, Index, Indexer, Lexical, Mode, SearchRequest};
    use std::sync::Arc;

    fn rec(id: &str, ts: i64, platform: &str, agent: &str, text: &str) -> ChunkRecord {
        ChunkRecord {
            chunk_id: id.into(),
            embed_text: text.into(),
            document: format!("---\nchunk_id: {id}\n---\n\n{text}\n"),
            meta: ChunkMeta {
                timestamp: ts,
                platform: platform.into(),
                agent_id: agent.into(),
                conversation_id: format!("conv-{id}"),
                title: Some(format!("Title {id}")),
                topics: vec!["t".into()],
                model: "m".into(),
                turn_range: "1".into(),
                source_file: "f.json".into(),
                path: format!("{id}.md"),
            },
        }
    }

    fn index(dir: &Path) -> Index {
        let store = SqliteStore::open(&dir.join("index.sqlite3")).unwrap();
        Index::new(Arc::new(store), Arc::new(Lexical::default()))
    }

    fn ids(r: &crate::SearchResults) -> Vec<&str> {
        r.hits.iter().map(|h| h.chunk_id.as_str()).collect()
    }

    #[test]
    fn within_a_scope_the_exchanges_next_to_a_match_become_candidates() {
        let dir = tempfile::tempdir().unwrap();
        let ix = index(dir.path());
        let turn = |id: &str, conv: &str, pair: &str, text: &str| {
            let mut r = rec(id, 1, "local", "carol", text);
            r.meta.conversation_id = conv.into();
            r.meta.turn_range = pair.into();
            r
        };
        ix.index(&[
            // Stored out of order: neighbours come from the turn ranges.
            turn("t3", "trip", "3", "I booked the flight for May then."),
            turn("t1", "trip", "1", "Any ideas for a spring holiday?"),
            turn(
                "t2",
                "trip",
                "2",
                "What about Lisbon and its painted tiles?",
            ),
            turn("t4", "trip", "4-5", "Packing list: sandals, charger."),
            // Pair 1 of another conversation: not a neighbour of t2.
            turn("o1", "dentist", "1", "Booked a dentist appointment."),
            turn("o2", "dentist", "2", "Moved it to Friday."),
        ])
        .unwrap();
        let mut q = SearchRequest::new("Lisbon tiles");
        q.mode = Mode::Keyword;
        q.filter.agent_id = Some("carol".into());
        let r = ix.search(&q).unwrap();
        let got = ids(&r);
        assert_eq!(got[0], "t2", "{got:?}");
        let mut rest = got[1..].to_vec();
        rest.sort();
        assert_eq!(rest, ["t1", "t3"], "only t2's neighbours: {got:?}");
        assert!(r.hits[1].score < r.hits[0].score);
    }

    #[test]
    fn a_word_in_most_of_the_searched_scope_does_not_outrank_the_rare_ones() {
        let dir = tempfile::tempdir().unwrap();
        let ix = index(dir.path());
        let mut recs = vec![
            rec("a1", 1, "local", "alice", "Awesome, Melanie!"),
            rec("a2", 2, "local", "alice", "Yep, Melanie!"),
            rec("a3", 3, "local", "alice", "Melanie, hi there!"),
            rec(
                "a4",
                4,
                "local",
                "alice",
                "Melanie, that is great news about the new job offer and the move.",
            ),
            rec(
                "a5",
                5,
                "local",
                "alice",
                "I have been running farther every week to destress; long runs clear my head and help me sleep.",
            ),
        ];
        for i in 0..30 {
            recs.push(rec(
                &format!("b{i}"),
                10 + i,
                "local",
                "bob",
                &format!("notes on gardening tomatoes, week {i}"),
            ));
        }
        ix.index(&recs).unwrap();
        // "melanie" is rare in the index (so FTS5 weighs it high) but in four
        // of alice's five chunks: within her memory it says nothing.
        let mut q = SearchRequest::new("What does Melanie do to destress?");
        q.mode = Mode::Keyword;
        q.filter.agent_id = Some("alice".into());
        assert_eq!(ids(&ix.search(&q).unwrap()), ["a5"]);
        // The word rare in the scope decides.
        let mut q = SearchRequest::new("Melanie news");
        q.mode = Mode::Keyword;
        q.filter.agent_id = Some("alice".into());
        assert_eq!(ids(&ix.search(&q).unwrap()), ["a4"]);

        // The same in a scope past `SCOPE_TINY` (joined, not handed over
        // as rowids).
        let more: Vec<ChunkRecord> = (0..SCOPE_TINY)
            .map(|i| {
                rec(
                    &format!("m{i}"),
                    100 + i,
                    "local",
                    "alice",
                    "Melanie, see you soon!",
                )
            })
            .collect();
        ix.index(&more).unwrap();
        let mut q = SearchRequest::new("What does Melanie do to destress?");
        q.mode = Mode::Keyword;
        q.filter.agent_id = Some("alice".into());
        assert_eq!(ids(&ix.search(&q).unwrap()), ["a5"]);
        // Every word common in the scope: the rarer one is kept.
        let mut q = SearchRequest::new("Melanie soon");
        q.mode = Mode::Keyword;
        q.filter.agent_id = Some("alice".into());
        q.k = 100;
        let hits = ix.search(&q).unwrap();
        assert_eq!(hits.hits.len(), SCOPE_TINY as usize, "{:?}", ids(&hits));
        assert!(ids(&hits).iter().all(|id| id.starts_with('m')));
    }

    #[test]
    fn own_writes_update_the_vectors_in_place_and_anothers_make_them_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        let mine = Arc::new(SqliteStore::open(&path).unwrap());
        let embedder = Arc::new(Lexical::default());
        let ix = Index::new(Arc::clone(&mine) as Arc<dyn Store>, embedder.clone());
        let semantic = |text: &str| {
            let mut q = SearchRequest::new(text);
            q.mode = Mode::Semantic;
            q.k = 1;
            // The best hit, if it shares anything with the query.
            ix.search(&q)
                .unwrap()
                .hits
                .into_iter()
                .filter(|h| h.score > 0.1)
                .map(|h| h.chunk_id)
                .collect::<Vec<_>>()
        };
        let loads = || mine.loads.load(std::sync::atomic::Ordering::Relaxed);
        ix.index(&[
            rec("a", 1, "local", "u", "nginx returns 504 on long uploads"),
            rec(
                "b",
                2,
                "local",
                "u",
                "sourdough starter smells like acetone",
            ),
        ])
        .unwrap();
        assert_eq!(semantic("sourdough starter"), ["b"]);
        assert_eq!(loads(), 1);

        // This store's writes, new and replacing, reach the loaded vectors
        // without a reload.
        ix.index(&[rec("c", 3, "local", "u", "kubernetes liveness probe flaps")])
            .unwrap();
        assert_eq!(semantic("kubernetes probe"), ["c"]);
        ix.index(&[rec("b", 2, "local", "u", "tomato seedlings in april")])
            .unwrap();
        assert_eq!(semantic("tomato seedlings"), ["b"]);
        assert!(semantic("sourdough starter acetone").is_empty());
        assert_eq!(loads(), 1);

        // Another process writes into the same file: the next search sees it.
        let other = Index::new(Arc::new(SqliteStore::open(&path).unwrap()), embedder);
        other
            .index(&[rec("d", 4, "local", "u", "espresso grinder burr alignment")])
            .unwrap();
        assert_eq!(semantic("espresso grinder"), ["d"]);
        assert_eq!(loads(), 2);
        other.remove(&["d".to_string()]).unwrap();
        assert!(semantic("espresso grinder").is_empty());
        assert_eq!(loads(), 3);
        // Nothing written since: no reload.
        assert_eq!(semantic("kubernetes probe"), ["c"]);
        assert_eq!(loads(), 3);
    }

    #[test]
    fn keyword_scores_stay_fts5s_bm25_through_own_and_anothers_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        let embedder = Arc::new(Lexical::default());
        let ix = Index::new(
            Arc::new(SqliteStore::open(&path).unwrap()),
            embedder.clone(),
        );
        let other = Index::new(Arc::new(SqliteStore::open(&path).unwrap()), embedder);
        let raw = Connection::open(&path).unwrap();
        let check = |when: &str| {
            let mut q = SearchRequest::new("nginx proxy timeout");
            q.mode = Mode::Keyword;
            let ours: Vec<(String, f32)> = ix
                .search(&q)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| (h.chunk_id, h.score))
                .collect();
            let mut st = raw
                .prepare(
                    "SELECT c.chunk_id, -bm25(chunks_fts) FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
                     WHERE chunks_fts MATCH '\"nginx\" OR \"proxy\" OR \"timeout\"' ORDER BY bm25(chunks_fts)",
                )
                .unwrap();
            let theirs: Vec<(String, f32)> = st
                .query_map([], |r| Ok((r.get(0)?, r.get::<_, f64>(1)? as f32)))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(ours.len(), theirs.len(), "{when}: {ours:?} {theirs:?}");
            for ((a, x), (b, y)) in ours.iter().zip(&theirs) {
                assert_eq!(a, b, "{when}");
                assert!((x - y).abs() < 1e-5, "{when}: {a} {x} vs {y}");
            }
        };
        ix.index(&[
            rec("a", 1, "local", "u", "nginx returns 504 behind the proxy"),
            rec("b", 2, "local", "u", "proxy timeout for websockets"),
            rec("c", 3, "local", "u", "sourdough starter"),
        ])
        .unwrap();
        check("first search");
        // This store replaces a document with a much longer one.
        ix.index(&[rec(
            "a",
            1,
            "local",
            "u",
            "nginx returns 504 behind the proxy, and here is a much longer story about it with many more words than before",
        )])
        .unwrap();
        check("after this store's write");
        // Another store replaces one and adds one.
        other
            .index(&[
                rec("b", 2, "local", "u", "timeout"),
                rec("d", 4, "local", "u", "nginx nginx proxy"),
            ])
            .unwrap();
        check("after another store's write");
    }

    #[test]
    fn the_merge_policy_is_set_on_new_and_older_stores_and_rewritten_only_if_it_differs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        let automerge = |c: &Connection| -> i64 {
            c.query_row(
                "SELECT v FROM chunks_fts_config WHERE k = 'automerge'",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        {
            let store = SqliteStore::open(&path).unwrap();
            assert_eq!(automerge(&store.conn()), AUTOMERGE);
            // A store from before the policy: FTS5's default.
            store
                .conn()
                .execute(
                    "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('automerge', 4)",
                    [],
                )
                .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        let conn = store.conn();
        assert_eq!(automerge(&conn), AUTOMERGE);
        let before = conn.total_changes();
        tune_merges(&conn).unwrap();
        assert_eq!(
            conn.total_changes(),
            before,
            "an already tuned store is not written"
        );
    }

    #[test]
    fn the_keyword_index_matches_the_chunks_through_replaces_repeats_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        // An index from a version that kept the keyword index with triggers.
        {
            let old = SqliteStore::open(&path).unwrap();
            old.conn()
                .execute_batch(
                    "CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
                       INSERT INTO chunks_fts(rowid, document) VALUES (new.id, new.document);
                     END;",
                )
                .unwrap();
        }
        let ix = index(dir.path());
        let integrity = || {
            // FTS5's own check of its structure (a contentless index has no
            // content to hold it against), and its rows are the chunks'.
            let store = SqliteStore::open(&path).unwrap();
            let conn = store.conn();
            conn.execute(
                "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
            .unwrap();
            let rows = |sql: &str| -> Vec<i64> {
                conn.prepare(sql)
                    .unwrap()
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap()
            };
            assert_eq!(
                rows("SELECT rowid FROM chunks_fts ORDER BY rowid"),
                rows("SELECT id FROM chunks ORDER BY id")
            );
        };
        let found = |text: &str| {
            let mut q = SearchRequest::new(text);
            q.mode = Mode::Keyword;
            let mut v: Vec<String> = ix
                .search(&q)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| h.chunk_id)
                .collect();
            v.sort();
            v
        };
        ix.index(&[
            rec("a", 1, "local", "u", "alpha nginx"),
            rec("b", 2, "local", "u", "bravo sourdough"),
            rec("c", 3, "local", "u", "charlie kubernetes"),
        ])
        .unwrap();
        integrity();
        // Same text (metadata only), new text, and one id twice in a batch.
        ix.index(&[
            rec("a", 10, "local", "u", "alpha nginx"),
            rec("b", 2, "local", "u", "bravo tomatoes"),
            rec("d", 4, "local", "u", "delta espresso"),
            rec("d", 4, "local", "u", "delta grinder"),
        ])
        .unwrap();
        integrity();
        assert_eq!(found("nginx"), ["a"]);
        assert!(found("sourdough").is_empty());
        assert_eq!(found("tomatoes"), ["b"]);
        assert!(found("espresso").is_empty());
        assert_eq!(found("grinder"), ["d"]);
        ix.remove(&["c".to_string(), "nope".to_string()]).unwrap();
        integrity();
        assert!(found("kubernetes").is_empty());
        assert_eq!(ix.count().unwrap(), 3);
    }

    #[test]
    fn a_time_phrase_favours_the_chunks_dated_in_its_window() {
        let dir = tempfile::tempdir().unwrap();
        let index = index(dir.path());
        let camping = "We went camping at the lake with the kids";
        index
            .index(&[
                rec("a-mar", 1_678_449_600, "local", "x", camping), // 2023-03-10
                rec("b-sep", 1_695_211_200, "local", "x", camping), // 2023-09-20
                rec("c-jun", 1_686_830_400, "local", "x", camping), // 2023-06-15
                rec(
                    "d-jun",
                    1_687_262_400,
                    "local",
                    "x",
                    "Invoice totals are stored in cents",
                ), // 2023-06-20
            ])
            .unwrap();
        let mut req = SearchRequest::new("the camping trip at the lake in June");
        req.now = Some(1_701_432_000); // 2023-12-01
        let ids = |r: &crate::SearchResults| -> Vec<String> {
            r.hits.iter().map(|h| h.chunk_id.clone()).collect()
        };
        let off = index
            .search(&SearchRequest {
                time_hints: false,
                ..req.clone()
            })
            .unwrap();
        assert_eq!(off.time_window, None);
        assert_eq!(ids(&off)[..3], ["a-mar", "b-sep", "c-jun"], "a tie, by id");
        for mode in [Mode::Hybrid, Mode::Keyword, Mode::Semantic] {
            let on = index
                .search(&SearchRequest {
                    mode,
                    ..req.clone()
                })
                .unwrap();
            let w = on.time_window.clone().unwrap();
            assert_eq!(w.phrase, "June");
            let got = ids(&on);
            assert_eq!(got[0], "c-jun", "{mode:?}: {got:?}");
            // Favoured, not filtered: the other camping trips are still
            // found, and above an unrelated chunk that is merely in June
            // (a vector search ranks every chunk of the window; the ones
            // far less similar than the best get no vote for their date).
            let at = |id: &str| got.iter().position(|g| g == id);
            for other in ["a-mar", "b-sep"] {
                assert!(
                    at(other).is_some_and(|i| at("d-jun").is_none_or(|j| i < j)),
                    "{mode:?}: {got:?}"
                );
            }
        }
        // A filter that leaves nothing of the window: no window search.
        let mut early = req.clone();
        early.filter.until = Some(1_680_000_000); // 2023-03-28
        let r = index.search(&early).unwrap();
        assert_eq!(ids(&r), ["a-mar"]);
    }

    #[test]
    fn upsert_search_filter_delete_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let ix = index(dir.path());
        // Cold start: nothing, no error.
        assert!(
            ix.search(&SearchRequest::new("anything"))
                .unwrap()
                .hits
                .is_empty()
        );
        ix.index(&[
            rec(
                "a",
                100,
                "chatgpt",
                "external",
                "nginx returns 504 on long uploads",
            ),
            rec(
                "b",
                200,
                "claude",
                "external",
                "sourdough starter smells like acetone",
            ),
            rec(
                "c",
                300,
                "local",
                "user",
                "nginx websocket proxy timeout settings",
            ),
        ])
        .unwrap();
        assert_eq!(ix.count().unwrap(), 3);

        let r = ix.search(&SearchRequest::new("nginx timeout")).unwrap();
        assert_eq!(&ids(&r)[..2], ["c", "a"], "{r:#?}");
        assert!(r.warnings[0].contains("lexical"), "{:?}", r.warnings);

        let mut q = SearchRequest::new("nginx");
        q.filter.platform = Some("chatgpt".into());
        assert_eq!(ids(&ix.search(&q).unwrap()), ["a"]);
        q.filter = Filter {
            agent_id: Some("user".into()),
            ..Filter::default()
        };
        q.mode = Mode::Semantic;
        assert_eq!(ids(&ix.search(&q).unwrap()), ["c"]);

        let mut recent = SearchRequest::new("");
        recent.mode = Mode::Recent;
        assert_eq!(ids(&ix.search(&recent).unwrap()), ["c", "b", "a"]);
        recent.filter.until = Some(250);
        recent.filter.since = Some(150);
        assert_eq!(ids(&ix.search(&recent).unwrap()), ["b"]);

        // Replace (same id): FTS and vectors follow.
        ix.index(&[rec("a", 100, "chatgpt", "external", "banana bread recipe")])
            .unwrap();
        let mut kw = SearchRequest::new("nginx");
        kw.mode = Mode::Keyword;
        assert_eq!(ids(&ix.search(&kw).unwrap()), ["c"]);
        kw.queries[0].text = "banana".into();
        assert_eq!(ids(&ix.search(&kw).unwrap()), ["a"]);
        assert_eq!(ix.count().unwrap(), 3);

        ix.remove(&["c".to_string()]).unwrap();
        kw.queries[0].text = "nginx".into();
        assert!(ix.search(&kw).unwrap().hits.is_empty());
        drop(ix);
        let ix = index(dir.path());
        assert_eq!(
            ix.ids().unwrap().into_iter().collect::<Vec<_>>(),
            ["a", "b"]
        );
    }

    #[test]
    fn keyword_search_survives_any_text_and_multi_query_dedups() {
        let dir = tempfile::tempdir().unwrap();
        let ix = index(dir.path());
        ix.index(&[
            rec(
                "a",
                1,
                "chatgpt",
                "x",
                "C++ templates: SFINAE and \"concepts\"",
            ),
            rec("b", 2, "chatgpt", "x", "python asyncio event loop"),
        ])
        .unwrap();
        for nasty in [
            "\"unbalanced",
            "a* OR (b",
            "-x:y",
            "NEAR(",
            "'; DROP TABLE chunks;--",
            "🙂",
        ] {
            let mut q = SearchRequest::new(nasty);
            q.mode = Mode::Keyword;
            ix.search(&q).unwrap();
            q.mode = Mode::Hybrid;
            ix.search(&q).unwrap();
        }
        let mut q = SearchRequest::new("concepts templates");
        q.queries.push(crate::WeightedQuery {
            text: "C++ SFINAE".into(),
            weight: 0.5,
        });
        let r = ix.search(&q).unwrap();
        assert_eq!(ids(&r)[0], "a");
        let unique: BTreeSet<&str> = ids(&r).into_iter().collect();
        assert_eq!(unique.len(), r.hits.len(), "deduplicated by chunk id");
    }

    #[test]
    fn keyword_search_stems_and_drops_function_words() {
        assert_eq!(
            fts_query("When did she go to the park?").as_deref(),
            Some("\"go\" OR \"park\"")
        );
        // Nothing but function words: they are the query.
        assert_eq!(
            fts_query("what is it").as_deref(),
            Some("\"what\" OR \"is\" OR \"it\"")
        );
        assert_eq!(fts_query("  ?! "), None);

        let dir = tempfile::tempdir().unwrap();
        let ix = index(dir.path());
        ix.index(&[
            rec("a", 1, "local", "x", "I painted a sunrise over the lake"),
            rec("b", 2, "local", "x", "the borrow checker rejects my loop"),
        ])
        .unwrap();
        let mut q = SearchRequest::new("what was she painting?");
        q.mode = Mode::Keyword;
        assert_eq!(ids(&ix.search(&q).unwrap()), ["a"]);
    }

    #[test]
    fn the_int8_scan_with_rescoring_ranks_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("index.sqlite3")).unwrap();
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f32 / (1u64 << 53) as f32 - 0.5
        };
        let unit = |v: Vec<f32>| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        let dim = 48;
        let n = 3000;
        let vectors: Vec<Vec<f32>> = (0..n)
            .map(|_| unit((0..dim).map(|_| rnd()).collect()))
            .collect();
        let records: Vec<ChunkRecord> = (0..n)
            .map(|i| rec(&format!("c{i:04}"), i as i64, "local", "x", "t"))
            .collect();
        store.upsert(&records, &vectors, "test").unwrap();
        for _ in 0..20 {
            let q = unit((0..dim).map(|_| rnd()).collect());
            let mut exact: Vec<(usize, f32)> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| (i, dot(v, &q)))
                .collect();
            exact.sort_by(|a, b| b.1.total_cmp(&a.1));
            let want: Vec<String> = exact[..10]
                .iter()
                .map(|(i, _)| format!("c{i:04}"))
                .collect();
            let got: Vec<String> = store
                .knn(&q, 10, &Filter::default())
                .unwrap()
                .into_iter()
                .map(|h| h.chunk_id)
                .collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_store_that_kept_its_documents_is_made_contentless_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        // What a store made by an earlier chatmill looks like: the documents
        // in the chunks table, a keyword index that reads them (and did not
        // stem words), kept by a trigger.
        let old = rec("a", 1, "local", "x", "painting sunrises by the lake");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO meta VALUES ('generation', '3'), ('dim', '384'), ('model', 'lexical-hash-v1-384');
                 CREATE TABLE chunks (id INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, timestamp INTEGER NOT NULL,
                   platform TEXT NOT NULL, agent_id TEXT NOT NULL, conversation_id TEXT NOT NULL, title TEXT,
                   topics TEXT NOT NULL, model TEXT NOT NULL, turn_range TEXT NOT NULL, source_file TEXT NOT NULL,
                   path TEXT NOT NULL, document TEXT NOT NULL, embedding BLOB NOT NULL);
                 CREATE INDEX chunks_timestamp ON chunks(timestamp);
                 CREATE VIRTUAL TABLE chunks_fts USING fts5(document, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
                 CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
                   INSERT INTO chunks_fts(rowid, document) VALUES (new.id, new.document);
                 END;",
            )
            .unwrap();
            let v = Lexical::default()
                .embed(&[old.embed_text.as_str()])
                .unwrap();
            let m = &old.meta;
            conn.execute(
                "INSERT INTO chunks (chunk_id, timestamp, platform, agent_id, conversation_id, title, topics, model, turn_range, source_file, path, document, embedding)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, '[]', ?7, ?8, ?9, ?10, ?11, ?12)",
                params![old.chunk_id, m.timestamp, m.platform, m.agent_id, m.conversation_id, m.title, m.model, m.turn_range, m.source_file, m.path, old.document, to_blob(&v[0])],
            )
            .unwrap();
        }
        let ix = index(dir.path());
        let columns: Vec<String> = Connection::open(&path)
            .unwrap()
            .prepare("SELECT name FROM pragma_table_info('chunks')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(!columns.iter().any(|c| c == "document"), "{columns:?}");
        let free: i64 = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA freelist_count", [], |r| r.get(0))
            .unwrap();
        assert_eq!(free, 0, "the documents' pages are given back");
        // The old document is found, stemmed, and by meaning.
        let mut q = SearchRequest::new("painted sunrise");
        q.mode = Mode::Keyword;
        assert_eq!(ids(&ix.search(&q).unwrap()), ["a"]);
        q.mode = Mode::Semantic;
        assert_eq!(ids(&ix.search(&q).unwrap()), ["a"]);
        // New writes and replaces reach the keyword index; opening again
        // changes nothing.
        drop(ix);
        let ix = index(dir.path());
        ix.index(&[
            rec("b", 2, "local", "x", "baking bread"),
            rec("a", 1, "local", "x", "rowing at dawn"),
        ])
        .unwrap();
        q.mode = Mode::Keyword;
        q.queries[0].text = "baked".into();
        assert_eq!(ids(&ix.search(&q).unwrap()), ["b"]);
        q.queries[0].text = "painted".into();
        assert!(ids(&ix.search(&q).unwrap()).is_empty());
        q.queries[0].text = "rowed".into();
        assert_eq!(ids(&ix.search(&q).unwrap()), ["a"]);
    }

    #[test]
    fn hits_take_their_text_from_their_chunk_files_and_a_missing_one_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let file = "---\nchunk_id: a\n---\n\n## Context\n\nnginx returns 504\n";
        std::fs::write(dir.path().join("a.md"), file).unwrap();
        let mut a = rec("a", 1, "local", "x", "nginx returns 504");
        a.document = crate::document::compose(a.meta.title.as_deref(), &a.meta.topics, file);
        index(dir.path())
            .index(&[a.clone(), rec("b", 2, "local", "x", "nginx proxy settings")])
            .unwrap();
        let ix = index(dir.path()).with_documents(dir.path());
        for mode in [Mode::Keyword, Mode::Semantic, Mode::Hybrid, Mode::Recent] {
            let mut q = SearchRequest::new("nginx 504");
            q.mode = mode;
            let r = ix.search(&q).unwrap();
            let hit = r.hits.iter().find(|h| h.chunk_id == "a").unwrap();
            assert_eq!(hit.document, a.document, "{mode:?}");
            assert!(
                hit.document
                    .starts_with("# Title a\nTopics: t\n\n## Context")
            );
            // `b.md` was never written: its hit has no text, and says why.
            let b = r.hits.iter().find(|h| h.chunk_id == "b").unwrap();
            assert!(b.document.is_empty(), "{mode:?}");
            assert!(
                r.warnings
                    .iter()
                    .any(|w| w.contains("`b.md`") && w.contains("verify --repair")),
                "{mode:?}: {:?}",
                r.warnings
            );
        }
        // Without a root, the store's hits carry no text.
        let r = index(dir.path())
            .search(&SearchRequest::new("nginx"))
            .unwrap();
        assert!(r.hits.iter().all(|h| h.document.is_empty()));
    }

    #[test]
    fn a_store_another_process_holds_is_busy_not_broken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("PRAGMA journal_mode = WAL; BEGIN EXCLUSIVE; CREATE TABLE held (x);")
            .unwrap();
        let Err(e) = SqliteStore::open(&path) else {
            panic!("opened a store another connection holds for writing");
        };
        let IndexError::Store {
            message,
            hint,
            retryable,
            ..
        } = &e
        else {
            panic!("{e}");
        };
        assert!(message.contains("busy"), "{message}");
        assert!(!message.contains("not a usable"), "{message}");
        assert!(hint.as_deref().unwrap().contains("again in a moment"));
        assert!(retryable);
        holder.execute_batch("ROLLBACK;").unwrap();
        SqliteStore::open(&path).unwrap();
    }

    #[test]
    fn new_stores_take_8_kib_pages_and_older_ones_keep_theirs() {
        let page_size = |path: &Path| -> i64 {
            Connection::open(path)
                .unwrap()
                .query_row("PRAGMA page_size", [], |r| r.get(0))
                .unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite3");
        index(dir.path())
            .index(&[rec("a", 1, "local", "x", "nginx timeout")])
            .unwrap();
        assert_eq!(page_size(&path), 8192);

        // A store an earlier chatmill made, with SQLite's 4 KiB pages.
        let old = tempfile::tempdir().unwrap();
        let old_path = old.path().join("index.sqlite3");
        Connection::open(&old_path)
            .unwrap()
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
            .unwrap();
        assert_eq!(page_size(&old_path), 4096);
        let ix = index(old.path());
        ix.index(&[rec("b", 2, "local", "x", "sourdough starter")])
            .unwrap();
        assert_eq!(page_size(&old_path), 4096);
        let mut q = SearchRequest::new("sourdough");
        q.mode = Mode::Keyword;
        assert_eq!(ids(&ix.search(&q).unwrap()), ["b"]);
    }

    #[test]
    fn a_different_dimension_is_refused_and_a_broken_file_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("i.sqlite3")).unwrap());
        let ix = Index::new(store.clone(), Arc::new(Lexical::new(64)));
        ix.index(&[rec("a", 1, "p", "x", "hello world")]).unwrap();
        let other = Index::new(store, Arc::new(Lexical::new(32)));
        let e = other.index(&[rec("b", 1, "p", "x", "hi")]).unwrap_err();
        assert!(
            matches!(
                e,
                IndexError::DimensionMismatch {
                    found: 64,
                    dim: 32,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.hint().unwrap().contains("reindex"));

        let bad = dir.path().join("bad.sqlite3");
        std::fs::write(&bad, b"this is not a database, just some text").unwrap();
        let e = SqliteStore::open(&bad).err().unwrap();
        assert!(e.hint().unwrap().contains("reindex"), "{e}");
    }

    #[test]
    fn reads_while_writing_from_other_threads() {
        let dir = tempfile::tempdir().unwrap();
        let ix = Arc::new(index(dir.path()));
        ix.index(&[rec("seed", 0, "p", "x", "seed text")]).unwrap();
        std::thread::scope(|s| {
            let w = Arc::clone(&ix);
            s.spawn(move || {
                for i in 0..200 {
                    w.index(&[rec(
                        &format!("r{i}"),
                        i,
                        "p",
                        "x",
                        &format!("record number {i}"),
                    )])
                    .unwrap();
                }
            });
            for _ in 0..2 {
                let r = Arc::clone(&ix);
                s.spawn(move || {
                    for _ in 0..100 {
                        let hits = r.search(&SearchRequest::new("record number")).unwrap();
                        assert!(hits.hits.len() <= 10);
                    }
                });
            }
        });
        assert_eq!(ix.count().unwrap(), 201);
        let e: &dyn Embedder = ix.embedder.as_ref();
        assert_eq!(e.dim(), 384);
    }
}
