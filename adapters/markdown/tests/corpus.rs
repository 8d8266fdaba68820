//! Data-driven tests over `corpus/markdown/*`, plus sniff discipline and
//! robustness. Expected numbers come from small `python3` scripts written
//! independently of this parser (they split on header lines outside fenced
//! code, see the comments).

use std::path::Path;

use chatmill_adapter_markdown::{Markdown, RawLogEntry, render_raw_log_entry};
use chatmill_adapter_sdk::testkit::{
    assert_chunking_invariant, corpus_file, corpus_files, count, sniff_file,
};
use chatmill_adapter_sdk::{
    ConversationStart, ErrorKind, Input, Item, Part, Timestamp, TurnPair, parse_all,
};

/// (file, conversations, pairs).
const EXPECTED: &[(&str, usize, usize)] = &[
    // 386 `# aider chat started at` headers + a headerless preamble = 387
    // sessions; a session is a conversation when it has >= 1 prompt. Prompts
    // are runs of `#### ` lines; one starting with `/` whose answer has only
    // `> ` lines is a command (269 of them), not a pair. python: 230 / 392.
    (
        "markdown/aider-chat-history-aider-repo-fixture-first-sessions.md",
        230,
        392,
    ),
    // `_**User**_` headers outside fences (python): 26, 2 and 1.
    (
        "markdown/specstory-cursor-minsky-2025-04-26_20-30-setting-up-minsky-cli-with-bun.md",
        1,
        26,
    ),
    (
        "markdown/specstory-cursor-minsky-2025-04-27_20-11-enhancing-session-commands.md",
        1,
        2,
    ),
    (
        "markdown/specstory-cursor-minsky-2025-04-28_18-53-starting-task-008.md",
        1,
        1,
    ),
    // v2: user headers outside fences minus `[Request interrupted by user…]`
    // markers, `<local-command-stdout>` echoes and unanswered
    // `<command-name>` slash commands (python):
    // 11 - 1 local - 1 command = 9.
    (
        "markdown/specstory-v2-claude-code-getspecstory-2026-01-16_16-48-38Z-the-code-in-specstory.md",
        1,
        9,
    ),
    // 13 `_**User` lines, 2 of them inside fences; 11 - 2 interrupts - 1 local - 1 command = 7.
    (
        "markdown/specstory-v2-claude-code-getspecstory-2026-01-23_17-24-15Z-look-at-the-gh.md",
        1,
        7,
    ),
    // 9 - 1 interrupt - 1 local - 1 command = 6.
    (
        "markdown/specstory-v2-claude-code-getspecstory-2026-02-20_22-41-47Z-02-20-26-17.md",
        1,
        6,
    ),
    // 36 - 1 interrupt = 35.
    (
        "markdown/specstory-v2-claude-code-getspecstory-2026-06-30_15-24-48Z-ok-let-s-start.md",
        1,
        35,
    ),
    // 21 - 4 interrupts - 1 local - 1 command = 15.
    (
        "markdown/specstory-v2-claude-code-getspecstory-2026-07-02_15-28-22Z.md",
        1,
        15,
    ),
];

const NOT_A_TRANSCRIPT: &str =
    "markdown/not-a-transcript-minsky-2025-05-21_improve-mcp-error-handling.md";

fn pairs(items: &[Item]) -> Vec<&TurnPair> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Pair(p) => Some(p),
            _ => None,
        })
        .collect()
}

fn starts(items: &[Item]) -> Vec<&ConversationStart> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::ConversationStart(s) => Some(s),
            _ => None,
        })
        .collect()
}

fn skipped(items: &[Item], reason: &str) -> u32 {
    items
        .iter()
        .filter_map(|i| match i {
            Item::ConversationEnd(e) => Some(e),
            _ => None,
        })
        .flat_map(|e| e.skipped.iter())
        .filter(|s| s.reason == reason)
        .map(|s| s.count)
        .sum()
}

