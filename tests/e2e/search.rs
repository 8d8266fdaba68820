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

/// The texts of the chunk files (the Markdown files at the top of the root).
fn chunk_texts(root: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// The chunks whose frontmatter says `project: <name>`, by chunk id.
fn chunks_of_project(root: &std::path::Path, name: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for text in chunk_texts(root) {
        let fm = text.split("\n---\n").next().unwrap();
        if fm.lines().any(|l| l == format!("project: {name}")) {
            let id = fm
                .lines()
                .find_map(|l| l.strip_prefix("chunk_id: "))
                .unwrap();
            out.insert(id.to_string());
        }
    }
    out
}

fn found(run: &Run) -> std::collections::BTreeSet<String> {
    assert_eq!(run.code, 0, "{run:?}");
    run.json()["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["chunk_id"].as_str().unwrap().to_string())
        .collect()
}

/// `--project` scopes every mode to one coding project's sessions, and an
/// index written before projects were kept learns them on the next import.
/// A root imported from Claude Code sessions of two projects and a ChatGPT
/// export: (root, one of the projects, the chunk ids of that project).
fn two_projects(
    env: &Env,
) -> (
    std::path::PathBuf,
    String,
    std::collections::BTreeSet<String>,
) {
    let root = env.path("root");
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for name in [
        "claude-code-viewer-1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        "agent-sessions-small-multiversion.jsonl",
    ] {
        std::fs::copy(corpus(&format!("claude-code/{name}")), raw.join(name)).unwrap();
    }
    std::fs::copy(
        corpus("chatgpt/librechat-chatgpt-tree.json"),
        raw.join("conversations.json"),
    )
    .unwrap();
    assert_eq!(
        env.run(&["--root", root.to_str().unwrap(), "import"]).code,
        0
    );
    let projects: std::collections::BTreeSet<String> = chunk_texts(&root)
        .iter()
        .filter_map(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("project: ").map(str::to_string))
        })
        .collect();
    assert!(
        projects.len() >= 2,
        "two sessions of two projects: {projects:?}"
    );
    let project = projects.first().unwrap().clone();
    let expected = chunks_of_project(&root, &project);
    (root, project, expected)
}

/// The chunks `search --mode recent --project` finds.
fn recent_in(
    env: &Env,
    root: &std::path::Path,
    project: &str,
) -> std::collections::BTreeSet<String> {
    found(&env.run(&[
        "--root",
        root.to_str().unwrap(),
        "search",
        "--mode",
        "recent",
        "--project",
        project,
        "-k",
        "500",
        "--json",
    ]))
}

/// Makes the root's index as an older chatmill left it (no `project`
/// column); the next open marks its metadata outdated.
fn as_older_index(root: &std::path::Path) {
    rusqlite::Connection::open(root.join(".chatmill/index.sqlite3"))
        .unwrap()
        .execute_batch("DROP INDEX chunks_project; ALTER TABLE chunks DROP COLUMN project;")
        .unwrap();
}

