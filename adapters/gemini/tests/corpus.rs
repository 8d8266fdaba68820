//! The Gemini adapter over the shared corpus (Gemini CLI sessions) and the
//! hand-made Takeout fixtures (see tests/fixtures/README.md): counts
//! established independently, content spot checks, chunking invariance,
//! sniff discipline and robustness.

use std::path::{Path, PathBuf};

use chatmill_adapter_gemini::Gemini;
use chatmill_adapter_sdk::testkit::{
    assert_chunking_invariant, corpus_dir, corpus_file, corpus_files, count, sniff_file,
};
use chatmill_adapter_sdk::{Adapter, ConversationStart, Input, Item, Part, TurnPair, parse_all};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// (corpus-relative path, conversations, pairs). Established with python's
/// `json` module, independently of this parser: pairs = messages with
/// `type == "user"` (all of which have text).
const CORPUS: &[(&str, usize, usize)] = &[
    // messages: user, gemini → 1 user message.
    ("gemini/agent-sessions-gemini-cli-small.json", 1, 1),
    // messages: user, gemini, gemini, info, model, user, model → 2 user messages.
    ("gemini/agent-sessions-gemini-cli-large.json", 1, 2),
    // lines: header, user, $set, gemini, gemini → 1 user message.
    ("gemini/agent-sessions-gemini-cli-jsonl_v040.jsonl", 1, 1),
    // lines: header, $set of the `<session_context>` message, user, gemini x2,
    // user (functionResponse), gemini x2, user (functionResponse), gemini →
    // 1 user message with text of its own: the session context is the CLI's,
    // and function responses are tool results.
    ("gemini/superbased-gemini-cli-live-toolcalls.jsonl", 1, 1),
];

/// (fixture, conversations, pairs): python counted records whose header is
/// "Gemini Apps" and whose title / content starts with `Prompted ` (4 in
/// each), and their distinct `gemini.google.com/app/<id>` links, a record
/// without one counting alone (3 in each).
const FIXTURES: &[(&str, usize, usize)] = &[("MyActivity.json", 3, 4), ("MyActivity.html", 3, 4)];

fn start(items: &[Item], n: usize) -> &ConversationStart {
    items
        .iter()
        .filter_map(|i| match i {
            Item::ConversationStart(s) => Some(s),
            _ => None,
        })
        .nth(n)
        .expect("conversation")
}

fn pairs_of<'a>(items: &'a [Item], id: &str) -> Vec<&'a TurnPair> {
    let mut inside = false;
    let mut out = Vec::new();
    for i in items {
        match i {
            Item::ConversationStart(s) => inside = s.id == id,
            Item::Pair(p) if inside => out.push(p),
            _ => {}
        }
    }
    out
}

fn skipped(items: &[Item], reason: &str) -> u32 {
    items
        .iter()
        .filter_map(|i| match i {
            Item::ConversationEnd(e) => Some(
                e.skipped
                    .iter()
                    .filter(|s| s.reason == reason)
                    .map(|s| s.count)
                    .sum::<u32>(),
            ),
            _ => None,
        })
        .sum()
}

fn text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn meta<'a>(m: &'a [(String, String)], key: &str) -> Option<&'a str> {
    m.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

#[test]
fn counts_match_and_chunking_is_invariant() {
    for &(rel, c, p) in CORPUS {
        let items = assert_chunking_invariant::<Gemini>(&corpus_file(rel));
        assert_eq!(count(&items), (c, p), "{rel}");
    }
    for &(name, c, p) in FIXTURES {
        let items = assert_chunking_invariant::<Gemini>(&fixture(name));
        assert_eq!(count(&items), (c, p), "{name}");
    }
}

#[test]
fn every_gemini_corpus_file_is_in_the_table() {
    for path in corpus_files() {
        let rel = path
            .strip_prefix(corpus_dir())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("gemini/") {
            assert!(
                CORPUS.iter().any(|(r, ..)| *r == rel),
                "{rel} is not in CORPUS"
            );
        }
    }
}

