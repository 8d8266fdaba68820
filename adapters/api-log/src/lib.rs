//! chatmill adapter for API call logs: records of LLM API calls, one call =
//! one turn pair (the request's last real user prompt, the response's
//! answer).
//!
//! Shapes read (each in a JSON array, a single JSON document, or JSONL):
//!
//! * OpenAI Chat Completions / Responses and Anthropic Messages records: a
//!   request (`messages` / `input` / `prompt`), a response (`choices`,
//!   `output`, Anthropic `content`), or both, bare or wrapped as
//!   `{request, response}` (traffic captures may nest either under `body`).
//! * OpenAI-compatible Batch files (`custom_id`): input lines
//!   `{custom_id, method, url, body}`, output lines
//!   `{custom_id, response: {status_code, body}, error}`, and the Anthropic
//!   Message Batches equivalents (`params`, `result`). Lines are joined on
//!   `custom_id` inside one file (so an input and an output file concatenated
//!   give full pairs). An input file alone gives pairs whose assistant side
//!   is empty (unanswered); an output line whose request is not in the file
//!   gives no pair: it is skipped and counted as `response-without-request`
//!   (a pair needs a user prompt).
//! * LiteLLM `StandardLoggingPayload` (`call_type`, `messages`, `response`).
//! * Langfuse ingestion batches (`{batch: [{type: trace-create |
//!   generation-create | generation-update, body}]}`): generations are the
//!   calls, joined on their id; a trace's own input/output becomes a pair
//!   only when the trace has no generation in the file.
//! * simonw/llm `logs --json` records (`prompt`, `response`,
//!   `conversation_id`).
//!
//! Grouping: records carrying an explicit session / conversation / thread /
//! trace id form one conversation per id (that id is the conversation id);
//! all other records of the file form one conversation whose id is
//! `<file stem>:<first record's id>`, marked `pairs: independent` (its
//! calls are separate questions, not turns of one dialogue). Pairs are in record order
//! (first appearance of a `custom_id`). Because a conversation can span the
//! whole file, the reader collects the file's calls before yielding: memory
//! is bounded by the mapped calls (never the raw JSON).
//!
//! System prompts (`system`, `instructions`, `system`/`developer` messages)
//! are pair metadata `system_prompt` (summarized), never turns.

mod content;
mod util;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{Cursor, Read};

