//! Shared helpers: running the binary in an isolated environment and
//! building the test adapters (once per test run).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub fn corpus(rel: &str) -> PathBuf {
    repo_root().join("../shared/corpus").join(rel)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
}

/// A scratch environment: its own adapters dir and config; the compiled
/// cache is shared between tests (content-addressed, so that is safe).
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn adapters_dir(&self) -> PathBuf {
        self.path("adapters")
    }

    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_chatmill"));
        c.current_dir(self.dir.path())
            .env("CHATMILL_ADAPTERS_DIR", self.adapters_dir())
            .env("CHATMILL_CACHE_DIR", target_dir().join("e2e-cache"))
            .env("CHATMILL_CONFIG", self.path("config.toml"))
            // The fast lexical stand-in; tests of the real model remove this.
            .env("CHATMILL_EMBEDDING", "lexical")
            .env_remove("CHATMILL_LOG");
        // An empty config file, so the user's real one never leaks in.
        if !self.path("config.toml").exists() {
            self.write("config.toml", "");
        }
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        let out = self.cmd().args(args).output().unwrap();
        Run::from(out)
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Self {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Builds a cargo workspace of adapters for wasm32-wasip2 (release) into a
/// shared target dir and returns the directory with the `.wasm` files.
fn build_wasm(manifest: &Path) -> PathBuf {
    let target = target_dir().join("test-adapters");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--release",
        "--target",
        "wasm32-wasip2",
        "--workspace",
    ])
    .arg("--manifest-path")
    .arg(manifest)
    .arg("--target-dir")
    .arg(&target);
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd.output().expect("run cargo");
    assert!(
        out.status.success(),
        "building {} failed:\n{}",
        manifest.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("wasm32-wasip2/release")
}

/// The deliberately bad adapters of `tests/adapters/`.
pub fn bad_adapters() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| build_wasm(&repo_root().join("tests/adapters/Cargo.toml")))
}

/// The third-party example adapter of `examples/adapter-linechat/`.
pub fn linechat_adapter() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| build_wasm(&repo_root().join("examples/adapter-linechat/Cargo.toml")))
        .join("linechat_adapter.wasm")
}

pub fn linechat_fixture() -> PathBuf {
    repo_root().join("examples/adapter-linechat/fixtures/team.linechat")
}

/// The `chatmill parse` entry for the input whose path ends with `suffix`.
pub fn entry<'a>(parsed: &'a serde_json::Value, suffix: &str) -> &'a serde_json::Value {
    parsed
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["input"].as_str().unwrap().ends_with(suffix))
        .unwrap_or_else(|| panic!("no entry for {suffix} in {parsed:#}"))
}

/// A real ChatGPT export from the corpus, written to `in/conversations.json`
/// in `env`; its path.
pub fn chatgpt_export(env: &Env) -> String {
    let bytes = std::fs::read(corpus("chatgpt/librechat-chatgpt-export.json")).unwrap();
    env.write("in/conversations.json", bytes)
        .display()
        .to_string()
}

/// The kinds of the problems `verify --json` reported, in order.
pub fn problem_kinds(verify: &Run) -> Vec<String> {
    verify.json()["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap().to_string())
        .collect()
}
