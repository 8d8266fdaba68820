//! A scripted adapter: it emits exactly the items a JSON script says, with
//! no checks and no repairs, so each test of the host's trust boundary
//! (tests/e2e/hostile.rs) writes its own hostile input.
//!
//! It claims files named `*.hostile` (sniff 100, else 0) and, at `open`,
//! reads the whole input as a script:
//!
//! ```text
//! {
//!   "ignore_max_items": false,
//!   "items": [
//!     {"start": {"id": "c1", "platform": "test", "title": "T", "model": "m",
//!                "created": [1714557600, 0], "updated": [1714557600, 0],
//!                "metadata": [["key", "value"], ["key", "again"]]}},
//!     {"pair": {"index": 1, "timestamp": [1714557600, 0], "model": "m",
//!               "user": "a question", "assistant": "an answer",
//!               "code": {"language": "rust", "code": "fn main() {}"},
//!               "metadata": [["key", "value"]]}},
//!     {"end": {"id": "c1", "skipped": [["a reason", 3]]}},
//!     {"conversation": {"start": {...}, "pairs": [{...}],
//!                       "skipped": [["a reason", 1]], "end_id": "c9",
//!                       "repeat": 50000}}
//!   ]
//! }
//! ```
//!
//! - `start`, `pair` and `end` become one item each, as written: indexes are
//!   not renumbered, timestamps are raw `[seconds, nanos]`, ids need not
//!   match. Only `start.id`, `pair.index` and `end.id` are required;
//!   `platform` defaults to `hostile`.
//! - `conversation` is a start, its pairs and an end with the start's id
//!   (`end_id` overrides it). With `repeat: N` it is emitted N times, with
//!   ids `<id>-1` … `<id>-N` (an `end_id` is used as written).
//! - A text (`user`, `assistant`, `code.code`) is a string, or
//!   `{"repeat": "x", "times": N}`: that string N times, built only when its
//!   pair is emitted (a 300 MB text from a 40-byte script).
//! - `code` adds a code part after the assistant's text.
//! - Batches hold at most the `max_items` the host asks for, unless
//!   `ignore_max_items` is true: then the first batch holds every item.
use std::collections::VecDeque;
use std::io::Read;

use chatmill_adapter_sdk::*;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    #[serde(default)]
    ignore_max_items: bool,
    items: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Entry {
    Start(StartSpec),
    Pair(PairSpec),
    End(EndSpec),
    Conversation(ConversationSpec),
}

type Ts = Option<(i64, u32)>;

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct StartSpec {
    id: String,
    #[serde(default = "default_platform")]
    platform: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    created: Ts,
    #[serde(default)]
    updated: Ts,
    #[serde(default)]
    metadata: Vec<(String, String)>,
}

