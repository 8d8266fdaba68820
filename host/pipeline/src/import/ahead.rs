//! Parsing ahead. While one input is chunked and committed, the new plain
//! files after it are sniffed and parsed, each in its own sandbox on a
//! thread of its own, into a short queue of conversations; the commit loop
//! takes each one when it reaches it, in input order, so chunk ids,
//! manifest and summary are what a one-at-a-time import makes. A folder of
//! many sessions is parsed on every core; a single export still parses on
//! one thread (beside its chunking, as before).
//!
//! Only what is certainly read is parsed ahead: a plain file the manifest
//! does not have, with no batch companion, outside a live or reprocessing
//! run. An ahead parse the commit loop does not use (another writer
//! recorded the file meanwhile) is dropped: its parser stops at its next
//! conversation.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::{Scope, ScopedJoinHandle};

use chatmill_model::Conversation;
use chatmill_runtime::{LoadedAdapter, SelectError};

use super::stages::{Parsed, parse_into};
use super::{ImportOptions, Services};
use crate::inventory::{Item, Source};
use crate::manifest::Manifest;

/// The adapters sniffing chose, or why none was.
pub(super) type Selected<'a> = Result<Vec<&'a LoadedAdapter>, SelectError>;

/// One input parsed ahead.
pub(super) struct Parse<'scope, 'a> {
    selected: Receiver<Selected<'a>>,
    /// The conversations, as the parser makes them.
    pub(super) conversations: Receiver<Result<Conversation, String>>,
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
    /// Parses at once, at most.
    width: usize,
    /// The next input not yet considered.
    next: usize,
}

impl<'scope, 'a> Ahead<'scope, 'a> {
    /// Up to one parse per core beyond the commit loop's own.
    pub(super) fn new() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Self {
            running: HashMap::new(),
            width: cores.saturating_sub(1).min(15),
            next: 0,
        }
    }

    /// The parse of `key`, when one runs ahead.
    pub(super) fn take(&mut self, key: &str) -> Option<Parse<'scope, 'a>> {
        self.running.remove(key)
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
        if opts.live || opts.reprocess.is_some() || self.width == 0 {
            return;
        }
        self.next = self.next.max(at + 1);
        // The input at `at` is taken from `running` only when its turn is
        // read: its parse holds no slot of those ahead of it.
        let current = usize::from(self.running.contains_key(&items[at].key));
        while self.running.len() - current < self.width && self.next < items.len() {
            let item = &items[self.next];
            self.next += 1;
            if will_be_read(item, manifest) {
                let parse = spawn(scope, svc, opts, item);
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
        && crate::known_files::what_is(&item.file_name).is_none()
}

fn spawn<'scope, 'a>(
    scope: &'scope Scope<'scope, '_>,
    svc: &'scope Services<'a>,
    opts: &'scope ImportOptions,
    item: &'scope Item,
) -> Parse<'scope, 'a> {
    let (selected_tx, selected) = sync_channel(1);
    let (tx, conversations) = sync_channel(4);
    let parse = move || {
        let Source::File(path) = &item.source else {
            return Parsed::default();
        };
        let size = fs_err::metadata(path).map_or(0, |m| m.len());
        let input = super::select::file_input(item, size, path);
        let chosen = svc
            .adapters
            .candidates(svc.runtime, &input, opts.format.as_deref());
        let candidates = chosen.as_ref().ok().cloned();
        let _ = selected_tx.send(chosen);
        match candidates {
            // An empty file is recorded as such without a parse.
            Some(candidates) if size > 0 => parse_into(svc, &candidates, &input, None, &tx),
            _ => Parsed::default(),
        }
    };
    let parser = std::thread::Builder::new()
        .name("chatmill-ahead".into())
        .spawn_scoped(scope, parse)
        .expect("a thread for the parser");
    Parse {
        selected,
        conversations,
        parser,
    }
}
