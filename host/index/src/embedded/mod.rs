//! The embedded store (the zero-setup default): two SQLite files under the
//! root. Chunk metadata in a table with a timestamp index and the vectors
//! as little-endian f32 BLOBs in one; the documents in an FTS5 table for
//! BM25 in the other, written at the same time (see `keyword_file`).
//!
//! Vector search is exact: the vectors are loaded once into one contiguous
//! in-memory matrix of int8 codes (one scale per vector), scanned with an
//! integer dot product split over the cores, and the
//! best candidates (several times `k`) are rescored with their stored f32
//! vectors. A scan reads a quarter of the bytes f32 would (38 MB at 100k ×
//! 384 rather than 150 MB: an f32 scan is memory-bound), and the rescoring
//! keeps the ranking exact. At chat-history scale this beats sqlite-vec's
//! exact search (37–80 ms at 100k on this machine) without a native
//! extension; filters are applied from the same in-memory metadata.
//!
//! Every write bumps a generation number in the `meta` table, in the same
//! transaction. The matrix remembers the generation it reflects: this
//! store's own writes are applied to it in place (an inline turn does not
//! reload 100k vectors), and a generation it did not write — another
//! process imported into the same file — makes the next search reload it.
//!
//! - `schema`: the tables, rows and hits, filters as SQL, the generation,
//!   opening (creating, upgrading) a store, writing chunks' rows;
//! - `vectors`: the in-memory int8 matrix and the vector search over it;
//! - `keyword`: the FTS5 keyword index and its searches;
//! - `keyword_file`: the keyword index's own file, written beside the rows
//!   by a thread of its own, and how the two files are kept in agreement;
//! - `ahead`: documents tokenized on other threads for the writer;
//! - `checkpoint`: the write-ahead log copied back on a thread of its own.
//!
//! What the scores mean and how they are weighed is [`crate::rank`]'s.

mod ahead;
mod checkpoint;
mod keyword;
pub(crate) mod keyword_file;
mod pending;
mod schema;
#[cfg(test)]
pub(crate) mod tests;
mod vectors;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension};

pub use keyword::fts_query;
use schema::{bump_generation, qualified_columns};
pub(crate) use vectors::{from_blob, to_blob};

use crate::{ChunkRecord, Filter, Hit, IndexError, Pending, Store, StoredModel, bm25};

pub struct SqliteStore {
    /// Dropped first: its thread ends before the connections close.
    #[allow(dead_code, reason = "held for its thread")]
    checkpoints: Option<checkpoint::Checkpoints>,
    #[cfg_attr(not(test), allow(dead_code, reason = "held for its thread"))]
    keyword_checkpoints: Option<checkpoint::Checkpoints>,
    /// Writes the keyword file; its thread ends (dropped before the
    /// connections) once its last job is done.
    keyword_writer: keyword_file::KeywordWriter,
    path: PathBuf,
    conn: Mutex<Connection>,
    /// A second connection for the vector side's reads (rescoring, hits),
    /// so that a hybrid search's BM25 query does not hold them up (WAL lets
    /// readers run beside each other and beside the writer).
    reader: Mutex<Connection>,
    /// Loaded on first vector search; kept up to date with this store's
    /// writes, reloaded after another's (see the module's documentation).
    vectors: Mutex<Option<Arc<vectors::Vectors>>>,
    /// How many times the vectors were loaded (tests check that a write
    /// does not cost a reload).
    loads: AtomicUsize,
    /// The documents' lengths `chatmill_bm25()` ranks with (see `bm25`),
    /// kept current like the vectors; `None` if it could not be registered
    /// (keyword search then ranks with FTS5's `bm25()`).
    lengths: Option<bm25::Shared>,
    /// Documents tokenized on the workers' threads for the writing
    /// connection's keyword index; `None` if its tokenizer could not be
    /// put in front of SQLite's (SQLite's alone then tokenizes).
    ahead: Option<Arc<ahead::Ahead>>,
}

fn err(path: &Path, e: impl std::fmt::Display) -> IndexError {
    IndexError::Store {
        store: format!("sqlite ({})", path.display()),
        message: e.to_string(),
        hint: None,
        retryable: false,
    }
}

