//! The Claude Code adapter over the shared corpus: counts established by
//! hand, content spot checks, chunking invariance, sniff discipline and
//! robustness against broken input.

use chatmill_adapter_claude_code::ClaudeCode;
use chatmill_adapter_sdk::testkit::{
    assert_chunking_invariant, corpus_file, corpus_files, count, sniff_file,
};
use chatmill_adapter_sdk::{Adapter, ConversationStart, Input, Item, Part, TurnPair, parse_all};

/// (path relative to the corpus, conversations, pairs).
///
/// Pair counts were established with a throwaway Python script (with the `json`
/// module, independent of this parser; it lists non-sidechain, non-meta,
/// non-compact-summary user lines with typed text, plus `queued_command`
/// attachments, once per uuid), and then by reading the listed prompts:
const EXPECTED: &[(&str, usize, usize)] = &[
    // 1 prompt: the `/init` slash command, answered by the assistant.
    (
        "claude-code/claude-code-viewer-1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        1,
        1,
    ),
    // 1 prompt: `/orchestrator @CLAUDE.md …`; its 22 sidechain lines are two
    // sub-agent runs (two root lines with `parentUuid: null`), 1 prompt each.
    (
        "claude-code/claude-code-viewer-5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
        3,
        3,
    ),
    // 2 prompts: `/orchestrator create TODO app by Next.js` and "Thanks! Please
    // update CLAUDE.md…"; 405 sidechain lines (grep -c '"isSidechain":true')
    // are five sub-agent runs, 1 prompt each (the Task prompts).
    (
        "claude-code/claude-code-viewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        6,
        7,
    ),
    // 5 typed prompts; "First attempt" and "Second attempt" share parent a1
    // with different timestamps (a rewind), so "First attempt" is superseded: 4.
    (
        "claude-code/claude-code-log-dag_compact_after_rewind_preserved.jsonl",
        1,
        4,
    ),
    // The collage: the only main-thread prompt is the queued_command attachment
    // `att-nested-7` (the later `[trimmed for fixture]` lines all share one
    // uuid: replays of one line); its "Hello" prompt is on isSidechain lines
    // below the root `sys1`: one sub-agent run, 1 prompt.
    ("claude-code/agent-sessions-small-multiversion.jsonl", 2, 2),
    // 1 prompt: "Delegate a repo search to a subagent".
    (
        "claude-code/agent-sessions-subagent/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl",
        1,
        1,
    ),
    // 1 prompt (from the parent agent): "Search the repo for TODO comments".
    (
        "claude-code/agent-sessions-subagent/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl",
        1,
        1,
    ),
];

/// The items of each conversation, in order.
fn conversations(items: &[Item]) -> Vec<&[Item]> {
    let mut out = Vec::new();
    let mut begin = 0;
    for (i, item) in items.iter().enumerate() {
        if matches!(item, Item::ConversationEnd(_)) {
            out.push(&items[begin..=i]);
            begin = i + 1;
        }
    }
    out
}

fn parse(rel: &str) -> Vec<Item> {
    assert_chunking_invariant::<ClaudeCode>(&corpus_file(rel))
}

fn start(items: &[Item]) -> &ConversationStart {
    match items.first() {
        Some(Item::ConversationStart(s)) => s,
        other => panic!("expected a conversation start, got {other:?}"),
    }
}

fn pairs(items: &[Item]) -> Vec<&TurnPair> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Pair(p) => Some(p),
            _ => None,
        })
        .collect()
}

fn skipped(items: &[Item], reason: &str) -> u32 {
    items
        .iter()
        .find_map(|i| match i {
            Item::ConversationEnd(e) => Some(
                e.skipped
                    .iter()
                    .filter(|s| s.reason == reason)
                    .map(|s| s.count)
                    .sum(),
            ),
            _ => None,
        })
        .unwrap_or(0)
}

