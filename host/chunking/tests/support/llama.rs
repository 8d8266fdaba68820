//! Starts llama.cpp's `llama-server` with SmolLM2-135M (both installed by
//! `scripts/setup-llm.sh`) on a free 127.0.0.1 port, and stops it when
//! dropped. Shared by the header-model and embedding-endpoint tests.

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server(Child);

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

/// Starts llama-server on a free port with `extra` arguments (e.g.
/// `--embeddings`); the base URL ends in `/v1`. `None` when told to skip.
pub fn start(extra: &[&str]) -> Option<(Server, String)> {
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
        .args(extra)
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
