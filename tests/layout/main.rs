//! The house rules, checked over the source so that they cannot quietly
//! lapse:
//! - no import loops between the files of a host crate (cargo already
//!   refuses loops between crates);
//! - CLI subcommands share code through modules below them, never through
//!   each other;
//! - in `host/`, no non-test function over 80 lines and no non-test file
//!   over 700 lines.
//!
//! The source is read as text: comments, string literals and `#[cfg(test)]`
//! modules are blanked first, then every `crate::`, `super::`, `self::` and
//! child-module path is resolved to the module file it names.

mod graph;
mod source;

use std::path::{Path, PathBuf};

use graph::{Crate, loops};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Every crate of the workspace with a `src/` folder: the host's and the
/// first-party adapters'.
fn crate_dirs() -> Vec<PathBuf> {
    let root = repo_root();
    let mut out = Vec::new();
    for group in ["host", "adapters"] {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(group))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("src").is_dir())
            .collect();
        dirs.sort();
        out.extend(dirs);
    }
    out
}

/// The host's crates. The adapters are components of their own, built for
/// wasm; their files are not checked yet.
#[test]
fn no_host_crate_has_an_import_loop_between_its_files() {
    let mut found = Vec::new();
    let mut modules = 0;
    for dir in crate_dirs() {
        if !dir.starts_with(repo_root().join("host")) {
            continue;
        }
        let krate = Crate::read(&dir.join("src"));
        modules += krate.modules.len();
        for cycle in loops(&krate) {
            found.push(format!("{}: {}", dir.display(), cycle.join(" → ")));
        }
    }
    assert!(
        modules > 100,
        "only {modules} modules read: is the walk right?"
    );
    assert!(found.is_empty(), "import loops:\n{}", found.join("\n"));
}

#[test]
fn cli_subcommands_do_not_import_each_other() {
    let krate = Crate::read(&repo_root().join("host/cli/src"));
    let command = |m: &str| -> Option<String> {
        let rest = m.strip_prefix("commands::")?;
        Some(rest.split("::").next().unwrap().to_string())
    };
    let mut found = Vec::new();
    for (from, to) in krate.edges() {
        if let (Some(a), Some(b)) = (command(&from), command(&to))
            && a != b
        {
            found.push(format!("{from} → {to}"));
        }
    }
    assert!(
        krate.modules.contains_key("commands::import"),
        "the CLI's modules were not read"
    );
    assert!(
        found.is_empty(),
        "subcommands importing each other:\n{}",
        found.join("\n")
    );
}

/// Non-test source of `host/`: files under `src/` (benches and tests
/// excluded), with `#[cfg(test)]` modules blanked.
fn host_sources() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for dir in crate_dirs() {
        if !dir.starts_with(repo_root().join("host")) {
            continue;
        }
        for path in source::rust_files(&dir.join("src")) {
            if source::is_test_file(&path) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, source::without_tests(&text)));
        }
    }
    out
}

#[test]
fn no_host_file_is_over_700_lines_of_non_test_code() {
    let sources = host_sources();
    assert!(sources.len() > 100, "only {} files read", sources.len());
    let long: Vec<String> = sources
        .iter()
        .map(|(p, text)| (p, text.trim_end().lines().count()))
        .filter(|(_, n)| *n > 700)
        .map(|(p, n)| format!("{}: {n} lines", p.display()))
        .collect();
    assert!(
        long.is_empty(),
        "files over 700 lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn no_host_function_is_over_80_lines() {
    let mut long = Vec::new();
    let mut functions = 0;
    for (path, text) in host_sources() {
        for f in source::functions(&text) {
            functions += 1;
            if f.lines > 80 {
                long.push(format!(
                    "{}:{} {} ({} lines)",
                    path.display(),
                    f.line,
                    f.name,
                    f.lines
                ));
            }
        }
    }
    assert!(functions > 1000, "only {functions} functions found");
    assert!(
        long.is_empty(),
        "functions over 80 lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_reader_finds_what_it_must() {
    // A loop between two files, as the reader sees them.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\nmod c;\n").unwrap();
    std::fs::write(
        src.join("a.rs"),
        "use crate::b::Thing; // crate::c in a comment\npub struct A;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub struct Thing;\nfn f() -> super::a::A { let _ = \"crate::c\"; super::a::A }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("c.rs"),
        "#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
    )
    .unwrap();
    let krate = Crate::read(src);
    let mut edges = krate.edges();
    edges.sort();
    assert_eq!(
        edges,
        [("a".to_string(), "b".to_string()), ("b".into(), "a".into())]
    );
    assert_eq!(
        loops(&krate),
        [vec!["a".to_string(), "b".into(), "a".into()]]
    );
    // Function lengths count from the signature to the closing brace.
    let text = "fn short() {}\n\nfn long() {\n    let s = \"}\";\n    // }\n    x();\n}\n";
    let fs = source::functions(&source::without_tests(text));
    let found: Vec<(&str, usize)> = fs.iter().map(|f| (f.name.as_str(), f.lines)).collect();
    assert_eq!(found, [("short", 1), ("long", 5)]);
}
