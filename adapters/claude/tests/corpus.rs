//! The Claude.ai adapter over the real-export corpus (`shared/corpus/claude`).
//!
//! Expected counts were established independently of the parser with a
//! Python script (/tmp/hA/count.py while developing; the method is repeated
//! next to each row): `json.load` the file; when any message has a
//! `parent_message_uuid`, walk parents up from `current_leaf_message_uuid`
//! and count the `human` messages on the path; otherwise count all `human`
//! messages of `chat_messages`.

use std::path::Path;

use chatmill_adapter_claude::Claude;
use chatmill_adapter_sdk::testkit::{
    assert_chunking_invariant, corpus_file, corpus_files, count, sniff_file,
};
use chatmill_adapter_sdk::{
    ConversationEnd, ConversationStart, ErrorKind, Input, Item, Part, TurnPair, parse_all,
};

/// (file, conversations, pairs).
const EXPECTED: &[(&str, usize, usize)] = &[
    // 1 conversation, 20 messages without parent pointers: 10 `human`.
    ("claude/claude-to-sqlite-artifacts.json", 1, 10),
    // 1 conversation, 2 messages: 1 `human`.
    ("claude/claude-to-sqlite-example.json", 1, 1),
    // A single web-API object; the path from current_leaf_message_uuid
    // 47e6dd5f… to the root sentinel has 4 messages, 2 `human`.
    (
        "claude/osteele-claude-api-single-conversation-bakery.json",
        1,
        2,
    ),
];

struct Conv {
    start: ConversationStart,
    pairs: Vec<TurnPair>,
    end: ConversationEnd,
}

impl Conv {
    fn skip(&self, reason: &str) -> u32 {
        self.end
            .skipped
            .iter()
            .find(|s| s.reason == reason)
            .map_or(0, |s| s.count)
    }
}

fn conversations(rel: &str) -> Vec<Conv> {
    let items = assert_chunking_invariant::<Claude>(&corpus_file(rel));
    let mut out = Vec::new();
    let mut cur: Option<(ConversationStart, Vec<TurnPair>)> = None;
    for item in items {
        match item {
            Item::ConversationStart(s) => cur = Some((s, Vec::new())),
            Item::Pair(p) => cur.as_mut().unwrap().1.push(p),
            Item::ConversationEnd(end) => {
                let (start, pairs) = cur.take().unwrap();
                assert_eq!(start.id, end.id);
                out.push(Conv { start, pairs, end });
            }
        }
    }
    out
}

fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn corpus_counts_and_chunking_invariance() {
    for &(rel, convs, pairs) in EXPECTED {
        let items = assert_chunking_invariant::<Claude>(&corpus_file(rel));
        assert_eq!(count(&items), (convs, pairs), "{rel}");
        for item in &items {
            if let Item::ConversationStart(s) = item {
                assert_eq!(s.platform, "claude");
            }
            if let Item::Pair(p) = item {
                assert!(!p.user.is_empty(), "{rel}: pair without a prompt");
                assert!(!p.assistant.is_empty(), "{rel}: every prompt is answered");
            }
        }
    }
}

#[test]
fn every_claude_corpus_file_is_in_the_table() {
    for f in corpus_files() {
        let rel = f
            .strip_prefix(chatmill_adapter_sdk::testkit::corpus_dir())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("claude/") {
            assert!(
                EXPECTED.iter().any(|(r, _, _)| *r == rel),
                "{rel} has no expected counts"
            );
        }
    }
}

