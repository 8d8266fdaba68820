//! What the tools do, without the protocol: a root's chunks found by
//! meaning, by recency, by id and by conversation, and one exchange
//! recorded through the inline path. Every answer is a list of [`Entry`]s
//! (structured) that [`Entry::prompt_text`] also writes as numbered
//! entries with their provenance, the way `search --format context` does.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use chatmill_index::{Filter, Hit, Index, Mode, SearchRequest, WeightedQuery};
use chatmill_pipeline::inline::{Ack, InlineError, InlineWriter, Turn};
use chatmill_pipeline::redaction::{Counts, field};
use chatmill_redact::Redactor;
use chatmill_root::chunk_store::{ChunkStore, Scanned};
use chatmill_root::manifest::Manifest;
use chatmill_root::root::Root;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

/// The most entries one answer holds.
pub const MAX_K: usize = 50;

/// One chunk as a tool returns it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Entry {
    pub chunk_id: String,
    /// The conversation's title (the source's, or one derived from its
    /// first request).
    pub title: Option<String>,
    pub platform: String,
    pub conversation_id: String,
    pub agent_id: String,
    /// The coding project its session belongs to, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// When its first exchange happened (RFC 3339, UTC).
    pub time: String,
    /// The chunk file, absolute.
    pub source: String,
    /// The search score (higher is better; absent for look-ups).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// The exchange (and, for `get_chunk`, the whole chunk file).
    pub text: String,
}

/// A tool's structured answer.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Entries {
    pub entries: Vec<Entry>,
    /// How a time phrase in the query was read, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_window: Option<String>,
    /// What the caller should know (a stand-in embedder, a missing file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// For `get_conversation`: the conversation's chunk count, and where
    /// the next page starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// Why a tool could not answer; the text an assistant sees.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("{0}")]
    Invalid(String),
    #[error("no chunk `{0}` in this root")]
    NoChunk(String),
    #[error("no conversation `{0}` in this root")]
    NoConversation(String),
    #[error("this server has no index")]
    NoIndex,
    #[error("this server is read-only")]
    ReadOnly,
    #[error(transparent)]
    Index(#[from] chatmill_index::IndexError),
    #[error(transparent)]
    Manifest(#[from] chatmill_root::manifest::ManifestError),
    #[error(transparent)]
    Inline(#[from] InlineError),
}

impl MemoryError {
    /// What to do about it (the CLI's `hint:`).
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::NoChunk(_) => {
                Some("chunk ids come from `search`, `recent` or `get_conversation`".into())
            }
            Self::NoConversation(_) => {
                Some("conversation ids come from the entries `search` and `recent` return".into())
            }
            Self::NoIndex => {
                Some("run `chatmill import` first, then start `chatmill mcp` again".into())
            }
            Self::ReadOnly => {
                Some("start the server with `chatmill mcp --allow-write` to record turns".into())
            }
            Self::Index(e) => e.hint(),
            Self::Manifest(e) => e.hint().map(str::to_owned),
            Self::Inline(InlineError::Lock(_)) => {
                Some("an import holds the root; call again".into())
            }
            _ => None,
        }
    }
}

/// A root's memory, as the tools see it.
pub struct Memory {
    root: PathBuf,
    index: Option<Arc<Index>>,
    /// Present with `--allow-write`.
    writer: Option<Mutex<InlineWriter>>,
    /// Replaces secrets in every answer (chunks written before redaction
    /// may hold some); `None`: redaction is off.
    redactor: Option<Arc<Redactor>>,
}

impl Memory {
    pub fn new(root: PathBuf, index: Option<Arc<Index>>, writer: Option<InlineWriter>) -> Self {
        Self {
            root,
            index,
            writer: writer.map(Mutex::new),
            redactor: None,
        }
    }

    /// Answers with their secrets replaced by `redactor`.
    pub fn redacting(mut self, redactor: Option<Arc<Redactor>>) -> Self {
        self.redactor = redactor;
        self
    }

    pub fn writable(&self) -> bool {
        self.writer.is_some()
    }

