//! A chunk file: YAML frontmatter, `## Context` (the contextual header) and
//! `## Exchange` (the full user/assistant text), and its identity.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The chunk format this chatmill writes. Raise it with any change to what
/// the chunks of the same pairs say (rendering, header, frontmatter,
/// chunking rules): inputs whose chunks an older format wrote are then
/// reported as outdated, and `import --reprocess` rewrites them.
/// 2: titles derived where the source has none, citations as footnotes in
/// place, attachments linked to `assets/`, sub-agent runs of their own, one
/// rule for mechanical exchanges ("hi again" is left out like "hi there").
/// 3: secrets redacted, and the rule-set version in the frontmatter
/// (`redaction`).
pub const CHUNK_FORMAT: u32 = 3;

/// The frontmatter: exactly the spec's fields, plus `conversation_id` and
/// per-format extras (`project`, `session_id`, …) flattened in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frontmatter {
    pub source_file: String,
    /// `chatgpt`, `claude`, `gemini`, `claude-code`, `local` or `api`.
    pub source_platform: String,
    /// The model that answered, `unknown` when the source does not say.
    pub model_used: String,
    /// ISO 8601, UTC.
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_title: Option<String>,
    /// The source has no title: `conversation_title` is a phrase from the
    /// first request ([`chatmill_chunking::title`]). Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub title_derived: bool,
    /// `"3"` or `"3-4"`.
    pub turn_range: String,
    pub topics: Vec<String>,
    pub chunk_id: String,
    /// `external` for imports, the agent's id (default `user`) inline.
    pub agent_id: String,
    pub conversation_id: String,
    /// The redaction rule-set version its text was redacted with
    /// (`chatmill_redact::RULESET_VERSION`); absent: not redacted (written
    /// before redaction, or with it off). `verify` scans only chunks older
    /// than the rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction: Option<u32>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, String>,
}

/// One user/assistant exchange inside a chunk (a merged chunk has several).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub user: String,
    pub assistant: String,
}

/// A whole chunk file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkDoc {
    pub frontmatter: Frontmatter,
    /// The contextual header, 2–4 sentences.
    pub context: String,
    pub exchanges: Vec<Exchange>,
}

