//! [`Index`]: one store and one embedder, and search over them — semantic,
//! keyword (BM25), recent, and hybrid (dense + BM25 fused by reciprocal rank,
//! with an optional recency boost), over one or several weighted queries,
//! deduplicated by chunk id keeping the best score; a time phrase in a query
//! ("last spring") favours the chunks dated in its window.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

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

/// BM25 reads the whole chunk, the reply included, while the dense vector
/// holds only header + prompt (the spec's "Embedding Dilution"), so the
/// keyword list carries more of what a question asks for. Chosen on LoCoMo
/// (see `benches/locomo.rs`).
pub const KEYWORD_WEIGHT: f32 = 2.0;

fn keyword_weight() -> f32 {
    KEYWORD_WEIGHT
}

/// A question's answer is often in the exchange next to the one whose
/// words match it (a question in one pair, its answer in the next), so
/// fused scores spill over to neighbours by this share. Chosen on LoCoMo
/// (see `benches/locomo.rs`): R@5 0.685 → 0.692, R@10 0.754 → 0.771.
pub const NEIGHBOUR_SHARE: f32 = 0.3;

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
}

/// A time phrase adds the same search again within its window, as one more
/// ranked list per query and ranking, fused at this share of the weight:
/// a chunk both relevant and in the window rises, nothing outside it is
/// dropped (the phrase may mean something else, or the talk about an event
/// may come later). On LoCoMo (`benches/locomo.rs`, questions asked at the
/// end of their conversation) R@5 went 0.705 → 0.711 / 0.712 / 0.711 at
/// shares 0.5 / 1 / 2, and is 0.710 with [`TIME_RELEVANCE`].
pub const TIME_WEIGHT: f32 = 1.0;

/// A window is searched a little past its end: what happened in June is
/// often talked about in July. Its own length, at most this many days.
/// (LoCoMo cannot tell: 0.712 with it, 0.713 without.)
const TIME_SLACK_DAYS: i64 = 31;

/// A window's ranking keeps only the hits scoring at least this share of
/// the best hit of the unwindowed ranking: in a window holding a few chunks
/// a vector search still ranks them all, and "the nginx 502s last year"
/// must not bring up last year's only chat, about sourdough.
const TIME_RELEVANCE: f32 = 0.5;

/// `dated` (a ranking within a time window) without the hits far less
/// relevant than the best of `all` (the same ranking without the window).
fn relevant(mut dated: Vec<Hit>, all: &[Hit]) -> Vec<Hit> {
    let best = all.iter().map(|h| h.score).fold(f32::MIN, f32::max);
    if best > 0.0 {
        dated.retain(|h| h.score >= TIME_RELEVANCE * best);
    }
    dated
}

/// `filter` narrowed to `window` (extended by its slack); `None` when
/// nothing of the filter's own time range is left.
fn within(filter: &Filter, window: &TimeWindow) -> Option<Filter> {
    let len = window.until - window.since + 1;
    let until = window.until + len.min(TIME_SLACK_DAYS * 86_400);
    let since = filter.since.map_or(window.since, |s| s.max(window.since));
    let until = filter.until.map_or(until, |u| u.min(until));
    (since <= until).then(|| Filter {
        since: Some(since),
        until: Some(until),
        ..filter.clone()
    })
}

/// The reciprocal-rank-fusion constant. The textbook 60 fuses many long
/// lists; with two lists of 40 where one is clearly better, a small constant
/// lets each list's top ranks decide (LoCoMo R@5: 0.49 at 60 with equal
/// weights, 0.61 at 3 with BM25 weighted 2; see `benches/locomo.rs`).
const RRF_K: f32 = 3.0;

pub struct Index {
    pub store: Arc<dyn Store>,
    pub embedder: Arc<dyn Embedder>,
    /// The root the hits' chunk files are under, for the text of hits a
    /// store keeps none of ([`Index::with_documents`]).
    documents: Option<std::path::PathBuf>,
}

impl Index {
    pub fn new(store: Arc<dyn Store>, embedder: Arc<dyn Embedder>) -> Self {
        Self {
            store,
            embedder,
            documents: None,
        }
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
        let mut vectors = Vec::with_capacity(records.len());
        for batch in records.chunks(64) {
            let texts: Vec<&str> = batch.iter().map(|r| r.embed_text.as_str()).collect();
            vectors.extend(self.embedder.embed(&texts)?);
        }
        self.store.upsert(records, &vectors, self.embedder.id())
    }

