//! The OpenAI-compatible embedder against a real server: llama.cpp's
//! `llama-server --embeddings` (SmolLM2-135M, mean pooling; installed by
//! `scripts/setup-llm.sh`). A 135M chat model is no retrieval model, so
//! this checks the wire protocol, batching, order and normalization — the
//! retrieval quality of the default embedder is measured on LoCoMo.

#[path = "../../chunking/tests/support/llama.rs"]
mod llama;

use chatmill_index::{Embedder, RemoteConfig, RemoteEmbedder};

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn a_real_embeddings_endpoint_serves_the_embedder() {
    let Some((server, url)) = llama::start(&["--embeddings", "--pooling", "mean"]) else {
        return;
    };
    let mut cfg = RemoteConfig::new(&url, "smollm2");
    cfg.batch = 2; // three texts: two requests
    let e = RemoteEmbedder::connect(cfg).unwrap();
    assert_eq!(e.dim(), 576, "SmolLM2-135M's hidden size");
    assert!(e.id().starts_with("openai:smollm2@"), "{}", e.id());
    let texts = [
        "nginx returns 502 for websocket upgrades",
        "my sourdough starter smells of acetone",
        "nginx returns 502 for websocket upgrades",
    ];
    let v = e.embed(&texts).unwrap();
    assert_eq!(v.len(), 3);
    for x in &v {
        assert!((cos(x, x).sqrt() - 1.0).abs() < 1e-4, "unit length");
    }
    // The same text in another batch gets the same vector; order holds.
    assert!(cos(&v[0], &v[2]) > 0.999, "{}", cos(&v[0], &v[2]));
    let alone = e.embed(&texts[1..2]).unwrap();
    assert!(cos(&alone[0], &v[1]) > 0.999);
    assert!(
        cos(&v[0], &v[1]) < 0.999,
        "different texts, different vectors"
    );

    // A dead endpoint: an error naming the model and the fix.
    drop(server);
    let err = e.embed(&["anything"]).unwrap_err();
    assert!(err.hint().unwrap().contains("--embeddings"), "{err}");
}