fn meta<'a>(m: &'a [(String, String)], key: &str) -> Option<&'a str> {
    m.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn texts(parts: &[Part]) -> Vec<&str> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn corpus_counts_match_and_chunking_is_invariant() {
    for &(rel, convs, npairs) in EXPECTED {
        let items = parse(rel);
        assert_eq!(count(&items), (convs, npairs), "{rel}");
        for p in pairs(&items) {
            assert!(
                !texts(&p.user).is_empty(),
                "{rel}: pair {} has no user text",
                p.index
            );
        }
    }
}

#[test]
fn every_corpus_file_of_this_format_is_in_the_table() {
    for path in corpus_files() {
        let rel = path
            .strip_prefix(chatmill_adapter_sdk::testkit::corpus_dir())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("claude-code/") && rel.ends_with(".jsonl") {
            assert!(
                EXPECTED.iter().any(|(r, ..)| *r == rel),
                "{rel} is not in EXPECTED"
            );
        }
    }
}

#[test]
fn small_session_init_command_and_tools() {
    let items = parse("claude-code/claude-code-viewer-1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl");
    let s = start(&items);
    assert_eq!(s.id, "1af7fc5e-8455-4414-9ccd-011d40f70b2a");
    assert_eq!(s.platform, "claude-code");
    assert_eq!(s.model.as_deref(), Some("claude-sonnet-4-20250514"));
    assert_eq!(meta(&s.metadata, "project"), Some("Demo"));
    assert_eq!(meta(&s.metadata, "cwd"), Some("/path/to/Demo"));
    assert_eq!(
        meta(&s.metadata, "session_id"),
        Some("1af7fc5e-8455-4414-9ccd-011d40f70b2a")
    );
    assert_eq!(meta(&s.metadata, "claude_code_version"), Some("1.0.98"));
    // gitBranch is "" in this file: no git_branch key.
    assert_eq!(meta(&s.metadata, "git_branch"), None);
    assert_eq!(s.created.unwrap().to_rfc3339(), "2025-09-03T00:47:19.293Z");

    let ps = pairs(&items);
    let p = ps[0];
    assert_eq!(p.user, vec![Part::Text("/init".into())]);
    assert_eq!(meta(&p.metadata, "command"), Some("/init"));
    assert_eq!(
        p.timestamp.unwrap().to_rfc3339(),
        "2025-09-03T00:47:19.293Z"
    );
    // The isMeta expansion of /init ("Please analyze this codebase…") is not user text.
    assert!(
        !p.user
            .iter()
            .any(|x| matches!(x, Part::Text(t) if t.contains("Please analyze")))
    );
    assert_eq!(skipped(&items, "meta-message"), 1);
    // Write's file_path is shown relative to cwd; its error result is summarized.
    let write = p
        .assistant
        .iter()
        .position(|x| matches!(x, Part::ToolCall { name, summary } if name == "Write" && summary == "CLAUDE.md"))
        .expect("Write CLAUDE.md tool call");
    assert!(
        matches!(&p.assistant[write + 1], Part::ToolResult(r) if r.starts_with("error: Claude requested permissions"))
    );
    assert!(p.assistant.contains(&Part::ToolCall {
        name: "Bash".into(),
        summary: "ls -la".into()
    }));
    assert!(p.assistant.contains(&Part::ToolCall {
        name: "TodoWrite".into(),
        summary: "5 todos".into()
    }));
    for part in &p.assistant {
        if let Part::ToolResult(r) = part {
            assert!(r.chars().count() <= 201, "tool output dumped: {r}");
        }
    }
    let last = texts(&p.assistant).last().copied().unwrap();
    assert!(last.starts_with("I've created a basic CLAUDE.md file"));
}

