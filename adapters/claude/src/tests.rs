//! Unit tests over small inline exports.

use chatmill_adapter_sdk::{ConversationStart, ErrorKind, Input, Item, Part, parse_all};
use serde_json::{Value, json};

use super::*;

#[derive(Debug)]
struct Conv {
    start: ConversationStart,
    pairs: Vec<TurnPair>,
    skipped: Vec<(String, u32)>,
}

impl Conv {
    fn skip(&self, reason: &str) -> u32 {
        self.skipped
            .iter()
            .find(|(r, _)| r == reason)
            .map_or(0, |(_, c)| *c)
    }
}

fn parse_bytes(bytes: &[u8]) -> Result<Vec<Conv>, ParseError> {
    let items = parse_all::<Claude>(Input::from_bytes("conversations.json", bytes.to_vec()), 5)?;
    let mut out: Vec<Conv> = Vec::new();
    for item in items {
        match item {
            Item::ConversationStart(start) => out.push(Conv {
                start,
                pairs: Vec::new(),
                skipped: Vec::new(),
            }),
            Item::Pair(p) => out.last_mut().unwrap().pairs.push(p),
            Item::ConversationEnd(e) => {
                out.last_mut().unwrap().skipped =
                    e.skipped.into_iter().map(|s| (s.reason, s.count)).collect();
            }
        }
    }
    Ok(out)
}

fn parse(v: &Value) -> Vec<Conv> {
    parse_bytes(v.to_string().as_bytes()).unwrap()
}

fn msg(uuid: &str, sender: &str, text: &str, at: &str, parent: Option<&str>) -> Value {
    let mut m = json!({
        "uuid": uuid, "sender": sender, "text": text,
        "created_at": at, "updated_at": at, "attachments": [], "files": [],
    });
    if let Some(p) = parent {
        m["parent_message_uuid"] = json!(p);
    }
    m
}

fn conv(messages: Vec<Value>) -> Value {
    json!({
        "uuid": "conv-1", "name": "Named", "summary": "",
        "created_at": "2025-07-06T03:10:13.076141Z", "updated_at": "2025-07-06T03:20:00Z",
        "account": {"uuid": "acc"}, "chat_messages": messages,
    })
}

