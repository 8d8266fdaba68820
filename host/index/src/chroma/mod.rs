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
//!
//! - `config`: [`ChromaConfig`], the `[index]` settings;
//! - `client`: [`ChromaStore`]'s connection, requests and errors;
//! - `records`: chunks, filters and hits in Chroma's JSON;
//! - `hnsw`: the graph a collection gets, and how wide to search one.

mod client;
mod config;
mod hnsw;
mod records;

use std::collections::BTreeSet;

use serde_json::{Value, json};

pub use client::ChromaStore;
use client::METADATA;
pub use config::ChromaConfig;

use crate::{ChunkRecord, Filter, Hit, IndexError, Store, StoredModel};

/// Bodies stay under this many bytes (the server refuses 40 MiB).
const MAX_BODY: usize = 24 << 20;

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
                "embeddings": vectors[start..end].iter().map(|v| records::b64(v)).collect::<Vec<_>>(),
                "documents": batch.iter().map(|r| r.document.as_str()).collect::<Vec<_>>(),
                "metadatas": batch.iter().map(|r| records::metadata(r, model)).collect::<Vec<_>>(),
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
                    "metadatas": batch.iter().map(|r| records::metadata(r, &model)).collect::<Vec<_>>(),
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
        if let Some(w) = records::where_clause(filter) {
            body["where"] = w;
        }
        let v = self.post("query", body)?;
        let mut hits = records::hits(&v, true);
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
        let mut rows: std::collections::HashMap<String, Hit> = records::hits(&v, false)
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
                if let Some(w) = records::where_clause(&f) {
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
        let mut hits = records::hits(&v, false);
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
