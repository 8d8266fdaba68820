//! Builds the first-party adapters for `wasm32-wasip2` with a nested cargo
//! and embeds the components (as `.wasm`; the runtime compiles and caches
//! them on first use).

use std::path::{Path, PathBuf};
use std::process::Command;

/// (crate directory under `adapters/`, package name).
const ADAPTERS: &[(&str, &str)] = &[
    ("chatgpt", "chatmill-adapter-chatgpt"),
    ("claude", "chatmill-adapter-claude"),
    ("gemini", "chatmill-adapter-gemini"),
    ("claude-code", "chatmill-adapter-claude-code"),
    ("api-log", "chatmill-adapter-api-log"),
    ("markdown", "chatmill-adapter-markdown"),
];
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

    ensure_target();

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--target", TARGET, "--profile", PROFILE])
        .arg("--target-dir")
        .arg(&target_dir)
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"));
    for (_, pkg) in ADAPTERS {
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
    for (dir, pkg) in ADAPTERS {
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