fn user(p: &TurnPair) -> &str {
    match p.user.as_slice() {
        [Part::Text(t)] => t,
        other => panic!("user side {other:?}"),
    }
}

fn has_meta(s: &ConversationStart, k: &str, v: &str) -> bool {
    s.metadata.iter().any(|(a, b)| a == k && b == v)
}

#[test]
fn corpus_counts_and_chunking_invariance() {
    for &(rel, convs, n_pairs) in EXPECTED {
        let items = assert_chunking_invariant::<Markdown>(&corpus_file(rel));
        assert_eq!(count(&items), (convs, n_pairs), "{rel}");
        for s in starts(&items) {
            assert_eq!(s.platform, "local", "{rel}");
        }
        for p in pairs(&items) {
            assert!(!user(p).trim().is_empty(), "{rel}: empty user side");
        }
    }
}

#[test]
fn specstory_cursor_vintage() {
    let items = assert_chunking_invariant::<Markdown>(&corpus_file(EXPECTED[1].0));
    let s = starts(&items)[0];
    assert_eq!(s.title.as_deref(), Some("Setting Up Minsky CLI with Bun"));
    // The file name is UTC (20-30); the title's 16:30:55 is local time.
    assert_eq!(s.created, Timestamp::parse("2025-04-26T20:30:00Z"));
    assert!(has_meta(s, "source_tool", "specstory"));
    let p = pairs(&items);
    assert_eq!(
        user(p[0]),
        "initialize a bun typescript project for a CLI tool called minsky"
    );
    assert!(p[0].assistant.contains(&Part::ToolCall {
        name: "terminal".into(),
        summary: "bun init -y".into()
    }));
    assert!(p[0].assistant.contains(&Part::ToolCall {
        name: "list_dir".into(),
        summary: "Listed current directory • 3 results".into()
    }));
    // `---` step separators never leak into text.
    for p in &p {
        for part in &p.assistant {
            if let Part::Text(t) = part {
                assert!(!t.starts_with("---") && !t.ends_with("---"), "{t:?}");
            }
        }
    }

    let items = assert_chunking_invariant::<Markdown>(&corpus_file(EXPECTED[3].0));
    let p = pairs(&items);
    assert_eq!(user(p[0]), "start working on task #008");
    assert!(p[0].assistant.contains(&Part::ToolCall {
        name: "read_file".into(),
        summary: "process/tasks/008-update-tasks-list-hide-done.md".into()
    }));
    assert!(p[0].assistant.contains(&Part::ToolCall {
        name: "codebase_search".into(),
        summary: "Searched codebase \"task #008\" • 25 results".into()
    }));
}

