//! One JSONL line, deserialized borrowing from the line's bytes, and turned
//! into an owned [`Entry`]: the events it contributes to the conversation.

use std::borrow::Cow;

use chatmill_adapter_sdk::{Part, Timestamp};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::classify::{UserText, classify};
use crate::tools;

#[derive(Deserialize)]
pub struct RawLine<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub subtype: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub uuid: Option<Cow<'a, str>>,
    #[serde(rename = "parentUuid", borrow, default)]
    pub parent_uuid: Option<Cow<'a, str>>,
    #[serde(rename = "sessionId", borrow, default)]
    pub session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub cwd: Option<Cow<'a, str>>,
    #[serde(rename = "gitBranch", borrow, default)]
    pub git_branch: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub version: Option<Cow<'a, str>>,
    #[serde(rename = "agentId", borrow, default)]
    pub agent_id: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    pub is_sidechain: Option<bool>,
    #[serde(rename = "isMeta", default)]
    pub is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    pub is_compact_summary: Option<bool>,
    #[serde(rename = "isApiErrorMessage", default)]
    pub is_api_error: Option<bool>,
    #[serde(borrow, default)]
    pub message: Option<Message<'a>>,
    // Titles.
    #[serde(borrow, default)]
    pub summary: Option<Cow<'a, str>>,
    #[serde(rename = "leafUuid", borrow, default)]
    pub leaf_uuid: Option<Cow<'a, str>>,
    #[serde(rename = "customTitle", borrow, default)]
    pub custom_title: Option<Cow<'a, str>>,
    #[serde(rename = "aiTitle", borrow, default)]
    pub ai_title: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub attachment: Option<AttachmentLine<'a>>,
}

#[derive(Deserialize)]
pub struct Message<'a> {
    #[serde(borrow, default)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
pub struct AttachmentLine<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    /// `queued_command`: what the user typed while the assistant worked.
    #[serde(borrow, default)]
    pub prompt: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(borrow, default)]
    source: Option<ImageSource<'a>>,
    #[serde(borrow, default)]
    title: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ImageSource<'a> {
    #[serde(borrow, default)]
    media_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    url: Option<Cow<'a, str>>,
}

/// A prompt: the user side of a new pair.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub parts: Vec<Part>,
    /// `/name` when the prompt is a slash command or `!` shell escape.
    pub command: Option<String>,
}

/// What a line contributes, in order.
#[derive(Debug, Clone)]
pub enum Event {
    Prompt(Prompt),
    /// A block of an assistant API message; `key` identifies it for the
    /// dedup of messages written over several lines.
    Assistant {
        part: Part,
        key: Option<u64>,
    },
    /// Assistant-side material that is not the model's own words: tool
    /// results, command output, interruption markers.
    Side(Part),
    Skip(&'static str),
}

/// One line with a place in the conversation.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    pub line: u64,
    pub uuid: Option<String>,
    pub parent: Option<String>,
    pub timestamp: Option<Timestamp>,
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
    pub model: Option<String>,
    pub events: Vec<Event>,
    /// A user or assistant line (not bookkeeping).
    pub is_message: bool,
    /// The sub-agents this line started (`Task` calls).
    pub tasks: Vec<TaskCall>,
}

/// A `Task` (or `Agent`) tool call: what a sub-agent run was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCall {
    /// The short label Claude Code shows for the run.
    pub description: Option<String>,
    /// The run's first prompt.
    pub prompt: String,
    pub subagent_type: Option<String>,
}

#[derive(Deserialize)]
struct TaskInput<'a> {
    #[serde(borrow, default)]
    description: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    prompt: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    subagent_type: Option<Cow<'a, str>>,
}

/// The sub-agent call of a tool-use block, if it is one.
fn task_call(name: &str, input: Option<&RawValue>) -> Option<TaskCall> {
    if name != "Task" && name != "Agent" {
        return None;
    }
    let input: TaskInput<'_> = serde_json::from_str(input?.get()).ok()?;
    Some(TaskCall {
        description: nonempty(&input.description),
        prompt: nonempty(&input.prompt)?,
        subagent_type: nonempty(&input.subagent_type),
    })
}

impl Entry {
    pub fn is_prompt(&self) -> bool {
        self.events.iter().any(|e| matches!(e, Event::Prompt(_)))
    }
}

