//! Vectors after words (#26): with the real model, `import --no-wait`
//! exits once chunks, manifest and keyword index are written; searches
//! rank the waiting chunks by keywords and say how many wait; `verify`
//! reports them; `chatmill embed` makes them, and a `kill -9` in the middle
//! of it loses nothing.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::*;

/// How many chunks wait for vectors, read from the index file itself.
fn waiting(root: &std::path::Path) -> i64 {
    rusqlite::Connection::open(root.join(".chatmill/index.sqlite3"))
        .unwrap()
        .query_row("SELECT count(*) FROM pending", [], |r| r.get(0))
        .unwrap()
}

fn with_vectors(root: &std::path::Path) -> i64 {
    rusqlite::Connection::open(root.join(".chatmill/index.sqlite3"))
        .unwrap()
        .query_row(
            "SELECT count(*) FROM chunks WHERE length(embedding) > 0",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn vectors_come_after_the_words_and_a_killed_fill_resumes() {
    let env = Env::new();
    let root = env.path("root");
    let r = root.to_str().unwrap();
    let raw = env.path("in");
    std::fs::create_dir_all(&raw).unwrap();
    chatmill_synth::chatgpt_export(
        &raw.join("conversations.json"),
        chatmill_synth::Limit::Pairs(1500),
    )
    .unwrap();
    let real = |args: &[&str]| {
        let mut c = env.cmd();
        c.env_remove("CHATMILL_EMBEDDING").args(args);
        c
    };
    let run = |args: &[&str]| Run::from(real(args).output().unwrap());
    let import = run(&[
        "--root",
        r,
        "import",
        "--no-wait",
        "--json",
        raw.to_str().unwrap(),
    ]);
    assert_eq!(import.code, 0, "{import:?}");
    if import.stderr.contains("no model directory found") {
        assert!(
            std::env::var_os("CHATMILL_REQUIRE_MODEL").is_none(),
            "CHATMILL_REQUIRE_MODEL is set but the model is missing: {import:?}"
        );
        return;
    }
    let s = import.json();
    let total = s["chunks_total"].as_i64().unwrap();
    assert!(total > 1000, "{s:#}");
    assert_eq!(s["vectors_pending"].as_i64(), Some(total), "{s:#}");
    assert_eq!(
        s["index_total"].as_i64(),
        Some(total),
        "every chunk is indexed"
    );
    assert_eq!(waiting(&root), total);

    // Found by words meanwhile, with a note; `verify` counts them.
    let found = run(&["--root", r, "search", "caching", "--json", "-k", "3"]);
    assert_eq!(found.code, 0, "{found:?}");
    let v = found.json();
    assert!(!v["hits"].as_array().unwrap().is_empty(), "{v:#}");
    assert_eq!(v["pending"].as_i64(), Some(total), "{v:#}");
    let verify = run(&["--root", r, "verify", "--json"]);
    assert_eq!(
        verify.code, 0,
        "waiting vectors are not a problem: {verify:?}"
    );
    assert_eq!(verify.json()["vectors_pending"].as_i64(), Some(total));

    // The embedding stage, killed once it has written some vectors.
    let mut fill = real(&["--root", r, "embed"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while waiting(&root) == total {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no vector written"
        );
        assert!(fill.try_wait().unwrap().is_none(), "embed ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    fill.kill().unwrap();
    fill.wait().unwrap();
    let left = waiting(&root);
    assert!(
        left > 0 && left < total,
        "killed part-way: {left} of {total} left"
    );
    assert_eq!(
        with_vectors(&root) + left,
        total,
        "each chunk has a vector or waits"
    );

    let again = run(&["--root", r, "embed", "--json"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.json()["vectors_made"].as_i64(), Some(left));
    assert_eq!((waiting(&root), with_vectors(&root)), (0, total));
    let verify = run(&["--root", r, "verify", "--json"]);
    assert_eq!(verify.code, 0, "{verify:?}");
    assert!(verify.json().get("vectors_pending").is_none());

    // A plain import waits for its vectors.
    std::fs::copy(
        corpus("chatgpt/librechat-chatgpt-tree.json"),
        raw.join("tree.json"),
    )
    .unwrap();
    let more = run(&["--root", r, "import", "--json", raw.to_str().unwrap()]);
    assert_eq!(more.code, 0, "{more:?}");
    let m = more.json();
    assert!(m["chunks_written"].as_i64().unwrap() > 0, "{m:#}");
    assert_eq!(m["vectors_pending"].as_i64(), Some(0), "{m:#}");
    assert_eq!(waiting(&root), 0);
}
