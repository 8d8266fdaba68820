//! `chatmill serve` end to end: turns over the socket are searchable at
//! once, idempotent, and never duplicated by a later batch import of the
//! raw logs; many concurrent clients lose nothing; garbage, a 100 MB line,
//! half-written requests and 1,000 idle connections leave the server
//! answering others; SIGTERM exits 0; a stale socket is replaced, a live
//! one is not stolen.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

struct Server {
    child: Child,
    socket: PathBuf,
}

impl Server {
    fn start(env: &Env, root: &Path, socket: &Path) -> Self {
        Self::start_with(env, root, socket, &[])
    }

    /// [`Server::start`] with `extra` arguments to `serve`.
    fn start_with(env: &Env, root: &Path, socket: &Path, extra: &[&str]) -> Self {
        let child = env
            .cmd()
            .args(["--root", root.to_str().unwrap(), "serve", "--socket"])
            .arg(socket)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(env.path("server.log")).unwrap())
            .env(
                "CHATMILL_LOG",
                "chatmill=debug,chatmill_server=debug,chatmill_pipeline=debug",
            )
            .spawn()
            .unwrap();
        let started = Instant::now();
        while UnixStream::connect(socket).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            socket: socket.to_path_buf(),
        }
    }

    fn client(&self) -> Conn {
        Conn::new(UnixStream::connect(&self.socket).unwrap())
    }

    /// SIGTERM, and the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Conn {
    r: BufReader<Box<dyn std::io::Read>>,
    w: Box<dyn Write>,
    id: u64,
}

impl Conn {
    fn new(s: UnixStream) -> Self {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Self {
            r: BufReader::new(Box::new(s.try_clone().unwrap())),
            w: Box::new(s),
            id: 0,
        }
    }

    fn tcp(s: TcpStream) -> Self {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Self {
            r: BufReader::new(Box::new(s.try_clone().unwrap())),
            w: Box::new(s),
            id: 0,
        }
    }

    fn raw(&mut self, line: &[u8]) -> Value {
        self.w.write_all(line).unwrap();
        self.w.write_all(b"\n").unwrap();
        let mut answer = String::new();
        self.r.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer}"))
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let req = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        let v = self.raw(req.to_string().as_bytes());
        assert_eq!(v["id"], self.id, "{v}");
        v
    }
}

fn turn(session: &str, i: u32, user: &str) -> Value {
    json!({
        "session_id": session,
        "turn_index": i,
        "user": user,
        "assistant": format!("Here is what to do about it (answer {i})."),
        "model": "test-model",
        "agent_id": "agent-7",
    })
}