#[test]
fn artifacts_vintage_is_reordered_and_its_tags_extracted() {
    let c = &conversations("claude/claude-to-sqlite-artifacts.json")[0];
    assert_eq!(c.start.id, "91098bc8-f2c4-427b-b71b-1e25efa2e871");
    assert_eq!(c.start.title.as_deref(), Some("LLM Pricing Calculator"));
    assert_eq!(c.start.model, None);
    // The array starts with the 03:37 prompt; by time it is the 4th.
    assert!(
        text_of(&c.pairs[0].user)
            .starts_with("Built me an artifact with no react that is a pricing calculator")
    );
    assert!(text_of(&c.pairs[3].user).starts_with("Add a onkeyup event too"));
    assert_eq!(
        c.pairs[3].timestamp.unwrap().to_rfc3339(),
        "2024-10-17T03:37:51.154489Z"
    );
    // Its five screenshots are attachments, known by name only.
    let shots: Vec<&Part> = c.pairs[3]
        .user
        .iter()
        .filter(|p| matches!(p, Part::Attachment { .. }))
        .collect();
    assert_eq!(shots.len(), 5);
    assert_eq!(
        shots[0],
        &Part::Attachment {
            name: "CleanShot 20241016 at 20.34.122x.png".into(),
            media_type: Some("image/png".into()),
            uri: None
        }
    );
    // Every answer: prose, a thinking part, the artifact title, its code.
    for p in &c.pairs {
        let a = &p.assistant;
        assert!(matches!(a[0], Part::Text(_)), "{a:?}");
        assert!(matches!(a[1], Part::Thinking(_)), "{a:?}");
        assert!(matches!(&a[2], Part::Other { kind, .. } if kind == "artifact"));
        assert!(
            matches!(&a[3], Part::Code { language: Some(l), code } if l == "html" && code.starts_with("<!DOCTYPE html>"))
        );
        for part in a {
            if let Part::Text(t) = part {
                assert!(!t.contains("<antArtifact") && !t.contains("</antArtifact>"));
                assert!(!t.contains("<antThinking>"));
            }
        }
    }
    assert_eq!(
        c.pairs[0].assistant[2],
        Part::Other {
            kind: "artifact".into(),
            text: "LLM Pricing Calculator".into()
        }
    );
    match &c.pairs[0].assistant[1] {
        Part::Thinking(t) => assert!(t.starts_with("This request is suitable for an artifact")),
        _ => unreachable!(),
    }
    assert!(c.end.skipped.is_empty());
}

#[test]
fn smallest_export() {
    let c = &conversations("claude/claude-to-sqlite-example.json")[0];
    assert_eq!(
        c.start.title.as_deref(),
        Some("Bash Command for OpenAI API")
    );
    assert_eq!(
        c.start.created.unwrap().to_rfc3339(),
        "2024-10-18T05:30:10.325754Z"
    );
    let p = &c.pairs[0];
    assert_eq!(text_of(&p.user), "Turn this into a bash command");
    assert!(p.user.contains(&Part::Attachment {
        name: "CleanShot 20241017 at 22.29.542x.png".into(),
        media_type: Some("image/png".into()),
        uri: None
    }));
    assert!(text_of(&p.assistant).starts_with("To turn this into a bash command"));
    assert!(p.metadata.contains(&(
        "message_id".into(),
        "22b34c9c-69c1-46ad-87da-71570a70f107".into()
    )));
}

#[test]
fn web_api_object_uses_content_blocks_and_the_leaf() {
    let c = &conversations("claude/osteele-claude-api-single-conversation-bakery.json")[0];
    assert_eq!(c.start.id, "8006a434-8b0b-43df-8e6d-c0a7aeb2e6b3");
    assert_eq!(
        c.start.title.as_deref(),
        Some("Interactive Bakery Comparison Visualization")
    );
    assert_eq!(c.start.model.as_deref(), Some("claude-3-5-sonnet-20240620"));
    // `+00:00` offsets, normalized to UTC.
    assert_eq!(
        c.start.updated.unwrap().to_rfc3339(),
        "2024-10-29T16:02:16.623589Z"
    );
    // Human `text` is "" but `content[]` holds the prompt.
    assert_eq!(
        text_of(&c.pairs[0].user),
        "Make an interactive visualization of this diagram of the only good bakery and what\u{2019}s wrong with all the other one\u{2019}s"
    );
    // files and files_v2 describe the same image once.
    let atts: Vec<&Part> = c.pairs[0]
        .user
        .iter()
        .filter(|p| matches!(p, Part::Attachment { .. }))
        .collect();
    assert_eq!(atts.len(), 1);
    assert_eq!(
        text_of(&c.pairs[1].user),
        "What are your ideas for extending this?"
    );
    assert!(c.pairs[1].assistant.contains(&Part::Other {
        kind: "artifact".into(),
        text: "Enhanced Interactive Bakery Comparison".into()
    }));
    assert!(c.pairs[1].assistant.iter().any(
        |p| matches!(p, Part::Code { language: Some(l), code } if l == "jsx" && code.contains("EnhancedBakeryComparison"))
    ));
    assert_eq!(c.skip("off-branch-message"), 0);
}

