//! The Chroma backend against a real `chroma run` on 127.0.0.1 (installed by
//! `scripts/setup-chroma.sh`; `CHATMILL_REQUIRE_CHROMA=1`, set by the test
//! script, makes a missing server a failure instead of a skip).

#[path = "support/chroma.rs"]
mod chroma;

use std::sync::Arc;

use chatmill_index::{
    ChromaConfig, ChromaStore, ChunkMeta, ChunkRecord, Filter, Index, IndexError, Indexer, MiniLm,
    Mode, SearchRequest, Store, minilm,
};

fn record(id: &str, ts: i64, platform: &str, text: &str) -> ChunkRecord {
    ChunkRecord {
        chunk_id: id.into(),
        embed_text: text.into(),
        document: format!("---\nchunk_id: {id}\n---\n{text}"),
        meta: ChunkMeta {
            timestamp: ts,
            platform: platform.into(),
            agent_id: "external".into(),
            conversation_id: format!("conv-{id}"),
            project: None,
            title: Some(format!("Title: \"{id}\" ✨")),
            topics: vec!["topic-a".into(), "topic b".into()],
            model: "gpt-4o".into(),
            turn_range: "1".into(),
            source_file: "raw/export.json".into(),
            path: format!("{id}.md"),
        },
    }
}

/// The real local model: Chroma's HNSW index is approximate, and with the
/// lexical stand-in's sparse hash vectors (most pairs orthogonal, like
/// random vectors) it misses even clear nearest neighbours; real sentence
/// embeddings are what it is built for.
#[allow(clippy::print_stderr, reason = "a skipped test says why")]
fn model() -> Option<MiniLm> {
    match minilm::resolve(None) {
        Some(dir) => Some(MiniLm::load(&dir).unwrap()),
        None => {
            assert!(
                std::env::var_os("CHATMILL_REQUIRE_MODEL").is_none(),
                "CHATMILL_REQUIRE_MODEL is set but the model is missing"
            );
            eprintln!("skipping: no embedding model (run scripts/setup-model.sh)");
            None
        }
    }
}

const FILLER: [&str; 12] = [
    "invoice",
    "kayak",
    "violin",
    "tulip",
    "glacier",
    "compiler",
    "marathon",
    "teapot",
    "satellite",
    "origami",
    "harbor",
    "lantern",
];

/// One server, one collection, walked through in order: each step works on
/// what the steps before it stored (a server and the model take seconds to
/// start, so they are started once).
#[test]
fn a_real_chroma_server_stores_filters_ranks_and_migrates() {
    let Some(server) = chroma::start() else {
        return;
    };
    let mut cfg = ChromaConfig::new(&server.url);
    // A tenant and database that do not exist yet are created.
    cfg.tenant = "chatmill_test".into();
    cfg.database = "memories".into();
    // Small pages, so a few hundred records exercise paging. Kept under
    // Chroma's 1,000-record HNSW sync threshold: past it, this server's
    // approximate index misses clear nearest neighbours.
    cfg.page_size = 100;
    let store = Arc::new(ChromaStore::connect(cfg.clone()).unwrap());
    let Some(model) = model() else { return };
    let index = Index::new(store.clone(), Arc::new(model));

    cold_start_is_empty(&index);
    let now = 1_790_000_000;
    let records = records(now);
    index.index(&records).unwrap();
    assert_eq!(index.count().unwrap(), 253);
    assert_eq!(index.ids().unwrap().len(), 253);
    assert!(store.model().unwrap().unwrap().starts_with("local:"));

    semantic_search_and_platform_filter(&index, &records);
    time_phrases_search_their_window(&index, now);
    hybrid_degrades_to_dense(&index);
    recent_is_newest_first(&index);
    upsert_replaces(&index, &records);
    other_models_are_refused(&store, &records);

    // Deleting.
    index.remove(&["bread".to_string()]).unwrap();
    assert_eq!(index.count().unwrap(), 252);

    let again = second_client_sees_the_same(cfg);
    dead_server_is_retryable(server, &again);
}

/// An empty collection answers with nothing, not an error.
fn cold_start_is_empty(index: &Index) {
    assert!(
        index
            .search(&SearchRequest::new("anything"))
            .unwrap()
            .hits
            .is_empty()
    );
    let mut req = SearchRequest::new("");
    req.mode = Mode::Recent;
    assert!(index.search(&req).unwrap().hits.is_empty());
}

/// Three distinct chats (nginx, bread, rust), then 250 fillers: more than
/// one upsert batch's worth, to exercise paging in ids/recent.
fn records(now: i64) -> Vec<ChunkRecord> {
    let mut records = vec![
        record(
            "nginx",
            now - 3 * 86_400,
            "chatgpt",
            "nginx reverse proxy returns 502 for websocket upgrades",
        ),
        record(
            "bread",
            now - 400 * 86_400,
            "claude",
            "sourdough starter smells of acetone after feeding",
        ),
        record(
            "rust",
            now - 2 * 86_400,
            "claude-code",
            "rust borrow checker error E0502 in a loop over a vector",
        ),
    ];
    for i in 0..250 {
        records.push(record(
            &format!("filler-{i:04}"),
            now - 900 * 86_400 - i,
            "api",
            // Varied texts: thousands of near-identical vectors make any
            // HNSW graph (Chroma's index) miss neighbours.
            &format!(
                "{} {} {} note {i}",
                FILLER[i as usize % FILLER.len()],
                FILLER[(i as usize / 7) % FILLER.len()],
                FILLER[(i as usize / 49) % FILLER.len()]
            ),
        ));
    }
    records
}