    /// Chunks by meaning (or by recency: `Mode::Recent`).
    pub fn search(&self, mut req: SearchRequest) -> Result<Entries, MemoryError> {
        let index = self.index.as_ref().ok_or(MemoryError::NoIndex)?;
        req.k = req.k.clamp(1, MAX_K);
        if req.mode != Mode::Recent && req.queries.iter().all(|q| q.text.trim().is_empty()) {
            return Err(MemoryError::Invalid("the query is empty".into()));
        }
        let found = index.search(&req)?;
        let time_window = found.time_window.as_ref().map(|w| {
            format!(
                "read \"{}\" as {} to {}",
                w.phrase,
                day(w.since),
                day(w.until)
            )
        });
        // A recency listing has no score worth showing (it is the time).
        let scored = req.mode != Mode::Recent;
        Ok(Entries {
            entries: found
                .hits
                .into_iter()
                .map(|h| self.entry(h, scored))
                .collect(),
            time_window,
            warnings: found.warnings,
            ..Entries::default()
        })
    }

    /// The newest chunks, optionally of one platform or agent.
    pub fn recent(&self, k: usize, filter: Filter) -> Result<Entries, MemoryError> {
        let mut req = SearchRequest::new("");
        req.queries = Vec::<WeightedQuery>::new();
        req.mode = Mode::Recent;
        req.k = k;
        req.filter = filter;
        self.search(req)
    }

    /// One chunk file, whole.
    pub fn chunk(&self, id: &str) -> Result<Entries, MemoryError> {
        check_id(id)?;
        let store = ChunkStore::new(&self.root);
        let found = store.find(std::iter::once(id)).next();
        let s = found.ok_or_else(|| MemoryError::NoChunk(id.to_owned()))?;
        let whole = s.text.clone();
        Ok(Entries {
            entries: vec![self.stored(&s, whole)],
            ..Entries::default()
        })
    }

