//! Parse throughput of the same ChatGPT parser natively and inside the
//! sandbox, on a generated export (default 300 MB; `CHATMILL_BENCH_MB`).
//!
//! `cargo bench -p chatmill-runtime --bench throughput`

#![allow(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::time::{Duration, Instant};

use chatmill_adapter_sdk as sdk;

use chatmill_runtime::{AdapterOrigin, Input, Limits, Runtime};

fn mbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Throughput in MB/s of each round, and the guest's memory peak.
#[derive(Default)]
struct Rounds {
    native: Vec<f64>,
    sandboxed: Vec<f64>,
    /// Time inside the adapter's calls only.
    guest: Vec<f64>,
    peak: usize,
}

fn main() {
    let mb = env_or("CHATMILL_BENCH_MB", 300);
    let rounds = env_or("CHATMILL_BENCH_ROUNDS", 3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversations.json");
    let (size, pairs) = generate(&path, mb);

    let runtime = Runtime::new(Limits::default(), Some(dir.path())).unwrap();
    let wasm = chatmill_builtin::ADAPTERS
        .iter()
        .find(|(n, _)| *n == "chatgpt")
        .unwrap()
        .1;
    let adapter = runtime.load(AdapterOrigin::Builtin, wasm).unwrap();
    let input = Input::from_path(&path);
    prepass(&input, size);

    let mut r = Rounds::default();
    for round in 0..rounds {
        r.native.push(mbps(size, native_round(&path, size, pairs)));
        let (d, in_guest, peak) = sandboxed_round(&runtime, &adapter, &input, pairs);
        r.sandboxed.push(mbps(size, d));
        r.guest.push(mbps(size, in_guest));
        r.peak = r.peak.max(peak);
        println!(
            "round {}: native {:.0} MB/s, sandboxed end-to-end {:.0} MB/s, time inside the adapter {:.0} MB/s",
            round + 1,
            r.native[round],
            r.sandboxed[round],
            r.guest[round]
        );
    }
    summary(&r);
}

/// The variable `name` as a number, or `default`.
fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Writes a synthetic export of about `mb` MB to `path`: its size in bytes
/// and its number of pairs.
fn generate(path: &std::path::Path, mb: usize) -> (u64, usize) {
    let t = Instant::now();
    let g = chatmill_synth::chatgpt_export(path, chatmill_synth::Limit::Bytes(mb * 1_000_000))
        .expect("the synthetic export is written");
    let (convs, pairs) = (g.conversations, g.pairs);
    let size = std::fs::metadata(path).unwrap().len();
    println!(
        "generated {:.1} MB: {convs} conversations, {pairs} pairs in {:.1} s",
        size as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    (size, pairs)
}

/// Times the host's normalization pre-pass over the input.
fn prepass(input: &Input, size: u64) {
    let t = Instant::now();
    let encoding = input.detect_encoding().unwrap();
    println!(
        "host normalization pre-pass (encoding detection, a full UTF-8 validation read): {:?} in {:.0} ms ({:.0} MB/s)",
        encoding,
        t.elapsed().as_secs_f64() * 1e3,
        mbps(size, t.elapsed())
    );
}

/// Native: the same parser code, straight over a buffered file, streamed
/// in batches of 256 items like the host asks the sandbox.
fn native_round(path: &std::path::Path, size: u64, pairs: usize) -> Duration {
    let t = Instant::now();
    let file = std::io::BufReader::with_capacity(64 * 1024, std::fs::File::open(path).unwrap());
    let mut session = <chatmill_adapter_chatgpt::ChatGpt as sdk::Adapter>::open(
        sdk::Input::new("conversations.json", Some(size), Box::new(file)),
        &[],
    )
    .unwrap();
    let mut n_pairs = 0;
    loop {
        let batch = session.next_batch(256).unwrap();
        if batch.is_empty() {
            break;
        }
        n_pairs += batch
            .iter()
            .filter(|i| matches!(i, sdk::Item::Pair(_)))
            .count();
    }
    drop(session);
    let d = t.elapsed();
    assert_eq!(n_pairs, pairs, "native pair count");
    d
}

/// Sandboxed: normalization, the component, the boundary, validation.
/// The time end to end, the time inside the adapter, the guest's memory
/// peak.
fn sandboxed_round(
    runtime: &Runtime,
    adapter: &chatmill_runtime::LoadedAdapter,
    input: &Input,
    pairs: usize,
) -> (Duration, Duration, usize) {
    let t = Instant::now();
    let mut stream = runtime.parse(adapter, input).unwrap();
    let mut n_pairs = 0;
    while let Some(c) = stream.next_conversation().unwrap() {
        n_pairs += c.pairs.len();
    }
    let peak = stream.peak_memory;
    let in_guest = stream.guest_time;
    drop(stream);
    let d = t.elapsed();
    assert_eq!(n_pairs, pairs, "sandboxed pair count");
    (d, in_guest, peak)
}

/// The table of best and median figures, the ratios, the memory peak.
fn summary(r: &Rounds) {
    let (native, sandboxed, guest) = (&r.native, &r.sandboxed, &r.guest);
    let best = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    println!();
    println!("{:<10} {:>10} {:>10}", "", "best MB/s", "median");
    println!(
        "{:<10} {:>10.0} {:>10.0}",
        "native",
        best(native),
        median(native.clone())
    );
    println!(
        "{:<10} {:>10.0} {:>10.0}",
        "sandboxed",
        best(sandboxed),
        median(sandboxed.clone())
    );
    println!(
        "{:<10} {:>10.0} {:>10.0}",
        "in-guest",
        best(guest),
        median(guest.clone())
    );
    println!(
        "ratio sandboxed end-to-end / native: {:.2} (best) {:.2} (median)",
        best(sandboxed) / best(native),
        median(sandboxed.clone()) / median(native.clone()),
    );
    println!(
        "ratio parser in the sandbox (time inside adapter calls) / native: {:.2} (best) {:.2} (median)",
        best(guest) / best(native),
        median(guest.clone()) / median(native.clone()),
    );
    // The VM's speed drifts between rounds; a round's native and sandboxed
    // runs are back to back, so their ratio is the steadier figure.
    let per_round: Vec<f64> = sandboxed.iter().zip(native).map(|(s, n)| s / n).collect();
    println!(
        "ratio per round (sandboxed / native): {} → median {:.2}",
        per_round
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" "),
        median(per_round.clone())
    );
    println!(
        "guest memory peak {:.1} MiB",
        r.peak as f64 / (1024.0 * 1024.0)
    );
}