#[test]
fn specstory_v2_claude_code() {
    let items = assert_chunking_invariant::<Markdown>(&corpus_file(EXPECTED[4].0));
    let s = starts(&items)[0];
    assert_eq!(s.id, "e317d7b9-3289-4345-9c97-0bb1e3d998c8");
    assert_eq!(s.title, None, "a timestamp-only title is no title");
    assert!(has_meta(s, "agent", "Claude Code"));
    assert!(has_meta(
        s,
        "session_id",
        "e317d7b9-3289-4345-9c97-0bb1e3d998c8"
    ));
    let p = pairs(&items);
    assert!(user(p[0]).starts_with("The code in ./specstory-cli used to be in it's own repo."));
    assert_eq!(p[0].timestamp, Timestamp::parse("2026-01-16T16:48:38Z"));
    assert_eq!(p[0].model.as_deref(), Some("claude-opus-4-5-20251101"));
    assert!(
        matches!(&p[0].assistant[0], Part::Thinking(t) if t.starts_with("The user wants me to audit"))
    );
    assert!(p[0].assistant.contains(&Part::ToolCall {
        name: "Glob".into(),
        summary: "pattern .github/**/*".into()
    }));
    assert!(p[0].assistant.contains(&Part::ToolCall {
        name: "Read".into(),
        summary: "./specstory-cli/.github/workflows/release.yml".into()
    }));
    // Tool output is summarized, never dumped.
    for part in &p[0].assistant {
        if let Part::ToolResult(r) = part {
            assert!(r.chars().count() <= 201, "{r}");
        }
    }

    // ISO timestamps with milliseconds; headers inside fences ignored.
    let items = assert_chunking_invariant::<Markdown>(&corpus_file(EXPECTED[5].0));
    let p = pairs(&items);
    assert_eq!(p[0].timestamp, Timestamp::parse("2026-01-23T17:24:15.996Z"));
    assert!(
        p.iter()
            .all(|p| !user(p).starts_with("[Request interrupted"))
    );
    assert_eq!(skipped(&items, "interrupt-marker"), 2);

    // Sub-agent blocks are skipped and counted (python: 337 sidechain headers).
    let items = assert_chunking_invariant::<Markdown>(&corpus_file(EXPECTED[7].0));
    assert_eq!(skipped(&items, "sidechain-block"), 337);

    // The unanswered `/model` command and its stdout echo are not pairs.
    let items = assert_chunking_invariant::<Markdown>(&corpus_file(EXPECTED[8].0));
    assert_eq!(
        starts(&items)[0].created,
        Timestamp::parse("2026-07-02T15:28:22Z")
    );
    let p = pairs(&items);
    assert!(
        p.iter()
            .all(|p| !user(p).starts_with("<command-name>/model"))
    );
    assert_eq!(skipped(&items, "slash-command"), 1);
    assert_eq!(skipped(&items, "local-command-output"), 1);
}

#[test]
fn aider_history() {
    let items = assert_chunking_invariant::<Markdown>(&corpus_file(EXPECTED[0].0));
    let s = starts(&items);
    // The headerless start of the file is its own conversation.
    assert!(s[0].id.starts_with("aider-preamble-"));
    assert_eq!(s[0].created, None);
    assert_eq!(s[1].created, Timestamp::parse("2024-08-05T19:33:32Z"));
    assert_eq!(s[1].model.as_deref(), Some("claude-3-5-sonnet-20240620"));
    assert!(has_meta(s[1], "source_tool", "aider"));
    assert!(has_meta(s[1], "aider_version", "0.47.2-dev"));
    let ids: std::collections::BTreeSet<_> = s.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids.len(), s.len(), "conversation ids are unique");
    let p = pairs(&items);
    assert!(user(p[0]).starts_with("# Fix any errors below, if possible.\n\n## Running:"));
    assert_eq!(
        p[0].assistant,
        vec![Part::ToolResult("^C KeyboardInterrupt".into())]
    );
    assert_eq!(
        user(p[1]),
        "Use the Spinner instead of the inlined custom spinner"
    );
    assert_eq!(p[1].model.as_deref(), Some("claude-3-5-sonnet-20240620"));
    assert!(
        matches!(&p[1].assistant[0], Part::Text(t) if t.starts_with("Certainly!") && t.contains("<<<<<<< SEARCH"))
    );
    assert!(
        p[1].assistant
            .iter()
            .any(|x| matches!(x, Part::ToolResult(_)))
    );
    // No `/add`-style command became a pair.
    assert!(p.iter().all(|p| !(user(p).starts_with("/add ")
        && p.assistant.iter().all(|a| matches!(a, Part::ToolResult(_))))));
    // python: 269 commands in all, 245 of them in sessions that have a
    // prompt (a session without any prompt is dropped with its counts).
    assert_eq!(skipped(&items, "aider-command"), 245);
}

#[test]
fn not_a_transcript_is_rejected() {
    let path = corpus_file(NOT_A_TRANSCRIPT);
    assert!(sniff_file::<Markdown>(&path) < 30);
    let bytes = std::fs::read(&path).unwrap();
    let err = parse_all::<Markdown>(Input::from_bytes("x.md", bytes), 100).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotThisFormat);
}

