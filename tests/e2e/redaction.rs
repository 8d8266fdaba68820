//! Secrets stay secret: fake secrets of every kind the redactor knows,
//! planted in every part kind and metadata field of a ChatGPT export, a
//! Claude Code session and an API batch log, imported with a header model
//! and an embedding model behind a local fake endpoint that records what
//! it is sent. Not one secret byte may reach the root (chunk files, notes,
//! manifest, index files, assets) or the endpoint; each kind must show as
//! its placeholder, so none was merely dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::Env;

#[path = "../../host/redact/tests/support/planted.rs"]
mod planted;

use planted::{Rng, Sample};

/// An OpenAI-compatible endpoint on 127.0.0.1 answering chat completions
/// (a valid header) and embeddings (small vectors), keeping every request.
struct FakeEndpoint {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl FakeEndpoint {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Self { url, seen }
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut head = request_line.clone();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            head.push_str(&line);
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        seen.lock().unwrap().push(format!("{head}{body}"));
        let answer = if request_line.contains("/embeddings") {
            let inputs = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["input"].as_array().map(Vec::len))
                .unwrap_or(1);
            let data: Vec<Value> = (0..inputs)
                .map(|i| json!({"index": i, "embedding": [1.0, i as f32, 0.5, 0.25]}))
                .collect();
            json!({"data": data})
        } else {
            let content = json!({
                "context": "The user asked how to configure a client with a credential, and the reply explains the setting and where it belongs.",
                "topics": ["client configuration"]
            });
            json!({"choices": [{"message": {"role": "assistant", "content": content.to_string()}}]})
        };
        let answer = answer.to_string();
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if stream.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// Every specific and structured kind, and generic assignments the
/// generic rule is sure to take.
fn samples() -> Vec<Sample> {
    let mut rng = Rng::new(0x5ec7e75);
    let mut all = planted::specific(&mut rng);
    all.extend(planted::structured(&mut rng));
    all
}

/// Two contexts of a sample (prose and code or JSON), round-robin over
/// its contexts so every context kind appears.
fn texts(s: &Sample, n: usize) -> (String, String) {
    let contexts = planted::contexts(s);
    let a = contexts[n % contexts.len()].1.clone();
    let b = contexts[(n + 1) % contexts.len()].1.clone();
    (a, b)
}

/// One ChatGPT conversation per sample: the secret in the title (bare
/// ones), the request, a code answer and a tool's output.
fn chatgpt(samples: &[Sample]) -> Value {
    let convs: Vec<Value> = samples
        .iter()
        .enumerate()
        .map(|(n, s)| {
            let (a, b) = texts(s, n);
            let title = match s.form {
                planted::Form::Bare => format!("Fixing {}", s.secret),
                _ => format!("Question {n}"),
            };
            let t = 1_700_000_000 + n as i64 * 100;
            let msg = |id: &str, role: &str, content: Value, dt: i64| {
                json!({"id": id, "author": {"role": role}, "create_time": t + dt,
                       "content": content, "metadata": {"model_slug": "gpt-4o"}})
            };
            json!({
                "id": format!("conv-{n}"),
                "conversation_id": format!("conv-{n}"),
                "title": title,
                "create_time": t,
                "update_time": t + 9,
                "current_node": "a2",
                "mapping": {
                    "root": {"id": "root", "message": null, "parent": null, "children": ["u1"]},
                    "u1": {"id": "u1", "parent": "root", "children": ["a1"],
                           "message": msg("u1", "user", json!({"content_type": "text", "parts": [a]}), 1)},
                    "a1": {"id": "a1", "parent": "u1", "children": ["t1"],
                           "message": msg("a1", "assistant", json!({"content_type": "code", "language": "python", "text": b}), 2)},
                    "t1": {"id": "t1", "parent": "a1", "children": ["a2"],
                           "message": msg("t1", "tool", json!({"content_type": "execution_output", "text": a}), 3)},
                    "a2": {"id": "a2", "parent": "t1", "children": [],
                           "message": msg("a2", "assistant", json!({"content_type": "text", "parts": [format!("Rotate it: {b}")]}), 4)}
                }
            })
        })
        .collect();
    Value::Array(convs)
}

/// One Claude Code session: per sample, a prompt, then thinking, text, a
/// shell call and its output; the secrets also in `cwd` and `gitBranch`.
fn claude_code(samples: &[Sample]) -> String {
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    let mut uuid = 0;
    let mut push = |lines: &mut Vec<String>, kind: &str, message: Value, extra: &str| {
        uuid += 1;
        let id = format!("00000000-0000-4000-8000-{uuid:012}");
        let line = json!({
            "type": kind, "uuid": id, "parentUuid": parent,
            "sessionId": "5e55-10n", "timestamp": format!("2025-01-0{}T10:{:02}:00Z", 1 + uuid / 1000, (uuid / 10) % 60),
            "cwd": format!("/home/me/project-{extra}"), "gitBranch": format!("fix/{extra}"),
            "version": "1.0.98", "message": message,
        });
        parent = Some(id);
        lines.push(line.to_string());
    };
    for (n, s) in samples.iter().enumerate() {
        let (a, b) = texts(s, n + 3);
        let extra = if matches!(s.form, planted::Form::Bare) {
            s.secret.as_str()
        } else {
            "main"
        };
        push(
            &mut lines,
            "user",
            json!({"role": "user", "content": a}),
            extra,
        );
        let tool = format!("toolu_{n:04}");
        push(
            &mut lines,
            "assistant",
            json!({"role": "assistant", "model": "claude-sonnet-4", "content": [
                {"type": "thinking", "thinking": format!("The user shared {b}")},
                {"type": "text", "text": format!("Let me check: {b}")},
                {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": a.clone(), "description": b}}
            ]}),
            extra,
        );
        push(
            &mut lines,
            "user",
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool, "content": a}]}),
            extra,
        );
        push(
            &mut lines,
            "assistant",
            json!({"role": "assistant", "model": "claude-sonnet-4", "content": [{"type": "text", "text": format!("Done. {a}")}]}),
            extra,
        );
    }
    lines.join("\n") + "\n"
}

