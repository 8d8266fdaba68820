//! chatmill's index: where chunks are stored to be found again, by recency
//! and by meaning.
//!
//! - [`Store`] is the backend seam (the embedded SQLite store, a ChromaDB
//!   server); it stores records with their vectors and answers the primitive
//!   queries (k nearest vectors, BM25 keyword, newest first), all scoped by a
//!   [`Filter`].
//! - [`Embedder`] turns text into unit vectors (the real local model, an
//!   OpenAI-compatible endpoint, or the lexical fallback live elsewhere and
//!   implement this trait).
//! - [`Index`] joins one store and one embedder: it embeds a chunk's
//!   *header + user prompt* (never the assistant reply) and stores the full
//!   chunk as the document. The pipeline talks to it through [`Indexer`].
//!
//! Nothing here prints.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

#[cfg(feature = "minilm")]
mod bert;
mod bm25;
pub mod cache;
pub mod chroma;
pub mod document;
pub mod embedded;
pub mod fill;
pub mod lazy;
pub mod lexical;
#[cfg(feature = "minilm")]
pub mod minilm;
#[cfg(feature = "minilm")]
mod quantized;
pub mod query;
pub mod rank;
pub mod remote;
#[cfg(feature = "minilm")]
pub mod static_model;
pub mod time_hint;

pub use cache::Cached;
pub use chroma::{ChromaConfig, ChromaStore};
pub use embedded::SqliteStore;
pub use lazy::Lazy;
pub use lexical::Lexical;
#[cfg(feature = "minilm")]
pub use minilm::MiniLm;
pub use query::{
    Index, KEYWORD_WEIGHT, Mode, NEIGHBOUR_SHARE, SearchRequest, SearchResults, WeightedQuery,
};
pub use remote::{RemoteConfig, RemoteEmbedder};
#[cfg(feature = "minilm")]
pub use static_model::StaticModel;

/// What the index keeps about a chunk: the frontmatter fields searches are
/// scoped and shown by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkMeta {
    /// The chunk's first pair, seconds since the Unix epoch (UTC).
    pub timestamp: i64,
    /// `source_platform`: `chatgpt`, `claude`, `gemini`, `claude-code`,
    /// `local` or `api`.
    pub platform: String,
    pub agent_id: String,
    pub conversation_id: String,
    /// The project a coding session belongs to (`project` in the
    /// frontmatter: Claude Code's working folder); `None` elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub topics: Vec<String>,
    pub model: String,
    pub turn_range: String,
    /// `source_file` from the frontmatter.
    pub source_file: String,
    /// The chunk file, relative to the root.
    pub path: String,
}

/// One chunk as the index sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRecord {
    pub chunk_id: String,
    /// The text that is embedded: contextual header + user prompt(s).
    pub embed_text: String,
    /// The full chunk file text (what a search returns).
    pub document: String,
    pub meta: ChunkMeta,
}

/// Scopes a query. Every field narrows; `None` means any.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    pub agent_id: Option<String>,
    pub platform: Option<String>,
    /// Inclusive, epoch seconds.
    pub since: Option<i64>,
    /// Inclusive, epoch seconds.
    pub until: Option<i64>,
    pub conversation_id: Option<String>,
    pub project: Option<String>,
}

/// A filter's time bound from RFC 3339 or a date (`YYYY-MM-DD`: its
/// first second, or with `end_of_day` its last), in epoch seconds; `None`
/// when it is neither.
pub fn time_bound(s: &str, end_of_day: bool) -> Option<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp());
    }
    let d = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    let t = if end_of_day {
        d.and_hms_opt(23, 59, 59)
    } else {
        d.and_hms_opt(0, 0, 0)
    };
    t.map(|t| t.and_utc().timestamp())
}

/// A stored chunk a query found, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub chunk_id: String,
    /// Higher is better. Its scale depends on the query (cosine similarity
    /// for vectors, BM25 for keywords, fused scores for hybrid).
    pub score: f32,
    pub meta: ChunkMeta,
    pub document: String,
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index store `{store}`: {message}")]
    Store {
        store: String,
        message: String,
        /// What the user can do about it.
        hint: Option<String>,
        /// Whether trying again later may help (a server down, a timeout).
        retryable: bool,
    },
    #[error("embedder `{model}`: {message}")]
    Embed {
        model: String,
        message: String,
        hint: Option<String>,
    },
    #[error("`{store}` does not support {what}")]
    Unsupported { store: String, what: &'static str },
    /// The store holds vectors of another model (or size) than the
    /// embedder's: mixing them would make similarities meaningless.
    #[error(
        "the index holds {found}-dimensional vectors from `{found_model}`, but the embedder is `{model}` ({dim}-dimensional)"
    )]
    DimensionMismatch {
        found: usize,
        found_model: String,
        model: String,
        dim: usize,
    },
}

