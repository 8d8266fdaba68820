//! Messages, content blocks, requests and responses of the OpenAI Chat
//! Completions, OpenAI Responses and Anthropic Messages APIs, mapped to
//! typed parts.

use chatmill_adapter_sdk::text::summarize;
use chatmill_adapter_sdk::{Part, Timestamp};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::util::{
    CALL_SUMMARY, RESULT_SUMMARY, Str, is_object, lead, raw_array, raw_str, raw_time,
    summarize_args,
};

/// Reasons for things skipped while mapping one record.
#[derive(Debug, Default)]
pub struct Skips(pub Vec<&'static str>);

impl Skips {
    pub fn add(&mut self, reason: &'static str) {
        self.0.push(reason);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
    Other,
}

fn role_of(s: Option<&str>) -> Option<Role> {
    Some(match s? {
        "system" | "developer" => Role::System,
        "user" | "human" => Role::User,
        "assistant" | "model" | "ai" | "bot" => Role::Assistant,
        "tool" | "function" | "ipython" => Role::Tool,
        _ => Role::Other,
    })
}

/// One message of a request, normalized.
#[derive(Debug)]
pub struct Msg {
    pub role: Role,
    pub parts: Vec<Part>,
}

/// One content block / Responses-API item. Every field is optional and
/// lenient; the `type` decides which ones matter.
#[derive(Deserialize, Default)]
struct Block<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Str<'a>,
    #[serde(default, borrow)]
    text: Str<'a>,
    #[serde(default, borrow)]
    thinking: Str<'a>,
    #[serde(default, borrow)]
    name: Str<'a>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    output: Option<&'a RawValue>,
    #[serde(default, borrow)]
    image_url: Option<&'a RawValue>,
    #[serde(default, borrow)]
    source: Option<&'a RawValue>,
    #[serde(default, borrow)]
    file: Option<&'a RawValue>,
    #[serde(default, borrow)]
    input_audio: Option<&'a RawValue>,
    #[serde(default, borrow)]
    title: Str<'a>,
    #[serde(default, borrow)]
    filename: Str<'a>,
    #[serde(default, borrow)]
    refusal: Str<'a>,
    #[serde(default, borrow)]
    summary: Option<&'a RawValue>,
    #[serde(default, borrow)]
    action: Option<&'a RawValue>,
    #[serde(default, borrow)]
    queries: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct Source<'a> {
    #[serde(default, borrow)]
    media_type: Str<'a>,
    #[serde(default, borrow)]
    url: Str<'a>,
    #[serde(default, borrow)]
    file_id: Str<'a>,
    #[serde(default, borrow)]
    filename: Str<'a>,
    #[serde(default, borrow)]
    format: Str<'a>,
    #[serde(default, borrow)]
    query: Str<'a>,
}

fn parse_source(raw: Option<&RawValue>) -> Source<'_> {
    match raw {
        Some(r) if lead(r) == b'{' => serde_json::from_str(r.get()).unwrap_or_default(),
        Some(r) if lead(r) == b'"' => Source {
            url: Str(raw_str(r).map(Into::into)),
            ..Source::default()
        },
        _ => Source::default(),
    }
}

/// An attachment for an image/file URL: `data:` URLs give only their media
/// type (never the bytes).
fn url_attachment(name: &str, url: Option<&str>, media_type: Option<&str>) -> Part {
    let mut media = media_type.map(str::to_owned);
    let mut uri = url.map(str::to_owned);
    if let Some(u) = url
        && let Some(rest) = u.strip_prefix("data:")
    {
        let mt = rest.split([';', ',']).next().unwrap_or("");
        if !mt.is_empty() && media.is_none() {
            media = Some(mt.to_owned());
        }
        uri = None;
    }
    Part::Attachment {
        name: name.to_owned(),
        media_type: media,
        uri,
    }
}