#[test]
fn cli_session_json() {
    let items = assert_chunking_invariant::<Gemini>(&corpus_file(
        "gemini/agent-sessions-gemini-cli-large.json",
    ));
    let s = start(&items, 0);
    assert_eq!(s.id, "session-2025-12-16T23-47-b4f17607");
    assert_eq!(s.platform, "gemini");
    assert_eq!(s.model.as_deref(), Some("gemini-3-flash-preview"));
    assert_eq!(s.created.unwrap().to_rfc3339(), "2025-12-16T23:47:00Z");
    assert_eq!(s.updated.unwrap().to_rfc3339(), "2025-12-16T23:48:00Z");
    assert_eq!(
        meta(&s.metadata, "project_hash"),
        Some("205016864bd110904e9ad8314192344ab398d043e779da15bedbb9ee9be00da2")
    );
    let ps = pairs_of(&items, &s.id);
    assert_eq!(text(&ps[0].user), "Run a command");
    assert_eq!(
        ps[0].timestamp.unwrap().to_rfc3339(),
        "2025-12-16T23:47:01Z"
    );
    assert_eq!(ps[0].model.as_deref(), Some("gemini-3-flash-preview"));
    let a = &ps[0].assistant;
    assert_eq!(
        a[0],
        Part::Thinking("Placeholder thoughts for schema coverage.".into())
    );
    assert_eq!(
        a[3],
        Part::ToolCall {
            name: "run_shell_command".into(),
            summary: "ls /non-existent-directory".into()
        }
    );
    assert_eq!(
        a[4],
        Part::ToolResult("ls: /non-existent-directory: No such file or directory".into())
    );
    // The older `type: model` + `parts[]` form is read too.
    assert_eq!(a[5], Part::Text("Captured multiline output.".into()));
    assert_eq!(text(&ps[1].user), "Step 1");
    assert_eq!(text(&ps[1].assistant), "Ok");
    // "Request cancelled." (type info) is not part of any pair.
    assert_eq!(skipped(&items, "info-message"), 1);
    assert!(
        !ps.iter()
            .any(|p| text(&p.assistant).contains("Request cancelled"))
    );
}

#[test]
fn cli_session_jsonl() {
    let items = assert_chunking_invariant::<Gemini>(&corpus_file(
        "gemini/agent-sessions-gemini-cli-jsonl_v040.jsonl",
    ));
    let s = start(&items, 0);
    assert_eq!(s.id, "gemini_stage0_jsonl");
    // `$set` moved lastUpdated.
    assert_eq!(s.updated.unwrap().to_rfc3339(), "2026-04-29T21:39:33.156Z");
    assert_eq!(skipped(&items, "patch-line"), 1);
    let p = pairs_of(&items, "gemini_stage0_jsonl")[0];
    assert_eq!(text(&p.user), "Say hello and list files.");
    assert_eq!(
        p.assistant,
        vec![
            Part::ToolCall {
                name: "run_shell_command".into(),
                summary: "ls -F".into()
            },
            Part::ToolResult("AgentSessions/ README.md".into()),
            Part::Text("Hello! I listed the files.".into()),
        ]
    );
}

#[test]
fn cli_small_thoughts() {
    let items = assert_chunking_invariant::<Gemini>(&corpus_file(
        "gemini/agent-sessions-gemini-cli-small.json",
    ));
    let p = pairs_of(&items, "session-2026-01-16T18-34-3739ef95")[0];
    assert_eq!(p.user, vec![Part::Text("Hello".into())]);
    assert_eq!(
        p.assistant,
        vec![
            Part::Thinking("Short reasoning placeholder.".into()),
            Part::Text("Hi!".into())
        ]
    );
}

