//! `chatmill adapters new NAME --lang rust|python|js [DIR]`: a project for a
//! new adapter that builds as is, outside chatmill's repository. The
//! templates are compiled into the binary (`host/cli/templates/`); a Rust
//! project gets a vendored copy of the SDK (and a `Cargo.lock` of crates
//! chatmill itself is built from), so it builds offline.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::Lang;
use crate::command_error::CliError;
use crate::out::outln;

/// The adapter API the templates and the vendored SDK are written for.
const API: &str = "0.1.0";
/// The vendored SDK's crate version.
const SDK_VERSION: &str = "0.1.0";

/// A file of a template: its path in the project and its text, with
/// `{{name}}`, `{{crate}}`, `{{wasm}}`, `{{api}}` and `{{sdk_version}}` to
/// fill in.
type File = (&'static str, &'static str);

macro_rules! template {
    ($path:literal, $file:literal) => {
        ($path, include_str!(concat!("../../../templates/", $file)))
    };
}

macro_rules! sdk {
    ($file:literal) => {
        (
            concat!("vendor/chatmill-adapter-sdk/", $file),
            include_str!(concat!("../../../../../adapters/sdk/", $file)),
        )
    };
}

const WIT: File = (
    "wit/adapter.wit",
    include_str!("../../../../../wit/adapter.wit"),
);

const COMMON: &[File] = &[
    template!("fixtures/sample.chatlog", "common/sample.chatlog"),
    template!(".gitignore", "common/gitignore"),
];

const RUST: &[File] = &[
    template!("Cargo.toml", "rust/Cargo.toml"),
    template!("Cargo.lock", "rust/Cargo.lock"),
    template!(".cargo/config.toml", "rust/.cargo/config.toml"),
    template!("src/lib.rs", "rust/src/lib.rs"),
    template!("README.md", "rust/README.md"),
];

/// The SDK, file by file (a test checks that none is missing).
const SDK: &[File] = &[
    sdk!("Cargo.toml"),
    sdk!("README.md"),
    sdk!("wit/adapter.wit"),
    sdk!("src/lib.rs"),
    sdk!("src/guest.rs"),
    sdk!("src/json.rs"),
    sdk!("src/lenient.rs"),
    sdk!("src/lines.rs"),
    sdk!("src/model.rs"),
    sdk!("src/scan.rs"),
    sdk!("src/testkit.rs"),
    sdk!("src/text.rs"),
];

const PYTHON: &[File] = &[
    template!("app.py", "python/app.py"),
    template!("parser.py", "python/parser.py"),
    template!("chatlog.py", "python/chatlog.py"),
    template!("test_chatlog.py", "python/test_chatlog.py"),
    template!("README.md", "python/README.md"),
    WIT,
];

const JS: &[File] = &[
    template!("package.json", "js/package.json"),
    template!("build.mjs", "js/build.mjs"),
    template!("src/adapter.js", "js/src/adapter.js"),
    template!("src/chatlog.js", "js/src/chatlog.js"),
    template!("src/chatlog.test.js", "js/src/chatlog.test.js"),
    template!("README.md", "js/README.md"),
    WIT,
];

/// The files of a `lang` project for the adapter `name`, filled in.
fn project(name: &str, lang: Lang) -> Vec<(&'static str, String)> {
    let (wasm, files): (String, Vec<File>) = match lang {
        Lang::Rust => (
            format!("{}_adapter.wasm", name.replace('-', "_")),
            [RUST, SDK].concat(),
        ),
        Lang::Python => (format!("{name}.wasm"), PYTHON.to_vec()),
        Lang::Js => (format!("{name}.wasm"), JS.to_vec()),
    };
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{crate}}", &format!("{name}-adapter"))
            .replace("{{wasm}}", &wasm)
            .replace("{{api}}", API)
            .replace("{{sdk_version}}", SDK_VERSION)
    };
    COMMON
        .iter()
        .chain(&files)
        .map(|(path, text)| {
            // The vendored SDK is copied as it is.
            let text = if path.starts_with("vendor/") {
                (*text).to_string()
            } else {
                fill(text)
            };
            (*path, text)
        })
        .collect()
}

/// Why `name` cannot be an adapter id here, if it cannot.
fn check_name(name: &str) -> Option<&'static str> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !ok {
        return Some(
            "an adapter name is 1-32 lowercase ASCII letters, digits and `-`, starting with a letter \
             (it is the adapter id and the platform of its conversations)",
        );
    }
    let builtin = chatmill_builtin::ADAPTERS.iter().any(|(id, _)| *id == name);
    builtin.then_some(
        "that is a built-in adapter's id: an adapter carrying it would replace the built-in one; \
         choose a name of your own",
    )
}

