//! The backfill queue: chunks written with a stand-in header (the header
//! model missed its deadline) wait here for the real one. Persistent
//! (`ROOT/.chatmill/backfill.json`, written atomically), so it survives a
//! restart; draining it rewrites each chunk file atomically with the new
//! header and re-indexes it under the same chunk id.

use std::path::{Path, PathBuf};

use chatmill_index::Indexer;
use serde::{Deserialize, Serialize};

use crate::chunk::ChunkDoc;
use crate::header::{HeaderInput, HeaderWriter};
use crate::processor::HEADER_STATUS;
use crate::record::index_record;

/// The queue file, relative to the root.
pub const QUEUE_FILE: &str = ".chatmill/backfill.json";

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

/// What one drain did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Drained {
    pub rewritten: u32,
    /// Still waiting (the model failed again, or was not asked).
    pub remaining: u32,
    /// Entries whose chunk file is gone or no longer parses (dropped).
    pub dropped: u32,
}

impl Queue {
    pub fn load(root: &Path) -> Result<Self, BackfillError> {
        let path = root.join(QUEUE_FILE);
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
        crate::atomic::write_durable(&self.path, &json).map_err(|e| err(e.to_string()))
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

    /// Asks `writer` for the real header of up to `max` queued chunks;
    /// rewrites and re-indexes those it answers. Saves the queue.
    pub fn drain(
        &mut self,
        root: &Path,
        writer: &dyn HeaderWriter,
        indexer: Option<&dyn Indexer>,
        max: usize,
    ) -> Result<Drained, BackfillError> {
        let mut out = Drained::default();
        let mut keep = Vec::new();
        for (i, mut entry) in std::mem::take(&mut self.entries).into_iter().enumerate() {
            if i >= max {
                keep.push(entry);
                continue;
            }
            match rewrite(root, &entry, writer, indexer) {
                Outcome::Done => out.rewritten += 1,
                Outcome::Gone => out.dropped += 1,
                Outcome::Again => {
                    entry.attempts += 1;
                    keep.push(entry);
                }
            }
        }
        self.entries = keep;
        out.remaining = self.entries.len() as u32;
        self.save()?;
        Ok(out)
    }
}

enum Outcome {
    Done,
    Again,
    Gone,
}

fn rewrite(
    root: &Path,
    entry: &Entry,
    writer: &dyn HeaderWriter,
    indexer: Option<&dyn Indexer>,
) -> Outcome {
    let path = root.join(&entry.path);
    let Ok(text) = fs_err::read_to_string(&path) else {
        return Outcome::Gone;
    };
    let Ok(mut doc) = ChunkDoc::parse(&text) else {
        return Outcome::Gone;
    };
    if doc.frontmatter.chunk_id != entry.chunk_id {
        return Outcome::Gone;
    }
    let user: Vec<&str> = doc.exchanges.iter().map(|e| e.user.as_str()).collect();
    let assistant: Vec<&str> = doc.exchanges.iter().map(|e| e.assistant.as_str()).collect();
    let (user, assistant) = (user.join("\n"), assistant.join("\n"));
    let date = chrono::DateTime::parse_from_rfc3339(&doc.frontmatter.timestamp)
        .ok()
        .map(|d| d.to_utc());
    let header = writer.write(&HeaderInput {
        platform: &doc.frontmatter.source_platform,
        title: doc.frontmatter.conversation_title.as_deref(),
        date,
        user: &user,
        assistant: &assistant,
        turn_range: &doc.frontmatter.turn_range,
        total_pairs: 0,
        previous: None,
    });
    let header = match header {
        Ok(h) if !h.backfill => h,
        _ => return Outcome::Again,
    };
    doc.context = header.context;
    doc.frontmatter.topics = header.topics;
    doc.frontmatter.extra.remove(HEADER_STATUS);
    let Ok(new_text) = doc.to_markdown() else {
        return Outcome::Again;
    };
    if crate::atomic::write_durable(&path, new_text.as_bytes()).is_err() {
        return Outcome::Again;
    }
    if let Some(ix) = indexer
        && ix
            .index(&[index_record(&doc, &new_text, &entry.path)])
            .is_err()
    {
        // The file has its header; `chatmill verify --repair` / the next
        // import bring the index along. Not worth another model call.
        tracing::warn!("backfilled `{}` but could not re-index it", entry.chunk_id);
    }
    Outcome::Done
}