    /// A conversation's chunks in order, `limit` from `offset`.
    pub fn conversation(
        &self,
        id: &str,
        platform: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<Entries, MemoryError> {
        let manifest = Manifest::load(&Root::new(&self.root).manifest())?;
        let matches = |key: &str| {
            key.split_once(':')
                .is_some_and(|(p, c)| c == id && platform.is_none_or(|want| want == p))
        };
        let mut keys = manifest.conversations.keys().filter(|k| matches(k));
        let key = keys
            .next()
            .ok_or_else(|| MemoryError::NoConversation(id.to_owned()))?;
        if keys.next().is_some() {
            return Err(MemoryError::Invalid(format!(
                "conversation `{id}` is on more than one platform; name the platform"
            )));
        }
        let ids = &manifest.conversations[key].chunk_ids;
        let limit = limit.clamp(1, MAX_K);
        let page: Vec<&str> = ids
            .iter()
            .skip(offset)
            .take(limit)
            .map(String::as_str)
            .collect();
        let store = ChunkStore::new(&self.root);
        let mut out = Entries {
            total: Some(ids.len()),
            next_offset: (offset + page.len() < ids.len()).then_some(offset + page.len()),
            ..Entries::default()
        };
        for s in store.find(page.iter().copied()) {
            let text = exchange(&s.text).to_owned();
            out.entries.push(self.stored(&s, text));
        }
        if out.entries.len() < page.len() {
            let missing = page.len() - out.entries.len();
            out.warnings.push(format!("{missing} chunk files of this conversation are missing (`chatmill verify` says which)"));
        }
        Ok(out)
    }

    /// Records one exchange as inline mode does: raw log, chunk, index.
    pub fn record(&self, turn: &Turn) -> Result<Ack, MemoryError> {
        let writer = self.writer.as_ref().ok_or(MemoryError::ReadOnly)?;
        let mut writer = writer.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(writer.turn(turn)?)
    }

    /// The entry of a chunk file read from the folder, with `text`.
    fn stored(&self, s: &Scanned, text: String) -> Entry {
        let fm = &s.doc.frontmatter;
        let mut e = Entry {
            chunk_id: fm.chunk_id.clone(),
            title: fm.conversation_title.clone(),
            platform: fm.source_platform.clone(),
            conversation_id: fm.conversation_id.clone(),
            agent_id: fm.agent_id.clone(),
            project: fm.extra.get("project").cloned(),
            time: fm.timestamp.clone(),
            source: self.root.join(&s.rel).display().to_string(),
            score: None,
            text,
        };
        if let Some(r) = &self.redactor {
            let c = &mut Counts::new();
            field(r, &mut e.text, c);
            field(r, &mut e.conversation_id, c);
            for s in [&mut e.title, &mut e.project].into_iter().flatten() {
                field(r, s, c);
            }
        }
        e
    }

    fn entry(&self, mut h: Hit, scored: bool) -> Entry {
        if let Some(r) = &self.redactor {
            chatmill_pipeline::redaction::hit(r, &mut h);
        }
        Entry {
            title: h.meta.title,
            platform: h.meta.platform,
            conversation_id: h.meta.conversation_id,
            agent_id: h.meta.agent_id,
            project: h.meta.project,
            time: DateTime::<Utc>::from_timestamp(h.meta.timestamp, 0)
                .map_or_else(String::new, |t| t.to_rfc3339()),
            source: self.root.join(&h.meta.path).display().to_string(),
            score: scored.then_some(h.score),
            text: exchange(&h.document).to_owned(),
            chunk_id: h.chunk_id,
        }
    }
}

impl Entries {
    /// Numbered entries with their provenance, ready for a prompt.
    pub fn prompt_text(&self) -> String {
        let mut out = String::new();
        if let Some(w) = &self.time_window {
            out.push_str(&format!("({w})\n\n"));
        }
        for (i, e) in self.entries.iter().enumerate() {
            let project = e
                .project
                .as_deref()
                .map_or_else(String::new, |p| format!(" · project {p}"));
            out.push_str(&format!(
                "[{}] {} · {}{project} · {}\nchunk: {} · conversation: {}\nsource: {}\n\n{}\n\n",
                i + 1,
                e.title.as_deref().unwrap_or("(untitled)"),
                e.platform,
                e.time.get(..10).unwrap_or(&e.time),
                e.chunk_id,
                e.conversation_id,
                e.source,
                e.text.trim()
            ));
        }
        if self.entries.is_empty() {
            out.push_str("no matching exchanges\n");
        }
        if let Some(next) = self.next_offset {
            out.push_str(&format!("(more: call again with offset {next})\n"));
        }
        for w in &self.warnings {
            out.push_str(&format!("note: {w}\n"));
        }
        out
    }
}

/// A chunk id names a file: lowercase letters, digits and `-` only, so no
/// id a client sends can reach outside the root.
fn check_id(id: &str) -> Result<(), MemoryError> {
    let ok = !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(MemoryError::Invalid(format!(
            "`{}` is not a chunk id (lowercase letters, digits and `-`)",
            id.escape_default()
        )))
    }
}

/// The exchange part of a chunk file: what goes into a prompt.
fn exchange(doc: &str) -> &str {
    doc.split_once("\n## Exchange\n")
        .map_or(doc, |(_, e)| e.trim())
}

fn day(ts: i64) -> String {
    DateTime::<Utc>::from_timestamp(ts, 0)
        .map_or_else(String::new, |t| t.format("%Y-%m-%d").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_chunk_ids_reach_the_chunk_folder() {
        for bad in [
            "",
            "../etc/passwd",
            "a/b",
            "A-1",
            "-x",
            "a.md",
            "a\0b",
            &"a".repeat(201),
        ] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
        for good in [
            "chatgpt-1a2b3c4d5e6f-001-2024-05-01",
            "local-inline-0001",
            "x-001-003-part-2",
        ] {
            assert!(check_id(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn prompt_text_numbers_entries_with_provenance() {
        let e = Entries {
            entries: vec![Entry {
                chunk_id: "c-1".into(),
                title: None,
                platform: "claude".into(),
                conversation_id: "conv".into(),
                agent_id: "me".into(),
                project: None,
                time: "2025-03-01T10:00:00+00:00".into(),
                source: "/r/c-1.md".into(),
                score: Some(0.5),
                text: "**User:** hi\n".into(),
            }],
            next_offset: Some(1),
            ..Entries::default()
        };
        let t = e.prompt_text();
        assert!(t.starts_with("[1] (untitled) · claude · 2025-03-01\nchunk: c-1 · conversation: conv\nsource: /r/c-1.md\n\n**User:** hi"), "{t}");
        assert!(t.contains("offset 1"), "{t}");
    }
}
