//! The author kit as an outside author meets it: `chatmill adapters new` in
//! an empty folder outside this repository, the build its README gives,
//! `adapters test`, `adapters add` and an import that writes chunks; the
//! three examples built and passing `adapters test` against their expected
//! output; and `adapters test` on every first-party adapter with the
//! built-in samples as fixtures.
//!
//! Python and JavaScript need the pinned toolchains `scripts/setup-authoring.sh`
//! installs (`scripts/test.sh` runs it). Builds reuse caches: Rust projects
//! share one cargo target folder, and the compiled-adapter cache is shared.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
}

/// `${XDG_CACHE_HOME:-~/.cache}/chatmill/<name>`, as the setup script does.
fn tool_cache(name: &str) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    let dir = base.join("chatmill").join(name);
    assert!(
        dir.join(".installed").exists(),
        "{} is missing: run `bash scripts/setup-authoring.sh`",
        dir.display()
    );
    dir
}

fn componentize_py_bin() -> PathBuf {
    tool_cache("componentize-py-0.25.1").join("bin")
}

fn componentize_js_modules() -> PathBuf {
    tool_cache("componentize-js-0.23.0").join("node_modules")
}

/// The lines of the first ```sh block of a README.
fn first_shell_block(readme: &str) -> Vec<String> {
    let block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap_or_else(|| panic!("no shell block in:\n{readme}"));
    block.lines().map(str::to_string).collect()
}

/// Runs `line` with `sh` in `dir`, with `chatmill` (this build) first on
/// PATH, then `extra_path`, in `env`'s isolated adapters dir and config;
/// offline, as a stranger's machine may be.
fn shell(env: &Env, dir: &Path, line: &str, extra_path: Option<&Path>) -> Run {
    let chatmill_dir = Path::new(env!("CARGO_BIN_EXE_chatmill")).parent().unwrap();
    let mut paths = vec![chatmill_dir.to_path_buf()];
    paths.extend(extra_path.map(Path::to_path_buf));
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let mut cmd = Command::new("sh");
    cmd.args(["-c", line])
        .current_dir(dir)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("CARGO_NET_OFFLINE", "true")
        .env("CHATMILL_ADAPTERS_DIR", env.adapters_dir())
        .env("CHATMILL_CACHE_DIR", target_dir().join("e2e-cache"))
        .env("CHATMILL_CONFIG", env.path("config.toml"))
        .env("CHATMILL_EMBEDDING", "lexical")
        .env_remove("CHATMILL_LOG");
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_MANIFEST_DIR",
    ] {
        cmd.env_remove(var);
    }
    if !env.path("config.toml").exists() {
        env.write("config.toml", "");
    }
    Run::from(cmd.output().unwrap())
}

/// A Rust project's `target/` is the shared test target folder, so the
/// SDK's dependencies compile once per test run, not once per project.
fn share_rust_target(project: &Path) {
    let shared = target_dir().join("author-kit-rust");
    std::fs::create_dir_all(&shared).unwrap();
    std::os::unix::fs::symlink(&shared, project.join("target")).unwrap();
}

/// `adapters new NAME --lang LANG` in an empty folder, then every line of
/// the README's first shell block (build, `adapters test`, `adapters add`),
/// then an import of the sample fixture, which must write chunks.
fn new_project_builds_tests_adds_and_imports(lang: &str, extra_path: Option<&Path>) {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    assert!(!outside.path().starts_with(repo_root()));
    let project = outside.path().join("mychat");
    let new = env.run(&[
        "adapters",
        "new",
        "mychat",
        "--lang",
        lang,
        project.to_str().unwrap(),
    ]);
    assert_eq!(new.code, 0, "{new:?}");
    if lang == "rust" {
        share_rust_target(&project);
    }
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    let block = first_shell_block(&readme);
    assert_eq!(block.len(), 3, "{block:?}");
    assert!(block[1].starts_with("chatmill adapters test "), "{block:?}");
    assert!(block[2].starts_with("chatmill adapters add "), "{block:?}");
    for line in &block {
        let run = shell(&env, &project, line, extra_path);
        assert_eq!(run.code, 0, "`{line}`:\n{run:?}");
        if line.starts_with("chatmill adapters test") {
            assert!(run.stdout.contains("checks passed"), "{run:?}");
        }
    }
    assert!(env.adapters_dir().join("mychat.wasm").exists());
    // The project's native tests (no wasm): the SDK's test kit, or the
    // format module's tests.
    let native = match lang {
        "rust" => "cargo test --quiet",
        _ => "python3 -m unittest --quiet",
    };
    let run = shell(&env, &project, native, extra_path);
    assert_eq!(run.code, 0, "`{native}`:\n{run:?}");

    let input = env.write(
        "exports/week-18.chatlog",
        std::fs::read(project.join("fixtures/sample.chatlog")).unwrap(),
    );
    let root = env.path("root");
    let import = env.run(&[
        "import",
        "--root",
        root.to_str().unwrap(),
        "--json",
        input.to_str().unwrap(),
    ]);
    assert_eq!(import.code, 0, "{import:?}");
    let chunks: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("mychat"))
        .collect();
    assert!(
        !chunks.is_empty(),
        "no mychat chunk in {}: {import:?}",
        root.display()
    );
    let text = std::fs::read_to_string(chunks[0].path()).unwrap();
    assert!(text.contains("rotate a log file"), "{text}");
}

