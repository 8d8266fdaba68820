//! The ChatGPT adapter over the real-export corpus (`shared/corpus/chatgpt`).
//!
//! Expected counts were established independently of the parser with a
//! Python script (/tmp/hA/count.py while developing; the method is repeated
//! next to each row): load the file with `json.load`, walk `parent` up from
//! `current_node` (or, when it is not in `mapping`, from the leaf with the
//! latest `create_time`), and count the `user` messages on that path whose
//! content type is `text`/`multimodal_text` and which are not
//! `is_visually_hidden_from_conversation`.

use std::path::Path;

use chatmill_adapter_chatgpt::ChatGpt;
use chatmill_adapter_sdk::testkit::{
    assert_chunking_invariant, corpus_file, corpus_files, count, sniff_file,
};
use chatmill_adapter_sdk::{
    ConversationEnd, ConversationStart, ErrorKind, Input, Item, Part, TurnPair, parse_all,
};

/// (file, conversations, pairs).
const EXPECTED: &[(&str, usize, usize)] = &[
    // 1 conversation; 45 nodes, all on the current_node path; 8 visible
    // user prompts (the system node and the custom-instructions node are
    // hidden).
    ("chatgpt/chatgpt2graph-code-interpreter.json", 1, 8),
    // 1 conversation; current_node is not in `mapping`; the only leaf
    // (4b3aec6b…) walks up to a browsing tool node whose parent is missing:
    // no user message on the path, so 0 pairs.
    ("chatgpt/librechat-chatgpt-citations.json", 1, 0),
    // 2 conversations; 3 + 2 user prompts on the current_node paths.
    ("chatgpt/librechat-chatgpt-export.json", 2, 5),
    // 1 conversation of 13 nodes; the current_node path has 8 nodes and 3
    // user prompts ("hi there", "hi again", "tell me a joke").
    ("chatgpt/librechat-chatgpt-tree.json", 1, 3),
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
    let items = assert_chunking_invariant::<ChatGpt>(&corpus_file(rel));
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

fn all_text(c: &Conv) -> String {
    let mut s = String::new();
    for p in &c.pairs {
        for part in p.user.iter().chain(&p.assistant) {
            s.push_str(&format!("{part:?}\n"));
        }
    }
    s
}

#[test]
fn corpus_counts_and_chunking_invariance() {
    for &(rel, convs, pairs) in EXPECTED {
        let items = assert_chunking_invariant::<ChatGpt>(&corpus_file(rel));
        assert_eq!(count(&items), (convs, pairs), "{rel}");
        for item in &items {
            if let Item::ConversationStart(s) = item {
                assert_eq!(s.platform, "chatgpt");
                assert!(!s.id.is_empty());
            }
            if let Item::Pair(p) = item {
                assert!(!p.user.is_empty(), "{rel}: pair without a prompt");
            }
        }
    }
}

#[test]
fn every_chatgpt_corpus_file_is_in_the_table() {
    for f in corpus_files() {
        let rel = f
            .strip_prefix(chatmill_adapter_sdk::testkit::corpus_dir())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("chatgpt/") {
            assert!(
                EXPECTED.iter().any(|(r, _, _)| *r == rel),
                "{rel} has no expected counts"
            );
        }
    }
}

#[test]
fn tree_keeps_only_the_final_branch() {
    let c = &conversations("chatgpt/librechat-chatgpt-tree.json")[0];
    assert_eq!(c.start.id, "d5dc5307-6807-41a0-8b04-4acee626eeb7");
    assert_eq!(c.start.title.as_deref(), Some("Assist user with summary"));
    assert_eq!(
        c.start.model.as_deref(),
        Some("text-davinci-002-render-sha")
    );
    let prompts: Vec<String> = c.pairs.iter().map(|p| text_of(&p.user)).collect();
    assert_eq!(prompts, ["hi there", "hi again", "tell me a joke"]);
    // The superseded edit branch ("so cool bro" → "tell me a story", with
    // its interrupted answer) did not survive.
    let all = all_text(c);
    assert!(!all.contains("so cool bro") && !all.contains("tell me a story"));
    assert!(!all.contains("Once upon a time"));
    // The regeneration: only current_node f63b8e17 answers the joke.
    assert_eq!(
        text_of(&c.pairs[2].assistant),
        "Sure, here's one for you:\n\nWhy don't scientists trust atoms?\n\nBecause they make up everything!"
    );
    assert_eq!(c.skip("off-branch-message"), 5);
    assert_eq!(c.skip("system-message"), 1);
    assert_eq!(
        c.pairs[0].timestamp.unwrap().to_rfc3339(),
        "2024-05-01T17:37:11.150442Z"
    );
    assert_eq!(
        c.pairs[2].model.as_deref(),
        Some("text-davinci-002-render-sha")
    );
    assert!(c.pairs[2].metadata.contains(&(
        "message_id".into(),
        "aaa20127-b9e3-44f6-afbe-a2475838625a".into()
    )));
}

#[test]
fn web_browsing_is_summarized() {
    let cs = conversations("chatgpt/librechat-chatgpt-export.json");
    let c = &cs[0];
    assert_eq!(c.start.title.as_deref(), Some("Conversation 1. Web Search"));
    assert_eq!(c.start.model, None);
    let p = &c.pairs[0];
    assert_eq!(
        text_of(&p.user),
        "What is the fuel consumption of vw  transporter with 8 people in l/km"
    );
    assert_eq!(p.model.as_deref(), Some("gpt-4"));
    assert_eq!(
        p.assistant[0],
        Part::ToolCall {
            name: "browser".into(),
            summary: "search(\"Volkswagen Transporter fuel consumption with 8 people l/km\")"
                .into()
        }
    );
    match &p.assistant[1] {
        Part::ToolResult(s) => {
            assert!(
                s.starts_with("Volkswagen Transporter MPG - Actual MPG from 528"),
                "{s}"
            );
            assert!(
                s.contains("(www.fuelly.com)") && s.chars().count() <= 201,
                "{s}"
            );
        }
        other => panic!("expected the browsing summary, got {other:?}"),
    }
    assert_eq!(
        p.assistant[2],
        Part::ToolCall {
            name: "browser".into(),
            summary: "mclick([0, 3, 7])".into()
        }
    );
    // Tool output stays short; citation markers are gone from the prose,
    // the cited pages are parts where the markers were.
    for pair in &c.pairs {
        for part in &pair.assistant {
            if let Part::ToolResult(s) = part {
                assert!(s.chars().count() <= 201);
            }
            if let Part::Text(t) = part {
                assert!(!t.contains('【') && !t.contains('†'), "{t}");
            }
        }
    }
    // "…maintenance of the vehicle【6†source】【7†source】.": both pages
    // before the full stop.
    let n = p.assistant.len();
    assert!(
        matches!(&p.assistant[n - 4], Part::Text(t) if t.ends_with("maintenance of the vehicle")),
        "{:?}",
        &p.assistant[n - 4..]
    );
    for cited in &p.assistant[n - 3..n - 1] {
        assert!(matches!(cited, Part::Other { kind, .. } if kind == "citation"));
    }
    assert_eq!(p.assistant[n - 1], Part::Text(".".into()));
    assert!(p.assistant.contains(&Part::Other {
        kind: "citation".into(),
        text: "Volkswagen Transporter Review - Drive — https://www.drive.com.au/reviews/volkswagen-transporter-review/".into()
    }));
    let c2 = &cs[1];
    assert_eq!(c2.start.id, "7c5ab593-dbab-43bd-862d-2c3c1eeebf6a");
    assert_eq!(text_of(&c2.pairs[1].user), "give me code in C#");
    assert_eq!(
        c2.pairs[1].model.as_deref(),
        Some("text-davinci-002-render-sha")
    );
}

#[test]
fn code_interpreter_is_code_plus_short_results() {
    let c = &conversations("chatgpt/chatgpt2graph-code-interpreter.json")[0];
    assert_eq!(c.start.title.as_deref(), Some("Average Distance in U(0,1)"));
    assert_eq!(
        c.start.updated.unwrap().to_rfc3339(),
        "2023-09-22T08:23:04Z"
    );
    assert_eq!(c.skip("custom-instructions"), 1);
    let p = &c.pairs[0];
    assert_eq!(p.model.as_deref(), Some("gpt-4-code-interpreter"));
    let codes: Vec<&Part> = p
        .assistant
        .iter()
        .filter(|x| matches!(x, Part::Code { .. }))
        .collect();
    assert_eq!(codes.len(), 3);
    match codes[0] {
        Part::Code { language, code } => {
            assert_eq!(language.as_deref(), Some("python"));
            assert!(code.starts_with("from sympy import symbols, integrate, Abs\n\nx, y"));
            assert!(!code.contains('\r'));
        }
        _ => unreachable!(),
    }
    assert!(p.assistant.contains(&Part::ToolResult("1/3".into())));
    // 11 code cells over the conversation, each followed by its output.
    let cells: usize = c
        .pairs
        .iter()
        .map(|p| {
            p.assistant
                .iter()
                .filter(|x| matches!(x, Part::Code { .. }))
                .count()
        })
        .sum();
    assert_eq!(cells, 11);
    assert_eq!(
        text_of(&c.pairs[7].user),
        "where is the variance? I want a 1std plot around the mean at each point? or somesuch"
    );
}

#[test]
fn a_dangling_current_node_falls_back_without_crashing() {
    let c = &conversations("chatgpt/librechat-chatgpt-citations.json")[0];
    assert_eq!(c.start.id, "d6523d1e-7ec3-474f-a363-0e9dffdb3d93");
    assert_eq!(c.start.title.as_deref(), Some("Citation Convo"));
    assert!(c.pairs.is_empty());
    assert_eq!(c.skip("current-node-not-found"), 1);
    assert_eq!(c.skip("broken-parent-link"), 1);
    // The browsing result and the answer have no prompt in this trimmed file.
    assert_eq!(c.skip("answer-without-prompt"), 2);
}

fn is_mine(path: &Path) -> bool {
    path.parent()
        .and_then(|p| p.file_name())
        .is_some_and(|d| d == "chatgpt")
}

#[test]
fn sniff_discipline() {
    let (mut mine_min, mut other_max) = (u8::MAX, 0u8);
    let mut mine = 0;
    for f in corpus_files() {
        let score = sniff_file::<ChatGpt>(&f);
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
fn other_formats_are_refused_at_open() {
    for f in corpus_files() {
        if is_mine(&f) {
            continue;
        }
        let bytes = std::fs::read(&f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        match parse_all::<ChatGpt>(Input::from_bytes(name, bytes), 1000) {
            Err(e) => assert_ne!(e.kind, ErrorKind::Internal, "{}", f.display()),
            Ok(items) => assert_eq!(count(&items).1, 0, "{}", f.display()),
        }
    }
}

fn parse_bytes(bytes: &[u8]) -> Result<Vec<Item>, chatmill_adapter_sdk::ParseError> {
    parse_all::<ChatGpt>(Input::from_bytes("conversations.json", bytes.to_vec()), 3)
}

#[test]
fn truncated_files_never_panic() {
    for &(rel, _, pairs) in EXPECTED {
        let bytes = std::fs::read(corpus_file(rel)).unwrap();
        let n = bytes.len();
        let mut cuts: Vec<usize> = vec![0, 1, 2, 17, n / 7, n / 3, n / 2, n - 2, n - 1];
        cuts.extend((0..n).step_by(1511));
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
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
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
        let mut framed = b"[{\"mapping\": ".to_vec();
        framed.extend_from_slice(&bytes);
        let _ = parse_bytes(&framed);
    }
    for doc in [
        "null",
        "true",
        "123",
        "\"conversations\"",
        "[[1]]",
        "[null]",
        "{\"conversations\": 5}",
        "{\"conversations\": [1, 2]}",
        "[{\"mapping\": 5, \"current_node\": []}]",
        "[{\"mapping\": {\"a\": 5, \"b\": {\"message\": 3, \"parent\": {}}}}]",
        "[{\"mapping\": {\"a\": {\"message\": {\"author\": {\"role\": \"user\"}, \"content\": {\"content_type\": \"multimodal_text\", \"parts\": [[[]], {}, null]}}}}}]",
        "[{\"mapping\": {\"a\": {\"message\": {\"author\": {\"role\": \"tool\"}, \"content\": {\"content_type\": \"thoughts\", \"thoughts\": [1, \"x\", {\"summary\": 2}]}}}}}]",
        "[{\"mapping\": {}}, {\"mapping\": {\"a\" 1}}]",
        "[{\"mapping\": {\"\\ud800\": {}}}]",
    ] {
        if let Err(e) = parse_bytes(doc.as_bytes()) {
            assert_ne!(e.kind, ErrorKind::Internal, "{doc}");
        }
    }
}
