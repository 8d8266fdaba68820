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
//!
//! Turns that arrive together are written as one batch
//! ([`InlineWriter::turns`]): each step above is taken for all of them
//! before the next (one lock, one sync of the raw logs, one embedding call,
//! one manifest save), in the order they came, with an answer per turn.

mod error;
mod raw_log;
mod step;
mod turn;

use crate::inline::raw_log::sync_logs;
use crate::inline::step::{Step, answers, fail_all};
use crate::inline::turn::{check, conversation_of};

pub use error::InlineError;
pub use turn::{Ack, Turn};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chatmill_adapter_markdown::{RawLogEntry, parse_raw_log, render_raw_log_entry};
use chatmill_index::{ChunkRecord, Indexer};
use chatmill_redact::Redactor;
use chrono::{DateTime, Utc};

use crate::backfill::Queue;
use crate::processor::{Naming, Processor, ProcessorConfig, Written};
use chatmill_chunking::header::{HeaderWriter, Previous};
use chatmill_chunking::title::names_conversation;
use chatmill_root::chunk_store::ChunkStore;
use chatmill_root::lock::RootLock;
use chatmill_root::manifest::{Manifest, conversation_key, stamp};
use chatmill_root::root::Root;

/// What the writer remembers per session between turns.
#[derive(Debug, Default)]
struct Session {
    /// The last turn in the raw log.
    raw_turn: u32,
    previous: Option<Previous>,
    /// The request its derived title is made from, as a batch import of its
    /// raw log chooses it ([`chatmill_chunking::title::of_requests`]): the first that is
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
    /// Replaces the secrets of each turn before it is logged or chunked
    /// (`None`: redaction is off).
    redactor: Option<Arc<Redactor>>,
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
            redactor: None,
        })
    }

    /// Redacts every turn with `redactor` before it reaches the raw log,
    /// a chunk, the header model or the index ([`crate::redaction`]).
    pub fn redacting(mut self, redactor: Option<Arc<Redactor>>) -> Self {
        self.redactor = redactor;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn raw_log(&self, session: &str) -> std::io::Result<PathBuf> {
        Root::new(&self.root).raw_log(session)
    }

    /// Processes one turn; see the module docs. A batch of one.
    pub fn turn(&mut self, t: &Turn) -> Result<Ack, InlineError> {
        self.turns(std::slice::from_ref(t))
            .pop()
            .expect("one answer per turn")
    }

    /// Processes turns that arrived together, in their order, as
    /// [`InlineWriter::turn`] would one after another, with the work they
    /// share done once: one root lock, one sync of the raw logs, one
    /// embedding call and one index write for all their chunks, one
    /// manifest save.
    /// The order stays: raw logs durable → chunk files → index → manifest;
    /// only then is an answer `Ok`. Each turn gets its own answer (in the
    /// order given): one bad turn fails alone.
    pub fn turns(&mut self, turns: &[Turn]) -> Vec<Result<Ack, InlineError>> {
        let redacted: Vec<Turn>;
        let turns = match &self.redactor {
            Some(r) => {
                redacted = turns.iter().map(|t| turn::redacted(r, t)).collect();
                &redacted[..]
            }
            None => turns,
        };
        let mut steps: Vec<Step> = turns
            .iter()
            .map(|t| match check(t) {
                Ok(()) => Step::Checked,
                Err(e) => Step::Done(Err(e)),
            })
            .collect();
        if steps.iter().any(|s| matches!(s, Step::Checked)) {
            match self.lock() {
                Ok(_lock) => {
                    // 1. The raw logs; 2. the chunks; 3. the index;
                    // 4. the manifest, all under the lock.
                    self.log_raw(turns, &mut steps);
                    self.chunk(turns, &mut steps);
                    self.index_and_flush(&mut steps);
                    self.index_resent(&mut steps);
                    self.record(&mut steps);
                }
                Err(e) => fail_all(&mut steps, e, |s| matches!(s, Step::Checked)),
            }
        }
        answers(steps)
    }

    /// Takes the root lock, and reads the manifest again when another
    /// writer (an import) saved it meanwhile.
    fn lock(&mut self) -> Result<RootLock, InlineError> {
        let lock = RootLock::acquire(&self.root, self.lock_timeout)?;
        let manifest_path = Root::new(&self.root).manifest();
        let now = stamp(&manifest_path);
        if now != self.manifest_stamp {
            self.manifest = Manifest::load(&manifest_path)?;
            self.manifest_stamp = now;
        }
        Ok(lock)
    }

    /// Step 1: appends each new turn to its session's raw log, then makes
    /// every log written durable ([`sync_logs`]). A turn the manifest
    /// already records is answered as a resend and logs nothing.
    fn log_raw(&mut self, turns: &[Turn], steps: &mut [Step]) {
        // Per session: a handle on its log, to sync once.
        let mut appended: HashMap<&str, (PathBuf, fs_err::File)> = HashMap::new();
        for (t, step) in turns.iter().zip(steps.iter_mut()) {
            if !matches!(step, Step::Checked) {
                continue;
            }
            let key = conversation_key("local", &t.session_id);
            if let Some(ack) = self.recorded(&key, t.turn_index) {
                *step = Step::Done(Ok(ack));
                continue;
            }
            let time = t.timestamp.unwrap_or_else(Utc::now);
            // Whole seconds, as the raw log keeps them: a re-import of the
            // log must give the same chunk.
            let time = DateTime::from_timestamp(time.timestamp(), 0).unwrap_or(time);
            *step = match self.append_raw(t, time) {
                Ok(file) => {
                    if let Some(file) = file {
                        appended.insert(t.session_id.as_str(), file);
                    }
                    Step::Logged(time)
                }
                Err(e) => Step::Done(Err(e)),
            };
        }
        let synced = sync_logs(&appended);
        for (session, (path, _)) in appended {
            let Some(e) = synced.get(session) else {
                continue;
            };
            // Every turn of that session waits for this sync: none is
            // chunked from a log that may not be on disk.
            for (t, step) in turns.iter().zip(steps.iter_mut()) {
                if t.session_id == session && matches!(step, Step::Logged(_)) {
                    *step = Step::Done(Err(InlineError::RawLog {
                        path: path.clone(),
                        source: std::io::Error::new(e.kind(), e.to_string()),
                    }));
                }
            }
        }
    }

    /// Step 2: chunks each logged turn with the same processor as batch
    /// import, in order (a session's turns follow each other), and
    /// commits it to the manifest in memory.
    fn chunk(&mut self, turns: &[Turn], steps: &mut [Step]) {
        for (t, step) in turns.iter().zip(steps.iter_mut()) {
            let Step::Logged(time) = *step else { continue };
            let key = conversation_key("local", &t.session_id);
            // The same turn earlier in this batch.
            if let Some(ack) = self.recorded(&key, t.turn_index) {
                *step = Step::Done(Ok(ack));
                continue;
            }
            *step = match self.chunk_turn(t, time, &key) {
                Ok(step) => step,
                Err(e) => Step::Done(Err(e)),
            };
        }
    }

    /// One turn's chunk, written and committed to the manifest in memory.
    fn chunk_turn(
        &mut self,
        t: &Turn,
        time: DateTime<Utc>,
        key: &str,
    ) -> Result<Step, InlineError> {
        let conv = conversation_of(t, time);
        let cfg = ProcessorConfig {
            naming: Naming::Inline,
            out_dir: self.root.clone(),
            agent_id: t.agent_id.clone().unwrap_or_else(|| "user".into()),
            render: Default::default(),
            chunker: Default::default(),
            redaction: self
                .redactor
                .as_ref()
                .map(|_| chatmill_redact::RULESET_VERSION),
        };
        let mut processor = Processor::for_ids(cfg, self.header.as_ref(), &self.manifest, key);
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
        Ok(match outcome.written.into_iter().next() {
            Some(written) => Step::Chunk {
                written: Box::new(written),
                indexed: false,
            },
            // Nothing written (a mechanical exchange, a duplicate): how far
            // the session is chunked is still recorded.
            None => Step::Nothing(Ack {
                chunk_id: None,
                path: None,
                indexed: false,
                duplicate: outcome.duplicates > 0,
                excluded: (outcome.excluded > 0)
                    .then(|| "a mechanical exchange (greeting, thanks, ok)".to_string()),
                header_pending: false,
            }),
        })
    }

    /// Step 3, [`InlineWriter::index_chunks`], with the chunk files on
    /// their way to disk (a `syncfs`) while the model embeds: the
    /// manifest's own sync, which makes them durable before it is saved,
    /// then has little left to do.
    fn index_and_flush(&self, steps: &mut [Step]) {
        let chunks = steps.iter().any(|s| matches!(s, Step::Chunk { .. }));
        if !chunks || self.indexer.is_none() {
            self.index_chunks(steps);
            return;
        }
        std::thread::scope(|scope| {
            scope.spawn(|| {
                if let Err(e) = chatmill_root::atomic::sync(&self.root) {
                    tracing::debug!("early sync of the chunk files: {e}");
                }
            });
            self.index_chunks(steps);
        });
    }

    /// Step 3: indexes every chunk of the batch in one call (one embedding
    /// call, one store transaction). When that fails, each chunk is tried
    /// alone, so that one the index refuses does not hold back the others.
    /// The chunk file is the source of truth: the next import or `chatmill
    /// verify --repair` indexes one the index did not take.
    fn index_chunks(&self, steps: &mut [Step]) {
        let Some(ix) = &self.indexer else {
            return;
        };
        let mut chunks: Vec<(&Written, &mut bool)> = steps
            .iter_mut()
            .filter_map(|s| match s {
                Step::Chunk { written, indexed } => Some((&**written, indexed)),
                _ => None,
            })
            .collect();
        if chunks.is_empty() {
            return;
        }
        let records: Vec<ChunkRecord> = chunks.iter().map(|(w, _)| w.record.clone()).collect();
        if ix.index(&records).is_ok() {
            for (_, indexed) in &mut chunks {
                **indexed = true;
            }
            return;
        }
        for (w, indexed) in chunks {
            match ix.index(std::slice::from_ref(&w.record)) {
                Ok(()) => *indexed = true,
                Err(e) => tracing::warn!("chunk `{}` written but not indexed: {e}", w.chunk_id),
            }
        }
    }

    /// Step 3 for resends: a resent turn's chunk is answered as indexed
    /// only when the index holds it. One the index lacks (an earlier
    /// attempt failed: a server started with another embedding model) is
    /// indexed now from its file; when that fails too, the answer says so.
    fn index_resent(&self, steps: &mut [Step]) {
        let resent = |s: &Step| match s {
            Step::Done(Ok(ack)) if ack.duplicate => ack.chunk_id.clone(),
            _ => None,
        };
        // A resend of a turn chunked in this batch is answered from its
        // chunk's own step ([`answers`]).
        let written: BTreeSet<String> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Chunk { written, .. } => Some(written.chunk_id.clone()),
                _ => None,
            })
            .collect();
        let ids: Vec<String> = steps
            .iter()
            .filter_map(resent)
            .filter(|id| !written.contains(id))
            .collect();
        if ids.is_empty() {
            return;
        }
        let held = match &self.indexer {
            Some(ix) => self.held_or_indexed(ix.as_ref(), &ids),
            None => BTreeSet::new(),
        };
        for step in steps.iter_mut() {
            if let Step::Done(Ok(ack)) = step
                && ack.duplicate
                && let Some(id) = &ack.chunk_id
                && !written.contains(id)
            {
                ack.indexed = held.contains(id);
            }
        }
    }

    /// Which of `ids` the index holds once the missing ones, read from
    /// their chunk files, are indexed.
    fn held_or_indexed(&self, ix: &dyn Indexer, ids: &[String]) -> BTreeSet<String> {
        let mut held = match ix.holding(ids) {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!("cannot ask the index about resent turns: {e}");
                return BTreeSet::new();
            }
        };
        let missing: Vec<&str> = ids
            .iter()
            .filter(|id| !held.contains(*id))
            .map(String::as_str)
            .collect();
        for scanned in ChunkStore::new(&self.root).find(missing) {
            let id = scanned.doc.frontmatter.chunk_id.clone();
            match ix.index(std::slice::from_ref(&scanned.record())) {
                Ok(()) => {
                    held.insert(id);
                }
                Err(e) => tracing::warn!("resent chunk `{id}` still not indexed: {e}"),
            }
        }
        held
    }

    /// Step 4: saves the manifest once for the batch (after the chunk files
    /// are durable), then queues the stand-in headers for backfill.
    fn record(&mut self, steps: &mut [Step]) {
        let committed = |s: &Step| matches!(s, Step::Nothing(_) | Step::Chunk { .. });
        if !steps.iter().any(committed) {
            return;
        }
        self.refresh_notes(steps);
        let manifest_path = Root::new(&self.root).manifest();
        if let Err(e) = self.manifest.save(&manifest_path) {
            fail_all(steps, e.into(), committed);
            return;
        }
        self.manifest_stamp = stamp(&manifest_path);
        for step in steps.iter_mut() {
            if let Step::Chunk { written: w, .. } = step
                && w.header_pending
                && let Err(e) = Queue::push_persisted(&self.root, &w.chunk_id, &w.record.meta.path)
            {
                *step = Step::Done(Err(e.into()));
            }
        }
    }

    /// The notes of the sessions that got chunks ([`chatmill_root::notes`]), named
    /// in the manifest before it is saved. A note that cannot be written is
    /// logged and left to `chatmill verify`; the turn is answered.
    fn refresh_notes(&mut self, steps: &[Step]) {
        let mut new: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for step in steps {
            if let Step::Chunk { written, .. } = step {
                let meta = &written.record.meta;
                let key = conversation_key(&meta.platform, &meta.conversation_id);
                new.entry(key).or_default().push(meta.path.clone());
            }
        }
        let root = Root::new(&self.root);
        for (key, files) in new {
            if let Err(e) = chatmill_root::notes::refresh(&root, &mut self.manifest, &key, &files) {
                tracing::warn!("{e}");
            }
        }
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
    /// crash after this step); the session is known afterwards. The log and
    /// a handle on it, to be synced, when it was appended to.
    fn append_raw(
        &mut self,
        t: &Turn,
        time: DateTime<Utc>,
    ) -> Result<Option<(PathBuf, fs_err::File)>, InlineError> {
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
            return Ok(None);
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
        let append = || -> std::io::Result<fs_err::File> {
            let mut f = fs_err::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&raw_path)?;
            f.write_all(entry.as_bytes())?;
            Ok(f)
        };
        let file = append().map_err(|source| InlineError::RawLog {
            path: raw_path.clone(),
            source,
        })?;
        session.raw_turn = t.turn_index;
        Ok(Some((raw_path, file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chatmill_chunking::header::ExtractiveWriter;

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

    /// A redacting writer: the secret of a turn reaches neither its raw
    /// log nor its chunk; its placeholder does, and the chunk says which
    /// rule set redacted it.
    #[test]
    fn a_turns_secrets_reach_neither_raw_log_nor_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let key = chatmill_redact::Key::from_bytes([5; 32]);
        let r = Redactor::new(key, &chatmill_redact::Config::default()).unwrap();
        let mut w = InlineWriter::open(dir.path(), Arc::new(ExtractiveWriter), None)
            .unwrap()
            .redacting(Some(Arc::new(r)));
        let secret = "ghp_0123456789abcdefABCDEF0123456789wxyz";
        let mut t = turn(1, &format!("Why does `git push` with {secret} fail?"));
        t.title = Some(format!("push with {secret}"));
        let a = w.turn(&t).unwrap();
        let chunk = std::fs::read_to_string(a.path.unwrap()).unwrap();
        let raw =
            std::fs::read_to_string(dir.path().join("raw/2026-03-31_session-a7f3.md")).unwrap();
        for text in [&chunk, &raw] {
            assert!(!text.contains(&secret[8..24]), "{text}");
            assert!(text.contains("[REDACTED:github-token:"), "{text}");
        }
        assert!(chunk.contains("\nredaction: 1\n"), "{chunk}");
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

    /// The lexical stand-in, counting the texts of each call, failing any
    /// call with a text that contains `poison`.
    struct Counting {
        inner: chatmill_index::Lexical,
        calls: std::sync::Mutex<Vec<usize>>,
        poison: &'static str,
    }

    impl chatmill_index::Embedder for Counting {
        fn id(&self) -> &str {
            self.inner.id()
        }
        fn dim(&self) -> usize {
            self.inner.dim()
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, chatmill_index::IndexError> {
            self.calls.lock().unwrap().push(texts.len());
            if texts.iter().any(|t| t.contains(self.poison)) {
                return Err(chatmill_index::IndexError::Embed {
                    model: "counting".into(),
                    message: "poisoned text".into(),
                    hint: None,
                });
            }
            self.inner.embed(texts)
        }
    }

    fn indexed_writer(
        root: &Path,
        poison: &'static str,
    ) -> (InlineWriter, Arc<Counting>, Arc<chatmill_index::Index>) {
        let embedder = Arc::new(Counting {
            inner: chatmill_index::Lexical::default(),
            calls: Default::default(),
            poison,
        });
        let store =
            chatmill_index::SqliteStore::open(&root.join(".chatmill/index.sqlite3")).unwrap();
        let index = Arc::new(chatmill_index::Index::new(
            Arc::new(store),
            embedder.clone(),
        ));
        let w = InlineWriter::open(root, Arc::new(ExtractiveWriter), Some(index.clone())).unwrap();
        (w, embedder, index)
    }

    fn in_session(session: &str, i: u32, user: &str) -> Turn {
        Turn {
            session_id: session.into(),
            ..turn(i, user)
        }
    }

    /// The Markdown files in `dir` (name → bytes).
    fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        for e in fs_err::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() && p.extension().is_some_and(|x| x == "md") {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
        out
    }

    #[test]
    fn a_batch_writes_what_the_same_turns_one_at_a_time_write() {
        let batch = [
            in_session("a", 1, "How do I stop nginx returning 504 on long uploads?"),
            in_session("b", 1, "hi!"),
            in_session("a", 2, "Which timeout covers the request body?"),
            in_session("b", 2, "How do I rotate nginx logs daily?"),
            in_session("a", 3, "thanks"),
            in_session("a", 4, "And for websockets behind the same proxy?"),
        ];
        let one = tempfile::tempdir().unwrap();
        let mut w = InlineWriter::open(one.path(), Arc::new(ExtractiveWriter), None).unwrap();
        let singly: Vec<Ack> = batch.iter().map(|t| w.turn(t).unwrap()).collect();
        let all = tempfile::tempdir().unwrap();
        let mut w = InlineWriter::open(all.path(), Arc::new(ExtractiveWriter), None).unwrap();
        let together: Vec<Ack> = w.turns(&batch).into_iter().map(Result::unwrap).collect();

        let ids = |acks: &[Ack]| acks.iter().map(|a| a.chunk_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&together), ids(&singly));
        // A session's turns keep their order and each is chunked (the
        // greeting and the thanks are logged, not chunked).
        let chunked: Vec<bool> = together.iter().map(|a| a.chunk_id.is_some()).collect();
        assert_eq!(chunked, [true, false, true, true, false, true]);
        assert!(together[2].chunk_id.as_ref().unwrap().contains("-002-"));
        assert!(together[5].chunk_id.as_ref().unwrap().contains("-004-"));
        // The same chunk files, byte for byte (titles, headers with the
        // previous exchange as context), the same raw logs and manifest.
        let root = |d: &tempfile::TempDir| d.path().to_path_buf();
        assert_eq!(files(&root(&all)).len(), 4);
        assert_eq!(files(&root(&all)), files(&root(&one)));
        assert_eq!(
            files(&all.path().join("raw")),
            files(&one.path().join("raw"))
        );
        let manifest = |d: &tempfile::TempDir| {
            let m = Manifest::load(&Root::new(d.path()).manifest()).unwrap();
            (
                m.conversations.keys().cloned().collect::<Vec<_>>(),
                m.chunk_count(),
            )
        };
        assert_eq!(manifest(&all), manifest(&one));
        assert_eq!(manifest(&all).1, 4);
    }

    #[test]
    fn a_bad_turn_fails_alone_and_duplicates_are_answered_as_resends() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = InlineWriter::open(dir.path(), Arc::new(ExtractiveWriter), None).unwrap();
        let first = w
            .turn(&in_session(
                "s",
                1,
                "How do I pin a crate version in Cargo?",
            ))
            .unwrap();
        let answers = w.turns(&[
            in_session("../up", 1, "a path in disguise"),
            in_session("s", 2, "And how do I update only that crate?"),
            in_session("s", 0, "turn zero"),
            in_session("s", 1, "How do I pin a crate version in Cargo?"),
            in_session("s", 2, "And how do I update only that crate?"),
            in_session("t", 1, "What does `cargo tree -d` show?"),
        ]);
        assert!(matches!(answers[0], Err(InlineError::Session(_))));
        assert!(matches!(answers[2], Err(InlineError::Turn(_))));
        let ok: Vec<&Ack> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
        let [second, resent, again, other] = ok.as_slice() else {
            panic!("{answers:?}")
        };
        assert!(!second.duplicate && second.chunk_id.as_ref().unwrap().contains("-002-"));
        // A turn recorded by an earlier batch, and one recorded earlier in
        // this batch: the chunk it made, nothing written twice.
        assert!(
            resent.duplicate && resent.chunk_id == first.chunk_id,
            "{resent:?}"
        );
        assert!(
            again.duplicate && again.chunk_id == second.chunk_id,
            "{again:?}"
        );
        assert!(!other.duplicate && other.chunk_id.is_some());
        let raw = std::fs::read_to_string(dir.path().join("raw/s.md")).unwrap();
        let turns: Vec<u32> = parse_raw_log(&raw).iter().map(|e| e.turn).collect();
        assert_eq!(turns, [1, 2]);
        let m = Manifest::load(&Root::new(dir.path()).manifest()).unwrap();
        assert_eq!(m.chunk_count(), 3);
    }

    /// A resend is answered `indexed: true` only when the index holds its
    /// chunk: a chunk an earlier server failed to index is indexed now.
    #[test]
    fn a_resent_turn_whose_chunk_the_index_lacks_is_indexed_or_said_not_to_be() {
        let dir = tempfile::tempdir().unwrap();
        let t = in_session("s", 1, "How do I tune the nginx proxy timeout?");
        // Every text is poisoned: the chunk is written, not indexed.
        let (mut broken, _, index) = indexed_writer(dir.path(), "");
        let first = broken.turn(&t).unwrap();
        assert!(!first.duplicate && !first.indexed, "{first:?}");
        let id = first.chunk_id.clone().unwrap();
        assert!(index.holding(std::slice::from_ref(&id)).unwrap().is_empty());
        // Resent to a server that still cannot index it: said so.
        let again = broken.turn(&t).unwrap();
        assert!(again.duplicate && !again.indexed, "{again:?}");
        drop(broken);
        // Without an index, a resend is not indexed either.
        let mut bare = InlineWriter::open(dir.path(), Arc::new(ExtractiveWriter), None).unwrap();
        let bare_ack = bare.turn(&t).unwrap();
        assert!(bare_ack.duplicate && !bare_ack.indexed, "{bare_ack:?}");
        drop(bare);
        // Resent to a working server: indexed now, from the chunk file.
        let (mut healthy, _, index) = indexed_writer(dir.path(), "\u{0}never");
        let resent = healthy.turn(&t).unwrap();
        assert!(resent.duplicate && resent.indexed, "{resent:?}");
        assert_eq!(resent.chunk_id.as_deref(), Some(id.as_str()));
        let held = index.holding(std::slice::from_ref(&id)).unwrap();
        assert!(held.contains(&id), "{held:?}");
        assert_eq!(index.count().unwrap(), 1);
    }

    #[test]
    fn a_batch_is_embedded_in_one_call_and_a_chunk_the_index_refuses_holds_back_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, embedder, index) = indexed_writer(dir.path(), "POISON");
        let batch: Vec<Turn> = (1..=5)
            .map(|c| {
                in_session(
                    &format!("c{c}"),
                    1,
                    &format!("Client {c}: how do I shard table {c}?"),
                )
            })
            .collect();
        let acks: Vec<Ack> = w.turns(&batch).into_iter().map(Result::unwrap).collect();
        assert!(acks.iter().all(|a| a.indexed), "{acks:?}");
        assert_eq!(*embedder.calls.lock().unwrap(), [5]);
        assert_eq!(index.count().unwrap(), 5);

        embedder.calls.lock().unwrap().clear();
        let batch = [
            in_session("c1", 2, "How do I rebalance the shards?"),
            in_session("c2", 2, "What does POISON do to the embedder?"),
            in_session("c3", 2, "How do I add a replica?"),
        ];
        let acks: Vec<Ack> = w.turns(&batch).into_iter().map(Result::unwrap).collect();
        let indexed: Vec<bool> = acks.iter().map(|a| a.indexed).collect();
        assert_eq!(indexed, [true, false, true]);
        // The batch, then each chunk alone.
        assert_eq!(*embedder.calls.lock().unwrap(), [3, 1, 1, 1]);
        assert_eq!(index.count().unwrap(), 7);
        // The refused chunk is written and recorded all the same.
        assert!(acks[1].path.as_ref().unwrap().is_file());
        let m = Manifest::load(&Root::new(dir.path()).manifest()).unwrap();
        assert_eq!(m.chunk_count(), 8);
    }
}
