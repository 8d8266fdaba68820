//! Conversions from the WIT binding types to the host model.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::bindings::chatmill::adapter::types as wit;
use crate::model::{AdapterInfo, FormatInfo, Location, ParseError, ParseErrorKind, Part};

pub(crate) fn adapter_info(i: wit::AdapterInfo) -> AdapterInfo {
    AdapterInfo {
        id: i.id,
        name: i.name,
        version: i.version,
        formats: i
            .formats
            .into_iter()
            .map(|f| FormatInfo {
                id: f.id,
                description: f.description,
                file_patterns: f.file_patterns,
            })
            .collect(),
    }
}

pub(crate) fn parse_error(e: wit::ParseError) -> ParseError {
    ParseError {
        kind: match e.kind {
            wit::ErrorKind::NotThisFormat => ParseErrorKind::NotThisFormat,
            wit::ErrorKind::Malformed => ParseErrorKind::Malformed,
            wit::ErrorKind::UnsupportedVersion => ParseErrorKind::UnsupportedVersion,
            wit::ErrorKind::TooLarge => ParseErrorKind::TooLarge,
            wit::ErrorKind::Internal => ParseErrorKind::Internal,
        },
        message: e.message,
        location: e.location.map(|l| Location {
            byte_offset: l.byte_offset,
            line: l.line,
            record: l.record,
            pointer: l.pointer,
        }),
    }
}

/// A timestamp, or `Err` with a description when it is out of range.
pub(crate) fn timestamp(t: wit::Timestamp) -> Result<DateTime<Utc>, String> {
    if t.nanos >= 1_000_000_000 {
        return Err(format!("timestamp with {} nanoseconds", t.nanos));
    }
    DateTime::from_timestamp(t.seconds, t.nanos)
        .ok_or_else(|| format!("timestamp {} s out of range", t.seconds))
}

pub(crate) fn metadata(m: Vec<(String, String)>) -> BTreeMap<String, String> {
    m.into_iter().collect()
}

pub(crate) fn part(p: wit::Part) -> Part {
    match p {
        wit::Part::Text(text) => Part::Text { text },
        wit::Part::Code(c) => Part::Code {
            language: c.language,
            code: c.code,
        },
        wit::Part::Thinking(text) => Part::Thinking { text },
        wit::Part::ToolCall(t) => Part::ToolCall {
            name: t.name,
            summary: t.summary,
        },
        wit::Part::ToolResult(summary) => Part::ToolResult { summary },
        wit::Part::Attachment(a) => Part::Attachment {
            name: a.name,
            media_type: a.media_type,
            uri: a.uri,
        },
        wit::Part::Other(o) => Part::Other {
            kind: o.kind,
            text: o.text,
        },
    }
}
