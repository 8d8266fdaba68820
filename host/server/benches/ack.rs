//! Ack latency of `turn` (p50/p95/p99/max) and turns/s against an
//! in-process server on a Unix socket with the embedded index: with the
//! built-in header writer (one client; several clients with the writer
//! taking one turn at a time, as `CHATMILL_SERVE_BATCH=1` does, and with
//! the turns waiting taken as one batch, the default), and with a header
//! model slower than its deadline (a writer that takes 3 s behind a 1.5 s
//! deadline: the turn is acked with a stand-in header and queued for
//! backfill).
//!
//! `cargo bench -p chatmill-server --bench ack`
//! (`CHATMILL_BENCH_TURNS`, default 240, `CHATMILL_BENCH_CLIENTS`, default
//! 4: 4 clients × 60 turns; `CHATMILL_BENCH_EMBEDDER=lexical`)

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its numbers and its set-up errors"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use chatmill_chunking::header::{
    Deadline, ExtractiveWriter, Header, HeaderError, HeaderInput, HeaderWriter,
};
use chatmill_index::{Embedder, Index, Lexical, MiniLm, SqliteStore, minilm};
use chatmill_server::client::Client;
use chatmill_server::{MAX_BATCH, ServerConfig, Services};
use serde_json::json;

/// A header model that always answers too late.
struct Slow(Duration);

impl HeaderWriter for Slow {
    fn write(&self, input: &HeaderInput<'_>) -> Result<Header, HeaderError> {
        std::thread::sleep(self.0);
        ExtractiveWriter.write(input)
    }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The real local model unless `CHATMILL_BENCH_EMBEDDER=lexical` (or no
/// model is installed: then the stand-in, and the output says so).
fn embedder() -> Arc<dyn Embedder> {
    let want_lexical = std::env::var("CHATMILL_BENCH_EMBEDDER").as_deref() == Ok("lexical");
    match minilm::resolve(None) {
        Some(dir) if !want_lexical => Arc::new(MiniLm::load(&dir).expect("model loads")),
        _ => Arc::new(Lexical::default()),
    }
}

fn run(
    label: &str,
    embedder: Arc<dyn Embedder>,
    header: Arc<dyn HeaderWriter>,
    clients: usize,
    turns: usize,
    max_batch: usize,
) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let root = dir.path().join("root");
    let socket = dir.path().join("s.sock");
    let store = SqliteStore::open(&root.join(".chatmill/index.sqlite3")).expect("store");
    let index = Arc::new(Index::new(Arc::new(store), embedder));
    let mut cfg = ServerConfig::new(&root, &socket);
    cfg.max_batch = max_batch;
    let shutdown = Arc::clone(&cfg.shutdown);
    let services = Services {
        index: Some(index),
        header,
        backfill: None,
        redactor: None,
        adapters: vec![],
        version: "bench".into(),
    };
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        chatmill_server::run(cfg, services, move |_| {
            let _ = ready_tx.send(());
        })
    });
    ready_rx.recv().expect("server ready");
    let started = Instant::now();
    let mut all: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let socket = &socket;
                s.spawn(move || {
                    let mut client = Client::unix(socket).expect("connect");
                    let mut lat = Vec::with_capacity(turns);
                    for t in 1..=turns {
                        let params = json!({
                            "session_id": format!("bench-{c}"),
                            "turn_index": t,
                            "user": format!("Client {c}, turn {t}: how should the cache invalidate entry {t} after a schema migration?"),
                            "assistant": "Version the keys with the schema hash, then let old entries expire. ".repeat(6),
                        });
                        let t0 = Instant::now();
                        client.call("turn", params).expect("turn acked");
                        lat.push(t0.elapsed());
                    }
                    lat
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("client"))
            .collect()
    });
    let wall = started.elapsed();
    shutdown.notify_one();
    server.join().expect("server thread").expect("server ran");
    all.sort();
    println!(
        "{label:<52} {:>5} turns ({clients} clients)  p50 {:>7.2?}  p95 {:>7.2?}  p99 {:>7.2?}  max {:>7.2?}  {:>6.0} turns/s",
        all.len(),
        pct(&all, 0.50),
        pct(&all, 0.95),
        pct(&all, 0.99),
        all[all.len() - 1],
        all.len() as f64 / wall.as_secs_f64()
    );
}

fn main() {
    let turns: usize = std::env::var("CHATMILL_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(240);
    let clients: usize = std::env::var("CHATMILL_BENCH_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let embedder = embedder();
    println!("embedder: {}", embedder.id());
    run(
        "built-in header writer, 1 client",
        embedder.clone(),
        Arc::new(ExtractiveWriter),
        1,
        turns,
        MAX_BATCH,
    );
    for (how, max_batch) in [("one at a time", 1), ("batched", MAX_BATCH)] {
        run(
            &format!("built-in header writer, {clients} clients, {how}"),
            embedder.clone(),
            Arc::new(ExtractiveWriter),
            clients,
            turns / clients.max(1),
            max_batch,
        );
    }
    let slow = Deadline {
        inner: Arc::new(Slow(Duration::from_secs(3))),
        deadline: Duration::from_millis(1500),
    };
    run(
        "3 s header model behind a 1.5 s deadline",
        embedder,
        Arc::new(slow),
        1,
        (turns / 20).max(5),
        MAX_BATCH,
    );
}
