//! `chatmill mcp` driven by a real MCP client: the official Python SDK
//! (`mcp` on PyPI, installed by `scripts/setup-mcp.sh`), over stdio, on a
//! root imported from `examples/exports`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{Env, repo_root};

/// The Python with the MCP SDK (`CHATMILL_MCP_PYTHON`, else the one
/// `scripts/setup-mcp.sh` makes); `None` when it is not there and the
/// suite does not require it.
#[allow(clippy::print_stderr, reason = "a test says why it did not run")]
fn python() -> Option<PathBuf> {
    let path = std::env::var_os("CHATMILL_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            home.join(".cache/chatmill/mcp-venv/bin/python")
        });
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CHATMILL_REQUIRE_MCP").is_none(),
        "no MCP Python SDK at {}: run scripts/setup-mcp.sh",
        path.display()
    );
    eprintln!("skipped: no MCP Python SDK (scripts/setup-mcp.sh installs it)");
    None
}

/// A root with the example exports imported.
fn imported(env: &Env) -> String {
    let root = env.path("root");
    let exports = repo_root().join("examples/exports");
    let run = env.run(&[
        "--root",
        root.to_str().unwrap(),
        "import",
        exports.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    root.display().to_string()
}

/// Runs the client with `plan` against `chatmill --root ROOT mcp ARGS`.
fn client(py: &PathBuf, env: &Env, root: &str, args: &[&str], plan: Value) -> Value {
    let mut command = vec![env!("CARGO_BIN_EXE_chatmill"), "--root", root, "mcp"];
    command.extend_from_slice(args);
    let mut plan = plan;
    plan["command"] = json!(command);
    plan["env"] = json!({
        "CHATMILL_EMBEDDING": "lexical",
        "CHATMILL_CONFIG": env.path("config.toml"),
        "CHATMILL_CACHE_DIR": env.path("cache"),
        "CHATMILL_ADAPTERS_DIR": env.adapters_dir(),
    });
    let mut child = Command::new(py)
        .arg(repo_root().join("tests/mcp/client.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    serde_json::to_writer(child.stdin.take().unwrap(), &plan).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the client failed:\n{stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{stderr}"))
}

#[test]
fn a_real_client_lists_the_tools_and_calls_each_one() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let root = imported(&env);
    let plan = json!({"calls": [
        {"tool": "search", "arguments": {"query": "sourdough starter smells like acetone", "k": 3}},
        {"tool": "search", "arguments": {"query": "model", "platform": "local", "since": "2026-01-01"}},
        {"tool": "recent", "arguments": {"k": 2}},
        {"tool": "search", "arguments": {"query": "x", "since": "yesterday-ish"}},
        {"tool": "get_chunk", "arguments": {"chunk_id": "../../etc/passwd"}},
        {"tool": "get_chunk", "arguments": {"chunk_id": "chatgpt-000000000000-001-2024-05-01"}},
        {"tool": "no_such_tool", "arguments": {}},
        {"tool": "record_turn", "arguments": {"session_id": "s", "turn_index": 1, "user": "u", "assistant": "a"}},
        {"tool": "recent", "arguments": {"k": 50, "project": "invoice-tool"}},
        {"tool": "search", "arguments": {"query": "totals", "project": "no-such-project"}},
    ]});
    let out = client(&py, &env, &root, &[], plan);
    assert_eq!(out["server"], "chatmill");
    let names: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["search", "recent", "get_chunk", "get_conversation"],
        "read-only: no record_turn"
    );
    for t in out["tools"].as_array().unwrap() {
        assert_eq!(t["input_schema"]["type"], "object", "{t}");
        assert!(
            t["output_schema"]["properties"]["entries"].is_object(),
            "{t}"
        );
    }
    let calls = out["calls"].as_array().unwrap();
    // search: numbered entries with provenance, and the same as structure.
    let hit = &calls[0]["structured"]["entries"][0];
    assert_eq!(calls[0]["is_error"], false);
    assert_eq!(
        hit["title"], "Reviving a sourdough starter",
        "{:#}",
        calls[0]
    );
    assert!(hit["source"].as_str().unwrap().starts_with(&root));
    assert!(hit["text"].as_str().unwrap().contains("nail polish"));
    let text = calls[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("[1] Reviving a sourdough starter · chatgpt · 2024-05-01\n"),
        "{text}"
    );
    // Filters hold.
    let local = calls[1]["structured"]["entries"].as_array().unwrap();
    assert!(
        !local.is_empty()
            && local
                .iter()
                .all(|e| e["platform"] == "local" && e["time"].as_str().unwrap() >= "2026"),
        "{local:?}"
    );
    // recent: newest first, no score.
    let recent = calls[2]["structured"]["entries"].as_array().unwrap();
    assert_eq!(recent.len(), 2);
    assert!(recent[0]["time"].as_str() >= recent[1]["time"].as_str());
    assert!(recent[0].get("score").is_none());
    // Tool errors read like the CLI's.
    assert_eq!(calls[3]["is_error"], true);
    assert!(
        calls[3]["text"]
            .as_str()
            .unwrap()
            .starts_with("error: `since` \"yesterday-ish\" is not a time")
    );
    assert_eq!(calls[4]["is_error"], true);
    assert!(
        calls[4]["text"]
            .as_str()
            .unwrap()
            .contains("is not a chunk id")
    );
    assert_eq!(calls[5]["is_error"], true);
    assert!(
        calls[5]["text"]
            .as_str()
            .unwrap()
            .contains("\n\nhint: chunk ids come from"),
        "{}",
        calls[5]
    );
    // A tool that is not there is a protocol error.
    assert!(
        calls[6]["protocol_error"]
            .as_str()
            .unwrap()
            .contains("no tool `no_such_tool`"),
        "{}",
        calls[6]
    );
    assert!(
        calls[7]["protocol_error"].is_string(),
        "read-only: {}",
        calls[7]
    );
    // A project scopes to its coding sessions (the Claude Code session in
    // `/home/dev/projects/invoice-tool`), and the entries say it.
    let project = calls[8]["structured"]["entries"].as_array().unwrap();
    assert!(
        !project.is_empty()
            && project
                .iter()
                .all(|e| e["project"] == "invoice-tool" && e["platform"] == "claude-code"),
        "{project:?}"
    );
    assert!(
        calls[8]["text"]
            .as_str()
            .unwrap()
            .contains(" · claude-code · project invoice-tool · "),
        "{}",
        calls[8]
    );
    assert_eq!(calls[9]["structured"]["entries"], json!([]), "{}", calls[9]);
}