#[test]
fn split_messages_are_merged_and_sidechains_kept_apart() {
    let all = parse("claude-code/claude-code-viewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl");
    let items = conversations(&all)[0];
    let s = start(items);
    // The only `summary` line names a leaf of another session (1af7fc5e…): not a title.
    assert_eq!(s.title, None);
    // Every sidechain line went to a sub-agent run.
    assert_eq!(skipped(items, "sidechain-line"), 0);
    let ps = pairs(items);
    assert_eq!(
        texts(&ps[0].user),
        ["/orchestrator create TODO app by Next.js"]
    );
    assert_eq!(
        texts(&ps[1].user),
        ["Thanks! Please update CLAUDE.md for current changes"]
    );
    // msg_0175yHhPUPFGbabUiDkdjvaD = text line + Glob line + Glob line, in order, once.
    let a = &ps[0].assistant;
    assert!(matches!(&a[0], Part::Text(t) if t.starts_with("I'll help you create a TODO app")));
    assert!(matches!(&a[1], Part::ToolCall { name, .. } if name == "Glob"));
    assert!(matches!(&a[2], Part::ToolCall { name, .. } if name == "Glob"));
    let intro = texts(a)
        .iter()
        .filter(|t| t.starts_with("I'll help you create a TODO app"))
        .count();
    assert_eq!(intro, 1);
    // 18 main-thread assistant blocks in the file (counted with python), none
    // lost, none duplicated: 7 of them text.
    let blocks: usize = ps
        .iter()
        .flat_map(|p| p.assistant.iter())
        .filter(|x| matches!(x, Part::Text(_) | Part::ToolCall { .. } | Part::Thinking(_)))
        .count();
    assert_eq!(blocks, 18);
    // Sub-agent prose (written inline as sidechain lines) is not in the main
    // pairs, but the Task calls that spawned them are.
    let tasks = a
        .iter()
        .filter(|x| matches!(x, Part::ToolCall { name, .. } if name == "Task"))
        .count();
    assert!(tasks >= 5, "{tasks}");
    // cwd changes mid-session: the conversation keeps the first one.
    assert_eq!(meta(&s.metadata, "cwd"), Some("/path/to/Demo"));
}

/// (root line's uuid, the `Task` description) of the sub-agent runs of
/// fe5e1c67, in file order (read with python: sidechain lines with
/// `parentUuid: null`, matched to the Task calls by their prompt).
const FE5E1C67_RUNS: &[(&str, &str)] = &[
    (
        "6690d10e-f521-4ac0-800d-e5eb7a2d8072",
        "Build TODO components",
    ),
    (
        "60dade70-20bb-4edb-9dad-9f08267e0cc2",
        "Setup Next.js project",
    ),
    ("f4546a51-ea10-47e0-b4e0-76802974f8a9", "Create data models"),
    (
        "0d692b0f-17cb-4fd0-94fb-215dabcef803",
        "Implement state management",
    ),
    (
        "f4ab2bf6-d642-431a-85cb-66691f24c404",
        "Create main page integration",
    ),
];

#[test]
fn inline_sub_agent_runs_are_their_own_conversations() {
    let session = "fe5e1c67-53e7-4862-81ae-d0e013e3270b";
    let all = parse("claude-code/claude-code-viewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl");
    let convs = conversations(&all);
    assert_eq!(convs.len(), 1 + FE5E1C67_RUNS.len());
    let (mut blocks, mut words) = (0, 0);
    for (run, &(root, title)) in convs[1..].iter().zip(FE5E1C67_RUNS) {
        let s = start(run);
        assert_eq!(s.id, format!("{session}:sidechain-{}", &root[..8]));
        assert_eq!(s.title.as_deref(), Some(title));
        assert_eq!(meta(&s.metadata, "parent_session_id"), Some(session));
        assert_eq!(meta(&s.metadata, "session_id"), Some(session));
        assert_eq!(meta(&s.metadata, "subagent_type"), Some("general-purpose"));
        assert_eq!(meta(&s.metadata, "project"), Some("Demo"));
        // Each run's own working directory (`Demo`, `Demo/todo-app`, …).
        let cwd = meta(&s.metadata, "cwd").unwrap();
        assert!(cwd.starts_with("/path/to/Demo"), "{cwd}");
        assert_eq!(s.model.as_deref(), Some("claude-sonnet-4-20250514"));
        let ps = pairs(run);
        assert_eq!(ps.len(), 1, "{title}");
        for p in &ps {
            for t in texts(&p.assistant) {
                blocks += 1;
                words += t.split_whitespace().count();
            }
        }
    }
    // Every sub-agent text block of the file (88, 2,283 words, counted with
    // python: sidechain assistant text blocks, once per message id and text).
    assert_eq!((blocks, words), (88, 2283));
    // The runs' prompts are the Task prompts; the final reports are whole.
    let first = pairs(convs[1])[0];
    assert!(texts(&first.user)[0].starts_with("Create React components for the TODO app"));
    let report = texts(&first.assistant).last().copied().unwrap();
    assert!(report.starts_with("## Component Summary"), "{report}");
    assert!(report.chars().count() > 500, "{report}");
}

