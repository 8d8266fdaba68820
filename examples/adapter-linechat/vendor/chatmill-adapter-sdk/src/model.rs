//! The normalized values an adapter produces: plain Rust mirrors of the WIT
//! `types` interface, usable natively (tests, benchmarks) and in the guest.

use std::collections::BTreeMap;
use std::fmt;

/// An instant in UTC: seconds since the Unix epoch plus nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    pub seconds: i64,
    pub nanos: u32,
}

impl Timestamp {
    /// Builds a timestamp from fractional Unix seconds (as ChatGPT exports
    /// them), rounded to the microsecond. Non-finite values give `None`.
    pub fn from_unix_f64(secs: f64) -> Option<Self> {
        if !secs.is_finite() || secs.abs() > 1e12 {
            return None;
        }
        let micros = (secs * 1e6).round() as i64;
        Some(Self {
            seconds: micros.div_euclid(1_000_000),
            nanos: (micros.rem_euclid(1_000_000) * 1000) as u32,
        })
    }

    /// Builds a timestamp from Unix milliseconds.
    pub fn from_unix_millis(ms: i64) -> Self {
        Self {
            seconds: ms.div_euclid(1000),
            nanos: (ms.rem_euclid(1000) * 1_000_000) as u32,
        }
    }

    /// Parses the date-time spellings exports use: RFC 3339 / ISO 8601 with
    /// an offset or `Z` (normalized to UTC), and offset-less date-times
    /// (`2024-06-12T10:30:00`, `2024-06-12 10:30:00.123`), taken as UTC.
    pub fn parse(s: &str) -> Option<Self> {
        use chrono::{DateTime, NaiveDateTime};
        let s = s.trim();
        if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
            return Some(Self::from_chrono(dt.naive_utc()));
        }
        // RFC 3339 with a space instead of `T`.
        if let Some((d, t)) = s.split_once(' ')
            && let Ok(dt) = DateTime::parse_from_rfc3339(&format!("{d}T{t}"))
        {
            return Some(Self::from_chrono(dt.naive_utc()));
        }
        for fmt in [
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y-%m-%d %H:%M:%S%.f",
            "%Y-%m-%dT%H:%M",
        ] {
            if let Ok(n) = NaiveDateTime::parse_from_str(s, fmt) {
                return Some(Self::from_chrono(n));
            }
        }
        None
    }

    fn from_chrono(n: chrono::NaiveDateTime) -> Self {
        let utc = n.and_utc();
        Self {
            seconds: utc.timestamp(),
            nanos: utc.timestamp_subsec_nanos(),
        }
    }

    /// RFC 3339 rendering in UTC (`2024-06-12T10:30:00Z`, fractional seconds
    /// only when present).
    pub fn to_rfc3339(self) -> String {
        match chrono::DateTime::from_timestamp(self.seconds, self.nanos) {
            Some(dt) => dt.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            None => format!("@{}", self.seconds),
        }
    }
}

/// Where in the input something happened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    pub byte_offset: Option<u64>,
    pub line: Option<u64>,
    pub record: Option<u64>,
    pub pointer: Option<String>,
}

impl Location {
    pub fn line(line: u64) -> Self {
        Self {
            line: Some(line),
            ..Self::default()
        }
    }

    pub fn byte(offset: u64) -> Self {
        Self {
            byte_offset: Some(offset),
            ..Self::default()
        }
    }

    pub fn record(index: u64) -> Self {
        Self {
            record: Some(index),
            ..Self::default()
        }
    }

    pub fn with_pointer(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(l) = self.line {
            parts.push(format!("line {l}"));
        }
        if let Some(r) = self.record {
            parts.push(format!("record {r}"));
        }
        if let Some(p) = &self.pointer {
            parts.push(format!("at {p}"));
        }
        if let Some(b) = self.byte_offset {
            parts.push(format!("byte {b}"));
        }
        f.write_str(&parts.join(", "))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    NotThisFormat,
    Malformed,
    UnsupportedVersion,
    TooLarge,
    Internal,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotThisFormat => "not-this-format",
            Self::Malformed => "malformed",
            Self::UnsupportedVersion => "unsupported-version",
            Self::TooLarge => "too-large",
            Self::Internal => "internal",
        }
    }
}

/// A typed parse failure with a location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub kind: ErrorKind,
    pub message: String,
    pub location: Option<Location>,
}