/// The readable text of a tool result / error value: a string, the `text`
/// of blocks, or the compact JSON.
pub fn text_of(raw: &RawValue) -> String {
    match lead(raw) {
        b'"' => raw_str(raw).unwrap_or_default(),
        b'[' => {
            let mut out = String::new();
            for item in raw_array(raw).unwrap_or_default() {
                let piece = if lead(item) == b'{' {
                    let b: Block<'_> = serde_json::from_str(item.get()).unwrap_or_default();
                    b.text.owned().unwrap_or_default()
                } else {
                    text_of(item)
                };
                if !piece.is_empty() {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&piece);
                }
            }
            out
        }
        b'{' => {
            #[derive(Deserialize, Default)]
            struct T<'a> {
                #[serde(default, borrow)]
                text: Str<'a>,
                #[serde(default, borrow)]
                message: Str<'a>,
                #[serde(default, borrow)]
                content: Option<&'a RawValue>,
            }
            let t: T<'_> = serde_json::from_str(raw.get()).unwrap_or_default();
            if let Some(s) = t.text.get().or(t.message.get()) {
                return s.to_owned();
            }
            if let Some(c) = t.content {
                return text_of(c);
            }
            raw.get().to_owned()
        }
        b'n' => String::new(),
        _ => raw.get().to_owned(),
    }
}

fn tool_result(raw: Option<&RawValue>) -> Part {
    Part::ToolResult(summarize(
        &raw.map(text_of).unwrap_or_default(),
        RESULT_SUMMARY,
    ))
}

/// The parts of a `content` value: a string, an array of blocks, or one block.
pub fn content_parts(raw: Option<&RawValue>, skips: &mut Skips) -> Vec<Part> {
    let mut out = Vec::new();
    let Some(raw) = raw else { return out };
    match lead(raw) {
        b'"' => {
            if let Some(s) = raw_str(raw) {
                out.push(Part::Text(s));
            }
        }
        b'[' => match raw_array(raw) {
            Some(items) => {
                for item in items {
                    if lead(item) == b'"' {
                        if let Some(s) = raw_str(item) {
                            out.push(Part::Text(s));
                        }
                    } else {
                        block_parts(item, skips, &mut out);
                    }
                }
            }
            None => skips.add("malformed-content"),
        },
        b'{' => block_parts(raw, skips, &mut out),
        b'n' => {}
        _ => skips.add("malformed-content"),
    }
    out.retain(|p| !p.is_empty());
    out
}

/// One content block or Responses-API item.
fn block_parts(raw: &RawValue, skips: &mut Skips, out: &mut Vec<Part>) {
    let Ok(b) = serde_json::from_str::<Block<'_>>(raw.get()) else {
        skips.add("malformed-content");
        return;
    };
    let kind = b.kind.get().unwrap_or("");
    match kind {
        "text" | "input_text" | "output_text" | "" if b.text.get().is_some() => {
            out.push(Part::Text(b.text.owned().unwrap_or_default()));
        }
        "thinking" => {
            if let Some(t) = b.thinking.owned() {
                out.push(Part::Thinking(t));
            }
        }
        "redacted_thinking" => skips.add("redacted-thinking"),
        "reasoning" => {
            let text = b.summary.map(text_of).unwrap_or_default();
            if text.trim().is_empty() {
                skips.add("reasoning-without-summary");
            } else {
                out.push(Part::Thinking(text));
            }
        }
        "tool_use" | "server_tool_use" | "mcp_tool_use" => out.push(Part::ToolCall {
            name: b.name.owned().unwrap_or_else(|| "tool".into()),
            summary: b.input.map(|i| summarize_args(i.get())).unwrap_or_default(),
        }),
        "function_call" | "custom_tool_call" => out.push(Part::ToolCall {
            name: b.name.owned().unwrap_or_else(|| "function".into()),
            summary: b
                .arguments
                .or(b.input)
                .map(|a| summarize_args(a.get()))
                .unwrap_or_default(),
        }),
        "web_search_call" | "file_search_call" | "code_interpreter_call" | "computer_call" => {
            let name = kind.trim_end_matches("_call").to_owned();
            let src = parse_source(b.action);
            let summary = src
                .query
                .owned()
                .or_else(|| src.url.owned())
                .or_else(|| b.queries.map(text_of))
                .unwrap_or_default();
            out.push(Part::ToolCall {
                name,
                summary: summarize(&summary, CALL_SUMMARY),
            });
        }
        k if k == "tool_result"
            || k.ends_with("_tool_result")
            || k == "function_call_output"
            || k == "custom_tool_call_output" =>
        {
            out.push(tool_result(b.content.or(b.output)));
        }
        "image_url" => {
            let src = parse_source(b.image_url);
            out.push(url_attachment("image", src.url.get(), None));
        }
        "image" | "input_image" => {
            let src = parse_source(b.source);
            let url = src.url.get().map(str::to_owned).or_else(|| {
                let s = parse_source(b.image_url);
                s.url.owned()
            });
            let media = src.media_type.get();
            out.push(url_attachment(
                "image",
                url.as_deref().or(src.file_id.get()),
                media,
            ));
        }
        "document" | "file" | "input_file" => {
            let src = parse_source(b.source.or(b.file));
            let name = b
                .title
                .owned()
                .or_else(|| b.filename.owned())
                .or_else(|| src.filename.owned())
                .unwrap_or_else(|| "document".into());
            out.push(url_attachment(
                &name,
                src.url.get().or(src.file_id.get()),
                src.media_type.get(),
            ));
        }
        "input_audio" => {
            let src = parse_source(b.input_audio);
            out.push(Part::Attachment {
                name: "audio".into(),
                media_type: src.format.get().map(|f| format!("audio/{f}")),
                uri: None,
            });
        }
        "refusal" => {
            if let Some(r) = b.refusal.owned() {
                out.push(Part::Other {
                    kind: "refusal".into(),
                    text: r,
                });
            }
        }
        "message" => out.extend(content_parts(b.content, skips)),
        _ => skips.add("unknown-content-part"),
    }
}

