//! Parsing ahead. While one input is chunked and committed, the new plain
//! files after it are sniffed and parsed, each in its own sandbox on a
//! thread of its own, into a short queue of conversations; the commit loop
//! takes each one when it reaches it, in input order, so chunk ids,
//! manifest and summary are what a one-at-a-time import makes. A folder of
//! many sessions is parsed and chunked on every core; a single export still
//! parses on one thread (beside its chunking on the pool, as before).
//!
//! The thread that parses an input ahead also prepares its conversations
//! (chunks, headers, vectors), so that for many small inputs the commit
//! loop only commits: without it each input's conversations were prepared
//! on the pool while the commit loop waited, one input at a time. It
//! cannot know yet how far the commit loop will find a conversation
//! chunked (an earlier input of the run may hold it too), so it guesses
//! from the manifest as the run found it, writes the chunk files as temp
//! files ([`Processor::ahead`]), and the commit loop places them only
//! when the guess holds and none of the chunks is known; otherwise it
//! prepares the conversation again, as it would have. A conversation with
//! attachments is left to the commit loop (linking copies files).
//!
//! Only what is certainly read is parsed ahead: a plain file the manifest
//! does not have, with no batch companion, outside a live or reprocessing
//! run. An ahead parse the commit loop does not use (another writer
//! recorded the file meanwhile) is dropped: its parser stops at its next
//! conversation, and the temp files of what it prepared are taken out.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::{Scope, ScopedJoinHandle};

use chatmill_index::Indexer;
use chatmill_model::{Conversation, Part};
use chatmill_root::inventory::{Item, Source};
use chatmill_root::manifest::Manifest;
use chatmill_runtime::{LoadedAdapter, SelectError};

use super::options::{ImportOptions, Services};
use super::parse::{Parsed, Sent, parse_into};
use super::prepare::{Early, prepare, seen_before};
use crate::processor::{Processor, Written};
use crate::sink::{ChunkSink, made_ahead};

/// Conversations of an input its parse prepares even when the commit loop
/// has taken it: for a few, the pool would be no sooner (the commit loop
/// waits on one or the other), and most sessions hold one or two.
const KEEP_PREPARING: usize = 4;

/// What the threads parsing ahead prepare conversations with, and how
/// many run at once.
pub(super) struct Shared<'a> {
    width: usize,
    /// Whether they prepare at all: not with a header model, whose answers
    /// for a guess that fails would be asked for twice.
    prepares: bool,
    processor: Processor<'a>,
    /// How far each conversation was chunked when the run began.
    recorded: HashMap<String, u32>,
    indexer: Option<&'a dyn Indexer>,
}

impl<'a> Shared<'a> {
    /// At most `width` inputs parsed ahead at once (none while the inputs
    /// may still grow, or a reprocess decides what is read).
    pub(super) fn new(
        svc: &Services<'a>,
        opts: &ImportOptions,
        manifest: &Manifest,
        width: usize,
    ) -> Self {
        let width = match opts.live || opts.reprocess.is_some() {
            true => 0,
            false => width,
        };
        let prepares = !svc.header.costly();
        let recorded = match width > 0 && prepares {
            true => manifest
                .conversations
                .iter()
                .map(|(k, c)| (k.clone(), c.last_pair))
                .collect(),
            false => HashMap::new(),
        };
        Self {
            width,
            prepares,
            processor: Processor::ahead(opts.processor.clone(), svc.header),
            recorded,
            indexer: svc.indexer,
        }
    }

    /// `conv` of `item` prepared ahead, when `wanted` and it has no
    /// attachments; `chunked` follows the input's conversations as the
    /// commit loop's own map does.
    fn early(
        &self,
        item: &Item,
        chunked: &mut HashMap<String, u32>,
        conv: &Conversation,
        wanted: bool,
    ) -> Option<Early> {
        let seen = seen_before(chunked, conv, |key| {
            self.recorded.get(key).copied().unwrap_or(0)
        });
        if !wanted || !self.prepares || has_attachments(conv) {
            return None;
        }
        let file = (item.file_name.as_str(), item.mtime.into());
        let done = prepare(&self.processor, &NoSink, conv, file, seen);
        // A panic making vectors leaves them to the index, as a failed
        // embedding on the pool would.
        let vectors = match (&done.prepared, self.indexer) {
            (Ok(prepared), Some(indexer)) => std::panic::catch_unwind(AssertUnwindSafe(|| {
                made_ahead(indexer, prepared.written())
            }))
            .ok()
            .flatten(),
            _ => None,
        };
        Some(Early {
            seen,
            done,
            vectors,
        })
    }
}

fn has_attachments(conv: &Conversation) -> bool {
    conv.pairs
        .iter()
        .flat_map(|p| p.user.iter().chain(&p.assistant))
        .any(|part| matches!(part, Part::Attachment { .. }))
}

/// Parses ahead at once, at most: one per core beyond the commit loop's.
pub(super) fn width() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores.saturating_sub(1).min(15)
}

/// The sink of a conversation prepared ahead: none until it is taken.
struct NoSink;

impl ChunkSink for NoSink {
    fn committed(&self, _written: Written) {}
}