#[test]
fn turns_are_searchable_at_once_idempotent_and_not_reimported() {
    let env = Env::new();
    let root = env.path("root");
    let server = Server::start(&env, &root, &env.path("s.sock"));
    let mut c = server.client();

    let a = c.call(
        "turn",
        turn(
            "sess-1",
            1,
            "How do I stop nginx returning 504 on long uploads?",
        ),
    );
    let ack = &a["result"];
    assert_eq!(ack["indexed"], true, "{a}");
    let id = ack["chunk_id"].as_str().unwrap().to_string();
    let path = PathBuf::from(ack["path"].as_str().unwrap());
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.contains("_session-sess-1_pair-001_"), "{name}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("source_platform: local") && text.contains("agent_id: agent-7"),
        "{text}"
    );

    // The very next query finds it.
    let s = c.call(
        "search",
        json!({"queries": [{"text": "nginx 504 uploads"}], "k": 3}),
    );
    assert_eq!(s["result"]["hits"][0]["chunk_id"], id.as_str(), "{s}");
    let s = c.call(
        "search",
        json!({"mode": "recent", "filter": {"agent_id": "agent-7"}}),
    );
    assert_eq!(s["result"]["hits"][0]["chunk_id"], id.as_str(), "{s}");

    // Same turn again: the same chunk, nothing new.
    let again = c.call(
        "turn",
        turn(
            "sess-1",
            1,
            "How do I stop nginx returning 504 on long uploads?",
        ),
    );
    assert_eq!(again["result"]["duplicate"], true, "{again}");
    assert_eq!(again["result"]["chunk_id"], id.as_str());
    c.call(
        "turn",
        turn(
            "sess-1",
            2,
            "And what about websocket connections timing out?",
        ),
    );

    let h = c.call("health", json!({}));
    assert_eq!(h["result"]["index"]["chunks"], 2, "{h}");
    assert_eq!(h["result"]["protocol"], "chatmill-inline/1");
    assert_eq!(server.stop().code(), Some(0), "SIGTERM exits 0");

    // A batch import of the raw logs finds every turn already done.
    let raw = std::fs::read_to_string(root.join("raw/sess-1.md")).unwrap();
    assert_eq!(raw.matches("**Turn:**").count(), 2, "{raw}");
    let import = env.run(&["--root", root.to_str().unwrap(), "import", "--json"]);
    assert_eq!(import.code, 0, "{import:?}");
    assert_eq!(import.json()["chunks_written"], 0, "{import:?}");
    assert_eq!(import.json()["chunks_total"], 2, "{import:?}");
    let v = env.run(&["--root", root.to_str().unwrap(), "verify"]);
    assert_eq!(v.code, 0, "{v:?}");
}

#[test]
fn concurrent_clients_lose_nothing_and_keep_session_order() {
    let env = Env::new();
    let root = env.path("root");
    let server = Server::start(&env, &root, &env.path("s.sock"));
    // The issue's 32 clients × 200 turns (CHATMILL_LOAD=CxT for another size).
    let (clients, turns) = std::env::var("CHATMILL_LOAD")
        .ok()
        .and_then(|v| {
            let (c, t) = v.split_once('x')?;
            Some((c.parse().ok()?, t.parse().ok()?))
        })
        .unwrap_or((32u32, 200u32));
    std::thread::scope(|s| {
        for c in 0..clients {
            let server = &server;
            s.spawn(move || {
                let mut conn = server.client();
                for t in 1..=turns {
                    let r = conn.call(
                        "turn",
                        turn(
                            &format!("load-{c}"),
                            t,
                            &format!(
                                "Client {c} asks question number {t} about caching layer {c}-{t}"
                            ),
                        ),
                    );
                    assert_eq!(r["result"]["indexed"], true, "{r}");
                }
            });
        }
    });
    let mut conn = server.client();
    let h = conn.call("health", json!({}));
    assert_eq!(h["result"]["index"]["chunks"], clients * turns, "{h}");
    for c in 0..clients {
        let raw = std::fs::read_to_string(root.join(format!("raw/load-{c}.md"))).unwrap();
        let order: Vec<u32> = raw
            .lines()
            .filter_map(|l| l.strip_prefix("**Turn:** "))
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(order, (1..=turns).collect::<Vec<_>>(), "session load-{c}");
    }
    drop(conn);
    assert_eq!(server.stop().code(), Some(0));
    let v = env.run(&["--root", root.to_str().unwrap(), "verify", "--json"]);
    assert_eq!(v.code, 0, "{v:?}");
    assert_eq!(v.json()["chunk_files"], clients * turns);
}

