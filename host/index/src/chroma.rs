//! [`ChromaStore`]: a thin client for a ChromaDB server's `/api/v2` (the
//! spec's `conversations` collection).
//!
//! What it takes care of, learned from a real 1.5 server:
//! - record endpoints take the collection's UUID, not its name: resolved once
//!   (`get_or_create`, cosine space) and kept;
//! - embeddings travel as base64 little-endian f32 (a quarter of the JSON);
//!   upserts are split under the server's `max_batch_size` and well under its
//!   40 MiB body limit;
//! - metadata never holds nulls or empty lists (rejected / silently dropped):
//!   every key is always written (a missing title is `""`, topics travel as a
//!   JSON string plus a string list when non-empty), because upsert *merges*
//!   metadata and a key left out would keep its stale value;
//! - `where` takes exactly one top-level key, so filters are `$and`-ed;
//! - there is no server-side sort: recency is a widening timestamp window
//!   sorted on the client;
//! - there is no BM25: `keyword` is unsupported and hybrid search ranks by
//!   vectors alone (with a warning).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::{ChunkMeta, ChunkRecord, Filter, Hit, IndexError, Store, StoredModel};

/// `[index]` with `backend = "chroma"` in config.toml.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChromaConfig {
    /// e.g. `http://127.0.0.1:8000`
    pub url: String,
    #[serde(default = "tenant")]
    pub tenant: String,
    #[serde(default = "database")]
    pub database: String,
    #[serde(default = "collection")]
    pub collection: String,
    /// Sent as `x-chroma-token` and `Authorization: Bearer` when set.
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default = "timeout_ms")]
    pub timeout_ms: u64,
    /// Rows per `get` page (listing ids, recency windows).
    #[serde(default = "page_size")]
    pub page_size: usize,
    /// How many candidates a vector search asks Chroma's HNSW for before
    /// keeping the best `k` (its search width). Unset: `k` on a collection
    /// with chatmill's graph, [`WIDE`] on one built sparser (an older
    /// chatmill's, or another client's), where the best matches hide.
    #[serde(default)]
    pub candidates: Option<usize>,
}

fn page_size() -> usize {
    1000
}

fn tenant() -> String {
    "default_tenant".into()
}
fn database() -> String {
    "default_database".into()
}
fn collection() -> String {
    "conversations".into()
}
fn timeout_ms() -> u64 {
    30_000
}

impl ChromaConfig {
    pub fn new(url: &str) -> Self {
        Self {
            url: url.into(),
            tenant: tenant(),
            database: database(),
            collection: collection(),
            token: None,
            timeout_ms: timeout_ms(),
            page_size: page_size(),
            candidates: None,
        }
    }
}

/// Bodies stay under this many bytes (the server refuses 40 MiB).
const MAX_BODY: usize = 24 << 20;

#[derive(Debug)]
pub struct ChromaStore {
    cfg: ChromaConfig,
    agent: ureq::Agent,
    /// `…/collections/<uuid>`
    base: String,
    max_batch: usize,
    /// The model and width of the stored vectors, once known.
    held: Mutex<Option<StoredModel>>,
    /// Whether the collection's records carry every metadata key this
    /// chatmill writes (its `chatmill_metadata` is [`METADATA`]).
    metadata_current: std::sync::atomic::AtomicBool,
    /// Candidates per vector search (see [`ChromaConfig::candidates`]).
    candidates: usize,
}

/// The metadata keys' version: 2 added `project`.
const METADATA: i64 = 2;

struct Http {
    status: u16,
    body: String,
}