/// Semantic search, and a filter on platform.
fn semantic_search_and_platform_filter(index: &Index, records: &[ChunkRecord]) {
    let mut req = SearchRequest::new("websocket 502 behind nginx");
    req.mode = Mode::Semantic;
    let hits = index.search(&req).unwrap().hits;
    let top: Vec<(&str, f32)> = hits
        .iter()
        .take(4)
        .map(|h| (h.chunk_id.as_str(), h.score))
        .collect();
    assert_eq!(hits[0].chunk_id, "nginx", "{top:?}");
    assert_eq!(hits[0].meta, records[0].meta, "metadata round-trips");
    assert_eq!(hits[0].document, records[0].document);
    req.filter.platform = Some("claude".into());
    let hits = index.search(&req).unwrap().hits;
    assert!(hits.iter().all(|h| h.meta.platform == "claude"), "{hits:?}");
}

/// A time phrase searches its window on the server too ("last year" is
/// 2025 here: only the sourdough chat), and favours only what is relevant
/// in it: the nginx chat stays first.
fn time_phrases_search_their_window(index: &Index, now: i64) {
    let mut req = SearchRequest::new("websocket 502 behind nginx last year");
    req.now = Some(now);
    let res = index.search(&req).unwrap();
    let w = res.time_window.clone().unwrap();
    assert_eq!(w.phrase, "last year");
    assert!(w.since <= now - 400 * 86_400 && now - 400 * 86_400 <= w.until);
    assert_eq!(res.hits[0].chunk_id, "nginx", "{:?}", res.hits);
    let mut req = SearchRequest::new("sourdough acetone last year");
    req.now = Some(now);
    let res = index.search(&req).unwrap();
    assert_eq!(res.hits[0].chunk_id, "bread");
}

/// Hybrid degrades to dense with a warning (Chroma has no BM25).
fn hybrid_degrades_to_dense(index: &Index) {
    let res = index
        .search(&SearchRequest::new("sourdough acetone"))
        .unwrap();
    assert_eq!(res.hits[0].chunk_id, "bread");
    assert!(
        res.warnings.iter().any(|w| w.contains("keyword")),
        "{:?}",
        res.warnings
    );
}

/// Recency: newest first, across a widening window, within a filter.
fn recent_is_newest_first(index: &Index) {
    let mut req = SearchRequest::new("");
    req.mode = Mode::Recent;
    req.k = 4;
    let ids: Vec<String> = index
        .search(&req)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.chunk_id)
        .collect();
    assert_eq!(ids, ["rust", "nginx", "bread", "filler-0000"]);
    req.filter = Filter {
        platform: Some("claude".into()),
        ..Filter::default()
    };
    let ids: Vec<String> = index
        .search(&req)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.chunk_id)
        .collect();
    assert_eq!(ids, ["bread"]);
}

/// Upsert replaces: a title removed and topics emptied do not survive.
fn upsert_replaces(index: &Index, records: &[ChunkRecord]) {
    let mut changed = records[0].clone();
    changed.meta.title = None;
    changed.meta.topics.clear();
    changed.document = "rewritten".into();
    index.index(std::slice::from_ref(&changed)).unwrap();
    let mut req = SearchRequest::new("websocket 502 behind nginx");
    req.mode = Mode::Semantic;
    req.k = 1;
    let hit = &index.search(&req).unwrap().hits[0];
    assert_eq!(
        (
            hit.meta.title.clone(),
            hit.meta.topics.clone(),
            hit.document.as_str()
        ),
        (None, vec![], "rewritten")
    );
    assert_eq!(index.count().unwrap(), 253);
}

/// Vectors of another model are refused rather than mixed, and the
/// message gives the stored vectors' dimension and the embedder's.
fn other_models_are_refused(store: &Arc<ChromaStore>, records: &[ChunkRecord]) {
    let other = Index::new(store.clone(), Arc::new(chatmill_index::Lexical::new(64)));
    let err = other.index(&records[..1]).unwrap_err();
    assert!(
        matches!(
            err,
            IndexError::DimensionMismatch {
                found: 384,
                dim: 64,
                ..
            }
        ),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("384-dimensional vectors from `local:")
            && message.contains("(64-dimensional)"),
        "{message}"
    );
    // The same width from another model: refused too.
    let same_width = Index::new(store.clone(), Arc::new(chatmill_index::Lexical::new(384)));
    let err = same_width.index(&records[..1]).unwrap_err();
    assert!(
        matches!(
            err,
            IndexError::DimensionMismatch {
                found: 384,
                dim: 384,
                ..
            }
        ),
        "{err}"
    );
}

/// A second client on the same collection sees the same data, and reads
/// the stored vectors' model and dimension from the server.
fn second_client_sees_the_same(cfg: ChromaConfig) -> ChromaStore {
    let again = ChromaStore::connect(cfg).unwrap();
    assert_eq!(again.count().unwrap(), 252);
    let held = again.stored().unwrap().unwrap();
    assert_eq!(held.dim, Some(384));
    assert!(held.model.unwrap().starts_with("local:"));
    again
}

/// A dead server: a retryable error with a hint, no panic.
fn dead_server_is_retryable(server: chroma::Server, client: &ChromaStore) {
    drop(server);
    let err = client.count().unwrap_err();
    match &err {
        IndexError::Store {
            retryable, hint, ..
        } => {
            assert!(*retryable, "{err}");
            assert!(
                hint.as_deref().unwrap_or_default().contains("chroma run"),
                "{err}"
            );
        }
        other => panic!("unexpected error {other}"),
    }
}
