//! A killed import converges: SIGKILL `chatmill import` at arbitrary points,
//! again and again, then let it finish — the chunk files and the manifest
//! are exactly those of an uninterrupted run, with no temp files, no
//! duplicates and no orphans.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::*;

/// Chunk files by name, with their bytes; and whatever else is in the root.
fn snapshot(root: &Path) -> (BTreeMap<String, Vec<u8>>, Vec<String>) {
    let mut chunks = BTreeMap::new();
    let mut other = Vec::new();
    for e in std::fs::read_dir(root).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            chunks.insert(name, std::fs::read(e.path()).unwrap());
        } else {
            other.push(name);
        }
    }
    other.sort();
    (chunks, other)
}

/// The manifest without the times it was written at.
fn manifest(root: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(root.join(".processing-manifest.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    for f in m["files"].as_object_mut().unwrap().values_mut() {
        let f = f.as_object_mut().unwrap();
        f.remove("processed_at");
        // When the run that read it started.
        f.remove("run");
    }
    m
}

/// `chatmill import RAW` on `root`, run to the end: its output and time.
pub(crate) fn timed_import(env: &Env, root: &Path, raw: &str) -> (Run, Duration) {
    let started = Instant::now();
    let run = env.run(&["--root", root.to_str().unwrap(), "import", raw, "--json"]);
    let took = started.elapsed();
    assert_eq!(run.code, 0, "{run:?}");
    (run, took)
}

/// Runs `chatmill import RAW` on `root` nine times, each SIGKILLed at a
/// point spread over `full` (an uninterrupted run's time), from "barely
/// started" to "nearly done" — deterministic, so a failure reproduces —
/// then once to the end.
fn kill_repeatedly_then_finish(env: &Env, root: &Path, raw: &str, full: Duration) {
    let root_s = root.to_str().unwrap();
    let mut kills = 0;
    for step in 1..=9u32 {
        let delay = full.mul_f64(f64::from(step) / 10.0);
        let mut child = env
            .cmd()
            .args(["--root", root_s, "import", raw, "--json"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay.max(Duration::from_millis(20)));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL on Unix
            kills += 1;
        }
        child.wait().unwrap();
    }
    assert!(
        kills >= 3,
        "the import was killed mid-run only {kills} times"
    );
    let last = env.run(&["--root", root_s, "import", raw, "--json"]);
    assert_eq!(last.code, 0, "{last:?}");
}

/// `killed` holds exactly what `reference` holds: the same chunk files,
/// byte for byte, no temp files or other leftovers, the same manifest; and
/// it verifies clean. Returns `verify`'s report.
pub(crate) fn assert_converged(env: &Env, reference: &Path, killed: &Path) -> serde_json::Value {
    let (want_chunks, want_other) = snapshot(reference);
    let (got_chunks, got_other) = snapshot(killed);
    assert_eq!(got_other, want_other, "no temp files or other leftovers");
    assert_eq!(
        got_chunks.keys().collect::<Vec<_>>(),
        want_chunks.keys().collect::<Vec<_>>(),
        "the same chunk files"
    );
    for (name, bytes) in &want_chunks {
        assert!(got_chunks[name] == *bytes, "{name} differs");
    }
    assert_eq!(manifest(killed), manifest(reference));
    let v = env.run(&["--root", killed.to_str().unwrap(), "verify", "--json"]);
    assert_eq!(v.code, 0, "{v:?}");
    let report = v.json();
    assert_eq!(report["chunk_files"], want_chunks.len());
    report
}

#[test]
fn an_import_killed_at_arbitrary_points_converges_to_the_uninterrupted_result() {
    let env = Env::new();
    let raw = env.path("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for (i, pairs) in [1500, 400, 2500, 900].into_iter().enumerate() {
        chatmill_synth::chatgpt_export(
            &raw.join(format!("conversations-{i:03}.json")),
            chatmill_synth::Limit::Pairs(pairs),
        )
        .unwrap();
    }
    std::fs::copy(
        corpus("chatgpt/librechat-chatgpt-tree.json"),
        raw.join("tree.json"),
    )
    .unwrap();
    // A batch's two files, read together.
    for side in ["input", "output"] {
        std::fs::copy(
            corpus(&format!("api-log/genai_navirag-openai-batch_{side}.jsonl")),
            raw.join(format!("navirag_{side}.jsonl")),
        )
        .unwrap();
    }
    let raw_s = raw.to_str().unwrap();

    let reference = env.path("reference");
    let (run, full) = timed_import(&env, &reference, raw_s);
    let written = run.json()["chunks_written"].as_u64().unwrap();
    assert!(written > 1000, "{run:?}");

    let killed = env.path("killed");
    kill_repeatedly_then_finish(&env, &killed, raw_s, full);
    assert_converged(&env, &reference, &killed);
}

/// Results that arrive after their requests replace the unanswered chunks
/// (out of the index, the files and the manifest, then written again with
/// their answers); an import killed anywhere in that converges to the
/// uninterrupted result too.
#[test]
fn late_batch_results_killed_midway_converge_to_the_uninterrupted_result() {
    let env = Env::new();
    // The corpus batch, its 65 requests and results repeated 20 times
    // under other ids: a replacement long enough to be killed inside.
    let lines = |side: &str| -> String {
        let text = std::fs::read_to_string(corpus(&format!(
            "api-log/genai_navirag-openai-batch_{side}.jsonl"
        )))
        .unwrap();
        let mut out = String::new();
        for k in 0..20 {
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
                let id = format!("{}-{k}", v["custom_id"].as_str().unwrap());
                v["custom_id"] = serde_json::Value::String(id);
                out.push_str(&serde_json::to_string(&v).unwrap());
                out.push('\n');
            }
        }
        out
    };
    let (requests, results) = (lines("input"), lines("output"));
    // Requests first, alone, in both roots: unanswered chunks. Then their
    // results, next to them.
    let raw = env.path("raw");
    std::fs::create_dir_all(&raw).unwrap();
    std::fs::write(raw.join("scenes_input.jsonl"), &requests).unwrap();
    let raw_s = raw.to_str().unwrap();
    let (reference, killed) = (env.path("reference"), env.path("killed"));
    let timing = env.path("timing");
    for root in [&reference, &killed, &timing] {
        let run = env.run(&["--root", root.to_str().unwrap(), "import", raw_s, "--json"]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    std::fs::write(raw.join("scenes_output.jsonl"), &results).unwrap();

    let (run, full) = timed_import(&env, &reference, raw_s);
    assert_eq!(run.json()["chunks_written"], 1300, "{run:?}");
    // The shorter of two uninterrupted runs: one slowed by the tests
    // running beside it would put most kills after the end of the runs
    // that follow.
    let full = full.min(timed_import(&env, &timing, raw_s).1);

    kill_repeatedly_then_finish(&env, &killed, raw_s, full);
    let report = assert_converged(&env, &reference, &killed);
    assert_eq!(report["index_chunks"], 1300, "{report:#}");
}
