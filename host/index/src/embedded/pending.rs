//! Chunks whose vectors come later: an import writes a chunk's row and
//! keyword index first and its embedding text into `pending`; the
//! embedding stage reads them back, embeds them and writes each vector
//! with the removal of its `pending` row in one transaction, so a killed
//! fill loses nothing and redoes nothing it committed. A waiting chunk's
//! `embedding` is an empty BLOB: the vector search skips it, keyword and
//! recent searches find it.

use rusqlite::{Connection, OptionalExtension, params};

use super::schema::{Row, bump_generation, record_model};
use super::store::SqliteStore;
use super::vectors::to_blob;
use crate::{ChunkRecord, IndexError, Pending};

impl SqliteStore {
    pub(super) fn write_pending(&self, records: &[ChunkRecord]) -> Result<(), IndexError> {
        if records.is_empty() {
            return Ok(());
        }
        let none = vec![Vec::new(); records.len()];
        self.write_chunks(records, &none, |tx, rows| {
            let mut wait =
                tx.prepare_cached("INSERT OR REPLACE INTO pending (id, text) VALUES (?1, ?2)")?;
            for ((row, _), r) in rows.iter().zip(records) {
                wait.execute(params![row.id, r.embed_text])?;
            }
            Ok(())
        })
    }

    pub(super) fn read_pending(&self, limit: usize) -> Result<Vec<Pending>, IndexError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT c.chunk_id, p.text FROM pending p JOIN chunks c ON c.id = p.id
                 ORDER BY p.id DESC LIMIT ?1",
            )
            .map_err(|e| self.e(e))?;
        stmt.query_map([limit as i64], |r| {
            Ok(Pending {
                chunk_id: r.get(0)?,
                text: r.get(1)?,
            })
        })
        .map_err(|e| self.e(e))?
        .collect::<Result<_, _>>()
        .map_err(|e| self.e(e))
    }

    pub(super) fn write_filled(
        &self,
        filled: &[(Pending, Vec<f32>)],
        model: &str,
    ) -> Result<usize, IndexError> {
        let Some(dim) = filled.first().map(|(_, v)| v.len()) else {
            return Ok(0);
        };
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.e(e))?;
        let before = bump_generation(&tx).map_err(|e| self.e(e))?;
        record_model(&tx, dim, model).map_err(|e| self.e(e))?;
        let rows = self.fill_rows(&tx, filled)?;
        tx.commit().map_err(|e| self.e(e))?;
        drop(conn);
        let n = rows.len();
        let written = rows
            .iter()
            .map(|(row, i)| (row.clone(), filled[*i].1.as_slice()))
            .collect();
        self.written(before, written);
        Ok(n)
    }

    /// Writes the vectors of the chunks still waiting with the same text;
    /// their rows, with the index of their vector in `filled`.
    fn fill_rows(
        &self,
        tx: &Connection,
        filled: &[(Pending, Vec<f32>)],
    ) -> Result<Vec<(Row, usize)>, IndexError> {
        let mut done = tx
            .prepare_cached(
                "DELETE FROM pending WHERE text = ?2
                   AND id = (SELECT id FROM chunks WHERE chunk_id = ?1)
                 RETURNING id",
            )
            .map_err(|e| self.e(e))?;
        let mut set = tx
            .prepare_cached(
                "UPDATE chunks SET embedding = ?2 WHERE id = ?1
                 RETURNING timestamp, platform, agent_id, conversation_id, project",
            )
            .map_err(|e| self.e(e))?;
        let mut rows = Vec::with_capacity(filled.len());
        for (i, (p, v)) in filled.iter().enumerate() {
            let id: Option<i64> = done
                .query_row(params![p.chunk_id, p.text], |r| r.get(0))
                .optional()
                .map_err(|e| self.e(e))?;
            let Some(id) = id else { continue };
            let row = set
                .query_row(params![id, to_blob(v)], |r| {
                    Ok(Row {
                        id,
                        timestamp: r.get(0)?,
                        platform: r.get(1)?,
                        agent_id: r.get(2)?,
                        conversation_id: r.get(3)?,
                        project: r.get(4)?,
                    })
                })
                .map_err(|e| self.e(e))?;
            rows.push((row, i));
        }
        Ok(rows)
    }

    pub(super) fn count_pending(&self) -> Result<u64, IndexError> {
        self.conn()
            .prepare_cached("SELECT count(*) FROM pending p JOIN chunks c ON c.id = p.id")
            .and_then(|mut s| s.query_row([], |r| r.get::<_, i64>(0)))
            .map(|n| n as u64)
            .map_err(|e| self.e(e))
    }
}

/// Takes the chunks `ids` (rowids) off the waiting list, in the write
/// transaction `tx`: they were given vectors, or deleted.
pub(super) fn clear(tx: &Connection, ids: impl Iterator<Item = i64>) -> rusqlite::Result<()> {
    let waiting: bool = tx
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM pending)")?
        .query_row([], |r| r.get(0))?;
    if !waiting {
        return Ok(());
    }
    let mut del = tx.prepare_cached("DELETE FROM pending WHERE id = ?1")?;
    for id in ids {
        del.execute([id])?;
    }
    Ok(())
}