/// The adapters sniffing chose, or why none was.
pub(super) type Selected<'a> = Result<Vec<&'a LoadedAdapter>, SelectError>;

/// One input parsed ahead.
pub(super) struct Parse<'scope, 'a> {
    /// The input's place in the run.
    at: usize,
    /// Set once the commit loop takes the parse: the conversations after
    /// the first [`KEEP_PREPARING`] are then prepared on the pool, beside
    /// each other, not on the parse's thread one after another (a large
    /// export parsed ahead).
    taken: Arc<AtomicBool>,
    selected: Receiver<Selected<'a>>,
    /// The conversations, as the parser makes them.
    pub(super) conversations: Receiver<Sent>,
    pub(super) parser: ScopedJoinHandle<'scope, Parsed<'a>>,
}

impl<'a> Parse<'_, 'a> {
    /// What sniffing chose (waiting for it); `None` if the thread died
    /// before it said.
    pub(super) fn selected(&self) -> Option<Selected<'a>> {
        self.selected.recv().ok()
    }
}

/// The parses running ahead of the commit loop, by input key.
pub(super) struct Ahead<'scope, 'a> {
    running: HashMap<String, Parse<'scope, 'a>>,
    shared: &'scope Shared<'a>,
    /// The next input not yet considered.
    next: usize,
}

impl<'scope, 'a> Ahead<'scope, 'a> {
    /// Up to `shared.width` parses at once.
    pub(super) fn new(shared: &'scope Shared<'a>) -> Self {
        Self {
            running: HashMap::new(),
            shared,
            next: 0,
        }
    }

    /// The parse of `key`, when one runs ahead.
    pub(super) fn take(&mut self, key: &str) -> Option<Parse<'scope, 'a>> {
        let parse = self.running.remove(key)?;
        parse.taken.store(true, Ordering::Relaxed);
        Some(parse)
    }

    /// Starts parses of the inputs after `at` that will be read, keeping
    /// at most `width` running; none while the inputs may still grow (live)
    /// or a reprocess decides what is read.
    pub(super) fn start(
        &mut self,
        scope: &'scope Scope<'scope, '_>,
        svc: &'scope Services<'a>,
        opts: &'scope ImportOptions,
        manifest: &Manifest,
        (items, at): (&'scope [Item], usize),
    ) {
        if self.shared.width == 0 {
            return;
        }
        self.next = self.next.max(at + 1);
        // A parse whose turn passed untaken (another writer recorded its
        // file meanwhile) is dropped: its thread stops at its next
        // conversation, and what it prepared is taken out.
        self.running.retain(|_, p| p.at >= at);
        // The input at `at` is taken from `running` only when its turn is
        // read: its parse holds no slot of those ahead of it.
        let current = usize::from(self.running.contains_key(&items[at].key));
        while self.running.len() - current < self.shared.width && self.next < items.len() {
            let item = &items[self.next];
            self.next += 1;
            if will_be_read(item, manifest) {
                let parse = spawn(scope, (svc, self.shared), opts, (item, self.next - 1));
                self.running.insert(item.key.clone(), parse);
            }
        }
    }
}

/// Whether `item` is certainly parsed when its turn comes: a plain file
/// the manifest does not have, alone, and not a known non-chat file.
fn will_be_read(item: &Item, manifest: &Manifest) -> bool {
    matches!(item.source, Source::File(_))
        && item.companion.is_none()
        && !manifest.files.contains_key(&item.key)
        && super::known_files::what_is(&item.file_name).is_none()
}

fn spawn<'scope, 'a>(
    scope: &'scope Scope<'scope, '_>,
    (svc, shared): (&'scope Services<'a>, &'scope Shared<'a>),
    opts: &'scope ImportOptions,
    (item, at): (&'scope Item, usize),
) -> Parse<'scope, 'a> {
    let taken = Arc::new(AtomicBool::new(false));
    let (selected_tx, selected) = sync_channel(1);
    let handed = Arc::clone(&taken);
    let (tx, conversations) = sync_channel(4);
    let parse = move || {
        let Source::File(path) = &item.source else {
            return Parsed::default();
        };
        let size = fs_err::metadata(path).map_or(0, |m| m.len());
        let input = super::parse::file_input(item, size, path);
        let chosen = svc
            .adapters
            .candidates(svc.runtime, &input, opts.adapter_id.as_deref());
        let candidates = chosen.as_ref().ok().cloned();
        let _ = selected_tx.send(chosen);
        match candidates {
            // An empty file is recorded as such without a parse.
            Some(candidates) if size > 0 => {
                let (mut chunked, mut sent) = (HashMap::new(), 0);
                let mut early = |conv: &Conversation| {
                    let taken = handed.load(Ordering::Relaxed);
                    sent += 1;
                    shared.early(item, &mut chunked, conv, !taken || sent <= KEEP_PREPARING)
                };
                parse_into(svc, &candidates, &input, None, (&tx, Some(&mut early)))
            }
            _ => Parsed::default(),
        }
    };
    let parser = std::thread::Builder::new()
        .name("chatmill-ahead".into())
        .spawn_scoped(scope, parse)
        .expect("a thread for the parser");
    Parse {
        at,
        taken,
        selected,
        conversations,
        parser,
    }
}