/// FNV-1a, for block identities (stable across runs and platforms).
pub fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.as_bytes().iter().chain(std::iter::once(&0xff)) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn nonempty(s: &Option<Cow<'_, str>>) -> Option<String> {
    s.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn image_part(b: &Block<'_>) -> Part {
    let src = b.source.as_ref();
    Part::Attachment {
        name: b.title.as_deref().unwrap_or("image").to_string(),
        media_type: src.and_then(|s| nonempty(&s.media_type)),
        uri: src.and_then(|s| nonempty(&s.url)),
    }
}

fn decode_blocks<'a>(content: Option<&'a RawValue>) -> Result<Vec<Block<'a>>, ()> {
    let Some(raw) = content else {
        return Ok(Vec::new());
    };
    let s = raw.get();
    if s.starts_with('"') {
        let text: Cow<'a, str> = serde_json::from_str(s).map_err(|_| ())?;
        Ok(vec![Block {
            kind: Some(Cow::Borrowed("text")),
            text: Some(text),
            thinking: None,
            id: None,
            name: None,
            input: None,
            content: None,
            is_error: None,
            source: None,
            title: None,
        }])
    } else if s.starts_with('[') {
        serde_json::from_str(s).map_err(|_| ())
    } else if s == "null" {
        Ok(Vec::new())
    } else {
        Err(())
    }
}

/// The events of a `user` line.
pub fn user_events(raw: &RawLine<'_>, events: &mut Vec<Event>) {
    if raw.is_compact_summary == Some(true) {
        events.push(Event::Skip("compact-summary"));
        return;
    }
    let meta = raw.is_meta == Some(true);
    let content = raw.message.as_ref().and_then(|m| m.content);
    let Ok(blocks) = decode_blocks(content) else {
        events.push(Event::Skip("malformed-content"));
        return;
    };
    let mut prompt_parts: Vec<Part> = Vec::new();
    let mut attachments: Vec<Part> = Vec::new();
    let mut command: Option<String> = None;
    let mut meta_skipped = false;
    for b in &blocks {
        match b.kind.as_deref() {
            Some("tool_result") => {
                let summary = tools::result_summary(b.content, b.is_error == Some(true));
                events.push(Event::Side(Part::ToolResult(summary)));
            }
            Some("text") => {
                let text = b.text.as_deref().unwrap_or("");
                if meta {
                    // Slash-command expansions, caveats: not what the user typed.
                    meta_skipped = true;
                    continue;
                }
                match classify(text) {
                    UserText::Prose(t) => prompt_parts.push(Part::Text(t)),
                    UserText::Command { name, text } => {
                        command = Some(name);
                        prompt_parts.push(Part::Text(text));
                    }
                    UserText::Shell(text) => {
                        command = Some("!".to_string());
                        prompt_parts.push(Part::Text(text));
                    }
                    UserText::CommandOutput(t) => events.push(Event::Side(Part::Other {
                        kind: "command-output".into(),
                        text: t,
                    })),
                    UserText::Interrupted(t) => events.push(Event::Side(Part::Other {
                        kind: "interrupted".into(),
                        text: t,
                    })),
                    UserText::Skip(reason) => events.push(Event::Skip(reason)),
                }
            }
            Some("image") | Some("document") => {
                if meta {
                    meta_skipped = true;
                } else {
                    attachments.push(image_part(b));
                }
            }
            _ => events.push(Event::Skip("unknown-block")),
        }
    }
    if meta_skipped {
        events.push(Event::Skip("meta-message"));
    }
    if prompt_parts.is_empty() {
        if !attachments.is_empty() {
            events.push(Event::Skip("prompt-without-text"));
        }
        if blocks.is_empty() {
            events.push(Event::Skip("empty-message"));
        }
        return;
    }
    prompt_parts.extend(attachments);
    events.push(Event::Prompt(Prompt {
        parts: prompt_parts,
        command,
    }));
}

