//! The crate's one error type: every failure names what it was about (the
//! key file's path, the rule's id), so a caller can print it as it is.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The key file could not be read, created or written.
    #[error("redaction key `{path}`: {source}")]
    KeyIo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The key file exists but does not hold 64 hex digits.
    #[error(
        "redaction key `{path}`: expected 64 hex digits (a 32-byte key) and one optional newline, found {found}"
    )]
    KeyFormat { path: PathBuf, found: String },
    /// The system's random source failed while making a new key.
    #[error("redaction key `{path}`: no random bytes from the system: {message}")]
    KeyRandom { path: PathBuf, message: String },
    /// A rule's pattern (built in or from `Config::extra`) does not compile,
    /// or lacks the `secret` capture group.
    #[error("redaction rule `{id}`: {message}")]
    Rule { id: String, message: String },
    /// An allow-list pattern of `Config::allow` does not compile.
    #[error("redaction allow-list pattern #{index} `{pattern}`: {message}")]
    Allow {
        index: usize,
        pattern: String,
        message: String,
    },
    /// The keywords of all rules could not be compiled into the prefilter.
    #[error("redaction keyword prefilter: {0}")]
    Prefilter(String),
}