impl SqliteStore {
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
}

impl SqliteStore {
    /// Writes `records`' rows (with `vectors`, and what `also` writes in
    /// the same transaction) and their keyword index: the keyword file's
    /// thread indexes the documents while this one writes the rows, and
    /// the rows commit once the keywords have (see `keyword_file`).
    fn write_chunks<'a>(
        &self,
        records: &'a [ChunkRecord],
        vectors: &'a [Vec<f32>],
        also: impl FnOnce(&Connection, &[(schema::Row, &'a [f32])]) -> rusqlite::Result<()>,
    ) -> Result<(), IndexError> {
        if vectors.len() != records.len() {
            return Err(self.e(format!(
                "{} vectors for {} chunks",
                vectors.len(),
                records.len()
            )));
        }
        let mut conn = self.conn();
        self.agreeing(&mut conn)?;
        // Deferred, its first statement a write: it locks the store's own
        // file only (IMMEDIATE would lock the attached keyword file too,
        // which the keyword writer is about to take).
        let tx = conn.transaction().map_err(|e| self.e(e))?;
        let before = bump_generation(&tx).map_err(|e| self.e(e))?;
        let plan = self.plan_rows(&tx, records)?;
        let index = plan.index.iter().map(|&(id, doc)| (id, doc.to_owned()));
        let keywords = self.send_keywords(&tx, plan.unindex.clone(), index.collect())?;
        let rows = self
            .write_rows(&tx, records, vectors, &plan)
            .and_then(|rows| {
                also(&tx, &rows).map_err(|e| self.e(e))?;
                Ok(rows)
            });
        let ids: Vec<i64> = plan.rows.iter().map(|&(id, _)| id).collect();
        let rows = self.commit_after(tx, rows, keywords);
        let rows = self.in_agreement(&mut conn, rows)?;
        self.lengths_written(&conn, before, ids.into_iter())?;
        drop(conn);
        self.written(before, rows);
        Ok(())
    }

    /// Hands the keyword side of the write in `tx` (`unindex` out, `index`
    /// in) to the keyword file's thread.
    fn send_keywords(
        &self,
        tx: &Connection,
        unindex: Vec<i64>,
        index: Vec<(i64, String)>,
    ) -> Result<keyword_file::Pending, IndexError> {
        let job = keyword_file::Job::begin(tx, unindex, index).map_err(|e| self.e(e))?;
        Ok(self.keyword_writer.send(job))
    }

    /// Reconciles the two files if they disagree (another process's
    /// write left half done), before a write of this one: a write is made
    /// only on agreeing files (the keyword writer checks again under the
    /// lock, and refuses a write that does not follow its epoch).
    fn agreeing(&self, conn: &mut Connection) -> Result<(), IndexError> {
        if !keyword_file::agree(conn).map_err(|e| self.e(e))? {
            keyword_file::reconcile(conn).map_err(|e| self.e(e))?;
        }
        Ok(())
    }

    /// Commits the store's side of a write (`tx`, with what writing it
    /// gave) once its keyword side (`keywords`) has committed; rolls it
    /// back if either failed.
    fn commit_after<T>(
        &self,
        tx: rusqlite::Transaction<'_>,
        written: Result<T, IndexError>,
        keywords: keyword_file::Pending,
    ) -> Result<T, IndexError> {
        let keyworded = keywords.wait();
        match (written, keyworded) {
            (Ok(done), Ok(())) => tx.commit().map(|()| done).map_err(|e| self.e(e)),
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(self.e(format!("the keyword index: {e}"))),
        }
    }

    /// `outcome`, after a failed write has brought the two files back into
    /// agreement (its keyword side may have committed alone; failing
    /// that, the next open does it).
    fn in_agreement<T>(
        &self,
        conn: &mut Connection,
        outcome: Result<T, IndexError>,
    ) -> Result<T, IndexError> {
        if outcome.is_err()
            && let Err(e) = keyword_file::reconcile(conn)
        {
            tracing::warn!("the keyword index is brought back in line at the next open: {e}");
        }
        outcome
    }
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
        self.write_chunks(records, vectors, |tx, rows| {
            schema::record_model(tx, dim, model)?;
            pending::clear(tx, rows.iter().map(|(row, _)| row.id))
        })
    }

    fn delete(&self, chunk_ids: &[String]) -> Result<(), IndexError> {
        let mut conn = self.conn();
        self.agreeing(&mut conn)?;
        // Its first statement a write: see `write_chunks`.
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
        if unindex.is_empty() {
            // Nothing to take out: no epoch, no keyword write.
            return tx.commit().map_err(|e| self.e(e));
        }
        pending::clear(&tx, unindex.iter().copied()).map_err(|e| self.e(e))?;
        let keywords = self.send_keywords(&tx, unindex, Vec::new())?;
        let done = self.commit_after(tx, Ok(()), keywords);
        self.in_agreement(&mut conn, done)?;
        drop(conn);
        self.invalidate();
        Ok(())
    }

    fn prepare_documents(&self, documents: &[&str]) {
        if let Some(ahead) = &self.ahead {
            ahead.prepare(documents);
        }
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

    fn holding(&self, chunk_ids: &[String]) -> Result<BTreeSet<String>, IndexError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached("SELECT 1 FROM chunks WHERE chunk_id = ?1")
            .map_err(|e| self.e(e))?;
        let mut out = BTreeSet::new();
        for id in chunk_ids {
            if stmt.exists([id]).map_err(|e| self.e(e))? {
                out.insert(id.clone());
            }
        }
        Ok(out)
    }

    fn count(&self) -> Result<u64, IndexError> {
        let conn = self.conn();
        conn.query_row("SELECT count(*) FROM chunks", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.e(e))
    }

    fn stored(&self) -> Result<Option<StoredModel>, IndexError> {
        // `dim` and `model` outlive the last chunk: an empty store holds
        // no vectors. One cached statement: asked before every write.
        let conn = self.conn();
        let (dim, model, empty): (Option<String>, Option<String>, bool) = conn
            .prepare_cached(
                "SELECT (SELECT value FROM meta WHERE key = 'dim'),
                        (SELECT value FROM meta WHERE key = 'model'),
                        NOT EXISTS (SELECT 1 FROM chunks)",
            )
            .and_then(|mut st| st.query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))))
            .map_err(|e| self.e(e))?;
        let dim = dim.and_then(|d| d.parse::<usize>().ok());
        Ok((!empty && dim.is_some()).then_some(StoredModel { model, dim }))
    }

    fn knn(&self, vector: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>, IndexError> {
        self.nearest(vector, k, filter)
    }

    fn keyword(&self, query: &str, k: usize, filter: &Filter) -> Result<Vec<Hit>, IndexError> {
        self.keyword_search(query, k, filter)
    }

    fn metadata_outdated(&self) -> Result<bool, IndexError> {
        let conn = self.conn();
        Ok(self.meta_get(&conn, schema::METADATA_OUTDATED)?.is_some())
    }

    fn refresh_metadata(&self, records: &[ChunkRecord]) -> Result<(), IndexError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.e(e))?;
        bump_generation(&tx).map_err(|e| self.e(e))?;
        self.write_metadata(&tx, records)?;
        tx.commit().map_err(|e| self.e(e))?;
        drop(conn);
        // The in-memory rows filter by the old metadata: reload them.
        self.invalidate();
        Ok(())
    }

    fn metadata_refreshed(&self) -> Result<(), IndexError> {
        self.conn()
            .execute(
                "DELETE FROM meta WHERE key = ?1",
                [schema::METADATA_OUTDATED],
            )
            .map(drop)
            .map_err(|e| self.e(e))
    }

    fn defers_vectors(&self) -> bool {
        true
    }

    fn upsert_pending(&self, records: &[ChunkRecord]) -> Result<(), IndexError> {
        self.write_pending(records)
    }

    fn pending(&self, limit: usize) -> Result<Vec<Pending>, IndexError> {
        self.read_pending(limit)
    }

    fn fill(&self, filled: &[(Pending, Vec<f32>)], model: &str) -> Result<usize, IndexError> {
        self.write_filled(filled, model)
    }

    fn pending_count(&self) -> Result<u64, IndexError> {
        self.count_pending()
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
