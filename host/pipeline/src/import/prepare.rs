//! One conversation prepared: chunked, given headers, its chunk files
//! written, on the pool or ahead of its turn by the thread that parsed it.

use std::collections::HashMap;

use chatmill_model::Conversation;
use chatmill_root::manifest::conversation_key;
use chrono::{DateTime, Utc};

use crate::processor::{Prepared, Processor, chunked_after};
use crate::sink::ChunkSink;

/// A conversation prepared: its pairs, the items the adapter skipped in
/// it, and its chunks (written, not yet committed).
pub(super) struct Done {
    pub(super) pairs: usize,
    pub(super) skipped: u32,
    pub(super) prepared: Result<Prepared, String>,
}

/// A conversation prepared by the thread that parsed it, ahead of its
/// turn ([`super::ahead`]), by a processor working ahead: its chunk files are
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
            done:
                Done {
                    pairs,
                    skipped,
                    prepared,
                },
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
        Some(Done {
            pairs,
            skipped,
            prepared: Ok(prepared),
        })
    }

    /// [`Early::take`], counted on this thread for the tests: how many
    /// were placed, and how many prepared again.
    pub(super) fn taken(
        self,
        seen: u32,
        p: &Processor<'_>,
        sink: &(dyn ChunkSink + '_),
    ) -> Option<Done> {
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
    Done {
        pairs: conv.pairs.len(),
        skipped,
        prepared,
    }
}
