//! The run's trouble with the index: chunks a sink could not index, added
//! up over the run and said as one problem of the summary.

use super::summary::{FileProblem, Summary};
use crate::sink::Indexed;

/// A failed index call: how many chunks it left out, and why.
pub type IndexFailure = Option<(u32, chatmill_index::IndexError)>;

/// Adds what an index sink did to the summary and the run's index failure.
pub fn merge_indexed(summary: &mut Summary, failure: &mut IndexFailure, done: Indexed) {
    summary.chunks_indexed += done.chunks;
    if let Some((n, e)) = done.failure {
        let before = failure.as_ref().map_or(0, |f| f.0);
        *failure = Some((before + n, e));
    }
}

/// The run's problem with the index: `n` new chunks left out, or (0) the
/// index could not be brought up to date.
pub fn index_problem(n: u32, e: &chatmill_index::IndexError) -> FileProblem {
    let what = if n > 0 {
        format!("{n} new chunks could not be indexed: {e}")
    } else {
        format!("the index could not be brought up to date: {e}")
    };
    FileProblem {
        file: "(index)".into(),
        reason: what,
        hint: Some(e.hint().unwrap_or_else(|| {
            "the chunk files are written; run `chatmill import` again (it indexes what the index is missing) or `chatmill reindex`".into()
        })),
        retryable: true,
    }
}
