//! chatmill's normalized conversation model: what adapters produce, after
//! validation, in a form the pipeline and the CLI's JSON output use.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub mod visible;

/// The chunk frontmatter's own fields (and the keys the host sets on some
/// chunks): metadata an adapter returns may not use them. The host drops
/// such a key and reports it once per input.
pub const RESERVED_KEYS: &[&str] = &[
    "source_file",
    "source_platform",
    "model_used",
    "timestamp",
    "conversation_title",
    "title_derived",
    "turn_range",
    "topics",
    "chunk_id",
    "agent_id",
    "conversation_id",
    "part",
    "header_status",
];

/// The scheme of an attachment's `uri` once the host has copied the file
/// it names into the root's `assets/` folder (`chatmill-asset:<name>`): set
/// only by the host; the trust boundary drops it from what adapters send.
pub const ASSET_URI_SCHEME: &str = "chatmill-asset:";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatInfo {
    pub id: String,
    pub description: String,
    pub file_patterns: Vec<String>,
}

/// What an adapter says about itself (`describe`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdapterInfo {
    pub id: String,
    pub name: String,
    pub version: String,
    pub formats: Vec<FormatInfo>,
}

/// One typed piece of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Part {
    Text {
        text: String,
    },
    Code {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
        code: String,
    },
    Thinking {
        text: String,
    },
    ToolCall {
        name: String,
        summary: String,
    },
    ToolResult {
        summary: String,
    },
    Attachment {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uri: Option<String>,
    },
    Other {
        kind: String,
        text: String,
    },
}

impl Part {
    /// The number of text bytes the part carries (for batch limits).
    pub fn text_len(&self) -> usize {
        match self {
            Self::Text { text } | Self::Thinking { text } => text.len(),
            Self::ToolResult { summary } => summary.len(),
            Self::Code { language, code } => code.len() + language.as_ref().map_or(0, String::len),
            Self::ToolCall { name, summary } => name.len() + summary.len(),
            Self::Attachment {
                name,
                media_type,
                uri,
            } => {
                name.len()
                    + media_type.as_ref().map_or(0, String::len)
                    + uri.as_ref().map_or(0, String::len)
            }
            Self::Other { kind, text } => kind.len() + text.len(),
        }
    }
}

/// One user prompt and the assistant's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pair {
    /// 1-based position in the conversation.
    pub index: u32,
    /// When the prompt was sent; `None` when the source has no time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub user: Vec<Part>,
    pub assistant: Vec<Part>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// One conversation with all its pairs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversation {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<DateTime<Utc>>,
    pub platform: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    pub pairs: Vec<Pair>,
    /// Things the adapter skipped on purpose, by reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skipped: BTreeMap<String, u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParseErrorKind {
    NotThisFormat,
    Malformed,
    UnsupportedVersion,
    TooLarge,
    Internal,
}

impl ParseErrorKind {
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

/// Where in an input a problem is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
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
            parts.push(format!("at `{p}`"));
        }
        if let Some(b) = self.byte_offset {
            parts.push(format!("byte {b}"));
        }
        f.write_str(&parts.join(", "))
    }
}

/// A parse failure reported by an adapter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseError {
    pub kind: ParseErrorKind,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(loc) = &self.location {
            let loc = loc.to_string();
            if !loc.is_empty() {
                write!(f, " ({loc})")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_serialize_with_a_type_tag() {
        let p = Part::ToolCall {
            name: "Read".into(),
            summary: "src/main.rs".into(),
        };
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"type":"tool-call","name":"Read","summary":"src/main.rs"}"#
        );
        let back: Part = serde_json::from_str(r#"{"type":"text","text":"hi"}"#).unwrap();
        assert_eq!(back, Part::Text { text: "hi".into() });
    }

    #[test]
    fn locations_render_what_they_have() {
        let l = Location {
            line: Some(3),
            pointer: Some("/a/b".into()),
            ..Location::default()
        };
        assert_eq!(l.to_string(), "line 3, at `/a/b`");
        let e = ParseError {
            kind: ParseErrorKind::Malformed,
            message: "bad".into(),
            location: Some(l),
        };
        assert_eq!(e.to_string(), "bad (line 3, at `/a/b`)");
    }
}
