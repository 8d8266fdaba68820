//! Data-driven tests over `corpus/api-log/*`, plus sniff discipline and
//! robustness. Expected numbers were established independently of this
//! parser with small `python3` scripts over the files (see the comments).

use std::path::Path;

use chatmill_adapter_api_log::ApiLog;
use chatmill_adapter_sdk::testkit::{
    assert_chunking_invariant, corpus_file, corpus_files, count, sniff_file,
};
use chatmill_adapter_sdk::{Input, Item, Part, Timestamp, TurnPair, parse_all};

/// (file, conversations, pairs, skipped `response-without-request`).
const EXPECTED: &[(&str, usize, usize, u32)] = &[
    // 65 JSONL lines, each `{custom_id, body: {messages: [system, user]}}`
    // (python: count lines with a `role: user` message) -> 65 unanswered pairs.
    ("api-log/genai_navirag-openai-batch_input.jsonl", 1, 65, 0),
    // 65 lines, each `{custom_id, response}` and no request: every one is
    // skipped as response-without-request (python: count `response` keys).
    ("api-log/genai_navirag-openai-batch_output.jsonl", 1, 0, 65),
    // 3 lines (the last has no trailing newline; `wc -l` says 2), each with a user message.
    ("api-log/groq-batch-processing-batch_input.jsonl", 1, 3, 0),
    // 3 response-only lines (request-2, request-3, request-1).
    ("api-log/groq-batch-processing-batch_output.jsonl", 1, 0, 3),
    // One Langfuse batch: 1 trace-create + 1 generation-create with the same
    // input/output (python: [e['type'] for e in batch]) -> 1 pair, the trace's
    // copy skipped as langfuse-trace-duplicate.
    (
        "api-log/litellm-langfuse-ingestion-batch-completion.json",
        1,
        1,
        0,
    ),
    // One StandardLoggingPayload object: messages [user] + response.
    ("api-log/litellm-standard_logging_payload.json", 1, 1, 0),
    // 3 Responses-API batch lines, `input` string each.
    (
        "api-log/openai-cookbook-responses-api-batch-input-first3.jsonl",
        1,
        3,
        0,
    ),
];

fn pairs(items: &[Item]) -> Vec<&TurnPair> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Pair(p) => Some(p),
            _ => None,
        })
        .collect()
}

fn skipped(items: &[Item], reason: &str) -> u32 {
    items
        .iter()
        .filter_map(|i| match i {
            Item::ConversationEnd(e) => Some(e),
            _ => None,
        })
        .flat_map(|e| e.skipped.iter())
        .filter(|s| s.reason == reason)
        .map(|s| s.count)
        .sum()
}

fn start(items: &[Item]) -> &chatmill_adapter_sdk::ConversationStart {
    match &items[0] {
        Item::ConversationStart(s) => s,
        other => panic!("expected a start, got {other:?}"),
    }
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

fn meta<'a>(p: &'a TurnPair, key: &str) -> Option<&'a str> {
    p.metadata
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn corpus_counts_and_chunking_invariance() {
    for &(rel, convs, n_pairs, orphans) in EXPECTED {
        let items = assert_chunking_invariant::<ApiLog>(&corpus_file(rel));
        assert_eq!(count(&items), (convs, n_pairs), "{rel}");
        assert_eq!(
            skipped(&items, "response-without-request"),
            orphans,
            "{rel}"
        );
        assert_eq!(start(&items).platform, "api", "{rel}");
    }
}

#[test]
fn batch_input_content() {
    let items = assert_chunking_invariant::<ApiLog>(&corpus_file(
        "api-log/groq-batch-processing-batch_input.jsonl",
    ));
    let s = start(&items);
    assert_eq!(s.id, "groq-batch-processing-batch_input:request-1");
    assert_eq!(s.model.as_deref(), Some("llama-3.1-8b-instant"));
    // A batch's requests are separate questions, not one dialogue.
    assert!(s.metadata.contains(&("pairs".into(), "independent".into())));
    let p = pairs(&items);
    assert_eq!(text(&p[0].user), "What is 2+2?");
    assert!(p[0].assistant.is_empty(), "an input file has no answers");
    assert_eq!(meta(p[0], "custom_id"), Some("request-1"));
    // System prompts are metadata, never a turn.
    assert_eq!(
        meta(p[1], "system_prompt"),
        Some("You are a helpful translation assistant. Translate the following into spanish.")
    );
    assert!(
        p.iter()
            .all(|p| !text(&p.user).contains("You are a helpful"))
    );
}

