//! One input read and chunked. The adapter parses on a thread of its
//! own; each conversation is prepared (chunked, given headers, its chunk
//! files written) on the thread pool as soon as it is parsed; and the
//! prepared conversations are committed here in input order, each
//! committed chunk handed to the file's [`ChunkSink`]. Output never depends
//! on timing, and a bounded channel and [`IN_FLIGHT_PAIRS`] keep memory to
//! a few conversations.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::sync::{Mutex, PoisonError};

use chatmill_root::assets::Assets;
use chatmill_root::inventory::Item;
use chatmill_root::manifest::{FileRecord, Manifest};
use chatmill_root::notes::Notes;
use chatmill_runtime::{Input, LoadedAdapter};
use chrono::{DateTime, Utc};

use super::summary::Summary;
use super::work::Work;
use crate::import::parse::{Arrival, Parsed, Sent, parse_into};
use crate::import::prepare::{Done, prepare, seen_before};
use crate::processor::{Prepared, Processor, Written};
use crate::sink::{ChunkSink, IndexSink};

/// Pairs being prepared at once, at most (and one conversation, however
/// long): what bounds the memory of a file's parsed conversations.
const IN_FLIGHT_PAIRS: usize = 512;

/// What reading and chunking one input did.
pub(super) struct Chunked<'a> {
    /// The adapter that read it (the first candidate, when none did).
    pub adapter: &'a LoadedAdapter,
    pub result: Result<(), String>,
    pub parsed: Parsed<'a>,
    /// Pairs parsed, and the items the adapter skipped.
    pub pairs: usize,
    pub skipped: u32,
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
) -> Chunked<'a> {
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
    Chunked {
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
                let Arrival {
                    mut conv,
                    early,
                    redactions,
                } = arrival?;
                let seen = seen_before(&mut chunked, &conv, |key| {
                    w.manifest.conversations.get(key).map_or(0, |r| r.last_pair)
                });
                crate::redaction::add(&mut w.summary.redactions, &redactions.since(seen));
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
            while let Some(Done {
                pairs: n,
                skipped,
                prepared,
            }) = waiting.remove(&next)
            {
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
