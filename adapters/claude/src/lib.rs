//! chatmill adapter for Claude.ai exports.
//!
//! Reads the bulk `conversations.json` of the account data export (a JSON
//! array; the 2024 text-only vintage and the 2025+ `content[]` vintage) and
//! the single-conversation object the claude.ai web API returns, which
//! browser extensions save (a top-level object). Conversations are streamed
//! one array element at a time. The export's other files (`users.json`,
//! `projects.json`, `memories.json`) are not conversations: they sniff 0 and
//! `open` refuses them with `not-this-format`.
//!
//! Order and branches: when any message has a `parent_message_uuid`, the
//! tree is rebuilt and only the active branch is kept: the path from
//! `current_leaf_message_uuid` (when it names a message), else from the
//! newest leaf (latest `created_at`, ties: later in the array), up to the
//! root sentinel. Messages off that branch are counted
//! (`off-branch-message`). Without any parent pointer (2024 exports) the
//! messages are taken in `created_at` order (a stable sort, so equal times
//! keep the array order; array order as is when a time is missing): the 2024
//! array is not chronological. There, when several assistant messages
//! answer one prompt (a regeneration flattened into the list), only the
//! last is kept (`superseded-answer`).
//!
//! `content[]` is preferred over the flat `text` (which repeats thinking
//! inside the answer); see [`convert`] for the block and tag mapping.

mod convert;
use chatmill_adapter_sdk::lenient;
mod raw;
use chatmill_adapter_sdk::scan;

use std::collections::{BTreeMap, BTreeSet};

use chatmill_adapter_sdk::json::{Element, JsonStream};
use chatmill_adapter_sdk::{
    Adapter, AdapterInfo, Conversation, ConversationReader, ConversationStart, FormatInfo, Input,
    Location, Options, ParseError, Part, Session, Skips, TurnPair, batched,
};

use lenient::{LObj, fnv1a};
use raw::{RawConv, RawMessage};

pub struct Claude;

/// The web API's parent of a conversation's first message.
pub const ROOT_SENTINEL: &str = "00000000-0000-4000-8000-000000000000";

impl Adapter for Claude {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "claude".into(),
            name: "Claude.ai export".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![
                FormatInfo {
                    id: "claude-conversations-json".into(),
                    description: "Claude.ai data export conversations.json (2024 text \
                                  vintage and 2025+ content blocks)"
                        .into(),
                    file_patterns: vec!["conversations.json".into()],
                },
                FormatInfo {
                    id: "claude-web-conversation".into(),
                    description: "One Claude.ai conversation as the web API returns it \
                                  (saved by browser extensions)"
                        .into(),
                    file_patterns: vec!["*.json".into()],
                },
            ],
        }
    }

    fn sniff(head: &[u8], file_name: &str) -> u8 {
        sniff_score(head, file_name)
    }

    fn open(input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        let mut reader = Reader {
            stream: JsonStream::new(input, &[]),
            pending: None,
            seen_any: false,
        };
        // Read the first conversation now, so that a file of another format
        // is refused at `open`.
        reader.pending = reader.read_one()?;
        Ok(batched(reader))
    }
}

/// Confidence that `head` is a Claude.ai conversation export.
pub fn sniff_score(head: &[u8], file_name: &str) -> u8 {
    let s = scan::scan(head);
    if !matches!(s.first, Some(b'[' | b'{'))
        || s.multiple_values
        || s.garbage
        || !s.has_record("chat_messages")
        || s.has_record("mapping")
    {
        return 0;
    }
    let mut score: u32 = 60;
    if s.has_record("uuid") {
        score += 15;
    }
    if s.has("sender") {
        score += 10;
    }
    if ["current_leaf_message_uuid", "account", "name", "created_at"]
        .iter()
        .any(|k| s.has_record(k))
    {
        score += 5;
    }
    if file_name.eq_ignore_ascii_case("conversations.json") {
        score += 5;
    }
    score.min(98) as u8
}

struct Reader {
    stream: JsonStream<Input>,
    pending: Option<Conversation>,
    seen_any: bool,
}

impl Reader {
    fn read_one(&mut self) -> Result<Option<Conversation>, ParseError> {
        let Some(element) = self.stream.next_element()? else {
            return Ok(None);
        };
        let first = !self.seen_any;
        self.seen_any = true;
        parse_element(&element, first).map(Some)
    }
}

impl ConversationReader for Reader {
    fn next_conversation(&mut self) -> Result<Option<Conversation>, ParseError> {
        if let Some(c) = self.pending.take() {
            return Ok(Some(c));
        }
        self.read_one()
    }
}

fn location(element: &Element) -> Location {
    Location {
        byte_offset: Some(element.offset),
        record: Some(element.index),
        ..Location::default()
    }
}

