//! The keyword index: FTS5 over the documents (contentless, stemmed),
//! query text made into FTS5 queries, the index's writes and merges, the
//! document lengths `chatmill_bm25()` ranks with, and the FTS5 side of a
//! scoped search (the words' counts from `chatmill_terms()`; how they are
//! weighed is [`crate::rank`]'s).

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use super::SqliteStore;
use super::schema::{COLUMN_COUNT, filter_sql, generation, qualified_columns};
use super::vectors::top_k;
use crate::bm25::{self, Lengths};
use crate::rank::{self, ScopeWeights};
use crate::{Filter, Hit, IndexError};

/// The keyword index: BM25 over the documents, words stemmed (Porter), so
/// "painting" finds "painted". Contentless: the store keeps no copy of the
/// documents (the chunk files hold them; a hit's text is composed from its
/// file, see `Index::with_documents`), and a row is taken out by its rowid
/// (`contentless_delete`). A copy would make the store twice the size and
/// every chunk's row a page of its own (~3 % of an import's CPU). (A macro:
/// `SCHEMA` is built with `concat!`.)
macro_rules! fts_table {
    () => {
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    document, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2'
);"
    };
}
pub(super) use fts_table;

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

/// A scope of at most this many chunks is handed to FTS5 as rowids, so that
/// it looks only at them rather than at every match in the index: FTS5
/// evaluates the query once per rowid, which is cheap for a conversation
/// (20 chunks in 100k: 56 → 17 ms for a hybrid search) and dear for an
/// agent's 300 (LoCoMo: 4 → 168 ms per question).
pub(super) const SCOPE_TINY: i64 = 64;
/// A store whose chunks hold their documents, read by a keyword index with
/// content (the format of earlier chatmill versions; the oldest of them do
/// not stem words), gets its keyword index made anew from those documents,
/// once, and the documents dropped.
pub(super) fn contentless(conn: &Connection) -> rusqlite::Result<()> {
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

/// FTS5 merges its segments once `AUTOMERGE` of them sit at one level (its
/// default is 4). Every write batch adds a segment, so at 4 an import spends
/// a fifth of its index thread re-merging; at 8 the 100k-pair import bench
/// runs ~7 % faster and the search bench's keyword and hybrid p99 at 100k
/// chunks are the same as at 4.
pub(super) const AUTOMERGE: i64 = 8;

/// Sets the keyword index's merge policy if it differs (a write only then,
/// so opening a tuned store for a search takes no write lock).
pub(super) fn tune_merges(conn: &Connection) -> rusqlite::Result<()> {
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

/// A scope's size and the `chatmill_terms()` of its matching chunks, by
/// rowid.
type ScopeTerms = (i64, Vec<(i64, bm25::Terms)>);

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
            *slot = Arc::new(Lengths::load(&tx, g).map_err(|e| self.e(e))?);
            tx.commit().map_err(|e| self.e(e))?;
        }
        Ok(true)
    }

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