#[test]
fn generated_raw_log_through_a_file() {
    let entries: Vec<RawLogEntry> = (1..=3)
        .map(|turn| RawLogEntry {
            timestamp: Timestamp::parse(&format!("2026-03-31T14:2{turn}:00Z")),
            model: Some("claude-opus-4-5".into()),
            turn,
            user: format!("question {turn}\n---\n**Assistant:** not a marker"),
            assistant: format!("answer {turn}\n```md\n---\n**Timestamp:** no\n```"),
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("chatmill-md-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("2026-03-31_session-a7f3.md");
    std::fs::write(
        &path,
        entries.iter().map(render_raw_log_entry).collect::<String>(),
    )
    .unwrap();
    assert!(sniff_file::<Markdown>(&path) >= 70);
    let items = assert_chunking_invariant::<Markdown>(&path);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(count(&items), (1, 3));
    let s = starts(&items)[0];
    assert_eq!(s.id, "2026-03-31_session-a7f3");
    assert!(has_meta(s, "source_tool", "chatmill"));
    for (p, e) in pairs(&items).into_iter().zip(&entries) {
        assert_eq!(user(p), e.user);
        assert_eq!(p.assistant, vec![Part::Text(e.assistant.clone())]);
        assert_eq!(p.timestamp, e.timestamp);
        assert_eq!(p.model, e.model);
    }
}

fn is_mine(path: &Path) -> bool {
    let in_dir = path
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|d| d == "markdown");
    in_dir && !path.ends_with(NOT_A_TRANSCRIPT.trim_start_matches("markdown/"))
}

#[test]
fn sniff_discipline_over_the_whole_corpus() {
    let mut mine = 0;
    for path in corpus_files() {
        let score = sniff_file::<Markdown>(&path);
        if is_mine(&path) {
            mine += 1;
            assert!(score >= 70, "{}: {score}", path.display());
        } else {
            assert!(score < 30, "{}: {score}", path.display());
        }
    }
    assert_eq!(mine, EXPECTED.len());
}

fn never_panics(name: &str, bytes: Vec<u8>) {
    for max in [1, 1000] {
        let _ = parse_all::<Markdown>(Input::from_bytes(name, bytes.clone()), max);
    }
}

#[test]
fn robustness() {
    for &(rel, ..) in EXPECTED {
        let bytes = std::fs::read(corpus_file(rel)).unwrap();
        let len = bytes.len();
        for cut in [1, 2, 10, 100, 1000, len / 3, len / 2, len - 1] {
            let mut b = bytes[..cut.min(len)].to_vec();
            // A cut may split a UTF-8 sequence; the host would have
            // normalized, but be safe either way.
            never_panics(rel, b.clone());
            b.truncate(b.len() / 2);
            never_panics(rel, b);
        }
    }
    never_panics("empty.md", Vec::new());
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for n in 0..50 {
        let bytes: Vec<u8> = (0..(n * 53 % 900))
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect();
        never_panics("random.md", bytes.clone());
        for prefix in [
            "---\n**Timestamp:** x\n",
            "<!-- Generated by SpecStory -->\n_**User**_\n",
            "# aider chat started at 2024-01-01 00:00:00\n#### ",
        ] {
            let mut framed = prefix.as_bytes().to_vec();
            framed.extend(&bytes);
            never_panics("random.md", framed);
        }
    }
    for doc in [
        "---\n**Timestamp:**\n**User:**",
        "---\n**Timestamp:** 1\n**Turn:** -5\n**User:**\n**Assistant:**\n---",
        "<!-- Generated by SpecStory -->\n_**Agent (x)**_\n<tool-use\n```\n_**User ()**_\n<think>",
        "<!-- Generated by SpecStory -->\n_**User**_\n```bash\nls\n---\n_**Assistant**_\n<details><summary>",
        "# aider chat started at \n####\n> \n```\n#### x\n> y",
    ] {
        never_panics("edge.md", doc.as_bytes().to_vec());
    }
}