#[test]
fn responses_api_batch_input() {
    let items = assert_chunking_invariant::<ApiLog>(&corpus_file(
        "api-log/openai-cookbook-responses-api-batch-input-first3.jsonl",
    ));
    let p = pairs(&items);
    assert!(text(&p[1].user).contains("My blender arrived cracked. Order O-1002."));
    assert_eq!(
        meta(p[0], "system_prompt"),
        Some("Return concise internal support QA tags and a one-sentence summary.")
    );
    assert_eq!(meta(p[0], "endpoint"), Some("/v1/responses"));
    assert_eq!(p[2].model.as_deref(), Some("gpt-5.4-nano"));
}

/// Input and output of one batch, joined on `custom_id` when both are in
/// one stream (here: the two real files concatenated, output first, so the
/// Groq output's own order request-2, -3, -1 decides pair order).
#[test]
fn joined_batch_files() {
    for (input, output, n) in [
        (
            "api-log/genai_navirag-openai-batch_input.jsonl",
            "api-log/genai_navirag-openai-batch_output.jsonl",
            65,
        ),
        (
            "api-log/groq-batch-processing-batch_input.jsonl",
            "api-log/groq-batch-processing-batch_output.jsonl",
            3,
        ),
    ] {
        let mut bytes = std::fs::read(corpus_file(output)).unwrap();
        if !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        bytes.extend(std::fs::read(corpus_file(input)).unwrap());
        let items = parse_all::<ApiLog>(Input::from_bytes("joined.jsonl", bytes), 1000).unwrap();
        assert_eq!(count(&items), (1, n));
        assert_eq!(skipped(&items, "response-without-request"), 0);
        let p = pairs(&items);
        assert!(
            p.iter()
                .all(|p| !p.user.is_empty() && !p.assistant.is_empty())
        );
        if n == 3 {
            // Output order: request-2 first.
            assert_eq!(text(&p[0].user), "Hello, how are you today?");
            assert!(text(&p[0].assistant).starts_with("\"Hola, ¿cómo estás hoy?\""));
            assert_eq!(meta(p[0], "custom_id"), Some("request-2"));
            // The 1000-line numeric answer is kept whole.
            assert!(text(&p[1].assistant).contains("\n999\n1000"));
            // No request time: the response's `created` (1742500035).
            assert_eq!(p[0].timestamp, Timestamp::from_unix_f64(1_742_500_035.0));
        } else {
            let first = p
                .iter()
                .find(|p| meta(p, "custom_id") == Some("request-0"))
                .unwrap();
            // The model the response resolved, not the requested alias.
            assert_eq!(first.model.as_deref(), Some("gpt-4o-2024-08-06"));
            assert!(text(&first.assistant).starts_with(
                "- Trash can is below the bulletin board and to the right of the tricycle."
            ));
            assert_eq!(meta(first, "finish_reason"), Some("stop"));
            assert_eq!(
                meta(first, "response_id"),
                Some("chatcmpl-ALg7QdBif2FFAsJCT4jQVkrgvJ8ot")
            );
            assert_eq!(first.timestamp, Timestamp::from_unix_f64(1_729_730_156.0));
        }
    }
}

#[test]
fn litellm_payload() {
    let items = assert_chunking_invariant::<ApiLog>(&corpus_file(
        "api-log/litellm-standard_logging_payload.json",
    ));
    let s = start(&items);
    assert_eq!(
        s.id,
        "litellm-standard_logging_payload:chatcmpl-2299b6a2-82a3-465a-b47c-04e685a2227f"
    );
    assert!(
        s.metadata
            .contains(&("source_tool".into(), "litellm".into()))
    );
    let p = pairs(&items);
    assert_eq!(p[0].user, vec![Part::Text("Hello, world!".into())]);
    assert_eq!(p[0].assistant, vec![Part::Text("hi".into())]);
    assert_eq!(p[0].model.as_deref(), Some("gpt-4o"));
    // `startTime` is a naive string: taken as UTC.
    assert_eq!(
        p[0].timestamp,
        Timestamp::parse("2025-01-24T09:20:46.847371Z")
    );
}

