//! One exit-code rule for the whole CLI: 0 the work was done (skips
//! listed), 1 an input failed or the run could not finish, 2 usage.

use crate::support::*;

#[test]
fn an_import_whose_only_problem_is_a_skipped_file_exits_0_and_lists_it() {
    let env = Env::new();
    chatgpt_export(&env);
    env.write("in/notes.txt", "shopping list: eggs, milk\n");
    let root = env.path("root").display().to_string();
    let run = env.run(&["--root", &root, "import", "--json", "in"]);
    assert_eq!(run.code, 0, "{run:?}");
    let s = run.json();
    assert!(s["chunks_written"].as_u64().unwrap() > 0, "{s:#}");
    let skipped = s["files_skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{s:#}");
    assert!(skipped[0]["file"].as_str().unwrap().ends_with("notes.txt"));
    assert!(
        skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("no adapter recognizes")
    );
}

#[test]
fn an_import_with_a_failed_input_exits_1_and_the_rest_is_done() {
    let env = Env::new();
    chatgpt_export(&env);
    // Recognized as a ChatGPT export, then cut short.
    env.write(
        "in/broken/conversations.json",
        "[{\"title\": \"cut\", \"mapping\": {",
    );
    let root = env.path("root").display().to_string();
    let run = env.run(&["--root", &root, "import", "--json", "in"]);
    assert_eq!(run.code, 1, "{run:?}");
    let s = run.json();
    assert_eq!(s["errors"].as_array().unwrap().len(), 1, "{s:#}");
    assert!(s["chunks_written"].as_u64().unwrap() > 0, "{s:#}");
}

#[test]
fn usage_errors_exit_2_and_do_nothing() {
    let env = Env::new();
    let input = chatgpt_export(&env);
    let root = env.path("root");
    let r = root.display().to_string();
    let run = env.run(&["--root", &r, "import", "--adapter-id", "nope", &input]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("no adapter has the id `nope`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("\n\nhint: available adapters:"),
        "a blank line before the hint: {}",
        run.stderr
    );
    assert!(!root.exists(), "nothing was done");
    let run = env.run(&["--root", &r, "search", "x", "--format", "prose"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("context"),
        "clap lists the formats: {}",
        run.stderr
    );
    let run = env.run(&["--root", &r, "reindex", "--to", "elastic"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(!root.exists(), "nothing was done");
}

#[test]
fn a_corrupt_adapter_given_for_the_run_is_a_failure_not_usage() {
    let env = Env::new();
    // A component header, then nothing a compiler can read.
    let bad = env.write("corrupt.wasm", b"\0asm\x0d\0\x01\0\xff\xff\xff\xff");
    let input = chatgpt_export(&env);
    let run = env.run(&["--adapter", bad.to_str().unwrap(), "parse", &input]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("could not be compiled"),
        "{}",
        run.stderr
    );
}

/// Every command that prints stops quietly when its reader goes away
/// (`chatmill search … | head -1`): exit 0, no panic, no error line.
#[test]
fn a_reader_that_closes_early_ends_each_printing_command_quietly() {
    let env = Env::new();
    let input = chatgpt_export(&env);
    let root = env.path("root").display().to_string();
    let first = env.run(&["--root", &root, "import", &input]);
    assert_eq!(first.code, 0, "{first:?}");
    let commands: &[&[&str]] = &[
        &["search", "python"],
        &["search", "--json", "python"],
        &["parse", &input],
        &["report"],
        &["verify"],
        &["adapters", "list"],
        &["adapters", "info", "chatgpt"],
        &["import", &input],
        &["import", "--json", &input],
    ];
    for args in commands {
        let mut child = env
            .cmd()
            .args(["--root", &root])
            .args(*args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader is gone before the command writes its first byte.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}