#[derive(Deserialize, Default)]
struct MsgRaw<'a> {
    #[serde(default, borrow)]
    role: Str<'a>,
    #[serde(rename = "type", default, borrow)]
    kind: Str<'a>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    tool_calls: Option<&'a RawValue>,
    #[serde(default, borrow)]
    function_call: Option<&'a RawValue>,
    #[serde(default, borrow)]
    refusal: Str<'a>,
    #[serde(default, borrow)]
    reasoning_content: Str<'a>,
    #[serde(default, borrow)]
    reasoning: Str<'a>,
}

#[derive(Deserialize, Default)]
struct FnCall<'a> {
    #[serde(default, borrow)]
    name: Str<'a>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, borrow)]
    function: Option<&'a RawValue>,
}

fn fn_call_part(raw: &RawValue) -> Option<Part> {
    let call: FnCall<'_> = serde_json::from_str(raw.get()).ok()?;
    // Chat Completions `tool_calls[]` nest the call under `function`.
    if let Some(f) = call.function.filter(|f| lead(f) == b'{') {
        return fn_call_part(f);
    }
    Some(Part::ToolCall {
        name: call.name.owned().unwrap_or_else(|| "function".into()),
        summary: call
            .arguments
            .map(|a| summarize_args(a.get()))
            .unwrap_or_default(),
    })
}

/// One message (or Responses-API input/output item).
pub fn message(raw: &RawValue, skips: &mut Skips) -> Option<Msg> {
    if lead(raw) != b'{' {
        skips.add("malformed-message");
        return None;
    }
    let Ok(m) = serde_json::from_str::<MsgRaw<'_>>(raw.get()) else {
        skips.add("malformed-message");
        return None;
    };
    let kind = m.kind.get().unwrap_or("message");
    let role = match role_of(m.role.get()) {
        Some(r) => r,
        // Responses-API items without a role.
        None => match kind {
            "function_call_output" | "custom_tool_call_output" => Role::Tool,
            "message" => Role::Other,
            _ => Role::Assistant,
        },
    };
    if kind != "message" && m.role.get().is_none() {
        let mut parts = Vec::new();
        block_parts(raw, skips, &mut parts);
        return Some(Msg { role, parts });
    }
    let mut parts = Vec::new();
    if let Some(r) = m.reasoning_content.owned().or_else(|| m.reasoning.owned()) {
        parts.push(Part::Thinking(r));
    }
    if role == Role::Tool {
        parts.push(tool_result(m.content));
    } else {
        parts.extend(content_parts(m.content, skips));
    }
    if let Some(calls) = m.tool_calls.and_then(raw_array) {
        parts.extend(calls.into_iter().filter_map(fn_call_part));
    }
    if let Some(f) = m.function_call.filter(|f| lead(f) == b'{') {
        parts.extend(fn_call_part(f));
    }
    if let Some(r) = m.refusal.owned() {
        parts.push(Part::Other {
            kind: "refusal".into(),
            text: r,
        });
    }
    parts.retain(|p| !p.is_empty());
    Some(Msg { role, parts })
}