#[test]
fn get_chunk_and_get_conversation_read_what_search_found() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let root = imported(&env);
    let first = client(
        &py,
        &env,
        &root,
        &[],
        json!({"calls": [
            {"tool": "search", "arguments": {"query": "sourdough starter", "k": 1}},
        ]}),
    );
    let hit = &first["calls"][0]["structured"]["entries"][0];
    let (chunk, conv) = (
        hit["chunk_id"].as_str().unwrap(),
        hit["conversation_id"].as_str().unwrap(),
    );
    let out = client(
        &py,
        &env,
        &root,
        &[],
        json!({"calls": [
            {"tool": "get_chunk", "arguments": {"chunk_id": chunk}},
            {"tool": "get_conversation", "arguments": {"conversation_id": conv, "limit": 1}},
            {"tool": "get_conversation", "arguments": {"conversation_id": conv, "offset": 1, "limit": 50}},
            {"tool": "get_conversation", "arguments": {"conversation_id": "nope"}},
        ]}),
    );
    let calls = out["calls"].as_array().unwrap();
    let whole = calls[0]["structured"]["entries"][0]["text"]
        .as_str()
        .unwrap();
    let file = std::fs::read_to_string(PathBuf::from(&root).join(format!("{chunk}.md"))).unwrap();
    assert_eq!(whole, file, "get_chunk gives the whole chunk file");
    let page1 = &calls[1]["structured"];
    let total = page1["total"].as_u64().unwrap();
    assert!(total >= 2, "{page1}");
    assert_eq!(page1["entries"].as_array().unwrap().len(), 1);
    assert_eq!(page1["next_offset"], 1);
    let rest = calls[2]["structured"]["entries"].as_array().unwrap();
    assert_eq!(rest.len() as u64, total - 1);
    assert!(calls[2]["structured"].get("next_offset").is_none());
    let mut ids = vec![page1["entries"][0]["chunk_id"].as_str().unwrap()];
    ids.extend(rest.iter().map(|e| e["chunk_id"].as_str().unwrap()));
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "in conversation order");
    assert_eq!(calls[3]["is_error"], true);
    assert!(
        calls[3]["text"]
            .as_str()
            .unwrap()
            .contains("no conversation `nope`")
    );
}