#[test]
fn a_new_rust_adapter_builds_offline_tests_adds_and_imports() {
    new_project_builds_tests_adds_and_imports("rust", None);
}

#[test]
fn a_new_python_adapter_builds_tests_adds_and_imports() {
    new_project_builds_tests_adds_and_imports("python", Some(&componentize_py_bin()));
}

/// Copies `examples/<name>` to a folder outside the repository.
fn example_outside(name: &str) -> (tempfile::TempDir, PathBuf) {
    let outside = tempfile::tempdir().unwrap();
    let to = outside.path().join(name);
    let status = Command::new("cp")
        .arg("-r")
        .arg(repo_root().join("examples").join(name))
        .arg(&to)
        .status()
        .unwrap();
    assert!(status.success());
    for generated in ["target", "node_modules", "expected.json.tmp"] {
        let _ = std::fs::remove_dir_all(to.join(generated));
    }
    (outside, to)
}

/// `adapters test` on an example's build, against its committed expected
/// output; the report as JSON.
fn example_passes(env: &Env, dir: &Path, wasm: &str) -> serde_json::Value {
    let run = env
        .cmd()
        .current_dir(dir)
        .args([
            "adapters",
            "test",
            wasm,
            "fixtures/",
            "--expect",
            "expected.json",
            "--json",
        ])
        .output()
        .unwrap();
    let run = Run::from(run);
    assert_eq!(run.code, 0, "{}: {run:?}", dir.display());
    let report = run.json();
    let failed: Vec<_> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] != true)
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    let names: Vec<_> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"expected"), "{names:?}");
    report
}

#[test]
fn the_rust_example_builds_copied_outside_the_repository() {
    let env = Env::new();
    let (_keep, dir) = example_outside("adapter-linechat");
    share_rust_target(&dir);
    let build = shell(
        &env,
        &dir,
        "cargo build --target wasm32-wasip2 --release",
        None,
    );
    assert_eq!(build.code, 0, "{build:?}");
    let report = example_passes(
        &env,
        &dir,
        "target/wasm32-wasip2/release/linechat_adapter.wasm",
    );
    assert_eq!(report["adapter"]["id"], "linechat");
}

#[test]
fn the_python_example_passes_adapters_test() {
    let env = Env::new();
    let (_keep, dir) = example_outside("adapter-python");
    let build = shell(
        &env,
        &dir,
        "componentize-py -d wit -w adapter componentize app -o sillytavern.wasm",
        Some(&componentize_py_bin()),
    );
    assert_eq!(build.code, 0, "{build:?}");
    let unit = shell(&env, &dir, "python3 -m unittest --quiet", None);
    assert_eq!(unit.code, 0, "{unit:?}");
    let report = example_passes(&env, &dir, "sillytavern.wasm");
    assert_eq!(report["adapter"]["id"], "sillytavern");
    assert_eq!(report["pairs"], 3);
}

#[test]
fn the_javascript_example_passes_adapters_test() {
    let env = Env::new();
    let (_keep, dir) = example_outside("adapter-js");
    // What `npm install` would put there, from the setup script's cache.
    std::os::unix::fs::symlink(componentize_js_modules(), dir.join("node_modules")).unwrap();
    let build = shell(&env, &dir, "npm run build", None);
    assert_eq!(build.code, 0, "{build:?}");
    let unit = shell(&env, &dir, "node --test", None);
    assert_eq!(unit.code, 0, "{unit:?}");
    let report = example_passes(&env, &dir, "telegram.wasm");
    assert_eq!(report["adapter"]["id"], "telegram");
    assert_eq!(report["pairs"], 3);
}

/// First-party adapters that fail a check today: (adapter, check, a part of
/// its detail). Each must fail exactly so; fixing one fails this test until
/// its line goes.
const KNOWN_FAILURES: &[(&str, &str, &str)] = &[];