/// Over TCP a client must `auth` with the token before anything else is
/// answered; a wrong token, of the same length or not, is refused, and the
/// connection may try again.
#[test]
fn over_tcp_a_client_needs_the_token() {
    let env = Env::new();
    let root = env.path("root");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let _server = Server::start_with(
        &env,
        &root,
        &env.path("s.sock"),
        &["--listen", &addr, "--token", "s3cret-token"],
    );
    let started = Instant::now();
    let s = loop {
        match TcpStream::connect(&addr) {
            Ok(s) => break s,
            Err(e) => assert!(started.elapsed() < Duration::from_secs(60), "{addr}: {e}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut c = Conn::tcp(s);
    let e = c.call("health", json!({}));
    assert_eq!(e["error"]["code"], -32002, "{e}");
    for wrong in [
        "s3cret-tokem",
        "S3cret-token",
        "s3cret",
        "s3cret-token-",
        "",
    ] {
        let e = c.call("auth", json!({"token": wrong}));
        assert_eq!(e["error"]["message"], "wrong token", "{wrong}: {e}");
    }
    let ok = c.call("auth", json!({"token": "s3cret-token"}));
    assert!(ok.get("error").is_none(), "{ok}");
    let h = c.call("health", json!({}));
    assert!(h.get("error").is_none(), "{h}");
}

#[test]
fn abuse_never_takes_the_server_down() {
    let env = Env::new();
    let root = env.path("root");
    let socket = env.path("s.sock");
    let server = Server::start(&env, &root, &socket);
    let mut good = server.client();

    // 1,000 idle connections.
    let idle: Vec<UnixStream> = (0..1000)
        .map(|_| UnixStream::connect(&socket).unwrap())
        .collect();
    // A half-written request, then gone.
    {
        let mut s = UnixStream::connect(&socket).unwrap();
        s.write_all(br#"{"jsonrpc":"2.0","id":1,"method":"tur"#)
            .unwrap();
    }
    let mut c = server.client();
    let e = c.raw(b"\x00\xff garbage {{{");
    assert_eq!(e["error"]["code"], -32700, "{e}");
    let e = c.raw(br#"{"id": 5}"#);
    assert_eq!(e["error"]["code"], -32600, "{e}");
    let e = c.call(
        "turn",
        json!({"session_id": "../../etc", "turn_index": 1, "user": "x", "assistant": "y"}),
    );
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let e = c.call("turn", json!({"session_id": "s", "turn_index": "one"}));
    assert_eq!(e["error"]["code"], -32602, "{e}");
    // A 100 MB line: refused, and the same connection still works.
    let big = vec![b'a'; 100 << 20];
    let e = c.raw(&big);
    assert_eq!(e["error"]["code"], -32001, "{e}");
    let ok = c.call("health", json!({}));
    assert!(ok["result"].is_object(), "{ok}");

    // Others were answered all along.
    let r = good.call(
        "turn",
        turn("after-abuse", 1, "Is the server still answering questions?"),
    );
    assert_eq!(r["result"]["indexed"], true, "{r}");
    drop(idle);

    // A live server is not displaced by a second one.
    let second = env
        .cmd()
        .args(["--root", root.to_str().unwrap(), "serve", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1), "{second:?}");
    assert!(String::from_utf8_lossy(&second.stderr).contains("already listening"));
    assert_eq!(server.stop().code(), Some(0));

    // A stale socket file (a crashed server) is replaced.
    let stale = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    drop(stale); // the file stays, nobody listens
    assert!(socket.exists());
    let server = Server::start(&env, &root, &socket);
    let mut c = server.client();
    assert!(c.call("health", json!({}))["result"].is_object());
    assert_eq!(server.stop().code(), Some(0));
}

#[test]
fn the_python_and_shell_examples_work_against_a_real_server() {
    let env = Env::new();
    let root = env.path("root");
    let socket = env.path("s.sock");
    let server = Server::start(&env, &root, &socket);
    let out = std::process::Command::new("python3")
        .arg(repo_root().join("examples/inline/client.py"))
        .arg("--socket")
        .arg(&socket)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert_eq!(lines[0]["indexed"], true, "{stdout}");
    assert_eq!(lines[2]["top"], lines[0]["chunk_id"], "{stdout}");

    let bin_dir = Path::new(env!("CARGO_BIN_EXE_chatmill")).parent().unwrap();
    let out = std::process::Command::new("sh")
        .arg(repo_root().join("examples/inline/turn.sh"))
        .arg(&socket)
        .args([
            "shell-session",
            "1",
            "Which shell quoting rules apply to $HOME in single quotes?",
            "None: single quotes keep it literal.",
        ])
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("CHATMILL_CONFIG", env.path("config.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let ack: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ack["indexed"], true, "{ack}");
    assert!(root.join("raw/shell-session.md").exists());
    assert_eq!(server.stop().code(), Some(0));
}

/// The test header model (tests/e2e/fixtures/llm_server.py): a real HTTP
/// server speaking the OpenAI chat-completions protocol.
struct Llm(Child, u16);

impl Llm {
    fn start(delay: f64, fail_first: u32) -> Self {
        let mut child = std::process::Command::new("python3")
            .arg(repo_root().join("tests/e2e/fixtures/llm_server.py"))
            .args([
                "--delay",
                &delay.to_string(),
                "--fail-first",
                &fail_first.to_string(),
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        Self(child, port.trim().parse().unwrap())
    }

    fn config(&self, env: &Env, deadline_ms: u64) {
        env.write(
            "config.toml",
            format!(
                "[header]\nurl = \"http://127.0.0.1:{}/v1\"\nmodel = \"test\"\ntimeout_ms = 10000\nretries = 0\ndeadline_ms = {deadline_ms}\n",
                self.1
            ),
        );
    }
}

impl Drop for Llm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_queued_header_backfill_survives_a_restart_and_completes() {
    let env = Env::new();
    let root = env.path("root");
    let socket = env.path("s.sock");
    // The model fails its first two calls: the turn's (so the turn gets a
    // stand-in header) and the first backfill attempt.
    let llm = Llm::start(0.0, 2);
    llm.config(&env, 1000);
    let server = Server::start(&env, &root, &socket);
    let mut c = server.client();
    let ack = c.call(
        "turn",
        turn(
            "bf",
            1,
            "Explain kubernetes liveness probes versus readiness probes",
        ),
    );
    assert_eq!(ack["result"]["header_pending"], true, "{ack}");
    assert_eq!(ack["result"]["indexed"], true, "{ack}");
    let path = PathBuf::from(ack["result"]["path"].as_str().unwrap());
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("header_status: pending")
    );
    // Let the backfill thread make (and fail) its first attempt, then stop.
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(server.stop().code(), Some(0));
    let queue = std::fs::read_to_string(root.join(".chatmill/backfill.json")).unwrap();
    let log = std::fs::read_to_string(env.path("server.log")).unwrap_or_default();
    assert!(
        queue.contains("\"chunk_id\""),
        "still queued after the restart: {queue}\n{log}"
    );

    // Restart: the backfill completes.
    let server = Server::start(&env, &root, &socket);
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("MODEL-HEADER") {
            assert!(!text.contains("header_status"), "{text}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no backfill: {text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut c = server.client();
    // The queue entry goes right after the file is rewritten.
    loop {
        let h = c.call("health", json!({}));
        if h["result"]["backfill"]["queued"] == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{h}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The session's note quotes the new header.
    let notes: Vec<_> = std::fs::read_dir(root.join("conversations"))
        .unwrap()
        .collect();
    assert_eq!(notes.len(), 1);
    let note = std::fs::read_to_string(notes[0].as_ref().unwrap().path()).unwrap();
    assert!(note.contains("> MODEL-HEADER"), "{note}");
    // Re-indexed under the same id with the new header.
    let s = c.call(
        "search",
        json!({"queries": [{"text": "MODEL-HEADER kubernetes"}], "mode": "keyword"}),
    );
    assert_eq!(
        s["result"]["hits"][0]["chunk_id"], ack["result"]["chunk_id"],
        "{s}"
    );
    assert!(
        s["result"]["hits"][0]["document"]
            .as_str()
            .unwrap()
            .contains("MODEL-HEADER")
    );
    assert_eq!(server.stop().code(), Some(0));
}

#[test]
fn a_slow_header_model_never_holds_up_the_ack_and_batch_import_queues_failures() {
    let env = Env::new();
    let root = env.path("root");
    // Slower than the 300 ms deadline.
    let llm = Llm::start(2.0, 0);
    llm.config(&env, 300);
    let server = Server::start(&env, &root, &env.path("s.sock"));
    let mut c = server.client();
    let t = Instant::now();
    let ack = c.call(
        "turn",
        turn(
            "slow",
            1,
            "What does the borrow checker complain about here?",
        ),
    );
    let took = t.elapsed();
    assert_eq!(ack["result"]["header_pending"], true, "{ack}");
    assert!(
        took < Duration::from_millis(1900),
        "the ack waited for the model: {took:?}"
    );
    drop(c);
    assert_eq!(server.stop().code(), Some(0));

    // Batch import with a model that fails: chunks are written with the
    // built-in header and queued; `chatmill backfill` then writes them.
    let failing = Llm::start(0.0, 1000);
    failing.config(&env, 300);
    let raw = env.path("raw");
    std::fs::create_dir_all(&raw).unwrap();
    std::fs::copy(
        corpus("chatgpt/librechat-chatgpt-tree.json"),
        raw.join("c.json"),
    )
    .unwrap();
    let r = root.to_str().unwrap();
    let import = env.run(&["--root", r, "import", raw.to_str().unwrap(), "--json"]);
    assert_eq!(import.code, 0, "{import:?}");
    let pending = import.json()["headers_pending"].as_u64().unwrap();
    assert!(pending >= 1, "{import:?}");
    drop(failing);
    let working = Llm::start(0.0, 0);
    working.config(&env, 300);
    let b = env.run(&["--root", r, "backfill", "--json"]);
    assert_eq!(b.code, 0, "{b:?}");
    // The slow server's queued turn too.
    assert_eq!(
        b.json()["rewritten"].as_u64().unwrap(),
        pending + 1,
        "{b:?}"
    );
    let v = env.run(&["--root", r, "verify"]);
    assert_eq!(v.code, 0, "{v:?}");
}

#[test]
fn an_import_and_the_server_write_the_same_root_without_corrupting_it() {
    let env = Env::new();
    let root = env.path("root");
    let raw = env.path("exports");
    std::fs::create_dir_all(&raw).unwrap();
    for i in 0..6 {
        chatmill_synth::chatgpt_export(
            &raw.join(format!("conversations-{i:03}.json")),
            chatmill_synth::Limit::Pairs(300),
        )
        .unwrap();
    }
    let server = Server::start(&env, &root, &env.path("s.sock"));
    let r = root.to_str().unwrap();
    let import = env
        .cmd()
        .args(["--root", r, "import", raw.to_str().unwrap(), "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Turns while the import runs; the root is busy at times (one writer at
    // a time): a busy answer is retried, as the protocol says.
    let mut c = server.client();
    let mut busy = 0;
    let turns = 40u32;
    for t in 1..=turns {
        loop {
            let a = c.call(
                "turn",
                turn(
                    "during-import",
                    t,
                    &format!("Question {t} asked while an import runs"),
                ),
            );
            if a["error"]["code"] == -32004 {
                busy += 1;
                continue;
            }
            assert_eq!(a["result"]["indexed"], true, "{a}");
            break;
        }
    }
    let out = import.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let imported = s["chunks_written"].as_u64().unwrap();
    // The generator is deterministic: the six files hold the same
    // conversations, so only the first one's chunks are new.
    assert!(imported > 200, "{s}");
    let h = c.call("health", json!({}));
    assert_eq!(
        h["result"]["index"]["chunks"],
        imported + u64::from(turns),
        "{h} (busy retries: {busy})"
    );
    drop(c);
    assert_eq!(server.stop().code(), Some(0));
    let v = env.run(&["--root", r, "verify", "--json"]);
    assert_eq!(v.code, 0, "{v:?}");
    assert_eq!(v.json()["manifest_chunks"], imported + u64::from(turns));
}
