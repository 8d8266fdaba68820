//! `chatmill report --judge` against a real local OpenAI-compatible server
//! (llama.cpp's `llama-server` with SmolLM2-135M, installed by
//! `scripts/setup-llm.sh`). A 135M model is no judge: this proves the
//! wire — every sampled chunk is sent, each answer is read into scores or
//! counted as unparsable, and the measured scores and exit code stay as
//! they were.

#[path = "../../host/chunking/tests/support/llama.rs"]
mod llama;

use crate::support::{Env, chatgpt_export};

#[test]
fn the_judge_scores_a_sample_beside_the_measured_scores() {
    let env = Env::new();
    let root = env.path("root");
    let root = root.to_str().unwrap();
    let input = chatgpt_export(&env);
    let import = env.run(&["--root", root, "import", &input]);
    assert!(import.stdout.contains("chunks written:"), "{import:?}");

    // No model configured: a usage error naming the config keys.
    let none = env.run(&["report", root, "--judge"]);
    assert_eq!(none.code, 2, "{none:?}");
    assert!(
        none.stderr.contains("[header]") && none.stderr.contains("`url`"),
        "{none:?}"
    );

    let measured = env.run(&["report", root, "--json"]);
    let measured_json = measured.json();

    let Some((_server, url)) = llama::start(&[]) else {
        return;
    };
    env.write(
        "config.toml",
        format!(
            "[header]\nurl = \"{url}\"\nmodel = \"smollm2\"\ntimeout_ms = 120000\nmax_concurrency = 1\nretries = 0\n"
        ),
    );
    let run = env.run(&["report", root, "--json", "--judge", "--judge-sample", "3"]);
    assert_eq!(
        run.code, measured.code,
        "the judge never sets the exit code: {run:?}"
    );
    let json = run.json();
    assert_eq!(
        json["criteria"], measured_json["criteria"],
        "the measured scores are unchanged"
    );
    let judge = &json["judge"];
    assert_eq!(judge["model"], "smollm2", "{judge:#}");
    assert_eq!(judge["sample"], 3, "{judge:#}");
    let requests = judge["requests"].as_u64().unwrap();
    assert!(
        (3..=6).contains(&requests),
        "one request a chunk (a 400 on json_object adds one): {judge:#}"
    );
    assert_eq!(
        judge["failed"], 0,
        "the server answered every request: {judge:#}"
    );
    let verdicts = judge["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 3);
    let mut chunks: Vec<&str> = verdicts
        .iter()
        .map(|v| v["chunk"].as_str().unwrap())
        .collect();
    chunks.dedup();
    assert_eq!(chunks.len(), 3, "three different chunks: {judge:#}");
    let mut scored = 0;
    for v in verdicts {
        match v["scores"].as_object() {
            Some(scores) => {
                scored += 1;
                assert!(v["problem"].is_null(), "{v}");
                for s in scores.values().filter(|s| !s.is_null()) {
                    assert!((1..=5).contains(&s.as_u64().unwrap()), "{v}");
                }
            }
            None => assert!(
                v["problem"]
                    .as_str()
                    .unwrap()
                    .starts_with("unparsable answer"),
                "{v}"
            ),
        }
    }
    assert_eq!(judge["unparsable"], 3 - scored, "{judge:#}");
    let criteria = judge["criteria"].as_array().unwrap();
    let numbers: Vec<u64> = criteria
        .iter()
        .map(|c| c["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 4]);
    for c in criteria {
        let n = c["n"].as_u64().unwrap();
        assert!(n <= scored, "{c}");
        let i = c["number"].as_u64().unwrap() as usize - 1;
        assert_eq!(c["measured"], measured_json["criteria"][i]["score"], "{c}");
        match c["judge_mean"].as_f64() {
            Some(m) => assert!(n > 0 && (1.0..=5.0).contains(&m), "{c}"),
            None => assert_eq!(n, 0, "{c}"),
        }
    }

    // The terminal summary shows the judge beside the measured scores.
    let text = env.run(&["report", root, "--judge", "--judge-sample", "1"]);
    assert_eq!(text.code, measured.code, "{text:?}");
    assert!(
        text.stdout.contains("judge (smollm2, 1 chunks sampled"),
        "{text:?}"
    );
    assert!(text.stdout.contains("measured "), "{text:?}");
}
