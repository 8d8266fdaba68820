//! Conversation notes (issue #29, "a root you can browse"): import writes
//! `ROOT/conversations/<date> <title>.md` per conversation, linking its
//! chunks in order; notes are stable across runs and growth, never indexed,
//! never read as input; inline turns update theirs; `verify` checks them
//! and `--repair` writes them again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

/// The root's notes by name, with their text.
fn notes(root: &Path) -> BTreeMap<String, String> {
    let Ok(dir) = std::fs::read_dir(root.join("conversations")) else {
        return BTreeMap::new();
    };
    dir.flatten()
        .map(|e| {
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read_to_string(e.path()).unwrap())
        })
        .collect()
}

/// The chunk files a note links, in its order (`[[stem|…]]`).
fn links(note: &str) -> Vec<String> {
    note.lines()
        .filter(|l| l.starts_with("## "))
        .map(|l| {
            let (_, link) = l.split_once("[[").unwrap();
            link.split('|').next().unwrap().to_string()
        })
        .collect()
}

fn manifest(root: &Path) -> Value {
    let text = std::fs::read_to_string(root.join(".processing-manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A chunk file's frontmatter value for `key`.
fn field(chunk: &str, key: &str) -> String {
    let front = chunk.split("\n---\n").next().unwrap();
    front
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
        .unwrap_or_else(|| panic!("no {key}: {chunk}"))
        .trim_matches(['"', '\''])
        .to_string()
}

/// Every conversation with chunks has its note, and the note links each of
/// its chunk files once, in pair order; every chunk file is linked by one
/// note.
fn assert_notes_match_chunks(root: &Path) {
    let m = manifest(root);
    let notes = notes(root);
    let mut linked = 0;
    for (key, conv) in m["conversations"].as_object().unwrap() {
        let ids = conv["chunk_ids"].as_array().unwrap();
        if ids.is_empty() {
            continue;
        }
        let name = conv["note"].as_str().unwrap_or_else(|| panic!("{key}"));
        let note = &notes[name];
        let mut expected: Vec<(u32, usize, String)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let stem = id.as_str().unwrap().to_string();
                let text = std::fs::read_to_string(root.join(format!("{stem}.md"))).unwrap();
                let range = field(&text, "turn_range");
                let first = range.split('-').next().unwrap().parse().unwrap();
                (first, i, stem)
            })
            .collect();
        expected.sort();
        let expected: Vec<String> = expected.into_iter().map(|e| e.2).collect();
        assert_eq!(links(note), expected, "{name}:\n{note}");
        assert!(
            note.contains(&format!("chunk_count: {}\n", expected.len())),
            "{note}"
        );
        linked += expected.len();
    }
    let chunk_files = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
        .count();
    assert_eq!(linked, chunk_files, "every chunk file is in one note");
    assert_eq!(
        notes.len(),
        m["conversations"]
            .as_object()
            .unwrap()
            .values()
            .filter(|c| !c["chunk_ids"].as_array().unwrap().is_empty())
            .count()
    );
}

fn import(env: &Env, root: &Path, inputs: &[&Path]) -> Value {
    let mut args = vec!["--root", root.to_str().unwrap(), "import", "--json"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    let run = env.run(&args);
    assert_eq!(run.code, 0, "{run:?}");
    run.json()
}

/// A ChatGPT export of the corpus conversation with a hostile title, twice
/// (two ids, the same date and title), beside the real exports.
fn raw_exports(raw: &Path) {
    std::fs::create_dir_all(raw).unwrap();
    for (rel, name) in [
        (
            "claude/osteele-claude-api-single-conversation-bakery.json",
            "bakery.json",
        ),
        (
            "claude-code/claude-code-viewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
            "session.jsonl",
        ),
        ("gemini/agent-sessions-gemini-cli-small.json", "gemini.json"),
    ] {
        std::fs::copy(corpus(rel), raw.join(name)).unwrap();
    }
    let export: Value = serde_json::from_slice(
        &std::fs::read(corpus("chatgpt/librechat-chatgpt-export.json")).unwrap(),
    )
    .unwrap();
    let mut a = export[0].clone();
    a["title"] = "../../etc/passwd\u{202E}txt.exe [[x]]|CON".into();
    let mut b = a.clone();
    for k in ["id", "conversation_id"] {
        b[k] = "0b6e2c1a-0000-4000-8000-000000000001".into();
    }
    let all = Value::Array(vec![a, b, export[1].clone()]);
    std::fs::write(
        raw.join("conversations.json"),
        serde_json::to_vec(&all).unwrap(),
    )
    .unwrap();
}

#[test]
fn import_writes_stable_notes_that_are_neither_indexed_nor_read() {
    let env = Env::new();
    let root = env.path("root");
    raw_exports(&root.join("raw"));
    let first = import(&env, &root, &[]);
    assert!(first["chunks_written"].as_u64().unwrap() >= 8, "{first:#}");
    assert_notes_match_chunks(&root);
    let written = notes(&root);
    let names: Vec<&String> = written.keys().collect();
    // The hostile title: a plain name, and a second one for its twin.
    let hostile: Vec<&&String> = names.iter().filter(|n| n.contains("passwd")).collect();
    assert_eq!(hostile.len(), 2, "{names:?}");
    assert!(
        hostile
            .iter()
            .any(|n| n.ends_with(" etc passwd txt.exe x CON.md")),
        "{names:?}"
    );
    assert!(
        hostile
            .iter()
            .any(|n| n.ends_with(" etc passwd txt.exe x CON (2).md")),
        "{names:?}"
    );
    for name in &names {
        assert!(!name.starts_with('.') && !name.contains(['/', '\\', '\u{202E}', '|']));
    }
    // Inside the note the title is inert text: no link, no bidi override.
    let note = &written[*hostile[0]];
    assert!(
        note.contains("\n# ../../etc/passwd\\\\u{202e}txt.exe \\[\\[x\\]\\]|CON\n"),
        "{note}"
    );
    let body = note.split_once("\n---\n").unwrap().1;
    assert_eq!(
        body.matches("[[").count(),
        1,
        "one link, the chunk's: {note}"
    );
    // Every note's date is its first chunk's, and its title the chunks'.
    let bakery = written
        .values()
        .find(|n| n.contains("source_platform: claude\n"))
        .unwrap();
    assert!(bakery.contains("\n## 1. [["), "{bakery}");

    // A second run changes nothing: same notes, same bytes.
    let again = import(&env, &root, &[]);
    assert_eq!(again["chunks_written"], 0, "{again:#}");
    assert_eq!(notes(&root), written);

    // Never indexed: the index holds exactly the chunk files, and no hit is
    // a note, even for words only notes have.
    let verify = env.run(&["--root", root.to_str().unwrap(), "verify", "--json"]);
    assert_eq!(verify.code, 0, "{verify:?}");
    let v = verify.json();
    assert_eq!(v["index_chunks"], v["chunk_files"], "{v:#}");
    let search = env.run(&[
        "--root",
        root.to_str().unwrap(),
        "search",
        "Written by chatmill from the chunk files edits overwritten",
        "--json",
        "-k",
        "50",
    ]);
    assert_eq!(search.code, 0, "{search:?}");
    for hit in search.json()["hits"].as_array().unwrap() {
        let path = hit["meta"]["path"].as_str().unwrap();
        assert!(!path.contains("conversations/"), "{hit:#}");
        assert!(root.join(path).is_file(), "{hit:#}");
    }

    // Never read as input: the notes folder itself, a note, and a folder
    // holding the root.
    let notes_dir = root.join("conversations");
    let one = notes_dir.join(names[0]);
    for input in [&notes_dir, &one, &env.path("")] {
        let s = import(&env, &root, &[input]);
        let text = s.to_string();
        assert!(!text.contains("conversations/"), "{input:?}: {s:#}");
        assert_eq!(s["chunks_written"], 0, "{input:?}: {s:#}");
    }
    assert_eq!(notes(&root), written);
}

/// The Claude export's first conversation up to its `answers`-th answer.
fn claude_export(answers: usize) -> Value {
    let mut export: Value = serde_json::from_slice(
        &std::fs::read(corpus("claude/claude-to-sqlite-artifacts.json")).unwrap(),
    )
    .unwrap();
    let messages = export[0]["chat_messages"].as_array_mut().unwrap();
    let at: Vec<usize> = (0..messages.len())
        .filter(|&i| messages[i]["sender"] == "assistant")
        .collect();
    if let Some(&last) = at.get(answers - 1) {
        messages.truncate(last + 1);
    }
    export
}

#[test]
fn a_grown_conversation_keeps_its_note_and_verify_checks_and_repairs_notes() {
    let env = Env::new();
    let root = env.path("root");
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let write = |export: &Value| {
        std::fs::write(raw.join("claude.json"), serde_json::to_vec(export).unwrap()).unwrap();
    };
    write(&claude_export(4));
    import(&env, &root, &[]);
    let before = notes(&root);
    assert_eq!(before.len(), 1, "{before:?}");
    let (name, short) = before.into_iter().next().unwrap();
    write(&claude_export(usize::MAX));
    let grown = import(&env, &root, &[]);
    assert!(grown["chunks_written"].as_u64().unwrap() > 0, "{grown:#}");
    assert_notes_match_chunks(&root);
    let after = notes(&root);
    assert_eq!(after.keys().collect::<Vec<_>>(), [&name], "the name stays");
    let long = &after[&name];
    assert!(links(long).len() > links(&short).len(), "{long}");
    assert_eq!(links(long)[..links(&short).len()], links(&short)[..]);

    // verify: a deleted note and an edited one are findings; --repair
    // writes them again, byte for byte.
    let r = root.to_str().unwrap();
    std::fs::write(root.join("conversations").join(&name), "my edit\n").unwrap();
    let v = env.run(&["--root", r, "verify", "--json"]);
    assert_eq!(v.code, 1, "{v:?}");
    assert_eq!(problem_kinds(&v), ["note-outdated"], "{v:?}");
    std::fs::remove_file(root.join("conversations").join(&name)).unwrap();
    let v = env.run(&["--root", r, "verify", "--json"]);
    assert_eq!(v.code, 1, "{v:?}");
    assert_eq!(v.json()["problems"][0]["kind"], "note-missing", "{v:?}");
    let fixed = env.run(&["--root", r, "verify", "--repair", "--json"]);
    assert_eq!(fixed.code, 0, "{fixed:?}");
    assert_eq!(notes(&root), after);
    let v = env.run(&["--root", r, "verify"]);
    assert_eq!(v.code, 0, "{v:?}");
}

/// `chatmill serve` on `root`, stopped when dropped.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_inline_turn_updates_its_sessions_note() {
    let env = Env::new();
    let root = env.path("root");
    let socket = env.path("s.sock");
    let _server = Server(
        env.cmd()
            .args(["--root", root.to_str().unwrap(), "serve", "--socket"])
            .arg(&socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(started.elapsed() < Duration::from_secs(60), "no server");
        std::thread::sleep(Duration::from_millis(20));
    }
    let turn = |i: &str, user: &str, assistant: &str| -> PathBuf {
        let run = env.run(&[
            "turn",
            "--socket",
            socket.to_str().unwrap(),
            "--session",
            "deploy-1",
            "--turn",
            i,
            "--user",
            user,
            "--assistant",
            assistant,
        ]);
        assert_eq!(run.code, 0, "{run:?}");
        let ack: Value = serde_json::from_str(run.stdout.trim()).unwrap();
        PathBuf::from(ack["path"].as_str().unwrap())
    };
    let stem = |p: &Path| p.file_stem().unwrap().to_string_lossy().into_owned();
    let first = turn(
        "1",
        "Why does nginx return 504 on long uploads? It sits behind a load balancer.",
        "The upstream timed out: raise proxy_read_timeout for that location.",
    );
    let one = notes(&root);
    assert_eq!(one.len(), 1, "{one:?}");
    let (name, note) = one.iter().next().unwrap();
    assert!(
        name.ends_with(" Why does nginx return 504 on long uploads.md"),
        "{name}"
    );
    assert_eq!(links(note), [stem(&first)]);
    let second = turn(
        "2",
        "Which timeout covers the request body itself?",
        "client_body_timeout: the time between two reads of the body.",
    );
    let two = notes(&root);
    assert_eq!(two.keys().collect::<Vec<_>>(), [name], "the same note");
    assert_eq!(links(&two[name]), [stem(&first), stem(&second)]);
    // Grown turn by turn, the note is what verify makes of all its chunks.
    let verify = env.run(&["--root", root.to_str().unwrap(), "verify"]);
    assert_eq!(verify.code, 0, "{verify:?}");
    assert!(
        two[name].contains("source_platform: local\n"),
        "{}",
        two[name]
    );
}
