//! Starts a real ChromaDB server (`chroma run`) on a free 127.0.0.1 port
//! for a test, and stops it when dropped. Shared by the index tests and the
//! end-to-end tests (`#[path]`-included).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn chroma_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHATMILL_CHROMA_BIN") {
        return Some(PathBuf::from(p));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let p = cache.join("chatmill/chroma/bin/chroma");
    p.is_file().then_some(p)
}

#[allow(clippy::print_stderr, reason = "a skipped test says why")]
pub fn start() -> Option<Server> {
    let Some(bin) = chroma_bin() else {
        assert!(
            std::env::var_os("CHATMILL_REQUIRE_CHROMA").is_none(),
            "CHATMILL_REQUIRE_CHROMA is set but no chroma server is installed (run scripts/setup-chroma.sh)"
        );
        eprintln!("skipping: no chroma server (run scripts/setup-chroma.sh)");
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(&bin)
        .args([
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--path",
        ])
        .arg(dir.path().join("data"))
        .env("ANONYMIZED_TELEMETRY", "False")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let url = format!("http://127.0.0.1:{port}");
    let mut server = Server {
        child,
        url,
        _dir: dir,
    };
    let start = Instant::now();
    loop {
        if heartbeat(&server.url) {
            return Some(server);
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("chroma exited during start-up: {status}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "chroma did not come up"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One plain HTTP/1.1 GET of the heartbeat (no client library needed).
fn heartbeat(url: &str) -> bool {
    use std::io::{Read as _, Write as _};
    let addr = url.trim_start_matches("http://");
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if write!(
        s,
        "GET /api/v2/heartbeat HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.starts_with("HTTP/1.1 200")
}
