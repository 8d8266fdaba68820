//! Turns from many connections at once, written in batches by the one
//! writer: every request is answered exactly once, in order on its
//! connection; every turn is chunked, indexed and recorded once; a bad turn
//! or a resend in the middle of the load is answered on its own; a
//! session's turns keep their order.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex};

use chatmill_chunking::header::ExtractiveWriter;
use chatmill_index::{Embedder, Index, IndexError, Indexer, Lexical, SqliteStore};
use chatmill_root::manifest::Manifest;
use chatmill_root::root::Root;
use chatmill_server::client::Client;
use chatmill_server::protocol::code;
use chatmill_server::{ServerConfig, Services};
use serde_json::{Value, json};

const CLIENTS: usize = 8;
const TURNS: u32 = 20;

/// The lexical stand-in, counting its calls.
struct Counting {
    inner: Lexical,
    calls: Mutex<usize>,
}

impl Embedder for Counting {
    fn id(&self) -> &str {
        self.inner.id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        *self.calls.lock().unwrap() += 1;
        self.inner.embed(texts)
    }
}

fn turn(c: usize, t: u32) -> Value {
    json!({
        "session_id": format!("load-{c}"),
        "turn_index": t,
        "user": format!("Client {c} asks question {t} about sharding table {c}-{t}"),
        "assistant": format!("Split table {c}-{t} by tenant, then rebalance (answer {t})."),
    })
}

/// One connection's requests, all written before any answer is read (so
/// the connections' turns wait in the writer's queue together): its turns
/// 1..=TURNS, with an invalid turn and a resend of turn 1 in the middle.
fn requests(c: usize) -> Vec<Value> {
    let mut params: Vec<Value> = (1..=TURNS).map(|t| turn(c, t)).collect();
    let mut bad = turn(c, 1);
    bad["turn_index"] = json!(0);
    params.insert(5, bad);
    params.insert(9, turn(c, 1));
    params
        .into_iter()
        .enumerate()
        .map(|(i, p)| json!({"jsonrpc": "2.0", "id": i + 1, "method": "turn", "params": p}))
        .collect()
}

/// Sends a connection's requests and reads its answers: exactly one per
/// request, in order. The chunk ids its turns were acked with.
fn client(socket: &Path, c: usize) -> Vec<String> {
    let stream = UnixStream::connect(socket).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let reqs = requests(c);
    let mut out = String::new();
    for r in &reqs {
        out.push_str(&format!("{r}\n"));
    }
    writer.write_all(out.as_bytes()).unwrap();
    writer.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answers = Vec::new();
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 {
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
        line.clear();
    }
    assert_eq!(answers.len(), reqs.len(), "client {c}: {answers:?}");
    let mut acked: Vec<String> = Vec::new();
    for (i, (req, answer)) in reqs.iter().zip(&answers).enumerate() {
        assert_eq!(answer["id"], req["id"], "client {c}: {answer}");
        let r = &answer["result"];
        match i {
            5 => assert_eq!(answer["error"]["code"], code::INVALID_PARAMS, "{answer}"),
            9 => {
                assert_eq!(r["duplicate"], true, "{answer}");
                assert_eq!(r["chunk_id"].as_str(), Some(acked[0].as_str()), "{answer}");
            }
            _ => {
                assert_eq!(r["indexed"], true, "{answer}");
                assert_eq!(r["duplicate"], false, "{answer}");
                acked.push(r["chunk_id"].as_str().unwrap().to_string());
            }
        }
    }
    acked
}

#[test]
fn concurrent_turns_are_each_acked_once_indexed_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let socket = dir.path().join("s.sock");
    let embedder = Arc::new(Counting {
        inner: Lexical::default(),
        calls: Mutex::new(0),
    });
    let store = SqliteStore::open(&root.join(".chatmill/index.sqlite3")).unwrap();
    let index = Arc::new(Index::new(Arc::new(store), embedder.clone()));
    let mut cfg = ServerConfig::new(&root, &socket);
    cfg.max_batch = chatmill_server::MAX_BATCH;
    let shutdown = Arc::clone(&cfg.shutdown);
    let services = Services {
        index: Some(index.clone()),
        header: Arc::new(ExtractiveWriter),
        backfill: None,
        redactor: None,
        adapters: vec![],
        version: "test".into(),
    };
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        chatmill_server::run(cfg, services, move |_| {
            let _ = ready_tx.send(());
        })
    });
    ready_rx.recv().unwrap();
    let calls_before = *embedder.calls.lock().unwrap();

    let acked: Vec<Vec<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let socket = &socket;
                s.spawn(move || client(socket, c))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total = CLIENTS * TURNS as usize;
    let ids: BTreeSet<&String> = acked.iter().flatten().collect();
    assert_eq!(ids.len(), total, "every turn its own chunk");
    // Turns that waited together were embedded together.
    let calls = *embedder.calls.lock().unwrap() - calls_before;
    assert!(calls < total, "{calls} embedding calls for {total} turns");

    let health = Client::unix(&socket)
        .unwrap()
        .call("health", json!({}))
        .unwrap();
    assert_eq!(health["turns_served"], total + CLIENTS, "{health}");
    shutdown.notify_one();
    server.join().unwrap().unwrap();

    assert_eq!(index.ids().unwrap().iter().collect::<BTreeSet<_>>(), ids);
    let manifest = Manifest::load(&Root::new(&root).manifest()).unwrap();
    assert_eq!(
        manifest.chunk_ids(),
        ids.iter().map(|s| s.as_str()).collect()
    );
    for (c, chunks) in acked.iter().enumerate() {
        let raw = std::fs::read_to_string(root.join(format!("raw/load-{c}.md"))).unwrap();
        let order: Vec<u32> = raw
            .lines()
            .filter_map(|l| l.strip_prefix("**Turn:** "))
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(order, (1..=TURNS).collect::<Vec<_>>(), "session load-{c}");
        for (t, id) in chunks.iter().enumerate() {
            assert!(id.contains(&format!("-{:03}-", t + 1)), "{id}");
        }
    }
    assert_eq!(
        chunk_files(&root),
        ids.iter().map(|s| s.to_string()).collect()
    );
}

/// The chunk ids of the chunk files in `root`.
fn chunk_files(root: &Path) -> BTreeSet<String> {
    std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let id = text.lines().find_map(|l| l.strip_prefix("chunk_id: "))?;
            Some(id.to_string())
        })
        .collect()
}