fn texts(parts: &[Part]) -> Vec<String> {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

const T0: &str = "2025-01-01T00:00:00Z";
const T1: &str = "2025-01-01T00:00:01Z";
const T2: &str = "2025-01-01T00:00:02Z";
const T3: &str = "2025-01-01T00:00:03Z";
const T4: &str = "2025-01-01T00:00:04Z";

/// h1 → a1 → {h2 (edited away) → a2, h2b → {a3, a3b (regenerated)}}
fn tree() -> Vec<Value> {
    vec![
        msg("h1", "human", "first", T0, Some(ROOT_SENTINEL)),
        msg("a3", "assistant", "answer one", T4, Some("h2b")),
        msg("a1", "assistant", "reply", T0, Some("h1")),
        msg("h2", "human", "old prompt", T1, Some("a1")),
        msg("a2", "assistant", "old answer", T2, Some("h2")),
        msg("h2b", "human", "new prompt", T3, Some("a1")),
        msg("a3b", "assistant", "answer two", T3, Some("h2b")),
    ]
}

#[test]
fn the_current_leaf_picks_the_branch() {
    let mut c = conv(tree());
    c["current_leaf_message_uuid"] = json!("a3b");
    c["model"] = json!("claude-sonnet-4");
    let c = &parse(&c)[0];
    assert_eq!(c.start.model.as_deref(), Some("claude-sonnet-4"));
    let prompts: Vec<_> = c.pairs.iter().map(|p| texts(&p.user)).collect();
    assert_eq!(prompts, [["first"], ["new prompt"]]);
    assert_eq!(texts(&c.pairs[1].assistant), ["answer two"]);
    assert_eq!(c.skip("off-branch-message"), 3);
    assert_eq!(
        c.pairs[0].timestamp.unwrap().to_rfc3339(),
        "2025-01-01T00:00:00Z"
    );
}

#[test]
fn without_a_current_leaf_the_newest_leaf_wins() {
    for leaf in [None, Some("missing")] {
        let mut c = conv(tree());
        if let Some(l) = leaf {
            c["current_leaf_message_uuid"] = json!(l);
        }
        let c = &parse(&c)[0];
        assert_eq!(c.pairs.len(), 2);
        assert_eq!(texts(&c.pairs[1].assistant), ["answer one"]);
    }
}

#[test]
fn broken_links_and_cycles_end_the_walk() {
    let c = &parse(&conv(vec![
        msg("h", "human", "q", T0, Some("gone")),
        msg("a", "assistant", "r", T1, Some("h")),
    ]))[0];
    assert_eq!(c.pairs.len(), 1);
    assert_eq!(c.skip("broken-parent-link"), 1);
    let mut c = conv(vec![
        msg("h", "human", "q", T0, Some("a")),
        msg("a", "assistant", "r", T1, Some("h")),
    ]);
    c["current_leaf_message_uuid"] = json!("a");
    let c = &parse(&c)[0];
    assert_eq!(c.skip("parent-cycle"), 1);
    assert_eq!(c.pairs.len(), 1);
}

#[test]
fn tree_less_exports_are_sorted_by_time_and_regenerations_collapse() {
    let c = &parse(&conv(vec![
        msg("h2", "human", "second", T2, None),
        msg("h1", "human", "first", T0, None),
        msg("a1", "assistant", "one", T0, None),
        msg("a1b", "assistant", "one, regenerated", T1, None),
        msg("a2", "assistant", "two", T3, None),
    ]))[0];
    let prompts: Vec<_> = c.pairs.iter().map(|p| texts(&p.user)).collect();
    assert_eq!(prompts, [["first"], ["second"]]);
    assert_eq!(texts(&c.pairs[0].assistant), ["one, regenerated"]);
    assert_eq!(c.skip("superseded-answer"), 1);
    // A missing time keeps the array order.
    let mut m = msg("h0", "human", "untimed", T0, None);
    m["created_at"] = Value::Null;
    let c = &parse(&conv(vec![
        msg("a", "assistant", "early answer", T4, None),
        m,
        msg("a0", "assistant", "late", T0, None),
    ]))[0];
    assert_eq!(c.skip("answer-without-prompt"), 1);
    assert_eq!(texts(&c.pairs[0].assistant), ["late"]);
}

#[test]
fn content_blocks_are_preferred_and_typed() {
    let mut h = msg("h", "human", "", T0, Some(ROOT_SENTINEL));
    h["content"] = json!([
        {"type": "text", "text": "Look this up"},
        {"type": "voice_note", "title": "Memo", "text": "spoken"},
    ]);
    h["attachments"] = json!([{"file_name": "notes.txt", "file_type": "txt", "file_size": 3, "extracted_content": "abc"}]);
    h["files_v2"] = json!([{"file_name": "pic.jpg", "file_uuid": "f1", "file_kind": "image"}]);
    let mut a = msg("a", "assistant", "I should search.Found it.", T1, Some("h"));
    a["content"] = json!([
        {"type": "thinking", "thinking": "I should search."},
        {"type": "tool_use", "id": null, "name": "web_search", "input": {"query": "rust   serde\nborrow"}},
        {"type": "tool_result", "tool_use_id": null, "name": "web_search", "content": [
            {"type": "knowledge", "title": "Serde docs", "url": "https://serde.rs"},
            {"type": "text", "text": "Borrowing works."}
        ]},
        {"type": "tool_result", "name": "fetch", "is_error": true, "content": "timeout"},
        {"type": "tool_use", "name": "artifacts", "input": {"id": "x", "type": "application/vnd.ant.code", "language": "rust", "title": "Demo", "command": "create", "content": "fn main() {}"}},
        {"type": "tool_use", "name": "artifacts", "input": {"id": "x", "command": "update", "old_str": "a", "new_str": "b"}},
        {"type": "token_budget"},
        {"type": "hologram", "text": "?"},
        {"type": "text", "text": "Found it."},
        {"type": "thinking", "thinking": "", "summaries": [{"summary": "Checked"}, {"summary": "Done"}]},
    ]);
    let c = &parse(&conv(vec![h, a]))[0];
    let p = &c.pairs[0];
    assert_eq!(
        p.user,
        [
            Part::Text("Look this up".into()),
            Part::Other {
                kind: "voice-note".into(),
                text: "Memo\nspoken".into()
            },
            Part::Attachment {
                name: "notes.txt".into(),
                media_type: Some("txt".into()),
                uri: None
            },
            Part::Other {
                kind: "file-text".into(),
                text: "abc".into()
            },
            Part::Attachment {
                name: "pic.jpg".into(),
                media_type: Some("image/jpeg".into()),
                uri: Some("f1".into())
            },
        ]
    );
    assert_eq!(
        p.assistant,
        [
            Part::Thinking("I should search.".into()),
            Part::ToolCall {
                name: "web_search".into(),
                summary: "rust serde borrow".into()
            },
            Part::ToolResult("Serde docs; Borrowing works.".into()),
            Part::ToolResult("error: timeout".into()),
            Part::Other {
                kind: "artifact".into(),
                text: "Demo".into()
            },
            Part::Code {
                language: Some("rust".into()),
                code: "fn main() {}".into()
            },
            Part::ToolCall {
                name: "artifacts".into(),
                summary: "update x".into()
            },
            Part::Text("Found it.".into()),
            Part::Thinking("Checked\nDone".into()),
        ]
    );
    assert_eq!(c.skip("bookkeeping-block"), 1);
    assert_eq!(c.skip("unknown-block-type"), 1);
}

#[test]
fn empty_prompts_are_skipped_with_their_answers() {
    let c = &parse(&conv(vec![
        msg("h", "human", "  ", T0, None),
        msg("a", "assistant", "to nothing", T1, None),
        msg("h2", "human", "real", T2, None),
    ]))[0];
    assert_eq!(c.pairs.len(), 1);
    assert!(c.pairs[0].assistant.is_empty());
    assert_eq!(c.skip("empty-prompt"), 1);
    assert_eq!(c.skip("answer-without-prompt"), 1);
}

#[test]
fn the_other_export_files_are_not_conversations() {
    for doc in [
        json!([{"uuid": "u", "full_name": "A", "email_address": "a@b", "verified_phone_number": null}]),
        json!([{"uuid": "p", "name": "Proj", "description": "", "is_private": true, "docs": [], "created_at": T0}]),
        json!([{"conversations_memory": "m", "project_memories": {}, "account_uuid": "a"}]),
        json!([{"id": "c", "mapping": {}, "current_node": null}]),
        json!([1, 2]),
    ] {
        let e = parse_bytes(doc.to_string().as_bytes()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotThisFormat, "{doc}");
    }
    assert!(parse_bytes(b"[]").unwrap().is_empty());
    // A later odd record is counted, not fatal.
    let cs = parse(&json!([conv(tree()), {"uuid": "odd"}]));
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[1].start.id, "odd");
    assert_eq!(cs[1].skip("not-a-conversation"), 1);
}

