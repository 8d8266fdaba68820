//! Search latency of the embedded store over N chunks (default 100,000;
//! `CHATMILL_BENCH_CHUNKS`): insert rate, then p50/p95/p99 per mode.
//!
//! `cargo bench -p chatmill-index --bench search` (`CHATMILL_BENCH_ONLY=keyword`:
//! only the cases whose label contains `keyword`).

#![allow(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use chatmill_index::{
    ChunkMeta, ChunkRecord, Embedder, Filter, Index, Indexer, Lexical, Mode, SearchRequest,
    SqliteStore, Store,
};

const WORDS: &[&str] = &[
    "nginx",
    "timeout",
    "upload",
    "rust",
    "borrow",
    "checker",
    "sourdough",
    "starter",
    "kubernetes",
    "probe",
    "python",
    "asyncio",
    "cache",
    "invalidate",
    "schema",
    "migration",
    "git",
    "rebase",
    "docker",
    "volume",
    "postgres",
    "index",
    "vacuum",
    "react",
    "hook",
    "state",
    "bread",
    "oven",
];

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn report(label: &str, lat: &mut [Duration]) {
    println!(
        "{label:<34} p50 {:>8.2?}  p95 {:>8.2?}  p99 {:>8.2?}",
        pct(lat, 0.5),
        pct(lat, 0.95),
        pct(lat, 0.99)
    );
}

