//! What the report knows of each chunk file: measured once as the file is
//! read (in parallel), so no criterion keeps the text.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chatmill_root::chunk::ChunkDoc;
use chrono::{DateTime, Utc};
use rayon::prelude::*;

use crate::text;

/// The spec's frontmatter keys, in the spec's order (`conversation_title`
/// may be absent: a source without one).
pub const SPEC_KEYS: &[&str] = &[
    "source_file",
    "source_platform",
    "model_used",
    "timestamp",
    "conversation_title",
    "turn_range",
    "topics",
    "chunk_id",
    "agent_id",
];

/// Frontmatter keys chatmill writes beside the spec's (not extras).
const OWN_KEYS: &[&str] = &["conversation_id", "title_derived", "redaction"];

/// Extras that only some chunks of a conversation carry, by design: a split
/// answer's part, a header waiting for the model.
pub const PER_CHUNK_EXTRAS: &[&str] = &["part", "header_status"];

/// One exchange's measures.
#[derive(Debug, Clone)]
pub struct ExchangeFacts {
    pub user_words: usize,
    pub words: usize,
    /// Content words of the request and reply.
    pub terms: Vec<u64>,
}

/// One chunk file, measured.
#[derive(Debug, Clone)]
pub struct Facts {
    /// File name in the root.
    pub rel: String,
    pub chunk_id: String,
    /// `platform:conversation_id`.
    pub conversation: String,
    pub platform: String,
    pub source_file: String,
    pub model: String,
    pub title: String,
    pub topics: Vec<String>,
    /// As written.
    pub timestamp: String,
    /// When it parses as ISO 8601 (RFC 3339).
    pub time: Option<DateTime<Utc>>,
    pub turns: (u32, u32),
    pub part: bool,
    /// Separate requests (`pairs: independent`, an API batch): neither in
    /// time order nor each other's context.
    pub independent: bool,
    /// Redaction placeholders in the file, by rule id.
    pub redactions: BTreeMap<String, u32>,
    /// Extra frontmatter keys (the per-format ones).
    pub extras: BTreeSet<String>,
    /// Spec keys missing, or out of the spec's order, or extras before them.
    pub key_problem: Option<String>,
    /// An empty header or exchange text.
    pub body_problem: Option<String>,
    pub header: String,
    pub header_sentences: usize,
    /// The header names the subject: the title, a topic, or two of the
    /// title's content words.
    pub header_names_subject: bool,
    /// The header says what the user wanted: a request verb or three of the
    /// first request's content words.
    pub header_intent: bool,
    /// The header says what came before (a chunk from a conversation's
    /// middle).
    pub header_prior: bool,
    /// The first request's phrase that leans on earlier context.
    pub reference: Option<&'static str>,
    /// Content words across the topics: one or none is a subject too thin
    /// to tell this chunk from others (a generic header).
    pub topic_words: usize,
    /// Topics none of whose words occur in the chunk's text or title.
    pub topics_absent: Vec<String>,
    pub exchanges: Vec<ExchangeFacts>,
    /// A hash of all the exchange text (duplicates under other ids).
    pub text_hash: u64,
}

impl Facts {
    pub fn words(&self) -> usize {
        self.exchanges.iter().map(|e| e.words).sum()
    }
}

/// A chunk file that could not be read as one (a strict parser's view).
#[derive(Debug, Clone)]
pub struct Unreadable {
    pub rel: String,
    pub message: String,
}

/// Reads the chunk files `names` of `dir` (file names) and measures each.
pub fn load(dir: &Path, names: Vec<String>) -> (Vec<Facts>, Vec<Unreadable>) {
    let read: Vec<Result<Option<Facts>, Unreadable>> = names
        .into_par_iter()
        .map(|rel| {
            let path: PathBuf = dir.join(&rel);
            let text = fs_err::read_to_string(&path).map_err(|e| Unreadable {
                rel: rel.clone(),
                message: e.to_string(),
            })?;
            if !is_chunk(&text) {
                return Ok(None);
            }
            match ChunkDoc::parse(&text) {
                Ok(doc) => Ok(Some(measure(rel, &text, &doc))),
                Err(e) => Err(Unreadable {
                    rel,
                    message: e.to_string(),
                }),
            }
        })
        .collect();
    let (mut facts, mut bad) = (Vec::new(), Vec::new());
    for r in read {
        match r {
            Ok(Some(f)) => facts.push(f),
            Ok(None) => {}
            Err(u) => bad.push(u),
        }
    }
    (facts, bad)
}

