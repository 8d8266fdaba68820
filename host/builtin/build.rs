//! Builds the first-party adapters for `wasm32-wasip2` with a nested cargo
//! and embeds the components (as `.wasm`; the runtime compiles and caches
//! them on first use).

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";
const PROFILE: &str = "adapter";

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.join("../..").canonicalize().unwrap();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out; share one wasm
    // build between every host profile.
    let target_dir = out_dir
        .ancestors()
        .nth(4)
        .map(|t| t.join("adapters-wasm"))
        .unwrap_or_else(|| out_dir.join("adapters-wasm"));

    for path in ["wit", "adapters", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }

    let adapters = first_party(&root.join("adapters"));
    ensure_target();

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--target", TARGET, "--profile", PROFILE])
        .arg("--target-dir")
        .arg(&target_dir)
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"));
    for (_, pkg) in &adapters {
        cmd.args(["-p", pkg]);
    }
    // The outer build's flags and wrappers (clippy's, coverage's) are for the
    // host, not for the guests.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo for the adapters: {e}"));
    assert!(
        status.success(),
        "building the first-party adapters for {TARGET} failed (see the output above)\n\
         hint: is the target installed? `rustup target add {TARGET}`"
    );

    let wasm_dir = target_dir.join(TARGET).join(PROFILE);
    let mut table = String::from("/// The first-party adapters: (crate name, component bytes).\n");
    table.push_str("pub const ADAPTERS: &[(&str, &[u8])] = &[\n");
    for (dir, pkg) in &adapters {
        let file = format!("{}.wasm", pkg.replace('-', "_"));
        let built = wasm_dir.join(&file);
        let embedded = out_dir.join(&file);
        std::fs::copy(&built, &embedded)
            .unwrap_or_else(|e| panic!("cannot copy {}: {e}", built.display()));
        table.push_str(&format!(
            "    ({dir:?}, include_bytes!({:?})),\n",
            embedded.display().to_string()
        ));
    }
    table.push_str("];\n");
    std::fs::write(out_dir.join("adapters.rs"), table).unwrap();
}

/// The first-party adapters: every crate directly under `adapters/` that
/// builds a component (`crate-type` has `cdylib`), as (directory, package
/// name), sorted by directory. The directory is the one list of them; the
/// workspace takes its members from it too (`adapters/*`).
fn first_party(adapters: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(adapters)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", adapters.display()));
    for entry in entries {
        let dir = entry.unwrap().path();
        let manifest = dir.join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let table: toml::Table = text
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        let component = table
            .get("lib")
            .and_then(|lib| lib.get("crate-type"))
            .and_then(|types| types.as_array())
            .is_some_and(|types| types.iter().any(|t| t.as_str() == Some("cdylib")));
        if !component {
            continue;
        }
        let name = table
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or_else(|| panic!("{}: no package name", manifest.display()));
        let dir_name = dir.file_name().unwrap().to_string_lossy().into_owned();
        found.push((dir_name, name.to_owned()));
    }
    found.sort();
    assert!(
        !found.is_empty(),
        "no adapter crates under {}",
        adapters.display()
    );
    found
}

/// Installs the wasm target when rustup is there and the target is not
/// (`RUSTUP_AUTO_INSTALL=0` means nothing else will).
fn ensure_target() {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| PathBuf::from(s.trim()));
    let installed = sysroot
        .as_deref()
        .is_some_and(|s| Path::new(s).join("lib/rustlib").join(TARGET).exists());
    if installed {
        return;
    }
    println!("cargo:warning=installing the {TARGET} target with rustup");
    let ok = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("cargo:warning=could not install {TARGET}; run `rustup target add {TARGET}`");
    }
}
