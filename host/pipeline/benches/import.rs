//! The batch pipeline on a large synthetic export (default ≥ 100,000 pairs;
//! `CHATMILL_BENCH_PAIRS`), each stage in its own process so its peak memory
//! (VmHWM) is its own:
//! - `parse`: the sandboxed parser alone;
//! - `import`: parse, chunk, header (built-in writer), write, manifest;
//! - `indexed`: the same plus the embedded index, embeddings from the fast
//!   lexical stand-in (the pipeline's own cost);
//! - `model`: end to end with the real all-MiniLM-L6-v2 on the first
//!   `CHATMILL_BENCH_MODEL_PAIRS` pairs (default 3,000, 0 skips; the model embeds ~40
//!   texts/s here), reporting the share of the wall time spent inside the
//!   model — what the rest of the pipeline costs on top of it.
//!
//! Each stage also prints its busiest threads' CPU time and the serial
//! fraction: the busiest thread's CPU time over the stage's (what one core
//! would take) — what caps the import however many cores it has. The pool's
//! threads split their work by the cores there are (on 2 cores each holds
//! half of it), so the fraction of the busiest thread outside the pool is
//! printed beside it.
//!
//! `cargo bench -p chatmill-pipeline --bench import`

#![allow(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::path::{Path, PathBuf};

// The allocator the `chatmill` binary uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::time::Instant;

use chatmill_chunking::chunker::ChunkerConfig;
use chatmill_chunking::header::ExtractiveWriter;
use chatmill_chunking::render::RenderOptions;
use chatmill_pipeline::import::{self, ImportOptions, Services};
use chatmill_pipeline::processor::ProcessorConfig;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chatmill_index::{Embedder, Index, IndexError, Lexical, MiniLm, SqliteStore, minilm};
use chatmill_runtime::{AdapterSet, Builtin, Input, Limits, Runtime};

/// An embedder that counts the time spent inside another.
struct Timed<E> {
    inner: E,
    nanos: Arc<AtomicU64>,
}

impl<E: Embedder> Embedder for Timed<E> {
    fn id(&self) -> &str {
        self.inner.id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn is_fallback(&self) -> bool {
        self.inner.is_fallback()
    }
    fn is_instant(&self) -> bool {
        self.inner.is_instant()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let t = Instant::now();
        let out = self.inner.embed(texts);
        self.nanos
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// CPU seconds this process has used (user + system), from
/// `/proc/self/stat` (in USER_HZ, 100 per second on Linux): on a shared
/// machine a steadier figure than the wall time.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => (user + system) / 100.0,
        _ => f64::NAN,
    }
}

/// Every thread's CPU ticks (user + system, USER_HZ) by thread id, with
/// its name: sampled while a stage runs, so threads that end before it
/// (one input's parse and index threads) keep their last figure.
#[derive(Default)]
struct Threads(std::collections::HashMap<u64, (String, u64)>);

impl Threads {
    fn sample(&mut self) {
        let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
            return;
        };
        for e in dir.flatten() {
            let Ok(tid) = e.file_name().to_string_lossy().parse::<u64>() else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let Some((head, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let name = head.split_once('(').map_or("?", |(_, n)| n).to_string();
            // The fields after the name: state, ppid, …, utime (11), stime (12).
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
            if let (Some(u), Some(s)) = (ticks(11), ticks(12)) {
                let slot = self.0.entry(tid).or_insert((name, 0));
                slot.1 = slot.1.max(u + s);
            }
        }
    }

    /// Samples every 20 ms until `done`; the samples.
    fn watch(done: &std::sync::atomic::AtomicBool) -> Self {
        let mut t = Self::default();
        while !done.load(Ordering::Relaxed) {
            t.sample();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        t.sample();
        t
    }

    /// The busiest threads, and the serial fraction: the busiest thread's
    /// CPU time over the whole stage's (what one core would take).
    fn print(&self, name: &str, before: &Self, total_cpu: f64) {
        let mut by: Vec<(String, u64)> = self
            .0
            .iter()
            .map(|(tid, (n, t))| (n.clone(), t - before.0.get(tid).map_or(0, |b| b.1)))
            .filter(|t| t.1 > 0)
            .collect();
        by.sort_by_key(|t| std::cmp::Reverse(t.1));
        let shown: Vec<String> = by
            .iter()
            .take(6)
            .map(|(n, t)| format!("{n} {:.2} s", *t as f64 / 100.0))
            .collect();
        let busiest = by.first().map_or(0.0, |t| t.1 as f64 / 100.0);
        // The pool's threads share work that spreads over however many
        // cores there are (here each holds half of it); what caps the
        // import is the busiest thread that does not.
        let alone = by
            .iter()
            .find(|t| !t.0.starts_with("pool-"))
            .map_or((String::new(), 0.0), |t| (t.0.clone(), t.1 as f64 / 100.0));
        println!(
            "{name:<8} threads: {} (of {} with CPU time); serial fraction {busiest:.2} / {total_cpu:.2} s = {:.2}; outside the pool ({}) {:.2} / {total_cpu:.2} s = {:.2}",
            shown.join(", "),
            by.len(),
            busiest / total_cpu,
            alone.0,
            alone.1,
            alone.1 / total_cpu
        );
    }
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
    // Named, so the thread breakdown tells the pool from the main thread.
    let _ = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("pool-{i}"))
        .build_global();
    let (rt, set) = runtime(&work.join("cache"));
    let mut before = Threads::default();
    before.sample();
    let started = Instant::now();
    let cpu_before = cpu_secs();
    let done = std::sync::atomic::AtomicBool::new(false);
    let ((pairs, chunks), threads) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| Threads::watch(&done));
        let out = run_stage(name, export, work, (&rt, &set));
        done.store(true, Ordering::Relaxed);
        (out, sampler.join().expect("the sampler"))
    });
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu_secs() - cpu_before;
    println!(
        "{name:<8} {secs:>7.2} s  {:>9.0} pairs/s  {chunks:>7} chunks  peak RSS {:>6.1} MiB  CPU {cpu:.2} s ({:.2} cores, {:.1} µs per pair)",
        pairs as f64 / secs,
        peak_rss_mib(),
        cpu / secs,
        1e6 * cpu / pairs as f64
    );
    threads.print(name, &before, cpu);
}

