use super::*;
use chatmill_adapter_sdk::{Item, parse_all};

fn parse(name: &str, text: &str) -> Result<Vec<Conversation>, ParseError> {
    let items = parse_all::<ApiLog>(Input::from_bytes(name, text.as_bytes().to_vec()), 1000)?;
    let mut convs: Vec<Conversation> = Vec::new();
    for item in items {
        match item {
            Item::ConversationStart(s) => convs.push(Conversation {
                start: s,
                ..Conversation::default()
            }),
            Item::Pair(p) => convs.last_mut().unwrap().pairs.push(p),
            Item::ConversationEnd(e) => {
                let c = convs.last_mut().unwrap();
                for s in e.skipped {
                    for _ in 0..s.count {
                        c.skipped.add(s.reason.clone());
                    }
                }
            }
        }
    }
    Ok(convs)
}

const INPUT: &str = r#"{"custom_id": "r-1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "gpt-4o", "messages": [{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Hi one"}]}}
{"custom_id": "r-2", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi two"}]}}
"#;
const OUTPUT: &str = r#"{"id": "batch_req_2", "custom_id": "r-2", "response": {"status_code": 200, "body": {"id": "chatcmpl-2", "object": "chat.completion", "created": 1729730156, "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Answer two"}, "finish_reason": "stop"}]}}, "error": null}
{"id": "batch_req_1", "custom_id": "r-1", "response": {"status_code": 200, "body": {"id": "chatcmpl-1", "object": "chat.completion", "created": 1729730157, "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Answer one"}, "finish_reason": "stop"}]}}, "error": null}
"#;

#[test]
fn batch_input_alone_gives_unanswered_pairs() {
    let convs = parse("batch_input.jsonl", INPUT).unwrap();
    assert_eq!(convs.len(), 1);
    let c = &convs[0];
    assert_eq!(c.start.id, "batch_input:r-1");
    assert_eq!(c.start.platform, "api");
    assert_eq!(c.pairs.len(), 2);
    assert_eq!(c.pairs[0].user, vec![Part::Text("Hi one".into())]);
    assert!(c.pairs[0].assistant.is_empty());
    assert_eq!(c.pairs[0].model.as_deref(), Some("gpt-4o"));
    assert!(
        c.pairs[0]
            .metadata
            .contains(&("system_prompt".into(), "Be nice.".into()))
    );
    assert!(
        c.pairs[1]
            .metadata
            .iter()
            .all(|(k, _)| k != "system_prompt")
    );
}

#[test]
fn batch_output_alone_is_skipped_and_counted() {
    let convs = parse("batch_output.jsonl", OUTPUT).unwrap();
    assert_eq!(convs.len(), 1);
    assert!(convs[0].pairs.is_empty());
    assert_eq!(convs[0].skipped.get("response-without-request"), 2);
}

#[test]
fn input_and_output_in_one_file_are_joined_on_custom_id() {
    for text in [format!("{INPUT}{OUTPUT}"), format!("{OUTPUT}{INPUT}")] {
        let convs = parse("joined.jsonl", &text).unwrap();
        assert_eq!(convs.len(), 1);
        let c = &convs[0];
        assert_eq!(c.pairs.len(), 2);
        let one = c
            .pairs
            .iter()
            .find(|p| p.user == vec![Part::Text("Hi one".into())])
            .unwrap();
        assert_eq!(one.assistant, vec![Part::Text("Answer one".into())]);
        assert_eq!(one.model.as_deref(), Some("gpt-4o-2024-08-06"));
        // No request time: the response's `created`.
        assert_eq!(one.timestamp, Timestamp::from_unix_f64(1_729_730_157.0));
        assert!(c.skipped.is_empty());
    }
    // Pairs follow the first appearance of each custom_id.
    let convs = parse("joined.jsonl", &format!("{OUTPUT}{INPUT}")).unwrap();
    assert_eq!(convs[0].pairs[0].user, vec![Part::Text("Hi two".into())]);
    assert_eq!(convs[0].start.id, "joined:r-2");
}

#[test]
fn explicit_session_ids_group_calls() {
    let text = r#"[
      {"session_id": "s1", "request": {"model": "m", "messages": [{"role": "user", "content": "a"}]}, "response": {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "A"}]}},
      {"request": {"messages": [{"role": "user", "content": "loose"}]}},
      {"session_id": "s2", "request": {"messages": [{"role": "user", "content": "b"}]}},
      {"session_id": "s1", "request": {"messages": [{"role": "user", "content": "c"}]}}
    ]"#;
    let convs = parse("calls.json", text).unwrap();
    let ids: Vec<_> = convs.iter().map(|c| c.start.id.as_str()).collect();
    assert_eq!(ids, ["s1", "calls:0", "s2"]);
    assert_eq!(convs[0].pairs.len(), 2);
    assert_eq!(convs[0].pairs[0].assistant, vec![Part::Text("A".into())]);
    assert_eq!(convs[0].pairs[1].user, vec![Part::Text("c".into())]);
    assert!(
        convs[0]
            .start
            .metadata
            .contains(&("session_id".into(), "s1".into()))
    );
}

