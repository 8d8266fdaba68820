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
//! - `store`: [`SqliteStore`] itself, its connections and what it keeps;
//! - `open`: opening (creating, upgrading) a store and its keyword file;
//! - `schema`: the tables, a chunk's row, the generation;
//! - `hits`: a hit's columns, filters as SQL, the queries returning hits;
//! - `write`: writing chunks' rows and their keyword side together;
//! - `pending`: chunks written before their vectors, and their filling;
//! - `vectors`: the in-memory int8 matrix;
//! - `nearest`: the vector search over it, and keeping it current;
//! - `keyword`: the FTS5 keyword index and its queries;
//! - `keyword_search`: keyword search, in a scope or over everything;
//! - `lengths`: the document lengths BM25 ranks with, kept current;
//! - `keyword_file`: the keyword index's own file, written beside the rows
//!   by a thread of its own, and how the two files are kept in agreement;
//! - `ahead`: documents tokenized on other threads for the writer;
//! - `checkpoint`: the write-ahead log copied back on a thread of its own.
//!
//! What the scores mean and how they are weighed is [`crate::rank`]'s.

mod ahead;
mod checkpoint;
mod hits;
mod keyword;
pub(crate) mod keyword_file;
mod keyword_search;
mod lengths;
mod nearest;
mod open;
mod pending;
mod schema;
mod store;
#[cfg(test)]
pub(crate) mod tests;
mod vectors;
mod write;

use std::collections::BTreeSet;

use rusqlite::OptionalExtension;

use hits::qualified_columns;
pub use keyword::fts_query;
use schema::bump_generation;
pub use store::SqliteStore;
pub(crate) use vectors::{from_blob, to_blob};

use crate::{ChunkRecord, Filter, Hit, IndexError, Pending, Store, StoredModel};

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

    fn purge(&self) -> Result<(), IndexError> {
        let conn = self.conn();
        // `optimize` merges the keyword index into one segment, leaving
        // out deleted documents' terms; with `secure_delete` the pages
        // freed are zeroed, and the checkpoint empties the WAL.
        conn.execute_batch(
            "INSERT INTO kw.chunks_fts(chunks_fts) VALUES ('optimize');
             PRAGMA kw.wal_checkpoint(TRUNCATE); PRAGMA main.wal_checkpoint(TRUNCATE);",
        )
        .map_err(|e| self.e(e))
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