    pub fn search(&self, req: &SearchRequest) -> Result<SearchResults, IndexError> {
        let mut out = self.ranked(req)?;
        self.fill_documents(&mut out);
        Ok(out)
    }

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
        let mut keyword = matches!(req.mode, Mode::Hybrid | Mode::Keyword);
        if dense && self.embedder.is_fallback() {
            out.warnings.push(format!(
                "semantic ranking uses `{}`, a lexical stand-in that matches shared words, not meaning (no embedding model is configured)",
                self.embedder.id()
            ));
        }
        if dense
            && let Some(m) = self.store.model()?
            && m != self.embedder.id()
        {
            out.warnings.push(format!(
                "the index was embedded with `{m}` but queries use `{}`; run `chatmill reindex`",
                self.embedder.id()
            ));
        }
        // Each ranked list, with the weight of the query it came from.
        let depth = (k * 4).max(40);
        if req.time_hints {
            let now = req
                .now
                .and_then(|t| chrono::DateTime::from_timestamp(t, 0))
                .unwrap_or_else(chrono::Utc::now);
            out.time_window = queries.iter().find_map(|q| time_hint::find(&q.text, now));
        }
        let in_window = out
            .time_window
            .as_ref()
            .and_then(|w| within(&req.filter, w));
        let kw_weight = if req.mode == Mode::Hybrid {
            req.keyword_weight.max(0.0)
        } else {
            1.0
        };
        // Dense and keyword lists are computed at the same time (the vector
        // scan needs no database lock).
        let dense_lists = || -> Result<Vec<(f32, Vec<Hit>)>, IndexError> {
            let mut lists = Vec::new();
            if dense {
                let texts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
                let vectors = self.embedder.embed(&texts)?;
                for (q, v) in queries.iter().zip(&vectors) {
                    let hits = self.store.knn(v, depth, &req.filter)?;
                    if let Some(f) = &in_window {
                        let dated = relevant(self.store.knn(v, depth, f)?, &hits);
                        lists.push((q.weight * TIME_WEIGHT, dated));
                    }
                    lists.push((q.weight, hits));
                }
            }
            Ok(lists)
        };
        let keyword_lists = |warnings: &mut Vec<String>,
                             keyword: &mut bool|
         -> Result<Vec<(f32, Vec<Hit>)>, IndexError> {
            let mut lists = Vec::new();
            if *keyword {
                for q in &queries {
                    match self.store.keyword(&q.text, depth, &req.filter) {
                        Ok(hits) => {
                            if let Some(f) = &in_window {
                                let dated = relevant(self.store.keyword(&q.text, depth, f)?, &hits);
                                lists.push((q.weight * kw_weight * TIME_WEIGHT, dated));
                            }
                            lists.push((q.weight * kw_weight, hits));
                        }
                        Err(IndexError::Unsupported { store, .. }) => {
                            warnings.push(format!(
                                "`{store}` has no keyword index; dense ranking only"
                            ));
                            *keyword = false;
                            lists.clear();
                            break;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            Ok(lists)
        };
        let (d, k_lists) = std::thread::scope(|s| {
            let handle = s.spawn(dense_lists);
            let kw = keyword_lists(&mut out.warnings, &mut keyword);
            (handle.join().unwrap_or_else(|_| Ok(Vec::new())), kw)
        });
        let mut lists = d?;
        lists.extend(k_lists?);
        let fuse = lists.len() > 1 || (dense && keyword);
        let mut best: HashMap<String, Hit> = HashMap::new();
        for (weight, hits) in lists {
            for (rank, mut h) in hits.into_iter().enumerate() {
                let s = if fuse {
                    weight / (RRF_K + rank as f32 + 1.0)
                } else {
                    h.score * weight
                };
                match best.get_mut(&h.chunk_id) {
                    // Fused lists add up; a single list keeps the best.
                    Some(e) if fuse => e.score += s,
                    Some(e) => e.score = e.score.max(s),
                    None => {
                        h.score = s;
                        best.insert(h.chunk_id.clone(), h);
                    }
                }
            }
        }
        let mut hits: Vec<Hit> = best.into_values().collect();
        if fuse && req.neighbour_share > 0.0 {
            neighbours_share(&mut hits, req.neighbour_share);
        }
        if req.recency_boost > 0.0 && req.mode == Mode::Hybrid && !hits.is_empty() {
            let newest = hits.iter().map(|h| h.meta.timestamp).max().unwrap_or(0);
            let half = (req.recency_half_life_days.max(0.01) * 86_400.0) as f64;
            let top = hits.iter().map(|h| h.score).fold(0.0f32, f32::max);
            for h in &mut hits {
                let age = (newest - h.meta.timestamp).max(0) as f64;
                let decay = 0.5f64.powf(age / half) as f32;
                h.score += req.recency_boost * top * decay;
            }
        }
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.chunk_id.cmp(&b.chunk_id))
        });
        hits.truncate(k);
        out.hits = hits;
        Ok(out)
    }
}

