//! `chatmill search` over what `chatmill import` indexed: hybrid, keyword,
//! recent, filters, the prompt-ready context format; `verify` and
//! `reindex` keep index and chunk files in step.

use crate::support::*;

#[test]
fn imported_chunks_are_found_by_meaning_words_and_time() {
    let env = Env::new();
    let root = env.path("root");
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for (rel, dest) in [
        ("chatgpt/librechat-chatgpt-tree.json", "conversations.json"),
        (
            "claude/osteele-claude-api-single-conversation-bakery.json",
            "bakery.json",
        ),
    ] {
        std::fs::copy(corpus(rel), raw.join(dest)).unwrap();
    }
    let r = root.to_str().unwrap();
    let import = env.run(&["--root", r, "import", "--json"]);
    assert_eq!(import.code, 0, "{import:?}");
    let s = import.json();
    assert_eq!(s["index_total"], s["chunks_total"], "{s:#}");

    // The bakery conversation is about a bakery; the query names it.
    let found = env.run(&["--root", r, "search", "bakery", "--json", "-k", "3"]);
    assert_eq!(found.code, 0, "{found:?}");
    let hits = found.json()["hits"].as_array().unwrap().clone();
    assert!(!hits.is_empty(), "{found:?}");
    assert_eq!(hits[0]["meta"]["platform"], "claude", "{hits:#?}");
    let path = root.join(hits[0]["meta"]["path"].as_str().unwrap());
    assert!(path.exists(), "hits point at chunk files");
    assert!(
        found.stderr.contains("lexical"),
        "the stand-in embedder is named: {found:?}"
    );

    // Filters and modes.
    let chatgpt_only = env.run(&[
        "--root",
        r,
        "search",
        "bakery",
        "--platform",
        "chatgpt",
        "--json",
    ]);
    for h in chatgpt_only.json()["hits"].as_array().unwrap() {
        assert_eq!(h["meta"]["platform"], "chatgpt");
    }
    let recent = env.run(&[
        "--root", r, "search", "--mode", "recent", "--json", "-k", "50",
    ]);
    let times: Vec<i64> = recent.json()["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["meta"]["timestamp"].as_i64().unwrap())
        .collect();
    assert_eq!(times.len() as u64, s["chunks_total"].as_u64().unwrap());
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );
    let nasty = env.run(&[
        "--root",
        r,
        "search",
        "--mode",
        "keyword",
        "\"(unbalanced* -x:",
    ]);
    assert_eq!(nasty.code, 0, "{nasty:?}");

    let context = env.run(&[
        "--root", r, "search", "bakery", "--format", "context", "-k", "2",
    ]);
    assert!(context.stdout.starts_with("[1] "), "{context:?}");
    assert!(context.stdout.contains("source: "), "{context:?}");
    assert!(context.stdout.contains("**User:**"), "{context:?}");

    // Index and files agree; losing the index is repaired by reindex.
    assert_eq!(env.run(&["--root", r, "verify"]).code, 0);
    std::fs::remove_file(root.join(".chatmill/index.sqlite3")).unwrap();
    let v = env.run(&["--root", r, "verify", "--json"]);
    assert_eq!(v.code, 1, "{v:?}");
    assert!(v.stdout.contains("not-indexed"), "{v:?}");
    let re = env.run(&["--root", r, "reindex"]);
    assert_eq!(re.code, 0, "{re:?}");
    assert_eq!(env.run(&["--root", r, "verify"]).code, 0);
}

