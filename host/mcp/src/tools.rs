//! The tools: their names, descriptions and JSON schemas (input and
//! output), and one call from arguments to a result. A tool that runs and
//! fails answers a tool error whose text is chatmill's `error:` / `hint:`;
//! arguments that do not fit the schema are a protocol error.

use std::sync::Arc;

use chatmill_index::{Filter, Mode, SearchRequest, WeightedQuery, time_bound};
use chatmill_pipeline::inline::Turn;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::memory::{Entries, Memory, MemoryError};

/// `search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in words ("what did I decide about the nginx 502s").
    /// A time phrase in it ("last spring", "in 2023") favours chunks of
    /// that time.
    #[serde(default)]
    pub query: Option<String>,
    /// Several queries fused into one ranking, each with a weight (default
    /// 1), instead of `query`.
    #[serde(default)]
    pub queries: Vec<QueryArg>,
    /// `hybrid` (default: meaning and keywords), `semantic` or `keyword`.
    #[serde(default)]
    pub mode: Option<SearchMode>,
    /// How many entries (default 8, at most 50).
    #[serde(default)]
    pub k: Option<usize>,
    /// Only this platform: chatgpt, claude, gemini, claude-code, local, api.
    #[serde(default)]
    pub platform: Option<String>,
    /// Only chunks of this agent.
    #[serde(default)]
    pub agent: Option<String>,
    /// Only chunks of this conversation.
    #[serde(default)]
    pub conversation: Option<String>,
    /// Only chunks of this project (a coding session's project, as `recent`
    /// and `search` entries show it).
    #[serde(default)]
    pub project: Option<String>,
    /// Only chunks at or after this time (RFC 3339 or YYYY-MM-DD).
    #[serde(default)]
    pub since: Option<String>,
    /// Only chunks at or before this time (RFC 3339 or YYYY-MM-DD).
    #[serde(default)]
    pub until: Option<String>,
    /// Read a time phrase in the query as a window of dates (default true).
    #[serde(default)]
    pub time_hints: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArg {
    pub text: String,
    #[serde(default)]
    pub weight: Option<f32>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    Hybrid,
    Semantic,
    Keyword,
}

/// `recent`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecentArgs {
    /// How many (default 8, at most 50).
    #[serde(default)]
    pub k: Option<usize>,
    #[serde(default)]
    pub platform: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    /// Only chunks of this project (a coding session's project).
    #[serde(default)]
    pub project: Option<String>,
}

/// `get_chunk`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkArgs {
    /// A chunk id from another tool's entries.
    pub chunk_id: String,
}

/// `get_conversation`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationArgs {
    /// A conversation id from another tool's entries.
    pub conversation_id: String,
    /// Its platform, when the id is on several.
    #[serde(default)]
    pub platform: Option<String>,
    /// The first chunk to return (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many chunks (default 20, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `record_turn`'s arguments: one finished exchange.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnArgs {
    /// Your session's id: letters, digits, `.`, `_`, `-`.
    pub session_id: String,
    /// 1-based, in order within the session; a turn sent twice is stored once.
    pub turn_index: u32,
    pub user: String,
    pub assistant: String,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
}

/// `record_turn`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Recorded {
    /// The chunk written (none when the exchange was a greeting or thanks,
    /// or was recorded before).
    pub chunk_id: Option<String>,
    pub indexed: bool,
    pub duplicate: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
}

/// The tools this server offers (`record_turn` only when it may write).
pub fn list(writable: bool) -> Vec<Tool> {
    let read_only = ToolAnnotations::new().read_only(true).open_world(false);
    let mut tools = vec![
        tool::<SearchArgs, Entries>(
            "search",
            "Search your past conversations with AI assistants (ChatGPT, Claude, Gemini, Claude Code, API logs) by meaning and keywords. Returns numbered exchanges with their source, platform and date.",
        )
        .annotate(read_only.clone()),
        tool::<RecentArgs, Entries>(
            "recent",
            "The most recent exchanges in your conversation history, newest first, optionally of one platform, agent or project.",
        )
        .annotate(read_only.clone()),
        tool::<ChunkArgs, Entries>(
            "get_chunk",
            "One stored exchange by its chunk id, whole: its contextual header, metadata and full text.",
        )
        .annotate(read_only.clone()),
        tool::<ConversationArgs, Entries>(
            "get_conversation",
            "A conversation's exchanges in order, by its conversation id, a page at a time.",
        )
        .annotate(read_only),
    ];
    if writable {
        tools.push(tool::<TurnArgs, Recorded>(
            "record_turn",
            "Remember one finished exchange (the user's message and your answer), so that later searches find it. For clients that keep no transcript of their own.",
        ).annotate(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false)));
    }
    tools
}

