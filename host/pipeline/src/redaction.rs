//! The one redaction step. A conversation an adapter returned (after the
//! trust boundary checked it) and a turn a client sent have every text
//! field's secrets replaced by keyed placeholders ([`chatmill_redact`])
//! before anything is derived from them: chunk files, headers and titles,
//! notes, raw logs, the index, and every request to a header or embedding
//! endpoint are all made from the redacted conversation, so no path from
//! an input to disk or network can skip it. Assets copied from an export
//! are redacted where they are copied ([`chatmill_root::assets`]).
//!
//! The conversation id is redacted too (the placeholder is stable under the
//! root's key, so its chunk ids stay stable); the platform is the adapter's
//! checked id and is left alone.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chatmill_model::{Conversation, Part};
use chatmill_redact::{Redacted, Redactor};

/// Secrets replaced, by rule id.
pub type Counts = BTreeMap<String, u32>;

/// What redacting one conversation replaced: in its own fields (id, title,
/// model, metadata) and in each pair, by pair index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactions {
    pub conversation: Counts,
    pub pairs: BTreeMap<u32, Counts>,
}

impl Redactions {
    /// What a run that chunks the pairs after `seen` redacted: the pairs'
    /// counts, and the conversation's own the first time it is chunked.
    pub fn since(&self, seen: u32) -> Counts {
        let mut out = Counts::new();
        if seen == 0 {
            add(&mut out, &self.conversation);
        }
        for counts in self.pairs.range(seen.saturating_add(1)..).map(|(_, c)| c) {
            add(&mut out, counts);
        }
        out
    }
}

/// Adds `from`'s counts to `into`.
pub fn add(into: &mut Counts, from: &Counts) {
    for (rule, n) in from {
        let at = into.entry(rule.clone()).or_insert(0);
        *at = at.saturating_add(*n);
    }
}

/// Replaces the secrets in every text field of `conv`.
pub fn conversation(r: &Redactor, conv: &mut Conversation) -> Redactions {
    let mut out = Redactions::default();
    each_text(conv, &mut |at, text| {
        let Redacted {
            text: clean,
            counts,
        } = r.redact(text);
        if let Cow::Owned(clean) = clean {
            let into = match at.pair {
                None => &mut out.conversation,
                Some(i) => out.pairs.entry(i).or_default(),
            };
            add(into, &counts);
            *text = clean;
        }
    });
    out
}

/// Where a text field of a conversation is: its pair (`None`: the
/// conversation's own fields) and the field's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub pair: Option<u32>,
    pub field: &'static str,
}

/// Calls `f` on every text field of `conv` (every part kind, metadata keys
/// and values), in order; what `f` leaves in a field stays.
pub fn each_text(conv: &mut Conversation, f: &mut dyn FnMut(At, &mut String)) {
    let at = |field| At { pair: None, field };
    f(at("conversation id"), &mut conv.id);
    optional(&mut conv.title, at("title"), f);
    optional(&mut conv.model, at("model"), f);
    metadata(&mut conv.metadata, None, f);
    for pair in &mut conv.pairs {
        let at = |field| At {
            pair: Some(pair.index),
            field,
        };
        optional(&mut pair.model, at("model"), f);
        metadata(&mut pair.metadata, Some(pair.index), f);
        let user = pair.user.iter_mut().map(|p| (p, "user"));
        let assistant = pair.assistant.iter_mut().map(|p| (p, "assistant"));
        for (part, side) in user.chain(assistant) {
            self::part(part, side, pair.index, f);
        }
    }
}

fn part(part: &mut Part, side: &'static str, pair: u32, f: &mut dyn FnMut(At, &mut String)) {
    let at = |field: &'static str| At {
        pair: Some(pair),
        field,
    };
    let user = side == "user";
    let pick = |u, a| at(if user { u } else { a });
    match part {
        Part::Text { text } => f(pick("user text", "assistant text"), text),
        Part::Thinking { text } => f(pick("user thinking", "thinking"), text),
        Part::Code { language, code } => {
            optional(language, pick("user code language", "code language"), f);
            f(pick("user code", "assistant code"), code);
        }
        Part::ToolCall { name, summary } => {
            f(at("tool call name"), name);
            f(at("tool call"), summary);
        }
        Part::ToolResult { summary } => f(at("tool result"), summary),
        Part::Attachment {
            name,
            media_type,
            uri,
        } => {
            f(at("attachment name"), name);
            optional(media_type, at("attachment media type"), f);
            optional(uri, at("attachment uri"), f);
        }
        Part::Other { kind, text } => {
            f(at("part kind"), kind);
            f(pick("user part", "assistant part"), text);
        }
    }
}

/// Keys and values; the entries are moved out and back (no string is
/// copied), since `f` may change a key.
fn metadata(
    map: &mut BTreeMap<String, String>,
    pair: Option<u32>,
    f: &mut dyn FnMut(At, &mut String),
) {
    if map.is_empty() {
        return;
    }
    let at = |field| At { pair, field };
    for (mut key, mut value) in std::mem::take(map) {
        f(at("metadata key"), &mut key);
        f(at("metadata value"), &mut value);
        map.insert(key, value);
    }
}

