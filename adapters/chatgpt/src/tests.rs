//! Unit tests over small inline exports.

use chatmill_adapter_sdk::{ErrorKind, Input, Item, Part, TurnPair, parse_all};
use serde_json::{Value, json};

use super::*;
use crate::convert::{browsing_summary, strip_citation_markers};

/// One parsed conversation.
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
    let items = parse_all::<ChatGpt>(Input::from_bytes("conversations.json", bytes.to_vec()), 7)?;
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

/// A mapping node with a message.
fn node(id: &str, parent: Option<&str>, children: &[&str], message: Value) -> (String, Value) {
    let mut message = message;
    message["id"] = json!(id);
    (
        id.to_owned(),
        json!({"id": id, "parent": parent, "children": children, "message": message}),
    )
}

fn text_msg(role: &str, text: &str, t: f64) -> Value {
    json!({
        "author": {"role": role},
        "create_time": t,
        "content": {"content_type": "text", "parts": [text]},
        "recipient": "all",
        "metadata": {"model_slug": if role == "assistant" { "gpt-4o" } else { "" }},
    })
}

fn conv(nodes: Vec<(String, Value)>, current: Option<&str>) -> Value {
    let mapping: serde_json::Map<String, Value> = nodes.into_iter().collect();
    json!({
        "id": "c1", "conversation_id": "c1", "title": "T", "create_time": 1_700_000_000.0,
        "update_time": 1_700_000_100.5, "mapping": mapping, "current_node": current,
        "default_model_slug": "gpt-4o",
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

/// root → sys → u1 → a1 → {u2 (old edit) → a2, u2b → {a3 (regen), a3b}}
fn branching() -> Vec<(String, Value)> {
    vec![
        (
            "root".into(),
            json!({"id": "root", "parent": null, "children": ["sys"], "message": null}),
        ),
        node(
            "sys",
            Some("root"),
            &["u1"],
            json!({"author": {"role": "system"}, "content": {"content_type": "text", "parts": [""]},
                   "metadata": {"is_visually_hidden_from_conversation": true}}),
        ),
        node("u1", Some("sys"), &["a1"], text_msg("user", "hello", 10.0)),
        node(
            "a1",
            Some("u1"),
            &["u2", "u2b"],
            text_msg("assistant", "hi", 11.0),
        ),
        node(
            "u2",
            Some("a1"),
            &["a2"],
            text_msg("user", "old prompt", 12.0),
        ),
        node(
            "a2",
            Some("u2"),
            &[],
            text_msg("assistant", "old answer", 13.0),
        ),
        node(
            "u2b",
            Some("a1"),
            &["a3", "a3b"],
            text_msg("user", "edited prompt", 20.0),
        ),
        node(
            "a3",
            Some("u2b"),
            &[],
            text_msg("assistant", "first try", 21.0),
        ),
        node(
            "a3b",
            Some("u2b"),
            &[],
            text_msg("assistant", "second try", 22.0),
        ),
    ]
}

#[test]
fn only_the_branch_of_current_node_survives() {
    let c = &parse(&conv(branching(), Some("a3")))[0];
    assert_eq!(c.start.id, "c1");
    assert_eq!(c.start.model.as_deref(), Some("gpt-4o"));
    assert_eq!(c.pairs.len(), 2);
    assert_eq!(texts(&c.pairs[0].user), ["hello"]);
    assert_eq!(texts(&c.pairs[1].user), ["edited prompt"]);
    assert_eq!(texts(&c.pairs[1].assistant), ["first try"]);
    assert_eq!(c.pairs[1].model.as_deref(), Some("gpt-4o"));
    assert_eq!(c.skip("system-message"), 1);
    // u2, a2, a3b are off the branch.
    assert_eq!(c.skip("off-branch-message"), 3);
    assert_eq!(c.skip("current-node-not-found"), 0);
}

#[test]
fn missing_or_unknown_current_node_falls_back_to_the_newest_leaf() {
    for current in [None, Some("nope")] {
        let c = &parse(&conv(branching(), current))[0];
        assert_eq!(c.pairs.len(), 2);
        assert_eq!(texts(&c.pairs[1].assistant), ["second try"]);
        assert_eq!(c.skip("current-node-not-found"), 1);
    }
}

#[test]
fn cycles_and_missing_parents_end_the_walk() {
    let nodes = vec![
        node("u1", Some("a1"), &["a1"], text_msg("user", "loop", 1.0)),
        node(
            "a1",
            Some("u1"),
            &["u1"],
            text_msg("assistant", "de loop", 2.0),
        ),
    ];
    let c = &parse(&conv(nodes, Some("a1")))[0];
    assert_eq!(c.skip("parent-cycle"), 1);
    assert_eq!(c.pairs.len(), 1);
    let nodes = vec![node(
        "a1",
        Some("gone"),
        &["gone2"],
        text_msg("assistant", "orphan", 2.0),
    )];
    let c = &parse(&conv(nodes, Some("elsewhere")))[0];
    assert_eq!(c.pairs.len(), 0);
    assert_eq!(c.skip("broken-parent-link"), 1);
    assert_eq!(c.skip("answer-without-prompt"), 1);
    // Cycle with no current node and no leaf at all: nothing, no hang.
    let nodes = vec![
        node("x", Some("y"), &["y"], text_msg("user", "x", 1.0)),
        node("y", Some("x"), &["x"], text_msg("assistant", "y", 2.0)),
    ];
    let c = &parse(&conv(nodes, None))[0];
    assert!(c.pairs.is_empty());
}

#[test]
fn hidden_nodes_are_not_turns() {
    let nodes = vec![
        node(
            "ci",
            None,
            &["mem"],
            json!({"author": {"role": "user"},
                   "content": {"content_type": "user_editable_context", "user_profile": "p", "user_instructions": "i"},
                   "metadata": {"is_visually_hidden_from_conversation": true}}),
        ),
        node(
            "mem",
            Some("ci"),
            &["old"],
            json!({"author": {"role": "user"}, "content": {"content_type": "model_editable_context", "model_set_context": "m"}}),
        ),
        node(
            "old",
            Some("mem"),
            &["hid"],
            json!({"author": {"role": "system"}, "content": {"content_type": "text", "parts": ["about me"]},
                   "metadata": {"is_user_system_message": true}}),
        ),
        node(
            "hid",
            Some("old"),
            &["u"],
            json!({"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["secret"]},
                   "metadata": {"is_visually_hidden_from_conversation": true}}),
        ),
        node("u", Some("hid"), &["a"], text_msg("user", "visible", 5.0)),
        node("a", Some("u"), &[], text_msg("assistant", "answer", 6.0)),
    ];
    let c = &parse(&conv(nodes, Some("a")))[0];
    assert_eq!(c.pairs.len(), 1);
    assert_eq!(texts(&c.pairs[0].user), ["visible"]);
    assert_eq!(c.skip("custom-instructions"), 2);
    assert_eq!(c.skip("memory-context"), 1);
    assert_eq!(c.skip("hidden-message"), 1);
}

#[test]
fn content_types_are_classified() {
    let nodes = vec![
        node(
            "u",
            None,
            &["th"],
            json!({"author": {"role": "user"}, "create_time": 1.0, "recipient": "all",
            "content": {"content_type": "multimodal_text", "parts": [
                {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-abc", "width": 10},
                "what is this?",
                {"content_type": "audio_transcription", "text": "spoken words", "direction": "in"},
                42
            ]},
            "metadata": {"attachments": [
                {"id": "file-abc", "name": "photo.png", "mime_type": "image/png"},
                {"id": "file-doc", "name": "report.pdf", "mime_type": "application/pdf"}
            ]}}),
        ),
        node(
            "th",
            Some("u"),
            &["rr"],
            json!({"author": {"role": "assistant"}, "recipient": "all",
                   "content": {"content_type": "thoughts", "thoughts": [{"summary": "Looking", "content": "It is a cat."}]}}),
        ),
        node(
            "rr",
            Some("th"),
            &["py"],
            json!({"author": {"role": "assistant"}, "recipient": "all",
                   "content": {"content_type": "reasoning_recap", "content": "Thought for 3s"}}),
        ),
        node(
            "py",
            Some("rr"),
            &["out"],
            json!({"author": {"role": "assistant"}, "recipient": "python",
                   "content": {"content_type": "code", "language": "unknown", "text": "print(1)\r\nprint(2)"},
                   "metadata": {"model_slug": "gpt-4o"}}),
        ),
        node(
            "out",
            Some("py"),
            &["br"],
            json!({"author": {"role": "tool", "name": "python"}, "recipient": "all",
                   "content": {"content_type": "execution_output", "text": "1\n2"}}),
        ),
        node(
            "br",
            Some("out"),
            &["q"],
            json!({"author": {"role": "assistant"}, "recipient": "browser",
                   "content": {"content_type": "code", "language": "unknown", "text": "search(\"cats\")"}}),
        ),
        node(
            "q",
            Some("br"),
            &["weird"],
            json!({"author": {"role": "tool", "name": "browser"}, "recipient": "all",
                   "content": {"content_type": "tether_quote", "url": "https://cats.example", "domain": "cats.example",
                               "title": "Cats", "text": "long page text"}}),
        ),
        node(
            "weird",
            Some("q"),
            &["fin"],
            json!({"author": {"role": "tool", "name": "x"}, "content": {"content_type": "hologram", "data": 1}}),
        ),
        node(
            "fin",
            Some("weird"),
            &[],
            json!({"author": {"role": "assistant"}, "recipient": "all", "status": "in_progress",
            "content": {"content_type": "text", "parts": ["A cat【3†source】."]},
            "metadata": {"model_slug": "gpt-4o-mini", "citations": [
                {"metadata": {"title": "Cats", "url": "https://cats.example"}},
                {"metadata": {"title": "Cats again", "url": "https://cats.example"}}
            ]}}),
        ),
    ];
    let c = &parse(&conv(nodes, Some("fin")))[0];
    assert_eq!(c.pairs.len(), 1);
    let p = &c.pairs[0];
    assert_eq!(
        p.user,
        [
            Part::Attachment {
                name: "photo.png".into(),
                media_type: Some("image/png".into()),
                uri: Some("file-service://file-abc".into())
            },
            Part::Text("what is this?\nspoken words".into()),
            Part::Attachment {
                name: "report.pdf".into(),
                media_type: Some("application/pdf".into()),
                uri: Some("file-doc".into())
            },
        ]
    );
    assert_eq!(
        p.assistant,
        [
            Part::Thinking("Looking\nIt is a cat.".into()),
            Part::Thinking("Thought for 3s".into()),
            Part::Code {
                language: Some("python".into()),
                code: "print(1)\nprint(2)".into()
            },
            Part::ToolResult("1 2".into()),
            Part::ToolCall {
                name: "browser".into(),
                summary: "search(\"cats\")".into()
            },
            Part::ToolResult("Cats — https://cats.example".into()),
            Part::Text("A cat".into()),
            Part::Other {
                kind: "citation".into(),
                text: "Cats — https://cats.example".into()
            },
            Part::Text(".".into()),
        ]
    );
    assert_eq!(p.model.as_deref(), Some("gpt-4o-mini"));
    assert_eq!(p.timestamp.map(|t| t.seconds), Some(1));
    assert!(p.metadata.contains(&("interrupted".into(), "true".into())));
    assert!(p.metadata.contains(&("message_id".into(), "u".into())));
    assert_eq!(c.skip("unknown-content-type"), 1);
    assert_eq!(c.skip("unknown-part-type"), 1);
}

#[test]
fn an_unanswered_prompt_is_a_pair_and_times_fall_back() {
    let mut u = text_msg("user", "anyone?", 0.0);
    u["create_time"] = Value::Null;
    let nodes = vec![
        node("u0", None, &["a0"], u),
        node("a0", Some("u0"), &["u1"], text_msg("assistant", "yes", 7.0)),
        node("u1", Some("a0"), &[], text_msg("user", "thanks", 9.0)),
    ];
    let c = &parse(&conv(nodes, Some("u1")))[0];
    assert_eq!(c.pairs.len(), 2);
    assert_eq!(c.pairs[0].timestamp.map(|t| t.seconds), Some(7));
    assert!(c.pairs[1].assistant.is_empty());
    assert_eq!(c.pairs[1].timestamp.map(|t| t.seconds), Some(9));
}

#[test]
fn wrappers_single_objects_and_shards() {
    let one = conv(branching(), Some("a3"));
    let wrapped = json!({"version": 2, "conversations": [one.clone(), one.clone()], "x": 1});
    assert_eq!(parse(&wrapped).len(), 2);
    assert_eq!(parse(&one).len(), 1);
    assert!(parse_bytes(b"[]").unwrap().is_empty());
    assert!(
        parse_bytes(b" {\"conversations\": []} ")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn other_formats_are_refused_and_odd_records_are_counted() {
    for doc in [
        json!([{"uuid": "u", "chat_messages": []}]),
        json!([{"uuid": "u", "full_name": "A", "email_address": "a@b"}]),
        json!(["text"]),
        json!({"uuid": "x", "chat_messages": []}),
    ] {
        let e = parse_bytes(doc.to_string().as_bytes()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotThisFormat, "{doc}");
    }
    let doc = json!([conv(branching(), Some("a3")), {"something": "else"}, {"id": "nomap", "title": "x", "current_node": "n"}]);
    let cs = parse(&doc);
    assert_eq!(cs.len(), 3);
    assert_eq!(cs[1].skip("not-a-conversation"), 1);
    assert!(cs[1].start.id.starts_with("chatgpt-"));
    assert_eq!(cs[2].skip("missing-mapping"), 1);
    // The fallback id is a function of the bytes.
    assert_eq!(parse(&doc)[1].start.id, cs[1].start.id);
    let e = parse_bytes(b"[{\"mapping\": {}}, 3]").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed);
    assert_eq!(e.location.unwrap().record, Some(1));
}

#[test]
fn wrong_field_types_do_not_fail_the_conversation() {
    let doc = json!([{
        "id": 12, "title": ["x"], "create_time": "2024-01-02T03:04:05Z", "current_node": {"a": 1},
        "mapping": {
            "u": {"parent": 5, "children": "no", "message": {"author": "me", "content": {"content_type": "text", "parts": "hi"}}},
            "v": {"parent": "u", "children": [], "message": {"author": {"role": "user"}, "create_time": "soon",
                  "content": {"content_type": "text", "parts": [null, "real", {"x": [1]}]}}},
            "w": null
        }
    }]);
    let c = &parse(&doc)[0];
    assert_eq!(c.start.id, "12");
    assert_eq!(c.start.title, None);
    assert_eq!(c.start.created.map(|t| t.seconds), Some(1_704_164_645));
    assert_eq!(c.pairs.len(), 1);
    assert_eq!(texts(&c.pairs[0].user), ["real"]);
}

#[test]
fn bytes_that_are_not_utf8_outside_read_fields_do_not_fail_the_conversation() {
    // Behind the host the input is always UTF-8; natively it may not be.
    // An element that is not is read byte-wise (`from_slice`), which only
    // checks the strings it keeps.
    let good = json!([{"id": "c", "mapping": {
        "u": {"parent": null, "children": [], "message": {"author": {"role": "user"},
              "content": {"content_type": "text", "parts": ["hello there"]}}}},
        "current_node": "u", "junk": "JUNK"}])
    .to_string();
    let bad = good.replace("JUNK", "\u{1}").into_bytes();
    let bad: Vec<u8> = bad
        .into_iter()
        .map(|b| if b == 1 { 0xE9 } else { b })
        .collect();
    assert!(std::str::from_utf8(&bad).is_err());
    let c = &parse_bytes(&bad).unwrap()[0];
    assert_eq!(texts(&c.pairs[0].user), ["hello there"]);
}

#[test]
fn citation_markers_are_found_at_every_offset() {
    // The scan reads eight bytes at a time: a marker must be found wherever
    // it falls relative to those words, and other non-ASCII text is kept.
    for pad in 0..20 {
        let before = "p".repeat(pad);
        let text = format!("{before}【1†source】 café");
        assert_eq!(
            strip_citation_markers(&text),
            format!("{before} café"),
            "pad {pad}"
        );
        let text = format!("{before}\u{e200}cite\u{e202}x\u{e201}.");
        assert_eq!(
            strip_citation_markers(&text),
            format!("{before}."),
            "pad {pad}"
        );
    }
    assert!(matches!(
        strip_citation_markers("naïve café — “quoted” 🙂"),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn citations_stay_where_their_markers_were() {
    let cite = |t: &str| Part::Other {
        kind: "citation".into(),
        text: t.into(),
    };
    let text = "Founded in 2014【3:0†source】.\n\nAcquired in 2020.【3:4†source】【3:9†source】\n\nThe end【9†x】.";
    // start_ix in characters, as ChatGPT writes them (out of order here).
    let at = |m: &str| text[..text.find(m).unwrap()].chars().count();
    let nodes = vec![
        node("u", None, &["a"], text_msg("user", "tell me", 0.0)),
        node(
            "a",
            Some("u"),
            &[],
            json!({"author": {"role": "assistant"}, "recipient": "all",
            "content": {"content_type": "text", "parts": [text]},
            "metadata": {"citations": [
                {"start_ix": at("【3:4"), "metadata": {"title": "Fastly", "url": "https://f.example"}},
                {"start_ix": at("【3:0"), "metadata": {"title": "Crunchbase", "url": "https://c.example"}},
                {"start_ix": "nonsense", "metadata": {"url": "https://unmarked.example"}},
                {"start_ix": at("【3:9"), "metadata": {"title": "Fastly", "url": "https://f.example"}}
            ]}}),
        ),
    ];
    let c = &parse(&conv(nodes, Some("a")))[0];
    assert_eq!(
        c.pairs[0].assistant,
        [
            Part::Text("Founded in 2014".into()),
            cite("Crunchbase — https://c.example"),
            Part::Text(".\n\nAcquired in 2020.".into()),
            cite("Fastly — https://f.example"),
            cite("Fastly — https://f.example"),
            // `【9†x】` starts where no citation does: removed.
            Part::Text("\n\nThe end.".into()),
            // Cited, never marked: after the text.
            cite("https://unmarked.example"),
        ]
    );
}

#[test]
fn citation_markers_are_stripped() {
    assert_eq!(
        strip_citation_markers("a【6†source】【7†source】. b"),
        "a. b"
    );
    assert_eq!(
        strip_citation_markers("x \u{e200}cite\u{e202}turn0search1\u{e201} y"),
        "x  y"
    );
    assert_eq!(
        strip_citation_markers("【not a marker】 ok"),
        "【not a marker】 ok"
    );
    assert_eq!(strip_citation_markers("open【 only"), "open【 only");
    assert_eq!(
        browsing_summary("# 【0†Title A†a.com】\nbody\n# 【1†Title B†b.org】\nmore"),
        "Title A (a.com); Title B (b.org)"
    );
    assert_eq!(browsing_summary("plain"), "plain");
}

#[test]
fn sniff_scores() {
    let doc = conv(branching(), Some("a3"));
    let arr = format!("[{doc}]");
    assert!(sniff_score(arr.as_bytes(), "conversations.json") >= 90);
    assert!(sniff_score(arr.as_bytes(), "export.json") >= 80);
    // A cut head still sniffs.
    assert!(sniff_score(&arr.as_bytes()[..arr.len() / 2], "conversations-001.json") >= 70);
    let wrapped = format!("{{\"conversations\": [{doc}]}}");
    assert!(sniff_score(wrapped.as_bytes(), "x.json") >= 70);
    assert_eq!(
        sniff_score(
            b"[{\"uuid\": \"u\", \"chat_messages\": []}]",
            "conversations.json"
        ),
        0
    );
    assert_eq!(
        sniff_score(b"{\"mapping\": {}}\n{\"mapping\": {}}\n", "x.jsonl"),
        0
    );
    assert_eq!(
        sniff_score(b"# notes about \"mapping\"", "conversations.json"),
        0
    );
    assert!(sniff_score(b"[]", "conversations.json") < 30);
    assert_eq!(sniff_score(b"", "conversations.json"), 0);
}
