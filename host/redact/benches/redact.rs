//! Throughput of `Redactor::redact` on one core, on the shared corpus
//! (every UTF-8 file: chat exports, agent sessions, LoCoMo), repeated to
//! at least 50 MB per measurement:
//!
//! - `clean chunks`: the corpus cut at line ends into ~8 KB pieces (the
//!   size of a chunk file or a long message), pieces with a finding left
//!   out: the no-secret path the pipeline takes for almost every text;
//! - `clean files`: whole corpus files (up to several MB each) at once;
//! - `planted chunks`: the clean chunks with about 3 fake secrets per MB
//!   (every specific, structured and generic kind, in their contexts).
//!
//! Run: `cargo bench -p chatmill-redact --bench redact`.

#![allow(clippy::print_stdout, reason = "a benchmark prints its numbers")]

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Instant;

use chatmill_redact::{Config, Key, Redactor};
use support::planted::{self, Rng};

const TARGET_BYTES: usize = 50 << 20;
const CHUNK: usize = 8 << 10;

fn main() {
    let files = support::corpus::text_files(&support::corpus::corpus_dir());
    let r = Redactor::new(Key::from_bytes([9; 32]), &Config::default()).expect("rules compile");
    let started = Instant::now();
    let _warm = Redactor::new(Key::from_bytes([9; 32]), &Config::default()).expect("compile");
    println!(
        "Redactor::new: {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let texts: Vec<&str> = files.iter().map(|(_, t)| t.as_str()).collect();
    let clean: Vec<&str> = texts
        .iter()
        .flat_map(|t| chunks(t))
        .filter(|c| r.find(c).is_empty())
        .collect();
    let planted = plant(&clean);
    measure(&r, "clean chunks (~8 KB)", &clean);
    measure(&r, "clean files (whole)", &texts);
    let found = measure(&r, "planted chunks (~3 secrets/MB)", &planted);
    println!("planted: {found} secrets replaced per pass");
}

/// `text` cut after the first newline past every `CHUNK` bytes.
fn chunks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > CHUNK {
        let from = rest.ceil_char_boundary(CHUNK);
        let cut = rest[from..].find('\n').map_or(rest.len(), |i| from + i + 1);
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The clean chunks, every 40th with a planted secret appended.
fn plant(clean: &[&str]) -> Vec<String> {
    let mut rng = Rng::new(2024);
    let mut pool = Vec::new();
    let mut out = Vec::with_capacity(clean.len());
    for (i, c) in clean.iter().enumerate() {
        if i % 40 != 0 {
            out.push((*c).to_owned());
            continue;
        }
        if pool.is_empty() {
            pool = planted::specific(&mut rng);
            pool.extend(planted::structured(&mut rng));
            pool.push(planted::generic(&mut rng));
        }
        let sample = pool.pop().expect("refilled");
        let contexts = planted::contexts(&sample);
        let (_, text) = &contexts[rng.below(contexts.len())];
        out.push(format!("{c}\n{text}\n"));
    }
    out
}

/// Redacts `texts` repeatedly until `TARGET_BYTES`, prints MB/s; returns
/// the secrets replaced in one pass.
fn measure<S: AsRef<str>>(r: &Redactor, label: &str, texts: &[S]) -> u32 {
    let bytes: usize = texts.iter().map(|t| t.as_ref().len()).sum();
    let passes = TARGET_BYTES.div_ceil(bytes).max(1);
    let mut found = 0u32;
    let started = Instant::now();
    for pass in 0..passes {
        for t in texts {
            let out = r.redact(t.as_ref());
            if pass == 0 {
                found += out.counts.values().sum::<u32>();
            }
            std::hint::black_box(&out);
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let mb = (bytes * passes) as f64 / 1e6;
    println!(
        "{label}: {} texts, {:.1} MB x {passes} passes in {secs:.2} s = {:.0} MB/s",
        texts.len(),
        bytes as f64 / 1e6,
        mb / secs
    );
    found
}