#[test]
fn takeout_json_groups_by_chat_and_orders_by_time() {
    let items = assert_chunking_invariant::<Gemini>(&fixture("MyActivity.json"));
    let ps = pairs_of(&items, "a1b2c3d4e5f60718");
    // Newest first in the file, oldest first in the conversation.
    assert_eq!(text(&ps[0].user), "How do I print hello world in Python?");
    assert_eq!(text(&ps[1].user), "And in Rust?");
    assert_eq!(
        ps[0].timestamp.unwrap().to_rfc3339(),
        "2026-03-02T09:10:00Z"
    );
    assert_eq!(
        text(&ps[0].assistant),
        "Use print:\n\n- Open a file\n- Write print(\"Hello\")"
    );
    assert_eq!(
        text(&ps[1].assistant),
        "In Rust:\n\nfn main() {\n    println!(\"Hello\");\n}\n\nRun it with cargo run."
    );
    let chat = items
        .iter()
        .find_map(|i| match i {
            Item::ConversationStart(s) if s.id == "a1b2c3d4e5f60718" => Some(s),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        meta(&chat.metadata, "chat_url"),
        Some("https://gemini.google.com/app/a1b2c3d4e5f60718")
    );
    // Records without a link are their own conversations; unanswered is kept.
    let mars = items
        .iter()
        .find_map(|i| match i {
            Item::Pair(p) if text(&p.user).contains("Mars") => Some(p),
            _ => None,
        })
        .unwrap();
    assert!(mars.assistant.is_empty());
    let image = items
        .iter()
        .find_map(|i| match i {
            Item::Pair(p) if text(&p.user) == "Describe this image" => Some(p),
            _ => None,
        })
        .unwrap();
    assert!(image.user.contains(&Part::Attachment {
        name: "1740744000000-3f2a9c.png".into(),
        media_type: None,
        uri: None
    }));
    assert_eq!(text(&image.assistant), "A cat & a dog sharing a sofa.");
    assert_eq!(skipped(&items, "non-prompt-record"), 2);
    assert_eq!(skipped(&items, "other-product-record"), 1);
    // Earliest conversation first.
    assert!(start(&items, 0).created <= start(&items, 1).created);
}

#[test]
fn takeout_html_records_dates_entities_and_links() {
    let items = assert_chunking_invariant::<Gemini>(&fixture("MyActivity.html"));
    let ps = pairs_of(&items, "0123456789abcdef");
    assert_eq!(ps.len(), 2);
    assert_eq!(text(&ps[0].user), "What is HTML?");
    // Aug 8, 2026, 6:30:00 PM CEST = 16:30 UTC.
    assert_eq!(
        ps[0].timestamp.unwrap().to_rfc3339(),
        "2026-08-08T16:30:00Z"
    );
    assert_eq!(
        text(&ps[0].assistant),
        "HTML is the markup language of the web.\n\n<p>Hello</p>\n<br>\n\nTag | Use\np | paragraph"
    );
    assert_eq!(text(&ps[1].user), "Explain the <b> tag & entities");
    assert_eq!(
        ps[1].timestamp.unwrap().to_rfc3339(),
        "2026-08-08T16:39:27Z"
    );
    assert_eq!(
        text(&ps[1].assistant),
        "The <b> tag makes text bold.\n\n1. Open it with <b>\n2. Close it with </b>"
    );
    // The feedback record in the same chat is not a pair.
    assert!(!ps.iter().any(|p| text(&p.user).contains("feedback")));
    assert_eq!(skipped(&items, "non-prompt-record"), 2);
    // Unanswered, PDT.
    let c = pairs_of(&items, "fedcba9876543210");
    assert_eq!(text(&c[0].user), "Unanswered question");
    assert!(c[0].assistant.is_empty());
    assert_eq!(c[0].timestamp.unwrap().to_rfc3339(), "2026-08-07T06:00:00Z");
    // A two-line prompt without a chat link.
    let haiku = items
        .iter()
        .find_map(|i| match i {
            Item::Pair(p) if text(&p.user).starts_with("Write a haiku") => Some(p),
            _ => None,
        })
        .unwrap();
    assert_eq!(text(&haiku.user), "Write a haiku\nabout autumn");
    assert_eq!(
        text(&haiku.assistant),
        "Crisp leaves drift and fall\nthe maple lets go of red\ncold wind counts the rest"
    );
    let ids: Vec<_> = (0..3).map(|n| start(&items, n).id.clone()).collect();
    assert_eq!(ids[0], "fedcba9876543210");
    assert!(ids[1].starts_with("gemini-activity-"));
    assert_eq!(ids[2], "0123456789abcdef");
}

// ---- sniffing --------------------------------------------------------------

#[test]
fn sniff_claims_own_files_and_nothing_else() {
    let mut mine = 0;
    for path in corpus_files() {
        let rel = path
            .strip_prefix(corpus_dir())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let score = sniff_file::<Gemini>(&path);
        if rel.starts_with("gemini/") {
            mine += 1;
            assert!(score >= 70, "{rel}: {score}");
        } else {
            assert!(score < 30, "{rel}: {score}");
        }
    }
    assert_eq!(mine, CORPUS.len());
    for &(name, ..) in FIXTURES {
        assert!(sniff_file::<Gemini>(&fixture(name)) >= 70, "{name}");
    }
}

// ---- robustness ------------------------------------------------------------

fn run(name: &str, bytes: Vec<u8>) -> Result<Vec<Item>, chatmill_adapter_sdk::ParseError> {
    let r = parse_all::<Gemini>(Input::from_bytes(name, bytes), 3);
    if let Ok(items) = &r {
        count(items);
    }
    r
}

#[test]
fn truncated_inputs_never_panic() {
    let mut files: Vec<(PathBuf, usize)> = CORPUS
        .iter()
        .map(|(r, _, p)| (corpus_file(r), *p))
        .collect();
    files.extend(FIXTURES.iter().map(|(n, _, p)| (fixture(n), *p)));
    for (path, npairs) in files {
        let bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for cut in [1, 2, 40, n / 5, n / 3, n / 2, n * 3 / 4, n - 2, n - 1] {
            let cut = cut.min(n);
            if let Ok(items) = run(&name, bytes[..cut].to_vec()) {
                assert!(count(&items).1 <= npairs, "{name} cut at {cut}");
            }
        }
    }
}

#[test]
fn garbage_and_wrong_types() {
    assert!(run("e.json", Vec::new()).unwrap().is_empty());
    let mut x: u64 = 0x9e37_79b9;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let _ = run("r.bin", random);
    assert!(run("t.txt", b"hello".to_vec()).is_err());
    assert!(run("n.json", b"{\"sessionId\": 5, \"messages\": 7}".to_vec()).is_err());
    assert!(run("n.json", b"{\"sessionId\": \"x\"}".to_vec()).is_err());
    let weird = br#"{"sessionId":"s","messages":[1,"x",{"type":7},{"type":"user","content":{"a":1}},
        {"type":"gemini","content":"orphan"},
        {"type":"user","content":[{"text":"hi"},{"inlineData":{"mimeType":"image/png"}},{"x":1}]},
        {"type":"gemini","toolCalls":[{"name":"read_file","args":"oops","status":"error"},{"args":{"file_path":"a.rs"}}],"thoughts":[{"subject":"Plan","description":"read it"},{}]}]}"#;
    let items = run("w.json", weird.to_vec()).unwrap();
    let ps = pairs_of(&items, "s");
    assert_eq!(ps.len(), 1);
    assert_eq!(
        ps[0].user,
        vec![
            Part::Text("hi".into()),
            Part::Attachment {
                name: "file".into(),
                media_type: Some("image/png".into()),
                uri: None
            }
        ]
    );
    assert_eq!(ps[0].assistant[0], Part::Thinking("Plan: read it".into()));
    assert_eq!(
        ps[0].assistant[1],
        Part::ToolCall {
            name: "read_file".into(),
            summary: "\"oops\"".into()
        }
    );
    assert_eq!(ps[0].assistant[2], Part::ToolResult("error".into()));
    assert_eq!(
        ps[0].assistant[3],
        Part::ToolCall {
            name: "tool".into(),
            summary: "a.rs".into()
        }
    );
    assert_eq!(skipped(&items, "answer-without-prompt"), 1);
    // Takeout JSON of the wrong shape.
    assert!(
        run("MyActivity.json", b"[1, {\"title\": 5}, \"x\"]".to_vec())
            .unwrap()
            .is_empty()
    );
    assert!(
        run(
            "MyActivity.json",
            b"[{\"header\":\"Gemini Apps\",\"title\":\"Prompted x\"".to_vec()
        )
        .is_err()
    );
    // HTML without any record.
    assert!(
        run(
            "MyActivity.html",
            b"<html><body>nothing</body></html>".to_vec()
        )
        .is_err()
    );
    // An HTML record with a broken content cell.
    let broken = br#"<div class="outer-cell"><div class="header-cell">Gemini Apps</div><div class="content-cell">Prompted <b"#;
    let items = run("MyActivity.html", broken.to_vec()).unwrap();
    assert_eq!(count(&items), (1, 1));
}