#[derive(Debug, thiserror::Error)]
pub enum ChunkError {
    #[error("no YAML frontmatter (the file must start with a `---` line)")]
    NoFrontmatter,
    #[error("the frontmatter is not closed by a `---` line")]
    UnclosedFrontmatter,
    #[error("invalid frontmatter: {0}")]
    Yaml(String),
    #[error("missing `{0}` section")]
    MissingSection(&'static str),
    #[error("cannot write frontmatter: {0}")]
    Serialize(String),
}

/// The turn range as the spec writes it: `"3"` or `"3-4"`.
pub fn turn_range(first: u32, last: u32) -> String {
    if first == last {
        first.to_string()
    } else {
        format!("{first}-{last}")
    }
}

/// A chunk's identity: deterministic, stable across re-imports (it depends
/// only on the platform, the conversation's own id, the pair numbers and the
/// date of the first pair — never on the file name or title, which change
/// between exports), collision-free across the conversations of one file,
/// and readable: `chatgpt-3f9a1c2b7d4e-003-2024-05-01`.
pub fn chunk_id(
    platform: &str,
    conversation_id: &str,
    first: u32,
    last: u32,
    date: DateTime<Utc>,
) -> String {
    let mut h = Sha256::new();
    h.update(platform.as_bytes());
    h.update([0]);
    h.update(conversation_id.as_bytes());
    let conv = &hex::encode(h.finalize())[..12];
    let turns = if first == last {
        format!("{first:03}")
    } else {
        format!("{first:03}-{last:03}")
    };
    format!("{platform}-{conv}-{turns}-{}", ymd(date))
}

/// `date` as `%Y-%m-%d` (chrono's `format` reads its pattern anew on
/// every call: a measurable share of making a chunk id).
fn ymd(date: DateTime<Utc>) -> String {
    use chrono::Datelike;
    if (0..=9999).contains(&date.year()) {
        format!("{:04}-{:02}-{:02}", date.year(), date.month(), date.day())
    } else {
        date.format("%Y-%m-%d").to_string()
    }
}

/// Lines of exchange text that would be read as structure get one more
/// leading backslash (and lose one when read back), so any text round-trips.
fn is_structural(line: &str) -> bool {
    let bare = line.trim_start_matches('\\').trim_end();
    bare == "**User:**" || bare == "**Assistant:**" || bare == "## Context" || bare == "## Exchange"
}

fn escape(text: &str) -> String {
    // Almost no text has a structural line: copy it as it is.
    if !text.split('\n').any(is_structural) {
        return text.to_string();
    }
    text.split('\n')
        .map(|l| {
            if is_structural(l) {
                format!("\\{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn unescape(text: &str) -> String {
    if !text.contains("\\") {
        return text.to_string();
    }
    text.split('\n')
        .map(|l| {
            if is_structural(l) && l.starts_with('\\') {
                l[1..].to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl ChunkDoc {
    /// The file's text.
    pub fn to_markdown(&self) -> Result<String, ChunkError> {
        let yaml = serde_saphyr::to_string(&self.frontmatter)
            .map_err(|e| ChunkError::Serialize(e.to_string()))?;
        let body: usize = self
            .exchanges
            .iter()
            .map(|e| e.user.len() + e.assistant.len() + 40)
            .sum();
        let mut out = String::with_capacity(yaml.len() + self.context.len() + body + 64);
        out.push_str("---\n");
        out.push_str(&yaml);
        if !yaml.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("---\n\n## Context\n\n");
        out.push_str(&escape(self.context.trim()));
        out.push_str("\n\n## Exchange\n");
        for e in &self.exchanges {
            out.push_str("\n**User:**\n\n");
            out.push_str(&escape(&e.user));
            out.push_str("\n\n**Assistant:**\n\n");
            out.push_str(&escape(&e.assistant));
            out.push('\n');
        }
        Ok(out)
    }

    /// Only the frontmatter of a chunk file (what `verify` and re-indexing
    /// read first).
    pub fn parse_frontmatter(text: &str) -> Result<(Frontmatter, &str), ChunkError> {
        let (yaml, body) = Self::split(text)?;
        let fm: Frontmatter =
            serde_saphyr::from_str(yaml).map_err(|e| ChunkError::Yaml(e.to_string()))?;
        Ok((fm, body))
    }

    /// A chunk file's text as its frontmatter's YAML (with its last
    /// newline) and what follows the closing `---` line, unparsed.
    pub fn split(text: &str) -> Result<(&str, &str), ChunkError> {
        if !text.starts_with("---\n") {
            return Err(ChunkError::NoFrontmatter);
        }
        chatmill_index::document::split_frontmatter(text).ok_or(ChunkError::UnclosedFrontmatter)
    }

    /// Parses a chunk file written by [`ChunkDoc::to_markdown`].
    pub fn parse(text: &str) -> Result<Self, ChunkError> {
        let (frontmatter, body) = Self::parse_frontmatter(text)?;
        let body = body
            .strip_prefix("\n## Context\n\n")
            .ok_or(ChunkError::MissingSection("## Context"))?;
        let (context, exchange) = body
            .split_once("\n\n## Exchange\n")
            .ok_or(ChunkError::MissingSection("## Exchange"))?;
        let mut exchanges = Vec::new();
        let mut rest = exchange;
        while let Some(after) = rest.strip_prefix("\n**User:**\n\n") {
            let (user, after) = after
                .split_once("\n\n**Assistant:**\n\n")
                .ok_or(ChunkError::MissingSection("**Assistant:**"))?;
            let (assistant, next) = match after.find("\n\n**User:**\n\n") {
                Some(i) => (&after[..i], &after[i + 1..]),
                None => (after.strip_suffix('\n').unwrap_or(after), ""),
            };
            exchanges.push(Exchange {
                user: unescape(user),
                assistant: unescape(assistant),
            });
            rest = next;
        }
        if exchanges.is_empty() {
            return Err(ChunkError::MissingSection("**User:**"));
        }
        Ok(Self {
            frontmatter,
            context: unescape(context),
            exchanges,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_written_as_chronos_pattern_writes_them() {
        for t in [
            0,
            1_714_557_600,
            -62_135_596_800,
            253_402_300_799,
            253_402_300_800,
            -62_135_596_801,
        ] {
            let d = DateTime::from_timestamp(t, 0).unwrap();
            assert_eq!(ymd(d), d.format("%Y-%m-%d").to_string(), "{t}");
        }
    }

    fn doc(title: &str, user: &str, assistant: &str) -> ChunkDoc {
        let date = DateTime::parse_from_rfc3339("2024-05-01T10:00:00Z")
            .unwrap()
            .to_utc();
        ChunkDoc {
            frontmatter: Frontmatter {
                source_file: "conversations.json".into(),
                source_platform: "chatgpt".into(),
                model_used: "gpt-4o".into(),
                timestamp: "2024-05-01T10:00:00Z".into(),
                conversation_title: Some(title.into()),
                title_derived: false,
                turn_range: turn_range(3, 4),
                topics: vec!["sourdough starter".into(), "fermentation: acetone".into()],
                chunk_id: chunk_id("chatgpt", "conv-1", 3, 4, date),
                agent_id: "external".into(),
                conversation_id: "conv-1".into(),
                redaction: None,
                extra: BTreeMap::from([("project".into(), "bakery".into())]),
            },
            context: "The user is reviving a sourdough starter. They asked when it is ready."
                .into(),
            exchanges: vec![
                Exchange {
                    user: user.into(),
                    assistant: assistant.into(),
                },
                Exchange {
                    user: "And the float test?".into(),
                    assistant: "Useful, not decisive.".into(),
                },
            ],
        }
    }

    #[test]
    fn hard_titles_and_texts_round_trip() {
        for title in [
            "Re: \"quotes\" and: colons",
            "emoji 🍞 and 'single' quotes",
            "two\nlines",
            "- looks like a list",
            "null",
            "#hash",
            "  padded  ",
        ] {
            let d = doc(
                title,
                "a line\n**Assistant:**\nfake marker\n\\**User:**",
                "## Exchange\n```yaml\n---\nkey: value\n---\n```\n",
            );
            let text = d.to_markdown().unwrap();
            let back = ChunkDoc::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back, d, "{text}");
        }
    }

    #[test]
    fn the_file_shape_is_the_spec_s() {
        let text = doc("Sourdough", "When is it ready?", "When it doubles.")
            .to_markdown()
            .unwrap();
        assert!(
            text.starts_with("---\nsource_file: conversations.json\n"),
            "{text}"
        );
        assert!(
            text.contains("\nturn_range: 3-4\n") || text.contains("\nturn_range: \"3-4\"\n"),
            "{text}"
        );
        assert!(
            text.contains("\nproject: bakery\n"),
            "extras are flattened: {text}"
        );
        assert!(
            text.contains("---\n\n## Context\n\nThe user is reviving"),
            "{text}"
        );
        assert!(text.contains("\n## Exchange\n\n**User:**\n\nWhen is it ready?\n\n**Assistant:**\n\nWhen it doubles.\n"), "{text}");
    }

    #[test]
    fn chunk_ids_are_stable_distinct_and_readable() {
        let d = DateTime::parse_from_rfc3339("2024-05-01T23:59:59Z")
            .unwrap()
            .to_utc();
        let a = chunk_id("chatgpt", "conv-1", 3, 3, d);
        assert_eq!(a, chunk_id("chatgpt", "conv-1", 3, 3, d));
        assert!(
            a.starts_with("chatgpt-") && a.ends_with("-003-2024-05-01"),
            "{a}"
        );
        assert_ne!(a, chunk_id("chatgpt", "conv-2", 3, 3, d));
        assert_ne!(a, chunk_id("claude", "conv-1", 3, 3, d));
        assert!(chunk_id("chatgpt", "conv-1", 3, 4, d).contains("-003-004-"));
    }

    #[test]
    fn broken_files_are_errors() {
        assert!(matches!(
            ChunkDoc::parse("no frontmatter"),
            Err(ChunkError::NoFrontmatter)
        ));
        assert!(matches!(
            ChunkDoc::parse("---\na: b\n"),
            Err(ChunkError::UnclosedFrontmatter)
        ));
        assert!(matches!(
            ChunkDoc::parse("---\na: [\n---\n"),
            Err(ChunkError::Yaml(_))
        ));
    }
}