fn default_platform() -> String {
    "hostile".into()
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct PairSpec {
    index: u32,
    #[serde(default)]
    timestamp: Ts,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    user: Option<Text>,
    #[serde(default)]
    assistant: Option<Text>,
    #[serde(default)]
    code: Option<CodeSpec>,
    #[serde(default)]
    metadata: Vec<(String, String)>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct CodeSpec {
    #[serde(default)]
    language: Option<String>,
    code: Text,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct EndSpec {
    id: String,
    #[serde(default)]
    skipped: Vec<(String, u32)>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct ConversationSpec {
    start: StartSpec,
    #[serde(default)]
    pairs: Vec<PairSpec>,
    #[serde(default)]
    skipped: Vec<(String, u32)>,
    #[serde(default)]
    end_id: Option<String>,
    #[serde(default)]
    repeat: Option<u32>,
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum Text {
    Plain(String),
    Repeat { repeat: String, times: usize },
}

impl Text {
    fn build(&self) -> String {
        match self {
            Self::Plain(s) => s.clone(),
            Self::Repeat { repeat, times } => repeat.repeat(*times),
        }
    }
}

fn ts(t: Ts) -> Option<Timestamp> {
    t.map(|(seconds, nanos)| Timestamp { seconds, nanos })
}

fn start(s: &StartSpec, id: String) -> Item {
    Item::ConversationStart(ConversationStart {
        id,
        title: s.title.clone(),
        created: ts(s.created),
        updated: ts(s.updated),
        platform: s.platform.clone(),
        model: s.model.clone(),
        metadata: s.metadata.clone(),
    })
}

fn pair(p: &PairSpec) -> Item {
    let mut assistant: Vec<Part> = p.assistant.iter().map(|t| Part::Text(t.build())).collect();
    if let Some(c) = &p.code {
        assistant.push(Part::Code {
            language: c.language.clone(),
            code: c.code.build(),
        });
    }
    Item::Pair(TurnPair {
        index: p.index,
        timestamp: ts(p.timestamp),
        model: p.model.clone(),
        user: p.user.iter().map(|t| Part::Text(t.build())).collect(),
        assistant,
        metadata: p.metadata.clone(),
    })
}

fn end(id: String, skipped: &[(String, u32)]) -> Item {
    Item::ConversationEnd(ConversationEnd {
        id,
        skipped: skipped
            .iter()
            .map(|(reason, count)| SkipCount {
                reason: reason.clone(),
                count: *count,
            })
            .collect(),
    })
}

/// Expands the script lazily: 50,000 repeated conversations are never all
/// in memory at once.
struct Scripted {
    entries: std::vec::IntoIter<Entry>,
    /// The conversation being repeated, and the next repetition (from 1).
    repeating: Option<(ConversationSpec, u32)>,
    queue: VecDeque<Item>,
    ignore_max_items: bool,
}

impl Scripted {
    /// Queues the items of the next entry (or repetition); false at the end.
    fn expand_one(&mut self) -> bool {
        if let Some((c, n)) = self.repeating.take() {
            let times = c.repeat.unwrap_or(1);
            let id = match c.repeat {
                Some(_) => format!("{}-{n}", c.start.id),
                None => c.start.id.clone(),
            };
            let end_id = c.end_id.clone().unwrap_or_else(|| id.clone());
            self.queue.push_back(start(&c.start, id));
            self.queue.extend(c.pairs.iter().map(pair));
            self.queue.push_back(end(end_id, &c.skipped));
            if n < times {
                self.repeating = Some((c, n + 1));
            }
            return true;
        }
        match self.entries.next() {
            None => false,
            Some(Entry::Start(s)) => {
                self.queue.push_back(start(&s, s.id.clone()));
                true
            }
            Some(Entry::Pair(p)) => {
                self.queue.push_back(pair(&p));
                true
            }
            Some(Entry::End(e)) => {
                self.queue.push_back(end(e.id, &e.skipped));
                true
            }
            Some(Entry::Conversation(c)) => {
                if c.repeat != Some(0) {
                    self.repeating = Some((c, 1));
                }
                true
            }
        }
    }
}

impl Session for Scripted {
    fn next_batch(&mut self, max_items: usize) -> Result<Vec<Item>, ParseError> {
        let want = if self.ignore_max_items {
            usize::MAX
        } else {
            max_items.max(1)
        };
        while self.queue.len() < want && self.expand_one() {}
        let n = self.queue.len().min(want);
        Ok(self.queue.drain(..n).collect())
    }
}

struct Hostile;

impl Adapter for Hostile {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "hostile".into(),
            name: "Scripted hostile output".into(),
            version: "0.1.0".into(),
            formats: vec![FormatInfo {
                id: "hostile-script".into(),
                description: "A JSON script of the items to emit (tests only)".into(),
                file_patterns: vec!["*.hostile".into()],
            }],
        }
    }

    fn sniff(_head: &[u8], file_name: &str) -> u8 {
        if file_name.ends_with(".hostile") {
            100
        } else {
            0
        }
    }

    fn open(mut input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        let mut bytes = Vec::new();
        input
            .read_to_end(&mut bytes)
            .map_err(|e| ParseError::new(ErrorKind::Internal, format!("reading failed: {e}")))?;
        let script: Script = serde_json::from_slice(&bytes)
            .map_err(|e| ParseError::malformed(format!("not a hostile script: {e}")))?;
        Ok(Box::new(Scripted {
            entries: script.items.into_iter(),
            repeating: None,
            queue: VecDeque::new(),
            ignore_max_items: script.ignore_max_items,
        }))
    }
}

export_adapter!(Hostile);
