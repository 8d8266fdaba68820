//! Embedding throughput and latency of the local model (all-MiniLM-L6-v2 on
//! candle): texts/s at several batch sizes over ~53-word chat turns, and the
//! latency of one short query (what a search or an inline turn pays).
//! `cargo bench -p chatmill-index --bench embed`; the same texts in Python:
//! `python3 host/index/benches/embed_python.py` (see its header).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its numbers and its set-up errors"
)]

use std::time::{Duration, Instant};

use chatmill_index::{Embedder, MiniLm, minilm};

/// Deterministic ~53-word chat turns (the same generator as the Python side).
fn texts(n: usize) -> Vec<String> {
    const WORDS: [&str; 24] = [
        "nginx",
        "proxy",
        "timeout",
        "upload",
        "sourdough",
        "starter",
        "feed",
        "flour",
        "rust",
        "borrow",
        "checker",
        "vector",
        "loop",
        "server",
        "latency",
        "memory",
        "garden",
        "tomato",
        "water",
        "schedule",
        "python",
        "script",
        "error",
        "config",
    ];
    (0..n)
        .map(|i| {
            let mut s = format!("Question {i}: why does my");
            for j in 0..48 {
                s.push(' ');
                s.push_str(WORDS[(i * 7 + j * 5 + j / 3) % WORDS.len()]);
            }
            s.push('?');
            s
        })
        .collect()
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0
}

fn main() {
    let Some(dir) = minilm::resolve(None) else {
        eprintln!("error: no embedding model found\nhint: run scripts/setup-model.sh");
        std::process::exit(1);
    };
    let t = Instant::now();
    let model = MiniLm::load(&dir).expect("model loads");
    println!(
        "{} from {}: loaded in {:.0} ms",
        model.id(),
        dir.display(),
        t.elapsed().as_secs_f64() * 1000.0
    );
    let n: usize = std::env::var("CHATMILL_BENCH_TEXTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let all = texts(n);
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    model.embed(&refs[..8]).expect("warm-up");
    for batch in [1usize, 8, 32, 64] {
        let t = Instant::now();
        for group in refs.chunks(batch) {
            model.embed(group).expect("embed");
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "batch {batch:>2}: {:.1} texts/s ({n} texts of ~53 words in {s:.1} s)",
            n as f64 / s
        );
    }
    let queries = [
        "how do I fix nginx upload timeouts",
        "sourdough starter smells of acetone",
        "what did we decide about the garden schedule",
    ];
    let mut lat = Vec::new();
    for i in 0..60 {
        let t = Instant::now();
        model.embed(&[queries[i % queries.len()]]).expect("embed");
        lat.push(t.elapsed());
    }
    lat.sort();
    println!(
        "one short query: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        pct(&lat, 0.5),
        pct(&lat, 0.95),
        pct(&lat, 1.0)
    );
}
