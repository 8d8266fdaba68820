//! An input parsed on a thread of its own: each conversation sent on as
//! the adapter delivers it (with its chunks when they were prepared by the
//! parsing thread), then what the parse leaves.

use std::sync::mpsc::SyncSender;

use chatmill_model::Conversation;
use chatmill_root::inventory::Item;
use chatmill_runtime::{Adjustments, Declined, Input, LoadedAdapter};

use super::options::Services;
use super::prepare::Early;
use crate::redaction::Redactions;

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
    /// The secrets replaced in it ([`crate::redaction`]).
    pub(super) redactions: Redactions,
}

/// What the parse sends: a conversation, or the error that ends it.
pub(super) type Sent = Result<Arrival, String>;

/// Prepares a parsed conversation before it is sent, when it can.
pub(super) type Stage<'s> = &'s mut dyn FnMut(&Conversation) -> Option<Early>;

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
    let mut send = |mut conv: Conversation| {
        let redactions = svc
            .redactor
            .map(|r| crate::redaction::conversation(r, &mut conv))
            .unwrap_or_default();
        let early = early.as_mut().and_then(|f| f(&conv));
        tx.send(Ok(Arrival {
            conv,
            early,
            redactions,
        }))
        .is_ok()
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

/// The input an adapter reads for `item` (`size` bytes, at `local`): it
/// sees the entry's own name (session ids, shard numbers come from it), and
/// messages name the input as the user knows it.
pub(super) fn file_input(item: &Item, size: u64, local: &std::path::Path) -> Input {
    let path = local.to_path_buf();
    Input::from_opener(
        item.file_name.clone(),
        item.key.clone(),
        Some(size),
        move || Ok(Box::new(fs_err::File::open(&path)?) as Box<dyn std::io::Read + Send>),
    )
}