#[test]
fn conversation_fields() {
    let mut c = conv(vec![msg("h", "human", "hi", T0, None)]);
    c["name"] = json!("");
    c["summary"] = json!("A chat about hi.");
    c["project"] = json!({"uuid": "p1", "name": "Garden"});
    c["created_at"] = json!("2024-10-29T15:59:18.774635+00:00");
    let cs = parse(&c);
    let s = &cs[0].start;
    assert_eq!(s.id, "conv-1");
    assert_eq!(s.title, None);
    assert_eq!(s.platform, "claude");
    assert_eq!(
        s.created.unwrap().to_rfc3339(),
        "2024-10-29T15:59:18.774635Z"
    );
    assert_eq!(
        s.metadata,
        [
            ("project".to_owned(), "Garden".to_owned()),
            ("summary".to_owned(), "A chat about hi.".to_owned())
        ]
    );
    let mut c = conv(vec![]);
    c["uuid"] = Value::Null;
    let a = parse(&c)[0].start.id.clone();
    assert!(a.starts_with("claude-"));
    assert_eq!(parse(&c)[0].start.id, a);
}

#[test]
fn sniff_scores() {
    let one = conv(tree());
    let arr = format!("[{one}]");
    assert!(sniff_score(arr.as_bytes(), "conversations.json") >= 90);
    assert!(sniff_score(one.to_string().as_bytes(), "chat.json") >= 80);
    assert!(sniff_score(&arr.as_bytes()[..arr.len() / 2], "x.json") >= 70);
    for other in [
        r#"[{"uuid": "u", "full_name": "A", "email_address": "a@b"}]"#,
        r#"[{"uuid": "p", "name": "Proj", "docs": []}]"#,
        r#"[{"id": "c", "mapping": {"a": {"parent": null, "children": []}}, "current_node": "a"}]"#,
        r#"{"uuid": "u", "chat_messages": []}
{"uuid": "u", "chat_messages": []}"#,
        r#"{"text": "\"chat_messages\": ["}"#,
        "",
        "[]",
    ] {
        assert!(
            sniff_score(other.as_bytes(), "conversations.json") < 30,
            "{other}"
        );
    }
}

#[test]
fn an_attached_documents_text_is_kept_bounded() {
    let mut h = msg("h", "human", "Summarise it", T0, Some(ROOT_SENTINEL));
    let long = "é".repeat(10_000); // 20,000 bytes
    h["attachments"] = json!([
        {"file_name": "long.txt", "file_type": "txt", "extracted_content": long},
        {"file_name": "empty.txt", "file_type": "txt", "extracted_content": "  "},
    ]);
    let a = msg("a", "assistant", "Done.", T1, Some("h"));
    let c = &parse(&conv(vec![h, a]))[0];
    let texts: Vec<&str> = c.pairs[0]
        .user
        .iter()
        .filter_map(|p| match p {
            Part::Other { kind, text } if kind == "file-text" => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts.len(), 1, "no block for an empty text");
    let (kept, note) = texts[0].split_once('\n').unwrap();
    assert_eq!(kept.len(), 16 * 1024, "cut at a character boundary");
    assert_eq!(note, "[… 3616 more bytes of the file's text are not shown]");
}
