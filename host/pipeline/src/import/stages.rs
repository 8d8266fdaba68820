//! One input through the stages. The adapter parses on a thread of its
//! own; each conversation is prepared (chunked, given headers, its chunk
//! files written) on the thread pool as soon as it is parsed; and the
//! prepared conversations are committed here in input order, each
//! committed chunk handed to the file's [`ChunkSink`]. Output never depends
//! on timing, and a bounded channel and [`IN_FLIGHT_PAIRS`] keep memory to
//! a few conversations.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Mutex, PoisonError};

use chatmill_model::Conversation;
use chatmill_runtime::{Adjustments, Declined, Input, LoadedAdapter};
use chrono::{DateTime, Utc};

use super::{Services, Summary, Work};
use crate::processor::{Prepared, Processor, Written, chunked_after};
use crate::sink::{ChunkSink, IndexSink};
use chatmill_root::assets::Assets;
use chatmill_root::inventory::Item;
use chatmill_root::manifest::{FileRecord, Manifest, conversation_key};
use chatmill_root::notes::Notes;

/// Pairs being prepared at once, at most (and one conversation, however
/// long): what bounds the memory of a file's parsed conversations.
const IN_FLIGHT_PAIRS: usize = 512;

/// What the stages did with one input.
pub(super) struct Staged<'a> {
    /// The adapter that read it (the first candidate, when none did).
    pub adapter: &'a LoadedAdapter,
    pub result: Result<(), String>,
    pub parsed: Parsed<'a>,
    /// Pairs parsed, and the items the adapter skipped.
    pub pairs: usize,
    pub skipped: u32,
}

/// What the parse thread leaves: the adapter that read the input, the ones
/// that declined it first, what the trust boundary changed, and the hint of
/// the error that ended the parse.
#[derive(Default)]
pub(super) struct Parsed<'a> {
    pub(super) adapter: Option<&'a LoadedAdapter>,
    pub(super) declined: Vec<Declined>,
    pub(super) adjustments: Adjustments,
    pub(super) hint: Option<String>,
    /// Live: unfinished last pairs held back.
    pub(super) waiting: u32,
}

/// A conversation as its parse delivers it, with its chunks when they were
/// prepared ahead of its turn.
pub(super) struct Arrival {
    pub(super) conv: Conversation,
    pub(super) early: Option<Early>,
}

/// What the parse sends: a conversation, or the error that ends it.
pub(super) type Sent = Result<Arrival, String>;

/// Prepares a parsed conversation before it is sent, when it can.
pub(super) type Stage<'s> = &'s mut dyn FnMut(&Conversation) -> Option<Early>;

/// A conversation prepared by the thread that parsed it, ahead of its
/// turn ([`super::ahead`]), by a staging processor: its chunk files are
/// temp files until the commit loop finds that it is chunked as far as
/// was guessed and none of its chunks is known, and places them.
pub(super) struct Early {
    /// How far the conversation was taken to be chunked.
    pub(super) seen: u32,
    pub(super) done: Done,
    /// The vectors made with the chunks ([`crate::sink::made_ahead`]).
    pub(super) vectors: Option<Vec<Vec<f32>>>,
}

impl Early {
    /// The conversation as prepared, its files placed and its vectors
    /// handed to `sink`, when it was prepared as `p` would prepare it now
    /// (chunked to `seen`, no chunk known); `None` when it must be
    /// prepared again (its temp files are then taken out).
    fn take(self, seen: u32, p: &Processor<'_>, sink: &(dyn ChunkSink + '_)) -> Option<Done> {
        let Early {
            seen: guessed,
            done: (pairs, skipped, prepared),
            vectors,
        } = self;
        let mut prepared = prepared.ok().filter(|_| guessed == seen)?;
        if p.knows_any(prepared.written()) {
            return None;
        }
        if let Err(e) = prepared.place() {
            tracing::debug!("chunk files prepared ahead could not be placed: {e}");
            return None;
        }
        sink.made(prepared.written(), vectors);
        Some((pairs, skipped, Ok(prepared)))
    }

    /// [`Early::take`], counted on this thread for the tests: how many
    /// were placed, and how many prepared again.
    fn taken(self, seen: u32, p: &Processor<'_>, sink: &(dyn ChunkSink + '_)) -> Option<Done> {
        let done = self.take(seen, p, sink);
        #[cfg(test)]
        EARLY.with(|c| {
            let (placed, again) = c.get();
            c.set(match done {
                Some(_) => (placed + 1, again),
                None => (placed, again + 1),
            });
        });
        done
    }
}