#[test]
fn every_first_party_adapter_passes_adapters_test_on_its_samples() {
    let env = Env::new();
    for (name, wasm) in chatmill_builtin::ADAPTERS {
        let path = env.write(&format!("{name}/{name}.wasm"), wasm);
        let mut fixtures = 0;
        for s in chatmill_builtin::SAMPLES
            .iter()
            .filter(|s| s.adapter == *name)
        {
            env.write(&format!("{name}/fixtures/{}", s.file_name), s.bytes);
            fixtures += 1;
        }
        assert!(fixtures > 0, "{name}: no sample");
        let run = env.run(&[
            "adapters",
            "test",
            path.to_str().unwrap(),
            env.path(&format!("{name}/fixtures")).to_str().unwrap(),
            "--json",
        ]);
        let report = run.json();
        assert!(
            report["conversations"].as_u64().unwrap() >= fixtures,
            "{name}: {report:#}"
        );
        let failed: Vec<(String, String)> = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["passed"] != true)
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["details"].to_string(),
                )
            })
            .collect();
        let known: Vec<_> = KNOWN_FAILURES.iter().filter(|k| k.0 == *name).collect();
        assert_eq!(
            failed.len(),
            known.len(),
            "{name}: failed {failed:#?}, known {known:?}"
        );
        for (check, detail) in known.iter().map(|k| (k.1, k.2)) {
            assert!(
                failed.iter().any(|(c, d)| c == check && d.contains(detail)),
                "{name}: expected `{check}` to fail with {detail:?}: {failed:#?}"
            );
        }
        assert_eq!(run.code, i32::from(!known.is_empty()), "{name}: {run:?}");
    }
}

#[test]
fn a_failing_check_exits_1_and_says_which() {
    let env = Env::new();
    // `greedy` claims every file it is shown.
    let greedy = bad_adapters().join("greedy.wasm");
    let fixture = env.write("fixtures/any.txt", "some text\n");
    let run = env.run(&[
        "adapters",
        "test",
        greedy.to_str().unwrap(),
        fixture.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    let report = run.json();
    let sniff = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "sniff-others")
        .unwrap();
    assert_eq!(sniff["passed"], false, "{report:#}");
    assert!(
        sniff["details"][0].as_str().unwrap().contains("scores"),
        "{sniff:#}"
    );
}

#[test]
fn a_crashing_adapter_fails_the_parse_checks_without_sandbox_notes() {
    let env = Env::new();
    // `bad-panic` declares no format and panics in every `next`.
    let panics = bad_adapters().join("bad_panic.wasm");
    let fixture = env.write("fixtures/x.panic", "anything\n");
    let run = env.run(&[
        "adapters",
        "test",
        panics.to_str().unwrap(),
        fixture.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    for failing in ["FAIL describe", "FAIL parses", "FAIL damaged-input"] {
        assert!(run.stdout.contains(failing), "{failing}: {}", run.stdout);
    }
    assert!(
        run.stdout
            .contains("panicked while reading `x.panic`: index out of bounds"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("ok   sniff-own"), "{}", run.stdout);
    // Rust's panic hook suggests an environment variable the sandbox has not.
    let parse = env.run(&[
        "--adapter",
        panics.to_str().unwrap(),
        "parse",
        fixture.to_str().unwrap(),
    ]);
    assert_eq!(parse.code, 1, "{parse:?}");
    assert!(
        parse.stderr.contains("index out of bounds"),
        "{}",
        parse.stderr
    );
    assert!(!parse.stderr.contains("RUST_BACKTRACE"), "{}", parse.stderr);
}

#[test]
fn bless_writes_what_expect_compares() {
    let env = Env::new();
    let wasm = linechat_adapter();
    let fixture = env.write(
        "fixtures/team.linechat",
        std::fs::read(linechat_fixture()).unwrap(),
    );
    let expected = env.path("expected.json");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "adapters".to_string(),
            "test".into(),
            wasm.display().to_string(),
            fixture.display().to_string(),
            "--expect".into(),
            expected.display().to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |a: Vec<String>| Run::from(env.cmd().args(a).output().unwrap());
    let bless = run(args(&["--bless"]));
    assert_eq!(bless.code, 0, "{bless:?}");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&expected).unwrap()).unwrap();
    assert_eq!(written["team.linechat"][0]["id"], "team");
    let same = run(args(&[]));
    assert_eq!(same.code, 0, "{same:?}");

    let changed = std::fs::read_to_string(&expected)
        .unwrap()
        .replace("Which one is safer?", "Which one is faster?");
    std::fs::write(&expected, changed).unwrap();
    let differs = run(args(&[]));
    assert_eq!(differs.code, 1, "{differs:?}");
    assert!(
        differs.stdout.contains("FAIL expected"),
        "{}",
        differs.stdout
    );
    assert!(
        differs.stdout.contains("/team.linechat/0/pairs/1/user/0"),
        "{}",
        differs.stdout
    );
}

#[test]
fn new_refuses_a_builtin_name_and_an_occupied_folder() {
    let env = Env::new();
    let run = env.run(&["adapters", "new", "chatgpt", "--lang", "rust"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("built-in adapter's id"),
        "{}",
        run.stderr
    );
    env.write("taken/file.txt", "x");
    let run = env.run(&[
        "adapters",
        "new",
        "mine",
        "--lang",
        "js",
        env.path("taken").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("not empty"), "{}", run.stderr);
}