fn optional(s: &mut Option<String>, at: At, f: &mut dyn FnMut(At, &mut String)) {
    if let Some(s) = s {
        f(at, s);
    }
}

/// A chunk file's every text with its secrets replaced, field by field (so
/// that its YAML is written anew, quoted where a placeholder needs it).
pub fn chunk(r: &Redactor, doc: &mut chatmill_root::chunk::ChunkDoc) -> Counts {
    let mut c = Counts::new();
    let fm = &mut doc.frontmatter;
    let fields = [
        &mut fm.source_file,
        &mut fm.model_used,
        &mut fm.conversation_id,
        &mut doc.context,
    ];
    for s in fields.into_iter().chain(fm.conversation_title.as_mut()) {
        field(r, s, &mut c);
    }
    for s in fm.topics.iter_mut().chain(fm.extra.values_mut()) {
        field(r, s, &mut c);
    }
    for e in &mut doc.exchanges {
        field(r, &mut e.user, &mut c);
        field(r, &mut e.assistant, &mut c);
    }
    c
}

/// A search answer's hit with its secrets replaced. Chunks are redacted
/// when written; this covers the ones written before redaction (or with it
/// off) until `import --reprocess` rewrites them.
pub fn hit(r: &Redactor, h: &mut chatmill_index::Hit) {
    let c = &mut Counts::new();
    field(r, &mut h.document, c);
    field(r, &mut h.meta.conversation_id, c);
    for s in [&mut h.meta.title, &mut h.meta.project]
        .into_iter()
        .flatten()
    {
        field(r, s, c);
    }
    for t in &mut h.meta.topics {
        field(r, t, c);
    }
}

/// Replaces the secrets in `s`, counting them into `c`.
pub fn field(r: &Redactor, s: &mut String, c: &mut Counts) {
    let Redacted { text, counts } = r.redact(s);
    if let Cow::Owned(text) = text {
        add(c, &counts);
        *s = text;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chatmill_model::Pair;
    use chatmill_redact::{Config, Key};

    fn redactor() -> Redactor {
        Redactor::new(Key::from_bytes([7; 32]), &Config::default()).unwrap()
    }

    const GH: &str = "ghp_0123456789abcdefABCDEF0123456789wxyz";

    fn text(t: &str) -> Part {
        Part::Text { text: t.into() }
    }

    fn conv() -> Conversation {
        let secret = format!("token {GH}");
        let pair = |index: u32, parts: Vec<Part>| Pair {
            index,
            timestamp: None,
            model: Some(secret.clone()),
            user: parts,
            assistant: vec![Part::ToolResult {
                summary: secret.clone(),
            }],
            metadata: BTreeMap::from([(GH.to_string(), secret.clone())]),
        };
        Conversation {
            id: GH.into(),
            title: Some(secret.clone()),
            created: None,
            updated: None,
            platform: "chatgpt".into(),
            model: Some(secret.clone()),
            metadata: BTreeMap::from([("remote".to_string(), secret.clone())]),
            pairs: vec![
                pair(
                    1,
                    vec![
                        text(&secret),
                        Part::Code {
                            language: Some(GH.into()),
                            code: secret.clone(),
                        },
                        Part::Thinking {
                            text: secret.clone(),
                        },
                        Part::ToolCall {
                            name: GH.into(),
                            summary: secret.clone(),
                        },
                        Part::Attachment {
                            name: GH.into(),
                            media_type: Some(GH.into()),
                            uri: Some(format!("https://x.example/?t={GH}")),
                        },
                        Part::Other {
                            kind: GH.into(),
                            text: secret.clone(),
                        },
                    ],
                ),
                pair(2, vec![text("nothing to hide")]),
            ],
            skipped: BTreeMap::new(),
        }
    }

    #[test]
    fn no_field_of_a_conversation_keeps_a_secret_and_each_is_counted() {
        let mut c = conv();
        let done = conversation(&redactor(), &mut c);
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains(GH), "{json}");
        assert!(json.contains("[REDACTED:github-token:"), "{json}");
        assert_eq!(c.platform, "chatgpt");
        // id, title, model, one metadata value.
        assert_eq!(done.conversation.values().sum::<u32>(), 4);
        // Pair 1: model, a metadata key and value, 11 in its parts, the
        // answer; pair 2: model, metadata key and value, the answer.
        assert_eq!(done.pairs[&1].values().sum::<u32>(), 15);
        assert_eq!(done.pairs[&2].values().sum::<u32>(), 4);
        assert_eq!(done.since(0).values().sum::<u32>(), 23);
        assert_eq!(done.since(1).values().sum::<u32>(), 4);
        assert!(done.since(2).is_empty());
    }

    #[test]
    fn redacting_again_changes_nothing_and_equal_secrets_read_equal() {
        let r = redactor();
        let mut once = conv();
        conversation(&r, &mut once);
        let mut twice = once.clone();
        let again = conversation(&r, &mut twice);
        assert_eq!(once, twice);
        assert!(again.conversation.is_empty() && again.pairs.is_empty());
        let mut other = conv();
        conversation(&r, &mut other);
        assert_eq!(once.id, other.id);
    }
}