#[cfg(test)]
thread_local! {
    /// Conversations prepared ahead that this thread's commit loop placed,
    /// and those it prepared again.
    pub(super) static EARLY: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// Parses `input` with the first of `candidates` that takes it, sending
/// each conversation (or the error that ends the parse) on `tx`; `early`
/// prepares a conversation before it is sent, when it can.
pub(super) fn parse_into<'a>(
    svc: &Services<'a>,
    candidates: &[&'a LoadedAdapter],
    input: &Input,
    live: Option<bool>,
    (tx, early): (&SyncSender<Sent>, Option<Stage<'_>>),
) -> Parsed<'a> {
    let mut early = early;
    let mut send = |conv: Conversation| {
        let early = early.as_mut().and_then(|f| f(&conv));
        tx.send(Ok(Arrival { conv, early })).is_ok()
    };
    let (mut stream, declined) = match svc.runtime.parse_first(candidates, input) {
        Ok(opened) => opened,
        Err(e) => {
            let _ = tx.send(Err(e.to_string()));
            return Parsed {
                hint: e.hint(),
                ..Parsed::default()
            };
        }
    };
    let mut hint = None;
    let mut waiting = 0;
    // Live: one conversation ahead, since a partial last line can only be
    // the last conversation's.
    let mut ahead: Option<Conversation> = None;
    let end = loop {
        match stream.next_conversation() {
            Ok(Some(conv)) => {
                let conv = match live {
                    None => conv,
                    Some(_) => match ahead.replace(conv) {
                        Some(mut prev) => {
                            waiting += u32::from(super::live::hold_back(&mut prev, false));
                            prev
                        }
                        None => continue,
                    },
                };
                if !send(conv) {
                    break None; // The processing side gave up.
                }
            }
            Ok(None) => break Some(Ok(())),
            Err(e) => {
                hint = e.hint();
                break Some(Err(e.to_string()));
            }
        }
    };
    if let (Some(partial), Some(mut last), Some(_)) = (live, ahead.take(), &end) {
        waiting += u32::from(super::live::hold_back(&mut last, partial));
        send(last);
    }
    if let Some(Err(e)) = end {
        let _ = tx.send(Err(e));
    }
    Parsed {
        adapter: Some(stream.adapter()),
        declined,
        adjustments: stream.adjustments().clone(),
        hint,
        waiting,
    }
}

/// One input's sink: the chunk ids its manifest record lists, the chunks
/// whose header waits for the header model, and the index.
struct FileSink<'a, 'i> {
    chunk_ids: Mutex<Vec<String>>,
    backfill: Mutex<crate::backfill::Queue>,
    /// The run's index sink (one for all inputs).
    index: Option<&'a IndexSink<'i>>,
}

impl ChunkSink for FileSink<'_, '_> {
    fn prepared(&self, written: &[Written]) {
        if let Some(index) = &self.index {
            index.prepared(written);
        }
    }

    fn made(&self, written: &[Written], vectors: Option<Vec<Vec<f32>>>) {
        if let Some(index) = &self.index {
            index.made(written, vectors);
        }
    }

    fn committed(&self, w: Written) {
        if w.header_pending {
            let mut queue = self.backfill.lock().unwrap_or_else(PoisonError::into_inner);
            queue.push(&w.chunk_id, &w.record.meta.path);
        }
        let mut ids = self
            .chunk_ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        ids.push(w.chunk_id.clone());
        drop(ids);
        if let Some(index) = &self.index {
            index.committed(w);
        }
    }
}

/// Parses `input` with the first of `candidates` that takes it and writes
/// its chunks; the chunk ids go on `record`, the index's outcome into the
/// summary, the chunks waiting for a header model into the backfill queue.
/// `ahead`: the input's parse, when it was started ahead of its turn.
pub(super) fn chunk_input<'a>(
    w: &mut Work<'_, '_, 'a>,
    candidates: &[&'a LoadedAdapter],
    input: &Input,
    item: &Item,
    record: &mut FileRecord,
    ahead: Option<super::ahead::Parse<'_, 'a>>,
) -> Staged<'a> {
    let svc = w.svc;
    let mut counts = (0usize, 0u32);
    let (result, parsed, sink) = std::thread::scope(|scope| {
        let (rx, parser) = match ahead {
            Some(p) => (p.conversations, Parser::Ahead(p.parser)),
            None => {
                let (tx, rx) = std::sync::mpsc::sync_channel::<Sent>(4);
                // Live: whether the input's last line is still being written.
                let live = w.opts.live.then(|| match &item.source {
                    chatmill_root::inventory::Source::File(path) => {
                        super::live::ends_mid_line(path)
                    }
                    _ => false,
                });
                let handle = std::thread::Builder::new()
                    .name("chatmill-parse".into())
                    .spawn_scoped(scope, move || {
                        parse_into(svc, candidates, input, live, (&tx, None))
                    })
                    .expect("a thread for the parser");
                (rx, Parser::Here(handle))
            }
        };
        let sink = FileSink {
            chunk_ids: Mutex::default(),
            backfill: Mutex::default(),
            index: w.index,
        };
        let file = (item.file_name.as_str(), item.mtime.into());
        let links = (w.assets, item);
        let result = prepare_and_commit(w, rx, &sink, (file, links), &mut counts);
        let FileSink {
            chunk_ids,
            backfill,
            ..
        } = sink;
        let parsed = parser.join();
        (result, parsed, (chunk_ids, backfill))
    });
    w.summary.pairs_waiting += parsed.waiting;
    let (ids, backfill) = sink;
    record
        .chunk_ids
        .extend(ids.into_inner().unwrap_or_else(PoisonError::into_inner));
    let backfill = backfill
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    if !backfill.is_empty() {
        w.summary.headers_pending += backfill.len() as u32;
        if let Err(e) = crate::backfill::Queue::load(&w.opts.root).and_then(|mut q| {
            for e in &backfill.entries {
                q.push(&e.chunk_id, &e.path);
            }
            q.save()
        }) {
            tracing::warn!("{e}");
        }
    }
    Staged {
        adapter: parsed.adapter.unwrap_or(candidates[0]),
        result,
        parsed,
        pairs: counts.0,
        skipped: counts.1,
    }
}

