//! Embedding throughput and latency of the local model (all-MiniLM-L6-v2 on
//! candle): texts/s at several batch sizes over ~53-word chat turns, and the
//! latency of one short query (what a search or an inline turn pays).
//! f32 and int8 (where the CPU has VNNI) side by side with the Python stacks
//! on the same texts in the same run (`embed_python.py`, when
//! `scripts/setup-embed-bench.sh` has installed them), and the int8 quality
//! guard (cosine ≥ 0.995 to f32 on 1,000 LoCoMo turns).
//! `cargo bench -p chatmill-index --bench embed`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its numbers and its set-up errors"
)]

use std::time::{Duration, Instant};

use chatmill_index::minilm::Precision;
use chatmill_index::{Embedder, MiniLm, StaticModel, minilm};

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

/// Texts/s embedding `refs` in calls of `batch` texts.
fn throughput(model: &MiniLm, refs: &[&str], batch: usize) -> f64 {
    let t = Instant::now();
    for group in refs.chunks(batch) {
        model.embed(group).expect("embed");
    }
    refs.len() as f64 / t.elapsed().as_secs_f64()
}

/// p50 and p95 of embedding one short query, in ms.
fn query_latency(model: &MiniLm) -> (f64, f64) {
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
    (pct(&lat, 0.5), pct(&lat, 0.95))
}

const BATCHES: [usize; 4] = [1, 8, 32, 64];

fn main() {
    let Some(dir) = minilm::resolve(None) else {
        eprintln!("error: no embedding model found\nhint: run scripts/setup-model.sh");
        std::process::exit(1);
    };
    let n: usize = std::env::var("CHATMILL_BENCH_TEXTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    if std::env::var_os("CHATMILL_BENCH_QUALITY_ONLY").is_some() {
        quality_guard(&dir);
        return;
    }
    let all = texts(n);
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let mut best = Vec::new();
    for (name, precision) in [
        ("chatmill f32", Precision::Exact),
        ("chatmill fast", Precision::Fast),
    ] {
        let t = Instant::now();
        let model = MiniLm::load_with(&dir, precision).expect("model loads");
        let name = if model.quantize_now().expect("quantize") {
            "chatmill int8"
        } else {
            name
        };
        println!(
            "{name}: {} from {} loaded in {:.0} ms",
            model.id(),
            dir.display(),
            t.elapsed().as_secs_f64() * 1000.0
        );
        model.embed(&refs[..8]).expect("warm-up");
        for batch in BATCHES {
            let rate = throughput(&model, &refs, batch);
            println!("{name} batch {batch:>2}: {rate:.1} texts/s ({n} texts of ~53 words)");
            if batch == 32 {
                best.push((name.to_string(), rate));
            }
        }
        let (p50, p95) = query_latency(&model);
        println!("{name} one short query: p50 {p50:.1} ms, p95 {p95:.1} ms");
    }
    best.push(static_model(&dir, &refs));
    best.extend(python_baselines(&dir));
    quality_guard(&dir);
    println!("\nbatch 32, texts/s, this run:");
    for (name, rate) in &best {
        println!("  {name:<28} {rate:>7.1}");
    }
    let ours = best
        .iter()
        .filter(|(n, _)| n.starts_with("chatmill") && !n.contains("static"))
        .map(|b| b.1)
        .fold(0.0, f64::max);
    if let Some(py) = best
        .iter()
        .filter(|(n, _)| !n.starts_with("chatmill"))
        .map(|b| b.1)
        .reduce(f64::max)
    {
        println!(
            "chatmill's fastest MiniLM / Python's fastest: {:.2}×",
            ours / py
        );
    }
}