fn main() {
    let n: usize = std::env::var("CHATMILL_BENCH_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let store = Arc::new(SqliteStore::open(&dir.path().join("index.sqlite3")).expect("store"));
    let embedder = Arc::new(Lexical::default());
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let started = Instant::now();
    fill(&store, &embedder, dir.path(), n, &mut seed);
    let secs = started.elapsed().as_secs_f64();
    println!(
        "inserted {n} chunks in {secs:.1} s ({:.0}/s, lexical embedding and chunk files included)",
        n as f64 / secs
    );
    let index = Index::new(store, embedder).with_documents(dir.path());
    assert_eq!(index.count().expect("count") as usize, n);
    searches(&index, n);
    inline_turns(&index, &mut seed);
}

/// The next number of the xorshift sequence `seed` is at.
fn rnd(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// `n` chunks, their files under `dir` and their records in `store`.
fn fill(store: &SqliteStore, embedder: &Lexical, dir: &std::path::Path, n: usize, seed: &mut u64) {
    let mut rnd = || rnd(seed);
    for batch in 0..n.div_ceil(1000) {
        let mut records = Vec::new();
        let mut texts = Vec::new();
        for i in batch * 1000..((batch + 1) * 1000).min(n) {
            // Two topic words and ten from a 20,000-word vocabulary: term
            // frequencies closer to real text than 28 words repeated.
            let mut words: Vec<String> = (0..2)
                .map(|_| WORDS[(rnd() % WORDS.len() as u64) as usize].to_string())
                .collect();
            words.extend((0..10).map(|_| format!("w{}", rnd() % 20_000)));
            let text = words.join(" ");
            records.push(ChunkRecord {
                chunk_id: format!("chatgpt-{i:012x}-001-2025-01-01"),
                embed_text: text.clone(),
                document: format!(
                    "---\nchunk_id: x\n---\n\n## Context\n\n{text}\n\n## Exchange\n\n{text} {text}"
                ),
                meta: ChunkMeta {
                    timestamp: 1_700_000_000 + i as i64 * 60,
                    platform: ["chatgpt", "claude", "local"][i % 3].into(),
                    agent_id: ["external", "user"][i % 2].into(),
                    conversation_id: format!("conv-{}", i / 20),
                    project: None,
                    title: None,
                    topics: vec![],
                    model: "m".into(),
                    turn_range: "1".into(),
                    source_file: "f".into(),
                    path: format!("{i}.md"),
                },
            });
            texts.push(text);
        }
        // The chunk files, which a hit's text is read from (the store keeps
        // no copy of it).
        for r in &records {
            std::fs::write(dir.join(&r.meta.path), &r.document).expect("chunk file");
        }
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&refs).expect("embed");
        store
            .upsert(&records, &vectors, embedder.id())
            .expect("upsert");
    }
}

/// p50/p95/p99 of 200 searches per mode and filter.
fn searches(index: &Index, n: usize) {
    let filtered = Filter {
        platform: Some("claude".into()),
        since: Some(1_700_000_000 + (n as i64 * 60) / 2),
        ..Filter::default()
    };
    let cases: Vec<(&str, Mode, Filter)> = vec![
        ("semantic (exact kNN)", Mode::Semantic, Filter::default()),
        (
            "semantic + platform/time filter",
            Mode::Semantic,
            filtered.clone(),
        ),
        ("keyword (BM25)", Mode::Keyword, Filter::default()),
        ("hybrid", Mode::Hybrid, Filter::default()),
        ("hybrid + filter", Mode::Hybrid, filtered),
        // The query ends "in December 2023": the rankings run again within
        // that month (about half of these chunks' dates) and join the fusion.
        ("hybrid + time phrase", Mode::Hybrid, Filter::default()),
        // A small scope: its common words are counted and dropped.
        (
            "hybrid, one conversation",
            Mode::Hybrid,
            Filter {
                conversation_id: Some(format!("conv-{}", n / 40)),
                ..Filter::default()
            },
        ),
        (
            "keyword, one conversation",
            Mode::Keyword,
            Filter {
                conversation_id: Some(format!("conv-{}", n / 40)),
                ..Filter::default()
            },
        ),
        (
            "semantic, one conversation",
            Mode::Semantic,
            Filter {
                conversation_id: Some(format!("conv-{}", n / 40)),
                ..Filter::default()
            },
        ),
        ("recent", Mode::Recent, Filter::default()),
    ];
    // Warm the in-memory vectors once (loaded on first vector search).
    let t = Instant::now();
    index.search(&SearchRequest::new("nginx")).expect("search");
    println!("first search (loads the vectors): {:.1?}", t.elapsed());
    // `CHATMILL_BENCH_ONLY=<text>`: only the cases whose label contains it.
    let only = std::env::var("CHATMILL_BENCH_ONLY").unwrap_or_default();
    for (label, mode, filter) in cases {
        if !label.contains(only.as_str()) {
            continue;
        }
        let mut lat = Vec::new();
        for q in 0..200 {
            let phrase = if label.contains("time phrase") {
                " in December 2023"
            } else {
                ""
            };
            let mut req = SearchRequest::new(&format!(
                "{} {} problem{phrase}",
                WORDS[q % WORDS.len()],
                WORDS[(q * 7) % WORDS.len()]
            ));
            req.mode = mode;
            req.filter = filter.clone();
            let t = Instant::now();
            let found = index.search(&req).expect("search");
            lat.push(t.elapsed());
            assert!(
                found.hits.iter().all(|h| !h.document.is_empty()),
                "every hit has its text"
            );
        }
        report(label, &mut lat);
    }
}

/// Inline mode: every turn writes a chunk, and the next query must find
/// it without reloading the in-memory vectors.
fn inline_turns(index: &Index, seed: &mut u64) {
    let mut rnd = || rnd(seed);
    let (mut write, mut lat) = (Vec::new(), Vec::new());
    for t in 0..100 {
        let text = format!("{} turn{t} w{}", WORDS[t % WORDS.len()], rnd() % 20_000);
        let record = ChunkRecord {
            chunk_id: format!("local-inline-{t:04}"),
            embed_text: text.clone(),
            document: text.clone(),
            meta: ChunkMeta {
                timestamp: 1_800_000_000 + t as i64,
                platform: "local".into(),
                agent_id: "agent".into(),
                conversation_id: "inline".into(),
                project: None,
                title: None,
                topics: vec![],
                model: "m".into(),
                turn_range: format!("{t}"),
                source_file: "f".into(),
                path: format!("inline-{t}.md"),
            },
        };
        let started = Instant::now();
        index.index(&[record]).expect("index");
        write.push(started.elapsed());
        let started = Instant::now();
        let hits = index
            .search(&SearchRequest::new(&format!("turn{t}")))
            .expect("search");
        lat.push(started.elapsed());
        assert_eq!(
            hits.hits.first().map(|h| h.chunk_id.as_str()),
            Some(format!("local-inline-{t:04}").as_str())
        );
    }
    report("write one chunk (inline turn)", &mut write);
    report("hybrid, just after that write", &mut lat);
}
