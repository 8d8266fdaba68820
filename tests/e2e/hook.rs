//! `chatmill hook claude-code`, fed the JSON a Claude Code hook receives,
//! on a transcript that grows between calls as a live session's does. It
//! always exits 0 and says what it did in `ROOT/.chatmill/hook.log`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::support::{Env, Run};

const SESSION: &str = "3f1c2a9e-7b4d-4e8a-9c21-5d6e7f8a9b0c";

/// One transcript line: `kind` user or assistant, `parent` the uuid before.
pub(crate) fn line(
    uuid: &str,
    parent: Option<&str>,
    kind: &str,
    message: &str,
    minute: u32,
) -> String {
    let parent = parent.map_or_else(|| "null".into(), |p| format!("\"{p}\""));
    format!(
        r#"{{"parentUuid":{parent},"isSidechain":false,"userType":"external","cwd":"/home/ada/garden","sessionId":"{SESSION}","version":"2.1.14","type":"{kind}","uuid":"{uuid}","timestamp":"2026-11-20T10:{minute:02}:00.000Z","message":{message}}}"#
    )
}

pub(crate) fn user(uuid: &str, parent: Option<&str>, text: &str, minute: u32) -> String {
    line(
        uuid,
        parent,
        "user",
        &format!(r#"{{"role":"user","content":"{text}"}}"#),
        minute,
    )
}

pub(crate) fn assistant(uuid: &str, parent: &str, content: &str, minute: u32) -> String {
    let message = format!(
        r#"{{"model":"claude-sonnet-4-5-20250929","id":"msg_{uuid}","type":"message","role":"assistant","content":[{content}]}}"#
    );
    line(uuid, Some(parent), "assistant", &message, minute)
}

pub(crate) fn text(t: &str) -> String {
    format!(r#"{{"type":"text","text":"{t}"}}"#)
}

pub(crate) fn append(path: &Path, lines: &[String], end_with_newline: bool) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    let body = lines.join("\n");
    write!(f, "{body}{}", if end_with_newline { "\n" } else { "" }).unwrap();
}

/// Runs the hook with `payload` on stdin (and `extra` arguments); returns
/// its exit code, stdout and the log's last line.
fn hook(env: &Env, root: &Path, payload: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["--root", root.to_str().unwrap(), "hook", "claude-code"];
    args.extend_from_slice(extra);
    let mut child = env
        .cmd()
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let log = std::fs::read_to_string(root.join(".chatmill/hook.log")).unwrap_or_default();
    let last = log.lines().last().unwrap_or_default().to_string();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        last,
    )
}

fn payload(transcript: &Path, event: &str) -> String {
    serde_json::json!({
        "session_id": SESSION,
        "transcript_path": transcript,
        "cwd": "/home/ada/garden",
        "hook_event_name": event,
        "stop_hook_active": false,
    })
    .to_string()
}

fn chunks(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    v.sort();
    v
}

