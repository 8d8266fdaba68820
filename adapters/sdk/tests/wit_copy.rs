//! The SDK carries its own copy of the adapter contract (`wit/`), so that it
//! builds vendored or published; this keeps the copy identical to the
//! repository's `wit/`, the one the host is built from.

use std::path::{Path, PathBuf};

fn wit_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wit"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_sdk_wit_is_the_repository_wit() {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("wit");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
    let ours = wit_files(&sdk);
    let theirs = wit_files(&repo);
    let names = |v: &[PathBuf]| -> Vec<String> {
        v.iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    assert!(!theirs.is_empty(), "no .wit files in {}", repo.display());
    assert_eq!(names(&ours), names(&theirs), "the same .wit files");
    for (a, b) in ours.iter().zip(&theirs) {
        assert!(
            std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
            "{} differs from {}: run `bash scripts/sync-sdk-copies.sh`",
            a.display(),
            b.display()
        );
    }
}

#[test]
fn the_api_version_is_the_wit_package_version() {
    let wit =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("wit/adapter.wit"))
            .unwrap();
    let package = format!(
        "package chatmill:adapter@{};",
        chatmill_adapter_sdk::API_VERSION
    );
    assert!(wit.contains(&package), "wit/adapter.wit lacks `{package}`");
}
