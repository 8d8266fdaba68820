//! Inline mode: one finished exchange at a time, chunked, written and
//! indexed before the caller gets its answer (the spec's "Inline Processing
//! Sequence"). The same chunker, headers, chunk files, manifest and index
//! as batch import; only the naming and the source differ:
//!
//! 1. the exchange is appended to the session's raw log
//!    `ROOT/raw/<session-id>.md` (the format the Markdown adapter reads back
//!    exactly — so a later batch import of `raw/` finds these turns already
//!    done and writes nothing twice);
//! 2. the chunk file is written (`YYYY-MM-DD_HH-MM_session-…_pair-NNN_….md`,
//!    `source_platform: local`, `agent_id` as given);
//! 3. it is indexed; 4. the manifest records it.
//!
//! A turn already recorded (same session and turn index) is answered with
//! the chunk it made, and nothing is written. One writer at a time on the
//! root ([`RootLock`]), so an import may run beside the server.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chatmill_adapter_markdown::{RawLogEntry, parse_raw_log, render_raw_log_entry};
use chatmill_index::Indexer;
use chatmill_model::{Conversation, Pair, Part};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::backfill::Queue;
use crate::header::{HeaderWriter, Previous};
use crate::lock::{LockError, RootLock};
use crate::manifest::{Manifest, ManifestError, conversation_key, stamp};
use crate::processor::{Naming, ProcessError, Processor, ProcessorConfig, Written};
use crate::root::Root;
use crate::sink::{ChunkSink, IndexSink};
use crate::title::names_conversation;

/// One finished exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    pub session_id: String,
    /// 1-based, in order within the session.
    pub turn_index: u32,
    pub user: String,
    pub assistant: String,
    #[serde(default)]
    pub model: Option<String>,
    /// When the user spoke (default: now).
    #[serde(default)]
    pub timestamp: Option<DateTime<Utc>>,
    /// Default `user`.
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
}