/// What one stage does: the pairs it read and the chunks it wrote.
fn run_stage(
    name: &str,
    export: &Path,
    work: &Path,
    (rt, set): (&Runtime, &AdapterSet),
) -> (usize, usize) {
    let started = Instant::now();
    match name {
        "parse" => {
            let input = Input::from_path(export);
            let adapter = set.select(rt, &input, None).expect("recognized");
            let mut stream = rt.parse(adapter, &input).expect("parse");
            let mut pairs = 0usize;
            while let Some(c) = stream.next_conversation().expect("conversation") {
                pairs += c.pairs.len();
            }
            (pairs, 0)
        }
        "import" | "indexed" | "model" => {
            let root = work.join(format!("root-{name}"));
            let nanos = Arc::new(AtomicU64::new(0));
            let index = match name {
                "indexed" => Some(Index::new(
                    Arc::new(
                        SqliteStore::open(&root.join(".chatmill/index.sqlite3")).expect("store"),
                    ),
                    Arc::new(Timed {
                        inner: Lexical::default(),
                        nanos: Arc::clone(&nanos),
                    }),
                )),
                "model" => {
                    let dir = minilm::resolve(None).expect("a model (scripts/setup-model.sh)");
                    Some(Index::new(
                        Arc::new(
                            SqliteStore::open(&root.join(".chatmill/index.sqlite3"))
                                .expect("store"),
                        ),
                        Arc::new(Timed {
                            inner: MiniLm::load(&dir).expect("model loads"),
                            nanos: Arc::clone(&nanos),
                        }),
                    ))
                }
                _ => None,
            };
            let opts = ImportOptions {
                root: root.clone(),
                inputs: vec![export.to_path_buf()],
                adapter_id: None,
                processor: ProcessorConfig {
                    naming: Default::default(),
                    out_dir: root,
                    agent_id: "external".into(),
                    render: RenderOptions::default(),
                    chunker: ChunkerConfig::default(),
                    redaction: None,
                },
                reprocess: None,
                live: false,
            };
            let svc = Services {
                runtime: rt,
                adapters: set,
                header: &ExtractiveWriter,
                indexer: index.as_ref().map(|i| i as &dyn chatmill_index::Indexer),
                redactor: None,
            };
            let s = import::run(&svc, &opts, &mut |_| {}).expect("import");
            assert!(s.errors.is_empty(), "{s:?}");
            let pairs = (s.chunks_written + s.mechanical_excluded) as usize;
            let embed = nanos.load(Ordering::Relaxed) as f64 / 1e9;
            if index.is_some() {
                let wall = started.elapsed().as_secs_f64();
                println!(
                    "{name:<8} time inside the embedder {embed:.2} s of {wall:.2} s ({:.1} %); everything else {:.2} s",
                    100.0 * embed / wall,
                    wall - embed
                );
            }
            (pairs, s.chunks_written as usize)
        }
        other => panic!("unknown stage {other}"),
    }
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
    // `CHATMILL_BENCH_DIR` puts it elsewhere (e.g. /dev/shm: what the
    // pipeline costs without the file system's share).
    let base = std::env::var_os("CHATMILL_BENCH_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from);
    let guard = tempfile::tempdir_in(base).expect("temp dir");
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
    for name in ["parse", "import", "indexed"] {
        let status = std::process::Command::new(&me)
            .args(["--stage", name])
            .arg(&export)
            .arg(&work)
            .status()
            .expect("stage runs");
        assert!(status.success(), "stage {name} failed");
    }
    // End to end with the real model, on a smaller export of the same kind.
    let small: usize = std::env::var("CHATMILL_BENCH_MODEL_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    if small == 0 {
        return;
    }
    if minilm::resolve(None).is_none() {
        println!("model    skipped: no embedding model (run scripts/setup-model.sh)");
        return;
    }
    let export = work.join("small.json");
    let g = chatmill_synth::chatgpt_export(&export, chatmill_synth::Limit::Pairs(small))
        .expect("synthetic export");
    println!(
        "synthetic ChatGPT export for the real model: {} conversations, {} pairs",
        g.conversations, g.pairs
    );
    let status = std::process::Command::new(&me)
        .args(["--stage", "model"])
        .arg(&export)
        .arg(&work)
        .status()
        .expect("stage runs");
    assert!(status.success(), "stage model failed");
}
