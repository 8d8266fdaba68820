//! Why a turn was not taken, told apart as the client's fault or the
//! server's.

use std::path::PathBuf;
use std::sync::Arc;

use chatmill_root::lock::LockError;
use chatmill_root::manifest::ManifestError;

use crate::processor::ProcessError;

#[derive(Debug, thiserror::Error)]
pub enum InlineError {
    #[error(
        "invalid session id `{0}`: use 1–128 letters, digits, `.`, `_` or `-`, not starting with `.`"
    )]
    Session(String),
    #[error("invalid turn: {0}")]
    Turn(String),
    #[error("cannot append to the raw log `{path}`: {source}")]
    RawLog {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Backfill(#[from] crate::backfill::BackfillError),
    /// One failure shared by the turns of a batch.
    #[error(transparent)]
    Batch(Arc<InlineError>),
}

impl InlineError {
    /// Whether the caller sent something wrong (as opposed to a server-side
    /// failure).
    pub fn is_client_error(&self) -> bool {
        match self {
            Self::Batch(e) => e.is_client_error(),
            e => matches!(e, Self::Session(_) | Self::Turn(_)),
        }
    }

    /// Whether another writer (an import) held the root too long: the
    /// turn may be sent again.
    pub fn is_busy(&self) -> bool {
        match self {
            Self::Batch(e) => e.is_busy(),
            e => matches!(e, Self::Lock(_)),
        }
    }
}