impl IndexError {
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Store { hint, .. } | Self::Embed { hint, .. } => hint.clone(),
            Self::Unsupported { .. } => {
                Some("use the embedded store for this kind of query".into())
            }
            Self::DimensionMismatch { .. } => {
                Some("run `chatmill reindex` to re-embed every chunk with the current model".into())
            }
        }
    }
}

/// Turns texts into L2-normalized vectors.
pub trait Embedder: Send + Sync {
    /// Identifies the model and its settings (cache key; stored with the
    /// vectors so a model change is detected).
    fn id(&self) -> &str;
    fn dim(&self) -> usize;
    /// One vector per text, same order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError>;
    /// True for the lexical stand-in used when no real model is available
    /// (searches say so; `chatmill reindex` replaces its vectors later).
    fn is_fallback(&self) -> bool {
        false
    }
    /// True when a text embeds in next to no time (the lexical stand-in):
    /// callers may then embed beside other work, on their own threads,
    /// instead of on the thread that writes the index
    /// ([`Indexer::embed_here`]).
    fn is_instant(&self) -> bool {
        false
    }
    /// Does now the one-time work a model otherwise does in the middle of
    /// its first large batch (the local model's int8 quantization, ~0.1 s):
    /// a server calls it before it answers anyone.
    fn warm_up(&self) -> Result<(), IndexError> {
        Ok(())
    }
}

/// What made the vectors a store holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredModel {
    /// The embedder's id (`None`: not recorded).
    pub model: Option<String>,
    /// The vectors' dimension (`None`: not known).
    pub dim: Option<usize>,
}

/// A backend that stores chunks with their vectors.
pub trait Store: Send + Sync {
    /// `sqlite`, `chroma`, … (used in messages).
    fn name(&self) -> &str;
    /// Inserts or replaces (same chunk id) records; `vectors[i]` belongs
    /// to `records[i]`; `model` is the embedder's id. Whether the vectors
    /// may join the stored ones is [`Index`]'s to decide (from
    /// [`Store::stored`]), not the store's.
    fn upsert(
        &self,
        records: &[ChunkRecord],
        vectors: &[Vec<f32>],
        model: &str,
    ) -> Result<(), IndexError>;
    fn delete(&self, chunk_ids: &[String]) -> Result<(), IndexError>;
    /// Work on the caller's thread that makes writing `documents` later
    /// cheaper for the thread that writes (the embedded store tokenizes
    /// them for its keyword index). Nothing depends on it being done.
    fn prepare_documents(&self, _documents: &[&str]) {}
    /// Every stored chunk id.
    fn ids(&self) -> Result<BTreeSet<String>, IndexError>;
    /// Which of `chunk_ids` the store holds (a few ids: it need not list
    /// every id, as [`Store::ids`] does).
    fn holding(&self, chunk_ids: &[String]) -> Result<BTreeSet<String>, IndexError> {
        Ok(among(chunk_ids, &self.ids()?))
    }
    fn count(&self) -> Result<u64, IndexError>;
    /// The model and width of the stored vectors (`None` when the store
    /// holds none). Asked before every write: cheap.
    fn stored(&self) -> Result<Option<StoredModel>, IndexError>;
    /// The embedder id the stored vectors came from (`None` when empty or
    /// not recorded).
    fn model(&self) -> Result<Option<String>, IndexError> {
        Ok(self.stored()?.and_then(|s| s.model))
    }
    /// The `k` nearest vectors (cosine similarity as the score).
    fn knn(&self, vector: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>, IndexError>;
    /// BM25 over the documents.
    fn keyword(&self, query: &str, k: usize, filter: &Filter) -> Result<Vec<Hit>, IndexError>;
    /// Newest first.
    fn recent(&self, k: usize, filter: &Filter) -> Result<Vec<Hit>, IndexError>;
    /// True when the store holds chunks written before it kept every
    /// [`ChunkMeta`] field (an upgraded store: `project` unknown), until
    /// [`Store::metadata_refreshed`].
    fn metadata_outdated(&self) -> Result<bool, IndexError> {
        Ok(false)
    }
    /// Drops what deleted or replaced documents left in the store's files
    /// (their words in the keyword index's term lists), so that the old
    /// text of a chunk rewritten without its secrets is gone from disk.
    /// Costs a rewrite of the keyword index: called after a reprocess.
    fn purge(&self) -> Result<(), IndexError> {
        Ok(())
    }
    /// Rewrites the metadata of the stored chunks among `records` (their
    /// vectors and documents stay); chunks it does not hold are ignored.
    fn refresh_metadata(&self, _records: &[ChunkRecord]) -> Result<(), IndexError> {
        Err(IndexError::Unsupported {
            store: self.name().to_string(),
            what: "refreshing metadata",
        })
    }
    /// Every stored chunk's metadata has been refreshed.
    fn metadata_refreshed(&self) -> Result<(), IndexError> {
        Ok(())
    }
    /// Whether the store keeps chunks whose vectors come later
    /// ([`Store::upsert_pending`]).
    fn defers_vectors(&self) -> bool {
        false
    }
    /// Inserts or replaces `records` without vectors: found by keywords
    /// and by recency now, by meaning once [`Store::fill`] gives them
    /// their vectors.
    fn upsert_pending(&self, _records: &[ChunkRecord]) -> Result<(), IndexError> {
        Err(IndexError::Unsupported {
            store: self.name().to_string(),
            what: "chunks whose vectors come later",
        })
    }
    /// Up to `limit` chunks waiting for their vectors, newest first.
    fn pending(&self, _limit: usize) -> Result<Vec<Pending>, IndexError> {
        Ok(Vec::new())
    }
    /// Gives waiting chunks their vectors (made by `model`). A chunk
    /// replaced since it was read from [`Store::pending`] (its text
    /// differs) or deleted is left as it is.
    fn fill(&self, _filled: &[(Pending, Vec<f32>)], _model: &str) -> Result<usize, IndexError> {
        Err(IndexError::Unsupported {
            store: self.name().to_string(),
            what: "chunks whose vectors come later",
        })
    }
    /// How many chunks wait for their vectors.
    fn pending_count(&self) -> Result<u64, IndexError> {
        Ok(0)
    }
}

/// A chunk that waits for its vector, and the text to embed for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub chunk_id: String,
    pub text: String,
}

