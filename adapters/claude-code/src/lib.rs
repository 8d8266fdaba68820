//! chatmill adapter for Claude Code session logs
//! (`~/.claude/projects/<encoded-cwd>/<session>.jsonl` and sub-agent
//! transcripts `<session>/subagents/agent-<id>.jsonl`).
//!
//! One file is one conversation. See [`session`] for how lines become turn
//! pairs (threads, replays, rewinds, compaction, split messages), [`classify`]
//! for what user text counts as a prompt, and [`tools`] for tool summaries.

pub mod classify;
pub mod line;
pub mod session;
pub mod tools;

use chatmill_adapter_sdk::text::{count_present, first_byte, head_str};
use chatmill_adapter_sdk::{
    Adapter, AdapterInfo, FormatInfo, Input, Options, ParseError, Session, batched,
};

pub struct ClaudeCode;

impl Adapter for ClaudeCode {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "claude-code".into(),
            name: "Claude Code".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![FormatInfo {
                id: "claude-code-jsonl".into(),
                description:
                    "Claude Code session log (JSONL, one session or sub-agent transcript per file)"
                        .into(),
                file_patterns: vec!["*.jsonl".into(), "agent-*.jsonl".into()],
            }],
        }
    }

    fn sniff(head: &[u8], file_name: &str) -> u8 {
        sniff(head, file_name)
    }

    fn open(input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Ok(batched(session::Reader::new(input)))
    }
}

/// Claude Code lines are JSON objects carrying the envelope keys
/// `parentUuid`/`uuid`/`sessionId`/`isSidechain`, typed `user`, `assistant`,
/// `summary`, `system`... A `.jsonl` name helps but is not required.
///
/// Qwen Code writes the same envelope around Gemini-style messages
/// (`{"role":"model","parts":[…]}`); Claude Code's messages always carry
/// `content`, so a message with `parts` or a `model` role is not ours.
pub fn sniff(head: &[u8], file_name: &str) -> u8 {
    if first_byte(head) != Some(b'{') {
        return 0;
    }
    let h = head_str(head);
    if gemini_style_message(&h) {
        return 0;
    }
    let envelope = count_present(
        &h,
        &[
            "\"parentUuid\"",
            "\"sessionId\"",
            "\"isSidechain\"",
            "\"userType\"",
        ],
    );
    let typed = count_present(
        &h,
        &[
            "\"type\":\"user\"",
            "\"type\":\"assistant\"",
            "\"type\":\"summary\"",
            "\"type\":\"file-history-snapshot\"",
            "\"type\":\"system\"",
        ],
    );
    let leaf = h.contains("\"leafUuid\"");
    let mut score: u8 = match (envelope, typed) {
        (e, t) if e >= 3 && t >= 1 => 90,
        (e, t) if e >= 2 && t >= 1 => 80,
        (_, t) if leaf && t >= 1 => 70,
        (e, _) if e >= 3 => 50,
        _ => 0,
    };
    if score > 0 && file_name.ends_with(".jsonl") {
        score = score.saturating_add(5);
    }
    score.min(100)
}

/// A message in the Gemini API's shape: a `model` role, or `parts` where
/// Claude Code puts `content`.
fn gemini_style_message(head: &str) -> bool {
    ["\"role\":\"model\"", "\"role\":\"user\",\"parts\""]
        .iter()
        .any(|k| head.contains(k))
}

chatmill_adapter_sdk::export_adapter!(ClaudeCode);