#[test]
fn langfuse_generation_update_joins_and_trace_duplicate_is_dropped() {
    let text = r#"{"batch": [
      {"type": "trace-create", "body": {"id": "t1", "sessionId": "sess", "name": "chat", "input": "dup", "output": "dup"}},
      {"type": "generation-create", "body": {"id": "g1", "traceId": "t1", "model": "gpt-x", "startTime": "2025-01-16T11:28:54-08:00", "input": {"messages": [{"role": "user", "content": "Hello!"}]}}},
      {"type": "generation-update", "body": {"id": "g1", "output": {"role": "assistant", "content": "Hi there"}}},
      {"type": "span-create", "body": {"id": "s"}}
    ], "metadata": {}}"#;
    let convs = parse("lf.json", text).unwrap();
    assert_eq!(convs.len(), 1);
    let c = &convs[0];
    assert_eq!(c.start.id, "sess");
    assert_eq!(c.pairs.len(), 1);
    assert_eq!(c.pairs[0].user, vec![Part::Text("Hello!".into())]);
    assert_eq!(c.pairs[0].assistant, vec![Part::Text("Hi there".into())]);
    assert_eq!(
        c.pairs[0].timestamp,
        Timestamp::parse("2025-01-16T19:28:54Z")
    );
    assert_eq!(c.skipped.get("langfuse-trace-duplicate"), 1);
    assert_eq!(c.skipped.get("langfuse-other-event"), 1);
}

#[test]
fn malformed_lines_are_skipped_and_all_bad_is_an_error() {
    let text = format!("{INPUT}{{\"custom_id\": \"r-3\", \"body\": \n\n");
    let convs = parse("b.jsonl", &text).unwrap();
    assert_eq!(convs[0].pairs.len(), 2);
    assert_eq!(convs[0].skipped.get("malformed-line"), 1);
    let e = parse("b.jsonl", "{\"a\": \n{\"b\n").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed);
    let e = parse("b.json", r#"[{"foo": 1}, {"bar": 2}]"#).unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotThisFormat);
    assert_eq!(
        parse("e.json", "").unwrap_err().kind,
        ErrorKind::NotThisFormat
    );
    assert_eq!(
        parse("e.json", "hello").unwrap_err().kind,
        ErrorKind::NotThisFormat
    );
    assert!(parse("e.json", "[]").unwrap().is_empty());
}

#[test]
fn embeddings_requests_are_not_pairs() {
    let text = r#"{"custom_id": "e1", "method": "POST", "url": "/v1/embeddings", "body": {"model": "x", "input": "text"}}
{"custom_id": "c1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "x", "messages": [{"role": "user", "content": "q"}]}}
"#;
    let convs = parse("mixed.jsonl", text).unwrap();
    assert_eq!(convs[0].pairs.len(), 1);
    assert_eq!(convs[0].skipped.get("non-chat-endpoint"), 1);
}

#[test]
fn sniff_shapes() {
    let s = |t: &str| sniff(t.as_bytes());
    assert_eq!(s(INPUT), 95);
    assert_eq!(s(OUTPUT), 95);
    assert!(s(r#"{"batch": [{"type": "trace-create", "body": {}}]}"#) >= 90);
    assert!(s(r#"[{"request": {"messages": []}, "response": {}}]"#) >= 80);
    assert!(s(r#"{"model": "x", "messages": [{"role": "user", "content": "q"}]}"#) >= 70);
    assert!(s(r#"{"messages": [{"role": "user", "content": "q"}]}"#) >= 70);
    assert_eq!(
        s(r#"{"sessionId": "x", "messages": [{"role": "user"}]}"#),
        0
    );
    assert_eq!(s(r#"[{"uuid": "u", "chat_messages": []}]"#), 0);
    assert_eq!(s("# title\n{\"custom_id\": 1}"), 0);
    assert_eq!(s(""), 0);
    // A string value that mentions a key is not a key.
    assert_eq!(s(r#"{"text": "\"custom_id\": \"body\""}"#), 0);
    // Truncated heads are fine.
    assert_eq!(s(r#"[{"custom_id": "x", "body": {"mess"#), 95);
}