/// The pairs a chunk's `turn_range` covers (`"3"` → 3..=3, `"3-4"`).
pub(crate) fn turn_pairs(range: &str) -> Option<(u32, u32)> {
    let (a, b) = range.split_once('-').unwrap_or((range, range));
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// The ids of `chunk_ids` that `all` holds: `holding` for a store or index
/// that can only list every id.
fn among(chunk_ids: &[String], all: &BTreeSet<String>) -> BTreeSet<String> {
    chunk_ids
        .iter()
        .filter(|id| all.contains(*id))
        .cloned()
        .collect()
}

/// What the pipeline needs from the index.
pub trait Indexer: Send + Sync {
    /// Embeds and stores (replacing records with the same chunk id).
    fn index(&self, records: &[ChunkRecord]) -> Result<(), IndexError>;
    /// The vectors of `texts` (embedding texts), made on the caller's
    /// thread when this index's embedder is instant ([`Embedder::is_instant`]);
    /// `None` leaves embedding to [`Indexer::index`].
    fn embed_here(&self, _texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        None
    }
    /// [`Indexer::index`] with `vectors[i]`, from [`Indexer::embed_here`],
    /// for `records[i]`.
    fn index_with(&self, records: &[ChunkRecord], _vectors: &[Vec<f32>]) -> Result<(), IndexError> {
        self.index(records)
    }
    /// [`Store::prepare_documents`] for these chunks' documents, on the
    /// caller's thread (a worker's, ahead of the thread that indexes them).
    fn prepare_here(&self, _records: &[&ChunkRecord]) {}
    fn remove(&self, chunk_ids: &[String]) -> Result<(), IndexError>;
    fn ids(&self) -> Result<BTreeSet<String>, IndexError>;
    /// [`Store::holding`].
    fn holding(&self, chunk_ids: &[String]) -> Result<BTreeSet<String>, IndexError> {
        Ok(among(chunk_ids, &self.ids()?))
    }
    fn count(&self) -> Result<u64, IndexError>;
    /// [`Store::metadata_outdated`].
    fn metadata_outdated(&self) -> Result<bool, IndexError> {
        Ok(false)
    }
    /// [`Store::purge`].
    fn purge(&self) -> Result<(), IndexError> {
        Ok(())
    }
    /// [`Store::refresh_metadata`].
    fn refresh_metadata(&self, _records: &[ChunkRecord]) -> Result<(), IndexError> {
        Ok(())
    }
    /// [`Store::metadata_refreshed`].
    fn metadata_refreshed(&self) -> Result<(), IndexError> {
        Ok(())
    }
    /// [`Store::pending_count`].
    fn pending_count(&self) -> Result<u64, IndexError> {
        Ok(0)
    }
}

impl<T: Embedder + ?Sized> Embedder for std::sync::Arc<T> {
    fn id(&self) -> &str {
        (**self).id()
    }
    fn warm_up(&self) -> Result<(), IndexError> {
        (**self).warm_up()
    }
    fn dim(&self) -> usize {
        (**self).dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        (**self).embed(texts)
    }
    fn is_fallback(&self) -> bool {
        (**self).is_fallback()
    }
    fn is_instant(&self) -> bool {
        (**self).is_instant()
    }
}

impl<T: Embedder + ?Sized> Embedder for Box<T> {
    fn id(&self) -> &str {
        (**self).id()
    }
    fn warm_up(&self) -> Result<(), IndexError> {
        (**self).warm_up()
    }
    fn dim(&self) -> usize {
        (**self).dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        (**self).embed(texts)
    }
    fn is_fallback(&self) -> bool {
        (**self).is_fallback()
    }
    fn is_instant(&self) -> bool {
        (**self).is_instant()
    }
}
