//! A finished turn as a client sends it, checked, and the answer it gets.

use std::collections::BTreeMap;
use std::path::PathBuf;

use chatmill_model::{Conversation, Pair, Part};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::inline::InlineError;

/// One finished exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    pub session_id: String,
    /// 1-based, in order within the session.
    pub turn_index: u32,
    pub user: String,
    pub assistant: String,
    #[serde(default)]
    pub model: Option<String>,
    /// When the user spoke (default: now).
    #[serde(default)]
    pub timestamp: Option<DateTime<Utc>>,
    /// Default `user`.
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
}

/// What a turn became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ack {
    /// `None` when the exchange was mechanical ("thanks") and left out.
    pub chunk_id: Option<String>,
    /// The chunk file.
    pub path: Option<PathBuf>,
    pub indexed: bool,
    /// The turn was already recorded; nothing was written.
    pub duplicate: bool,
    /// Why no chunk was written, when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<String>,
    /// The header is a stand-in; the real one is queued.
    pub header_pending: bool,
}

pub(super) fn valid_session(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `t` with the secrets of its texts replaced ([`crate::redaction`]). The
/// session id is not: it is checked to be a plain name, and names files.
pub(super) fn redacted(r: &chatmill_redact::Redactor, t: &Turn) -> Turn {
    use crate::redaction::field;
    let mut t = t.clone();
    let c = &mut crate::redaction::Counts::new();
    field(r, &mut t.user, c);
    field(r, &mut t.assistant, c);
    for s in [&mut t.model, &mut t.agent_id, &mut t.title]
        .into_iter()
        .flatten()
    {
        field(r, s, c);
    }
    if !c.is_empty() {
        tracing::info!(
            "session `{}` turn {}: redacted {c:?}",
            t.session_id,
            t.turn_index
        );
    }
    t
}

/// Refuses a turn that cannot be recorded.
pub(super) fn check(t: &Turn) -> Result<(), InlineError> {
    if !valid_session(&t.session_id) {
        return Err(InlineError::Session(t.session_id.clone()));
    }
    if t.turn_index == 0 {
        return Err(InlineError::Turn("`turn_index` starts at 1".into()));
    }
    if t.user.trim().is_empty() && t.assistant.trim().is_empty() {
        return Err(InlineError::Turn(
            "`user` and `assistant` are both empty".into(),
        ));
    }
    Ok(())
}

/// The turn as a one-pair conversation: the same identity (`local`, the
/// session id) a batch import of its raw log gives.
pub(super) fn conversation_of(t: &Turn, time: DateTime<Utc>) -> Conversation {
    Conversation {
        id: t.session_id.clone(),
        title: t.title.clone(),
        created: None,
        updated: None,
        platform: "local".into(),
        model: None,
        metadata: BTreeMap::from([("session_id".to_string(), t.session_id.clone())]),
        pairs: vec![Pair {
            index: t.turn_index,
            timestamp: Some(time),
            model: t.model.clone(),
            user: vec![Part::Text {
                text: t.user.clone(),
            }],
            assistant: vec![Part::Text {
                text: t.assistant.clone(),
            }],
            metadata: BTreeMap::new(),
        }],
        skipped: BTreeMap::new(),
    }
}
