//! Upsert throughput into a real ChromaDB server: chatmill's thin client
//! (base64 vectors, batches under the server's limits, the pipeline's
//! 256-record index batches) against the official Python client adding the
//! same records to the same server; then kNN queries per second of both
//! clients on the collection the Python client filled (same vectors).
//! `cargo bench -p chatmill-index --bench chroma` (needs
//! `scripts/setup-chroma.sh`; `CHATMILL_BENCH_RECORDS`, default 10,000).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its numbers and its set-up errors"
)]

#[path = "../tests/support/chroma.rs"]
mod chroma;

use std::sync::Arc;
use std::time::Instant;

use chatmill_index::{
    ChromaConfig, ChromaStore, ChunkMeta, ChunkRecord, Embedder, Index, Indexer, Lexical, Store,
};

fn main() {
    let n: usize = std::env::var("CHATMILL_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let Some(server) = chroma::start() else {
        eprintln!("error: no chroma server\nhint: run scripts/setup-chroma.sh");
        std::process::exit(1);
    };
    let records = records(n);
    // Vectors made once, outside the timing, so both clients send the same.
    let embedder = Lexical::default();
    let texts: Vec<&str> = records.iter().map(|r| r.embed_text.as_str()).collect();
    let vectors = embedder.embed(&texts).expect("embed");
    let bench = Bench {
        server,
        records,
        vectors,
        embedder,
    };
    bench.in_batches();
    bench.in_one_call();
    bench.through_index();
    bench.python_client();
    bench.queries("python_client");
}

/// Queries run against each collection: the first records' own vectors.
const QUERIES: usize = 200;

/// One server, the records and their vectors.
struct Bench {
    server: chroma::Server,
    records: Vec<ChunkRecord>,
    vectors: Vec<Vec<f32>>,
    embedder: Lexical,
}

/// `n` records on eight topics, ten to a conversation.
fn records(n: usize) -> Vec<ChunkRecord> {
    let topics = [
        "nginx",
        "sourdough",
        "rust",
        "garden",
        "taxes",
        "travel",
        "python",
        "music",
    ];
    (0..n)
        .map(|i| {
            let t = topics[i % topics.len()];
            let text = format!("Exchange {i} about {t}: the user asked how to handle {t} case {} and the assistant answered with steps.", i * 7919 % 1000);
            ChunkRecord {
                chunk_id: format!("bench-{i:06}"),
                embed_text: text.clone(),
                document: format!("---\nchunk_id: bench-{i:06}\n---\n## Context\n{text}\n## Exchange\n**User:**\n{text}\n**Assistant:**\n{}", text.repeat(3)),
                meta: ChunkMeta {
                    timestamp: 1_700_000_000 + i as i64 * 60,
                    platform: "chatgpt".into(),
                    agent_id: "external".into(),
                    conversation_id: format!("conv-{}", i / 10),
                    project: None,
                    title: Some(format!("About {t}")),
                    topics: vec![t.into(), "bench".into()],
                    model: "gpt-4o".into(),
                    turn_range: format!("{}", i % 10 + 1),
                    source_file: "raw/conversations.json".into(),
                    path: format!("bench-{i:06}.md"),
                },
            }
        })
        .collect()
}

impl Bench {
    /// The pipeline's way: batches of 256 records.
    fn in_batches(&self) {
        let n = self.records.len();
        let store = self.store(None);
        let secs = seconds(|| {
            for (recs, vecs) in self.records.chunks(256).zip(self.vectors.chunks(256)) {
                store
                    .upsert(recs, vecs, self.embedder.id())
                    .expect("upsert");
            }
        });
        assert_eq!(store.count().expect("count"), n as u64);
        println!(
            "chatmill client: {n} records in {secs:.2} s = {:.0} records/s (batches of 256, base64 vectors)",
            n as f64 / secs
        );
    }

    /// One call: the client splits by the server's max batch size, as the
    /// Python client does.
    fn in_one_call(&self) {
        let big = self.store(Some("one_call"));
        let secs = seconds(|| {
            big.upsert(&self.records, &self.vectors, self.embedder.id())
                .expect("upsert");
        });
        println!(
            "chatmill client, one call (split at the server's max batch size): {:.0} records/s",
            self.records.len() as f64 / secs
        );
    }

    /// The same records through Index (what import does: embed + upsert).
    fn through_index(&self) {
        let store = self.store(Some("through_index"));
        let index = Index::new(Arc::new(store), Arc::new(Lexical::default()));
        let secs = seconds(|| {
            for recs in self.records.chunks(256) {
                index.index(recs).expect("index");
            }
        });
        println!(
            "chatmill Index (lexical embedder + upsert): {:.0} records/s",
            self.records.len() as f64 / secs
        );
    }

    /// chatmill's kNN queries (k = 10, documents and metadata included)
    /// against the collection the Python client filled, which it queried
    /// with the same vectors.
    fn queries(&self, collection: &str) {
        let store = self.store(Some(collection));
        let secs = seconds(|| {
            for v in self.vectors.iter().take(QUERIES) {
                let hits = store.knn(v, 10, &Default::default()).expect("knn");
                assert!(!hits.is_empty());
            }
        });
        println!(
            "chatmill client: {QUERIES} queries in {secs:.2} s = {:.0} queries/s (k = 10, collection {collection})",
            QUERIES as f64 / secs
        );
    }

    /// A client of the server's `collection` (`None`: the default one).
    fn store(&self, collection: Option<&str>) -> ChromaStore {
        let mut cfg = ChromaConfig::new(&self.server.url);
        if let Some(c) = collection {
            cfg.collection = c.into();
        }
        ChromaStore::connect(cfg).expect("connect")
    }

    /// The official Python client, same server, same records and vectors
    /// (skipped when no Python chromadb client is installed next to the
    /// server).
    fn python_client(&self) {
        let py = chroma::chroma_bin().and_then(|b| b.parent().map(|d| d.join("python")));
        let Some(py) = py.filter(|p| p.is_file()) else {
            println!("(no Python chromadb client next to the server; skipped the comparison)");
            return;
        };
        let dump =
            std::env::temp_dir().join(format!("chatmill-chroma-bench-{}.json", std::process::id()));
        let payload = serde_json::json!({
            "ids": self.records.iter().map(|r| &r.chunk_id).collect::<Vec<_>>(),
            "embeddings": self.vectors,
            "documents": self.records.iter().map(|r| &r.document).collect::<Vec<_>>(),
            "metadatas": self.records.iter().map(|r| serde_json::json!({
                "timestamp": r.meta.timestamp, "platform": r.meta.platform, "agent_id": r.meta.agent_id,
                "conversation_id": r.meta.conversation_id, "title": r.meta.title, "topics": r.meta.topics,
                "model": r.meta.model, "turn_range": r.meta.turn_range, "source_file": r.meta.source_file,
                "path": r.meta.path, "chunk_id": r.chunk_id,
            })).collect::<Vec<_>>(),
        });
        std::fs::write(&dump, payload.to_string()).expect("dump");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/chroma_python.py");
        let port = self
            .server
            .url
            .rsplit(':')
            .next()
            .unwrap_or_default()
            .to_string();
        let out = std::process::Command::new(py)
            .args([script, &port])
            .arg(&dump)
            .env("ANONYMIZED_TELEMETRY", "False")
            .output()
            .expect("python runs");
        let _ = std::fs::remove_file(&dump);
        print!("{}", String::from_utf8_lossy(&out.stdout));
        if !out.status.success() {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

/// How long `f` takes, in seconds.
fn seconds(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}
