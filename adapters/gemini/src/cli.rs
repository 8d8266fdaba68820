//! Gemini CLI sessions: `~/.gemini/tmp/<project>/chats/session-*.json` (one
//! object with `messages[]`) and the 0.40+ `session-*.jsonl` form (a header
//! line, message lines, `{"$set": {...}}` patch lines). One file is one
//! conversation, id = `sessionId`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;

use chatmill_adapter_sdk::lines::LineReader;
use chatmill_adapter_sdk::text::{file_stem, summarize};
use chatmill_adapter_sdk::{
    Conversation, ConversationReader, ConversationStart, ErrorKind, Location, ParseError, Part,
    Skips, Timestamp, TurnPair,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::tools;

/// The session object (whole-file form) or header line (JSONL form).
#[derive(Deserialize, Default)]
pub struct Header<'a> {
    #[serde(rename = "sessionId", borrow, default)]
    pub session_id: Option<Cow<'a, str>>,
    #[serde(rename = "projectHash", borrow, default)]
    pub project_hash: Option<Cow<'a, str>>,
    #[serde(rename = "startTime", borrow, default)]
    pub start_time: Option<Cow<'a, str>>,
    #[serde(rename = "lastUpdated", borrow, default)]
    pub last_updated: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub summary: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub meta: Option<HeaderMeta<'a>>,
    #[serde(borrow, default)]
    pub messages: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize, Default)]
pub struct HeaderMeta<'a> {
    #[serde(borrow, default)]
    pub model: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    parts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    thoughts: Option<Vec<Thought<'a>>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(rename = "toolCalls", borrow, default)]
    tool_calls: Option<Vec<ToolCall<'a>>>,
}

#[derive(Deserialize)]
struct Thought<'a> {
    #[serde(borrow, default)]
    subject: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    description: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ToolCall<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(rename = "displayName", borrow, default)]
    display_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
    #[serde(rename = "resultDisplay", borrow, default)]
    result_display: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

/// A content part (`{text}`, `{thought: true, text}`, `{inlineData}`...).
#[derive(Deserialize)]
struct ContentPart<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(rename = "inlineData", borrow, default)]
    inline_data: Option<Blob<'a>>,
    #[serde(rename = "fileData", borrow, default)]
    file_data: Option<Blob<'a>>,
}

#[derive(Deserialize)]
struct Blob<'a> {
    #[serde(rename = "mimeType", borrow, default)]
    mime_type: Option<Cow<'a, str>>,
    #[serde(rename = "fileUri", borrow, default)]
    file_uri: Option<Cow<'a, str>>,
    #[serde(rename = "displayName", borrow, default)]
    display_name: Option<Cow<'a, str>>,
}

/// `functionResponse.response.output` inside a tool call's `result`.
#[derive(Deserialize)]
struct ResultItem<'a> {
    #[serde(rename = "functionResponse", borrow, default)]
    function_response: Option<FunctionResponse<'a>>,
}

#[derive(Deserialize)]
struct FunctionResponse<'a> {
    #[serde(borrow, default)]
    response: Option<BTreeMap<Cow<'a, str>, &'a RawValue>>,
}

/// A `$set` patch line of the JSONL form.
#[derive(Deserialize)]
struct Patch<'a> {
    #[serde(rename = "$set", borrow, default)]
    set: Option<Header<'a>>,
}

