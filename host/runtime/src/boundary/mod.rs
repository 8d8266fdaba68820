//! The trust boundary. Adapters come from strangers: everything one returns
//! is checked and converted into the host model here, and nowhere else,
//! before it can reach a path, a file name, YAML, SQL, the index or a
//! terminal. `wit/adapter.wit` states each rule beside the field it governs.
//!
//! A broken rule ([`Rule`]) fails the input with a protocol violation that
//! names the adapter, the input and the rule. Values the host can repair
//! without guessing (a title on several lines, a `session-id` key) are
//! repaired; a value that is dropped or cut is counted in [`Adjustments`]
//! and reported, never lost in silence.

mod text;

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Utc};

use crate::bindings::chatmill::adapter::types as wit;
use crate::model::{
    AdapterInfo, Conversation, FormatInfo, Location, Pair, ParseError, ParseErrorKind, Part,
    RESERVED_KEYS,
};
pub(crate) use text::{has_unsafe, is_id};

/// Longest `platform`, bytes.
pub const PLATFORM_MAX: usize = 32;
/// Longest conversation id, bytes.
pub const CONVERSATION_ID_MAX: usize = 1024;
/// Longest title, bytes; longer ones are cut.
pub const TITLE_MAX: usize = 512;
/// Longest model name, bytes; longer ones are cut.
pub const MODEL_MAX: usize = 128;
/// Longest metadata key after normalization, bytes; longer keys are dropped.
pub const KEY_MAX: usize = 64;
/// Longest metadata value, bytes; longer ones are cut.
pub const VALUE_MAX: usize = 4096;
/// Most metadata entries on one conversation or pair; the rest are dropped.
pub const ENTRIES_MAX: usize = 64;
/// Longest skip reason, bytes; longer ones are cut.
pub const REASON_MAX: usize = 200;
/// Most distinct skip reasons per conversation; the rest are merged.
pub const REASONS_MAX: usize = 64;
/// The reason more skip reasons than [`REASONS_MAX`] are merged into.
pub const OTHER_REASONS: &str = "other reasons";
/// Longest `citation` part (a cited page, `Title — URL`), bytes; longer
/// ones are cut. It is written as one footnote line.
pub const CITATION_MAX: usize = 2560;
/// Longest adapter parse-error message kept, bytes.
const MESSAGE_MAX: usize = 4096;

/// A rule of the adapter protocol whose breach fails the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// Items nest as start, pairs, end, with matching ids.
    Structure,
    /// `platform` uses the adapter-id alphabet.
    Platform,
    /// Conversation ids are short, visible text.
    ConversationId,
    /// Pair indexes start at 1 and strictly increase.
    PairIndex,
    /// Timestamps are real instants between the years 1 and 9999.
    Timestamp,
}

impl Rule {
    /// The rule's name, as messages and `wit/adapter.wit` cite it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Structure => "structure",
            Self::Platform => "platform",
            Self::ConversationId => "conversation-id",
            Self::PairIndex => "pair-index",
            Self::Timestamp => "timestamp",
        }
    }

    /// The rule in words.
    pub fn text(self) -> &'static str {
        match self {
            Self::Structure => {
                "items come as conversation-start, its pairs, and a conversation-end with the same id"
            }
            Self::Platform => "1-32 lowercase ASCII letters, digits and `-`, not starting with `-`",
            Self::ConversationId => "1-1024 bytes, not blank, without control characters",
            Self::PairIndex => {
                "pair indexes are at least 1 and strictly increasing within a conversation"
            }
            Self::Timestamp => {
                "nanos below 1,000,000,000 and an instant within the years 1 to 9999"
            }
        }
    }
}

/// A breach of a [`Rule`], with what the adapter sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: Rule,
    pub what: String,
}

fn violation(rule: Rule, what: impl Into<String>) -> Violation {
    Violation {
        rule,
        what: what.into(),
    }
}