fn tool<I: JsonSchema + 'static, O: JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
) -> Tool {
    Tool::new(name, description, Arc::new(Default::default()))
        .with_input_schema::<I>()
        .with_output_schema::<O>()
}

/// Calls the tool `name` with `args`.
pub fn call(memory: &Memory, name: &str, args: Value) -> Result<CallToolResult, ErrorData> {
    let answer = match name {
        "search" => search(memory, parse(args)?),
        "recent" => {
            let a: RecentArgs = parse(args)?;
            let filter = Filter {
                platform: a.platform,
                agent_id: a.agent,
                project: a.project,
                ..Filter::default()
            };
            memory.recent(a.k.unwrap_or(8), filter).map(entries)
        }
        "get_chunk" => memory
            .chunk(&parse::<ChunkArgs>(args)?.chunk_id)
            .map(entries),
        "get_conversation" => {
            let a: ConversationArgs = parse(args)?;
            let (offset, limit) = (a.offset.unwrap_or(0), a.limit.unwrap_or(20));
            memory
                .conversation(&a.conversation_id, a.platform.as_deref(), offset, limit)
                .map(entries)
        }
        "record_turn" if memory.writable() => record(memory, parse(args)?),
        other => {
            return Err(ErrorData::invalid_params(
                format!("no tool `{other}`"),
                None,
            ));
        }
    };
    Ok(answer.unwrap_or_else(|e| failure(&e)))
}

fn search(memory: &Memory, a: SearchArgs) -> Result<CallToolResult, MemoryError> {
    let mut queries: Vec<WeightedQuery> = a
        .queries
        .into_iter()
        .map(|q| WeightedQuery {
            text: q.text,
            weight: q.weight.unwrap_or(1.0),
        })
        .collect();
    if let Some(q) = a.query {
        queries.insert(
            0,
            WeightedQuery {
                text: q,
                weight: 1.0,
            },
        );
    }
    let bound = |what: &str, s: Option<String>, end: bool| {
        s.map(|s| {
            time_bound(&s, end).ok_or_else(|| {
                MemoryError::Invalid(format!(
                    "`{what}` {s:?} is not a time: use RFC 3339 or YYYY-MM-DD"
                ))
            })
        })
        .transpose()
    };
    let mut req = SearchRequest::new("");
    req.queries = queries;
    req.mode = match a.mode.unwrap_or(SearchMode::Hybrid) {
        SearchMode::Hybrid => Mode::Hybrid,
        SearchMode::Semantic => Mode::Semantic,
        SearchMode::Keyword => Mode::Keyword,
    };
    req.k = a.k.unwrap_or(8);
    req.time_hints = a.time_hints.unwrap_or(true);
    req.filter = Filter {
        platform: a.platform,
        agent_id: a.agent,
        conversation_id: a.conversation,
        project: a.project,
        since: bound("since", a.since, false)?,
        until: bound("until", a.until, true)?,
    };
    memory.search(req).map(entries)
}

fn record(memory: &Memory, a: TurnArgs) -> Result<CallToolResult, MemoryError> {
    let turn = Turn {
        session_id: a.session_id,
        turn_index: a.turn_index,
        user: a.user,
        assistant: a.assistant,
        model: a.model,
        timestamp: None,
        agent_id: None,
        title: a.title,
    };
    let ack = memory.record(&turn)?;
    let text = match (&ack.chunk_id, ack.duplicate) {
        (_, true) => "already recorded; nothing written".to_owned(),
        (Some(id), _) => format!("recorded as chunk {id}"),
        (None, _) => format!(
            "not stored: {}",
            ack.excluded.as_deref().unwrap_or("a mechanical exchange")
        ),
    };
    let recorded = Recorded {
        chunk_id: ack.chunk_id,
        indexed: ack.indexed,
        duplicate: ack.duplicate,
        excluded: ack.excluded,
    };
    Ok(structured(text, &recorded))
}

fn parse<T: DeserializeOwned>(args: Value) -> Result<T, ErrorData> {
    serde_json::from_value(args).map_err(|e| ErrorData::invalid_params(e.to_string(), None))
}

fn entries(e: Entries) -> CallToolResult {
    structured(e.prompt_text(), &e)
}

/// A result with prompt-ready text and the same answer as structured content.
fn structured(text: String, value: &impl Serialize) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = serde_json::to_value(value).ok();
    r
}

/// A tool error in chatmill's words.
fn failure(e: &MemoryError) -> CallToolResult {
    let mut text = format!("error: {e}");
    if let Some(h) = e.hint() {
        text.push_str(&format!("\n\nhint: {h}"));
    }
    CallToolResult::error(vec![ContentBlock::text(text)])
}
