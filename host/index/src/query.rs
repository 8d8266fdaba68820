//! [`Index`]: one store and one embedder, and search over them — semantic,
//! keyword (BM25), recent, and hybrid (dense + BM25 fused by reciprocal rank,
//! with an optional recency boost), over one or several weighted queries,
//! deduplicated by chunk id keeping the best score; a time phrase in a query
//! ("last spring") favours the chunks dated in its window.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::rank::{self, Weighted};
pub use crate::rank::{KEYWORD_WEIGHT, NEIGHBOUR_SHARE, TIME_WEIGHT};
use crate::time_hint::{self, TimeWindow};
use crate::{ChunkRecord, Embedder, Filter, Hit, IndexError, Indexer, Store};

/// How a search ranks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Dense + BM25, fused.
    #[default]
    Hybrid,
    Semantic,
    Keyword,
    /// Newest first; queries are ignored.
    Recent,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "hybrid" => Ok(Self::Hybrid),
            "semantic" => Ok(Self::Semantic),
            "keyword" => Ok(Self::Keyword),
            "recent" => Ok(Self::Recent),
            other => Err(format!(
                "unknown mode `{other}` (hybrid, semantic, keyword, recent)"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightedQuery {
    pub text: String,
    #[serde(default = "one")]
    pub weight: f32,
}

fn one() -> f32 {
    1.0
}

fn ten() -> usize {
    10
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    #[serde(default)]
    pub queries: Vec<WeightedQuery>,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub filter: Filter,
    #[serde(default = "ten")]
    pub k: usize,
    /// Hybrid only: newer chunks get up to this much more fused score (a
    /// chunk `recency_half_life_days` old gets half of it). 0 = off.
    #[serde(default)]
    pub recency_boost: f32,
    #[serde(default = "half_life")]
    pub recency_half_life_days: f32,
    /// Hybrid only: the weight of the BM25 list against the dense one (1.0)
    /// in the fusion.
    #[serde(default = "keyword_weight")]
    pub keyword_weight: f32,
    /// Hybrid (and multi-query) only: a hit gains this share of the better
    /// fused score of the exchanges right before and after it in the same
    /// conversation. 0 = off.
    #[serde(default = "neighbour_share")]
    pub neighbour_share: f32,
    /// Read a time phrase in the query ("last spring", "in June", "on 8
    /// May, 2023") and favour the chunks dated in the window it names
    /// (see [`crate::time_hint`]). Not for `recent`.
    #[serde(default = "yes")]
    pub time_hints: bool,
    /// The moment relative phrases count back from (Unix seconds); the
    /// clock when absent.
    #[serde(default)]
    pub now: Option<i64>,
}

fn yes() -> bool {
    true
}

fn keyword_weight() -> f32 {
    KEYWORD_WEIGHT
}

fn neighbour_share() -> f32 {
    NEIGHBOUR_SHARE
}

fn half_life() -> f32 {
    30.0
}

impl SearchRequest {
    pub fn new(query: &str) -> Self {
        Self {
            queries: vec![WeightedQuery {
                text: query.to_string(),
                weight: 1.0,
            }],
            mode: Mode::Hybrid,
            filter: Filter::default(),
            k: 10,
            recency_boost: 0.0,
            recency_half_life_days: 30.0,
            keyword_weight: KEYWORD_WEIGHT,
            neighbour_share: NEIGHBOUR_SHARE,
            time_hints: true,
            now: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchResults {
    pub hits: Vec<Hit>,
    /// Things the caller should know (a lexical stand-in embedder, a store
    /// without BM25).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The time phrase the search read from the query, and its window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_window: Option<TimeWindow>,
    /// Chunks still waiting for their vectors (a meaning search ranks them
    /// by keywords only until `chatmill embed` or the next import fills
    /// them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pending: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub struct Index {
    pub store: Arc<dyn Store>,
    pub embedder: Arc<dyn Embedder>,
    /// The root the hits' chunk files are under, for the text of hits a
    /// store keeps none of ([`Index::with_documents`]).
    documents: Option<std::path::PathBuf>,
    /// Whether writes leave the vectors to the embedding stage
    /// ([`Index::deferring_vectors`]).
    defer: bool,
}

impl Index {
    pub fn new(store: Arc<dyn Store>, embedder: Arc<dyn Embedder>) -> Self {
        Self {
            store,
            embedder,
            documents: None,
            defer: false,
        }
    }

    /// An index whose writes store chunks without vectors — found by
    /// keywords and recency at once — when the embedder takes real time
    /// and the store can hold chunks waiting for vectors;
    /// [`Index::fill_pending`] makes them. Other writes embed as they go.
    pub fn deferring_vectors(mut self) -> Self {
        self.defer = true;
        self
    }

    /// Whether this index's writes leave vectors for later.
    pub fn defers(&self) -> bool {
        self.defer && !self.embedder.is_instant() && self.store.defers_vectors()
    }

    /// Gives the hits of a store that keeps no text (the embedded one) their
    /// document, composed from their chunk files under `root` (the paths in
    /// their metadata are relative to it) — for the `k` hits a search
    /// returns, not for every candidate it ranked.
    pub fn with_documents(mut self, root: impl Into<std::path::PathBuf>) -> Self {
        self.documents = Some(root.into());
        self
    }

    /// Fills in the text of `out`'s hits that have none; a chunk file that
    /// cannot be read leaves its hit without text, and says so.
    fn fill_documents(&self, out: &mut SearchResults) {
        let Some(root) = &self.documents else {
            return;
        };
        let mut missing = Vec::new();
        for hit in out.hits.iter_mut().filter(|h| h.document.is_empty()) {
            match std::fs::read_to_string(root.join(&hit.meta.path)) {
                Ok(text) => {
                    hit.document = crate::document::compose(
                        hit.meta.title.as_deref(),
                        &hit.meta.topics,
                        &text,
                    );
                }
                Err(e) => missing.push(format!("`{}` ({e})", hit.meta.path)),
            }
        }
        if !missing.is_empty() {
            out.warnings.push(format!(
                "{} hit(s) without text: their chunk files cannot be read: {}; `chatmill verify --repair` brings the index in line with the chunk files",
                missing.len(),
                missing.join(", ")
            ));
        }
    }

    /// Embeds (in batches of 64) and stores (in one upsert: a server store
    /// splits it under its own limits; fewer round trips).
    fn add(&self, records: &[ChunkRecord]) -> Result<(), IndexError> {
        if self.defers() {
            return self.store.upsert_pending(records);
        }
        let mut vectors = Vec::with_capacity(records.len());
        for batch in records.chunks(64) {
            let texts: Vec<&str> = batch.iter().map(|r| r.embed_text.as_str()).collect();
            vectors.extend(self.embedder.embed(&texts)?);
        }
        self.upsert(records, &vectors)
    }

    /// Stores `records` with their `vectors`, unless the store holds
    /// vectors of another model or dimension: mixed, their similarities
    /// would mean nothing. An empty store takes any.
    fn upsert(&self, records: &[ChunkRecord], vectors: &[Vec<f32>]) -> Result<(), IndexError> {
        if records.is_empty() {
            return Ok(());
        }
        self.check_model(vectors.first().map_or(0, Vec::len))?;
        self.store.upsert(records, vectors, self.embedder.id())
    }

    /// Refuses vectors of width `dim` from this embedder when the store
    /// holds another model's or width's.
    pub(crate) fn check_model(&self, dim: usize) -> Result<(), IndexError> {
        let model = self.embedder.id();
        if let Some(held) = self.store.stored()?
            && (held.dim.is_some_and(|d| d != dim)
                || held.model.as_deref().is_some_and(|m| m != model))
        {
            return Err(IndexError::DimensionMismatch {
                found: held.dim.unwrap_or_default(),
                found_model: held.model.unwrap_or_default(),
                model: model.to_string(),
                dim,
            });
        }
        Ok(())
    }

    pub fn search(&self, req: &SearchRequest) -> Result<SearchResults, IndexError> {
        let mut out = self.ranked(req)?;
        self.fill_documents(&mut out);
        Ok(out)
    }

    /// The store's rankings for `req`, fused by [`rank`]'s policy.
    fn ranked(&self, req: &SearchRequest) -> Result<SearchResults, IndexError> {
        let mut out = SearchResults::default();
        let k = req.k.clamp(1, 1000);
        if req.mode == Mode::Recent {
            out.hits = self.store.recent(k, &req.filter)?;
            return Ok(out);
        }
        let queries: Vec<&WeightedQuery> = req
            .queries
            .iter()
            .filter(|q| !q.text.trim().is_empty() && q.weight > 0.0)
            .collect();
        if queries.is_empty() {
            return Ok(out);
        }
        let dense = matches!(req.mode, Mode::Hybrid | Mode::Semantic);
        let keyword = matches!(req.mode, Mode::Hybrid | Mode::Keyword);
        if dense {
            self.dense_warnings(&mut out.warnings)?;
            out.pending = self.store.pending_count()?;
            if out.pending > 0 {
                out.warnings.push(format!(
                    "{} chunk(s) wait for their vectors and are ranked by keywords only; `chatmill embed` makes them",
                    out.pending
                ));
            }
        }
        if req.time_hints {
            let now = req
                .now
                .and_then(|t| chrono::DateTime::from_timestamp(t, 0))
                .unwrap_or_else(chrono::Utc::now);
            out.time_window = queries.iter().find_map(|q| time_hint::find(&q.text, now));
        }
        let lists = Lists {
            req,
            queries: &queries,
            depth: (k * 4).max(40),
            window: out
                .time_window
                .as_ref()
                .and_then(|w| rank::within(&req.filter, w)),
        };
        // Dense and keyword lists are computed at the same time (the vector
        // scan needs no database lock).
        let (d, kw) = std::thread::scope(|s| {
            let handle = s.spawn(|| {
                if dense {
                    self.dense_lists(&lists)
                } else {
                    Ok(Vec::new())
                }
            });
            let kw = if keyword {
                self.keyword_lists(&lists, &mut out.warnings)
            } else {
                Ok(None)
            };
            (handle.join().unwrap_or_else(|_| Ok(Vec::new())), kw)
        });
        let mut all = d?;
        let kw = kw?;
        let keyword = kw.is_some();
        all.extend(kw.unwrap_or_default());
        let fuse = all.len() > 1 || (dense && keyword);
        let mut hits = rank::fuse(all, fuse);
        if fuse && req.neighbour_share > 0.0 {
            rank::neighbours_share(&mut hits, req.neighbour_share);
        }
        if req.recency_boost > 0.0 && req.mode == Mode::Hybrid && !hits.is_empty() {
            rank::recency_boost(&mut hits, req.recency_boost, req.recency_half_life_days);
        }
        out.hits = rank::best(hits, k);
        Ok(out)
    }

    /// What a dense ranking's caller should know: a stand-in embedder, an
    /// index embedded with another model.
    fn dense_warnings(&self, warnings: &mut Vec<String>) -> Result<(), IndexError> {
        if self.embedder.is_fallback() {
            warnings.push(format!(
                "semantic ranking uses `{}`, a lexical stand-in that matches shared words, not meaning (no embedding model is configured)",
                self.embedder.id()
            ));
        }
        if let Some(m) = self.store.model()?
            && m != self.embedder.id()
        {
            warnings.push(format!(
                "the index was embedded with `{m}` but queries use `{}`; run `chatmill reindex`",
                self.embedder.id()
            ));
        }
        Ok(())
    }

    /// The dense rankings, one (or two, with a time window) per query.
    fn dense_lists(&self, l: &Lists<'_>) -> Result<Vec<Weighted>, IndexError> {
        let mut lists = Vec::new();
        let texts: Vec<&str> = l.queries.iter().map(|q| q.text.as_str()).collect();
        let vectors = self.embedder.embed(&texts)?;
        for (q, v) in l.queries.iter().zip(&vectors) {
            let hits = self.store.knn(v, l.depth, &l.req.filter)?;
            let dated = match &l.window {
                Some(f) => Some(self.store.knn(v, l.depth, f)?),
                None => None,
            };
            lists.extend(rank::with_window(q.weight, hits, dated));
        }
        Ok(lists)
    }

    /// The keyword rankings, one (or two, with a time window) per query;
    /// `None`, with a warning, for a store without a keyword index.
    fn keyword_lists(
        &self,
        l: &Lists<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Vec<Weighted>>, IndexError> {
        let weight = if l.req.mode == Mode::Hybrid {
            l.req.keyword_weight.max(0.0)
        } else {
            1.0
        };
        let mut lists = Vec::new();
        for q in l.queries {
            match self.store.keyword(&q.text, l.depth, &l.req.filter) {
                Ok(hits) => {
                    let dated = match &l.window {
                        Some(f) => Some(self.store.keyword(&q.text, l.depth, f)?),
                        None => None,
                    };
                    lists.extend(rank::with_window(q.weight * weight, hits, dated));
                }
                Err(IndexError::Unsupported { store, .. }) => {
                    warnings.push(format!(
                        "`{store}` has no keyword index; dense ranking only"
                    ));
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Some(lists))
    }
}

/// What every ranking of one search shares.
struct Lists<'a> {
    req: &'a SearchRequest,
    queries: &'a [&'a WeightedQuery],
    /// How many hits each ranking returns.
    depth: usize,
    /// The filter narrowed to the time phrase's window, if any.
    window: Option<Filter>,
}

impl Indexer for Index {
    fn index(&self, records: &[ChunkRecord]) -> Result<(), IndexError> {
        self.add(records)
    }

    fn embed_here(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        // An instant embedder's failure is left for `index` to report.
        self.embedder
            .is_instant()
            .then(|| self.embedder.embed(texts).ok())
            .flatten()
    }

    fn index_with(&self, records: &[ChunkRecord], vectors: &[Vec<f32>]) -> Result<(), IndexError> {
        let dim = self.embedder.dim();
        if vectors.len() != records.len() || vectors.iter().any(|v| v.len() != dim) {
            return self.add(records);
        }
        self.upsert(records, vectors)
    }

    fn prepare_here(&self, records: &[&ChunkRecord]) {
        let documents: Vec<&str> = records.iter().map(|r| r.document.as_str()).collect();
        self.store.prepare_documents(&documents);
    }

    fn remove(&self, chunk_ids: &[String]) -> Result<(), IndexError> {
        self.store.delete(chunk_ids)
    }

    fn ids(&self) -> Result<BTreeSet<String>, IndexError> {
        self.store.ids()
    }

    fn holding(&self, chunk_ids: &[String]) -> Result<BTreeSet<String>, IndexError> {
        self.store.holding(chunk_ids)
    }

    fn count(&self) -> Result<u64, IndexError> {
        self.store.count()
    }

    fn metadata_outdated(&self) -> Result<bool, IndexError> {
        self.store.metadata_outdated()
    }

    fn purge(&self) -> Result<(), IndexError> {
        self.store.purge()
    }

    fn refresh_metadata(&self, records: &[ChunkRecord]) -> Result<(), IndexError> {
        self.store.refresh_metadata(records)
    }

    fn metadata_refreshed(&self) -> Result<(), IndexError> {
        self.store.metadata_refreshed()
    }

    fn pending_count(&self) -> Result<u64, IndexError> {
        self.store.pending_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChunkMeta;

    /// The lexical stand-in, made to look like a model that takes its time.
    struct Slow(crate::Lexical);

    impl Embedder for Slow {
        fn id(&self) -> &str {
            self.0.id()
        }
        fn dim(&self) -> usize {
            self.0.dim()
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
            self.0.embed(texts)
        }
    }

    fn record(id: &str, text: &str) -> ChunkRecord {
        ChunkRecord {
            chunk_id: id.into(),
            embed_text: text.into(),
            document: text.into(),
            meta: ChunkMeta {
                timestamp: 0,
                platform: "chatgpt".into(),
                agent_id: "external".into(),
                conversation_id: id.into(),
                project: None,
                title: None,
                topics: Vec::new(),
                model: "m".into(),
                turn_range: "1".into(),
                source_file: "f".into(),
                path: format!("{id}.md"),
            },
        }
    }

    #[test]
    fn an_instant_embedder_embeds_where_the_caller_runs_and_its_vectors_are_stored_as_made() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(crate::SqliteStore::open(&dir.path().join("i.sqlite3")).unwrap());
        let ix = Index::new(store.clone(), Arc::new(crate::Lexical::default()));
        let records = [
            record("a", "nginx returns 504 on long uploads"),
            record("b", "sourdough starter smells like acetone"),
        ];
        let texts: Vec<&str> = records.iter().map(|r| r.embed_text.as_str()).collect();
        let vectors = ix.embed_here(&texts).expect("the stand-in is instant");
        assert_eq!(vectors, crate::Lexical::default().embed(&texts).unwrap());
        ix.index_with(&records, &vectors).unwrap();
        for (r, v) in records.iter().zip(&vectors) {
            let best = &store.knn(v, 1, &Filter::default()).unwrap()[0];
            assert_eq!(best.chunk_id, r.chunk_id);
            assert!(best.score > 0.999, "{best:?}");
        }
        // Vectors of another width are not stored: the index embeds.
        ix.index_with(&records[..1], &[vec![1.0; 3]]).unwrap();
        let best = &store.knn(&vectors[0], 1, &Filter::default()).unwrap()[0];
        assert!(best.chunk_id == "a" && best.score > 0.999, "{best:?}");
        // A model that takes its time embeds on the index's own thread.
        let slow = Index::new(store, Arc::new(Slow(crate::Lexical::default())));
        assert!(slow.embed_here(&texts).is_none());
    }

    #[test]
    fn a_time_phrase_favours_the_chunks_dated_in_its_window() {
        use crate::embedded::tests::{index, rec};
        let dir = tempfile::tempdir().unwrap();
        let index = index(dir.path());
        let camping = "We went camping at the lake with the kids";
        index
            .index(&[
                rec("a-mar", 1_678_449_600, "local", "x", camping), // 2023-03-10
                rec("b-sep", 1_695_211_200, "local", "x", camping), // 2023-09-20
                rec("c-jun", 1_686_830_400, "local", "x", camping), // 2023-06-15
                rec(
                    "d-jun",
                    1_687_262_400,
                    "local",
                    "x",
                    "Invoice totals are stored in cents",
                ), // 2023-06-20
            ])
            .unwrap();
        let mut req = SearchRequest::new("the camping trip at the lake in June");
        req.now = Some(1_701_432_000); // 2023-12-01
        let ids = |r: &SearchResults| -> Vec<String> {
            r.hits.iter().map(|h| h.chunk_id.clone()).collect()
        };
        let off = index
            .search(&SearchRequest {
                time_hints: false,
                ..req.clone()
            })
            .unwrap();
        assert_eq!(off.time_window, None);
        assert_eq!(ids(&off)[..3], ["a-mar", "b-sep", "c-jun"], "a tie, by id");
        for mode in [Mode::Hybrid, Mode::Keyword, Mode::Semantic] {
            let on = index
                .search(&SearchRequest {
                    mode,
                    ..req.clone()
                })
                .unwrap();
            let w = on.time_window.clone().unwrap();
            assert_eq!(w.phrase, "June");
            let got = ids(&on);
            assert_eq!(got[0], "c-jun", "{mode:?}: {got:?}");
            // Favoured, not filtered: the other camping trips are still
            // found, and above an unrelated chunk that is merely in June
            // (a vector search ranks every chunk of the window; the ones
            // far less similar than the best get no vote for their date).
            let at = |id: &str| got.iter().position(|g| g == id);
            for other in ["a-mar", "b-sep"] {
                assert!(
                    at(other).is_some_and(|i| at("d-jun").is_none_or(|j| i < j)),
                    "{mode:?}: {got:?}"
                );
            }
        }
        // A filter that leaves nothing of the window: no window search.
        let mut early = req.clone();
        early.filter.until = Some(1_680_000_000); // 2023-03-28
        let r = index.search(&early).unwrap();
        assert_eq!(ids(&r), ["a-mar"]);
    }

    /// A store that holds `held` and takes nothing.
    struct Holding(Option<crate::StoredModel>);

    impl Store for Holding {
        fn name(&self) -> &str {
            "holding"
        }
        fn upsert(&self, _: &[ChunkRecord], _: &[Vec<f32>], _: &str) -> Result<(), IndexError> {
            Ok(())
        }
        fn delete(&self, _: &[String]) -> Result<(), IndexError> {
            Ok(())
        }
        fn ids(&self) -> Result<BTreeSet<String>, IndexError> {
            Ok(BTreeSet::new())
        }
        fn count(&self) -> Result<u64, IndexError> {
            Ok(0)
        }
        fn stored(&self) -> Result<Option<crate::StoredModel>, IndexError> {
            Ok(self.0.clone())
        }
        fn knn(&self, _: &[f32], _: usize, _: &Filter) -> Result<Vec<Hit>, IndexError> {
            Ok(Vec::new())
        }
        fn keyword(&self, _: &str, _: usize, _: &Filter) -> Result<Vec<Hit>, IndexError> {
            Ok(Vec::new())
        }
        fn recent(&self, _: usize, _: &Filter) -> Result<Vec<Hit>, IndexError> {
            Ok(Vec::new())
        }
    }

    #[test]
    fn a_store_holding_another_models_vectors_refuses_them_and_says_both_dimensions() {
        let lexical = crate::Lexical::new(64);
        let held = |model: Option<&str>, dim: Option<usize>| {
            Index::new(
                Arc::new(Holding(Some(crate::StoredModel {
                    model: model.map(str::to_string),
                    dim,
                }))),
                Arc::new(crate::Lexical::new(64)),
            )
        };
        let write = |ix: &Index| ix.index(&[record("a", "hello")]);
        let e = write(&held(Some("minilm"), Some(384))).unwrap_err();
        assert!(
            matches!(
                &e,
                IndexError::DimensionMismatch { found: 384, dim: 64, found_model, model }
                    if found_model == "minilm" && model == lexical.id()
            ),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("384-dimensional vectors from `minilm`"),
            "{e}"
        );
        assert!(e.to_string().contains("(64-dimensional)"), "{e}");
        // Another model of the same width, or the same model id at another
        // width: refused too.
        assert!(write(&held(Some("other"), Some(64))).is_err());
        assert!(write(&held(Some(lexical.id()), Some(32))).is_err());
        // The same model, an empty store, or one that does not know: taken.
        write(&held(Some(lexical.id()), Some(64))).unwrap();
        write(&held(None, None)).unwrap();
        let empty = Index::new(Arc::new(Holding(None)), Arc::new(crate::Lexical::new(64)));
        write(&empty).unwrap();
        // Nothing to write: nothing asked.
        held(Some("other"), Some(1)).index(&[]).unwrap();
    }
}
