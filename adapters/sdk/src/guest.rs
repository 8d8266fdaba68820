//! The component side: WIT bindings and the glue between them and the
//! [`Adapter`](crate::Adapter) trait. Compiled only for wasm32.

use std::cell::RefCell;
use std::io::Read;

pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "adapter",
        pub_export_macro: true,
        default_bindings_module: "chatmill_adapter_sdk::guest::bindings",
    });
}

/// The adapter's heap. An adapter is single-threaded and allocates a string
/// or a map node for almost every JSON value; talc serves that faster than
/// wasi-libc's dlmalloc (ChatGPT parse in the sandbox: +6 %, throughput bench).
#[cfg(feature = "allocator")]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

pub use bindings::chatmill::adapter::input::Source;
use bindings::chatmill::adapter::types as wit;

use crate::model::{self, ErrorKind, Item, Part};
use crate::{Adapter, Input, Session};

/// Bytes asked of the host per read.
const READ_SIZE: u32 = 64 * 1024;

struct SourceReader {
    source: Source,
}

impl Read for SourceReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let max = u32::try_from(buf.len()).unwrap_or(u32::MAX).min(READ_SIZE);
        let bytes = self.source.read(max).map_err(std::io::Error::other)?;
        // The host must not return more than asked for; be defensive anyway.
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        Ok(n)
    }
}

/// Sends a message to the host log (shown with `-v`).
pub fn log(level: bindings::chatmill::adapter::log::Level, message: &str) {
    bindings::chatmill::adapter::log::log(level, message);
}

pub fn describe<A: Adapter>() -> wit::AdapterInfo {
    let info = A::describe();
    wit::AdapterInfo {
        id: info.id,
        name: info.name,
        version: info.version,
        formats: info
            .formats
            .into_iter()
            .map(|f| wit::FormatInfo {
                id: f.id,
                description: f.description,
                file_patterns: f.file_patterns,
            })
            .collect(),
    }
}

pub struct SessionCell(RefCell<Box<dyn Session>>);

pub fn open<A: Adapter>(
    source: Source,
    options: Vec<(String, String)>,
) -> Result<SessionCell, wit::ParseError> {
    let name = source.name();
    let size = source.size_hint();
    let input = Input::new(
        name,
        size,
        Box::new(std::io::BufReader::with_capacity(
            READ_SIZE as usize,
            SourceReader { source },
        )),
    );
    A::open(input, &options)
        .map(|s| SessionCell(RefCell::new(s)))
        .map_err(error)
}

impl SessionCell {
    pub fn next(&self, max_items: u32) -> Result<Vec<wit::Item>, wit::ParseError> {
        let mut session = self.0.borrow_mut();
        let items = session
            .next_batch(max_items.max(1) as usize)
            .map_err(error)?;
        Ok(items.into_iter().map(item).collect())
    }
}

fn error(e: model::ParseError) -> wit::ParseError {
    wit::ParseError {
        kind: match e.kind {
            ErrorKind::NotThisFormat => wit::ErrorKind::NotThisFormat,
            ErrorKind::Malformed => wit::ErrorKind::Malformed,
            ErrorKind::UnsupportedVersion => wit::ErrorKind::UnsupportedVersion,
            ErrorKind::TooLarge => wit::ErrorKind::TooLarge,
            ErrorKind::Internal => wit::ErrorKind::Internal,
        },
        message: e.message,
        location: e.location.map(|l| wit::Location {
            byte_offset: l.byte_offset,
            line: l.line,
            record: l.record,
            pointer: l.pointer,
        }),
    }
}

fn ts(t: model::Timestamp) -> wit::Timestamp {
    wit::Timestamp {
        seconds: t.seconds,
        nanos: t.nanos,
    }
}

fn part(p: Part) -> wit::Part {
    match p {
        Part::Text(t) => wit::Part::Text(t),
        Part::Code { language, code } => wit::Part::Code(wit::CodeBlock { language, code }),
        Part::Thinking(t) => wit::Part::Thinking(t),
        Part::ToolCall { name, summary } => wit::Part::ToolCall(wit::ToolCall { name, summary }),
        Part::ToolResult(t) => wit::Part::ToolResult(t),
        Part::Attachment {
            name,
            media_type,
            uri,
        } => wit::Part::Attachment(wit::Attachment {
            name,
            media_type,
            uri,
        }),
        Part::Other { kind, text } => wit::Part::Other(wit::OtherPart { kind, text }),
    }
}

fn item(i: Item) -> wit::Item {
    match i {
        Item::ConversationStart(s) => wit::Item::ConversationStart(wit::ConversationStart {
            id: s.id,
            title: s.title,
            created: s.created.map(ts),
            updated: s.updated.map(ts),
            platform: s.platform,
            model: s.model,
            metadata: s.metadata,
        }),
        Item::Pair(p) => wit::Item::Pair(wit::TurnPair {
            index: p.index,
            timestamp: p.timestamp.map(ts),
            model: p.model,
            user: p.user.into_iter().map(part).collect(),
            assistant: p.assistant.into_iter().map(part).collect(),
            metadata: p.metadata,
        }),
        Item::ConversationEnd(e) => wit::Item::ConversationEnd(wit::ConversationEnd {
            id: e.id,
            skipped: e
                .skipped
                .into_iter()
                .map(|s| wit::SkipCount {
                    reason: s.reason,
                    count: s.count,
                })
                .collect(),
        }),
    }
}
