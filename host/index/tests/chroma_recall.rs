//! Chatmill's Chroma search finds what exact kNN finds past the size where
//! HNSW's defaults start missing (~1,000 records): 5,000 LoCoMo turns with
//! the lexical stand-in's vectors (sparse hashes, most pairs orthogonal:
//! the hard case for a graph index), 100 LoCoMo questions, recall@10
//! ≥ 0.99 with and without filters. Against a real `chroma run` on
//! 127.0.0.1 (`scripts/setup-chroma.sh`; skipped without it unless
//! `CHATMILL_REQUIRE_CHROMA=1`). `benches/chroma_recall.rs` measures the
//! same at 100,000 and with MiniLM.

#[path = "support/chroma.rs"]
mod chroma;
#[path = "support/recall.rs"]
mod recall;

use chatmill_index::{ChromaConfig, ChromaStore, Embedder, Lexical, Store};

#[test]
fn chroma_search_finds_the_exact_nearest_neighbours_at_5000_records() {
    let Some(server) = chroma::start() else {
        return;
    };
    let (turns, questions) = recall::locomo();
    let records = recall::records(&turns, 5000);
    let embedder = Lexical::default();
    let texts: Vec<&str> = records.iter().map(|r| r.embed_text.as_str()).collect();
    let vectors = embedder.embed(&texts).unwrap();
    let q: Vec<&str> = questions.iter().map(String::as_str).collect();
    let queries = embedder.embed(&q).unwrap();
    let store = ChromaStore::connect(ChromaConfig::new(&server.url)).unwrap();
    for (r, v) in records.chunks(256).zip(vectors.chunks(256)) {
        store.upsert(r, v, embedder.id()).unwrap();
    }
    assert_eq!(store.count().unwrap(), 5000);
    for (label, filter) in recall::filters(&records) {
        let (r, _) = recall::recall(&store, &records, &vectors, &queries, &filter);
        assert!(r >= 0.99, "{label}: recall@{} {r:.3}", recall::K);
    }
}

/// A collection built with a sparser graph than chatmill's and searched
/// narrowly (Chroma's 16 neighbours, ef_construction 100, `ef_search` 10:
/// what an older chatmill or another client may have made) is searched
/// wider, and finds the exact neighbours all the same.
#[test]
fn a_sparser_older_collection_is_searched_wide_enough() {
    let Some(server) = chroma::start() else {
        return;
    };
    let (turns, questions) = recall::locomo();
    let records = recall::records(&turns, 5000);
    let embedder = Lexical::default();
    let texts: Vec<&str> = records.iter().map(|r| r.embed_text.as_str()).collect();
    let vectors = embedder.embed(&texts).unwrap();
    let q: Vec<&str> = questions.iter().map(String::as_str).collect();
    let queries = embedder.embed(&q).unwrap();
    recall::create_collection(&server.url, "conversations", "16/100/10");
    let store = ChromaStore::connect(ChromaConfig::new(&server.url)).unwrap();
    for (r, v) in records.chunks(256).zip(vectors.chunks(256)) {
        store.upsert(r, v, embedder.id()).unwrap();
    }
    for (label, filter) in recall::filters(&records) {
        let (r, _) = recall::recall(&store, &records, &vectors, &queries, &filter);
        assert!(r >= 0.99, "{label}: recall@{} {r:.3}", recall::K);
    }
    // The same collection searched only k wide misses: the case is real.
    let mut cfg = ChromaConfig::new(&server.url);
    cfg.candidates = Some(0);
    let narrow = ChromaStore::connect(cfg).unwrap();
    let (r, _) = recall::recall(&narrow, &records, &vectors, &queries, &Default::default());
    assert!(r < 0.99, "searched k wide: recall@{} {r:.3}", recall::K);
}