/// The default embedder is the real local model: a query that shares no
/// word with the exchange still finds it, searches do not warn about a
/// stand-in, and the embedding cache fills.
#[test]
fn the_local_model_finds_paraphrases() {
    let env = Env::new();
    let root = env.path("root");
    let r = root.to_str().unwrap();
    let real = |args: &[&str]| {
        let mut c = env.cmd();
        c.env_remove("CHATMILL_EMBEDDING").args(args);
        Run::from(c.output().unwrap())
    };
    let examples = repo_root().join("examples/exports");
    let import = real(&["--root", r, "import", "--json", examples.to_str().unwrap()]);
    assert_eq!(import.code, 0, "{import:?}");
    if import.stderr.contains("no model directory found") {
        assert!(
            std::env::var_os("CHATMILL_REQUIRE_MODEL").is_none(),
            "CHATMILL_REQUIRE_MODEL is set but the model is missing: {import:?}"
        );
        return;
    }
    assert!(!import.stderr.contains("lexical"), "{import:?}");
    let found = real(&[
        "--root",
        r,
        "search",
        "my fermented bread culture has a solvent odor",
        "--mode",
        "semantic",
        "--json",
        "-k",
        "1",
    ]);
    assert_eq!(found.code, 0, "{found:?}");
    let v = found.json();
    let hit = &v["hits"][0];
    let document = hit["document"].as_str().unwrap();
    assert!(document.contains("nail polish remover"), "{v:#}");
    // The frontmatter is in `meta`, not repeated in the document.
    assert!(!document.contains("chunk_id:"), "{document}");
    assert!(document.contains("## Exchange"), "{document}");
    assert!(v.get("warnings").is_none(), "no stand-in warning: {v:#}");
    assert!(root.join(".chatmill/embeddings.sqlite3").is_file());

    // Reindexing reuses cached vectors and finds the same thing.
    let again = real(&["--root", r, "reindex", "--json"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        again.json()["embedder"]
            .as_str()
            .unwrap()
            .starts_with("local:all-MiniLM-L6-v2"),
        "{again:?}"
    );
}

#[path = "../../host/index/tests/support/chroma.rs"]
mod chroma;

/// `reindex --to chroma` migrates the chunk files into a real ChromaDB
/// server; with `[index] backend = "chroma"` search, recent and verify use
/// it; a dead server is a clear error.
#[test]
fn reindex_migrates_to_a_real_chroma_server() {
    let Some(server) = chroma::start() else {
        return;
    };
    let env = Env::new();
    let root = env.path("root");
    let r = root.to_str().unwrap();
    let examples = repo_root().join("examples/exports");
    let import = env.run(&["--root", r, "import", "--json", examples.to_str().unwrap()]);
    assert_eq!(import.code, 0, "{import:?}");
    let chunks = import.json()["chunks_total"].as_u64().unwrap();
    assert!(chunks >= 4, "{import:?}");

    let moved = env.run(&[
        "--root",
        r,
        "reindex",
        "--to",
        "chroma",
        "--chroma-url",
        &server.url,
        "--json",
    ]);
    assert_eq!(moved.code, 0, "{moved:?}");
    let m = moved.json();
    assert_eq!(m["store"], "chroma", "{m:#}");
    assert_eq!(m["indexed"].as_u64(), Some(chunks), "{m:#}");
    assert_eq!(m["index_total"].as_u64(), Some(chunks), "{m:#}");

    env.write(
        "config.toml",
        format!(
            "[index]\nbackend = \"chroma\"\n[index.chroma]\nurl = \"{}\"\n",
            server.url
        ),
    );
    let found = env.run(&[
        "--root",
        r,
        "search",
        "sourdough starter",
        "--json",
        "-k",
        "2",
    ]);
    assert_eq!(found.code, 0, "{found:?}");
    let v = found.json();
    assert!(
        v["hits"][0]["document"]
            .as_str()
            .unwrap()
            .contains("sourdough"),
        "{v:#}"
    );
    assert!(
        v["warnings"].to_string().contains("keyword"),
        "hybrid says it is dense-only on chroma: {v:#}"
    );
    let recent = env.run(&[
        "--root", r, "search", "--mode", "recent", "--json", "-k", "50",
    ]);
    let times: Vec<i64> = recent.json()["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["meta"]["timestamp"].as_i64().unwrap())
        .collect();
    assert_eq!(times.len() as u64, chunks);
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    let verify = env.run(&["--root", r, "verify", "--json"]);
    assert_eq!(verify.code, 0, "{verify:?}");

    drop(server);
    let dead = env.run(&["--root", r, "search", "sourdough"]);
    assert_ne!(dead.code, 0, "{dead:?}");
    assert!(dead.stderr.contains("error:"), "{dead:?}");
    assert!(
        dead.stderr.contains("chroma run"),
        "names the fix: {dead:?}"
    );
}