fn is_mine(path: &Path) -> bool {
    path.parent()
        .and_then(|p| p.file_name())
        .is_some_and(|d| d == "claude")
}

#[test]
fn sniff_discipline() {
    let (mut mine_min, mut other_max) = (u8::MAX, 0u8);
    let mut mine = 0;
    for f in corpus_files() {
        let score = sniff_file::<Claude>(&f);
        if is_mine(&f) {
            mine += 1;
            mine_min = mine_min.min(score);
            assert!(score >= 70, "{}: {score}", f.display());
        } else {
            other_max = other_max.max(score);
            assert!(score < 30, "{}: {score}", f.display());
        }
    }
    assert_eq!(mine, EXPECTED.len());
    // Measured: own files min 90, other files max 0.
    assert!(mine_min >= 85 && other_max == 0, "{mine_min} / {other_max}");
}

#[test]
fn other_formats_produce_no_pairs() {
    // Includes the ChatGPT conversations.json files and locomo10.json.
    for f in corpus_files() {
        if is_mine(&f) {
            continue;
        }
        let bytes = std::fs::read(&f).unwrap();
        match parse_all::<Claude>(Input::from_bytes("conversations.json", bytes), 1000) {
            Err(e) => assert_ne!(e.kind, ErrorKind::Internal, "{}", f.display()),
            Ok(items) => assert_eq!(count(&items).1, 0, "{}", f.display()),
        }
    }
}

fn parse_bytes(bytes: &[u8]) -> Result<Vec<Item>, chatmill_adapter_sdk::ParseError> {
    parse_all::<Claude>(Input::from_bytes("conversations.json", bytes.to_vec()), 3)
}

#[test]
fn truncated_files_never_panic() {
    for &(rel, _, pairs) in EXPECTED {
        let bytes = std::fs::read(corpus_file(rel)).unwrap();
        let n = bytes.len();
        let mut cuts: Vec<usize> = vec![0, 1, 2, 17, n / 7, n / 3, n / 2, n - 2, n - 1];
        cuts.extend((0..n).step_by(977));
        for cut in cuts {
            match parse_bytes(&bytes[..cut]) {
                Ok(items) => assert!(count(&items).1 <= pairs, "{rel} cut at {cut}"),
                Err(e) => assert!(
                    matches!(e.kind, ErrorKind::Malformed | ErrorKind::NotThisFormat),
                    "{rel} cut at {cut}: {e}"
                ),
            }
        }
    }
}

#[test]
fn garbage_never_panics() {
    assert!(parse_bytes(b"").is_err());
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for len in [1usize, 7, 64, 1000, 70_000] {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let _ = parse_bytes(&bytes);
        let mut framed = b"[{\"chat_messages\": ".to_vec();
        framed.extend_from_slice(&bytes);
        let _ = parse_bytes(&framed);
    }
    for doc in [
        "null",
        "false",
        "-1",
        "\"chat_messages\"",
        "[[1]]",
        "[null]",
        "{\"chat_messages\": 5}",
        "{\"chat_messages\": [1, null, \"x\", []]}",
        "[{\"chat_messages\": [{\"sender\": 1, \"content\": {}, \"parent_message_uuid\": 3}]}]",
        "[{\"chat_messages\": [{\"sender\": \"assistant\", \"content\": [1, {\"type\": 2}, {\"type\": \"tool_result\", \"content\": {\"a\": 1}}]}]}]",
        "[{\"chat_messages\": [{\"sender\": \"human\", \"text\": \"<antArtifact\", \"files\": [{\"file_name\": 5}]}]}]",
        "[{\"chat_messages\": [{\"sender\": \"assistant\", \"parent_message_uuid\": \"x\", \"uuid\": \"x\"}]}]",
        "[{\"chat_messages\": []}, {\"chat_messages\" []}]",
    ] {
        if let Err(e) = parse_bytes(doc.as_bytes()) {
            assert_ne!(e.kind, ErrorKind::Internal, "{doc}");
        }
    }
}