/// What a request contributes to a pair.
#[derive(Debug, Default)]
pub struct Request {
    /// The last real user prompt (not tool results); empty when there is none.
    pub user: Vec<Part>,
    /// Assistant-side parts already in the request after that prompt (an
    /// agent loop's earlier tool calls and results, a prefill).
    pub prefix: Vec<Part>,
    pub system: Option<String>,
    pub model: Option<String>,
    pub time: Option<Timestamp>,
}

#[derive(Deserialize, Default)]
struct ReqRaw<'a> {
    #[serde(default, borrow)]
    body: Option<&'a RawValue>,
    #[serde(default, borrow)]
    model: Str<'a>,
    #[serde(default, borrow)]
    messages: Option<&'a RawValue>,
    #[serde(default, borrow)]
    system: Option<&'a RawValue>,
    #[serde(default, borrow)]
    instructions: Option<&'a RawValue>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    prompt: Option<&'a RawValue>,
    #[serde(default, borrow)]
    timestamp: Option<&'a RawValue>,
    #[serde(rename = "startTime", default, borrow)]
    start_time: Option<&'a RawValue>,
    #[serde(default, borrow)]
    datetime_utc: Option<&'a RawValue>,
    #[serde(default, borrow)]
    created_at: Option<&'a RawValue>,
}

/// Maps a request object (Chat Completions, Responses, Anthropic Messages,
/// a Langfuse `input`, an `llm` log's `prompt`). `None` when `raw` carries
/// no prompt at all.
pub fn request(raw: &RawValue, skips: &mut Skips) -> Option<Request> {
    match lead(raw) {
        b'"' => {
            let text = raw_str(raw)?;
            return Some(Request {
                user: vec![Part::Text(text)],
                ..Request::default()
            });
        }
        b'[' => {
            // A bare message list (Langfuse `input` can be one).
            let mut req = Request::default();
            from_messages(raw, skips, &mut req);
            return Some(req);
        }
        b'{' => {}
        _ => return None,
    }
    let r: ReqRaw<'_> = serde_json::from_str(raw.get()).ok()?;
    let time = raw_time(r.timestamp)
        .or_else(|| raw_time(r.start_time))
        .or_else(|| raw_time(r.datetime_utc))
        .or_else(|| raw_time(r.created_at));
    // A traffic-capture wrapper: `{timestamp, url, headers, body: {...}}`.
    if r.messages.is_none() && r.input.is_none() && r.prompt.is_none() && is_object(r.body) {
        let mut inner = request(r.body?, skips)?;
        inner.time = inner.time.or(time);
        return Some(inner);
    }
    let mut req = Request {
        model: r.model.owned(),
        time,
        ..Request::default()
    };
    if let Some(m) = r.messages {
        from_messages(m, skips, &mut req);
    } else if let Some(input) = r.input {
        match lead(input) {
            b'"' => req.user = raw_str(input).map(Part::Text).into_iter().collect(),
            b'[' => from_messages(input, skips, &mut req),
            // Langfuse `input: {messages: [...]}`.
            b'{' => {
                let inner = request(input, skips)?;
                req.user = inner.user;
                req.prefix = inner.prefix;
                req.system = inner.system;
            }
            _ => return None,
        }
    } else if let Some(p) = r.prompt {
        let text = match lead(p) {
            b'[' => text_of(p),
            _ => raw_str(p).unwrap_or_default(),
        };
        if !text.trim().is_empty() {
            req.user = vec![Part::Text(text)];
        }
    } else {
        return None;
    }
    let system = r
        .system
        .or(r.instructions)
        .map(text_of)
        .filter(|s| !s.trim().is_empty());
    if system.is_some() {
        req.system = system;
    }
    Some(req)
}

