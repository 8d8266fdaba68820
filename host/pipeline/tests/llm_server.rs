//! The header model against a real local server: llama.cpp's
//! `llama-server` running SmolLM2-135M-Instruct, both installed by
//! `scripts/setup-llm.sh`. A 135M model writes poor headers, so this checks
//! the wire protocol, the JSON-schema path, validation and the fallback —
//! not the prose.

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use chatmill_pipeline::header::{HeaderInput, HeaderWriter};
use chatmill_pipeline::llm::{LlmConfig, LlmWriter};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn cache() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("a cache dir")
        .join("chatmill/llm")
}

/// Starts llama-server on a free port; `None` when told to skip.
fn start() -> Option<(Server, String)> {
    let bin = cache().join("bin/llama-server");
    let model = cache().join("SmolLM2-135M-Instruct.Q4_1.gguf");
    if !bin.exists() || !model.exists() {
        if std::env::var_os("CHATMILL_SKIP_LLM").is_some() {
            return None;
        }
        panic!(
            "llama-server or the SmolLM2 model is missing under {}: run scripts/setup-llm.sh (or set CHATMILL_SKIP_LLM=1)",
            cache().display()
        );
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(&bin)
        .arg("-m")
        .arg(&model)
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "-t",
            "1",
            "-c",
            "2048",
            "--no-webui",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("llama-server starts");
    let mut server = Server(child);
    let started = Instant::now();
    loop {
        if let Some(status) = server.0.try_wait().expect("llama-server status") {
            panic!(
                "llama-server exited ({status}) before it was healthy; rebuild it with scripts/setup-llm.sh"
            );
        }
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            use std::io::Write;
            let _ = write!(s, "GET /health HTTP/1.0\r\n\r\n");
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200") {
                break;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "llama-server never became healthy"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    Some((server, format!("http://127.0.0.1:{port}/v1")))
}

#[test]
fn a_real_openai_compatible_server_answers_through_the_writer() {
    let Some((_server, url)) = start() else {
        return;
    };
    let w = LlmWriter::new(LlmConfig {
        url,
        model: "smollm2".into(),
        api_key: None,
        timeout_ms: 60_000,
        max_concurrency: 1,
        retries: 1,
        deadline_ms: 1_500,
    });
    let input = HeaderInput {
        platform: "chatgpt",
        title: Some("nginx upload timeouts"),
        date: None,
        user: "Why does nginx return 504 Gateway Timeout when users upload large files?",
        assistant: "The upstream takes longer than proxy_read_timeout (60 s by default). Raise proxy_read_timeout and client_body_timeout for the upload location.",
        turn_range: "1",
        total_pairs: 1,
        previous: None,
    };
    let h = w
        .write(&input)
        .expect("the writer never fails: it falls back");
    let calls = w.requests.load(Ordering::Relaxed);
    assert!(calls >= 1, "the real server was called");
    if h.backfill {
        // The tiny model's answer did not validate: the built-in header
        // stands in, and every attempt was made.
        assert_eq!(calls, 2, "first attempt + one retry");
        assert!(
            h.context.starts_with("From a ChatGPT conversation"),
            "{}",
            h.context
        );
    } else {
        // It validated: the writer's guarantees hold.
        assert!((1..=3).contains(&h.topics.len()), "{h:?}");
        assert!(h.topics.iter().all(|t| *t == t.to_lowercase()), "{h:?}");
        assert!(h.context.len() >= 40, "{h:?}");
    }
    // The strict path talks to the same server again.
    let before = w.requests.load(Ordering::Relaxed);
    let _ = w.write_strict(&input);
    assert!(w.requests.load(Ordering::Relaxed) > before);
}
