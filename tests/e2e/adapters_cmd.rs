//! `chatmill adapters …` on the built-in adapters.

use crate::support::*;

#[test]
fn the_six_builtin_adapters_are_listed() {
    let env = Env::new();
    let run = env.run(&["adapters", "list", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let list = run.json();
    let mut ids: Vec<_> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "api-log",
            "chatgpt",
            "claude",
            "claude-code",
            "gemini",
            "markdown"
        ]
    );
    for a in list.as_array().unwrap() {
        assert_eq!(a["source"], "builtin");
        assert_eq!(a["api_version"], "0.1.0");
        assert_eq!(a["sha256"].as_str().unwrap().len(), 64);
    }
    let human = env.run(&["adapters", "list"]);
    assert!(human.stdout.starts_with("ID "), "{human:?}");
}

#[test]
fn removing_a_builtin_or_unknown_adapter_says_why() {
    let env = Env::new();
    let run = env.run(&["adapters", "remove", "chatgpt"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("hint: built-in adapters cannot be removed"),
        "{}",
        run.stderr
    );
    let run = env.run(&["adapters", "info", "nope"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("no adapter has the id `nope`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_forced_unknown_format_is_a_usage_error() {
    let env = Env::new();
    let f = env.write("x.json", "[]");
    let run = env.run(&["parse", "--format", "nope", f.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("available adapters:"), "{}", run.stderr);
}