/// The last real user prompt of a message list and what follows it.
fn from_messages(raw: &RawValue, skips: &mut Skips, req: &mut Request) {
    let Some(items) = raw_array(raw) else {
        skips.add("malformed-messages");
        return;
    };
    let msgs: Vec<Msg> = items
        .into_iter()
        .filter_map(|m| message(m, skips))
        .collect();
    if req.system.is_none() {
        req.system = msgs
            .iter()
            .find(|m| m.role == Role::System)
            .map(|m| parts_text(&m.parts))
            .filter(|s| !s.trim().is_empty());
    }
    let is_prompt = |m: &Msg| {
        m.role == Role::User
            && m.parts
                .iter()
                .any(|p| !matches!(p, Part::ToolResult(_)) && !p.is_empty())
    };
    let Some(last) = msgs.iter().rposition(is_prompt) else {
        return;
    };
    let mut msgs = msgs.into_iter().skip(last);
    if let Some(m) = msgs.next() {
        req.user = m.parts;
    }
    for m in msgs {
        match m.role {
            Role::System | Role::Other => skips.add("message-after-prompt"),
            _ => req.prefix.extend(m.parts),
        }
    }
}

fn parts_text(parts: &[Part]) -> String {
    let mut out = String::new();
    for p in parts {
        if let Part::Text(t) = p {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(t);
        }
    }
    out
}

/// What a response contributes to a pair.
#[derive(Debug, Default)]
pub struct Response {
    pub parts: Vec<Part>,
    pub model: Option<String>,
    pub time: Option<Timestamp>,
    pub id: Option<String>,
    pub finish_reason: Option<String>,
    pub status_code: Option<String>,
}

#[derive(Deserialize, Default)]
struct RespRaw<'a> {
    #[serde(default, borrow)]
    id: Str<'a>,
    #[serde(default, borrow)]
    object: Str<'a>,
    #[serde(rename = "type", default, borrow)]
    kind: Str<'a>,
    #[serde(default, borrow)]
    model: Str<'a>,
    #[serde(default, borrow)]
    created: Option<&'a RawValue>,
    #[serde(default, borrow)]
    created_at: Option<&'a RawValue>,
    #[serde(default, borrow)]
    timestamp: Option<&'a RawValue>,
    #[serde(default, borrow)]
    choices: Option<&'a RawValue>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    output: Option<&'a RawValue>,
    #[serde(default, borrow)]
    role: Str<'a>,
    #[serde(default, borrow)]
    stop_reason: Str<'a>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
    #[serde(default, borrow)]
    body: Option<&'a RawValue>,
    #[serde(default, borrow)]
    status_code: Str<'a>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
    #[serde(default, borrow)]
    text: Str<'a>,
}

#[derive(Deserialize, Default)]
struct Choice<'a> {
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
    #[serde(default, borrow)]
    finish_reason: Str<'a>,
    #[serde(default, borrow)]
    text: Str<'a>,
}

fn error_part(raw: &RawValue) -> Option<Part> {
    let text = text_of(raw);
    if text.trim().is_empty() || text.trim() == "null" {
        return None;
    }
    Some(Part::Other {
        kind: "error".into(),
        text: summarize(&text, RESULT_SUMMARY),
    })
}