/// Markdown that opens with a frontmatter holding a `chunk_id` (other
/// Markdown in the root is not chatmill's).
fn is_chunk(text: &str) -> bool {
    text.starts_with("---\n")
        && text
            .split("\n---\n")
            .next()
            .is_some_and(|fm| fm.contains("\nchunk_id:"))
}

/// The frontmatter's top-level keys, in the order written.
fn keys(text: &str) -> Vec<&str> {
    let Ok((yaml, _)) = ChunkDoc::split(text) else {
        return Vec::new();
    };
    yaml.lines()
        .filter(|l| !l.starts_with([' ', '-', '\t', '#']) && !l.is_empty())
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.trim()))
        .filter(|k| !k.is_empty() && !k.contains(' '))
        .collect()
}

/// What is wrong with the order of `keys`, if anything: every spec key but
/// the title present, in the spec's order, before any extra.
fn key_problem(keys: &[&str]) -> Option<String> {
    let mut at = 0usize;
    let mut extra_seen: Option<&str> = None;
    for k in keys {
        if let Some(i) = SPEC_KEYS.iter().position(|s| s == k) {
            if i < at {
                return Some(format!("`{k}` is out of the spec's order"));
            }
            if let Some(e) = extra_seen {
                return Some(format!("the extra `{e}` comes before the spec's `{k}`"));
            }
            at = i;
        } else if !OWN_KEYS.contains(k) {
            extra_seen.get_or_insert(k);
        }
    }
    SPEC_KEYS
        .iter()
        .find(|s| **s != "conversation_title" && !keys.contains(s))
        .map(|s| format!("`{s}` is missing"))
}

fn measure(rel: String, text: &str, doc: &ChunkDoc) -> Facts {
    let fm = &doc.frontmatter;
    let title = fm.conversation_title.clone().unwrap_or_default();
    let header = doc.context.trim().to_string();
    let first_request = doc.exchanges.first().map_or("", |e| e.user.as_str());
    let judged = HeaderJudgement::of(&title, &header, first_request, &fm.topics);
    let exchanges: Vec<ExchangeFacts> = doc
        .exchanges
        .iter()
        .map(|e| ExchangeFacts {
            user_words: e.user.split_whitespace().count(),
            words: e.user.split_whitespace().count() + e.assistant.split_whitespace().count(),
            terms: text::terms(&format!("{}\n{}", e.user, e.assistant)),
        })
        .collect();
    let keys = keys(text);
    let extras = keys
        .iter()
        .filter(|k| !SPEC_KEYS.contains(k) && !OWN_KEYS.contains(k))
        .map(|k| (*k).to_string())
        .collect();
    Facts {
        chunk_id: fm.chunk_id.clone(),
        conversation: format!("{}:{}", fm.source_platform, fm.conversation_id),
        platform: fm.source_platform.clone(),
        source_file: fm.source_file.clone(),
        model: fm.model_used.clone(),
        topic_words: topic_words(&fm.topics),
        topics: fm.topics.clone(),
        time: DateTime::parse_from_rfc3339(&fm.timestamp)
            .ok()
            .map(|t| t.to_utc()),
        timestamp: fm.timestamp.clone(),
        turns: turns(&fm.turn_range),
        part: fm.extra.contains_key("part"),
        independent: fm.extra.get("pairs").is_some_and(|v| v == "independent"),
        extras,
        redactions: redactions(text),
        key_problem: key_problem(&keys),
        body_problem: body_problem(&header, doc),
        header_sentences: text::sentences(&header),
        header_names_subject: judged.names_subject,
        header_intent: judged.intent,
        header_prior: judged.prior,
        header,
        reference: text::reference(first_request),
        topics_absent: topics_absent(&title, doc),
        text_hash: exchange_hash(doc),
        exchanges,
        title,
        rel,
    }
}

/// The redaction placeholders in `text`, by rule id.
fn redactions(text: &str) -> BTreeMap<String, u32> {
    let mut by_rule = BTreeMap::new();
    for r in chatmill_redact::placeholder::existing(text) {
        let inner = &text[r.start + chatmill_redact::placeholder::PREFIX.len()..r.end];
        if let Some((rule, _)) = inner.rsplit_once(':') {
            *by_rule.entry(rule.to_string()).or_insert(0) += 1;
        }
    }
    by_rule
}