/// The events of an `assistant` line, and the sub-agents it started.
pub fn assistant_events(
    raw: &RawLine<'_>,
    cwd: Option<&str>,
    events: &mut Vec<Event>,
    tasks: &mut Vec<TaskCall>,
) {
    let Some(msg) = raw.message.as_ref() else {
        events.push(Event::Skip("empty-message"));
        return;
    };
    if raw.is_api_error == Some(true) || msg.model.as_deref() == Some("<synthetic>") {
        events.push(Event::Skip("synthetic-message"));
        return;
    }
    let Ok(blocks) = decode_blocks(msg.content) else {
        events.push(Event::Skip("malformed-content"));
        return;
    };
    let mid = msg.id.as_deref();
    for b in &blocks {
        let kind = b.kind.as_deref().unwrap_or("");
        let (part, identity): (Part, Option<String>) = match kind {
            "text" => {
                let t = b.text.as_deref().unwrap_or("");
                if t.trim().is_empty() {
                    events.push(Event::Skip("empty-text"));
                    continue;
                }
                (Part::Text(t.to_string()), Some(t.to_string()))
            }
            "thinking" => {
                let t = b.thinking.as_deref().unwrap_or("");
                if t.trim().is_empty() {
                    events.push(Event::Skip("empty-thinking"));
                    continue;
                }
                (Part::Thinking(t.to_string()), Some(t.to_string()))
            }
            "redacted_thinking" => {
                events.push(Event::Skip("redacted-thinking"));
                continue;
            }
            "tool_use" | "server_tool_use" => {
                let name = b.name.as_deref().unwrap_or("tool").to_string();
                tasks.extend(task_call(&name, b.input));
                let summary = tools::call_summary(&name, b.input, cwd);
                let identity = match b.id.as_deref() {
                    Some(id) => id.to_string(),
                    None => format!("{name}\u{1f}{}", b.input.map(RawValue::get).unwrap_or("")),
                };
                (Part::ToolCall { name, summary }, Some(identity))
            }
            "image" => (image_part(b), None),
            _ => {
                events.push(Event::Skip("unknown-block"));
                continue;
            }
        };
        let key = match (mid, identity) {
            (Some(mid), Some(ident)) => Some(fnv(&[mid, kind, &ident])),
            _ => None,
        };
        events.push(Event::Assistant { part, key });
    }
    if blocks.is_empty() {
        events.push(Event::Skip("empty-message"));
    }
}

/// The events of an `attachment` line: a queued prompt (typed while the
/// assistant was working) is a prompt; everything else is bookkeeping.
pub fn attachment_events(raw: &RawLine<'_>, events: &mut Vec<Event>) {
    let att = raw.attachment.as_ref();
    if att.and_then(|a| a.kind.as_deref()) == Some("queued_command") {
        // The prompt is a string, or a block list (text and images).
        let blocks = decode_blocks(att.and_then(|a| a.prompt)).unwrap_or_default();
        let mut parts = Vec::new();
        let mut attachments = Vec::new();
        for b in &blocks {
            match b.kind.as_deref() {
                Some("text") => {
                    if let UserText::Prose(t) = classify(b.text.as_deref().unwrap_or("")) {
                        parts.push(Part::Text(t));
                    }
                }
                Some("image") | Some("document") => attachments.push(image_part(b)),
                _ => {}
            }
        }
        if !parts.is_empty() {
            parts.extend(attachments);
            events.push(Event::Prompt(Prompt {
                parts,
                command: None,
            }));
            return;
        }
    }
    events.push(Event::Skip("attachment-line"));
}

/// Builds the entry of a parsed line; `last_cwd` stands in for a missing `cwd`
/// (to show tool paths relative to it).
pub fn entry(raw: &RawLine<'_>, line: u64, last_cwd: Option<&str>) -> Entry {
    let kind = raw.kind.as_deref().unwrap_or("");
    let cwd = nonempty(&raw.cwd);
    let tool_cwd: Option<String> = cwd.clone().or_else(|| last_cwd.map(str::to_string));
    let mut e = Entry {
        line,
        uuid: nonempty(&raw.uuid),
        parent: nonempty(&raw.parent_uuid),
        timestamp: raw.timestamp.as_deref().and_then(Timestamp::parse),
        git_branch: nonempty(&raw.git_branch),
        model: None,
        events: Vec::new(),
        is_message: false,
        tasks: Vec::new(),
        cwd,
    };
    match kind {
        "user" => {
            e.is_message = true;
            user_events(raw, &mut e.events);
        }
        "assistant" => {
            e.is_message = true;
            e.model = raw
                .message
                .as_ref()
                .and_then(|m| nonempty(&m.model))
                .filter(|m| m != "<synthetic>");
            assistant_events(raw, tool_cwd.as_deref(), &mut e.events, &mut e.tasks);
        }
        "attachment" => attachment_events(raw, &mut e.events),
        "system" => e.events.push(Event::Skip("system-line")),
        "progress" => e.events.push(Event::Skip("progress-line")),
        "summary" | "custom-title" | "ai-title" => e.events.push(Event::Skip("title-line")),
        "file-history-snapshot" => e.events.push(Event::Skip("file-history-snapshot-line")),
        "queue-operation" => e.events.push(Event::Skip("queue-operation-line")),
        "pr-link" | "agent-name" | "last-prompt" | "permission-mode" | "agent-setting"
        | "bridge-session" | "worktree-state" | "mode" | "tag" => {
            e.events.push(Event::Skip("metadata-line"))
        }
        "" => e.events.push(Event::Skip("untyped-line")),
        _ => e.events.push(Event::Skip("unknown-line-type")),
    }
    e
}
