//! Where each turn of a batch stands as the batch goes through its steps,
//! and the answers they end in.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::inline::{Ack, InlineError};
use crate::processor::Written;

/// Where one turn of a batch stands.
pub(super) enum Step {
    /// Answered: refused, a resend, or failed.
    Done(Result<Ack, InlineError>),
    /// Valid; waiting for the lock.
    Checked,
    /// In its raw log, durable; the time it is chunked with.
    Logged(DateTime<Utc>),
    /// Committed to the manifest in memory, with no chunk.
    Nothing(Ack),
    /// Committed with this chunk; whether the index took it.
    Chunk {
        written: Box<Written>,
        indexed: bool,
    },
}

/// Every turn whose step `which` matches fails with `e` (one failure of
/// the batch: the lock, the manifest).
pub(super) fn fail_all(steps: &mut [Step], e: InlineError, which: impl Fn(&Step) -> bool) {
    let mut hit: Vec<&mut Step> = steps.iter_mut().filter(|s| which(s)).collect();
    if let [one] = hit.as_mut_slice() {
        **one = Step::Done(Err(e));
        return;
    }
    let e = Arc::new(e);
    for step in hit {
        *step = Step::Done(Err(InlineError::Batch(Arc::clone(&e))));
    }
}

/// Each turn's answer, in order.
pub(super) fn answers(steps: Vec<Step>) -> Vec<Result<Ack, InlineError>> {
    // For a resend of a turn chunked earlier in the same batch.
    let indexed: HashMap<String, bool> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Chunk { written, indexed } => Some((written.chunk_id.clone(), *indexed)),
            _ => None,
        })
        .collect();
    steps
        .into_iter()
        .map(|step| match step {
            Step::Done(Ok(mut ack)) => {
                if let Some(&took) = ack.chunk_id.as_ref().and_then(|id| indexed.get(id)) {
                    ack.indexed = took;
                }
                Ok(ack)
            }
            Step::Done(answer) => answer,
            Step::Nothing(ack) => Ok(ack),
            Step::Chunk {
                written: w,
                indexed,
            } => Ok(Ack {
                header_pending: w.header_pending,
                chunk_id: Some(w.chunk_id),
                path: Some(w.path),
                indexed,
                duplicate: false,
                excluded: None,
            }),
            Step::Checked | Step::Logged(_) => {
                unreachable!("each step of `turns` moves every turn it takes on")
            }
        })
        .collect()
}