#[test]
fn langfuse_batch() {
    let items = assert_chunking_invariant::<ApiLog>(&corpus_file(
        "api-log/litellm-langfuse-ingestion-batch-completion.json",
    ));
    let s = start(&items);
    // The generation has no traceId; the batch's only trace claims it.
    assert_eq!(s.id, "litellm-test-793c217f-9417-4e77-84a7-8dcc16e5b72b");
    assert!(
        s.metadata
            .contains(&("trace_name".into(), "litellm-acompletion".into()))
    );
    // A trace is one dialogue.
    assert!(!s.metadata.iter().any(|(k, _)| k == "pairs"));
    let p = pairs(&items);
    assert_eq!(p[0].user, vec![Part::Text("Hello!".into())]);
    assert_eq!(
        p[0].assistant,
        vec![Part::Text("Hello! How can I assist you today?".into())]
    );
    assert_eq!(p[0].model.as_deref(), Some("gpt-3.5-turbo"));
    // startTime 2025-01-16T11:28:54.796360-08:00 in UTC.
    assert_eq!(
        p[0].timestamp,
        Timestamp::parse("2025-01-16T19:28:54.796360Z")
    );
    assert_eq!(skipped(&items, "langfuse-trace-duplicate"), 1);
}

fn is_mine(path: &Path) -> bool {
    path.parent()
        .and_then(|p| p.file_name())
        .is_some_and(|d| d == "api-log")
}

#[test]
fn sniff_discipline_over_the_whole_corpus() {
    let mut mine = 0;
    for path in corpus_files() {
        let score = sniff_file::<ApiLog>(&path);
        if is_mine(&path) {
            mine += 1;
            assert!(score >= 70, "{}: {score}", path.display());
        } else {
            assert!(score < 30, "{}: {score}", path.display());
        }
    }
    // The 7 files of EXPECTED.
    assert_eq!(mine, EXPECTED.len());
}

fn never_panics(name: &str, bytes: Vec<u8>) {
    for max in [1, 1000] {
        // Ok or a typed error; a panic fails the test.
        let _ = parse_all::<ApiLog>(Input::from_bytes(name, bytes.clone()), max);
    }
}

#[test]
fn robustness() {
    for &(rel, ..) in EXPECTED {
        let bytes = std::fs::read(corpus_file(rel)).unwrap();
        let len = bytes.len();
        for cut in [1, 2, 10, 100, len / 3, len / 2, len - 1] {
            never_panics(rel, bytes[..cut.min(len)].to_vec());
        }
    }
    never_panics("empty.jsonl", Vec::new());
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for n in 0..50 {
        let bytes: Vec<u8> = (0..(n * 37 % 700))
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect();
        never_panics("random.jsonl", bytes.clone());
        let mut framed = b"{".to_vec();
        framed.extend(bytes);
        never_panics("random.jsonl", framed);
    }
    for doc in [
        "[1, 2, 3]",
        "{\"custom_id\": 5, \"body\": []}",
        "{\"custom_id\": {}, \"response\": \"x\"}",
        "{\"custom_id\": \"a\", \"body\": {\"messages\": {\"role\": \"user\"}}}",
        "{\"messages\": \"hi\", \"response\": 5}",
        "{\"batch\": {\"type\": \"trace-create\"}}",
        "{\"batch\": [1, {\"type\": \"generation-create\", \"body\": []}]}",
        "{\"request\": null, \"response\": null}",
        "[{\"choices\": [{\"message\": {\"content\": [{\"type\": 1}]}}]}]",
        "{\"custom_id\": \"x\", \"body\": {\"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}}\n{\"custom_id\": \"x\", \"body\": {\"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}}",
    ] {
        never_panics("wrong.json", doc.as_bytes().to_vec());
    }
}