/// Whether the index is marked as holding outdated metadata.
fn metadata_outdated(root: &std::path::Path) -> bool {
    rusqlite::Connection::open(root.join(".chatmill/index.sqlite3"))
        .unwrap()
        .query_row(
            "SELECT count(*) FROM meta WHERE key = 'metadata_outdated'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
        > 0
}

#[test]
fn a_project_scopes_searches_and_an_older_index_learns_projects() {
    let env = Env::new();
    let (root, project, expected) = two_projects(&env);
    let r = root.to_str().unwrap();
    assert_eq!(recent_in(&env, &root, &project), expected);
    for mode in ["keyword", "hybrid", "semantic"] {
        let hits = found(&env.run(&[
            "--root",
            r,
            "search",
            "the",
            "code",
            "--mode",
            mode,
            "--project",
            &project,
            "-k",
            "500",
            "--json",
        ]));
        assert!(hits.is_subset(&expected), "{mode}: {hits:?}");
    }

    as_older_index(&root);
    assert!(
        recent_in(&env, &root, &project).is_empty(),
        "projects unknown yet"
    );
    assert!(metadata_outdated(&root));
    let again = env.run(&["--root", r, "import", "--json"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(
        recent_in(&env, &root, &project),
        expected,
        "learned from the chunk files"
    );
    assert!(!metadata_outdated(&root));
    assert_eq!(env.run(&["--root", r, "verify"]).code, 0);
}

/// `reindex` writes every record again from its file: an older index is
/// current after it, and no longer marked outdated.
#[test]
fn reindex_gives_an_older_index_its_projects_and_clears_the_mark() {
    let env = Env::new();
    let (root, project, expected) = two_projects(&env);
    as_older_index(&root);
    assert!(recent_in(&env, &root, &project).is_empty());
    assert!(metadata_outdated(&root));
    let r = env.run(&["--root", root.to_str().unwrap(), "reindex", "--json"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!metadata_outdated(&root), "{r:?}");
    assert_eq!(recent_in(&env, &root, &project), expected);
}

/// `verify --repair` refreshes an older index's metadata from the chunk
/// files (vectors kept), says so, and clears the mark.
#[test]
fn verify_repair_gives_an_older_index_its_projects_and_clears_the_mark() {
    let env = Env::new();
    let (root, project, expected) = two_projects(&env);
    let r = root.to_str().unwrap();
    as_older_index(&root);
    assert!(recent_in(&env, &root, &project).is_empty());
    assert!(metadata_outdated(&root));
    // Plain `verify` says so.
    let v = env.run(&["--root", r, "verify", "--json"]);
    assert_eq!(v.code, 1, "{v:?}");
    assert_eq!(problem_kinds(&v), ["index-outdated"], "{v:?}");
    let v = env.run(&["--root", r, "verify", "--repair", "--json"]);
    assert_eq!(v.code, 0, "{v:?}");
    let repaired = v.json()["repaired"].to_string();
    assert!(
        repaired.contains("refreshed the index's metadata"),
        "{repaired}"
    );
    assert!(!metadata_outdated(&root));
    assert_eq!(recent_in(&env, &root, &project), expected);
    // Nothing left to refresh: a second repair changes nothing.
    let v = env.run(&["--root", r, "verify", "--repair", "--json"]);
    assert_eq!(v.json()["repaired"], serde_json::json!([]), "{v:?}");
    assert_eq!(env.run(&["--root", r, "verify"]).code, 0);
}

/// With more workers than two, each tokenizes its chunks' documents for the
/// index thread (the store's tokenizer takes them as they are); the
/// keyword index must come out as one worker, tokenizing nothing ahead,
/// makes it.
#[test]
fn many_workers_tokenizing_ahead_index_what_one_worker_does() {
    let env = Env::new();
    let raw = env.path("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for rel in [
        "chatgpt/librechat-chatgpt-export.json",
        "chatgpt/chatgpt2graph-code-interpreter.json",
        "claude-code/claude-code-viewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        "claude-code/claude-code-viewer-5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    ] {
        let name = rel.replace('/', "-");
        std::fs::copy(corpus(rel), raw.join(name)).unwrap();
    }
    let raw = raw.to_str().unwrap().to_string();
    let keyword = |root: &str, q: &str| -> Vec<(String, String)> {
        let out = env.run(&[
            "--root", root, "search", "--mode", "keyword", q, "--json", "-k", "20",
        ]);
        assert_eq!(out.code, 0, "{out:?}");
        out.json()["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["chunk_id"].to_string(), h["score"].to_string()))
            .collect()
    };
    let mut roots = Vec::new();
    for workers in ["1", "4"] {
        let root = env.path(&format!("root-{workers}"));
        let r = root.to_str().unwrap().to_string();
        let out = env
            .cmd()
            .env("RAYON_NUM_THREADS", workers)
            .args(["--root", &r, "import", &raw, "--json"])
            .output()
            .unwrap();
        let run = Run::from(out);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(run.json()["chunks_total"].as_u64().unwrap() > 15, "{run:?}");
        roots.push(r);
    }
    for q in [
        "volkswagen transporter fuel consumption",
        "running the tests failed",
        "plot the data",
        "component",
    ] {
        let (one, many) = (keyword(&roots[0], q), keyword(&roots[1], q));
        assert_eq!(one, many, "{q}");
    }
    assert!(keyword(&roots[1], "component").len() > 5);
}
