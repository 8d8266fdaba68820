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
