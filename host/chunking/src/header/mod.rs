//! Contextual headers and topic tags: 2–4 sentences written for the moment a
//! chunk is retrieved (what the exchange is about, what the user wanted,
//! the prior context it needs, platform and date) and 1–3 specific topics.
//!
//! [`HeaderWriter`] is the seam: the built-in [`ExtractiveWriter`] needs no
//! network and no model; an LLM writer for OpenAI-compatible endpoints plugs
//! in behind the same trait, and [`Deadline`] bounds how long one is waited
//! on. The built-in writer's parts: `text` (tokens, stopwords, the text that
//! carries words), `terms` (scores, topics), `extractive` (the sentences).

use chrono::{DateTime, Utc};

mod extractive;
mod terms;
#[cfg(test)]
mod tests;
mod text;

pub use extractive::{ExtractiveWriter, first_sentence, key_sentence};
pub use terms::{common_terms, topics};

/// What a header is written from. Everything comes from the same
/// conversation: context never bleeds between files.
#[derive(Debug, Clone, Default)]
pub struct HeaderInput<'a> {
    pub platform: &'a str,
    pub title: Option<&'a str>,
    pub date: Option<DateTime<Utc>>,
    /// Plain text of the chunk's user prompts.
    pub user: &'a str,
    /// The chunk's assistant text.
    pub assistant: &'a str,
    /// `"3"` or `"3-4"`, and how many pairs the conversation has.
    pub turn_range: &'a str,
    pub total_pairs: u32,
    /// The preceding chunk of the same conversation, if any.
    pub previous: Option<&'a Previous>,
    /// Words most requests of the conversation share (the instruction every
    /// call of a batch repeats): they name no exchange, so no topic uses
    /// them. Empty for a dialogue.
    pub common: &'a [String],
    /// The conversation is separate calls (`pairs: independent`: a batch,
    /// a call log), not one dialogue.
    pub independent: bool,
}

/// What a header may say about the preceding exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    pub topics: Vec<String>,
    pub request: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub context: String,
    pub topics: Vec<String>,
    /// A stand-in (the model missed its deadline or failed): the chunk is
    /// written with it and queued for the real header later.
    pub backfill: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("header model did not answer in time")]
    Timeout,
    #[error("header model failed: {0}")]
    Failed(String),
}

pub trait HeaderWriter: Send + Sync {
    fn write(&self, input: &HeaderInput<'_>) -> Result<Header, HeaderError>;

    /// Whether a header costs a model's time or money (an LLM), so that
    /// work that may be thrown away is not asked of the writer.
    fn costly(&self) -> bool {
        false
    }
}

/// A header writer with a deadline: asks `inner` (an LLM writer, say) and
/// waits at most `deadline`; past it, or when `inner` fails, the chunk gets
/// the built-in extractive header marked for backfill. The slow call is
/// left to finish on its own thread (its own timeout bounds it).
pub struct Deadline {
    pub inner: std::sync::Arc<dyn HeaderWriter>,
    pub deadline: std::time::Duration,
}

/// What [`Deadline`] needs to hand the inner writer a request it owns.
#[derive(Debug, Clone)]
struct OwnedInput {
    platform: String,
    title: Option<String>,
    date: Option<DateTime<Utc>>,
    user: String,
    assistant: String,
    turn_range: String,
    total_pairs: u32,
    previous: Option<Previous>,
    common: Vec<String>,
    independent: bool,
}

impl HeaderWriter for Deadline {
    fn costly(&self) -> bool {
        true
    }

    fn write(&self, input: &HeaderInput<'_>) -> Result<Header, HeaderError> {
        let owned = OwnedInput {
            platform: input.platform.to_string(),
            title: input.title.map(str::to_string),
            date: input.date,
            user: input.user.to_string(),
            assistant: input.assistant.to_string(),
            turn_range: input.turn_range.to_string(),
            total_pairs: input.total_pairs,
            previous: input.previous.cloned(),
            common: input.common.to_vec(),
            independent: input.independent,
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let inner = std::sync::Arc::clone(&self.inner);
        std::thread::spawn(move || {
            let o = owned;
            let result = inner.write(&HeaderInput {
                platform: &o.platform,
                title: o.title.as_deref(),
                date: o.date,
                user: &o.user,
                assistant: &o.assistant,
                turn_range: &o.turn_range,
                total_pairs: o.total_pairs,
                previous: o.previous.as_ref(),
                common: &o.common,
                independent: o.independent,
            });
            let _ = tx.send(result);
        });
        match rx.recv_timeout(self.deadline) {
            Ok(Ok(h)) if !h.backfill => Ok(h),
            _ => {
                let mut h = ExtractiveWriter.write(input)?;
                h.backfill = true;
                Ok(h)
            }
        }
    }
}