impl ParseError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            location: None,
        }
    }

    pub fn malformed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Malformed, message)
    }

    pub fn not_this_format(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotThisFormat, message)
    }

    pub fn at(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.kind.as_str())?;
        if let Some(loc) = &self.location {
            write!(f, " at {loc}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatInfo {
    pub id: String,
    pub description: String,
    pub file_patterns: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterInfo {
    pub id: String,
    pub name: String,
    pub version: String,
    pub formats: Vec<FormatInfo>,
}

pub type Metadata = Vec<(String, String)>;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConversationStart {
    pub id: String,
    pub title: Option<String>,
    pub created: Option<Timestamp>,
    pub updated: Option<Timestamp>,
    pub platform: String,
    pub model: Option<String>,
    pub metadata: Metadata,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Code {
        language: Option<String>,
        code: String,
    },
    Thinking(String),
    ToolCall {
        name: String,
        summary: String,
    },
    ToolResult(String),
    Attachment {
        name: String,
        media_type: Option<String>,
        uri: Option<String>,
    },
    Other {
        kind: String,
        text: String,
    },
}

impl Part {
    /// Whether the part carries no content at all (empty text).
    pub fn is_empty(&self) -> bool {
        match self {
            Self::Text(t) | Self::Thinking(t) | Self::ToolResult(t) => t.trim().is_empty(),
            Self::Code { code, .. } => code.trim().is_empty(),
            Self::Other { text, .. } => text.trim().is_empty(),
            Self::ToolCall { .. } | Self::Attachment { .. } => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TurnPair {
    pub index: u32,
    pub timestamp: Option<Timestamp>,
    pub model: Option<String>,
    pub user: Vec<Part>,
    pub assistant: Vec<Part>,
    pub metadata: Metadata,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkipCount {
    pub reason: String,
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConversationEnd {
    pub id: String,
    pub skipped: Vec<SkipCount>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    ConversationStart(ConversationStart),
    Pair(TurnPair),
    ConversationEnd(ConversationEnd),
}

/// Counts of things skipped on purpose, by reason, in a stable order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skips(BTreeMap<String, u32>);

impl Skips {
    pub fn add(&mut self, reason: impl Into<String>) {
        *self.0.entry(reason.into()).or_default() += 1;
    }

    pub fn get(&self, reason: &str) -> u32 {
        self.0.get(reason).copied().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn into_counts(self) -> Vec<SkipCount> {
        self.0
            .into_iter()
            .map(|(reason, count)| SkipCount { reason, count })
            .collect()
    }
}

/// A whole conversation, for adapters that build one at a time (most do:
/// memory is then bounded by the largest conversation, not the file).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Conversation {
    pub start: ConversationStart,
    pub pairs: Vec<TurnPair>,
    pub skipped: Skips,
}

impl Conversation {
    /// The conversation as items: start, pairs (re-numbered 1..), end.
    pub fn into_items(self) -> impl Iterator<Item = Item> {
        let id = self.start.id.clone();
        let end = ConversationEnd {
            id,
            skipped: self.skipped.into_counts(),
        };
        std::iter::once(Item::ConversationStart(self.start))
            .chain(self.pairs.into_iter().enumerate().map(|(i, mut p)| {
                p.index = u32::try_from(i + 1).unwrap_or(u32::MAX);
                Item::Pair(p)
            }))
            .chain(std::iter::once(Item::ConversationEnd(end)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_utc() {
        let a = Timestamp::parse("2024-06-12T10:30:00Z").unwrap();
        let b = Timestamp::parse("2024-06-12T12:30:00+02:00").unwrap();
        let c = Timestamp::parse("2024-06-12 10:30:00").unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(a.to_rfc3339(), "2024-06-12T10:30:00Z");
        let f = Timestamp::parse("2025-01-02T03:04:05.123456Z").unwrap();
        assert_eq!(f.nanos, 123_456_000);
        assert!(Timestamp::parse("yesterday").is_none());
    }

    #[test]
    fn unix_floats_round_to_microseconds() {
        let t = Timestamp::from_unix_f64(1_700_000_000.5).unwrap();
        assert_eq!((t.seconds, t.nanos), (1_700_000_000, 500_000_000));
        assert!(Timestamp::from_unix_f64(f64::NAN).is_none());
        let m = Timestamp::from_unix_millis(-1);
        assert_eq!((m.seconds, m.nanos), (-1, 999_000_000));
    }

    #[test]
    fn conversation_items_are_renumbered_and_balanced() {
        let mut c = Conversation::default();
        c.start.id = "c1".into();
        c.pairs.push(TurnPair {
            index: 7,
            ..TurnPair::default()
        });
        c.pairs.push(TurnPair::default());
        c.skipped.add("hidden");
        let items: Vec<_> = c.into_items().collect();
        assert_eq!(items.len(), 4);
        match (&items[1], &items[2], &items[3]) {
            (Item::Pair(a), Item::Pair(b), Item::ConversationEnd(e)) => {
                assert_eq!((a.index, b.index), (1, 2));
                assert_eq!(e.skipped[0].count, 1);
            }
            other => panic!("unexpected items {other:?}"),
        }
    }
}
