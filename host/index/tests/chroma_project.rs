//! `project` in a real Chroma collection (`chroma run` on 127.0.0.1, as in
//! `chroma_server.rs`): records carry it, filters scope by it, and a
//! collection an older chatmill made learns it from a metadata refresh.

#[path = "support/chroma.rs"]
mod chroma;

use std::sync::Arc;

use chatmill_index::{
    ChromaConfig, ChromaStore, ChunkMeta, ChunkRecord, Index, Indexer, Lexical, Mode, SearchRequest,
};
use serde_json::json;

fn record(id: &str, project: Option<&str>, text: &str) -> ChunkRecord {
    ChunkRecord {
        chunk_id: id.into(),
        embed_text: text.into(),
        document: format!("---\nchunk_id: {id}\n---\n{text}"),
        meta: ChunkMeta {
            timestamp: 1_790_000_000 + id.len() as i64,
            platform: "claude-code".into(),
            agent_id: "external".into(),
            conversation_id: format!("conv-{id}"),
            project: project.map(str::to_string),
            title: None,
            topics: Vec::new(),
            model: "claude".into(),
            turn_range: "1".into(),
            source_file: "s.jsonl".into(),
            path: format!("{id}.md"),
        },
    }
}

fn records() -> Vec<ChunkRecord> {
    vec![
        record("oven", Some("bakery"), "tuning the oven timer code"),
        record(
            "sprinkler",
            Some("garden"),
            "tuning the sprinkler timer code",
        ),
        record("guitar", None, "tuning a guitar"),
    ]
}

fn scoped(index: &Index, mode: Mode) -> Vec<String> {
    let mut q = SearchRequest::new("tuning timer code");
    q.mode = mode;
    q.filter.project = Some("bakery".into());
    let hits = index.search(&q).unwrap().hits;
    hits.into_iter().map(|h| h.chunk_id).collect()
}

fn connect(cfg: &ChromaConfig) -> Index {
    let store = ChromaStore::connect(cfg.clone()).unwrap();
    Index::new(Arc::new(store), Arc::new(Lexical::default()))
}

#[test]
fn projects_scope_chroma_searches_and_an_older_collection_is_refreshed() {
    let Some(server) = chroma::start() else {
        return;
    };
    let mut cfg = ChromaConfig::new(&server.url);
    cfg.collection = "new_one".into();
    let index = connect(&cfg);
    index.index(&records()).unwrap();
    assert!(
        !index.metadata_outdated().unwrap(),
        "a new collection is current"
    );
    for mode in [Mode::Semantic, Mode::Recent] {
        assert_eq!(scoped(&index, mode), ["oven"], "{mode:?}");
    }

    // A collection as an older chatmill made it: no metadata version, and
    // records without `project`.
    cfg.collection = "older_one".into();
    let db = format!(
        "{}/api/v2/tenants/{}/databases/{}/collections",
        server.url, cfg.tenant, cfg.database
    );
    ureq::post(&db)
        .send_json(json!({"name": cfg.collection, "metadata": {"created_by": "chatmill"}}))
        .unwrap();
    let unknown: Vec<ChunkRecord> = records()
        .into_iter()
        .map(|mut r| {
            r.meta.project = None;
            r
        })
        .collect();
    let index = connect(&cfg);
    index.index(&unknown).unwrap();
    assert!(index.metadata_outdated().unwrap());
    assert!(
        scoped(&index, Mode::Recent).is_empty(),
        "projects unknown yet"
    );
    index.refresh_metadata(&records()).unwrap();
    index.metadata_refreshed().unwrap();
    for mode in [Mode::Semantic, Mode::Recent] {
        assert_eq!(scoped(&index, mode), ["oven"], "{mode:?} after the refresh");
    }
    assert!(
        !connect(&cfg).metadata_outdated().unwrap(),
        "the collection remembers it was refreshed"
    );
}