#[test]
fn jsonl_updates_replace_earlier_copies() {
    let doc = br#"{"sessionId":"j","projectHash":"h","startTime":"2026-01-01T00:00:00Z"}
{"id":"u","type":"user","timestamp":"2026-01-01T00:00:01Z","content":[{"text":"q"}]}
{"id":"a","type":"gemini","timestamp":"2026-01-01T00:00:02Z","content":"draft"}
{"id":"a","type":"gemini","timestamp":"2026-01-01T00:00:02Z","content":"final","model":"gemini-x"}
{"$set":{"summary":"A title"}}
{"id":"b","type":"gemini","content":"trunc
"#;
    let items = run("session-j.jsonl", doc.to_vec()).unwrap();
    let s = start(&items, 0);
    assert_eq!(s.title.as_deref(), Some("A title"));
    let p = pairs_of(&items, "j")[0];
    assert_eq!(p.assistant, vec![Part::Text("final".into())]);
    assert_eq!(p.model.as_deref(), Some("gemini-x"));
    assert_eq!(skipped(&items, "superseded-message-copy"), 1);
    assert_eq!(skipped(&items, "malformed-line"), 1);
}

#[test]
fn describe_lists_three_formats() {
    let info = Gemini::describe();
    assert_eq!(info.id, "gemini");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(info.formats.len(), 3);
}
