//! Upgrades reach roots that exist: inputs an older chatmill read are
//! reported by `import`, and `import --reprocess` rewrites their chunks as a
//! fresh import of the same inputs would, removing what it replaced.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::{Env, chatgpt_export, corpus};

/// Every chunk file of a root (`*.md` directly in it): name → bytes.
fn chunk_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

fn manifest(root: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(root.join(".processing-manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn save_manifest(root: &Path, m: &serde_json::Value) {
    let text = serde_json::to_string_pretty(m).unwrap();
    std::fs::write(root.join(".processing-manifest.json"), text).unwrap();
}

/// Makes the root look as an older chatmill left it for the input whose key
/// ends with `suffix`: another adapter build, the first chunk format, one
/// chunk file in an older wording, and one chunk an older chunker wrote
/// that this one would not (its id listed by the conversation and the
/// input). Returns the stale chunk's file name.
fn age_input(root: &Path, suffix: &str) -> String {
    let mut m = manifest(root);
    let (key, rec) = m["files"]
        .as_object_mut()
        .unwrap()
        .iter_mut()
        .find(|(k, _)| k.ends_with(suffix))
        .unwrap();
    let key = key.clone();
    rec["adapter"]["sha256"] = "0".repeat(64).into();
    rec["adapter"]["chunk_format"] = 1.into();
    let first = rec["chunk_ids"][0].as_str().unwrap().to_string();
    let stale = format!("{first}-old");
    rec["chunk_ids"]
        .as_array_mut()
        .unwrap()
        .push(stale.clone().into());
    let conv = m["conversations"]
        .as_object_mut()
        .unwrap()
        .values_mut()
        .find(|c| {
            c["chunk_ids"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i == &first)
        })
        .unwrap();
    conv["chunk_ids"]
        .as_array_mut()
        .unwrap()
        .push(stale.clone().into());
    save_manifest(root, &m);
    let text = std::fs::read_to_string(root.join(format!("{first}.md"))).unwrap();
    let older = text.replacen(
        &format!("chunk_id: {first}"),
        &format!("chunk_id: {stale}"),
        1,
    );
    assert_ne!(older, text, "the chunk names its id");
    std::fs::write(root.join(format!("{stale}.md")), older).unwrap();
    std::fs::write(
        root.join(format!("{first}.md")),
        text.replace("## Exchange", "## Exchange\n\n(older wording)"),
    )
    .unwrap();
    assert!(!key.is_empty());
    format!("{stale}.md")
}

/// A ChatGPT export and a Gemini CLI session in `in/`; its path.
fn two_exports(env: &Env) -> String {
    chatgpt_export(env);
    let gemini = std::fs::read(corpus("gemini/agent-sessions-gemini-cli-large.json")).unwrap();
    env.write("in/session-gemini.json", gemini);
    env.path("in").display().to_string()
}

#[test]
fn outdated_inputs_are_reported_and_reprocessed_as_a_fresh_import_would_write_them() {
    let env = Env::new();
    let input = two_exports(&env);
    let input = input.as_str();
    let fresh = env.path("fresh");
    let run = env.run(&["--root", fresh.to_str().unwrap(), "import", input]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let root = env.path("root");
    let root_s = root.to_str().unwrap();
    assert_eq!(env.run(&["--root", root_s, "import", input]).code, 0);
    let stale = age_input(&root, "conversations.json");
    assert_ne!(chunk_files(&root), chunk_files(&fresh));

    // A plain import says so (and takes the stale chunk into the index, as
    // it takes any chunk the manifest has and the index lacks).
    let plain = env.run(&["--root", root_s, "import", "--json", input]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert_eq!(
        plain.json()["inputs_outdated"],
        serde_json::json!({"chatgpt": 1})
    );
    assert!(
        plain
            .stderr
            .contains("1 inputs were read by an older chatmill (chatgpt: 1)")
            && plain.stderr.contains("chatmill import --reprocess"),
        "{}",
        plain.stderr
    );

    let re = env.run(&["--root", root_s, "import", "--reprocess", "--json", input]);
    assert_eq!(re.code, 0, "{}", re.stderr);
    let summary = re.json();
    assert_eq!(summary["files_reprocessed"], 1);
    assert_eq!(summary["inputs_outdated"], serde_json::json!({}));
    assert!(!re.stderr.contains("older chatmill"), "{}", re.stderr);
    // Byte for byte what a fresh import writes; the replaced chunk gone.
    assert_eq!(chunk_files(&root), chunk_files(&fresh));
    assert!(!root.join(&stale).exists());
    let m = manifest(&root);
    assert!(m.get("stale").is_none(), "{m:#}");
    assert_eq!(m["conversations"], manifest(&fresh)["conversations"]);
    let rec = m["files"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.ends_with("conversations.json"))
        .unwrap()
        .1;
    // Chunk format 3: redacted, with the rule set recorded.
    assert_eq!(rec["adapter"]["chunk_format"], 3);
    assert_eq!(rec["adapter"]["redaction"], 1);
    assert_ne!(rec["adapter"]["sha256"], "0".repeat(64));
    // The index holds exactly the chunk files again.
    let verify = env.run(&["--root", root_s, "verify", "--json"]);
    assert_eq!(verify.code, 0, "{}\n{}", verify.stdout, verify.stderr);
    // And the root is settled: nothing more to reprocess.
    let again = env.run(&["--root", root_s, "import", "--reprocess", "--json", input]);
    assert_eq!(again.json()["files_reprocessed"], 0);
    assert_eq!(chunk_files(&root), chunk_files(&fresh));
}

#[test]
fn an_outdated_input_that_is_gone_keeps_its_chunks_and_is_listed() {
    let env = Env::new();
    let root = env.path("root");
    let root_s = root.to_str().unwrap();
    let export = std::fs::read(corpus("chatgpt/librechat-chatgpt-export.json")).unwrap();
    env.write("root/raw/conversations.json", export);
    assert_eq!(env.run(&["--root", root_s, "import"]).code, 0);
    age_input(&root, "conversations.json");
    let before = chunk_files(&root);
    std::fs::remove_file(root.join("raw/conversations.json")).unwrap();
    let re = env.run(&["--root", root_s, "import", "--reprocess", "--json"]);
    assert_eq!(re.code, 0, "{}", re.stderr);
    assert_eq!(re.json()["files_reprocessed"], 0);
    assert!(
        re.stderr.contains("not among this run's inputs"),
        "{}",
        re.stderr
    );
    assert_eq!(chunk_files(&root), before, "its chunks are kept");
    assert_eq!(
        re.json()["inputs_outdated"],
        serde_json::json!({"chatgpt": 1})
    );
}

#[test]
fn only_limits_the_reprocess_to_one_platform() {
    let env = Env::new();
    let input = two_exports(&env);
    let input = input.as_str();
    let root = env.path("root");
    let root_s = root.to_str().unwrap();
    assert_eq!(env.run(&["--root", root_s, "import", input]).code, 0);
    age_input(&root, "conversations.json");
    age_input(&root, "session-gemini.json");
    let args = [
        "--root",
        root_s,
        "import",
        "--reprocess",
        "--only",
        "gemini",
        "--json",
        input,
    ];
    let re = env.run(&args);
    assert_eq!(re.code, 0, "{}", re.stderr);
    assert_eq!(re.json()["files_reprocessed"], 1);
    assert_eq!(
        re.json()["inputs_outdated"],
        serde_json::json!({"chatgpt": 1})
    );
    let usage = env.run(&["--root", root_s, "import", "--only", "gemini", input]);
    assert_eq!(usage.code, 2, "--only needs --reprocess: {}", usage.stderr);
}