/// Something the boundary changed in what an adapter sent, counted per
/// input. Each one loses or rewrites a value, so each is reported.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Adjustment {
    /// A metadata key naming a frontmatter field: dropped.
    ReservedKey(String),
    /// A metadata key with no usable snake_case form: dropped.
    UnusableKey(String),
    /// Two keys with the same snake_case form: the later dropped.
    DuplicateKey(String),
    /// More metadata entries than [`ENTRIES_MAX`]: the rest dropped.
    TooManyEntries,
    /// A value longer than its field allows: cut (the field's name).
    Cut(&'static str),
    /// A code block's language that is not a plain token: dropped.
    CodeLanguage,
    /// More distinct skip reasons than [`REASONS_MAX`]: merged.
    SkipReasonsMerged,
    /// An attachment uri in the host's own scheme
    /// ([`chatmill_model::ASSET_URI_SCHEME`]): dropped.
    HostUri,
}

impl Adjustment {
    fn describe(&self) -> String {
        match self {
            Self::ReservedKey(k) => format!(
                "metadata key `{k}` is reserved (a chunk frontmatter field) and was dropped"
            ),
            Self::UnusableKey(k) => format!(
                "metadata key `{}` has no snake_case ASCII form of at most {KEY_MAX} bytes and was dropped",
                chatmill_model::visible::visible(k)
            ),
            Self::DuplicateKey(k) => {
                format!("a second metadata key that normalizes to `{k}` was dropped")
            }
            Self::TooManyEntries => {
                format!("metadata past the first {ENTRIES_MAX} entries was dropped")
            }
            Self::Cut(field) => format!("a {field} too long was cut"),
            Self::CodeLanguage => {
                "a code block's language that is not a plain token was dropped".into()
            }
            Self::SkipReasonsMerged => format!(
                "skip reasons past the first {REASONS_MAX} were merged into `{OTHER_REASONS}`"
            ),
            Self::HostUri => format!(
                "an attachment uri in chatmill's own `{}` scheme was dropped",
                chatmill_model::ASSET_URI_SCHEME
            ),
        }
    }
}

/// What the boundary changed in one input, counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Adjustments {
    counts: BTreeMap<Adjustment, u64>,
}

impl Adjustments {
    fn add(&mut self, a: Adjustment) {
        *self.counts.entry(a).or_default() += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// One line per kind of change, with how often it happened.
    pub fn lines(&self) -> Vec<String> {
        self.counts
            .iter()
            .map(|(a, n)| match n {
                1 => a.describe(),
                n => format!("{} ({n} times)", a.describe()),
            })
            .collect()
    }
}

/// `describe()`'s answer, checked: ids in the id alphabet, names and
/// descriptions one visible line. Err names the field and its value.
pub(crate) fn adapter_info(i: wit::AdapterInfo) -> Result<AdapterInfo, (&'static str, String)> {
    let line = |s: &str, max: usize| s.len() <= max && !has_unsafe(s);
    if !is_id(&i.id, 64) {
        return Err(("id", i.id));
    }
    if i.name.trim().is_empty() || !line(&i.name, 100) {
        return Err(("name", i.name));
    }
    if i.formats.len() > 32 {
        return Err(("formats", format!("{} formats", i.formats.len())));
    }
    for f in &i.formats {
        if !is_id(&f.id, 64) {
            return Err(("format id", f.id.clone()));
        }
        if !line(&f.description, 500) {
            return Err(("format description", f.description.clone()));
        }
        if f.file_patterns.len() > 16 || f.file_patterns.iter().any(|p| !line(p, 128)) {
            return Err(("file pattern", f.file_patterns.join(", ")));
        }
    }
    Ok(AdapterInfo {
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
    })
}

/// An adapter's parse error; its message (and location pointer) on one
/// line of at most [`MESSAGE_MAX`] bytes.
pub(crate) fn parse_error(e: wit::ParseError) -> ParseError {
    // One line: a message with line breaks could forge a `hint:` line.
    let cap = |s: String| {
        let line = text::one_line(&s).into_owned();
        text::truncated(&line, MESSAGE_MAX).unwrap_or(line)
    };
    ParseError {
        kind: match e.kind {
            wit::ErrorKind::NotThisFormat => ParseErrorKind::NotThisFormat,
            wit::ErrorKind::Malformed => ParseErrorKind::Malformed,
            wit::ErrorKind::UnsupportedVersion => ParseErrorKind::UnsupportedVersion,
            wit::ErrorKind::TooLarge => ParseErrorKind::TooLarge,
            wit::ErrorKind::Internal => ParseErrorKind::Internal,
        },
        message: cap(e.message),
        location: e.location.map(|l| Location {
            byte_offset: l.byte_offset,
            line: l.line,
            record: l.record,
            pointer: l.pointer.map(cap),
        }),
    }
}

/// A timestamp, checked by [`Rule::Timestamp`].
fn timestamp(t: wit::Timestamp, what: &str) -> Result<DateTime<Utc>, Violation> {
    let bad = |why: String| violation(Rule::Timestamp, format!("{what}: {why}"));
    if t.nanos >= 1_000_000_000 {
        return Err(bad(format!("timestamp with {} nanoseconds", t.nanos)));
    }
    let dt = DateTime::from_timestamp(t.seconds, t.nanos)
        .ok_or_else(|| bad(format!("timestamp {} s is out of range", t.seconds)))?;
    if !(1..=9999).contains(&dt.year()) {
        return Err(bad(format!("timestamp in the year {}", dt.year())));
    }
    Ok(dt)
}

/// A one-line field, cut to `max` bytes (counted as `field`).
fn one_line(s: String, max: usize, field: &'static str, adj: &mut Adjustments) -> String {
    let folded = match text::one_line(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(o) => o,
    };
    match text::truncated(&folded, max) {
        Some(cut) => {
            adj.add(Adjustment::Cut(field));
            cut
        }
        None => folded,
    }
}

/// Metadata with snake_case keys, reserved and unusable keys dropped, and
/// values cut to [`VALUE_MAX`]. The first of two equal keys wins.
fn metadata(m: Vec<(String, String)>, adj: &mut Adjustments) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (i, (key, value)) in m.into_iter().enumerate() {
        if i >= ENTRIES_MAX {
            adj.add(Adjustment::TooManyEntries);
            break;
        }
        let Some(key) = text::snake_case(&key, KEY_MAX).map(std::borrow::Cow::into_owned) else {
            let shown = text::truncated(&key, 80).unwrap_or(key);
            adj.add(Adjustment::UnusableKey(shown));
            continue;
        };
        if RESERVED_KEYS.contains(&key.as_str()) {
            adj.add(Adjustment::ReservedKey(key));
            continue;
        }
        if out.contains_key(&key) {
            adj.add(Adjustment::DuplicateKey(key));
            continue;
        }
        let value = match text::truncated(&value, VALUE_MAX) {
            Some(cut) => {
                adj.add(Adjustment::Cut("metadata value"));
                cut
            }
            None => value,
        };
        out.insert(key, value);
    }
    out
}

