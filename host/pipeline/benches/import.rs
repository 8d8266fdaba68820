//! The batch pipeline on a large synthetic export (default ≥ 100,000 pairs;
//! `CHATMILL_BENCH_PAIRS`): parse only, then the whole import (parse, chunk,
//! header, write, manifest) with the built-in header writer, each stage in
//! its own process so its peak memory (VmHWM) is its own.
//!
//! `cargo bench -p chatmill-pipeline --bench import`

#![allow(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::path::{Path, PathBuf};
use std::time::Instant;

use chatmill_pipeline::chunker::ChunkerConfig;
use chatmill_pipeline::header::ExtractiveWriter;
use chatmill_pipeline::import::{self, ImportOptions, Services};
use chatmill_pipeline::processor::ProcessorConfig;
use chatmill_pipeline::render::RenderOptions;
use chatmill_runtime::{AdapterSet, Builtin, Input, Limits, Runtime};

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn runtime(cache: &Path) -> (Runtime, AdapterSet) {
    let rt = Runtime::new(Limits::default(), Some(cache)).expect("runtime");
    let builtins: Vec<Builtin> = chatmill_builtin::ADAPTERS
        .iter()
        .map(|(name, wasm)| Builtin { name, wasm })
        .collect();
    let set = AdapterSet::load(&rt, &builtins, None, &[]).expect("adapters");
    (rt, set)
}

/// One stage, in this process; prints one result line.
fn stage(name: &str, export: &Path, work: &Path) {
    let (rt, set) = runtime(&work.join("cache"));
    let started = Instant::now();
    let (pairs, chunks) = match name {
        "parse" => {
            let input = Input::from_path(export);
            let adapter = set.select(&rt, &input, None).expect("recognized");
            let mut stream = rt.parse(adapter, &input).expect("parse");
            let mut pairs = 0usize;
            while let Some(c) = stream.next_conversation().expect("conversation") {
                pairs += c.pairs.len();
            }
            (pairs, 0)
        }
        "import" => {
            let root = work.join("root");
            let opts = ImportOptions {
                root: root.clone(),
                inputs: vec![export.to_path_buf()],
                format: None,
                processor: ProcessorConfig {
                    naming: Default::default(),
                    out_dir: root,
                    agent_id: "external".into(),
                    render: RenderOptions::default(),
                    chunker: ChunkerConfig::default(),
                },
            };
            let svc = Services {
                runtime: &rt,
                adapters: &set,
                header: &ExtractiveWriter,
                indexer: None,
            };
            let s = import::run(&svc, &opts, &mut |_| {}).expect("import");
            assert!(s.errors.is_empty(), "{s:?}");
            let pairs = (s.chunks_written + s.mechanical_excluded) as usize;
            (pairs, s.chunks_written as usize)
        }
        other => panic!("unknown stage {other}"),
    };
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{name:<8} {secs:>7.2} s  {:>9.0} pairs/s  {chunks:>7} chunks  peak RSS {:>6.1} MiB",
        pairs as f64 / secs,
        peak_rss_mib()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--stage") {
        stage(
            &args[i + 1],
            Path::new(&args[i + 2]),
            Path::new(&args[i + 3]),
        );
        return;
    }
    let pairs: usize = std::env::var("CHATMILL_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    // Not /tmp: on this machine its ext4 block groups are full of recently
    // deleted inodes, which makes every file creation scan (2.7k files/s
    // there against 16.6k/s elsewhere on the same disk).
    let guard = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let work = guard.path().to_path_buf();
    if std::env::var_os("CHATMILL_BENCH_KEEP").is_some() {
        // Keep the export and the root for a look (or to profile one stage:
        // `BENCH --stage import EXPORT WORK`).
        println!("work dir (kept): {}", guard.keep().display());
    }
    let export: PathBuf = work.join("conversations.json");
    let g = chatmill_synth::chatgpt_export(&export, chatmill_synth::Limit::Pairs(pairs))
        .expect("synthetic export");
    println!(
        "synthetic ChatGPT export: {} conversations, {} pairs, {:.1} MB",
        g.conversations,
        g.pairs,
        g.bytes as f64 / 1e6
    );
    let me = std::env::current_exe().expect("own path");
    // Compile the adapters once, so no stage pays for it.
    runtime(&work.join("cache"));
    for name in ["parse", "import"] {
        let status = std::process::Command::new(&me)
            .args(["--stage", name])
            .arg(&export)
            .arg(&work)
            .status()
            .expect("stage runs");
        assert!(status.success(), "stage {name} failed");
    }
}
