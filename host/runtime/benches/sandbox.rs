//! Sandbox costs, printed as a table: compiling each built-in adapter, loading
//! it from the compiled cache, and the per-file overhead of a fresh sandbox
//! (instantiate + open + drain a tiny input).
//!
//! `cargo bench -p chatmill-runtime --bench sandbox`

#![allow(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::time::{Duration, Instant};

use chatmill_runtime::{AdapterOrigin, Input, Limits, Runtime};

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// A tiny valid input per adapter (the overhead, not the parsing, is measured).
fn tiny(id: &str) -> &'static [u8] {
    match id {
        "markdown" => b"---\n**Timestamp:** 2024-05-01T10:00:00Z\n**Model:** m\n**Turn:** 1\n\n**User:** hi\n\n**Assistant:** hello\n",
        "claude-code" => b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"},\"uuid\":\"u1\",\"sessionId\":\"s\",\"timestamp\":\"2024-05-01T10:00:00Z\"}\n",
        _ => b"[]",
    }
}

fn main() {
    let builtins = chatmill_builtin::ADAPTERS;
    let cache = tempfile::tempdir().unwrap();
    println!(
        "chatmill sandbox benchmark ({} built-in adapters)",
        builtins.len()
    );
    println!();
    println!(
        "{:<12} {:>9} {:>12} {:>12} {:>12}",
        "adapter", "wasm KiB", "compile", "cache miss", "cache hit"
    );
    for (name, wasm) in builtins {
        let uncached = Runtime::new(Limits::default(), None).unwrap();
        let t = Instant::now();
        uncached.load(AdapterOrigin::Builtin, wasm).unwrap();
        let compile = t.elapsed();

        let rt = Runtime::new(Limits::default(), Some(cache.path())).unwrap();
        let t = Instant::now();
        rt.load(AdapterOrigin::Builtin, wasm).unwrap();
        let miss = t.elapsed();
        // A new runtime (new engine), as at the next start-up.
        let rt = Runtime::new(Limits::default(), Some(cache.path())).unwrap();
        let n = 20;
        let t = Instant::now();
        for _ in 0..n {
            rt.load(AdapterOrigin::Builtin, wasm).unwrap();
        }
        let hit = t.elapsed() / n;
        println!(
            "{:<12} {:>9} {:>12} {:>12} {:>12}",
            name,
            wasm.len() / 1024,
            ms(compile),
            ms(miss),
            ms(hit)
        );
    }

    println!();
    println!("per-file sandbox overhead (fresh store + instantiate + open + drain a tiny input)");
    println!("{:<12} {:>12} {:>12}", "adapter", "per file", "sniff");
    let rt = Runtime::new(Limits::default(), Some(cache.path())).unwrap();
    for (name, wasm) in builtins {
        let adapter = rt.load(AdapterOrigin::Builtin, wasm).unwrap();
        let input = Input::from_bytes(format!("tiny.{name}"), tiny(name).to_vec());
        let n = 2000;
        // Warm up.
        let _ = rt.parse_all(&adapter, &input);
        let t = Instant::now();
        for _ in 0..n {
            let _ = std::hint::black_box(rt.parse_all(&adapter, &input));
        }
        let per_file = t.elapsed() / n;
        let head = tiny(name);
        let t = Instant::now();
        for _ in 0..n {
            let _ = std::hint::black_box(rt.sniff(&adapter, head, "tiny.json"));
        }
        let sniff = t.elapsed() / n;
        println!("{:<12} {:>12} {:>12}", name, us(per_file), us(sniff));
    }
}
