//! Chroma's side of a record, in JSON: a chunk's metadata (every key, no
//! nulls, no empty lists), a filter as a `where` clause, the rows of an
//! answer as hits, and a vector as base64.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::{ChunkMeta, ChunkRecord, Filter, Hit};

/// The record metadata Chroma stores: every key, no nulls, no empty lists.
pub(super) fn metadata(r: &ChunkRecord, model: &str) -> Value {
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
        topics: serde_json::from_str(v["topics_json"].as_str().unwrap_or("[]")).unwrap_or_default(),
        model: s("model"),
        turn_range: s("turn_range"),
        source_file: s("source_file"),
        path: s("path"),
    }
}

/// A `where` clause for a filter (`None`: no filter).
pub(super) fn where_clause(filter: &Filter) -> Option<Value> {
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
pub(super) fn hits(v: &Value, nested: bool) -> Vec<Hit> {
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
            meta: meta_from(metas.get(i).unwrap_or(&Value::Null)),
            document: docs
                .get(i)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
        .collect()
}

/// A vector as Chroma takes it: its little-endian f32s in base64.
pub(super) fn b64(v: &[f32]) -> String {
    base64::engine::general_purpose::STANDARD.encode(crate::embedded::to_blob(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_become_one_top_level_key() {
        assert_eq!(where_clause(&Filter::default()), None);
        let one = Filter {
            platform: Some("claude".into()),
            ..Filter::default()
        };
        assert_eq!(
            where_clause(&one),
            Some(json!({"platform": {"$eq": "claude"}}))
        );
        let two = Filter {
            agent_id: Some("a".into()),
            since: Some(5),
            ..Filter::default()
        };
        assert_eq!(
            where_clause(&two),
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
        let m = metadata(&r, "emb");
        for (k, v) in m.as_object().unwrap() {
            assert!(!v.is_null(), "{k} is null");
            assert!(v.as_array().is_none_or(|a| !a.is_empty()), "{k} is empty");
        }
        assert_eq!(meta_from(&m), r.meta);
        let mut with = r.clone();
        with.meta.title = Some("T: \"q\"".into());
        with.meta.topics = vec!["nginx".into(), "tls".into()];
        let m = metadata(&with, "emb");
        assert_eq!(m["topics"], json!(["nginx", "tls"]));
        assert_eq!(meta_from(&m), with.meta);
    }

    #[test]
    fn embeddings_travel_as_little_endian_base64() {
        assert_eq!(b64(&[1.0]), "AACAPw==");
    }
}