/// A code block's language: a plain token (`rust`, `c++`, `objective-c`,
/// `c#`) or nothing. It is written after the opening fence.
fn code_language(language: Option<String>, adj: &mut Adjustments) -> Option<String> {
    let lang = language?;
    let trimmed = lang.trim();
    if trimmed.is_empty() {
        return None;
    }
    let token = trimmed.len() <= 32
        && trimmed
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_+#.-".contains(&b));
    if token {
        Some(trimmed.to_string())
    } else {
        adj.add(Adjustment::CodeLanguage);
        None
    }
}

fn part(p: wit::Part, adj: &mut Adjustments) -> Part {
    match p {
        wit::Part::Text(text) => Part::Text { text },
        wit::Part::Code(c) => Part::Code {
            language: code_language(c.language, adj),
            code: c.code,
        },
        wit::Part::Thinking(text) => Part::Thinking { text },
        wit::Part::ToolCall(t) => Part::ToolCall {
            name: one_line(t.name, 128, "tool name", adj),
            summary: t.summary,
        },
        wit::Part::ToolResult(summary) => Part::ToolResult { summary },
        wit::Part::Attachment(a) => Part::Attachment {
            name: one_line(a.name, 256, "attachment name", adj),
            media_type: a.media_type.map(|m| one_line(m, 128, "media type", adj)),
            uri: a
                .uri
                .map(|u| one_line(u, 2048, "attachment uri", adj))
                .filter(|u| {
                    // Only the host links a copied file (`import::assets`).
                    let host = u.starts_with(chatmill_model::ASSET_URI_SCHEME);
                    if host {
                        adj.add(Adjustment::HostUri);
                    }
                    !host
                }),
        },
        wit::Part::Other(o) => {
            let kind = one_line(o.kind, 64, "part kind", adj);
            // A citation is a footnote line (`wit/adapter.wit`, `other`).
            let text = if kind == "citation" {
                one_line(o.text, CITATION_MAX, "citation", adj)
            } else {
                o.text
            };
            Part::Other { kind, text }
        }
    }
}