use chatmill_adapter_sdk::json::JsonStream;
use chatmill_adapter_sdk::lines::LineReader;
use chatmill_adapter_sdk::text::{file_stem, first_byte, summarize};
use chatmill_adapter_sdk::{
    Adapter, AdapterInfo, Conversation, ConversationReader, ErrorKind, FormatInfo, Input, Location,
    Options, ParseError, Part, Session, Timestamp, TurnPair, batched,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use content::{Request, Response, Skips};
use util::{RESULT_SUMMARY, Str, is_object, lead, raw_array, raw_time};

pub struct ApiLog;

const HEAD: usize = 64 * 1024;

impl Adapter for ApiLog {
    fn describe() -> AdapterInfo {
        let f = |id: &str, description: &str, patterns: &[&str]| FormatInfo {
            id: id.into(),
            description: description.into(),
            file_patterns: patterns.iter().map(|p| (*p).to_owned()).collect(),
        };
        AdapterInfo {
            id: "api-log".into(),
            name: "API call logs".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![
                f(
                    "openai-batch",
                    "OpenAI-compatible / Anthropic Batch input and output JSONL (custom_id)",
                    &[
                        "*batch*input*.jsonl",
                        "*batch*output*.jsonl",
                        "*batch*.jsonl",
                    ],
                ),
                f(
                    "chat-completions-log",
                    "OpenAI Chat Completions / Responses and Anthropic Messages request/response records (JSON or JSONL)",
                    &["*.jsonl", "*.json"],
                ),
                f(
                    "litellm-payload",
                    "LiteLLM StandardLoggingPayload records",
                    &["*.json", "*.jsonl"],
                ),
                f(
                    "langfuse-ingestion",
                    "Langfuse ingestion batches (trace-create / generation-create)",
                    &["*.json"],
                ),
                f("llm-logs", "simonw/llm `logs --json` output", &["*.json"]),
            ],
        }
    }

    fn sniff(head: &[u8], _file_name: &str) -> u8 {
        sniff(head)
    }

    fn open(input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Ok(batched(ApiReader::open(input)?))
    }
}

chatmill_adapter_sdk::export_adapter!(ApiLog);

// ---------------------------------------------------------------- sniffing

/// The top-level keys of the first record in `head` (the document object,
/// or the first element of a top-level array), read with a tolerant scanner
/// that stops at the end of the head.
fn top_keys(head: &[u8]) -> Vec<String> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < head.len() && head[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    if head.get(i) == Some(&b'[') {
        i += 1;
        skip_ws(&mut i);
    }
    if head.get(i) != Some(&b'{') {
        return Vec::new();
    }
    i += 1;
    let mut keys = Vec::new();
    let mut depth = 1usize;
    while i < head.len() {
        match head[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < head.len() && head[i] != b'"' {
                    if head[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let end = i.min(head.len());
                i += 1;
                if depth == 1 {
                    let mut j = i;
                    while j < head.len() && head[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if head.get(j) == Some(&b':')
                        && let Some(k) = head.get(start..end)
                    {
                        keys.push(String::from_utf8_lossy(k).into_owned());
                    }
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        i += 1;
    }
    keys
}

fn sniff(head: &[u8]) -> u8 {
    if !matches!(first_byte(head), Some(b'{' | b'[')) {
        return 0;
    }
    let keys = top_keys(head);
    let has = |k: &str| keys.iter().any(|x| x == k);
    let text = String::from_utf8_lossy(head);
    let mentions = |s: &str| text.contains(s);
    if has("custom_id") {
        if has("body") || has("params") || has("response") || has("result") {
            return 95;
        }
        if has("error") {
            return 80;
        }
    }
    if has("batch") && (mentions("\"trace-create\"") || mentions("\"generation-create\"")) {
        return 92;
    }
    if has("call_type") && has("messages") && (has("response") || has("response_cost")) {
        return 92;
    }
    if has("request") && has("response") {
        return 85;
    }
    if has("prompt") && has("response") && (has("conversation_id") || has("datetime_utc")) {
        return 85;
    }
    // Markers of the chat-export formats other adapters read.
    if [
        "sessionId",
        "projectHash",
        "mapping",
        "chat_messages",
        "parentUuid",
        "uuid",
    ]
    .iter()
    .any(|k| has(k))
    {
        return 0;
    }
    if has("choices") && (has("object") || has("model") || has("id")) {
        return 80;
    }
    if has("type") && has("role") && has("content") && has("stop_reason") {
        return 80;
    }
    if has("object") && has("output") && mentions("\"response\"") {
        return 75;
    }
    if has("messages") && mentions("\"role\"") && (has("model") || keys.len() <= 2) {
        return 75;
    }
    if has("model") && has("input") && has("instructions") {
        return 72;
    }
    0
}

// ---------------------------------------------------------------- reading

enum Source {
    Lines(LineReader<Box<dyn Read>>),
    Json(JsonStream<Box<dyn Read>>),
}

struct ApiReader {
    source: Option<Source>,
    stem: String,
    queue: Option<VecDeque<Conversation>>,
}

fn read_head(input: &mut Input) -> Result<Vec<u8>, ParseError> {
    let mut head = vec![0u8; HEAD];
    let mut len = 0;
    while len < HEAD {
        match input.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(ParseError::new(
                    ErrorKind::Internal,
                    format!("reading input failed: {e}"),
                ));
            }
        }
    }
    head.truncate(len);
    Ok(head)
}

impl ApiReader {
    fn open(mut input: Input) -> Result<Self, ParseError> {
        let stem = file_stem(input.name()).to_owned();
        let mut head = read_head(&mut input)?;
        if head.starts_with(b"\xEF\xBB\xBF") {
            head.drain(..3);
        }
        let json_lines = match first_byte(&head) {
            None => return Err(ParseError::not_this_format("empty input").at(Location::byte(0))),
            Some(b'[') => false,
            Some(b'{') => match head.iter().position(|&b| b == b'\n') {
                // A first line that is a whole JSON value: JSONL. Otherwise
                // one (pretty-printed) JSON document.
                Some(nl) => serde_json::from_slice::<serde::de::IgnoredAny>(&head[..nl]).is_ok(),
                None => true,
            },
            Some(b) => {
                return Err(ParseError::not_this_format(format!(
                    "expected JSON or JSONL, found `{}`",
                    (b as char).escape_default()
                ))
                .at(Location::byte(0)));
            }
        };
        let reader: Box<dyn Read> = Box::new(Cursor::new(head).chain(input));
        let source = if json_lines {
            Source::Lines(LineReader::new(reader))
        } else {
            Source::Json(JsonStream::new(reader, &["batch"]))
        };
        Ok(Self {
            source: Some(source),
            stem,
            queue: None,
        })
    }

    fn collect(&mut self) -> Result<VecDeque<Conversation>, ParseError> {
        let mut coll = Collector::default();
        match self.source.take() {
            Some(Source::Lines(mut lines)) => {
                while let Some(line) = lines.next_line()? {
                    let loc = Location::line(line.number);
                    if line.too_long {
                        coll.file_skip("line-too-long", loc);
                        continue;
                    }
                    if line.bytes.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    match serde_json::from_slice::<&RawValue>(line.bytes) {
                        Ok(raw) => coll.record(raw, line.number.saturating_sub(1)),
                        Err(_) => coll.file_skip("malformed-line", loc),
                    }
                }
            }
            Some(Source::Json(mut stream)) => loop {
                match stream.next_element() {
                    Ok(Some(el)) => match serde_json::from_slice::<&RawValue>(&el.bytes) {
                        Ok(raw) => coll.record(raw, el.index),
                        Err(_) => coll.file_skip("malformed-record", Location::record(el.index)),
                    },
                    Ok(None) => break,
                    Err(e) if coll.slots.is_empty() => return Err(e),
                    // Keep what was read before a truncation / broken tail.
                    Err(e) => {
                        coll.file_skip("truncated-input", e.location.unwrap_or_default());
                        break;
                    }
                }
            },
            None => {}
        }
        coll.build(&self.stem)
    }
}

impl ConversationReader for ApiReader {
    fn next_conversation(&mut self) -> Result<Option<Conversation>, ParseError> {
        if self.queue.is_none() {
            self.queue = Some(self.collect()?);
        }
        Ok(self.queue.as_mut().and_then(VecDeque::pop_front))
    }
}

// ---------------------------------------------------------------- records

/// Which conversation a call belongs to.
#[derive(Debug, Default, Clone)]
enum Group {
    /// The file's conversation.
    #[default]
    File,
    /// An explicit id; `kind` is its metadata key (`session_id`, ...).
    Explicit { key: String, kind: &'static str },
    /// A Langfuse observation of this trace (resolved at the end).
    Langfuse(Option<String>),
}

/// One API call, possibly assembled from several records.
#[derive(Debug, Default)]
struct Slot {
    join: Option<String>,
    record_id: Option<String>,
    request: Option<Request>,
    response: Option<Response>,
    group: Group,
    /// Set for a Langfuse trace's own input/output.
    trace_pair_of: Option<String>,
    source: &'static str,
    meta: Vec<(String, String)>,
    skips: Vec<&'static str>,
    title: Option<String>,
    time: Option<Timestamp>,
    model: Option<String>,
}

#[derive(Deserialize, Default)]
struct Rec<'a> {
    #[serde(default, borrow)]
    custom_id: Str<'a>,
    #[serde(default, borrow)]
    url: Str<'a>,
    #[serde(default, borrow)]
    body: Option<&'a RawValue>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default, borrow)]
    response: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
    #[serde(default, borrow)]
    request: Option<&'a RawValue>,
    #[serde(default, borrow)]
    batch: Option<&'a RawValue>,
    #[serde(rename = "type", default, borrow)]
    kind: Str<'a>,
    #[serde(default, borrow)]
    id: Str<'a>,
    #[serde(default, borrow)]
    model: Str<'a>,
    #[serde(default, borrow)]
    messages: Option<&'a RawValue>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    prompt: Option<&'a RawValue>,
    #[serde(default, borrow)]
    output: Option<&'a RawValue>,
    #[serde(default, borrow)]
    choices: Option<&'a RawValue>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    object: Str<'a>,
    #[serde(default, borrow)]
    session_id: Str<'a>,
    #[serde(rename = "sessionId", default, borrow)]
    session_id_camel: Str<'a>,
    #[serde(default, borrow)]
    conversation_id: Str<'a>,
    #[serde(default, borrow)]
    thread_id: Str<'a>,
    #[serde(default, borrow)]
    trace_id: Str<'a>,
    #[serde(rename = "traceId", default, borrow)]
    trace_id_camel: Str<'a>,
    #[serde(default, borrow)]
    conversation_name: Str<'a>,
    #[serde(default, borrow)]
    call_type: Str<'a>,
    #[serde(default, borrow)]
    datetime_utc: Option<&'a RawValue>,
    #[serde(rename = "startTime", default, borrow)]
    start_time: Option<&'a RawValue>,
    #[serde(default, borrow)]
    timestamp: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct LangfuseBody<'a> {
    #[serde(default, borrow)]
    id: Str<'a>,
    #[serde(rename = "traceId", default, borrow)]
    trace_id: Str<'a>,
    #[serde(rename = "sessionId", default, borrow)]
    session_id: Str<'a>,
    #[serde(default, borrow)]
    name: Str<'a>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    output: Option<&'a RawValue>,
    #[serde(default, borrow)]
    model: Str<'a>,
    #[serde(rename = "startTime", default, borrow)]
    start_time: Option<&'a RawValue>,
    #[serde(default, borrow)]
    timestamp: Option<&'a RawValue>,
    #[serde(rename = "type", default, borrow)]
    kind: Str<'a>,
}

struct Trace {
    id: String,
    session: Option<String>,
    name: Option<String>,
}

#[derive(Default)]
struct Collector {
    slots: Vec<Slot>,
    by_join: BTreeMap<String, usize>,
    traces: Vec<Trace>,
    file_skips: Vec<&'static str>,
    /// Where the first broken record was (for an all-broken input).
    first_bad: Option<(&'static str, Location)>,
}

impl Collector {
    fn file_skip(&mut self, reason: &'static str, loc: Location) {
        self.file_skips.push(reason);
        if self.first_bad.is_none() {
            self.first_bad = Some((reason, loc));
        }
    }

    fn add(&mut self, mut slot: Slot) {
        if let Some(key) = slot.join.clone() {
            if let Some(&i) = self.by_join.get(&key) {
                if let Some(s) = self.slots.get_mut(i) {
                    let fits = (slot.request.is_none() || s.request.is_none())
                        && (slot.response.is_none() || s.response.is_none());
                    if fits {
                        if s.request.is_none() {
                            s.request = slot.request.take();
                        }
                        if s.response.is_none() {
                            s.response = slot.response.take();
                        }
                        for (k, v) in slot.meta {
                            if !s.meta.iter().any(|(sk, _)| *sk == k) {
                                s.meta.push((k, v));
                            }
                        }
                        s.skips.extend(slot.skips);
                        s.time = s.time.or(slot.time);
                        s.model = s.model.take().or(slot.model);
                        s.title = s.title.take().or(slot.title);
                        if matches!(s.group, Group::File | Group::Langfuse(None))
                            && !matches!(slot.group, Group::File)
                        {
                            s.group = slot.group;
                        }
                        return;
                    }
                }
                // Both sides already there: the id repeats; keep both calls.
                slot.skips.push("duplicate-id");
                self.slots.push(slot);
                return;
            }
            self.by_join.insert(key, self.slots.len());
        }
        self.slots.push(slot);
    }

    /// One top-level record (a JSONL line or array element).
    fn record(&mut self, raw: &RawValue, index: u64) {
        if lead(raw) != b'{' {
            self.file_skip("unrecognized-record", Location::record(index));
            return;
        }
        let rec: Rec<'_> = match serde_json::from_str(raw.get()) {
            Ok(r) => r,
            Err(_) => {
                self.file_skip("malformed-record", Location::record(index));
                return;
            }
        };
        if let Some(events) = rec.batch.and_then(raw_array) {
            for ev in events {
                self.langfuse_event(ev);
            }
            return;
        }
        let kind = rec.kind.get().unwrap_or("");
        if (kind.ends_with("-create") || kind.ends_with("-update")) && is_object(rec.body) {
            self.langfuse_event(raw);
            return;
        }
        let mut skips = Skips::default();
        if let Some(cid) = rec.custom_id.owned() {
            let anthropic = rec.params.is_some() || rec.result.is_some();
            let mut slot = Slot {
                join: Some(cid.clone()),
                record_id: Some(cid.clone()),
                source: if anthropic {
                    "anthropic-batch"
                } else {
                    "openai-batch"
                },
                meta: vec![("custom_id".into(), cid)],
                ..Slot::default()
            };
            if let Some(req) = rec.body.or(rec.params) {
                let url = rec.url.get().unwrap_or("");
                if ["embeddings", "moderations", "audio", "images"]
                    .iter()
                    .any(|e| url.contains(e))
                {
                    self.file_skip("non-chat-endpoint", Location::record(index));
                    return;
                }
                if !url.is_empty() {
                    slot.meta.push(("endpoint".into(), url.to_owned()));
                }
                slot.request = content::request(req, &mut skips);
                if slot.request.is_none() {
                    self.file_skip("unrecognized-record", Location::record(index));
                    return;
                }
            } else if let Some(resp) = rec.response.or(rec.result) {
                slot.response = content::response(resp, &mut skips);
                if slot.response.is_none()
                    && let Some(e) = rec.error.and_then(error_response)
                {
                    slot.response = Some(e);
                }
            } else if let Some(e) = rec.error.and_then(error_response) {
                slot.response = Some(e);
            }
            if slot.request.is_none() && slot.response.is_none() {
                self.file_skip("unrecognized-record", Location::record(index));
                return;
            }
            slot.skips = skips.0;
            self.add(slot);
            return;
        }

        // A request/response record.
        let request = if let Some(r) = rec.request {
            content::request(r, &mut skips)
        } else if rec.messages.is_some() || rec.input.is_some() || rec.prompt.is_some() {
            content::request(raw, &mut skips)
        } else {
            None
        };
        let response = if let Some(r) = rec.response {
            content::response(r, &mut skips)
        } else if rec.input.is_some() && rec.output.is_some() {
            rec.output.and_then(|o| content::response(o, &mut skips))
        } else if rec.choices.is_some()
            || rec.object.is("response")
            || (rec.kind.is("message") && rec.content.is_some())
        {
            content::response(raw, &mut skips)
        } else {
            None
        };
        if request.is_none() && response.is_none() {
            self.file_skip("unrecognized-record", Location::record(index));
            return;
        }
        let group = [
            (&rec.session_id, "session_id"),
            (&rec.session_id_camel, "session_id"),
            (&rec.conversation_id, "conversation_id"),
            (&rec.thread_id, "thread_id"),
            (&rec.trace_id, "trace_id"),
            (&rec.trace_id_camel, "trace_id"),
        ]
        .into_iter()
        .find_map(|(s, kind)| s.owned().map(|key| Group::Explicit { key, kind }))
        .unwrap_or_default();
        let source = if rec.call_type.get().is_some() {
            "litellm"
        } else if rec.datetime_utc.is_some() && rec.prompt.is_some() {
            "llm"
        } else {
            "api-log"
        };
        let mut meta = Vec::new();
        if let Some(id) = rec.id.owned() {
            meta.push(("call_id".into(), id));
        }
        self.add(Slot {
            record_id: rec
                .id
                .owned()
                .or_else(|| response.as_ref().and_then(|r| r.id.clone())),
            request,
            response,
            group,
            source,
            meta,
            skips: skips.0,
            title: rec.conversation_name.owned(),
            time: raw_time(rec.start_time)
                .or_else(|| raw_time(rec.datetime_utc))
                .or_else(|| raw_time(rec.timestamp)),
            model: rec.model.owned(),
            ..Slot::default()
        });
    }

    fn langfuse_event(&mut self, raw: &RawValue) {
        #[derive(Deserialize, Default)]
        struct Ev<'a> {
            #[serde(rename = "type", default, borrow)]
            kind: Str<'a>,
            #[serde(default, borrow)]
            body: Option<&'a RawValue>,
            #[serde(default, borrow)]
            timestamp: Option<&'a RawValue>,
        }
        let ev: Ev<'_> = serde_json::from_str(raw.get()).unwrap_or_default();
        let body: LangfuseBody<'_> = match ev.body.filter(|b| lead(b) == b'{') {
            Some(b) => serde_json::from_str(b.get()).unwrap_or_default(),
            None => {
                self.file_skips.push("malformed-langfuse-event");
                return;
            }
        };
        let kind = ev.kind.get().unwrap_or("");
        let mut skips = Skips::default();
        let time = raw_time(body.start_time)
            .or_else(|| raw_time(body.timestamp))
            .or_else(|| raw_time(ev.timestamp));
        let request = body.input.and_then(|i| content::request(i, &mut skips));
        let response = body.output.and_then(|o| content::response(o, &mut skips));
        let is_generation = kind.starts_with("generation-")
            || (kind.starts_with("observation-") && body.kind.is("GENERATION"));
        if kind == "trace-create" {
            let Some(id) = body.id.owned() else {
                self.file_skips.push("malformed-langfuse-event");
                return;
            };
            self.traces.push(Trace {
                id: id.clone(),
                session: body.session_id.owned(),
                name: body.name.owned(),
            });
            if request.is_some() || response.is_some() {
                self.add(Slot {
                    record_id: Some(id.clone()),
                    request,
                    response,
                    group: Group::Langfuse(Some(id.clone())),
                    trace_pair_of: Some(id),
                    source: "langfuse",
                    skips: skips.0,
                    time,
                    ..Slot::default()
                });
            }
        } else if is_generation {
            let id = body.id.owned();
            let mut meta = Vec::new();
            if let Some(id) = &id {
                meta.push(("call_id".into(), id.clone()));
            }
            self.add(Slot {
                join: id.as_ref().map(|i| format!("langfuse:{i}")),
                record_id: id,
                request,
                response,
                group: Group::Langfuse(body.trace_id.owned()),
                source: "langfuse",
                meta,
                skips: skips.0,
                time,
                model: body.model.owned(),
                ..Slot::default()
            });
        } else {
            self.file_skips.push("langfuse-other-event");
        }
    }

    /// Groups the calls into conversations.
    fn build(self, stem: &str) -> Result<VecDeque<Conversation>, ParseError> {
        if self.slots.is_empty() {
            return self.nothing_read();
        }
        let single_trace = match self.traces.as_slice() {
            [t] => Some(t.id.clone()),
            _ => None,
        };
        let trace = |id: &str| self.traces.iter().find(|t| t.id == id);
        // (conversation key, metadata key) for a slot.
        let resolve = |slot: &Slot| -> (Option<String>, Option<&'static str>, Option<String>) {
            match &slot.group {
                Group::File => (None, None, None),
                Group::Explicit { key, kind } => (Some(key.clone()), Some(*kind), None),
                Group::Langfuse(t) => match t.clone().or_else(|| single_trace.clone()) {
                    Some(t) => match trace(&t) {
                        Some(Trace {
                            session: Some(s),
                            name,
                            ..
                        }) => (Some(s.clone()), Some("session_id"), name.clone()),
                        Some(Trace { name, .. }) => (Some(t), Some("trace_id"), name.clone()),
                        None => (Some(t), Some("trace_id"), None),
                    },
                    None => (None, None, None),
                },
            }
        };
        // Traces that have generations: their own input/output duplicates them.
        let traced: BTreeSet<String> = self
            .slots
            .iter()
            .filter(|s| s.trace_pair_of.is_none())
            .filter_map(|s| match &s.group {
                Group::Langfuse(t) => t.clone().or_else(|| single_trace.clone()),
                _ => None,
            })
            .collect();

        let file_id = format!(
            "{stem}:{}",
            self.slots
                .first()
                .and_then(|s| s.record_id.clone())
                .unwrap_or_else(|| "0".into())
        );
        let mut convs: Vec<Conversation> = Vec::new();
        let mut index: BTreeMap<Option<String>, usize> = BTreeMap::new();
        for slot in &self.slots {
            let (key, kind, trace_name) = resolve(slot);
            let ci = *index.entry(key.clone()).or_insert_with(|| {
                convs.push(start(key, kind, trace_name, slot.source, &file_id));
                convs.len() - 1
            });
            let Some(conv) = convs.get_mut(ci) else {
                continue;
            };
            for s in &slot.skips {
                conv.skipped.add(*s);
            }
            if conv.start.title.is_none() {
                conv.start.title = slot.title.clone();
            }
            if slot
                .trace_pair_of
                .as_ref()
                .is_some_and(|t| traced.contains(t))
            {
                conv.skipped.add("langfuse-trace-duplicate");
                continue;
            }
            let Some(req) = &slot.request else {
                conv.skipped.add("response-without-request");
                continue;
            };
            if req.user.is_empty() {
                conv.skipped.add("request-without-user-prompt");
                continue;
            }
            conv.pairs.push(pair(slot, req));
        }
        // File-level skips go with the file's conversation (else the first).
        if !self.file_skips.is_empty() {
            let ci = index.get(&None).copied().unwrap_or(0);
            if let Some(conv) = convs.get_mut(ci) {
                for s in &self.file_skips {
                    conv.skipped.add(*s);
                }
            }
        }
        convs.iter_mut().for_each(settle);
        Ok(convs.into())
    }

    /// No call was read: a typed error when the input held something else,
    /// nothing when it was empty.
    fn nothing_read(self) -> Result<VecDeque<Conversation>, ParseError> {
        if let Some((reason, loc)) = self.first_bad {
            let kind = if reason.starts_with("malformed") || reason == "truncated-input" {
                ErrorKind::Malformed
            } else {
                ErrorKind::NotThisFormat
            };
            return Err(ParseError::new(kind, "no API call records in the input").at(loc));
        }
        if !self.file_skips.is_empty() {
            return Err(ParseError::not_this_format(
                "no API call records in the input",
            ));
        }
        Ok(VecDeque::new())
    }
}

/// The start of the conversation of the group `key` (`kind` its metadata
/// key; `None`: the calls of one file).
fn start(
    key: Option<String>,
    kind: Option<&'static str>,
    trace_name: Option<String>,
    source: &str,
    file_id: &str,
) -> Conversation {
    let mut c = Conversation::default();
    c.start.platform = "api".into();
    c.start.id = key.clone().unwrap_or_else(|| file_id.to_owned());
    c.start.metadata.push(("source_tool".into(), source.into()));
    match (key, kind) {
        // An llm log's conversation id is the conversation's own id, not
        // metadata (`conversation_id` is a frontmatter field).
        (Some(_), Some("conversation_id")) => {}
        (Some(k), Some(kind)) => c.start.metadata.push((kind.into(), k)),
        // Calls grouped only by the file they sit in (a batch, a log
        // without session ids) are separate questions: the host neither
        // merges them nor reads one as the context of the next.
        (None, _) => c
            .start
            .metadata
            .push(("pairs".into(), "independent".into())),
        _ => {}
    }
    if let Some(n) = trace_name {
        c.start.metadata.push(("trace_name".into(), n));
    }
    c
}

/// A conversation's dates, and its model when every pair has the same.
fn settle(c: &mut Conversation) {
    let times = c.pairs.iter().filter_map(|p| p.timestamp);
    c.start.created = times.clone().min();
    c.start.updated = times.max();
    let mut models = c.pairs.iter().map(|p| p.model.as_deref());
    if let Some(first) = models.next()
        && models.all(|m| m == first)
    {
        c.start.model = first.map(str::to_owned);
    }
}

fn error_response(raw: &RawValue) -> Option<Response> {
    let text = content::text_of(raw);
    if text.trim().is_empty() {
        return None;
    }
    Some(Response {
        parts: vec![Part::Other {
            kind: "error".into(),
            text: summarize(&text, RESULT_SUMMARY),
        }],
        ..Response::default()
    })
}

fn pair(slot: &Slot, req: &Request) -> TurnPair {
    let resp = slot.response.as_ref();
    let mut assistant = req.prefix.clone();
    if let Some(r) = resp {
        assistant.extend(r.parts.iter().cloned());
    }
    let mut metadata = slot.meta.clone();
    if let Some(r) = resp {
        if let Some(id) = &r.id
            && !metadata.iter().any(|(_, v)| v == id)
        {
            metadata.push(("response_id".into(), id.clone()));
        }
        if let Some(f) = &r.finish_reason {
            metadata.push(("finish_reason".into(), f.clone()));
        }
        if let Some(code) = r.status_code.as_deref().filter(|c| *c != "200") {
            metadata.push(("status_code".into(), code.to_owned()));
        }
    }
    if let Some(s) = &req.system {
        metadata.push(("system_prompt".into(), summarize(s, RESULT_SUMMARY)));
    }
    TurnPair {
        index: 0,
        timestamp: req.time.or(slot.time).or_else(|| resp.and_then(|r| r.time)),
        model: resp
            .and_then(|r| r.model.clone())
            .or_else(|| req.model.clone())
            .or_else(|| slot.model.clone()),
        user: req.user.clone(),
        assistant,
        metadata,
    }
}

#[cfg(test)]
mod tests;