/// One message, converted.
#[derive(Debug, Clone)]
struct Msg {
    id: Option<String>,
    role: Role,
    timestamp: Option<Timestamp>,
    model: Option<String>,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Model,
    /// `info`, `error`, `warning`... with the skip reason.
    Skip(&'static str),
}

fn owned(s: &Option<Cow<'_, str>>) -> Option<String> {
    s.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Text and attachments of `content`/`parts` (a string or a part list).
fn content_parts(raw: Option<&RawValue>, out: &mut Vec<Part>, skips: &mut Skips) {
    let Some(raw) = raw else {
        return;
    };
    let s = raw.get();
    if s.starts_with('"') {
        if let Ok(t) = serde_json::from_str::<Cow<'_, str>>(s)
            && !t.trim().is_empty()
        {
            out.push(Part::Text(t.into_owned()));
        }
        return;
    }
    if !s.starts_with('[') {
        if s != "null" {
            skips.add("unknown-content");
        }
        return;
    }
    let Ok(parts) = serde_json::from_str::<Vec<ContentPart<'_>>>(s) else {
        skips.add("unknown-content");
        return;
    };
    for p in parts {
        if let Some(t) = p.text.as_deref().filter(|t| !t.trim().is_empty()) {
            if p.thought == Some(true) {
                out.push(Part::Thinking(t.to_string()));
            } else {
                out.push(Part::Text(t.to_string()));
            }
        } else if let Some(b) = p.inline_data.as_ref().or(p.file_data.as_ref()) {
            out.push(Part::Attachment {
                name: owned(&b.display_name).unwrap_or_else(|| "file".to_string()),
                media_type: owned(&b.mime_type),
                uri: owned(&b.file_uri),
            });
        } else if p.text.is_none() {
            skips.add("unknown-part");
        }
    }
}

fn tool_result(call: &ToolCall<'_>) -> Option<String> {
    let error = matches!(call.status.as_deref(), Some("error" | "cancelled"));
    let display = call
        .result_display
        .and_then(|r| serde_json::from_str::<Cow<'_, str>>(r.get()).ok())
        .filter(|s| !s.trim().is_empty());
    let text = display.map(Cow::into_owned).or_else(|| {
        let items: Vec<ResultItem<'_>> = serde_json::from_str(call.result?.get()).ok()?;
        items.into_iter().find_map(|i| {
            let resp = i.function_response?.response?;
            ["output", "error", "content", "result"]
                .iter()
                .find_map(|k| {
                    let raw = resp.get(*k)?;
                    serde_json::from_str::<Cow<'_, str>>(raw.get())
                        .map(Cow::into_owned)
                        .ok()
                        .or_else(|| Some(raw.get().to_string()))
                })
        })
    });
    match text {
        Some(t) => {
            let summary = summarize(&t, tools::RESULT_SUMMARY_MAX);
            Some(if error {
                format!("error: {summary}")
            } else {
                summary
            })
        }
        // No output recorded: the status alone (`success`, `error`...).
        None => owned(&call.status),
    }
}

fn convert(m: Message<'_>, skips: &mut Skips) -> Msg {
    let role = match m.kind.as_deref() {
        Some("user") => Role::User,
        Some("gemini" | "model" | "assistant") => Role::Model,
        Some("info") => Role::Skip("info-message"),
        Some("error") => Role::Skip("error-message"),
        Some("warning") => Role::Skip("warning-message"),
        _ => Role::Skip("unknown-message-type"),
    };
    let mut parts = Vec::new();
    if role == Role::Model {
        for t in m.thoughts.iter().flatten() {
            let text = match (t.subject.as_deref(), t.description.as_deref()) {
                (Some(s), Some(d)) if !s.trim().is_empty() => format!("{}: {}", s.trim(), d.trim()),
                (_, Some(d)) => d.trim().to_string(),
                (Some(s), None) => s.trim().to_string(),
                (None, None) => String::new(),
            };
            if !text.is_empty() {
                parts.push(Part::Thinking(text));
            }
        }
    }
    if role != Role::Skip("unknown-message-type") {
        content_parts(m.content, &mut parts, skips);
        content_parts(m.parts, &mut parts, skips);
    }
    if role == Role::Model {
        for call in m.tool_calls.iter().flatten() {
            let name = owned(&call.name)
                .or_else(|| owned(&call.display_name))
                .unwrap_or_else(|| "tool".to_string());
            let summary = tools::call_summary(&name, call.args);
            parts.push(Part::ToolCall { name, summary });
            if let Some(r) = tool_result(call) {
                parts.push(Part::ToolResult(r));
            }
        }
    }
    Msg {
        id: owned(&m.id),
        role,
        timestamp: m.timestamp.as_deref().and_then(Timestamp::parse),
        model: owned(&m.model),
        parts,
    }
}

/// Session facts, merged from the header and `$set` patches.
#[derive(Default)]
struct Facts {
    session_id: Option<String>,
    project_hash: Option<String>,
    start: Option<Timestamp>,
    updated: Option<Timestamp>,
    kind: Option<String>,
    summary: Option<String>,
    model: Option<String>,
}

impl Facts {
    fn merge(&mut self, h: &Header<'_>) {
        if let Some(v) = owned(&h.session_id) {
            self.session_id = Some(v);
        }
        if let Some(v) = owned(&h.project_hash) {
            self.project_hash = Some(v);
        }
        if let Some(t) = h.start_time.as_deref().and_then(Timestamp::parse) {
            self.start = Some(t);
        }
        if let Some(t) = h.last_updated.as_deref().and_then(Timestamp::parse) {
            self.updated = Some(t);
        }
        if let Some(v) = owned(&h.kind) {
            self.kind = Some(v);
        }
        if let Some(v) = owned(&h.summary) {
            self.summary = Some(v);
        }
        if let Some(v) = h.meta.as_ref().and_then(|m| owned(&m.model)) {
            self.model = Some(v);
        }
    }
}

/// Messages in order; a message written again with the same id replaces
/// the earlier copy (the JSONL form appends updates).
#[derive(Default)]
struct Messages {
    list: Vec<Msg>,
    by_id: BTreeMap<String, usize>,
}

impl Messages {
    fn push(&mut self, m: Msg, skips: &mut Skips) {
        if let Some(id) = &m.id {
            if let Some(&i) = self.by_id.get(id)
                && let Some(slot) = self.list.get_mut(i)
            {
                *slot = m;
                skips.add("superseded-message-copy");
                return;
            }
            self.by_id.insert(id.clone(), self.list.len());
        }
        self.list.push(m);
    }
}

fn ingest(raw: &RawValue, msgs: &mut Messages, skips: &mut Skips) {
    match serde_json::from_str::<Message<'_>>(raw.get()) {
        Ok(m) => {
            let m = convert(m, skips);
            msgs.push(m, skips);
        }
        Err(_) => skips.add("malformed-message"),
    }
}

fn build(file_name: &str, facts: Facts, msgs: Messages, mut skips: Skips) -> Conversation {
    let mut pairs: Vec<TurnPair> = Vec::new();
    let mut conv_model: Option<String> = None;
    let mut first_ts: Option<Timestamp> = None;
    let mut last_ts: Option<Timestamp> = None;
    for m in msgs.list {
        if let Some(t) = m.timestamp {
            first_ts = Some(first_ts.map_or(t, |f| f.min(t)));
            last_ts = Some(last_ts.map_or(t, |l| l.max(t)));
        }
        match m.role {
            Role::Skip(reason) => skips.add(reason),
            Role::User => {
                if !m
                    .parts
                    .iter()
                    .any(|p| matches!(p, Part::Text(t) if !t.trim().is_empty()))
                {
                    skips.add("user-message-without-text");
                    continue;
                }
                let mut metadata = Vec::new();
                if let Some(id) = &m.id {
                    metadata.push(("message_id".to_string(), id.clone()));
                }
                pairs.push(TurnPair {
                    index: 0,
                    timestamp: m.timestamp,
                    model: None,
                    user: m.parts,
                    assistant: Vec::new(),
                    metadata,
                });
            }
            Role::Model => {
                let Some(p) = pairs.last_mut() else {
                    skips.add("answer-without-prompt");
                    continue;
                };
                if p.timestamp.is_none() {
                    p.timestamp = m.timestamp;
                }
                if p.model.is_none() {
                    p.model = m.model.clone();
                }
                if conv_model.is_none() {
                    conv_model = m.model.clone();
                }
                if m.parts.is_empty() {
                    skips.add("empty-answer");
                }
                p.assistant.extend(m.parts);
            }
        }
    }
    let id = facts
        .session_id
        .clone()
        .unwrap_or_else(|| file_stem(file_name).to_string());
    let mut metadata = vec![
        ("session_id".to_string(), id.clone()),
        ("source_tool".to_string(), "gemini-cli".to_string()),
    ];
    if let Some(h) = facts.project_hash {
        metadata.push(("project_hash".to_string(), h));
    }
    if let Some(k) = facts.kind {
        metadata.push(("session_kind".to_string(), k));
    }
    Conversation {
        start: ConversationStart {
            id,
            title: facts.summary,
            created: facts.start.or(first_ts),
            updated: facts.updated.or(last_ts),
            platform: "gemini".into(),
            model: conv_model.or(facts.model),
            metadata,
        },
        pairs,
        skipped: skips,
    }
}

/// Whole-file form: one JSON object.
pub struct JsonSession<R> {
    input: Option<(R, String)>,
}

impl<R: Read> JsonSession<R> {
    pub fn new(input: R, file_name: String) -> Self {
        Self {
            input: Some((input, file_name)),
        }
    }
}

impl<R: Read> ConversationReader for JsonSession<R> {
    fn next_conversation(&mut self) -> Result<Option<Conversation>, ParseError> {
        let Some((mut input, name)) = self.input.take() else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        input.read_to_end(&mut bytes).map_err(|e| {
            ParseError::new(ErrorKind::Internal, format!("reading input failed: {e}"))
        })?;
        let header: Header<'_> = serde_json::from_slice(&bytes).map_err(|e| {
            let kind = if e.is_eof() || e.is_syntax() {
                ErrorKind::Malformed
            } else {
                ErrorKind::NotThisFormat
            };
            ParseError::new(kind, format!("not a Gemini CLI session object: {e}")).at(Location {
                line: Some(e.line() as u64),
                ..Location::default()
            })
        })?;
        let Some(raw_msgs) = header.messages.as_ref() else {
            return Err(ParseError::not_this_format("no `messages` array")
                .at(Location::default().with_pointer("/messages")));
        };
        let mut facts = Facts::default();
        facts.merge(&header);
        let mut skips = Skips::default();
        let mut msgs = Messages::default();
        for raw in raw_msgs {
            ingest(raw, &mut msgs, &mut skips);
        }
        Ok(Some(build(&name, facts, msgs, skips)))
    }
}

