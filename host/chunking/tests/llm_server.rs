//! The header model against a real local server: llama.cpp's
//! `llama-server` running SmolLM2-135M-Instruct, both installed by
//! `scripts/setup-llm.sh`. A 135M model writes poor headers, so this checks
//! the wire protocol, the JSON-schema path, validation and the fallback —
//! not the prose.

#[path = "support/llama.rs"]
mod llama;

use std::sync::atomic::Ordering;

use chatmill_chunking::header::{HeaderInput, HeaderWriter};
use chatmill_chunking::llm::{LlmConfig, LlmWriter};

#[test]
fn a_real_openai_compatible_server_answers_through_the_writer() {
    let Some((_server, url)) = llama::start(&[]) else {
        return;
    };
    let w = LlmWriter::new(LlmConfig {
        url,
        model: "smollm2".into(),
        api_key: None,
        timeout_ms: 60_000,
        max_concurrency: 1,
        retries: 1,
        deadline_ms: 1_500,
    });
    let input = HeaderInput {
        platform: "chatgpt",
        title: Some("nginx upload timeouts"),
        date: None,
        user: "Why does nginx return 504 Gateway Timeout when users upload large files?",
        assistant: "The upstream takes longer than proxy_read_timeout (60 s by default). Raise proxy_read_timeout and client_body_timeout for the upload location.",
        turn_range: "1",
        total_pairs: 1,
        previous: None,
        common: &[],
        independent: false,
    };
    let h = w
        .write(&input)
        .expect("the writer never fails: it falls back");
    let calls = w.requests.load(Ordering::Relaxed);
    assert!(calls >= 1, "the real server was called");
    if h.backfill {
        // The tiny model's answer did not validate: the built-in header
        // stands in, and every attempt was made.
        assert_eq!(calls, 2, "first attempt + one retry");
        assert!(
            h.context.starts_with("From a ChatGPT conversation"),
            "{}",
            h.context
        );
    } else {
        // It validated: the writer's guarantees hold.
        assert!((1..=3).contains(&h.topics.len()), "{h:?}");
        assert!(h.topics.iter().all(|t| *t == t.to_lowercase()), "{h:?}");
        assert!(h.context.len() >= 40, "{h:?}");
    }
    // The strict path talks to the same server again.
    let before = w.requests.load(Ordering::Relaxed);
    let _ = w.write_strict(&input);
    assert!(w.requests.load(Ordering::Relaxed) > before);
}
