//! Keyword search: BM25 over the keyword index, and the FTS5 side of a
//! scoped search (the words' counts from `chatmill_terms()`; how they are
//! weighed is [`crate::rank`]'s).

use std::collections::HashMap;

use super::hits::{COLUMN_COUNT, filter_sql, qualified_columns};
use super::keyword::{fts_any, query_words};
use super::store::SqliteStore;
use super::vectors::top_k;
use crate::bm25;
use crate::rank::{self, ScopeWeights};
use crate::{Filter, Hit, IndexError};

/// A scope of at most this many chunks is handed to FTS5 as rowids, so that
/// it looks only at them rather than at every match in the index: FTS5
/// evaluates the query once per rowid, which is cheap for a conversation
/// (20 chunks in 100k: 56 → 17 ms for a hybrid search) and dear for an
/// agent's 300 (LoCoMo: 4 → 168 ms per question).
pub(super) const SCOPE_TINY: i64 = 64;

/// A scope's size and the `chatmill_terms()` of its matching chunks, by
/// rowid.
type ScopeTerms = (i64, Vec<(i64, bm25::Terms)>);

impl SqliteStore {
    /// BM25 keyword search: the best `k` chunks `filter` lets through for
    /// `query`'s words; within a small agent or conversation scope, ranked
    /// by the scope's own statistics ([`rank::scoped_keyword`]).
    pub(super) fn keyword_search(
        &self,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<Vec<Hit>, IndexError> {
        let words = query_words(query);
        let Some(q) = fts_any(&words) else {
            return Ok(Vec::new());
        };
        let ranked = self.fresh_lengths()?;
        if ranked
            && rank::scoped_keyword(filter)
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
            |r| r.get::<_, f64>(COLUMN_COUNT).map(|rank| (-rank) as f32),
        )
    }

    /// Keyword search within one agent's or one conversation's memory of
    /// at most [`rank::SCOPE_SMALL`] chunks (`None` for a larger scope),
    /// its words weighed by [`ScopeWeights`] and its scores spilling over
    /// to neighbouring chunks ([`rank::spill_to_neighbours`]).
    ///
    /// One FTS5 pass: `chatmill_terms()` returns each matching chunk's
    /// count of every query word (and what BM25 needs besides), so the
    /// words are counted and the chunks scored here, not by a query per
    /// word (12.7 ms that way for a 20-chunk conversation in 100k).
    fn keyword_in_scope(
        &self,
        q: &str,
        phrases: usize,
        k: usize,
        filter: &Filter,
    ) -> Result<Option<Vec<Hit>>, IndexError> {
        let Some((total, rows)) = self.scope_terms(q, filter)? else {
            return Ok(None);
        };
        let weights = ScopeWeights::new(total, phrases, rows.iter().map(|(_, t)| t));
        let scored: HashMap<i64, f64> = rows
            .iter()
            .filter_map(|(id, t)| weights.score(t).map(|s| (*id, s)))
            .collect();
        if scored.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let matched: Vec<i64> = scored.keys().copied().collect();
        let order = self.scope_order(filter, &matched)?;
        let best: Vec<(i64, f32)> = top_k(rank::spill_to_neighbours(&order, &scored), k)
            .into_iter()
            .map(|(id, s)| (id as i64, s))
            .collect();
        self.hits_by_id(&best).map(Some)
    }

    /// The size of `filter`'s scope and, when it is at most
    /// [`rank::SCOPE_SMALL`], the `chatmill_terms()` of each of its chunks
    /// that matches `q`.
    fn scope_terms(&self, q: &str, filter: &Filter) -> Result<Option<ScopeTerms>, IndexError> {
        let (where_sql, filter_args) = filter_sql(filter);
        let conn = self.conn();
        let total: i64 = conn
            .prepare_cached(&format!(
                "SELECT count(*) FROM (SELECT 1 FROM chunks c WHERE 1 = 1{where_sql} LIMIT {})",
                rank::SCOPE_SMALL + 1
            ))
            .and_then(|mut st| {
                st.query_row(rusqlite::params_from_iter(filter_args.iter()), |r| r.get(0))
            })
            .map_err(|e| self.e(e))?;
        if total > rank::SCOPE_SMALL {
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
        Ok(Some((total, rows)))
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