/// Maps a response object (Chat Completions, Responses, Anthropic Messages,
/// a batch-output `response`, an Anthropic batch `result`, a Langfuse
/// `output`, an `llm` log's response string). `None` when `raw` is not a
/// response.
pub fn response(raw: &RawValue, skips: &mut Skips) -> Option<Response> {
    match lead(raw) {
        b'"' => {
            return Some(Response {
                parts: raw_str(raw).map(Part::Text).into_iter().collect(),
                ..Response::default()
            });
        }
        b'{' => {}
        _ => return None,
    }
    let r: RespRaw<'_> = serde_json::from_str(raw.get()).ok()?;
    let mut resp = Response {
        model: r.model.owned(),
        time: raw_time(r.created)
            .or_else(|| raw_time(r.created_at))
            .or_else(|| raw_time(r.timestamp)),
        id: r.id.owned(),
        status_code: r.status_code.owned(),
        ..Response::default()
    };
    if let Some(body) = r.body.filter(|b| lead(b) == b'{') {
        // Batch output `{status_code, request_id, body}` / capture wrappers.
        let mut inner = response(body, skips).unwrap_or_default();
        inner.status_code = resp.status_code.or(inner.status_code);
        inner.time = inner.time.or(resp.time);
        if inner.parts.is_empty()
            && let Some(e) = r.error.and_then(error_part)
        {
            inner.parts.push(e);
        }
        return Some(inner);
    }
    if let Some(choices) = r.choices {
        let list = raw_array(choices).unwrap_or_default();
        if list.len() > 1 {
            for _ in 1..list.len() {
                skips.add("extra-choice");
            }
        }
        if let Some(first) = list.first() {
            let c: Choice<'_> = serde_json::from_str(first.get()).unwrap_or_default();
            resp.finish_reason = c.finish_reason.owned();
            if let Some(m) = c.message.and_then(|m| message(m, skips)) {
                resp.parts = m.parts;
            } else if let Some(t) = c.text.owned() {
                resp.parts.push(Part::Text(t));
            }
        }
        return Some(resp);
    }
    if r.object.is("response")
        || (r.output.is_some() && r.content.is_none() && r.role.get().is_none())
    {
        if let Some(items) = r.output.and_then(raw_array) {
            for item in items {
                if let Some(m) = message(item, skips) {
                    resp.parts.extend(m.parts);
                }
            }
        } else if let Some(out) = r.output.filter(|o| lead(o) == b'{' || lead(o) == b'"') {
            // A Langfuse `output` one level down.
            if let Some(inner) = response(out, skips) {
                resp.parts = inner.parts;
            }
        }
        if resp.parts.is_empty()
            && let Some(e) = r.error.and_then(error_part)
        {
            resp.parts.push(e);
        }
        return Some(resp);
    }
    if r.kind.is("message") || r.role.get().is_some() || r.content.is_some() {
        resp.finish_reason = r.stop_reason.owned();
        if let Some(m) = message(raw, skips) {
            resp.parts = m.parts;
        }
        return Some(resp);
    }
    if let Some(msg) = r.message.filter(|m| lead(m) == b'{') {
        // Anthropic batch result `{type: succeeded, message}`.
        let mut inner = response(msg, skips)?;
        inner.time = inner.time.or(resp.time);
        return Some(inner);
    }
    if let Some(t) = r.text.owned() {
        resp.parts.push(Part::Text(t));
        return Some(resp);
    }
    if let Some(e) = r.error.and_then(error_part) {
        resp.parts.push(e);
        return Some(resp);
    }
    if r.kind
        .get()
        .is_some_and(|k| matches!(k, "errored" | "canceled" | "expired"))
    {
        resp.parts.push(Part::Other {
            kind: "error".into(),
            text: r.kind.owned().unwrap_or_default(),
        });
        return Some(resp);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn last_real_user_prompt_and_what_follows() {
        let mut skips = Skips::default();
        let req = request(
            &raw(
                r#"{"model": "m", "system": [{"type": "text", "text": "Be brief."}], "messages": [
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [{"type": "text", "text": "read the file"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "src/totals.rs"}}]},
                {"role": "user", "content": [{"type": "tool_result", "content": "fn main() {}"}]}
            ]}"#,
            ),
            &mut skips,
        )
        .unwrap();
        assert_eq!(req.user, vec![Part::Text("read the file".into())]);
        assert_eq!(
            req.prefix,
            vec![
                Part::ToolCall {
                    name: "Read".into(),
                    summary: "src/totals.rs".into()
                },
                Part::ToolResult("fn main() {}".into()),
            ]
        );
        assert_eq!(req.system.as_deref(), Some("Be brief."));
        assert_eq!(req.model.as_deref(), Some("m"));
        assert!(skips.0.is_empty());
    }

    #[test]
    fn openai_parts_tool_calls_and_images() {
        let mut skips = Skips::default();
        let req = request(
            &raw(r#"{"messages": [{"role": "developer", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "what is this"},
                  {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                  {"type": "weird"}]}]}"#),
            &mut skips,
        )
        .unwrap();
        assert_eq!(req.system.as_deref(), Some("sys"));
        assert_eq!(
            req.user[1],
            Part::Attachment {
                name: "image".into(),
                media_type: Some("image/png".into()),
                uri: None
            }
        );
        assert_eq!(skips.0, vec!["unknown-content-part"]);

        let resp = response(
            &raw(
                r#"{"id": "chatcmpl-1", "object": "chat.completion", "created": 1729730156, "model": "gpt-4o-2024-08-06",
                "choices": [{"message": {"role": "assistant", "content": null,
                  "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}}]},
                  "finish_reason": "tool_calls"}, {"message": {"content": "x"}}]}"#,
            ),
            &mut skips,
        )
        .unwrap();
        assert_eq!(
            resp.parts,
            vec![Part::ToolCall {
                name: "get_weather".into(),
                summary: "Paris".into()
            }]
        );
        assert_eq!(resp.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(resp.model.as_deref(), Some("gpt-4o-2024-08-06"));
        assert_eq!(resp.id.as_deref(), Some("chatcmpl-1"));
        assert!(skips.0.contains(&"extra-choice"));
    }

    #[test]
    fn anthropic_and_responses_shapes() {
        let mut skips = Skips::default();
        let resp = response(
            &raw(
                r#"{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Hi"},
                  {"type": "tool_use", "name": "Bash", "input": {"command": "ls -la"}}], "stop_reason": "tool_use"}"#,
            ),
            &mut skips,
        )
        .unwrap();
        assert_eq!(
            resp.parts,
            vec![
                Part::Thinking("hmm".into()),
                Part::Text("Hi".into()),
                Part::ToolCall {
                    name: "Bash".into(),
                    summary: "ls -la".into()
                }
            ]
        );
        assert_eq!(resp.finish_reason.as_deref(), Some("tool_use"));

        let resp = response(
            &raw(
                r#"{"id": "resp_1", "object": "response", "created_at": 1741476542, "model": "gpt-5",
                "output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
                  {"type": "web_search_call", "action": {"query": "rust wasm"}},
                  {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Answer"}]}]}"#,
            ),
            &mut skips,
        )
        .unwrap();
        assert_eq!(
            resp.parts,
            vec![
                Part::Thinking("think".into()),
                Part::ToolCall {
                    name: "web_search".into(),
                    summary: "rust wasm".into()
                },
                Part::Text("Answer".into())
            ]
        );

        let req = request(
            &raw(r#"{"model": "gpt-5", "instructions": "Tag it.", "input": "ticket text"}"#),
            &mut skips,
        )
        .unwrap();
        assert_eq!(req.user, vec![Part::Text("ticket text".into())]);
        assert_eq!(req.system.as_deref(), Some("Tag it."));
    }

    #[test]
    fn wrong_types_never_panic() {
        let mut skips = Skips::default();
        for doc in [
            "1",
            "null",
            "[]",
            "{}",
            r#"{"messages": 5}"#,
            r#"{"messages": [1, "x", null, {"role": 3, "content": {"type": 4}}]}"#,
            r#"{"input": 7}"#,
            r#"{"choices": {"a": 1}}"#,
            r#"{"choices": [null]}"#,
            r#"{"output": [{"type": "message", "content": 3}]}"#,
            r#"{"content": [{"type": "image", "source": 5}, {"type": "tool_use", "input": "x"}]}"#,
        ] {
            let r = raw(doc);
            let _ = request(&r, &mut skips);
            let _ = response(&r, &mut skips);
        }
    }
}