#[test]
fn rewinds_and_compaction_follow_the_dag() {
    let items = parse("claude-code/claude-code-log-dag_compact_after_rewind_preserved.jsonl");
    let s = start(&items);
    assert_eq!(s.id, "s2"); // no uuid in the file name: the lines' sessionId
    let ps = pairs(&items);
    let users: Vec<_> = ps.iter().map(|p| texts(&p.user).join(" ")).collect();
    assert_eq!(
        users,
        ["Start", "Second attempt", "Keep going", "After compaction"]
    );
    let answers: Vec<_> = ps.iter().map(|p| texts(&p.assistant).join(" ")).collect();
    assert_eq!(
        answers,
        ["Ready", "Second answer", "Kept going", "Final answer"]
    );
    // The superseded branch did not survive anywhere.
    for p in &ps {
        for t in texts(&p.user).into_iter().chain(texts(&p.assistant)) {
            assert!(!t.contains("First"), "superseded text survived: {t}");
        }
    }
    assert_eq!(skipped(&items, "rewound-branch"), 2);
    assert_eq!(skipped(&items, "compact-summary"), 1);
    // The preserved message's earlier timestamp does not reorder anything.
    assert_eq!(
        ps[2].timestamp.unwrap().to_rfc3339(),
        "2025-07-01T10:20:00Z"
    );
    assert_eq!(ps[3].model.as_deref(), Some("claude-sonnet-4-20250514"));
}

#[test]
fn subagent_files_are_their_own_conversations() {
    let parent =
        parse("claude-code/agent-sessions-subagent/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl");
    let s = start(&parent);
    assert_eq!(s.id, "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f");
    assert_eq!(meta(&s.metadata, "git_branch"), Some("main"));
    let p = pairs(&parent)[0];
    assert!(p.assistant.contains(&Part::ToolCall {
        name: "Task".into(),
        summary: "general-purpose: search files".into()
    }));

    let items = parse(
        "claude-code/agent-sessions-subagent/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl",
    );
    let s = start(&items);
    assert_eq!(s.id, "agent-a0ad4f44468bdf20d");
    assert_eq!(meta(&s.metadata, "subagent_id"), Some("a0ad4f44468bdf20d"));
    let p = pairs(&items)[0];
    assert_eq!(texts(&p.user), ["Search the repo for TODO comments"]);
    assert_eq!(
        p.assistant,
        vec![
            Part::Text("Searching.".into()),
            Part::ToolCall {
                name: "bash".into(),
                summary: "grep -rn TODO".into()
            },
            Part::ToolResult("a.txt:1: TODO fix".into()),
        ]
    );
}

#[test]
fn the_collage_of_line_shapes_never_breaks() {
    let all = parse("claude-code/agent-sessions-small-multiversion.jsonl");
    let convs = conversations(&all);
    let items = convs[0];
    let s = start(items);
    assert_eq!(s.id, "ses_stage0_small");
    // custom-title wins over ai-title and summary.
    assert_eq!(s.title.as_deref(), Some("Stage0 small fixture"));
    assert_eq!(skipped(items, "unknown-line-type"), 5); // frame-link, started, result, relocated, atis-latch
    assert_eq!(skipped(items, "sidechain-line"), 0);
    assert!(skipped(items, "duplicate-uuid") > 0);
    // The sidechain lines below `sys1`: a run of their own, untitled (no Task
    // call started it), linked to the session.
    let run = start(convs[1]);
    assert_eq!(run.id, "ses_stage0_small:sidechain-sys1");
    assert_eq!(run.title, None);
    assert_eq!(
        meta(&run.metadata, "parent_session_id"),
        Some("ses_stage0_small")
    );
    assert_eq!(texts(&pairs(convs[1])[0].user), ["Hello"]);
}