/// What a turn became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ack {
    /// `None` when the exchange was mechanical ("thanks") and left out.
    pub chunk_id: Option<String>,
    /// The chunk file.
    pub path: Option<PathBuf>,
    pub indexed: bool,
    /// The turn was already recorded; nothing was written.
    pub duplicate: bool,
    /// Why no chunk was written, when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
    /// The header is a stand-in; the real one is queued.
    pub header_pending: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum InlineError {
    #[error(
        "invalid session id `{0}`: use 1–128 letters, digits, `.`, `_` or `-`, not starting with `.`"
    )]
    Session(String),
    #[error("invalid turn: {0}")]
    Turn(String),
    #[error("cannot append to the raw log `{path}`: {source}")]
    RawLog {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Backfill(#[from] crate::backfill::BackfillError),
}

impl InlineError {
    /// Whether the caller sent something wrong (as opposed to a server-side
    /// failure).
    pub fn is_client_error(&self) -> bool {
        matches!(self, Self::Session(_) | Self::Turn(_))
    }
}

fn valid_session(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// What the writer remembers per session between turns.
#[derive(Debug, Default)]
struct Session {
    /// The last turn in the raw log.
    raw_turn: u32,
    previous: Option<Previous>,
    /// The request its derived title is made from, as a batch import of its
    /// raw log chooses it ([`crate::title::of_requests`]): the first that is
    /// more than a greeting (`named`), else the first.
    first_request: Option<String>,
    named: bool,
}

pub struct InlineWriter {
    root: PathBuf,
    header: Arc<dyn HeaderWriter>,
    indexer: Option<Arc<dyn Indexer>>,
    manifest: Manifest,
    /// The manifest file's (mtime, len) when last read: another writer
    /// (an import) changed it when these differ.
    manifest_stamp: Option<(std::time::SystemTime, u64)>,
    sessions: HashMap<String, Session>,
    lock_timeout: Duration,
}

impl InlineWriter {
    pub fn open(
        root: &Path,
        header: Arc<dyn HeaderWriter>,
        indexer: Option<Arc<dyn Indexer>>,
    ) -> Result<Self, InlineError> {
        let paths = Root::new(root);
        fs_err::create_dir_all(paths.raw()).map_err(|source| InlineError::RawLog {
            path: paths.raw(),
            source,
        })?;
        let manifest_path = paths.manifest();
        Ok(Self {
            root: root.to_path_buf(),
            header,
            indexer,
            manifest: Manifest::load(&manifest_path)?,
            manifest_stamp: stamp(&manifest_path),
            sessions: HashMap::new(),
            lock_timeout: Duration::from_millis(1500),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn raw_log(&self, session: &str) -> std::io::Result<PathBuf> {
        Root::new(&self.root).raw_log(session)
    }

    /// Processes one turn; see the module docs.
    pub fn turn(&mut self, t: &Turn) -> Result<Ack, InlineError> {
        check(t)?;
        let _lock = RootLock::acquire(&self.root, self.lock_timeout)?;
        let manifest_path = Root::new(&self.root).manifest();
        let now = stamp(&manifest_path);
        if now != self.manifest_stamp {
            self.manifest = Manifest::load(&manifest_path)?;
            self.manifest_stamp = now;
        }
        let key = conversation_key("local", &t.session_id);
        if let Some(ack) = self.recorded(&key, t.turn_index) {
            return Ok(ack);
        }
        let time = t.timestamp.unwrap_or_else(Utc::now);
        // Whole seconds, as the raw log keeps them: a re-import of the log
        // must give the same chunk.
        let time = DateTime::from_timestamp(time.timestamp(), 0).unwrap_or(time);
        // 1. The raw log (unless a crash after this step left it there).
        self.append_raw(t, time)?;
        // 2. The chunk, with the same processor as batch import.
        let conv = conversation_of(t, time);
        let cfg = ProcessorConfig {
            naming: Naming::Inline,
            out_dir: self.root.clone(),
            agent_id: t.agent_id.clone().unwrap_or_else(|| "user".into()),
            render: Default::default(),
            chunker: Default::default(),
        };
        let mut processor = Processor::for_ids(cfg, self.header.as_ref(), &self.manifest, &key);
        let session = self
            .sessions
            .get_mut(&t.session_id)
            .expect("known once its raw log is appended");
        processor.set_first_request(session.first_request.clone());
        let prepared = processor.prepare(
            &conv,
            &format!("{}.md", t.session_id),
            time,
            crate::processor::chunked_to(&self.manifest, &conv),
            session.previous.take(),
        )?;
        session.previous = prepared.previous.clone();
        let outcome = processor.commit(prepared, &mut self.manifest);
        let Some(w) = outcome.written.into_iter().next() else {
            // Nothing written (a mechanical exchange, a duplicate): how far
            // the session is chunked is still recorded.
            self.manifest.save(&manifest_path)?;
            self.manifest_stamp = stamp(&manifest_path);
            return Ok(Ack {
                chunk_id: None,
                path: None,
                indexed: false,
                duplicate: outcome.duplicates > 0,
                excluded: (outcome.excluded > 0)
                    .then(|| "a mechanical exchange (greeting, thanks, ok)".to_string()),
                header_pending: false,
            });
        };
        // 3. The index; 4. the manifest (after the chunk is durable).
        let indexed = self.index(&w);
        self.manifest.save(&manifest_path)?;
        self.manifest_stamp = stamp(&manifest_path);
        if w.header_pending {
            Queue::push_persisted(&self.root, &w.chunk_id, &w.record.meta.path)?;
        }
        Ok(Ack {
            header_pending: w.header_pending,
            chunk_id: Some(w.chunk_id),
            path: Some(w.path),
            indexed,
            duplicate: false,
            excluded: None,
        })
    }

    /// The answer for a turn the manifest already records (a resend).
    fn recorded(&self, key: &str, turn: u32) -> Option<Ack> {
        let rec = self.manifest.conversations.get(key)?;
        if rec.last_pair < turn {
            return None;
        }
        let marker = format!("-{turn:03}-");
        let id = rec
            .chunk_ids
            .iter()
            .find(|id| id.contains(&marker))
            .cloned();
        Some(Ack {
            path: None,
            indexed: id.is_some(),
            chunk_id: id,
            duplicate: true,
            excluded: None,
            header_pending: false,
        })
    }

    /// Appends the turn to its session's raw log, unless the log has it (a
    /// crash after this step); the session is known afterwards.
    fn append_raw(&mut self, t: &Turn, time: DateTime<Utc>) -> Result<(), InlineError> {
        let raw_path = self
            .raw_log(&t.session_id)
            .map_err(|source| InlineError::RawLog {
                path: Root::new(&self.root).raw(),
                source,
            })?;
        let session = self
            .sessions
            .entry(t.session_id.clone())
            .or_insert_with(|| {
                let mut logged = fs_err::read_to_string(&raw_path)
                    .map(|text| parse_raw_log(&text))
                    .unwrap_or_default();
                logged.sort_by_key(|e| e.turn);
                let named = logged.iter().find(|e| names_conversation(&e.user));
                Session {
                    raw_turn: logged.last().map_or(0, |e| e.turn),
                    previous: None,
                    named: named.is_some(),
                    first_request: named.or(logged.first()).map(|e| e.user.clone()),
                }
            });
        if !session.named && names_conversation(&t.user) {
            session.first_request = Some(t.user.clone());
            session.named = true;
        } else if session.first_request.is_none() {
            session.first_request = Some(t.user.clone());
        }
        if session.raw_turn >= t.turn_index {
            return Ok(());
        }
        let entry = render_raw_log_entry(&RawLogEntry {
            timestamp: Some(chatmill_adapter_sdk::Timestamp {
                seconds: time.timestamp(),
                nanos: 0,
            }),
            model: t.model.clone(),
            turn: t.turn_index,
            user: t.user.clone(),
            assistant: t.assistant.clone(),
        });
        let append = || -> std::io::Result<()> {
            let mut f = fs_err::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&raw_path)?;
            f.write_all(entry.as_bytes())?;
            f.sync_data()
        };
        append().map_err(|source| InlineError::RawLog {
            path: raw_path.clone(),
            source,
        })?;
        session.raw_turn = t.turn_index;
        Ok(())
    }

    /// Indexes the turn's chunk; whether the index took it. The chunk file
    /// is the source of truth: the next import or `chatmill verify
    /// --repair` indexes one the index did not take.
    fn index(&self, w: &Written) -> bool {
        let Some(ix) = &self.indexer else {
            return false;
        };
        let sink = IndexSink::new(ix.as_ref());
        sink.committed(w.clone());
        match sink.finish().failure {
            None => true,
            Some((_, e)) => {
                tracing::warn!("chunk `{}` written but not indexed: {e}", w.chunk_id);
                false
            }
        }
    }
}

/// Refuses a turn that cannot be recorded.
fn check(t: &Turn) -> Result<(), InlineError> {
    if !valid_session(&t.session_id) {
        return Err(InlineError::Session(t.session_id.clone()));
    }
    if t.turn_index == 0 {
        return Err(InlineError::Turn("`turn_index` starts at 1".into()));
    }
    if t.user.trim().is_empty() && t.assistant.trim().is_empty() {
        return Err(InlineError::Turn(
            "`user` and `assistant` are both empty".into(),
        ));
    }
    Ok(())
}

/// The turn as a one-pair conversation: the same identity (`local`, the
/// session id) a batch import of its raw log gives.
fn conversation_of(t: &Turn, time: DateTime<Utc>) -> Conversation {
    Conversation {
        id: t.session_id.clone(),
        title: t.title.clone(),
        created: None,
        updated: None,
        platform: "local".into(),
        model: None,
        metadata: BTreeMap::from([("session_id".to_string(), t.session_id.clone())]),
        pairs: vec![Pair {
            index: t.turn_index,
            timestamp: Some(time),
            model: t.model.clone(),
            user: vec![Part::Text {
                text: t.user.clone(),
            }],
            assistant: vec![Part::Text {
                text: t.assistant.clone(),
            }],
            metadata: BTreeMap::new(),
        }],
        skipped: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::ExtractiveWriter;

    fn turn(i: u32, user: &str) -> Turn {
        Turn {
            session_id: "2026-03-31_session-a7f3".into(),
            turn_index: i,
            user: user.into(),
            assistant: format!("Answer {i}: set `proxy_read_timeout 300s;` in the location block."),
            model: Some("claude-sonnet-4".into()),
            timestamp: DateTime::from_timestamp(1_774_966_985 + i64::from(i) * 60, 0),
            agent_id: None,
            title: None,
        }
    }

    #[test]
    fn a_turn_is_logged_chunked_and_recorded_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = InlineWriter::open(dir.path(), Arc::new(ExtractiveWriter), None).unwrap();
        let a = w
            .turn(&turn(1, "Why does nginx return 504 on long uploads?"))
            .unwrap();
        let id = a.chunk_id.clone().unwrap();
        assert!(id.starts_with("local-"), "{id}");
        let name = a
            .path
            .as_ref()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with("2026-03-31_14-24_session-2026-03-31-s_pair-001_"),
            "{name}"
        );
        let text = std::fs::read_to_string(a.path.as_ref().unwrap()).unwrap();
        assert!(text.contains("source_platform: local"), "{text}");
        assert!(text.contains("agent_id: user"), "{text}");
        assert!(
            text.contains("source_file: 2026-03-31_session-a7f3.md"),
            "{text}"
        );

        // The same turn again: nothing new anywhere.
        let again = w
            .turn(&turn(1, "Why does nginx return 504 on long uploads?"))
            .unwrap();
        assert!(again.duplicate);
        assert_eq!(again.chunk_id.as_deref(), Some(id.as_str()));
        let raw =
            std::fs::read_to_string(dir.path().join("raw/2026-03-31_session-a7f3.md")).unwrap();
        assert_eq!(parse_raw_log(&raw).len(), 1);

        // "thanks" is logged but not chunked.
        let thanks = w.turn(&turn(2, "thanks")).unwrap();
        assert!(
            thanks.chunk_id.is_none() && thanks.excluded.is_some(),
            "{thanks:?}"
        );
        let raw =
            std::fs::read_to_string(dir.path().join("raw/2026-03-31_session-a7f3.md")).unwrap();
        let entries = parse_raw_log(&raw);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].user, "thanks");

        // A writer opened later (a restart) knows the session.
        let mut w2 = InlineWriter::open(dir.path(), Arc::new(ExtractiveWriter), None).unwrap();
        assert!(w2.turn(&turn(2, "thanks")).unwrap().duplicate);
        let third = w2.turn(&turn(3, "And for websockets?")).unwrap();
        assert!(third.chunk_id.unwrap().contains("-003-"));
    }

    #[test]
    fn an_untitled_session_is_named_after_its_first_request() {
        let dir = tempfile::tempdir().unwrap();
        let title =
            "conversation_title: Why does nginx return 504 on long uploads\ntitle_derived: true\n";
        let text = |a: &Ack| std::fs::read_to_string(a.path.as_ref().unwrap()).unwrap();
        let mut w = InlineWriter::open(dir.path(), Arc::new(ExtractiveWriter), None).unwrap();
        let first = w
            .turn(&turn(
                1,
                "Why does nginx return 504 on long uploads? It is behind a proxy.",
            ))
            .unwrap();
        assert!(text(&first).contains(title), "{}", text(&first));
        let second = w
            .turn(&turn(2, "Which timeout covers the request body?"))
            .unwrap();
        assert!(text(&second).contains(title), "{}", text(&second));
        // A restarted server reads the first request back from the raw log.
        let mut w2 = InlineWriter::open(dir.path(), Arc::new(ExtractiveWriter), None).unwrap();
        let third = w2.turn(&turn(3, "Does HTTP/2 change that?")).unwrap();
        assert!(text(&third).contains(title), "{}", text(&third));
        // A session that opens with a greeting is named after what came next,
        // as a batch import of its raw log names it.
        let mut t = turn(1, "hi!");
        t.session_id = "greeted".into();
        w2.turn(&t).unwrap();
        let mut t = turn(2, "How do I rotate nginx logs daily?");
        t.session_id = "greeted".into();
        let greeted = text(&w2.turn(&t).unwrap());
        assert!(
            greeted.contains("conversation_title: How do I rotate nginx logs daily\n"),
            "{greeted}"
        );
        // A title the caller gives is the source's own.
        let mut t = turn(1, "Set up a reverse proxy for the API");
        t.session_id = "named".into();
        t.title = Some("Proxy setup".into());
        let named = w2.turn(&t).unwrap();
        let named = text(&named);
        assert!(
            named.contains("conversation_title: Proxy setup\n"),
            "{named}"
        );
        assert!(!named.contains("title_derived"), "{named}");
    }

    #[test]
    fn bad_turns_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = InlineWriter::open(dir.path(), Arc::new(ExtractiveWriter), None).unwrap();
        let mut t = turn(1, "hi there, a real question?");
        t.session_id = "../etc/passwd".into();
        assert!(matches!(w.turn(&t), Err(InlineError::Session(_))));
        let mut t = turn(0, "a question");
        t.session_id = "s1".into();
        assert!(w.turn(&t).unwrap_err().is_client_error());
    }
}