#[test]
fn record_turn_stores_an_exchange_that_search_then_finds() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let root = imported(&env);
    let turn = json!({"session_id": "mcp-session-1", "turn_index": 1,
        "user": "Which torque does the quokkabike rear axle nut need?",
        "assistant": "Tighten the quokkabike rear axle nut to 40 Nm, then check the brake caliper alignment."});
    let out = client(
        &py,
        &env,
        &root,
        &["--allow-write"],
        json!({
            "calls": [
                {"tool": "record_turn", "arguments": turn},
                {"tool": "record_turn", "arguments": turn},
                {"tool": "search", "arguments": {"query": "quokkabike axle", "mode": "keyword", "k": 1}},
            ],
            "cancel": {"tool": "search", "arguments": {"query": "sourdough"}, "after_s": 0.0005},
        }),
    );
    let names: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"record_turn"));
    let calls = out["calls"].as_array().unwrap();
    let id = calls[0]["structured"]["chunk_id"].as_str().unwrap();
    assert_eq!(calls[0]["structured"]["indexed"], true, "{}", calls[0]);
    assert_eq!(
        calls[1]["structured"]["duplicate"], true,
        "sent twice, stored once"
    );
    assert_eq!(calls[2]["structured"]["entries"][0]["chunk_id"], id);
    assert!(
        PathBuf::from(&root).join("raw/mcp-session-1.md").exists(),
        "the raw log"
    );
    // A cancelled call leaves the session working.
    assert_eq!(out["after_cancel"]["is_error"], false, "{out:#}");
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The status code a bare HTTP POST to `/mcp` gets, with `auth` as its
/// Authorization header.
fn status_of(port: u16, auth: Option<&str>) -> u16 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let auth = auth
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[test]
fn over_http_a_client_needs_the_token_and_sigterm_stops_the_server() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let root = imported(&env);
    let refused = env.run(&[
        "--root",
        &root,
        "mcp",
        "--listen",
        "0.0.0.0:9",
        "--token",
        "t",
    ]);
    assert_eq!(refused.code, 2, "not loopback: {}", refused.stderr);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut server = env
        .cmd()
        .args(["--root", &root, "mcp", "--listen", &addr])
        .env("CHATMILL_TOKEN", "s3cret-token")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let up = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::net::TcpStream::connect(&addr).is_ok()
    });
    assert!(up, "the server did not listen on {addr}");
    assert_eq!(status_of(port, None), 401);
    assert_eq!(status_of(port, Some("Bearer wrong")), 401);
    let plan = json!({
        "url": format!("http://{addr}/mcp"),
        "token": "s3cret-token",
        "calls": [{"tool": "search", "arguments": {"query": "sourdough starter", "k": 1}}],
    });
    let mut child = Command::new(&py)
        .arg(repo_root().join("tests/mcp/client.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    serde_json::to_writer(child.stdin.take().unwrap(), &plan).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out["tools"].as_array().unwrap().len(), 4);
    let hit = &out["calls"][0]["structured"]["entries"][0];
    assert_eq!(hit["title"], "Reviving a sourdough starter", "{out:#}");
    // SIGTERM: a clean stop.
    let pid = server.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = server.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(server.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
}