fn parse_element(element: &Element, first: bool) -> Result<Conversation, ParseError> {
    let parsed = match element.text() {
        Some(text) => serde_json::from_str(text),
        None => serde_json::from_slice(&element.bytes),
    };
    let raw: LObj<RawConv> = parsed.map_err(|e| {
        ParseError::malformed(format!("conversation is not valid JSON: {e}")).at(location(element))
    })?;
    let Some(raw) = raw.0 else {
        let msg = "expected a Claude.ai conversation object";
        return Err(if first {
            ParseError::not_this_format(msg)
        } else {
            ParseError::malformed(msg)
        }
        .at(location(element)));
    };
    if raw.chat_messages.is_none() && first {
        return Err(ParseError::not_this_format(
            "the first record has no `chat_messages`: not a Claude.ai conversation \
             (users.json, projects.json and memories.json hold none)",
        )
        .at(location(element)));
    }
    let id = raw
        .uuid
        .get()
        .map(str::to_owned)
        .unwrap_or_else(|| format!("claude-{:016x}", fnv1a(&element.bytes)));
    let mut conv = Conversation {
        start: ConversationStart {
            id,
            title: raw.name.get().map(|t| t.trim().to_owned()),
            created: raw.created_at.0,
            updated: raw.updated_at.0,
            platform: "claude".into(),
            model: raw.model.get().map(str::to_owned),
            metadata: Vec::new(),
        },
        ..Conversation::default()
    };
    let project = raw
        .project
        .0
        .as_ref()
        .and_then(|p| p.name.get().or(p.uuid.get()))
        .or(raw.project_uuid.get());
    if let Some(p) = project {
        conv.start.metadata.push(("project".into(), p.to_owned()));
    }
    if let Some(s) = raw.summary.get() {
        conv.start
            .metadata
            .push(("summary".into(), s.trim().to_owned()));
    }
    let Some(messages) = &raw.chat_messages else {
        conv.skipped.add("not-a-conversation");
        return Ok(conv);
    };
    let messages: Vec<&RawMessage> = messages.0.iter().filter_map(|m| m.0.as_ref()).collect();
    let has_tree = messages
        .iter()
        .any(|m| m.parent_message_uuid.get().is_some());
    let ordered = if has_tree {
        active_branch(
            &messages,
            raw.current_leaf_message_uuid.get(),
            &mut conv.skipped,
        )
    } else {
        chronological(&messages)
    };
    conv.pairs = assemble(&ordered, !has_tree, &mut conv.skipped);
    Ok(conv)
}

/// Messages in `created_at` order (stable), or array order when a time is
/// missing.
fn chronological<'m, 'a>(messages: &[&'m RawMessage<'a>]) -> Vec<&'m RawMessage<'a>> {
    let mut out = messages.to_vec();
    if out.iter().all(|m| m.created_at.0.is_some()) {
        out.sort_by_key(|m| m.created_at.0);
    }
    out
}

/// The path root → active leaf of the message tree.
fn active_branch<'m, 'a>(
    messages: &[&'m RawMessage<'a>],
    current_leaf: Option<&str>,
    skipped: &mut Skips,
) -> Vec<&'m RawMessage<'a>> {
    let mut by_id: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, m) in messages.iter().enumerate() {
        if let Some(id) = m.uuid.get() {
            by_id.insert(id, i);
        }
    }
    let parents: BTreeSet<&str> = messages
        .iter()
        .filter_map(|m| m.parent_message_uuid.get())
        .collect();
    let leaf = match current_leaf.and_then(|l| by_id.get(l)) {
        Some(&i) => Some(i),
        None => {
            // Newest leaf: latest time, ties to the later array position.
            messages
                .iter()
                .enumerate()
                .filter(|(_, m)| m.uuid.get().is_none_or(|id| !parents.contains(id)))
                .max_by_key(|(i, m)| (m.created_at.0, *i))
                .map(|(i, _)| i)
        }
    };
    let mut path = Vec::new();
    let mut seen = BTreeSet::new();
    let mut cur = leaf;
    while let Some(i) = cur {
        if !seen.insert(i) {
            skipped.add("parent-cycle");
            break;
        }
        let Some(m) = messages.get(i) else { break };
        path.push(*m);
        cur = match m.parent_message_uuid.get() {
            None | Some(ROOT_SENTINEL) => None,
            Some(p) => match by_id.get(p) {
                Some(&j) => Some(j),
                None => {
                    skipped.add("broken-parent-link");
                    None
                }
            },
        };
    }
    for _ in path.len()..messages.len() {
        skipped.add("off-branch-message");
    }
    path.reverse();
    path
}

/// Human message → new pair; assistant messages → its answer.
/// `last_answer_wins`: a later assistant message replaces the earlier one
/// (flattened regenerations in tree-less exports).
fn assemble(
    messages: &[&RawMessage<'_>],
    last_answer_wins: bool,
    skipped: &mut Skips,
) -> Vec<TurnPair> {
    let mut pairs: Vec<TurnPair> = Vec::new();
    // Whether the last pair is open for answers (its prompt was kept).
    let mut open = false;
    let mut answered: bool = false;
    for m in messages {
        let mut sub: Vec<&'static str> = Vec::new();
        let assistant = m.sender.or_empty() == "assistant";
        let parts = convert::message_parts(m, assistant, &mut |r| sub.push(r));
        for r in sub {
            skipped.add(r);
        }
        match m.sender.or_empty() {
            "human" => {
                let user = parts;
                if user.iter().all(Part::is_empty) {
                    skipped.add("empty-prompt");
                    open = false;
                    continue;
                }
                let mut metadata = Vec::new();
                if let Some(id) = m.uuid.get() {
                    metadata.push(("message_id".to_owned(), id.to_owned()));
                }
                pairs.push(TurnPair {
                    index: 0,
                    timestamp: m.created_at.0,
                    model: None,
                    user,
                    assistant: Vec::new(),
                    metadata,
                });
                open = true;
                answered = false;
            }
            "assistant" => {
                let Some(pair) = pairs.last_mut().filter(|_| open) else {
                    skipped.add("answer-without-prompt");
                    continue;
                };
                if parts.is_empty() {
                    skipped.add("empty-answer");
                    continue;
                }
                if answered && last_answer_wins {
                    skipped.add("superseded-answer");
                    pair.assistant.clear();
                }
                if pair.timestamp.is_none() {
                    pair.timestamp = m.created_at.0;
                }
                pair.assistant.extend(parts);
                answered = true;
            }
            _ => skipped.add("unknown-sender"),
        }
    }
    pairs
}

#[cfg(test)]
mod tests;

chatmill_adapter_sdk::export_adapter!(Claude);
