//! The document lengths `chatmill_bm25()` ranks with (see `bm25`): loaded
//! on first use and after another process's write, kept current with this
//! store's own.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use super::schema::generation;
use super::store::SqliteStore;
use crate::IndexError;
use crate::bm25::Lengths;

impl SqliteStore {
    /// The lengths of the documents this store's write (from generation
    /// `before`) put in the keyword index, if the table was current.
    pub(super) fn lengths_written(
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
        let lengths = Arc::make_mut(&mut slot);
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
    pub(super) fn fresh_lengths(&self) -> Result<bool, IndexError> {
        let Some(shared) = &self.lengths else {
            return Ok(false);
        };
        let mut conn = self.conn();
        let current = generation(&conn).map_err(|e| self.e(e))?;
        let mut slot = shared.lock().unwrap_or_else(|p| p.into_inner());
        if slot.generation != current {
            let tx = conn.transaction().map_err(|e| self.e(e))?;
            let g = generation(&tx).map_err(|e| self.e(e))?;
            *slot = Arc::new(Lengths::load(&tx, g).map_err(|e| self.e(e))?);
            tx.commit().map_err(|e| self.e(e))?;
        }
        Ok(true)
    }
}
