//! Writing chunks: where each goes (a known chunk keeps its rowid), their
//! rows with their vectors, and the keyword side of the same write, handed
//! to the keyword file's thread and committed first (see `keyword_file`).

use rusqlite::{Connection, OptionalExtension, params};

use super::keyword_file;
use super::schema::{Row, bump_generation};
use super::store::SqliteStore;
use super::vectors::to_blob;
use crate::{ChunkRecord, IndexError};

impl SqliteStore {
    /// Writes `records`' rows (with `vectors`, and what `also` writes in
    /// the same transaction) and their keyword index: the keyword file's
    /// thread indexes the documents while this one writes the rows, and
    /// the rows commit once the keywords have (see `keyword_file`).
    pub(super) fn write_chunks<'a>(
        &self,
        records: &'a [ChunkRecord],
        vectors: &'a [Vec<f32>],
        also: impl FnOnce(&Connection, &[(Row, &'a [f32])]) -> rusqlite::Result<()>,
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
    pub(super) fn send_keywords(
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
    pub(super) fn agreeing(&self, conn: &mut Connection) -> Result<(), IndexError> {
        if !keyword_file::agree(conn).map_err(|e| self.e(e))? {
            keyword_file::reconcile(conn).map_err(|e| self.e(e))?;
        }
        Ok(())
    }

    /// Commits the store's side of a write (`tx`, with what writing it
    /// gave) once its keyword side (`keywords`) has committed; rolls it
    /// back if either failed.
    pub(super) fn commit_after<T>(
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
    pub(super) fn in_agreement<T>(
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

    /// Where `records` go, read in the write transaction `tx` (which holds
    /// the store's write lock, so the largest rowid cannot move): a known
    /// chunk keeps its row, a new one gets the next rowid; what the keyword
    /// index loses (a replaced chunk's entry) and gains. Known before the
    /// rows are written, so that the keyword file's writer can start.
    fn plan_rows<'a>(
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
    fn write_rows<'a>(
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
                to_blob(v),
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
struct Plan<'a> {
    /// Each chunk's rowid, and whether its row is there already.
    rows: Vec<(i64, bool)>,
    unindex: Vec<i64>,
    index: Vec<(i64, &'a str)>,
}
