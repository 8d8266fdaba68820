//! `chatmill parse` streams its JSON: entries in input order whatever
//! worker read them, and a reader that goes away stops it.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Env, chatgpt_export, corpus, entry};

/// The real corpus export with its conversations repeated `times` times
/// under fresh ids: an export big enough to outrun any pipe buffer.
fn big_export(env: &Env, times: usize) -> String {
    let text = std::fs::read_to_string(corpus("chatgpt/librechat-chatgpt-export.json")).unwrap();
    let convs: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    let mut out = Vec::with_capacity(convs.len() * times);
    for i in 0..times {
        for c in &convs {
            let mut c = c.clone();
            let id = format!("{}-{i}", c["id"].as_str().unwrap());
            c["id"] = id.clone().into();
            c["conversation_id"] = id.into();
            out.push(c);
        }
    }
    env.write("big/conversations.json", serde_json::to_vec(&out).unwrap())
        .display()
        .to_string()
}

#[test]
fn entries_come_in_input_order_with_each_inputs_own_outcome() {
    let env = Env::new();
    let export = chatgpt_export(&env);
    env.write("in/b-notes.txt", "not a chat export at all\n");
    let gemini = std::fs::read(corpus("gemini/agent-sessions-gemini-cli-small.json")).unwrap();
    env.write("in/c-session.json", gemini);
    let all = env.run(&["parse", "--compact", env.path("in").to_str().unwrap()]);
    assert_eq!(
        all.code, 1,
        "the unrecognized file fails parse: {}",
        all.stderr
    );
    let parsed = all.json();
    let inputs: Vec<&str> = parsed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["input"].as_str().unwrap())
        .collect();
    let mut sorted = inputs.clone();
    sorted.sort_unstable();
    assert_eq!(inputs, sorted, "input order");
    assert_eq!(inputs.len(), 3);
    assert!(entry(&parsed, "b-notes.txt")["error"]["message"].is_string());
    assert!(entry(&parsed, "b-notes.txt").get("conversations").is_none());
    // Each entry is what parsing that input alone gives.
    for (suffix, path) in [
        ("conversations.json", export.clone()),
        (
            "c-session.json",
            env.path("in/c-session.json").display().to_string(),
        ),
    ] {
        let alone = env.run(&["parse", "--compact", &path]).json();
        assert_eq!(entry(&parsed, suffix), &alone[0], "{suffix}");
        assert!(!alone[0]["conversations"].as_array().unwrap().is_empty());
    }
}

#[test]
fn a_reader_that_stops_early_stops_the_parse() {
    let env = Env::new();
    let export = big_export(&env, 400);
    let mut child = env
        .cmd()
        .args(["parse", "--compact", &export])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 4096];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut head)
        .unwrap();
    assert!(head.starts_with(b"[{\"input\":"), "{:?}", &head[..40]);
    drop(child.stdout.take());
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("parse kept running after its reader went away");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    // A reader that went away ends the command quietly (as ripgrep does).
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("error:"), "{stderr}");
}

#[test]
fn a_big_export_streams_whole_and_valid() {
    let env = Env::new();
    let export = big_export(&env, 100);
    let run = env.run(&["parse", &export]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let parsed = run.json();
    let convs = parsed[0]["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 200);
    let mut ids: Vec<&str> = convs.iter().map(|c| c["id"].as_str().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 200, "every conversation once");
}
