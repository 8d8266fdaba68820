//! `chatmill watch` on a folder where sessions are added, grow and are
//! replaced: exactly the new pairs reach the index, and SIGTERM stops it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use crate::hook::{append, assistant, text, user};
use crate::support::Env;

/// The index's chunk ids, by `chatmill search --mode recent`.
fn indexed(env: &Env, root: &Path) -> Vec<String> {
    let run = env.run(&[
        "--root",
        root.to_str().unwrap(),
        "search",
        "--mode",
        "recent",
        "-k",
        "1000",
        "--json",
    ]);
    let mut ids: Vec<String> = run.json()["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["chunk_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// Waits until the index holds `n` chunks (the watcher imports on its own).
fn until_indexed(env: &Env, root: &Path, n: usize, log: &Receiver<String>) -> Vec<String> {
    let start = Instant::now();
    loop {
        let ids = if root.join(".chatmill/index.sqlite3").exists() {
            indexed(env, root)
        } else {
            Vec::new()
        };
        if ids.len() >= n || start.elapsed() > Duration::from_secs(60) {
            let said: Vec<String> = log.try_iter().collect();
            assert_eq!(ids.len(), n, "watch said: {said:?}");
            return ids;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts `chatmill watch DIR` (debounce 200 ms) on `root`; its stderr
/// lines arrive on the receiver.
fn spawn_watch(env: &Env, root: &Path, dir: &Path) -> (Child, Receiver<String>) {
    let mut watch = env
        .cmd()
        .args([
            "--root",
            root.to_str().unwrap(),
            "watch",
            dir.to_str().unwrap(),
        ])
        .args(["--debounce-ms", "200"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, log) = std::sync::mpsc::channel();
    let stderr = watch.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (watch, log)
}

#[test]
fn watched_sessions_are_imported_as_they_are_added_grow_and_are_replaced() {
    let env = Env::new();
    let root = env.path("root");
    let dir = env.path("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let (mut watch, log) = spawn_watch(&env, &root, &dir);
    let first = log.recv_timeout(Duration::from_secs(60)).unwrap();
    assert!(first.starts_with("note: watching "), "{first}");

    // Added: a session with one answered pair.
    let a = dir.join("-home-ada-garden/aaaa1111-2222-4333-8444-555566667777.jsonl");
    std::fs::create_dir_all(a.parent().unwrap()).unwrap();
    append(
        &a,
        &[
            user("u1", None, "How deep should garlic cloves go?", 0),
            assistant(
                "a1",
                "u1",
                &text("Plant garlic cloves about 5 cm deep, pointed end up."),
                1,
            ),
        ],
        true,
    );
    let one = until_indexed(&env, &root, 1, &log);

    // Grown: one more pair; only it is new.
    append(
        &a,
        &[
            user("u2", Some("a1"), "And how far apart?", 2),
            assistant(
                "a2",
                "u2",
                &text("Space them 15 cm apart in rows 30 cm apart."),
                3,
            ),
        ],
        true,
    );
    let two = until_indexed(&env, &root, 2, &log);
    assert!(
        two.contains(&one[0]),
        "the first chunk is kept, not rewritten: {two:?}"
    );

    // Replaced (written elsewhere and renamed over, as editors and sync
    // tools do) with the same pairs and one more.
    let tmp = dir.join("replacement.tmp");
    std::fs::copy(&a, &tmp).unwrap();
    append(
        &tmp,
        &[
            user("u3", Some("a2"), "When do I harvest?", 4),
            assistant(
                "a3",
                "u3",
                &text("Harvest when the lower third of the leaves turn brown."),
                5,
            ),
        ],
        true,
    );
    std::fs::rename(&tmp, &a).unwrap();
    let three = until_indexed(&env, &root, 3, &log);
    assert!(two.iter().all(|id| three.contains(id)), "{three:?}");

    // SIGTERM: a clean stop.
    assert!(
        Command::new("kill")
            .args(["-TERM", &watch.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let status = watch.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// One Chat Completions call as an OpenAI-compatible proxy logs it.
fn call(n: u32, question: &str, answer: &str) -> String {
    serde_json::json!({
        "id": format!("log_{n:04}"),
        "timestamp": format!("2026-11-20T10:{n:02}:00.000Z"),
        "request": {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": question}]},
        "response": {
            "id": format!("chatcmpl-{n:04}"), "object": "chat.completion", "created": 1_795_000_000 + n,
            "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        },
    })
    .to_string()
}

#[test]
fn a_proxy_log_that_grows_is_imported_call_by_call() {
    let env = Env::new();
    let root = env.path("root");
    let dir = env.path("proxy-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let (mut watch, log) = spawn_watch(&env, &root, &dir);
    assert!(
        log.recv_timeout(Duration::from_secs(60))
            .unwrap()
            .starts_with("note: watching ")
    );
    let file = dir.join("chat-completions-2026-11-20.jsonl");
    append(
        &file,
        &[call(
            1,
            "Translate to French: the meeting moved to Thursday.",
            "La réunion a été déplacée à jeudi.",
        )],
        true,
    );
    let one = until_indexed(&env, &root, 1, &log);
    append(
        &file,
        &[call(
            2,
            "Summarize the quarterly revenue memo in one line.",
            "Revenue grew 12 % on subscriptions.",
        )],
        true,
    );
    let two = until_indexed(&env, &root, 2, &log);
    assert!(two.contains(&one[0]));
    assert!(
        Command::new("kill")
            .args(["-TERM", &watch.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(watch.wait().unwrap().code(), Some(0));
}
