//! The keyword index's table: FTS5 over the documents (contentless,
//! stemmed), query text made into FTS5 queries, an older store's index
//! made anew without its copy of the documents, and the index's merges.
//! Searching it is `keyword_search`'s.

use rusqlite::{Connection, OptionalExtension};

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
pub(super) fn query_words(text: &str) -> Vec<&str> {
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
pub(super) fn fts_any(words: &[&str]) -> Option<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

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
    // A deleted document's terms leave the index at once, not at a later
    // merge: a chunk rewritten without its secrets leaves no trace of them.
    let secure: Option<i64> = conn
        .query_row(
            "SELECT v FROM chunks_fts_config WHERE k = 'secure-delete'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if secure != Some(1) {
        conn.execute(
            "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('secure-delete', 1)",
            [],
        )?;
    }
    Ok(())
}