/// What a chunk's header says: its subject, the user's intent, and
/// whether it points back at an earlier exchange.
struct HeaderJudgement {
    names_subject: bool,
    intent: bool,
    prior: bool,
}

impl HeaderJudgement {
    fn of(title: &str, header: &str, first_request: &str, topics: &[String]) -> Self {
        let lower_header = header.to_lowercase();
        let title_terms: Vec<String> = text::words(title).filter(|w| text::is_content(w)).collect();
        let names_topic = topics
            .iter()
            .any(|t| lower_header.contains(&t.to_lowercase()));
        let named_title_words = title_terms
            .iter()
            .filter(|w| lower_header.contains(w.as_str()))
            .count();
        let names_subject = (!title.is_empty() && lower_header.contains(&title.to_lowercase()))
            || names_topic
            || named_title_words >= 2.min(title_terms.len()).max(1);
        let request_terms = text::terms(first_request);
        let header_terms = text::terms(header);
        let shared = request_terms
            .iter()
            .filter(|t| header_terms.binary_search(t).is_ok())
            .count();
        let intent_verb = [
            "asked",
            "asks",
            "wants",
            "wanted",
            "request",
            "trying",
            "looking for",
            "needs",
            "goal",
            "help",
        ]
        .iter()
        .any(|v| lower_header.contains(v));
        let prior = [
            "following",
            "follows",
            "earlier",
            "previous",
            "continu",
            "before",
        ]
        .iter()
        .any(|m| lower_header.contains(m));
        Self {
            names_subject,
            intent: intent_verb || shared >= 3.min(request_terms.len()).max(1),
            prior,
        }
    }
}

/// The topics none of whose words occur in the title or the exchange.
fn topics_absent(title: &str, doc: &ChunkDoc) -> Vec<String> {
    let mut all_text = title.to_lowercase();
    for e in &doc.exchanges {
        all_text.push(' ');
        all_text.push_str(&e.user.to_lowercase());
        all_text.push(' ');
        all_text.push_str(&e.assistant.to_lowercase());
    }
    doc.frontmatter
        .topics
        .iter()
        .filter(|t| {
            let words: Vec<String> = text::words(t).collect();
            let long = words.iter().any(|w| w.chars().count() >= 3);
            !words
                .iter()
                .any(|w| (!long || w.chars().count() >= 3) && all_text.contains(w.as_str()))
        })
        .cloned()
        .collect()
}

/// How many distinct content words the topics hold.
fn topic_words(topics: &[String]) -> usize {
    let mut w: Vec<String> = topics
        .iter()
        .flat_map(|t| {
            text::words(t)
                .filter(|w| text::is_content(w))
                .collect::<Vec<_>>()
        })
        .collect();
    w.sort();
    w.dedup();
    w.len()
}

/// What is wrong with the chunk's body: an empty header or request.
fn body_problem(header: &str, doc: &ChunkDoc) -> Option<String> {
    if header.is_empty() {
        return Some("the `## Context` header is empty".to_string());
    }
    doc.exchanges
        .iter()
        .position(|e| e.user.trim().is_empty())
        .map(|i| format!("exchange {} has an empty request", i + 1))
}

/// A hash of the exchanges' text (duplicates under different ids).
fn exchange_hash(doc: &ChunkDoc) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    for e in &doc.exchanges {
        h.write(e.user.trim().as_bytes());
        h.write_u8(0);
        h.write(e.assistant.trim().as_bytes());
        h.write_u8(1);
    }
    h.finish()
}

/// `"3"` or `"3-4"` as (first, last); (0, 0) when it is neither.
pub fn turns(range: &str) -> (u32, u32) {
    let mut it = range.split('-').map(|n| n.trim().parse::<u32>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(a), Some(b)) => (a, b),
        (Some(a), None) => (a, a),
        _ => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_is_the_spec_s_with_extras_after() {
        let good = [
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
            "project",
        ];
        assert_eq!(key_problem(&good), None);
        let mut swapped = good;
        swapped.swap(0, 1);
        assert!(key_problem(&swapped).unwrap().contains("order"));
        assert!(
            key_problem(&good[1..])
                .unwrap()
                .contains("`source_file` is missing")
        );
        let extra_first = ["project", "source_file"];
        assert!(key_problem(&extra_first).unwrap().contains("before"));
    }

    #[test]
    fn turn_ranges_read_both_forms() {
        assert_eq!(turns("3"), (3, 3));
        assert_eq!(turns("3-5"), (3, 5));
        assert_eq!(turns("x"), (0, 0));
    }
}