/// A conversation-start, checked and converted (no pairs yet).
pub(crate) fn conversation(
    s: wit::ConversationStart,
    adj: &mut Adjustments,
) -> Result<Conversation, Violation> {
    if !is_id(&s.platform, PLATFORM_MAX) {
        let shown = text::truncated(&s.platform, 80).unwrap_or(s.platform);
        return Err(violation(
            Rule::Platform,
            format!(
                "conversation `{}` has the platform {shown:?}",
                s.id.escape_debug()
            ),
        ));
    }
    if s.id.trim().is_empty() || s.id.len() > CONVERSATION_ID_MAX || has_control(&s.id) {
        let shown = text::truncated(&s.id, 80).unwrap_or(s.id);
        return Err(violation(
            Rule::ConversationId,
            format!("a conversation has the id {shown:?}"),
        ));
    }
    let title = s.title.map(|t| one_line(t, TITLE_MAX, "title", adj));
    Ok(Conversation {
        created: s.created.map(|t| timestamp(t, "created")).transpose()?,
        updated: s.updated.map(|t| timestamp(t, "updated")).transpose()?,
        title,
        platform: s.platform,
        model: s.model.map(|m| one_line(m, MODEL_MAX, "model name", adj)),
        metadata: metadata(s.metadata, adj),
        id: s.id,
        pairs: Vec::new(),
        skipped: BTreeMap::new(),
    })
}

fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// A pair of `conv`, checked against the pairs before it and appended.
pub(crate) fn push_pair(
    conv: &mut Conversation,
    p: wit::TurnPair,
    adj: &mut Adjustments,
) -> Result<(), Violation> {
    let previous = conv.pairs.last().map_or(0, |q| q.index);
    if p.index == 0 || p.index <= previous {
        return Err(violation(
            Rule::PairIndex,
            format!(
                "pair {} follows pair {previous} in conversation `{}`",
                p.index,
                conv.id.escape_debug()
            ),
        ));
    }
    let what = format!("pair {}", p.index);
    conv.pairs.push(Pair {
        index: p.index,
        timestamp: p.timestamp.map(|t| timestamp(t, &what)).transpose()?,
        model: p.model.map(|m| one_line(m, MODEL_MAX, "model name", adj)),
        user: p.user.into_iter().map(|x| part(x, adj)).collect(),
        assistant: p.assistant.into_iter().map(|x| part(x, adj)).collect(),
        metadata: metadata(p.metadata, adj),
    });
    Ok(())
}

