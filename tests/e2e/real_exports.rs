//! Real exports, as people have them (issue #25): sub-agent runs that
//! Claude Code wrote inline become conversations of their own, ChatGPT's
//! citations stay where they were as footnotes, every chunk has a title
//! (derived, and marked so, where the source has none; inline turns too),
//! and greetings are left out by one rule however they are worded.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

const FE5E1C67: &str = "claude-code/claude-code-viewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl";
const SESSION: &str = "fe5e1c67-53e7-4862-81ae-d0e013e3270b";

/// The chunk files under `root` (not its raw inputs), with their text.
fn chunks(root: &Path) -> Vec<(PathBuf, String)> {
    let mut v: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    v.sort();
    v
}

/// A frontmatter field's value as written (`None`: absent).
fn field<'a>(chunk: &'a str, key: &str) -> Option<&'a str> {
    let front = chunk.split("\n---\n").next().unwrap();
    front
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
}

/// Imports the files `(corpus path, name in raw/)` into a fresh root.
fn import(env: &Env, files: &[(&str, &str)]) -> (PathBuf, Value) {
    let root = env.path("root");
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for (rel, name) in files {
        std::fs::copy(corpus(rel), raw.join(name)).unwrap();
    }
    let run = env.run(&["--root", root.to_str().unwrap(), "import", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    (root, run.json())
}

/// A ChatGPT `conversations.json` entry: `exchanges` as one linear thread
/// of text messages a minute apart, on 2025-03-04.
fn chatgpt_conversation(id: &str, title: Option<&str>, exchanges: &[(&str, &str)]) -> Value {
    let t0 = 1_741_082_400.0; // 2025-03-04T10:00:00Z
    let mut mapping = serde_json::Map::new();
    mapping.insert(
        "root".into(),
        json!({"id": "root", "parent": null, "children": ["m0"], "message": null}),
    );
    let n = exchanges.len() * 2;
    let messages = exchanges
        .iter()
        .flat_map(|(u, a)| [("user", *u), ("assistant", *a)]);
    for (i, (role, text)) in messages.enumerate() {
        let node = format!("m{i}");
        let parent = if i == 0 {
            "root".into()
        } else {
            format!("m{}", i - 1)
        };
        let children: Vec<String> = if i + 1 < n {
            vec![format!("m{}", i + 1)]
        } else {
            vec![]
        };
        mapping.insert(
            node.clone(),
            json!({"id": node, "parent": parent, "children": children, "message": {
                "id": node, "author": {"role": role}, "create_time": t0 + 60.0 * i as f64,
                "content": {"content_type": "text", "parts": [text]},
                "status": "finished_successfully", "recipient": "all",
                "metadata": {"model_slug": "gpt-4o"}}}),
        );
    }
    json!({"id": id, "conversation_id": id, "title": title, "create_time": t0,
           "update_time": t0 + 60.0 * n as f64, "mapping": mapping,
           "current_node": format!("m{}", n - 1)})
}

#[test]
fn sub_agent_runs_written_inline_become_their_own_conversations() {
    let env = Env::new();
    let (root, summary) = import(&env, &[(FE5E1C67, &format!("{SESSION}.jsonl"))]);
    let all = chunks(&root);
    let runs: Vec<&str> = all
        .iter()
        .map(|(_, t)| t.as_str())
        .filter(|t| field(t, "parent_session_id").is_some())
        .collect();
    // Five runs, one pair each (the Task prompts; a long report may be split
    // into parts), each linked to its session.
    let mut ids: Vec<&str> = runs
        .iter()
        .map(|t| field(t, "conversation_id").unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 5, "{summary:#}");
    let mut titles: Vec<&str> = Vec::new();
    for t in &runs {
        assert_eq!(field(t, "parent_session_id"), Some(SESSION));
        assert_eq!(field(t, "session_id"), Some(SESSION));
        assert!(
            field(t, "conversation_id")
                .unwrap()
                .starts_with(&format!("{SESSION}:sidechain-")),
            "{t}"
        );
        assert_eq!(field(t, "title_derived"), None, "{t}");
        titles.push(field(t, "conversation_title").unwrap());
    }
    titles.sort_unstable();
    titles.dedup();
    assert_eq!(
        titles,
        [
            "Build TODO components",
            "Create data models",
            "Create main page integration",
            "Implement state management",
            "Setup Next.js project"
        ]
    );
    // The sub-agents' own words, which only survived as 200-character
    // tool-result summaries before: the whole final report is in its chunk.
    let components = runs
        .iter()
        .find(|t| field(t, "conversation_title") == Some("Build TODO components"))
        .unwrap();
    assert!(components.contains("## Component Summary"), "{components}");
    assert!(
        components.contains("**Components Created:**"),
        "{components}"
    );
    // The session's own chunks are not linked to anything.
    let session: Vec<_> = all
        .iter()
        .filter(|(_, t)| field(t, "parent_session_id").is_none())
        .collect();
    assert_eq!(session.len(), 2, "{summary:#}");
    // Stable ids: a second import of the same file writes nothing.
    let again = env.run(&["--root", root.to_str().unwrap(), "import", "--json"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.json()["chunks_written"], 0, "{again:?}");
}

#[test]
fn citations_stay_where_they_were_as_footnotes() {
    let env = Env::new();
    let (root, _) = import(
        &env,
        &[(
            "chatgpt/librechat-chatgpt-export.json",
            "conversations.json",
        )],
    );
    let all = chunks(&root);
    // The markers: "…maintenance of the vehicle【6†source】【7†source】.", and in
    // the two answers after it (short follow-ups, merged into the same chunk:
    // their footnotes are numbered on, so every label is unique in the file)
    // "…due to the additional weight【13†source】." and "…acceleration and
    // deceleration【13†source】.".
    let carsales = "Volkswagen Transporter TDI340 2014 - Pricing & Specifications | carsales.com.au — https://www.carsales.com.au/volkswagen/transporter/price/2014/tdi340-381631/";
    let (third, fourth) = (format!("[^3]: {carsales}"), format!("[^4]: {carsales}"));
    for (reference, footnotes) in [
        (
            "maintenance of the vehicle[^1][^2].",
            "[^1]: 2021 Volkswagen Transporter T6.1 L2H1 2.0 TDI 110HP specs, dimensions — https://www.ultimatespecs.com/car-specs/Volkswagen/118424/2021-Volkswagen-Transporter-T61-L2H1-20-TDI-110HP.html\n\
             [^2]: Volkswagen Transporter Review - Drive — https://www.drive.com.au/reviews/volkswagen-transporter-review/",
        ),
        ("due to the additional weight[^3].", third.as_str()),
        ("acceleration and deceleration[^4].", fourth.as_str()),
    ] {
        let (_, chunk) = all
            .iter()
            .find(|(_, t)| t.contains(reference))
            .unwrap_or_else(|| panic!("no chunk has {reference:?}: {all:#?}"));
        // The footnotes, title and URL, end the exchange.
        let after = chunk.split(reference).nth(1).unwrap();
        let exchange_end = after.split("**User:**").next().unwrap();
        assert_eq!(exchange_end.trim(), footnotes, "{chunk}");
    }
    for (_, t) in &all {
        assert!(!t.contains('【'), "{t}");
        let mut labels: Vec<&str> = t
            .lines()
            .filter(|l| l.starts_with("[^"))
            .filter_map(|l| l.split_once("]: ").map(|(label, _)| label))
            .collect();
        let n = labels.len();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), n, "a footnote label twice in one file: {t}");
    }
}

#[test]
fn a_long_cited_answer_split_at_its_sections_keeps_each_parts_footnotes() {
    let env = Env::new();
    let root = env.path("root");
    let filler = |topic: &str| format!("{topic} ").repeat(600);
    let answer = format!(
        "## Install\n{}It needs a kernel module【1†source】.\n\n## Configure\n{}\n\n\
         ## Run\n{}Run it as a service【2†source】.",
        filler("install"),
        filler("configure"),
        filler("run")
    );
    let mut export = json!([chatgpt_conversation(
        "long-1",
        Some("WireGuard on a server"),
        &[("Set up WireGuard on my server, step by step.", &answer)],
    )]);
    export[0]["mapping"]["m1"]["message"]["metadata"]["citations"] = json!([
        {"metadata": {"title": "Kernel docs", "url": "https://k.example"}},
        {"metadata": {"title": "Systemd", "url": "https://s.example"}}
    ]);
    env.write(
        "root/raw/conversations.json",
        serde_json::to_vec(&export).unwrap(),
    );
    let run = env.run(&["--root", root.to_str().unwrap(), "import", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let all = chunks(&root);
    let part = |n: &str| -> &str {
        all.iter()
            .map(|(_, t)| t.as_str())
            .find(|t| field(t, "part") == Some(n))
            .unwrap_or_else(|| panic!("no part {n}: {all:#?}"))
    };
    let (first, second, third) = (part("1/3"), part("2/3"), part("3/3"));
    assert!(first.contains("kernel module[^1]."), "{first}");
    assert!(
        first
            .trim_end()
            .ends_with("[^1]: Kernel docs — https://k.example"),
        "{first}"
    );
    assert!(!second.contains("[^"), "{second}");
    assert!(third.contains("as a service[^2]."), "{third}");
    assert!(
        third
            .trim_end()
            .ends_with("\n\n[^2]: Systemd — https://s.example"),
        "{third}"
    );
    assert!(!third.contains("[^1]"), "{third}");
}

#[test]
fn every_chunk_has_a_title_derived_and_marked_where_the_source_has_none() {
    let env = Env::new();
    let root = env.path("root");
    let export = json!([
        chatgpt_conversation(
            "untitled-1",
            None,
            &[(
                "Hi! Can you explain how Rust lifetimes work? I keep getting E0106.",
                "A lifetime names how long a reference is valid; E0106 asks you to name one.",
            )],
        ),
        chatgpt_conversation(
            "titled-1",
            Some("Sourdough starter"),
            &[(
                "My starter smells like nail polish remover.",
                "It is hungry: feed it twice a day at a 1:1:1 ratio.",
            )],
        ),
    ]);
    env.write(
        "root/raw/conversations.json",
        serde_json::to_vec(&export).unwrap(),
    );
    std::fs::copy(corpus(FE5E1C67), root.join(format!("raw/{SESSION}.jsonl"))).unwrap();
    let run = env.run(&["--root", root.to_str().unwrap(), "import", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let all = chunks(&root);
    assert!(all.len() >= 4, "{run:?}");
    for (path, t) in &all {
        assert!(
            field(t, "conversation_title").is_some(),
            "{}: {t}",
            path.display()
        );
    }
    let by_id = |id: &str| -> Vec<&str> {
        all.iter()
            .map(|(_, t)| t.as_str())
            .filter(|t| field(t, "conversation_id") == Some(id))
            .collect()
    };
    let untitled = by_id("untitled-1");
    assert_eq!(
        field(untitled[0], "conversation_title"),
        Some("Explain how Rust lifetimes work")
    );
    assert_eq!(field(untitled[0], "title_derived"), Some("true"));
    let titled = by_id("titled-1");
    assert_eq!(
        field(titled[0], "conversation_title"),
        Some("Sourdough starter")
    );
    assert_eq!(field(titled[0], "title_derived"), None);
    // The Claude Code session has no title line of its own: its first prompt.
    for t in by_id(SESSION) {
        assert_eq!(
            field(t, "conversation_title"),
            Some("/orchestrator create TODO app by Next.js")
        );
        assert_eq!(field(t, "title_derived"), Some("true"));
    }
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
fn inline_turns_are_titled_after_their_sessions_first_request() {
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
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let socket = socket.to_str().unwrap();
    let turn = |i: &str, user: &str, assistant: &str| -> String {
        let run = env.run(&[
            "turn",
            "--socket",
            socket,
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
        std::fs::read_to_string(ack["path"].as_str().unwrap()).unwrap()
    };
    let first = turn(
        "1",
        "Why does nginx return 504 on long uploads? It sits behind a load balancer.",
        "The upstream timed out: raise proxy_read_timeout for that location.",
    );
    let second = turn(
        "2",
        "Which timeout covers the request body itself?",
        "client_body_timeout: the time between two reads of the body.",
    );
    for chunk in [&first, &second] {
        assert_eq!(
            field(chunk, "conversation_title"),
            Some("Why does nginx return 504 on long uploads"),
            "{chunk}"
        );
        assert_eq!(field(chunk, "title_derived"), Some("true"), "{chunk}");
    }
}

#[test]
fn greetings_are_left_out_by_one_rule_however_they_are_worded() {
    let env = Env::new();
    let root = env.path("root");
    let export = json!([chatgpt_conversation(
        "greetings-1",
        Some("Undoing a commit"),
        &[
            ("hi there", "Hello! How can I help you today?"),
            (
                "How do I undo a git commit that I have not pushed yet?",
                "Run `git reset --soft HEAD~1`: the commit is undone and its changes stay staged.",
            ),
            ("hi again", "Hey! Welcome back. What are we working on?"),
            ("Thank you so much!!", "Glad it helped."),
            (
                "thanks, and what about a pushed one?",
                "Use `git revert <sha>`: it adds a commit that undoes it."
            ),
        ],
    )]);
    env.write(
        "root/raw/conversations.json",
        serde_json::to_vec(&export).unwrap(),
    );
    let run = env.run(&["--root", root.to_str().unwrap(), "import", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let summary = run.json();
    assert_eq!(summary["mechanical_excluded"], 3, "{summary:#}");
    let all = chunks(&root);
    let ranges: Vec<&str> = all
        .iter()
        .map(|(_, t)| field(t, "turn_range").unwrap())
        .collect();
    // Pairs 2 and 5 are kept; the greetings and the thanks are not.
    assert!(
        ranges
            .iter()
            .all(|r| !["1", "3", "4"].contains(&r.trim_matches(['"', '\'']))),
        "{ranges:?}"
    );
    assert!(
        !all.iter().any(|(_, t)| t.contains("Welcome back")),
        "{all:?}"
    );
}
