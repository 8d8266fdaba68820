//! Recall@10 of chatmill's Chroma search against exact kNN (every stored
//! vector scored), on LoCoMo's dialogue turns as records and its questions
//! as queries, with and without filters, at 5,000 records (and more with
//! `CHATMILL_BENCH_RECALL_SIZES=5000,100000`: beyond LoCoMo's 5,882 turns
//! records pair two turns). Embedders: the lexical stand-in, and MiniLM
//! when installed (`CHATMILL_BENCH_RECALL_EMBEDDERS=lexical,minilm`). Each
//! size is measured on the HNSW graph a new chatmill collection gets and on
//! the graphs in `CHATMILL_BENCH_RECALL_HNSW` (see [`graphs`]), with upsert
//! and query throughput. `cargo bench -p chatmill-index --bench
//! chroma_recall` (needs `scripts/setup-chroma.sh`).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its numbers and its set-up errors"
)]

#[path = "../tests/support/chroma.rs"]
mod chroma;
#[path = "../tests/support/recall.rs"]
mod recall;

use std::time::Instant;

use chatmill_index::{ChromaConfig, ChromaStore, Embedder, Lexical, Store};
use recall::{K, QUERIES, filters, locomo, recall, records};

fn main() {
    let Some(server) = chroma::start() else {
        eprintln!("error: no chroma server\nhint: run scripts/setup-chroma.sh");
        std::process::exit(1);
    };
    let sizes: Vec<usize> = env_list("CHATMILL_BENCH_RECALL_SIZES", "5000")
        .iter()
        .filter_map(|s| s.parse().ok())
        .collect();
    let (turns, questions) = locomo();
    for name in env_list("CHATMILL_BENCH_RECALL_EMBEDDERS", "lexical,minilm") {
        let Some(embedder) = embedder(&name) else {
            println!("({name}: not available, skipped)");
            continue;
        };
        let q: Vec<&str> = questions.iter().take(QUERIES).map(String::as_str).collect();
        let queries = embedder.embed(&q).expect("embed queries");
        for &n in &sizes {
            let records = records(&turns, n);
            let texts: Vec<&str> = records.iter().map(|r| r.embed_text.as_str()).collect();
            let t = Instant::now();
            let vectors = embedder.embed(&texts).expect("embed records");
            let embed_s = t.elapsed().as_secs_f64();
            for graph in graphs() {
                let collection = format!("recall_{name}_{n}_{}", graph.replace('/', "_"));
                if graph != "chatmill" {
                    recall::create_collection(&server.url, &collection, &graph);
                }
                let mut cfg = ChromaConfig::new(&server.url);
                cfg.collection = collection;
                let store = ChromaStore::connect(cfg.clone()).expect("connect");
                let t = Instant::now();
                for (r, v) in records.chunks(256).zip(vectors.chunks(256)) {
                    store.upsert(r, v, embedder.id()).expect("upsert");
                }
                println!(
                    "{name}, {n} records, HNSW {graph}: embedded in {embed_s:.1} s, upserted at {:.0} records/s",
                    n as f64 / t.elapsed().as_secs_f64()
                );
                for (label, filter) in filters(&records) {
                    let (recall, qps) = recall(&store, &records, &vectors, &queries, &filter);
                    println!("  {label:<24} recall@{K} {recall:.3}  ({qps:.0} queries/s)");
                }
                if graph == "chatmill" {
                    continue;
                }
                // The same collection searched as a chatmill that does not
                // widen sparser graphs did.
                cfg.candidates = Some(0);
                let narrow = ChromaStore::connect(cfg).expect("connect");
                for (label, filter) in filters(&records) {
                    let (recall, qps) = recall(&narrow, &records, &vectors, &queries, &filter);
                    println!(
                        "  {label:<24} recall@{K} {recall:.3}  ({qps:.0} queries/s)  searched k wide"
                    );
                }
            }
        }
    }
}

/// The HNSW graphs measured: `chatmill` (what a new collection gets) and
/// each `max_neighbors/ef_construction/ef_search` in
/// `CHATMILL_BENCH_RECALL_HNSW` (default `32/200/500`, the previous
/// setting, so a run compares before and after). A sparser graph is
/// searched twice: as chatmill searches it now (wider, see
/// `ChromaConfig::candidates`) and `k` wide, as before.
fn graphs() -> Vec<String> {
    let mut out = vec!["chatmill".to_string()];
    out.extend(env_list("CHATMILL_BENCH_RECALL_HNSW", "32/200/500"));
    out
}

fn env_list(key: &str, default: &str) -> Vec<String> {
    std::env::var(key)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn embedder(name: &str) -> Option<Box<dyn Embedder>> {
    match name {
        "lexical" => Some(Box::new(Lexical::default())),
        "minilm" => {
            let dir = chatmill_index::minilm::resolve(None)?;
            Some(Box::new(
                chatmill_index::MiniLm::load(&dir).expect("model loads"),
            ))
        }
        _ => None,
    }
}