pub fn run(name: &str, lang: Lang, dir: Option<PathBuf>) -> Result<ExitCode, CliError> {
    if let Some(why) = check_name(name) {
        return Err(
            CliError::usage(anyhow::anyhow!("`{name}` cannot name a new adapter")).hint(why),
        );
    }
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    let occupied = fs_err::read_dir(&dir).is_ok_and(|mut d| d.next().is_some());
    if occupied || dir.is_file() {
        return Err(CliError::usage(anyhow::anyhow!(
            "`{}` already exists and is not empty",
            dir.display()
        ))
        .hint("name a new or empty folder as the last argument"));
    }
    for (path, text) in project(name, lang) {
        write(&dir.join(path), &text)?;
    }
    let readme = dir.join("README.md");
    outln!(
        "created the {} adapter `{name}` in {}",
        lang.word(),
        dir.display()
    );
    outln!(
        "next: `cd {}` and run the shell block at the top of its README.md ({})",
        dir.display(),
        readme.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent)?;
    }
    fs_err::write(path, text)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_adapter_ids_of_our_own() {
        assert_eq!(check_name("mychat"), None);
        assert_eq!(check_name("my-chat2"), None);
        for bad in [
            "",
            "MyChat",
            "-x",
            "x-",
            "2chat",
            "my_chat",
            &"x".repeat(33),
        ] {
            assert!(check_name(bad).is_some(), "{bad:?}");
        }
        assert!(check_name("chatgpt").unwrap().contains("built-in"));
    }

    #[test]
    fn every_sdk_file_is_vendored() {
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../adapters/sdk");
        let mut on_disk: Vec<String> = fs_err::read_dir(sdk.join("src"))
            .unwrap()
            .flatten()
            .map(|e| format!("src/{}", e.file_name().to_string_lossy()))
            .collect();
        on_disk.extend(["Cargo.toml", "README.md", "wit/adapter.wit"].map(String::from));
        on_disk.sort();
        let mut vendored: Vec<String> = SDK
            .iter()
            .map(|(p, _)| {
                p.trim_start_matches("vendor/chatmill-adapter-sdk/")
                    .to_string()
            })
            .collect();
        vendored.sort();
        assert_eq!(vendored, on_disk);
    }

    #[test]
    fn the_rust_example_vendors_this_sdk() {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/adapter-linechat");
        for (path, text) in SDK {
            let copy = fs_err::read_to_string(example.join(path)).unwrap_or_default();
            assert!(
                copy == *text,
                "examples/adapter-linechat/{path} differs from adapters/sdk: run `bash scripts/sync-sdk-copies.sh`"
            );
        }
    }

    #[test]
    fn the_python_and_javascript_examples_carry_this_wit() {
        for example in ["adapter-python", "adapter-js"] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../examples")
                .join(example)
                .join(WIT.0);
            let copy = fs_err::read_to_string(&path).unwrap_or_default();
            assert!(
                copy == WIT.1,
                "{} differs from wit/adapter.wit: run `bash scripts/sync-sdk-copies.sh`",
                path.display()
            );
        }
    }

    #[test]
    fn the_rust_template_locks_only_crates_chatmill_is_built_from() {
        // So that a new project builds offline from cargo's cache.
        let packages = |lock: &str| -> Vec<(String, String)> {
            let mut out = Vec::new();
            let mut name = None;
            for line in lock.lines() {
                if let Some(n) = line.strip_prefix("name = ") {
                    name = Some(n.trim_matches('"').to_string());
                } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
                    out.push((n, v.trim_matches('"').to_string()));
                }
            }
            out
        };
        let workspace =
            fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock"))
                .unwrap();
        let ours = packages(&workspace);
        let template = RUST.iter().find(|(p, _)| *p == "Cargo.lock").unwrap().1;
        let locked = packages(template);
        assert!(locked.len() > 10, "{locked:?}");
        for p in locked
            .iter()
            .filter(|(n, _)| n != "{{crate}}" && n != "chatmill-adapter-sdk")
        {
            assert!(
                ours.contains(p),
                "{p:?} is not in chatmill's Cargo.lock: in a project from `chatmill adapters new x --lang \
                 rust`, `cargo update --offline -p NAME --precise VERSION` to chatmill's versions, then \
                 copy its Cargo.lock to host/cli/templates/rust/ with the name `x-adapter` as `{{{{crate}}}}`"
            );
        }
    }

    #[test]
    fn templates_are_filled_in_everywhere() {
        for lang in [Lang::Rust, Lang::Python, Lang::Js] {
            let files = project("mychat", lang);
            for (path, text) in &files {
                if !path.starts_with("vendor/") {
                    assert!(
                        !text.contains("{{"),
                        "{lang:?} {path}: a placeholder is left"
                    );
                }
            }
            let readme = &files.iter().find(|(p, _)| *p == "README.md").unwrap().1;
            let block = readme.split("```sh\n").nth(1).unwrap();
            let block = block.split("```").next().unwrap();
            let lines: Vec<&str> = block.lines().collect();
            assert!(lines[1].starts_with("chatmill adapters test "), "{lang:?}");
            assert!(lines[2].starts_with("chatmill adapters add "), "{lang:?}");
        }
    }
}
