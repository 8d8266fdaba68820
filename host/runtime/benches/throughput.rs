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

fn main() {
    let mb: usize = std::env::var("CHATMILL_BENCH_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let rounds: usize = std::env::var("CHATMILL_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversations.json");
    let t = Instant::now();
    let g = chatmill_synth::chatgpt_export(&path, chatmill_synth::Limit::Bytes(mb * 1_000_000))
        .expect("the synthetic export is written");
    let (convs, pairs) = (g.conversations, g.pairs);
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "generated {:.1} MB: {convs} conversations, {pairs} pairs in {:.1} s",
        size as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    let runtime = Runtime::new(Limits::default(), Some(dir.path())).unwrap();
    let wasm = chatmill_builtin::ADAPTERS
        .iter()
        .find(|(n, _)| *n == "chatgpt")
        .unwrap()
        .1;
    let adapter = runtime.load(AdapterOrigin::Builtin, wasm).unwrap();
    let input = Input::from_path(&path);

    let t = Instant::now();
    let encoding = input.detect_encoding().unwrap();
    println!(
        "host normalization pre-pass (encoding detection, a full UTF-8 validation read): {:?} in {:.0} ms ({:.0} MB/s)",
        encoding,
        t.elapsed().as_secs_f64() * 1e3,
        mbps(size, t.elapsed())
    );

    let (mut native, mut sandboxed, mut guest) = (Vec::new(), Vec::new(), Vec::new());
    let mut peak = 0usize;
    for round in 0..rounds {
        // Native: the same parser code, straight over a buffered file,
        // streamed in batches of 256 items like the host asks the sandbox.
        let t = Instant::now();
        let file =
            std::io::BufReader::with_capacity(64 * 1024, std::fs::File::open(&path).unwrap());
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
        native.push(mbps(size, d));

        // Sandboxed: normalization, the component, the boundary, validation.
        let t = Instant::now();
        let mut stream = runtime.parse(&adapter, &input).unwrap();
        let mut n_pairs = 0;
        while let Some(c) = stream.next_conversation().unwrap() {
            n_pairs += c.pairs.len();
        }
        peak = peak.max(stream.peak_memory);
        let in_guest = stream.guest_time;
        drop(stream);
        let d = t.elapsed();
        assert_eq!(n_pairs, pairs, "sandboxed pair count");
        sandboxed.push(mbps(size, d));
        guest.push(mbps(size, in_guest));
        println!(
            "round {}: native {:.0} MB/s, sandboxed end-to-end {:.0} MB/s, time inside the adapter {:.0} MB/s",
            round + 1,
            native[round],
            sandboxed[round],
            guest[round]
        );
    }
    let (native_all, sandboxed_all) = (native.clone(), sandboxed.clone());
    let best = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    println!();
    println!("{:<10} {:>10} {:>10}", "", "best MB/s", "median");
    println!(
        "{:<10} {:>10.0} {:>10.0}",
        "native",
        best(&native),
        median(native.clone())
    );
    println!(
        "{:<10} {:>10.0} {:>10.0}",
        "sandboxed",
        best(&sandboxed),
        median(sandboxed.clone())
    );
    println!(
        "{:<10} {:>10.0} {:>10.0}",
        "in-guest",
        best(&guest),
        median(guest.clone())
    );
    println!(
        "ratio sandboxed end-to-end / native: {:.2} (best) {:.2} (median)",
        best(&sandboxed) / best(&native),
        median(sandboxed) / median(native.clone()),
    );
    println!(
        "ratio parser in the sandbox (time inside adapter calls) / native: {:.2} (best) {:.2} (median)",
        best(&guest) / best(&native),
        median(guest) / median(native),
    );
    // The VM's speed drifts between rounds; a round's native and sandboxed
    // runs are back to back, so their ratio is the steadier figure.
    let per_round: Vec<f64> = sandboxed_all
        .iter()
        .zip(&native_all)
        .map(|(s, n)| s / n)
        .collect();
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
        peak as f64 / (1024.0 * 1024.0)
    );
}