// ---- sniffing --------------------------------------------------------------

fn is_mine(rel: &str) -> bool {
    rel.starts_with("claude-code/") && rel.ends_with(".jsonl")
}

#[test]
fn sniff_claims_own_files_and_nothing_else() {
    let mut mine = 0;
    for path in corpus_files() {
        let rel = path
            .strip_prefix(chatmill_adapter_sdk::testkit::corpus_dir())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let score = sniff_file::<ClaudeCode>(&path);
        if is_mine(&rel) {
            mine += 1;
            assert!(score >= 70, "{rel}: {score}");
        } else {
            assert!(score < 30, "{rel}: {score}");
        }
    }
    assert_eq!(mine, EXPECTED.len());
    // The sub-agent's .meta.json sidecar is explicitly not a conversation.
    let sidecar = corpus_file(
        "claude-code/agent-sessions-subagent/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.meta.json",
    );
    assert_eq!(sniff_file::<ClaudeCode>(&sidecar), 0);
}

// ---- robustness ------------------------------------------------------------

fn run(name: &str, bytes: Vec<u8>) -> Result<Vec<Item>, chatmill_adapter_sdk::ParseError> {
    let r = parse_all::<ClaudeCode>(Input::from_bytes(name, bytes), 7);
    if let Ok(items) = &r {
        count(items);
    }
    r
}