/// The conversation-end of `conv`: its id must match; its skip counts are
/// added up (saturating), reasons on one line and at most [`REASONS_MAX`].
pub(crate) fn end(
    conv: &mut Conversation,
    e: wit::ConversationEnd,
    adj: &mut Adjustments,
) -> Result<(), Violation> {
    if e.id != conv.id {
        return Err(violation(
            Rule::Structure,
            format!(
                "conversation-end for `{}` inside conversation `{}`",
                e.id.escape_debug(),
                conv.id.escape_debug()
            ),
        ));
    }
    let mut merged = false;
    for s in e.skipped {
        let mut reason = one_line(s.reason, REASON_MAX, "skip reason", adj);
        if !conv.skipped.contains_key(&reason) && conv.skipped.len() >= REASONS_MAX {
            reason = OTHER_REASONS.to_string();
            merged = true;
        }
        let n = conv.skipped.entry(reason).or_default();
        *n = n.saturating_add(s.count);
    }
    if merged {
        adj.add(Adjustment::SkipReasonsMerged);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(platform: &str, id: &str) -> wit::ConversationStart {
        wit::ConversationStart {
            id: id.into(),
            title: None,
            created: None,
            updated: None,
            platform: platform.into(),
            model: None,
            metadata: Vec::new(),
        }
    }

    fn pair(index: u32) -> wit::TurnPair {
        wit::TurnPair {
            index,
            timestamp: None,
            model: None,
            user: vec![wit::Part::Text("q".into())],
            assistant: vec![],
            metadata: vec![],
        }
    }

    #[test]
    fn platforms_outside_the_id_alphabet_are_violations() {
        let mut adj = Adjustments::default();
        for bad in [
            "../../escaped-hostile",
            "/tmp/hostile-abs",
            "a\0b",
            "",
            &"a".repeat(33),
        ] {
            let e = conversation(start(bad, "c"), &mut adj).unwrap_err();
            assert_eq!(e.rule, Rule::Platform, "{bad:?}");
        }
        assert!(conversation(start("claude-code", "c"), &mut adj).is_ok());
    }

    #[test]
    fn conversation_ids_are_visible_and_bounded() {
        let mut adj = Adjustments::default();
        for bad in [" ", "a\nb", "x\u{1b}", &"i".repeat(1025)] {
            let e = conversation(start("x", bad), &mut adj).unwrap_err();
            assert_eq!(e.rule, Rule::ConversationId, "{bad:?}");
        }
    }

    #[test]
    fn pair_indexes_start_at_one_and_increase() {
        let mut adj = Adjustments::default();
        for seq in [&[0][..], &[5, 5], &[5, 3], &[1, 2, 2]] {
            let mut c = conversation(start("x", "c"), &mut adj).unwrap();
            let r: Result<(), _> = seq
                .iter()
                .try_for_each(|&i| push_pair(&mut c, pair(i), &mut adj));
            assert_eq!(r.unwrap_err().rule, Rule::PairIndex, "{seq:?}");
        }
        let mut c = conversation(start("x", "c"), &mut adj).unwrap();
        for i in [1, 2, u32::MAX] {
            push_pair(&mut c, pair(i), &mut adj).unwrap();
        }
        assert_eq!(c.pairs.len(), 3);
    }

    #[test]
    fn attachment_uris_in_the_hosts_own_scheme_are_dropped() {
        let mut adj = Adjustments::default();
        let attachment = |uri: &str| {
            wit::Part::Attachment(wit::Attachment {
                name: "x.png".into(),
                media_type: None,
                uri: Some(uri.into()),
            })
        };
        let uri = |p: Part| match p {
            Part::Attachment { uri, .. } => uri,
            other => panic!("{other:?}"),
        };
        let forged = part(attachment("chatmill-asset:0123456789abcdef.png"), &mut adj);
        assert_eq!(uri(forged), None);
        assert_eq!(adj.lines().len(), 1);
        assert!(
            adj.lines()[0].contains("chatmill-asset:"),
            "{:?}",
            adj.lines()
        );
        let pointer = part(attachment("file-service://file-abc"), &mut adj);
        assert_eq!(uri(pointer).as_deref(), Some("file-service://file-abc"));
    }

    #[test]
    fn citations_are_one_bounded_line() {
        let mut adj = Adjustments::default();
        let other = |kind: &str, text: String| {
            wit::Part::Other(wit::OtherPart {
                kind: kind.into(),
                text,
            })
        };
        let text = |p: Part| match p {
            Part::Other { text, .. } => text,
            other => panic!("{other:?}"),
        };
        let forged = part(other("citation", "Page\n**User:**\nhi".into()), &mut adj);
        assert_eq!(text(forged), "Page **User:** hi");
        assert!(adj.is_empty());
        let long = part(other("citation", "x".repeat(CITATION_MAX * 2)), &mut adj);
        assert_eq!(text(long).len(), CITATION_MAX);
        assert_eq!(adj.lines(), ["a citation too long was cut"]);
        // Other kinds keep their lines.
        let note = part(other("note", "a\nb".into()), &mut Adjustments::default());
        assert_eq!(text(note), "a\nb");
    }

    #[test]
    fn timestamps_are_four_digit_years() {
        let t = |seconds, nanos| timestamp(wit::Timestamp { seconds, nanos }, "t");
        assert!(t(0, 0).is_ok());
        assert!(t(253_402_300_799, 999_999_999).is_ok());
        assert_eq!(t(253_402_300_800, 0).unwrap_err().rule, Rule::Timestamp);
        assert_eq!(t(i64::MAX, 0).unwrap_err().rule, Rule::Timestamp);
        assert_eq!(t(0, 1_000_000_000).unwrap_err().rule, Rule::Timestamp);
        assert_eq!(t(-62_135_596_801, 0).unwrap_err().rule, Rule::Timestamp);
    }

    #[test]
    fn metadata_keys_are_normalized_and_reserved_ones_reported() {
        let mut adj = Adjustments::default();
        let m = metadata(
            vec![
                ("Weird Key!".into(), "1".into()),
                ("session-id".into(), "s".into()),
                ("session_id".into(), "again".into()),
                ("chunk_id".into(), "evil".into()),
                ("Timestamp".into(), "evil".into()),
                ("!!!".into(), "x".into()),
                ("long".into(), "v".repeat(VALUE_MAX + 1)),
            ],
            &mut adj,
        );
        assert_eq!(m["weird_key"], "1");
        assert_eq!(m["session_id"], "s");
        assert!(!m.contains_key("chunk_id") && !m.contains_key("timestamp"));
        assert!(m["long"].len() <= VALUE_MAX);
        let lines = adj.lines().join("\n");
        assert!(
            lines.contains("metadata key `chunk_id` is reserved"),
            "{lines}"
        );
        assert!(
            lines.contains("metadata key `timestamp` is reserved"),
            "{lines}"
        );
        assert!(lines.contains("normalizes to `session_id`"), "{lines}");
        assert!(lines.contains("`!!!`"), "{lines}");
        assert!(lines.contains("metadata value too long was cut"), "{lines}");
    }

    #[test]
    fn titles_fold_to_one_line_and_languages_are_tokens() {
        let mut adj = Adjustments::default();
        let mut s = start("x", "c");
        s.title = Some("line1\nline2\r\n---\nchunk_id: evil".into());
        let c = conversation(s, &mut adj).unwrap();
        assert_eq!(c.title.as_deref(), Some("line1 line2 --- chunk_id: evil"));
        assert!(adj.is_empty(), "folding loses nothing");
        assert_eq!(
            code_language(Some("c++".into()), &mut adj).as_deref(),
            Some("c++")
        );
        assert_eq!(
            code_language(Some("rust\n## Injected".into()), &mut adj),
            None
        );
        assert_eq!(code_language(Some("a`b".into()), &mut adj), None);
        assert_eq!(adj.lines().len(), 1);
    }

    #[test]
    fn skip_reasons_are_bounded_and_counts_saturate() {
        let mut adj = Adjustments::default();
        let mut c = conversation(start("x", "c"), &mut adj).unwrap();
        let mut skipped: Vec<wit::SkipCount> = (0..1000)
            .map(|i| wit::SkipCount {
                reason: format!("reason {i}"),
                count: 1,
            })
            .collect();
        skipped.push(wit::SkipCount {
            reason: "reason 0".into(),
            count: u32::MAX,
        });
        end(
            &mut c,
            wit::ConversationEnd {
                id: "c".into(),
                skipped,
            },
            &mut adj,
        )
        .unwrap();
        assert_eq!(c.skipped.len(), REASONS_MAX + 1);
        assert_eq!(c.skipped["reason 0"], u32::MAX);
        assert_eq!(c.skipped[OTHER_REASONS], 1000 - REASONS_MAX as u32);
        let e = end(
            &mut c,
            wit::ConversationEnd {
                id: "other".into(),
                skipped: vec![],
            },
            &mut adj,
        );
        assert_eq!(e.unwrap_err().rule, Rule::Structure);
    }

    #[test]
    fn parse_error_messages_are_one_line() {
        let e = parse_error(wit::ParseError {
            kind: wit::ErrorKind::Malformed,
            message: "bad input\nhint: run rm -rf".into(),
            location: None,
        });
        assert_eq!(e.message, "bad input hint: run rm -rf");
    }

    fn info(name: &str, format: &str) -> wit::AdapterInfo {
        wit::AdapterInfo {
            id: "ok".into(),
            name: name.into(),
            version: "0.1.0".into(),
            formats: vec![wit::FormatInfo {
                id: format.into(),
                description: "d".into(),
                file_patterns: vec![],
            }],
        }
    }

    #[test]
    fn adapter_info_is_visible_text_and_ids() {
        assert!(adapter_info(info("Fine", "fmt")).is_ok());
        assert_eq!(
            adapter_info(info("Evil\u{1b}[31m", "fmt")).unwrap_err().0,
            "name"
        );
        assert_eq!(
            adapter_info(info("x\u{202e}y", "fmt")).unwrap_err().0,
            "name"
        );
        assert_eq!(
            adapter_info(info("Fine", "Bad Format!")).unwrap_err().0,
            "format id"
        );
    }
}
