//! chatmill adapter for ChatGPT data exports.
//!
//! Reads `conversations.json` (a top-level array, or `{"conversations": [...]}`)
//! and the 2026 shards `conversations-000.json`, `conversations-001.json`, …
//! (each shard is an independent file of the same shape; a single
//! conversation object is accepted too). Conversations are streamed one array
//! element at a time.
//!
//! Per conversation the branch the user last saw is rebuilt by walking
//! `parent` up from `current_node` (regenerations and edited prompts: only
//! that path survives). When `current_node` is missing or not in `mapping`,
//! the newest leaf is used instead: among the nodes with no child present in
//! `mapping`, the one with the latest message time (ties: the greatest node
//! id), counted as `current-node-not-found`. Missing parents end the walk
//! (`broken-parent-link`), cycles are cut (`parent-cycle`); messages off
//! the kept branch are counted (`off-branch-message`).
//!
//! Hidden nodes are not turns (counted): the empty root system node, custom
//! instructions (`is_user_system_message`, `user_editable_context`), memory
//! context (`model_editable_context`), anything flagged
//! `is_visually_hidden_from_conversation`. Every `content_type` is
//! classified in [`convert`]; unknown ones are skipped and counted.

mod convert;
use chatmill_adapter_sdk::lenient;
mod raw;
use chatmill_adapter_sdk::scan;

use std::collections::{BTreeMap, BTreeSet};

use chatmill_adapter_sdk::json::{Element, JsonStream};
use chatmill_adapter_sdk::{
    Adapter, AdapterInfo, Conversation, ConversationReader, ConversationStart, FormatInfo, Input,
    Location, Options, ParseError, Session, Skips, Timestamp, TurnPair, batched,
};

use convert::{Piece, classify};
use lenient::{CowStr, LObj, fnv1a};
use raw::{RawConv, RawNode};

pub struct ChatGpt;

/// Object keys whose array value holds the conversations.
const WRAPPER_KEYS: &[&str] = &["conversations"];

impl Adapter for ChatGpt {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "chatgpt".into(),
            name: "ChatGPT data export".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![FormatInfo {
                id: "chatgpt-conversations-json".into(),
                description: "ChatGPT export conversations.json, or its 2026 shards \
                              conversations-000.json, conversations-001.json, …"
                    .into(),
                file_patterns: vec!["conversations.json".into(), "conversations-*.json".into()],
            }],
        }
    }

    fn sniff(head: &[u8], file_name: &str) -> u8 {
        sniff_score(head, file_name)
    }

    fn open(input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        let mut reader = Reader {
            stream: JsonStream::new(input, WRAPPER_KEYS),
            pending: None,
            seen_any: false,
        };
        // Read the first conversation now, so that a file of another format
        // is refused at `open` instead of at the first batch.
        reader.pending = reader.read_one()?;
        Ok(batched(reader))
    }
}