#[test]
fn a_live_session_is_imported_as_it_grows_and_an_unfinished_answer_waits() {
    let env = Env::new();
    let root = env.path("root");
    let t = env
        .path("projects/-home-ada-garden")
        .join(format!("{SESSION}.jsonl"));
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    // Turn 1 answered; turn 2's answer has only a tool call so far.
    append(
        &t,
        &[
            user(
                "u1",
                None,
                "Which mulch keeps slugs away from the lettuce bed?",
                0,
            ),
            assistant(
                "a1",
                "u1",
                &text("Coarse bark or crushed eggshells: slugs avoid sharp, dry mulch."),
                1,
            ),
            user(
                "u2",
                Some("a1"),
                "Check my watering script for the lettuce bed",
                2,
            ),
            assistant(
                "a2",
                "u2",
                r#"{"type":"tool_use","id":"toolu_01","name":"Read","input":{"file_path":"/home/ada/garden/water.sh"}}"#,
                3,
            ),
        ],
        true,
    );
    let (code, stdout, log) = hook(&env, &root, &payload(&t, "Stop"), &[]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{log}");
    assert!(
        log.contains("claude-code Stop") && log.contains("chunks=1 waiting=1 errors=0"),
        "{log}"
    );
    assert_eq!(chunks(&root).len(), 1);

    // The answer completes: the waiting pair is chunked, whole.
    append(
        &t,
        &[
            line(
                "r2",
                Some("a2"),
                "user",
                r#"{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"sleep 600","is_error":false}]}"#,
                4,
            ),
            assistant(
                "a3",
                "r2",
                &text("The script waters for ten minutes; five is enough for lettuce."),
                5,
            ),
        ],
        true,
    );
    let (code, _, log) = hook(&env, &root, &payload(&t, "Stop"), &[]);
    assert_eq!(code, 0);
    assert!(log.contains("chunks=1 waiting=0"), "{log}");
    let all = chunks(&root);
    assert_eq!(all.len(), 2);
    let texts: Vec<String> = all
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let second = texts
        .iter()
        .find(|t| t.contains("watering script"))
        .unwrap();
    assert!(second.contains("five is enough for lettuce"), "{second}");

    // A line still being written (no line break yet) holds its pair back.
    append(
        &t,
        &[user("u3", Some("a3"), "And for the tomatoes?", 6)],
        true,
    );
    append(&t, &[r#"{"parentUuid":"u3","isSidechain":false,"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Tomatoes like"#.to_string()], false);
    let (code, _, log) = hook(&env, &root, &payload(&t, "Stop"), &[]);
    assert_eq!(code, 0);
    assert!(log.contains("chunks=0 waiting=1"), "{log}");
    assert_eq!(chunks(&root).len(), 2);
    // SessionEnd: nothing more will come, every pair counts.
    append(&t, &[r#" deep, rare watering."}]}}"#.to_string()], true);
    let (_, _, log) = hook(&env, &root, &payload(&t, "SessionEnd"), &[]);
    assert!(
        log.contains("claude-code SessionEnd") && log.contains("chunks=1 waiting=0"),
        "{log}"
    );
    // The index has them: a search finds the last one.
    let found = env
        .run(&[
            "--root",
            root.to_str().unwrap(),
            "search",
            "--mode",
            "keyword",
            "tomatoes",
            "--json",
        ])
        .json();
    assert!(
        found["hits"][0]["document"]
            .as_str()
            .unwrap()
            .contains("Tomatoes like"),
        "{found:#}"
    );
}

#[test]
fn a_bad_payload_flag_or_path_is_logged_and_the_hook_still_exits_0() {
    let env = Env::new();
    let root = env.path("root");
    let cases: [(&str, &[&str], &str); 5] = [
        (
            "not json at all",
            &[],
            "the payload is not a Claude Code hook's JSON",
        ),
        (
            r#"{"session_id":"s"}"#,
            &[],
            "missing field `transcript_path`",
        ),
        (
            r#"{"transcript_path":"relative/x.jsonl"}"#,
            &[],
            "is not an absolute path",
        ),
        (
            r#"{"transcript_path":"/nonexistent/chatmill/x.jsonl"}"#,
            &[],
            "cannot read",
        ),
        (
            r#"{"transcript_path":"/etc/passwd"}"#,
            &["--bogus-flag", "x"],
            "ignored arguments",
        ),
    ];
    for (payload, extra, says) in cases {
        let (code, stdout, log) = hook(&env, &root, payload, extra);
        assert_eq!(code, 0, "{payload}");
        assert_eq!(stdout, "", "{payload}");
        assert!(log.contains(says), "{payload}: {log}");
    }
    // A bad global flag before the entry point: still 0.
    let run = env.run(&["--no-such-flag", "hook", "claude-code"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// The hook leaves vectors to the embedding stage, so it never loads the
/// model (it runs after every Claude Code turn; the weights took ~50 ms of
/// each call); `chatmill embed` and a search, which embed, load it. Told
/// by the index's tracing event, through the binary with the real model.
#[test]
fn the_hook_never_loads_the_model_and_embedding_does() {
    const LOADING: &str = "loading the embedding model";
    let env = Env::new();
    let root = env.path("root");
    let r = root.to_str().unwrap();
    let t = env
        .path("projects/-viewer")
        .join("1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl");
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    std::fs::copy(
        crate::support::corpus(
            "claude-code/claude-code-viewer-1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        ),
        &t,
    )
    .unwrap();
    let real = |args: &[&str]| {
        let mut c = env.cmd();
        c.env_remove("CHATMILL_EMBEDDING")
            .env("CHATMILL_LOG", "chatmill_index=info")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let mut child = real(&["--root", r, "hook", "claude-code"]).spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload(&t, "Stop").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("no model directory found") {
        assert!(
            std::env::var_os("CHATMILL_REQUIRE_MODEL").is_none(),
            "CHATMILL_REQUIRE_MODEL is set but the model is missing: {stderr}"
        );
        return;
    }
    let log = std::fs::read_to_string(root.join(".chatmill/hook.log")).unwrap();
    assert!(
        log.contains("errors=0") && !log.contains("chunks=0"),
        "{log}"
    );
    assert!(
        !stderr.contains(LOADING),
        "the hook loaded the model: {stderr}"
    );
    let waiting: i64 = rusqlite::Connection::open(root.join(".chatmill/index.sqlite3"))
        .unwrap()
        .query_row("SELECT count(*) FROM pending", [], |r| r.get(0))
        .unwrap();
    assert!(waiting > 0, "the hook's chunks wait for their vectors");

    for args in [
        &["--root", r, "embed"][..],
        &["--root", r, "search", "--json", "session viewer"],
    ] {
        let run = Run::from(real(args).output().unwrap());
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stderr.matches(LOADING).count(), 1, "{args:?}: {run:?}");
    }
}
