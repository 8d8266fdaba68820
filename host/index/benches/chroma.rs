//! Upsert throughput into a real ChromaDB server: chatmill's thin client
//! (base64 vectors, batches under the server's limits, the pipeline's
//! 256-record index batches) against the official Python client adding the
//! same records to the same server.
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
    let records: Vec<ChunkRecord> = (0..n)
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
                    title: Some(format!("About {t}")),
                    topics: vec![t.into(), "bench".into()],
                    model: "gpt-4o".into(),
                    turn_range: format!("{}", i % 10 + 1),
                    source_file: "raw/conversations.json".into(),
                    path: format!("bench-{i:06}.md"),
                },
            }
        })
        .collect();
    // Vectors made once, outside the timing, so both clients send the same.
    let embedder = Lexical::default();
    let texts: Vec<&str> = records.iter().map(|r| r.embed_text.as_str()).collect();
    let vectors = embedder.embed(&texts).expect("embed");

    let store = ChromaStore::connect(ChromaConfig::new(&server.url)).expect("connect");
    let t = Instant::now();
    for (recs, vecs) in records.chunks(256).zip(vectors.chunks(256)) {
        store.upsert(recs, vecs, embedder.id()).expect("upsert");
    }
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(store.count().expect("count"), n as u64);
    println!(
        "chatmill client: {n} records in {secs:.2} s = {:.0} records/s (batches of 256, base64 vectors)",
        n as f64 / secs
    );

    // One call: the client splits by the server's max batch size, as the
    // Python client does.
    let mut cfg = ChromaConfig::new(&server.url);
    cfg.collection = "one_call".into();
    let big = ChromaStore::connect(cfg).expect("connect");
    let t = Instant::now();
    big.upsert(&records, &vectors, embedder.id())
        .expect("upsert");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "chatmill client, one call (split at the server's max batch size): {:.0} records/s",
        n as f64 / secs
    );

    // The same records through Index (what import does: embed + upsert).
    let mut cfg = ChromaConfig::new(&server.url);
    cfg.collection = "through_index".into();
    let index = Index::new(
        Arc::new(ChromaStore::connect(cfg).expect("connect")),
        Arc::new(Lexical::default()),
    );
    let t = Instant::now();
    for recs in records.chunks(256) {
        index.index(recs).expect("index");
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "chatmill Index (lexical embedder + upsert): {:.0} records/s",
        n as f64 / secs
    );

    // The official Python client, same server, same records and vectors.
    let py = chroma::chroma_bin().and_then(|b| b.parent().map(|d| d.join("python")));
    let Some(py) = py.filter(|p| p.is_file()) else {
        println!("(no Python chromadb client next to the server; skipped the comparison)");
        return;
    };
    let dump =
        std::env::temp_dir().join(format!("chatmill-chroma-bench-{}.json", std::process::id()));
    let payload = serde_json::json!({
        "ids": records.iter().map(|r| &r.chunk_id).collect::<Vec<_>>(),
        "embeddings": vectors,
        "documents": records.iter().map(|r| &r.document).collect::<Vec<_>>(),
        "metadatas": records.iter().map(|r| serde_json::json!({
            "timestamp": r.meta.timestamp, "platform": r.meta.platform, "agent_id": r.meta.agent_id,
            "conversation_id": r.meta.conversation_id, "title": r.meta.title, "topics": r.meta.topics,
            "model": r.meta.model, "turn_range": r.meta.turn_range, "source_file": r.meta.source_file,
            "path": r.meta.path, "chunk_id": r.chunk_id,
        })).collect::<Vec<_>>(),
    });
    std::fs::write(&dump, payload.to_string()).expect("dump");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/chroma_python.py");
    let port = server
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