/// An OpenAI batch: per sample a request (system and user message) and its
/// answer in the results file.
fn api_log(samples: &[Sample]) -> (String, String) {
    let (mut input, mut output) = (Vec::new(), Vec::new());
    for (n, s) in samples.iter().enumerate() {
        let (a, b) = texts(s, n + 5);
        let id = format!("request-{n}");
        input.push(
            json!({"custom_id": id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-4o-mini", "messages": [
                {"role": "system", "content": format!("Keep this safe: {b}")},
                {"role": "user", "content": a}]}})
            .to_string(),
        );
        output.push(json!({"id": format!("batch_req_{n}"), "custom_id": id,
            "response": {"status_code": 200, "body": {"model": "gpt-4o-mini", "created": 1_742_500_035,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("Noted: {b}")}}]}}}).to_string());
    }
    (input.join("\n") + "\n", output.join("\n") + "\n")
}

/// Every file under `dir`, as text (lossy), with its path.
fn all_files(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            all_files(&p, out);
        } else {
            let bytes = std::fs::read(&p).unwrap();
            out.push((
                p.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
}

#[test]
fn no_planted_secret_reaches_the_root_or_an_endpoint() {
    let env = Env::new();
    let endpoint = FakeEndpoint::start();
    env.write(
        "config.toml",
        format!(
            "[header]\nurl = \"{0}\"\nmodel = \"h\"\nretries = 0\n\n[embedding]\nprovider = \"openai\"\nurl = \"{0}\"\nmodel = \"e\"\ncache = false\n",
            endpoint.url
        ),
    );
    let samples = samples();
    assert!(samples.len() >= 80, "{} kinds", samples.len());
    env.write(
        "in/chatgpt/conversations.json",
        chatgpt(&samples).to_string(),
    );
    env.write("in/claude-code/5e55-10n.jsonl", claude_code(&samples));
    let (input, output) = api_log(&samples);
    env.write("in/api/batch_input.jsonl", input);
    env.write("in/api/batch_output.jsonl", output);
    let root = env.path("root");
    let out = env
        .cmd()
        .env_remove("CHATMILL_EMBEDDING")
        .args(["--root", root.to_str().unwrap(), "import", "--json"])
        .arg(env.path("in"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    // The batch log is two files, parsed as one input.
    assert_eq!(summary["files_processed"], 4, "{stdout}");

    let mut files = Vec::new();
    all_files(&root, &mut files);
    let requests = endpoint.requests();
    assert!(
        requests.iter().any(|r| r.contains("/chat/completions")),
        "the header model was asked"
    );
    assert!(
        requests.iter().any(|r| r.contains("/embeddings")),
        "the embedding model was asked"
    );
    let sent: Vec<(String, String)> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("request {i}"), r.clone()))
        .collect();
    let mut leaks = Vec::new();
    for s in &samples {
        for (name, text) in files.iter().chain(&sent) {
            let found = planted::leaks(&s.secret, text);
            if !found.is_empty() {
                leaks.push(format!("{} in {name}: {found:?}", s.rule));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );

    // Every kind arrived, as its placeholder, in the chunk files, and the
    // summary counted it.
    let chunks: String = files
        .iter()
        .filter(|(p, _)| p.ends_with(".md"))
        .map(|(_, t)| t.as_str())
        .collect();
    let counted = &summary["redactions"];
    for s in &samples {
        assert!(
            chunks.contains(&format!("[REDACTED:{}:", s.rule)),
            "no placeholder of {} in the chunks",
            s.rule
        );
        assert!(
            counted[s.rule].as_u64().unwrap_or(0) > 0,
            "{} not counted: {counted}",
            s.rule
        );
    }
    assert!(
        chunks.contains("\nredaction: 1\n"),
        "chunks record the rule set"
    );

    // The report counts the placeholders and shows no secret.
    let report = env
        .cmd()
        .args(["--root", root.to_str().unwrap(), "report", "--json"])
        .output()
        .unwrap();
    let report_json = String::from_utf8_lossy(&report.stdout);
    let r: Value = serde_json::from_str(&report_json).unwrap();
    let by_rule = &r["redactions"]["by_rule"];
    for s in &samples {
        assert!(
            by_rule[s.rule].as_u64().unwrap_or(0) > 0,
            "report: {}",
            s.rule
        );
        assert!(
            planted::leaks(&s.secret, &report_json).is_empty(),
            "report shows {}",
            s.rule
        );
    }
    assert!(r["redactions"]["chunks"].as_u64().unwrap() > 100);

    // The root is clean to `verify` and `scan` finds the inputs' secrets.
    let verify = env
        .cmd()
        .args(["--root", root.to_str().unwrap(), "verify"])
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    let scan = env.cmd().arg("scan").arg(env.path("in")).output().unwrap();
    assert_eq!(scan.status.code(), Some(1));
    let listed = String::from_utf8_lossy(&scan.stdout);
    for s in &samples {
        assert!(
            listed.contains(&format!(": {} `", s.rule)),
            "scan missed {}",
            s.rule
        );
        assert!(
            planted::leaks(&s.secret, &listed).is_empty(),
            "scan showed {}",
            s.rule
        );
    }
}

/// A root written without redaction: `verify` names the chunks that hold
/// a secret, the import counts their input as outdated, and `import
/// --reprocess` rewrites them redacted under the same chunk ids.
#[test]
fn chunks_written_unredacted_are_found_and_rewritten_by_reprocess() {
    let env = Env::new();
    let mut rng = Rng::new(77);
    let samples: Vec<Sample> = planted::specific(&mut rng).into_iter().take(5).collect();
    let session = env.write("in/5e55-10n.jsonl", claude_code(&samples));
    let root = env.path("root");
    let root_arg = root.to_str().unwrap();
    let chatmill = |args: &[&str]| {
        let out = env
            .cmd()
            .args(["--root", root_arg])
            .args(args)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    let session = session.to_str().unwrap();
    let (code, text) = chatmill(&["--no-redact", "import", session]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("warning: --no-redact"), "{text}");
    let chunk_ids = |dir: &Path| -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".md"))
            .collect();
        ids.sort();
        ids
    };
    let before = chunk_ids(&root);
    let leaked = |root: &Path| {
        let mut files = Vec::new();
        all_files(root, &mut files);
        let mut at = std::collections::BTreeSet::new();
        for s in &samples {
            for (name, t) in &files {
                if !planted::leaks(&s.secret, t).is_empty() {
                    at.insert(format!("{} in {name}", s.rule));
                }
            }
        }
        at
    };
    let unredacted = leaked(&root);
    for s in &samples {
        let rule = format!("{} in ", s.rule);
        assert!(
            unredacted.iter().any(|l| l.starts_with(&rule)),
            "unredacted on purpose: {unredacted:?}"
        );
    }

    let (code, text) = chatmill(&["verify"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("secret: claude-code-"), "{text}");
    assert!(text.contains("import --reprocess"), "{text}");

    let (code, text) = chatmill(&["import", session]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("1 inputs were read by an older chatmill"),
        "{text}"
    );

    let (code, text) = chatmill(&["import", "--reprocess", session]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("secrets redacted:"), "{text}");
    let left = leaked(&root);
    assert!(left.is_empty(), "{left:#?}");
    assert_eq!(chunk_ids(&root), before, "the same chunk ids");
    let (code, text) = chatmill(&["verify"]);
    assert_eq!(code, Some(0), "{text}");
}

/// Redaction off with a header model that is not on this machine needs a
/// second, explicit setting; nothing is imported without it.
#[test]
fn redaction_off_never_sends_to_a_remote_endpoint_without_a_second_setting() {
    let env = Env::new();
    let config = "[header]\nurl = \"https://llm.example.invalid/v1\"\nmodel = \"m\"\n\n[redact]\nenabled = false\n";
    env.write("config.toml", config);
    let session = env.write("in/s.jsonl", claude_code(&samples()[..1]));
    let root = env.path("root");
    let out = env
        .cmd()
        .args(["--root", root.to_str().unwrap(), "import"])
        .arg(&session)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("send_unredacted"), "{stderr}");
    assert!(!root.join(".processing-manifest.json").exists());
}

/// Chunks whose input is gone (so `--reprocess` cannot reach them) are
/// rewritten by `verify --repair`, index and notes with them.
#[test]
fn verify_repair_redacts_chunks_whose_input_is_gone() {
    let env = Env::new();
    let mut rng = Rng::new(78);
    let samples: Vec<Sample> = planted::specific(&mut rng).into_iter().take(4).collect();
    let session = env.write("in/5e55-10n.jsonl", claude_code(&samples));
    let root = env.path("root");
    let run = |args: &[&str]| {
        env.cmd()
            .args(["--root", root.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--no-redact", "import", session.to_str().unwrap()]);
    assert!(out.status.success());
    std::fs::remove_file(&session).unwrap();
    let out = run(&["verify", "--repair"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("repaired: replaced "), "{text}");
    let mut files = Vec::new();
    all_files(&root, &mut files);
    for s in &samples {
        for (name, t) in &files {
            assert!(
                planted::leaks(&s.secret, t).is_empty(),
                "{} in {name}",
                s.rule
            );
        }
    }
    let out = run(&["verify"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
