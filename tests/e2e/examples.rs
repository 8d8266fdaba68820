//! The demo's example exports parse through the built-in adapters with the
//! facts they were written to show.

use crate::support::*;

#[test]
fn the_example_exports_parse_with_their_documented_facts() {
    let env = Env::new();
    let dir = repo_root().join("examples/exports");
    let run = env.run(&["parse", "--compact", dir.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let parsed = run.json();
    assert_eq!(parsed.as_array().unwrap().len(), 3, "{parsed:#}");

    let chatgpt = entry(&parsed, "chatgpt-conversations.json");
    assert_eq!(chatgpt["adapter"]["id"], "chatgpt");
    let convs = chatgpt["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2);
    assert_eq!(convs[0]["title"], "Reviving a sourdough starter");
    let text = serde_json::to_string(&convs[0]).unwrap();
    assert!(
        !text.contains("regenerated away"),
        "only the final branch survives"
    );
    assert_eq!(convs[0]["pairs"].as_array().unwrap().len(), 2);
    assert_eq!(convs[0]["pairs"][0]["model"], "gpt-4o");

    let code = entry(&parsed, "3f1c2b7a-1d2e-4c5b-9a8f-0e1d2c3b4a59.jsonl");
    assert_eq!(code["adapter"]["id"], "claude-code");
    let conv = &code["conversations"][0];
    assert_eq!(conv["metadata"]["project"], "invoice-tool");
    let first = &conv["pairs"][0]["assistant"];
    // The message streamed over two lines is one answer: text, then the call.
    assert_eq!(first[0]["text"], "Let me look at how totals are computed.");
    assert_eq!(first[1]["type"], "tool-call");
    assert_eq!(first[1]["name"], "Read");
    assert_eq!(first[1]["summary"], "src/totals.rs");
    assert_eq!(
        conv["pairs"].as_array().unwrap().len(),
        2,
        "tool results are not prompts"
    );

    let log = entry(&parsed, "2026-03-31_session-a7f3.md");
    assert_eq!(log["adapter"]["id"], "markdown");
    let pairs = log["conversations"][0]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    assert_eq!(pairs[1]["timestamp"], "2026-03-31T14:23:05Z");
    assert_eq!(
        pairs[1]["user"][0]["text"],
        "How do I switch the model without restarting the app?"
    );
}