#[test]
fn truncated_files_give_shorter_results_not_panics() {
    for &(rel, _, npairs) in EXPECTED {
        let bytes = std::fs::read(corpus_file(rel)).unwrap();
        let n = bytes.len();
        for cut in [1, 2, 17, n / 7, n / 3, n / 2, n * 2 / 3, n - 2, n - 1] {
            let cut = cut.min(n);
            let r = run("s.jsonl", bytes[..cut].to_vec());
            if let Ok(items) = r {
                assert!(count(&items).1 <= npairs, "{rel} cut at {cut}");
            }
        }
    }
    // A partial last line is skipped and counted.
    let mut bytes = std::fs::read(corpus_file(EXPECTED[0].0)).unwrap();
    bytes.extend_from_slice(br#"{"type":"user","message":{"con"#);
    let items = run("x.jsonl", bytes).unwrap();
    assert_eq!(count(&items), (1, 1));
    assert_eq!(skipped(&items, "partial-last-line"), 1);
}

#[test]
fn garbage_and_wrong_types_are_handled() {
    assert!(run("e.jsonl", Vec::new()).unwrap().is_empty());
    assert!(run("w.jsonl", b"\n\n  \n".to_vec()).unwrap().is_empty());
    let mut x: u64 = 0x1234_5678;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let _ = run("r.jsonl", random);
    assert!(run("t.jsonl", b"hello\nworld\n".to_vec()).is_err());
    let weird = br#"[1,2]
"str"
{"type":5,"uuid":7}
{"type":"user","message":"not an object"}
{"type":"user","message":{"content":42}}
{"type":"user","message":{"content":[1,"x",null,{"type":7}]}}
{"type":"assistant","message":{"content":{"type":"text"}}}
{"type":"assistant","message":{"id":1,"content":[]}}
{"type":"user","uuid":"u1","parentUuid":"u1","timestamp":"2025-01-01T00:00:00Z","message":{"content":"loop"}}
{"type":"user","uuid":"u2","parentUuid":"u2","timestamp":"2025-01-01T00:01:00Z","message":{"content":"loop2"}}
{"type":"assistant","uuid":"a","parentUuid":"zz","message":{"id":"m","content":[{"type":"tool_use","name":"Read","input":"oops"},{"type":"tool_use"},{"type":"text","text":null}]}}
{"type":"user","message":{"content":[{"type":"tool_result","content":{"x":1}}]}}
{"type":"attachment","attachment":{"type":"queued_command","prompt":{"a":1}}}
"#;
    let items = run("w.jsonl", weird.to_vec()).unwrap();
    let ps = pairs(&items);
    assert_eq!(ps.len(), 2, "{items:?}");
    assert_eq!(texts(&ps[1].user), ["loop2"]);
    assert!(ps[1].assistant.contains(&Part::ToolCall {
        name: "Read".into(),
        summary: "\"oops\"".into()
    }));
}

#[test]
fn inline_session_local_commands_interruptions_and_replays() {
    let lines = [
        r#"{"type":"user","uuid":"1","parentUuid":null,"sessionId":"S","cwd":"/w/app","gitBranch":"dev","timestamp":"2025-01-01T00:00:00Z","message":{"role":"user","content":"<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args>opus</command-args>"}}"#,
        r#"{"type":"user","uuid":"2","parentUuid":"1","sessionId":"S","timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"<local-command-stdout>Set model to opus</local-command-stdout>"}}"#,
        r#"{"type":"user","uuid":"3","parentUuid":"2","sessionId":"S","timestamp":"2025-01-01T00:00:02Z","isMeta":true,"message":{"role":"user","content":"Caveat: The messages below were generated by the user while running local commands."}}"#,
        r#"{"type":"user","uuid":"4","parentUuid":"3","sessionId":"S","timestamp":"2025-01-01T00:01:00Z","message":{"role":"user","content":[{"type":"text","text":"Fix the tests <system-reminder>ignore</system-reminder>"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}}"#,
        r#"{"type":"assistant","uuid":"5","parentUuid":"4","sessionId":"S","timestamp":"2025-01-01T00:01:05Z","requestId":"r1","message":{"id":"msg_1","model":"claude-opus-4","content":[{"type":"thinking","thinking":"Look first.","signature":"x"}]}}"#,
        r#"{"type":"assistant","uuid":"6","parentUuid":"5","sessionId":"S","timestamp":"2025-01-01T00:01:06Z","requestId":"r1","message":{"id":"msg_1","model":"claude-opus-4","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/w/app/src/totals.rs"}}]}}"#,
        r#"{"type":"assistant","uuid":"6b","parentUuid":"6","sessionId":"S","timestamp":"2025-01-01T00:01:06Z","requestId":"r1","message":{"id":"msg_1","model":"claude-opus-4","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/w/app/src/totals.rs"}}]}}"#,
        r#"{"type":"user","uuid":"7","parentUuid":"6","sessionId":"S","timestamp":"2025-01-01T00:01:07Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"fn total() {}"}]}}"#,
        r#"{"type":"user","uuid":"7","parentUuid":"6","sessionId":"S","timestamp":"2025-01-01T00:01:07Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"fn total() {}"}]}}"#,
        r#"{"type":"user","uuid":"8","parentUuid":"7","sessionId":"S","timestamp":"2025-01-01T00:01:08Z","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}"#,
        r#"{"type":"assistant","uuid":"9","parentUuid":"8","sessionId":"S","timestamp":"2025-01-01T00:01:09Z","isApiErrorMessage":true,"message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"API Error"}]}}"#,
        r#"{"type":"user","uuid":"10","parentUuid":"9","sessionId":"S","timestamp":"2025-01-01T00:02:00Z","message":{"role":"user","content":"never answered"}}"#,
        r#"{"type":"progress","uuid":"11","parentUuid":"10","sessionId":"S","data":{"type":"hook_progress"}}"#,
        r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{}}"#,
    ];
    let text = lines.join("\n") + "\n";
    let items = run(
        "11111111-2222-3333-4444-555555555555.jsonl",
        text.into_bytes(),
    )
    .unwrap();
    let s = start(&items);
    assert_eq!(s.id, "11111111-2222-3333-4444-555555555555");
    assert_eq!(meta(&s.metadata, "project"), Some("app"));
    assert_eq!(meta(&s.metadata, "git_branch"), Some("dev"));
    let ps = pairs(&items);
    // /model answered only by local output: dropped and counted.
    assert_eq!(ps.len(), 2);
    assert_eq!(skipped(&items, "local-command"), 1);
    assert_eq!(skipped(&items, "meta-message"), 1);
    assert_eq!(skipped(&items, "synthetic-message"), 1);
    assert_eq!(skipped(&items, "duplicate-uuid"), 1);
    assert_eq!(skipped(&items, "duplicate-block"), 1);
    assert_eq!(skipped(&items, "progress-line"), 1);
    assert_eq!(skipped(&items, "file-history-snapshot-line"), 1);
    assert_eq!(
        ps[0].user,
        vec![
            Part::Text("Fix the tests".into()),
            Part::Attachment {
                name: "image".into(),
                media_type: Some("image/png".into()),
                uri: None
            },
        ]
    );
    assert_eq!(ps[0].model.as_deref(), Some("claude-opus-4"));
    assert_eq!(
        ps[0].assistant,
        vec![
            Part::Thinking("Look first.".into()),
            Part::ToolCall {
                name: "Read".into(),
                summary: "src/totals.rs".into()
            },
            Part::ToolResult("fn total() {}".into()),
            Part::Other {
                kind: "interrupted".into(),
                text: "Request interrupted by user for tool use".into()
            },
        ]
    );
    assert_eq!(texts(&ps[1].user), ["never answered"]);
    assert!(ps[1].assistant.is_empty());
    assert_eq!(
        ps[1].timestamp.unwrap().to_rfc3339(),
        "2025-01-01T00:02:00Z"
    );
    assert_eq!(ps[1].model, None);
}