/// Confidence that `head` is a ChatGPT export (see the module docs).
pub fn sniff_score(head: &[u8], file_name: &str) -> u8 {
    let s = scan::scan(head);
    if !matches!(s.first, Some(b'[' | b'{')) || s.multiple_values || s.garbage {
        return 0;
    }
    let name = file_name.to_ascii_lowercase();
    let named = name.starts_with("conversations") && name.ends_with(".json");
    if !s.has_record("mapping") {
        // An empty array named like an export: plausible, but not enough.
        if named && s.record_keys.is_empty() && s.first == Some(b'[') {
            return 20;
        }
        return 0;
    }
    if s.has_record("chat_messages") {
        return 0;
    }
    let mut score: u32 = 55;
    if s.has("parent") && s.has("children") {
        score += 15;
    }
    if s.has("author") || s.has("content_type") {
        score += 10;
    }
    if ["current_node", "conversation_id", "create_time", "title"]
        .iter()
        .any(|k| s.has_record(k))
    {
        score += 10;
    }
    if named {
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

/// One array element → one conversation.
fn parse_element(element: &Element, first: bool) -> Result<Conversation, ParseError> {
    let parsed = match element.text() {
        Some(text) => serde_json::from_str(text),
        None => serde_json::from_slice(&element.bytes),
    };
    let raw: LObj<RawConv> = parsed.map_err(|e| {
        ParseError::malformed(format!("conversation is not valid JSON: {e}")).at(location(element))
    })?;
    let Some(raw) = raw.0 else {
        let msg = "expected a ChatGPT conversation object";
        return Err(if first {
            ParseError::not_this_format(msg)
        } else {
            ParseError::malformed(msg)
        }
        .at(location(element)));
    };
    let looks_like_chatgpt = raw.mapping.0.is_some()
        || raw.current_node.get().is_some()
        || raw.conversation_id.get().is_some();
    if !looks_like_chatgpt && first {
        return Err(ParseError::not_this_format(
            "the first record has no `mapping`: not a ChatGPT conversation",
        )
        .at(location(element)));
    }
    let id = raw
        .conversation_id
        .get()
        .or(raw.id.get())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("chatgpt-{:016x}", fnv1a(&element.bytes)));
    let mut conv = Conversation {
        start: ConversationStart {
            id,
            title: raw.title.get().map(|t| t.trim().to_owned()),
            created: raw.create_time.0,
            updated: raw.update_time.0,
            platform: "chatgpt".into(),
            model: raw.default_model_slug.get().map(str::to_owned),
            metadata: Vec::new(),
        },
        ..Conversation::default()
    };
    if let Some(g) = raw.gizmo_id.get() {
        conv.start.metadata.push(("gizmo_id".into(), g.to_owned()));
        if g.starts_with("g-p-") {
            conv.start.metadata.push(("project".into(), g.to_owned()));
        }
    }
    if raw.is_archived.0 {
        conv.start
            .metadata
            .push(("archived".into(), "true".to_owned()));
    }
    if !looks_like_chatgpt {
        conv.skipped.add("not-a-conversation");
        return Ok(conv);
    }
    let Some(mapping) = &raw.mapping.0 else {
        conv.skipped.add("missing-mapping");
        return Ok(conv);
    };
    let path = active_path(mapping, raw.current_node.get(), &mut conv.skipped);
    let pieces: Vec<Piece> = path
        .iter()
        .filter_map(|node| node.message.0.as_ref())
        .flat_map(classify)
        .collect();
    conv.pairs = assemble(pieces, &mut conv.skipped);
    Ok(conv)
}

type Mapping<'a> = BTreeMap<CowStr<'a>, LObj<RawNode<'a>>>;

/// The nodes from the root to the active leaf, in conversation order.
fn active_path<'m, 'a>(
    mapping: &'m Mapping<'a>,
    current: Option<&str>,
    skipped: &mut Skips,
) -> Vec<&'m RawNode<'a>> {
    let node = |id: &str| mapping.get(id).and_then(|n| n.0.as_ref());
    let leaf = match current.filter(|c| node(c).is_some()) {
        Some(c) => Some(c.to_owned()),
        None => {
            if !mapping.is_empty() {
                skipped.add("current-node-not-found");
            }
            newest_leaf(mapping)
        }
    };
    let mut path = Vec::new();
    let mut seen = BTreeSet::new();
    let mut cur = leaf;
    while let Some(id) = cur {
        if !seen.insert(id.clone()) {
            skipped.add("parent-cycle");
            break;
        }
        let Some(n) = node(&id) else {
            skipped.add("broken-parent-link");
            break;
        };
        path.push(n);
        cur = n.parent.get().map(str::to_owned);
    }
    let with_message = mapping
        .values()
        .filter(|n| n.0.as_ref().is_some_and(|n| n.message.0.is_some()))
        .count();
    let on_path = path.iter().filter(|n| n.message.0.is_some()).count();
    for _ in on_path..with_message {
        skipped.add("off-branch-message");
    }
    path.reverse();
    path
}

/// The leaf (no child present in `mapping`) whose message is newest; ties
/// go to the greatest id, so the choice never depends on map order.
fn newest_leaf(mapping: &Mapping<'_>) -> Option<String> {
    let mut best: Option<(Option<Timestamp>, &str)> = None;
    for (id, n) in mapping {
        let Some(n) = n.0.as_ref() else { continue };
        let has_child = n
            .children
            .0
            .iter()
            .filter_map(|c| c.get())
            .any(|c| mapping.get(c).is_some_and(|x| x.0.is_some()));
        if has_child {
            continue;
        }
        let time = n
            .message
            .0
            .as_ref()
            .and_then(|m| m.create_time.0.or(m.update_time.0));
        let key = (time, &**id);
        if best.is_none_or(|b| key > b) {
            best = Some(key);
        }
    }
    best.map(|(_, id)| id.to_owned())
}

/// Groups classified messages into turn pairs: a user prompt opens a pair,
/// everything after it (assistant and tool messages) is its answer.
fn assemble(pieces: Vec<Piece>, skipped: &mut Skips) -> Vec<TurnPair> {
    let mut pairs: Vec<TurnPair> = Vec::new();
    let mut answered_at: Option<Timestamp> = None;
    for piece in pieces {
        match piece {
            Piece::Skip(reason) => skipped.add(reason),
            Piece::User { parts, time, id } => {
                if let Some(last) = pairs.last_mut()
                    && last.timestamp.is_none()
                {
                    last.timestamp = answered_at;
                }
                answered_at = None;
                let mut metadata = Vec::new();
                if let Some(id) = id {
                    metadata.push(("message_id".to_owned(), id));
                }
                pairs.push(TurnPair {
                    index: 0,
                    timestamp: time,
                    model: None,
                    user: parts,
                    assistant: Vec::new(),
                    metadata,
                });
            }
            Piece::Answer {
                parts,
                model,
                time,
                interrupted,
            } => {
                let Some(pair) = pairs.last_mut() else {
                    skipped.add("answer-without-prompt");
                    continue;
                };
                if answered_at.is_none() {
                    answered_at = time;
                }
                pair.assistant.extend(parts);
                if model.is_some() {
                    pair.model = model;
                }
                if interrupted {
                    set_meta(&mut pair.metadata, "interrupted", "true");
                }
            }
        }
    }
    if let Some(last) = pairs.last_mut()
        && last.timestamp.is_none()
    {
        last.timestamp = answered_at;
    }
    pairs
}

fn set_meta(meta: &mut Vec<(String, String)>, key: &str, value: &str) {
    if !meta.iter().any(|(k, _)| k == key) {
        meta.push((key.to_owned(), value.to_owned()));
    }
}

#[cfg(test)]
mod tests;

chatmill_adapter_sdk::export_adapter!(ChatGpt);