/// The static model distilled from MiniLM (distilled and cached on first
/// use): its batch-32 rate.
fn static_model(dir: &std::path::Path, refs: &[&str]) -> (String, f64) {
    let t = Instant::now();
    let model = StaticModel::load(dir).expect("static model");
    println!(
        "chatmill static: {} ready in {:.1} s (distilled once, then read from its cache)",
        model.id(),
        t.elapsed().as_secs_f64()
    );
    let mut rate = 0.0;
    for batch in BATCHES {
        let t = Instant::now();
        for group in refs.chunks(batch) {
            model.embed(group).expect("embed");
        }
        let r = refs.len() as f64 / t.elapsed().as_secs_f64();
        println!("chatmill static batch {batch:>2}: {r:.0} texts/s");
        if batch == 32 {
            rate = r;
        }
    }
    ("chatmill static (not a transformer)".into(), rate)
}

/// Runs `embed_python.py` (onnxruntime int8, sentence-transformers, numpy)
/// when `scripts/setup-embed-bench.sh` has installed its venv; returns its
/// batch-32 rates.
fn python_baselines(dir: &std::path::Path) -> Vec<(String, f64)> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| home.map(|h| h.join(".cache")));
    let Some(venv) = cache.map(|c| c.join("chatmill/embed-bench")) else {
        return Vec::new();
    };
    let python = venv.join("bin/python");
    if !python.is_file() {
        println!("(no Python baselines: run scripts/setup-embed-bench.sh)");
        return Vec::new();
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/embed_python.py");
    let output = std::process::Command::new(python)
        .arg(script)
        .arg(dir)
        .arg(venv.join("int8/model.onnx"))
        .env("CHATMILL_BENCH_TEXTS", refs_len())
        .output()
        .expect("python runs");
    let text = String::from_utf8_lossy(&output.stdout);
    print!("{text}");
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    }
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(" batch 32: ")?;
            let rate = rest.split_whitespace().next()?.parse().ok()?;
            Some((name.to_string(), rate))
        })
        .collect()
}

fn refs_len() -> String {
    std::env::var("CHATMILL_BENCH_TEXTS").unwrap_or_else(|_| "256".into())
}

/// The int8 vectors against the f32 ones on 1,000 real chat turns (LoCoMo's
/// dialogue): exits non-zero when any cosine falls below 0.995.
fn quality_guard(dir: &std::path::Path) {
    let exact = MiniLm::load_with(dir, Precision::Exact).expect("model loads");
    let fast = MiniLm::load_with(dir, Precision::Fast).expect("model loads");
    if !fast.quantize_now().expect("quantize") {
        println!("(no int8 on this CPU: the fast path is the f32 one)");
        return;
    }
    let turns = locomo_turns(1000);
    let refs: Vec<&str> = turns.iter().map(String::as_str).collect();
    let a = exact.embed(&refs).expect("embed");
    let b = fast.embed(&refs).expect("embed");
    let cos: Vec<f32> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| x.iter().zip(y).map(|(p, q)| p * q).sum())
        .collect();
    let min = cos.iter().copied().fold(1.0, f32::min);
    let mean = cos.iter().sum::<f32>() / cos.len() as f32;
    println!(
        "quality: int8 vs f32 cosine over {} LoCoMo turns: min {min:.4}, mean {mean:.5}",
        cos.len()
    );
    if min < 0.995 {
        eprintln!("error: int8 vectors fall below cosine 0.995 to the f32 ones");
        std::process::exit(1);
    }
}

/// The first `n` dialogue turns of the LoCoMo corpus.
fn locomo_turns(n: usize) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpus/locomo/locomo10.json");
    let path = std::env::var_os("CHATMILL_LOCOMO").map_or(path, std::path::PathBuf::from);
    let data: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&path).expect("LoCoMo corpus")).expect("json");
    let mut out = Vec::new();
    for sample in data.as_array().into_iter().flatten() {
        let Some(conv) = sample.get("conversation").and_then(|c| c.as_object()) else {
            continue;
        };
        for (key, session) in conv {
            if !key.starts_with("session_") || key.ends_with("date_time") {
                continue;
            }
            for turn in session.as_array().into_iter().flatten() {
                if let Some(t) = turn.get("text").and_then(|t| t.as_str()) {
                    out.push(t.to_string());
                }
            }
        }
    }
    out.truncate(n);
    out
}