/// Each hit gains `share` of the better score of the hits right before and
/// after it in the same conversation: a question's answer often sits in the
/// exchange next to the one whose words match it.
fn neighbours_share(hits: &mut [Hit], share: f32) {
    let ranges: Vec<Option<(u32, u32)>> = hits
        .iter()
        .map(|h| crate::turn_pairs(&h.meta.turn_range))
        .collect();
    let mut at: HashMap<(&str, u32), f32> = HashMap::new();
    for (h, range) in hits.iter().zip(&ranges) {
        if let Some((a, b)) = *range {
            for key in [
                (h.meta.conversation_id.as_str(), a),
                (h.meta.conversation_id.as_str(), b),
            ] {
                let e = at.entry(key).or_insert(0.0);
                *e = e.max(h.score);
            }
        }
    }
    let gains: Vec<f32> = hits
        .iter()
        .zip(&ranges)
        .map(|(h, range)| {
            let Some((a, b)) = *range else {
                return 0.0;
            };
            let conv = h.meta.conversation_id.as_str();
            let before = a.checked_sub(1).and_then(|p| at.get(&(conv, p))).copied();
            let after = at.get(&(conv, b + 1)).copied();
            share * before.unwrap_or(0.0).max(after.unwrap_or(0.0))
        })
        .collect();
    for (h, g) in hits.iter_mut().zip(gains) {
        h.score += g;
    }
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
        self.store.upsert(records, vectors, self.embedder.id())
    }

    fn remove(&self, chunk_ids: &[String]) -> Result<(), IndexError> {
        self.store.delete(chunk_ids)
    }

    fn ids(&self) -> Result<BTreeSet<String>, IndexError> {
        self.store.ids()
    }

    fn count(&self) -> Result<u64, IndexError> {
        self.store.count()
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

    fn hit(id: &str, conv: &str, range: &str, score: f32) -> Hit {
        Hit {
            chunk_id: id.into(),
            score,
            meta: ChunkMeta {
                timestamp: 0,
                platform: "local".into(),
                agent_id: "u".into(),
                conversation_id: conv.into(),
                title: None,
                topics: Vec::new(),
                model: "m".into(),
                turn_range: range.into(),
                source_file: "f".into(),
                path: format!("{id}.md"),
            },
            document: String::new(),
        }
    }

    #[test]
    fn hits_gain_a_share_of_their_better_neighbour_in_the_same_conversation() {
        let mut hits = vec![
            hit("a2", "a", "2", 1.0),
            hit("a3", "a", "3-4", 0.5),
            hit("a5", "a", "5", 0.2),
            hit("a9", "a", "9", 0.4),
            hit("b3", "b", "3", 0.8),
            hit("odd", "a", "x", 0.3),
        ];
        neighbours_share(&mut hits, 0.5);
        let score = |id: &str| hits.iter().find(|h| h.chunk_id == id).unwrap().score;
        // a3 sits between a2 (1.0) and a5 (0.2): half of the better.
        assert_eq!(score("a3"), 0.5 + 0.5);
        // a2's neighbour a3 covers pairs 3-4; a5 follows pair 4.
        assert_eq!(score("a2"), 1.0 + 0.25);
        assert_eq!(score("a5"), 0.2 + 0.25);
        // No neighbour listed; another conversation's pair 3 is no neighbour.
        assert_eq!(score("a9"), 0.4);
        assert_eq!(score("b3"), 0.8);
        assert_eq!(score("odd"), 0.3);
    }
}