/// The thread parsing an input: started for it, or ahead of its turn.
enum Parser<'here, 'ahead, 'a> {
    Here(std::thread::ScopedJoinHandle<'here, Parsed<'a>>),
    Ahead(std::thread::ScopedJoinHandle<'ahead, Parsed<'a>>),
}

impl<'a> Parser<'_, '_, 'a> {
    fn join(self) -> Parsed<'a> {
        let joined = match self {
            Self::Here(h) => h.join(),
            Self::Ahead(h) => h.join(),
        };
        joined.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// A conversation prepared: its pairs, the items the adapter skipped in
/// it, and its chunks (written, not yet committed).
pub(super) type Done = (usize, u32, Result<Prepared, String>);

/// Prepares each conversation from `parsed` on the thread pool as it comes
/// and commits them here in input order into `sink`. How far a
/// conversation is already chunked is worked out as the conversations
/// before it leave it: a second copy in the same file continues where the
/// first ends, as it would in the next import. Attachments are linked to
/// the export's files (`links`) before a conversation is prepared. `counts`
/// gets the pairs parsed and the items skipped.
fn prepare_and_commit(
    w: &mut Work<'_, '_, '_>,
    parsed: Receiver<Sent>,
    sink: &(dyn ChunkSink + '_),
    (file, links): ((&str, DateTime<Utc>), (&Assets<'_>, &Item)),
    counts: &mut (usize, u32),
) -> Result<(), String> {
    let p: &Processor<'_> = w.processor;
    let mut chunked: HashMap<String, u32> = HashMap::new();
    rayon::in_place_scope(|scope| -> Result<(), String> {
        let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, Done)>();
        // By sequence number, what is ready to commit.
        let mut waiting: BTreeMap<usize, Done> = BTreeMap::new();
        let mut parsed = parsed.into_iter();
        let (mut sent, mut next, mut in_flight, mut parsed_all) = (0, 0, 0, false);
        loop {
            while !parsed_all && in_flight < IN_FLIGHT_PAIRS {
                let Some(arrival) = parsed.next() else {
                    parsed_all = true;
                    break;
                };
                let Arrival { mut conv, early } = arrival?;
                let seen = seen_before(&mut chunked, &conv, |key| {
                    w.manifest.conversations.get(key).map_or(0, |r| r.last_pair)
                });
                let seq = sent;
                sent += 1;
                // Prepared ahead or not, its pairs count until it is
                // committed: what bounds the memory of the file.
                in_flight += conv.pairs.len().max(1);
                if let Some(done) = early.and_then(|e| e.taken(seen, p, sink)) {
                    waiting.insert(seq, done);
                    continue;
                }
                let tx = done_tx.clone();
                scope.spawn(move |_| {
                    links.0.link(links.1, &mut conv);
                    // The receiver is gone only when this file failed.
                    let _ = tx.send((seq, prepare(p, sink, &conv, file, seen)));
                });
            }
            while let Some((n, skipped, prepared)) = waiting.remove(&next) {
                next += 1;
                in_flight -= n.max(1);
                counts.0 += n;
                counts.1 = counts.1.saturating_add(skipped);
                let book = (&mut *w.manifest, &mut *w.notes, w.opts.root.as_path());
                commit(p, book, w.summary, sink, prepared?);
            }
            if parsed_all && next == sent {
                return Ok(());
            }
            // Everything sent is committed: take more conversations.
            if next == sent {
                continue;
            }
            // The next to commit is being prepared on the pool.
            let (seq, done) = done_rx
                .recv()
                .expect("every conversation sent on is answered");
            waiting.insert(seq, done);
        }
    })
}

/// The last pair of `conv` already chunked: by the conversations before it
/// in this file (`chunked`), else as `recorded` says of its key; records
/// how far it will be chunked.
pub(super) fn seen_before(
    chunked: &mut HashMap<String, u32>,
    conv: &Conversation,
    recorded: impl FnOnce(&str) -> u32,
) -> u32 {
    let key = conversation_key(&conv.platform, &conv.id);
    let seen = chunked.get(&key).copied().unwrap_or_else(|| recorded(&key));
    chunked.insert(key, chunked_after(conv, seen));
    seen
}

/// One conversation prepared on a worker thread (or ahead, by the thread
/// that parsed it); whatever happens in it, it answers (the commit loop
/// waits for every conversation).
pub(super) fn prepare(
    p: &Processor<'_>,
    sink: &(dyn ChunkSink + '_),
    conv: &Conversation,
    (file_name, mtime): (&str, DateTime<Utc>),
    seen: u32,
) -> Done {
    let prepared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let prepared = p.prepare(conv, file_name, mtime, seen, None)?;
        sink.prepared(prepared.written());
        Ok::<_, crate::processor::ProcessError>(prepared)
    }));
    let prepared = match prepared {
        Ok(done) => done.map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "chunking conversation `{}` failed unexpectedly (a bug in chatmill: please report it)",
            conv.id
        )),
    };
    let skipped = conv
        .skipped
        .values()
        .fold(0u32, |n, &m| n.saturating_add(m));
    (conv.pairs.len(), skipped, prepared)
}

/// Records `prepared` in the manifest, writes the note of a conversation
/// seen for the first time, and hands its chunks to `sink`.
fn commit(
    p: &Processor<'_>,
    (manifest, notes, root): (&mut Manifest, &mut Notes, &Path),
    summary: &mut Summary,
    sink: &(dyn ChunkSink + '_),
    mut prepared: Prepared,
) {
    let note = prepared.take_note();
    notes.touched(prepared.key());
    let out = p.commit(prepared, manifest);
    if let Some(note) = note {
        notes.write_ready(root, manifest, note);
    }
    summary.chunks_written += out.written.len() as u32;
    summary.duplicates_skipped += out.duplicates;
    summary.mechanical_excluded += out.excluded;
    for w in out.written {
        sink.committed(w);
    }
}
