//! Errors from loading and running adapters. Each names the adapter, its
//! version, the input, and what to do about it ([`AdapterError::hint`]).

use std::path::PathBuf;

use crate::boundary::Rule;
use crate::limits::{Limit, Limits};
use crate::model::ParseError;
use crate::toolchain::Toolchain;

/// Who an error is about: adapter id and version, or the file it came from
/// when it never got far enough to say.
pub type AdapterLabel = String;

#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    #[error("`{path}` is not a WebAssembly component: {reason}")]
    NotAComponent { path: PathBuf, reason: String },

    #[error(
        "`{path}` is a WebAssembly component but not a chatmill adapter: it exports no `chatmill:adapter/parser` interface"
    )]
    NotAnAdapter { path: PathBuf },

    #[error(
        "adapter `{path}` was built for adapter API {found}; this chatmill supports API {supported}"
    )]
    IncompatibleApi {
        path: PathBuf,
        found: String,
        supported: String,
        toolchain: Toolchain,
    },

    #[error("adapter `{path}` cannot be linked: {reason}")]
    Link { path: PathBuf, reason: String },

    #[error("adapter `{path}` could not be compiled: {reason}")]
    Compile { path: PathBuf, reason: String },

    #[error(
        "adapter `{path}` describes itself with an invalid {field} `{}`",
        value.escape_debug()
    )]
    InvalidInfo {
        path: PathBuf,
        field: &'static str,
        value: String,
    },

    #[error("adapter {adapter} hit its {} while reading `{input}`", limit.describe(limits))]
    Limit {
        adapter: AdapterLabel,
        input: String,
        limit: Limit,
        limits: Box<Limits>,
        stderr_tail: String,
    },

    #[error("adapter {adapter} panicked while reading `{input}`: {message}")]
    Panic {
        adapter: AdapterLabel,
        input: String,
        message: String,
        stderr_tail: String,
    },

    #[error("adapter {adapter} raised an exception while reading `{input}`: {message}")]
    Exception {
        adapter: AdapterLabel,
        input: String,
        /// The exception and the author's frame it came through.
        message: String,
        stderr_tail: String,
    },

    #[error("adapter {adapter} crashed while reading `{input}`: {reason}")]
    Trap {
        adapter: AdapterLabel,
        input: String,
        reason: String,
        stderr_tail: String,
    },

    #[error("adapter {adapter} could not parse `{input}`: {error}")]
    Parse {
        adapter: AdapterLabel,
        input: String,
        error: Box<ParseError>,
    },

    #[error(
        "adapter {adapter} broke the adapter protocol on `{input}`: {violation} (rule `{}`: {})",
        rule.name(),
        rule.text()
    )]
    Protocol {
        adapter: AdapterLabel,
        input: String,
        rule: Rule,
        violation: String,
    },

    #[error("cannot read `{input}`: {source}")]
    Input {
        input: String,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot set up the adapter runtime: {reason}")]
    Engine { reason: String },
}

impl AdapterError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::NotAComponent { .. } => "an adapter must be a component built for `wasm32-wasip2` \
                 (`cargo build --target wasm32-wasip2 --release`); a core module from `wasm32-unknown-unknown` \
                 or `wasm32-wasip1` is not enough"
                .into(),
            Self::NotAnAdapter { .. } => "build it against chatmill's `wit/adapter.wit` (world `adapter`), \
                 e.g. with the `chatmill-adapter-sdk` crate's `export_adapter!`"
                .into(),
            Self::IncompatibleApi {
                supported,
                toolchain,
                ..
            } => format!(
                "{}, or use a chatmill release that supports its API (see wit/VERSIONING.md)",
                toolchain.rebuild_hint(supported)
            ),
            Self::Link { .. } => "the adapter imports something chatmill does not provide; adapters may \
                 import only WASI 0.2 and the `chatmill:adapter` interfaces"
                .into(),
            Self::Compile { .. } => "the file may be corrupt; rebuild the adapter".into(),
            Self::InvalidInfo { .. } => "adapter and format ids are lowercase ASCII letters, digits and `-`; \
                 names, descriptions and file patterns are one line of visible text; versions are \
                 semantic versions like `1.2.0` (see the rules in `wit/adapter.wit`)"
                .into(),
            Self::Limit { limit, .. } => {
                let (key, flag) = limit.knob();
                format!("if the input is legitimate, raise the limit with `{flag}` or `{key}` in the config file")
            }
            Self::Panic { .. } | Self::Exception { .. } | Self::Trap { .. } | Self::Protocol { .. } => {
                "this is a bug in the adapter; report it with the input that triggers it, or force another \
                 adapter with `--adapter-id ID`"
                    .into()
            }
            Self::Parse { error, .. } => match error.kind {
                crate::model::ParseErrorKind::NotThisFormat => {
                    "pick the right adapter with `--adapter-id ID` (`chatmill adapters list` shows them)".into()
                }
                crate::model::ParseErrorKind::UnsupportedVersion => {
                    "a newer version of this adapter may support it (`chatmill adapters list`)".into()
                }
                _ => "check that the file is complete (a re-download of the export often helps)".into(),
            },
            Self::Input { .. } => "check that the file exists and is readable".into(),
            Self::Engine { .. } => return None,
        })
    }

    /// Whether the adapter said the input is not its format.
    pub fn is_not_this_format(&self) -> bool {
        matches!(self, Self::Parse { error, .. } if error.kind == crate::model::ParseErrorKind::NotThisFormat)
    }

    /// The adapter's captured stderr, when there is any.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            Self::Limit { stderr_tail, .. }
            | Self::Panic { stderr_tail, .. }
            | Self::Exception { stderr_tail, .. }
            | Self::Trap { stderr_tail, .. } => {
                (!stderr_tail.trim().is_empty()).then_some(stderr_tail.as_str())
            }
            _ => None,
        }
    }

    /// Whether retrying the same input with the same adapter may succeed
    /// (only time limits can depend on machine load).
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            Self::Limit {
                limit: Limit::CallTimeout | Limit::FileTimeout,
                ..
            } | Self::Input { .. }
        )
    }
}

/// Choosing an adapter for an input failed.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error("no adapter recognizes `{input}`{}", best_list(best))]
    Unrecognized {
        input: String,
        best: Vec<(String, u8)>,
    },

    #[error("several adapters claim `{input}` equally: {}", candidates.iter().map(|(id, s)| format!("`{id}` ({s})")).collect::<Vec<_>>().join(", "))]
    Ambiguous {
        input: String,
        candidates: Vec<(String, u8)>,
    },

    #[error("no adapter has the id `{id}`")]
    UnknownFormat { id: String, available: Vec<String> },

    #[error(transparent)]
    Adapter(#[from] AdapterError),
}

fn best_list(best: &[(String, u8)]) -> String {
    if best.is_empty() {
        return String::new();
    }
    let list: Vec<_> = best
        .iter()
        .map(|(id, s)| format!("`{id}` {s}/100"))
        .collect();
    format!(" (best sniff scores: {})", list.join(", "))
}

impl SelectError {
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::Unrecognized { .. } => Some(
                "if it is a chat export, force an adapter with `--adapter-id ID`, or add one for its format \
                 with `chatmill adapters add`"
                    .into(),
            ),
            Self::Ambiguous { candidates, .. } => Some(format!(
                "choose one with `--adapter-id {}`",
                candidates.first().map_or("ID", |(id, _)| id.as_str())
            )),
            Self::UnknownFormat { available, .. } => {
                Some(format!("available adapters: {}", available.join(", ")))
            }
            Self::Adapter(e) => e.hint(),
        }
    }
}