#[test]
fn inline_runs_whose_roots_share_a_label_stay_apart() {
    let lines = [
        r#"{"type":"user","uuid":"u0","parentUuid":null,"sessionId":"S","timestamp":"2025-01-01T00:00:00Z","message":{"role":"user","content":"Split the work"}}"#,
        r#"{"type":"assistant","uuid":"a0","parentUuid":"u0","sessionId":"S","timestamp":"2025-01-01T00:00:01Z","message":{"id":"m0","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"description":"Part A","prompt":"Do A","subagent_type":"general-purpose"}}]}}"#,
        r#"{"type":"user","uuid":"abcdef12-0000-4000-8000-000000000001","parentUuid":null,"isSidechain":true,"sessionId":"S","timestamp":"2025-01-01T00:00:02Z","message":{"role":"user","content":"Do A"}}"#,
        r#"{"type":"user","uuid":"abcdef12-0000-4000-8000-000000000002","parentUuid":null,"isSidechain":true,"sessionId":"S","timestamp":"2025-01-01T00:00:02Z","message":{"role":"user","content":"Do B"}}"#,
        r#"{"type":"assistant","uuid":"s1","parentUuid":"abcdef12-0000-4000-8000-000000000001","isSidechain":true,"sessionId":"S","timestamp":"2025-01-01T00:00:03Z","message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"A is done."}]}}"#,
        r#"{"type":"assistant","uuid":"s2","parentUuid":"abcdef12-0000-4000-8000-000000000002","isSidechain":true,"sessionId":"S","timestamp":"2025-01-01T00:00:03Z","message":{"id":"m2","model":"claude-x","content":[{"type":"text","text":"B is done."}]}}"#,
        r#"{"type":"user","uuid":"s3","parentUuid":null,"isSidechain":true,"sessionId":"S","timestamp":"2025-01-01T00:00:04Z","message":{"role":"user","content":[{"type":"tool_result","content":"orphan"}]}}"#,
    ];
    let items = run("S.jsonl", (lines.join("\n") + "\n").into_bytes()).unwrap();
    let convs = conversations(&items);
    assert_eq!(convs.len(), 3);
    let ids: Vec<&str> = convs.iter().map(|c| start(c).id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "S",
            "S:sidechain-abcdef12",
            "S:sidechain-abcdef12-0000-4000-8000-000000000002"
        ]
    );
    assert_eq!(start(convs[1]).title.as_deref(), Some("Part A"));
    assert_eq!(start(convs[2]).title, None);
    assert_eq!(texts(&pairs(convs[2])[0].assistant), ["B is done."]);
    // A run without a prompt (a lone tool result) is no conversation: its
    // line stays counted in the session.
    assert_eq!(skipped(convs[0], "sidechain-line"), 1);
}

#[test]
fn describe_is_consistent() {
    let info = ClaudeCode::describe();
    assert_eq!(info.id, "claude-code");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    assert!(!info.formats.is_empty());
}