impl ChromaStore {
    /// Connects, creating the tenant, database and collection when missing.
    pub fn connect(cfg: ChromaConfig) -> Result<Self, IndexError> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_millis(cfg.timeout_ms)))
            .http_status_as_error(false)
            .build()
            .into();
        let mut me = Self {
            base: String::new(),
            max_batch: 1000,
            held: Mutex::new(None),
            metadata_current: std::sync::atomic::AtomicBool::new(false),
            candidates: 0,
            cfg,
            agent,
        };
        let api = me.api();
        me.ok(
            me.request("GET", &format!("{api}/heartbeat"), None)?,
            "heartbeat",
        )?;
        if let Ok(v) = me.json(me.request("GET", &format!("{api}/pre-flight-checks"), None)?)
            && let Some(n) = v["max_batch_size"].as_u64()
        {
            me.max_batch = (n as usize).clamp(1, 5000);
        }
        let (t, d) = (me.cfg.tenant.clone(), me.cfg.database.clone());
        if me
            .request("GET", &format!("{api}/tenants/{t}"), None)?
            .status
            == 404
        {
            me.ok(
                me.request("POST", &format!("{api}/tenants"), Some(json!({"name": t})))?,
                "create tenant",
            )?;
        }
        if me
            .request("GET", &format!("{api}/tenants/{t}/databases/{d}"), None)?
            .status
            == 404
        {
            me.ok(
                me.request(
                    "POST",
                    &format!("{api}/tenants/{t}/databases"),
                    Some(json!({"name": d})),
                )?,
                "create database",
            )?;
        }
        let v = me.json(me.request(
            "POST",
            &format!("{api}/tenants/{t}/databases/{d}/collections"),
            Some(json!({
                "name": me.cfg.collection,
                "get_or_create": true,
                "metadata": {"created_by": "chatmill", "chatmill_metadata": METADATA},
                "configuration": {"hnsw": hnsw()},
            })),
        )?)?;
        let id = v["id"]
            .as_str()
            .ok_or_else(|| me.fail(format!("the collection answer has no id: {v}"), false))?;
        me.base = format!("{api}/tenants/{t}/databases/{d}/collections/{id}");
        let current = v["metadata"]["chatmill_metadata"].as_i64() >= Some(METADATA);
        me.metadata_current
            .store(current, std::sync::atomic::Ordering::Relaxed);
        me.candidates = me
            .cfg
            .candidates
            .unwrap_or_else(|| candidates(&v["configuration_json"]["hnsw"]));
        if me.candidates > 0 {
            tracing::debug!(
                collection = %me.cfg.collection,
                graph = %v["configuration_json"]["hnsw"],
                candidates = me.candidates,
                "vector searches ask for more candidates than they keep"
            );
        }
        Ok(me)
    }

    fn api(&self) -> String {
        format!("{}/api/v2", self.cfg.url.trim_end_matches('/'))
    }

    fn fail(&self, message: String, retryable: bool) -> IndexError {
        IndexError::Store {
            store: format!("chroma {}", self.cfg.url),
            message,
            hint: Some(if retryable {
                format!(
                    "is the Chroma server running? start it with `chroma run --host 127.0.0.1 --port PORT --path DIR` and check `[index] url` ({})",
                    self.cfg.url
                )
            } else {
                "check the Chroma server's log; `chatmill reindex` rebuilds the collection from the chunk files".into()
            }),
            retryable,
        }
    }

    fn request(&self, method: &str, url: &str, body: Option<Value>) -> Result<Http, IndexError> {
        let auth = |mut r: ureq::RequestBuilder<ureq::typestate::WithBody>| {
            if let Some(t) = &self.cfg.token {
                r = r
                    .header("x-chroma-token", t)
                    .header("Authorization", &format!("Bearer {t}"));
            }
            r
        };
        let result = match (method, body) {
            ("GET", _) => {
                let mut r = self.agent.get(url);
                if let Some(t) = &self.cfg.token {
                    r = r
                        .header("x-chroma-token", t)
                        .header("Authorization", &format!("Bearer {t}"));
                }
                r.call()
            }
            ("PUT", body) => auth(self.agent.put(url)).send_json(body.unwrap_or(json!({}))),
            (_, body) => auth(self.agent.post(url)).send_json(body.unwrap_or(json!({}))),
        };
        let mut resp = result.map_err(|e| self.fail(format!("{url}: {e}"), true))?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()
            .map_err(|e| self.fail(format!("{url}: {e}"), true))?;
        Ok(Http { status, body })
    }

    fn ok(&self, r: Http, what: &str) -> Result<String, IndexError> {
        match r.status {
            200..=299 => Ok(r.body),
            s => {
                let short: String = r.body.chars().take(300).collect();
                Err(self.fail(format!("{what}: HTTP {s}: {short}"), s == 429 || s >= 500))
            }
        }
    }

    fn json(&self, r: Http) -> Result<Value, IndexError> {
        let text = self.ok(r, "request")?;
        serde_json::from_str(&text).map_err(|e| self.fail(format!("not JSON: {e}"), false))
    }

    fn post(&self, op: &str, body: Value) -> Result<Value, IndexError> {
        let r = self.request("POST", &format!("{}/{op}", self.base), Some(body))?;
        if r.status == 400 && r.body.contains("dimension") {
            return Err(self.fail(
                format!("{op}: {}", r.body.chars().take(300).collect::<String>()),
                false,
            ));
        }
        let text = self.ok(r, op)?;
        serde_json::from_str(&text).map_err(|e| self.fail(format!("{op}: not JSON: {e}"), false))
    }

    /// The record metadata Chroma stores: every key, no nulls, no empty lists.
    fn metadata(r: &ChunkRecord, model: &str) -> Value {
        let m = &r.meta;
        let mut map = Map::new();
        map.insert("chunk_id".into(), json!(r.chunk_id));
        map.insert("timestamp".into(), json!(m.timestamp));
        map.insert("platform".into(), json!(m.platform));
        map.insert("agent_id".into(), json!(m.agent_id));
        map.insert("conversation_id".into(), json!(m.conversation_id));
        if let Some(p) = &m.project {
            map.insert("project".into(), json!(p));
        }
        map.insert("title".into(), json!(m.title.clone().unwrap_or_default()));
        map.insert(
            "topics_json".into(),
            json!(serde_json::to_string(&m.topics).unwrap_or_else(|_| "[]".into())),
        );
        if !m.topics.is_empty() {
            map.insert("topics".into(), json!(m.topics));
        }
        map.insert("model".into(), json!(m.model));
        map.insert("turn_range".into(), json!(m.turn_range));
        map.insert("source_file".into(), json!(m.source_file));
        map.insert("path".into(), json!(m.path));
        map.insert("embedder".into(), json!(model));
        Value::Object(map)
    }

    fn meta_from(v: &Value) -> ChunkMeta {
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        let title = s("title");
        ChunkMeta {
            timestamp: v["timestamp"].as_i64().unwrap_or(0),
            platform: s("platform"),
            agent_id: s("agent_id"),
            conversation_id: s("conversation_id"),
            project: v["project"].as_str().map(str::to_string),
            title: (!title.is_empty()).then_some(title),
            topics: serde_json::from_str(v["topics_json"].as_str().unwrap_or("[]"))
                .unwrap_or_default(),
            model: s("model"),
            turn_range: s("turn_range"),
            source_file: s("source_file"),
            path: s("path"),
        }
    }

    /// A `where` clause for a filter (`None`: no filter).
    fn where_clause(filter: &Filter) -> Option<Value> {
        let mut parts = Vec::new();
        for (key, value) in [
            ("agent_id", &filter.agent_id),
            ("platform", &filter.platform),
            ("conversation_id", &filter.conversation_id),
            ("project", &filter.project),
        ] {
            if let Some(v) = value {
                parts.push(json!({key: {"$eq": v}}));
            }
        }
        if let Some(t) = filter.since {
            parts.push(json!({"timestamp": {"$gte": t}}));
        }
        if let Some(t) = filter.until {
            parts.push(json!({"timestamp": {"$lte": t}}));
        }
        match parts.len() {
            0 => None,
            1 => parts.pop(),
            _ => Some(json!({"$and": parts})),
        }
    }

    /// Rows of a `get` or one `query` result as hits.
    fn hits(&self, v: &Value, nested: bool) -> Vec<Hit> {
        let pick = |key: &str| -> Vec<Value> {
            let x = if nested { &v[key][0] } else { &v[key] };
            x.as_array().cloned().unwrap_or_default()
        };
        let ids = pick("ids");
        let docs = pick("documents");
        let metas = pick("metadatas");
        let dists = pick("distances");
        ids.iter()
            .enumerate()
            .map(|(i, id)| Hit {
                chunk_id: id.as_str().unwrap_or_default().to_string(),
                score: dists
                    .get(i)
                    .and_then(Value::as_f64)
                    .map_or(0.0, |d| 1.0 - d as f32),
                meta: Self::meta_from(metas.get(i).unwrap_or(&Value::Null)),
                document: docs
                    .get(i)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            })
            .collect()
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Option<StoredModel>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The HNSW index a new collection gets: cosine space, and a denser graph
/// built and searched wider than Chroma's defaults (16 neighbours, ef
/// 100/100). Measured with `benches/chroma_recall.rs` on Chroma 1.5.9
/// against exact kNN, 100,000 records of the lexical stand-in's vectors:
/// recall@10 0.74 unfiltered with 16/100/200, 0.93–0.96 with 32/200/500,
/// 0.991 with 64/400/500 and 1.000 with these (`ef_search` 1000 for a
/// margin: builds vary). What the sparser graphs miss are whole groups of
/// identical vectors (the same text stored again): HNSW's neighbour
/// selection lets a node link to only one member of such a group, so the
/// group is reached through few edges, and a denser graph built with a
/// wider search keeps enough of them (64 neighbours alone or
/// ef_construction 400 alone: 0.97–0.98). The price is build time: 56% of
/// 32/200's upsert rate at 100,000 records. Fixed at creation: an existing
/// collection keeps its graph, and Chroma 1.5.9 applies a changed
/// `ef_search` only after the server restarts.
fn hnsw() -> Value {
    json!({
        "space": "cosine",
        "max_neighbors": 64,
        "ef_construction": 400,
        "ef_search": 1000,
    })
}

/// Candidates per search on a collection built sparser than [`hnsw`]:
/// on 100,000 lexical records in a 32/200 graph, recall@10 0.96 asking
/// for 500 (HNSW searches max(ef_search, n) wide), 0.99 for 1,500, 1.00 for
/// 2,000; chatmill's search then runs at half the rate (57 against 123
/// queries/s, the documents fetched for the best k in a second request).
const WIDE: usize = 2000;

/// Candidates per search for a collection whose HNSW configuration is
/// `graph` (`configuration_json.hnsw`): for chatmill's graph or a denser
/// one, 0 (just `k`) or its `ef_search` where the collection's is lower;
/// 0 when the collection has no HNSW index (SPANN on a distributed
/// Chroma); [`WIDE`] for a sparser graph.
fn candidates(graph: &Value) -> usize {
    let ours = hnsw();
    let at_least = |key: &str| graph[key].as_u64() >= ours[key].as_u64();
    if graph.is_null() || graph["max_neighbors"].is_null() {
        0
    } else if !(at_least("max_neighbors") && at_least("ef_construction")) {
        WIDE
    } else if at_least("ef_search") {
        0
    } else {
        ours["ef_search"].as_u64().map_or(0, |ef| ef as usize)
    }
}

fn b64(v: &[f32]) -> String {
    base64::engine::general_purpose::STANDARD.encode(crate::embedded::to_blob(v))
}

impl Store for ChromaStore {
    fn name(&self) -> &str {
        "chroma"
    }

    fn upsert(
        &self,
        records: &[ChunkRecord],
        vectors: &[Vec<f32>],
        model: &str,
    ) -> Result<(), IndexError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut start = 0;
        while start < records.len() {
            // Fill a batch up to the record limit or the body budget.
            let mut end = start;
            let mut bytes = 0;
            while end < records.len() && end - start < self.max_batch {
                let r = &records[end];
                let size = r.document.len() + vectors[end].len() * 6 + 1024;
                if end > start && bytes + size > MAX_BODY {
                    break;
                }
                bytes += size;
                end += 1;
            }
            let batch = &records[start..end];
            let body = json!({
                "ids": batch.iter().map(|r| r.chunk_id.as_str()).collect::<Vec<_>>(),
                "embeddings": vectors[start..end].iter().map(|v| b64(v)).collect::<Vec<_>>(),
                "documents": batch.iter().map(|r| r.document.as_str()).collect::<Vec<_>>(),
                "metadatas": batch.iter().map(|r| Self::metadata(r, model)).collect::<Vec<_>>(),
            });
            self.post("upsert", body)?;
            start = end;
        }
        *self.held() = Some(StoredModel {
            model: Some(model.to_string()),
            dim: vectors.first().map(Vec::len),
        });
        Ok(())
    }

    fn delete(&self, chunk_ids: &[String]) -> Result<(), IndexError> {
        for batch in chunk_ids.chunks(self.max_batch) {
            self.post("delete", json!({ "ids": batch }))?;
        }
        if self.count()? == 0 {
            *self.held() = None;
        }
        Ok(())
    }

    fn ids(&self) -> Result<BTreeSet<String>, IndexError> {
        let mut out = BTreeSet::new();
        let mut offset = 0;
        let page = self.cfg.page_size.max(1);
        loop {
            let v = self.post(
                "get",
                json!({"limit": page, "offset": offset, "include": []}),
            )?;
            let ids = v["ids"].as_array().cloned().unwrap_or_default();
            let n = ids.len();
            out.extend(
                ids.into_iter()
                    .filter_map(|i| i.as_str().map(str::to_string)),
            );
            if n < page {
                return Ok(out);
            }
            offset += n;
        }
    }

    fn holding(&self, chunk_ids: &[String]) -> Result<BTreeSet<String>, IndexError> {
        if chunk_ids.is_empty() {
            return Ok(BTreeSet::new());
        }
        let v = self.post("get", json!({"ids": chunk_ids, "include": []}))?;
        let ids = v["ids"].as_array().cloned().unwrap_or_default();
        // Only ids asked for: the answer is the server's, not trusted further.
        Ok(ids
            .iter()
            .filter_map(|i| i.as_str())
            .filter(|i| chunk_ids.iter().any(|c| c == i))
            .map(str::to_string)
            .collect())
    }

    fn count(&self) -> Result<u64, IndexError> {
        let r = self.request("GET", &format!("{}/count", self.base), None)?;
        let text = self.ok(r, "count")?;
        text.trim()
            .parse()
            .map_err(|e| self.fail(format!("count: `{text}`: {e}"), false))
    }

    /// Read from one stored record (its `embedder` metadata, its vector's
    /// length) and kept once the model is known.
    fn stored(&self) -> Result<Option<StoredModel>, IndexError> {
        if let Some(held) = self.held().clone() {
            return Ok(Some(held));
        }
        let v = self.post(
            "get",
            json!({"limit": 1, "include": ["metadatas", "embeddings"]}),
        )?;
        if v["ids"].as_array().is_none_or(Vec::is_empty) {
            return Ok(None);
        }
        let held = StoredModel {
            model: v["metadatas"][0]["embedder"].as_str().map(str::to_string),
            dim: v["embeddings"][0].as_array().map(Vec::len),
        };
        if held.model.is_some() {
            *self.held() = Some(held.clone());
        }
        Ok(Some(held))
    }

    fn metadata_outdated(&self) -> Result<bool, IndexError> {
        if self
            .metadata_current
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return Ok(false);
        }
        Ok(self.count()? > 0)
    }

    fn refresh_metadata(&self, records: &[ChunkRecord]) -> Result<(), IndexError> {
        let model = self.stored()?.and_then(|s| s.model).unwrap_or_default();
        for batch in records.chunks(self.max_batch) {
            // Only the ids the collection holds are updated.
            let ids: Vec<&str> = batch.iter().map(|r| r.chunk_id.as_str()).collect();
            let held = self.post("get", json!({"ids": ids, "include": []}))?;
            let held: BTreeSet<&str> = held["ids"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let batch: Vec<&ChunkRecord> = batch
                .iter()
                .filter(|r| held.contains(r.chunk_id.as_str()))
                .collect();
            if batch.is_empty() {
                continue;
            }
            self.post(
                "update",
                json!({
                    "ids": batch.iter().map(|r| r.chunk_id.as_str()).collect::<Vec<_>>(),
                    "metadatas": batch.iter().map(|r| Self::metadata(r, &model)).collect::<Vec<_>>(),
                }),
            )?;
        }
        Ok(())
    }

    fn metadata_refreshed(&self) -> Result<(), IndexError> {
        let r = self.request(
            "PUT",
            &self.base,
            Some(
                json!({"new_metadata": {"created_by": "chatmill", "chatmill_metadata": METADATA}}),
            ),
        )?;
        self.ok(r, "modify collection")?;
        self.metadata_current
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    fn knn(&self, vector: &[f32], k: usize, filter: &Filter) -> Result<Vec<Hit>, IndexError> {
        let wide = self.candidates > k;
        let mut body = json!({
            "query_embeddings": [vector],
            "n_results": k.max(self.candidates),
            "include": if wide { json!(["distances"]) } else { json!(["documents", "metadatas", "distances"]) },
        });
        if let Some(w) = Self::where_clause(filter) {
            body["where"] = w;
        }
        let v = self.post("query", body)?;
        let mut hits = self.hits(&v, true);
        if !wide {
            return Ok(hits);
        }
        // The distances are exact and sorted: the best k of the candidates,
        // then their documents and metadata.
        hits.truncate(k);
        if hits.is_empty() {
            return Ok(hits);
        }
        let ids: Vec<&str> = hits.iter().map(|h| h.chunk_id.as_str()).collect();
        let v = self.post(
            "get",
            json!({"ids": ids, "include": ["documents", "metadatas"]}),
        )?;
        let mut rows: std::collections::HashMap<String, Hit> = self
            .hits(&v, false)
            .into_iter()
            .map(|h| (h.chunk_id.clone(), h))
            .collect();
        // A record deleted between the two requests drops out.
        Ok(hits
            .into_iter()
            .filter_map(|h| {
                rows.remove(&h.chunk_id).map(|row| Hit {
                    score: h.score,
                    ..row
                })
            })
            .collect())
    }

    fn keyword(&self, _query: &str, _k: usize, _filter: &Filter) -> Result<Vec<Hit>, IndexError> {
        Err(IndexError::Unsupported {
            store: "chroma".into(),
            what: "keyword (BM25) search",
        })
    }

    fn recent(&self, k: usize, filter: &Filter) -> Result<Vec<Hit>, IndexError> {
        // Newest timestamp in scope: the upper bound of the first window.
        let top = filter.until.unwrap_or(i64::MAX);
        // Windows of a day, a week, a month, a year, then everything in scope;
        // each row's metadata only, then documents for the k newest.
        let now = chrono_now();
        let anchor = top.min(now);
        let mut rows: Vec<(i64, String)> = Vec::new();
        for span in [86_400i64, 7 * 86_400, 31 * 86_400, 366 * 86_400, i64::MAX] {
            let mut f = filter.clone();
            if span != i64::MAX {
                let since = anchor.saturating_sub(span);
                f.since = Some(filter.since.map_or(since, |s| s.max(since)));
            }
            rows.clear();
            let mut offset = 0;
            loop {
                let page = self.cfg.page_size.max(1);
                let mut body = json!({"limit": page, "offset": offset, "include": ["metadatas"]});
                if let Some(w) = Self::where_clause(&f) {
                    body["where"] = w;
                }
                let v = self.post("get", body)?;
                let ids = v["ids"].as_array().cloned().unwrap_or_default();
                let metas = v["metadatas"].as_array().cloned().unwrap_or_default();
                let n = ids.len();
                for (id, m) in ids.iter().zip(&metas) {
                    rows.push((
                        m["timestamp"].as_i64().unwrap_or(0),
                        id.as_str().unwrap_or_default().to_string(),
                    ));
                }
                if n < page {
                    break;
                }
                offset += n;
            }
            if rows.len() >= k || span == i64::MAX {
                break;
            }
        }
        rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        rows.truncate(k);
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
        let v = self.post(
            "get",
            json!({"ids": ids, "include": ["documents", "metadatas"]}),
        )?;
        let mut hits = self.hits(&v, false);
        hits.sort_by(|a, b| {
            b.meta
                .timestamp
                .cmp(&a.meta.timestamp)
                .then_with(|| a.chunk_id.cmp(&b.chunk_id))
        });
        Ok(hits)
    }
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_become_one_top_level_key() {
        assert_eq!(ChromaStore::where_clause(&Filter::default()), None);
        let one = Filter {
            platform: Some("claude".into()),
            ..Filter::default()
        };
        assert_eq!(
            ChromaStore::where_clause(&one),
            Some(json!({"platform": {"$eq": "claude"}}))
        );
        let two = Filter {
            agent_id: Some("a".into()),
            since: Some(5),
            ..Filter::default()
        };
        assert_eq!(
            ChromaStore::where_clause(&two),
            Some(json!({"$and": [{"agent_id": {"$eq": "a"}}, {"timestamp": {"$gte": 5}}]}))
        );
    }

    #[test]
    fn metadata_has_no_nulls_or_empty_lists_and_round_trips() {
        let r = ChunkRecord {
            chunk_id: "c".into(),
            embed_text: "e".into(),
            document: "d".into(),
            meta: ChunkMeta {
                timestamp: 1_700_000_000,
                platform: "claude".into(),
                agent_id: "external".into(),
                conversation_id: "conv".into(),
                project: None,
                title: None,
                topics: vec![],
                model: "unknown".into(),
                turn_range: "1".into(),
                source_file: "raw/x.json".into(),
                path: "c.md".into(),
            },
        };
        let m = ChromaStore::metadata(&r, "emb");
        for (k, v) in m.as_object().unwrap() {
            assert!(!v.is_null(), "{k} is null");
            assert!(v.as_array().is_none_or(|a| !a.is_empty()), "{k} is empty");
        }
        assert_eq!(ChromaStore::meta_from(&m), r.meta);
        let mut with = r.clone();
        with.meta.title = Some("T: \"q\"".into());
        with.meta.topics = vec!["nginx".into(), "tls".into()];
        let m = ChromaStore::metadata(&with, "emb");
        assert_eq!(m["topics"], json!(["nginx", "tls"]));
        assert_eq!(ChromaStore::meta_from(&m), with.meta);
    }

    #[test]
    fn sparser_graphs_are_searched_wider() {
        assert_eq!(candidates(&Value::Null), 0, "no HNSW index");
        assert_eq!(candidates(&hnsw()), 0, "chatmill's graph");
        let graph = |m: u64, efc: u64, efs: u64| json!({"space": "cosine", "max_neighbors": m, "ef_construction": efc, "ef_search": efs});
        assert_eq!(candidates(&graph(96, 800, 2000)), 0, "denser");
        assert_eq!(candidates(&graph(32, 200, 500)), WIDE, "chatmill's before");
        assert_eq!(candidates(&graph(16, 100, 100)), WIDE, "Chroma's defaults");
        assert_eq!(candidates(&graph(64, 200, 500)), WIDE, "built narrower");
        assert_eq!(candidates(&graph(64, 400, 100)), 1000, "searched narrower");
    }

    #[test]
    fn embeddings_travel_as_little_endian_base64() {
        assert_eq!(b64(&[1.0]), "AACAPw==");
    }
}
