//! The backfill queue: chunks written with a stand-in header (the header
//! model missed its deadline) wait here for the real one. Persistent
//! (`ROOT/.chatmill/backfill.json`, written atomically), so it survives a
//! restart; draining it rewrites each chunk file atomically with the new
//! header and re-indexes it under the same chunk id.

use std::path::{Path, PathBuf};

use chatmill_chunking::header::{HeaderInput, HeaderWriter};
use chatmill_index::Indexer;
use chatmill_root::chunk::ChunkDoc;
use chatmill_root::record::index_record;
use serde::{Deserialize, Serialize};

use crate::processor::HEADER_STATUS;

/// The queue file, relative to the root.

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub chunk_id: String,
    /// The chunk file, relative to the root.
    pub path: String,
    #[serde(default)]
    pub attempts: u32,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Queue {
    pub entries: Vec<Entry>,
    #[serde(skip)]
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum BackfillError {
    #[error("backfill queue `{path}`: {message}")]
    Queue { path: PathBuf, message: String },
}

impl Queue {
    pub fn load(root: &Path) -> Result<Self, BackfillError> {
        let path = chatmill_root::root::Root::new(root).backfill_queue();
        let mut q: Queue = match fs_err::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| BackfillError::Queue {
                path: path.clone(),
                message: format!("not valid: {e}"),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Queue::default(),
            Err(e) => {
                return Err(BackfillError::Queue {
                    path,
                    message: e.to_string(),
                });
            }
        };
        q.path = path;
        Ok(q)
    }

    pub fn save(&self) -> Result<(), BackfillError> {
        let err = |message: String| BackfillError::Queue {
            path: self.path.clone(),
            message,
        };
        if let Some(dir) = self.path.parent() {
            fs_err::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
        }
        let json = serde_json::to_vec_pretty(self).map_err(|e| err(e.to_string()))?;
        chatmill_root::atomic::write_durable(&self.path, &json).map_err(|e| err(e.to_string()))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds a chunk (once).
    pub fn push(&mut self, chunk_id: &str, path: &str) {
        if !self.entries.iter().any(|e| e.chunk_id == chunk_id) {
            self.entries.push(Entry {
                chunk_id: chunk_id.to_string(),
                path: path.to_string(),
                attempts: 0,
            });
        }
    }

    /// Adds a chunk to the queue file (caller holds the root lock).
    pub fn push_persisted(root: &Path, chunk_id: &str, path: &str) -> Result<(), BackfillError> {
        let mut q = Self::load(root)?;
        q.push(chunk_id, path);
        q.save()
    }
}

/// Takes one queued chunk, asks `writer` for its real header — without the
/// root lock, since a model call is slow and turns must not wait for it —
/// then, under the lock, rewrites the chunk file atomically, re-indexes it
/// (same chunk id) and removes it from the queue. Returns `None` when the
/// queue is empty.
pub fn step(
    root: &Path,
    writer: &dyn HeaderWriter,
    indexer: Option<&dyn Indexer>,
    lock_timeout: std::time::Duration,
    skip: &std::collections::HashSet<String>,
) -> Result<Option<(String, bool)>, BackfillError> {
    let lock_err = |e: chatmill_root::lock::LockError| BackfillError::Queue {
        path: chatmill_root::root::Root::new(root).backfill_queue(),
        message: e.to_string(),
    };
    let entry = {
        let _lock = chatmill_root::lock::RootLock::acquire(root, lock_timeout).map_err(lock_err)?;
        let q = Queue::load(root)?;
        match q.entries.into_iter().find(|e| !skip.contains(&e.chunk_id)) {
            Some(e) => e,
            None => return Ok(None),
        }
    };
    let asked = ask(root, &entry, writer);
    let _lock = chatmill_root::lock::RootLock::acquire(root, lock_timeout).map_err(lock_err)?;
    let mut q = Queue::load(root)?;
    let done = match asked {
        Asked::Gone => true,
        Asked::Again => false,
        Asked::Header(header) => apply(root, &entry, header, indexer),
    };
    tracing::debug!("backfill `{}`: done = {done}", entry.chunk_id);
    if done {
        q.entries.retain(|e| e.chunk_id != entry.chunk_id);
    } else if let Some(e) = q.entries.iter_mut().find(|e| e.chunk_id == entry.chunk_id) {
        e.attempts += 1;
    }
    q.save()?;
    Ok(Some((entry.chunk_id, done)))
}

enum Asked {
    Header(chatmill_chunking::header::Header),
    Again,
    Gone,
}

fn ask(root: &Path, entry: &Entry, writer: &dyn HeaderWriter) -> Asked {
    let Ok(text) = fs_err::read_to_string(root.join(&entry.path)) else {
        tracing::debug!("backfill: `{}` is gone", entry.path);
        return Asked::Gone;
    };
    let Ok(doc) = ChunkDoc::parse(&text) else {
        tracing::debug!("backfill: `{}` does not parse", entry.path);
        return Asked::Gone;
    };
    if doc.frontmatter.chunk_id != entry.chunk_id {
        tracing::debug!("backfill: `{}` holds another chunk", entry.path);
        return Asked::Gone;
    }
    let user: Vec<&str> = doc.exchanges.iter().map(|e| e.user.as_str()).collect();
    let assistant: Vec<&str> = doc.exchanges.iter().map(|e| e.assistant.as_str()).collect();
    let (user, assistant) = (user.join("\n"), assistant.join("\n"));
    let date = chrono::DateTime::parse_from_rfc3339(&doc.frontmatter.timestamp)
        .ok()
        .map(|d| d.to_utc());
    match writer.write(&HeaderInput {
        platform: &doc.frontmatter.source_platform,
        // A derived title is the request's own words, not a name the source gave.
        title: (!doc.frontmatter.title_derived)
            .then_some(doc.frontmatter.conversation_title.as_deref())
            .flatten(),
        date,
        user: &user,
        assistant: &assistant,
        turn_range: &doc.frontmatter.turn_range,
        total_pairs: 0,
        previous: None,
        common: &[],
        independent: doc
            .frontmatter
            .extra
            .get("pairs")
            .is_some_and(|v| v == "independent"),
    }) {
        Ok(h) if !h.backfill => Asked::Header(h),
        _ => Asked::Again,
    }
}

/// Rewrites the chunk with `header` (re-reading it: it is the current file
/// that gets the header) and re-indexes it.
fn apply(
    root: &Path,
    entry: &Entry,
    header: chatmill_chunking::header::Header,
    indexer: Option<&dyn Indexer>,
) -> bool {
    let path = root.join(&entry.path);
    let Ok(text) = fs_err::read_to_string(&path) else {
        return true;
    };
    let Ok(mut doc) = ChunkDoc::parse(&text) else {
        return true;
    };
    doc.context = header.context;
    doc.frontmatter.topics = header.topics;
    doc.frontmatter.extra.remove(HEADER_STATUS);
    let Ok(new_text) = doc.to_markdown() else {
        return false;
    };
    if chatmill_root::atomic::write_durable(&path, new_text.as_bytes()).is_err() {
        return false;
    }
    if let Some(ix) = indexer
        && ix
            .index(&[index_record(&doc, &new_text, &entry.path)])
            .is_err()
    {
        // The file has its header; the next import or `chatmill verify
        // --repair` brings the index along. Not worth another model call.
        tracing::warn!("backfilled `{}` but could not re-index it", entry.chunk_id);
    }
    // The conversation's note quotes the header; `chatmill verify --repair`
    // writes one that could not be written now.
    let fm = &doc.frontmatter;
    let root = chatmill_root::root::Root::new(root);
    if let Err(e) = chatmill_root::notes::rewrite(&root, &fm.source_platform, &fm.conversation_id) {
        tracing::warn!("{e}");
    }
    true
}
