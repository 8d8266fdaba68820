//! The shared corpus (`shared/corpus`, beside the repository root): every
//! file that is UTF-8 text, for the false-positive test and the benchmark.

use std::path::{Path, PathBuf};

/// `shared/corpus`: `<repo>/../shared/corpus` (a clone elsewhere with
/// `shared/` beside it) and the layout of the main work tree
/// (`<repo>/../../shared/corpus` from a worktree); panics, naming the
/// places looked at, if neither exists.
pub fn corpus_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = manifest.join("../..");
    let tried = [
        repo.join("../shared/corpus"),
        manifest.join("../../../shared/corpus"),
        repo.join("../../shared/corpus"),
    ];
    tried
        .iter()
        .find(|p| p.is_dir())
        .cloned()
        .unwrap_or_else(|| panic!("the shared corpus is missing: looked at {tried:?}"))
}

/// Every UTF-8 text file under `dir` (recursively), sorted by path, with
/// its path relative to `dir`. Files that are not UTF-8 (a SQLite
/// database) are skipped.
pub fn text_files(dir: &Path) -> Vec<(String, String)> {
    let mut paths = Vec::new();
    walk(dir, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let text = String::from_utf8(bytes).ok()?;
            let rel = p
                .strip_prefix(dir)
                .expect("under dir")
                .display()
                .to_string();
            Some((rel, text))
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}
