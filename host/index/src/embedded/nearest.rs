//! Vector search over the in-memory matrix: the best candidates by its
//! approximate scores, rescored exactly from their stored f32 vectors; and
//! the matrix kept as of the store's generation (loaded anew after
//! another process's write, this store's own applied in place).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rusqlite::OptionalExtension;

use super::schema::{Row, generation};
use super::store::SqliteStore;
use super::vectors::{Vectors, dot, from_blob, top_k};
use crate::{Filter, Hit, IndexError};

/// How far below the k-th approximate score a candidate may be and still be
/// rescored: ~20× the typical quantization error of a 384-d dot product.
const RESCORE_MARGIN: f32 = 0.02;

impl SqliteStore {
    /// The `k` chunks `filter` lets through whose vectors are nearest to
    /// `vector`, scored exactly.
    pub(super) fn nearest(
        &self,
        vector: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, IndexError> {
        let v = self.vectors()?;
        if v.rows.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        if v.dim != vector.len() {
            return Err(IndexError::DimensionMismatch {
                found: v.dim,
                found_model: crate::Store::model(self)?.unwrap_or_default(),
                model: "the query embedder".into(),
                dim: vector.len(),
            });
        }
        let scored = v.approximate(vector, filter);
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

    /// The matrix as of the store's current generation: the one held, or
    /// loaded anew (first use, another process's write).
    fn vectors(&self) -> Result<Arc<Vectors>, IndexError> {
        let mut slot = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
        // The reader, not the main connection: a hybrid search's BM25 query
        // holds that one meanwhile.
        let mut conn = self.reader();
        let current = generation(&conn).map_err(|e| self.e(e))?;
        if let Some(v) = slot.as_ref().filter(|v| v.generation == current) {
            return Ok(Arc::clone(v));
        }
        self.loads.fetch_add(1, Ordering::Relaxed);
        // One read transaction: the generation and the rows agree.
        let tx = conn.transaction().map_err(|e| self.e(e))?;
        let dim: usize = self
            .meta_get(&tx, "dim")?
            .and_then(|d| d.parse().ok())
            .unwrap_or(0);
        let v = Vectors::load(&tx, dim).map_err(|e| self.e(e))?;
        tx.commit().map_err(|e| self.e(e))?;
        let v = Arc::new(v);
        *slot = Some(Arc::clone(&v));
        Ok(v)
    }

    /// After this store's write moved the generation from `before` to
    /// `before + 1`: apply `written` to the matrix if it was current, else
    /// leave it to be reloaded.
    pub(super) fn written(&self, before: i64, written: Vec<(Row, &[f32])>) {
        let mut slot = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_mut() {
            Some(v) if v.generation == before => {
                let v = Arc::make_mut(v);
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

    pub(super) fn invalidate(&self) {
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
}