/// JSONL form: header line, message lines, `$set` patches.
pub struct JsonlSession<R> {
    input: Option<(R, String)>,
}

impl<R: Read> JsonlSession<R> {
    pub fn new(input: R, file_name: String) -> Self {
        Self {
            input: Some((input, file_name)),
        }
    }
}

/// What a JSONL line is, judged by its keys.
#[derive(Deserialize)]
struct LineProbe<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(rename = "$set", borrow, default)]
    set: Option<&'a RawValue>,
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<&'a RawValue>,
}

impl<R: Read> ConversationReader for JsonlSession<R> {
    fn next_conversation(&mut self) -> Result<Option<Conversation>, ParseError> {
        let Some((input, name)) = self.input.take() else {
            return Ok(None);
        };
        let mut lines = LineReader::new(input).with_max_line(64 * 1024 * 1024);
        let mut facts = Facts::default();
        let mut skips = Skips::default();
        let mut msgs = Messages::default();
        let mut valid = 0u64;
        let mut first_bad = None;
        while let Some(line) = lines.next_line()? {
            if line.too_long {
                skips.add("line-too-long");
                continue;
            }
            if line.bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let probe: LineProbe<'_> = match serde_json::from_slice(line.bytes) {
                Ok(p) => p,
                Err(_) => {
                    skips.add(if line.unterminated {
                        "partial-last-line"
                    } else {
                        "malformed-line"
                    });
                    first_bad.get_or_insert(line.number);
                    continue;
                }
            };
            valid += 1;
            if probe.set.is_some() {
                if let Ok(p) = serde_json::from_slice::<Patch<'_>>(line.bytes)
                    && let Some(h) = &p.set
                {
                    facts.merge(h);
                }
                skips.add("patch-line");
            } else if probe.kind.is_some() {
                if let Ok(raw) = serde_json::from_slice::<&RawValue>(line.bytes) {
                    ingest(raw, &mut msgs, &mut skips);
                }
            } else if probe.session_id.is_some() {
                match serde_json::from_slice::<Header<'_>>(line.bytes) {
                    Ok(h) => {
                        facts.merge(&h);
                        for raw in h.messages.iter().flatten() {
                            ingest(raw, &mut msgs, &mut skips);
                        }
                    }
                    Err(_) => skips.add("malformed-line"),
                }
            } else {
                skips.add("unknown-line");
            }
        }
        if valid == 0 {
            return match first_bad {
                None => Ok(None),
                Some(l) => {
                    Err(ParseError::not_this_format("no line is a JSON object")
                        .at(Location::line(l)))
                }
            };
        }
        Ok(Some(build(&name, facts, msgs, skips)))
    }
}
