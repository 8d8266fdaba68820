//! What a failed command tells the user, decided in one place: each library
//! error has one `From` that picks its kind (and so the exit code) and its
//! hints. The exit-code rule, for every command:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | the work was done (inputs skipped on purpose are listed with their reason) |
//! | 1 | partly done or not done for a reason outside usage: an input failed, the root stayed locked, the index was unavailable, `verify` found a problem |
//! | 2 | usage or configuration error; nothing was done |
//!
//! A reader that closes standard output early (`| head`) is not an error:
//! the command stops quietly with 0 ([`Kind::ReaderGone`]).

use std::process::ExitCode;

use chatmill_pipeline::backfill::BackfillError;
use chatmill_pipeline::import::ImportError;
use chatmill_root::manifest::ManifestError;
use chatmill_runtime::{AdapterError, SelectError};

/// Bad arguments or configuration (exit 2), or a command that ran and
/// failed (exit 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Usage,
    Failed,
    /// Standard output's reader went away: stop, say nothing, exit 0.
    ReaderGone,
}

/// A failed command: the error, what the user can do, and what the adapter
/// said (its captured stderr), when it was an adapter.
#[derive(Debug)]
pub struct CliError {
    pub kind: Kind,
    pub error: anyhow::Error,
    pub hints: Vec<String>,
    pub detail: Option<String>,
}

impl CliError {
    fn new(kind: Kind, error: impl Into<anyhow::Error>) -> Self {
        Self {
            kind,
            error: error.into(),
            hints: Vec::new(),
            detail: None,
        }
    }

    /// Bad arguments or configuration: exit 2.
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self::new(Kind::Usage, error)
    }

    /// The command ran and failed: exit 1.
    pub fn failed(error: impl Into<anyhow::Error>) -> Self {
        Self::new(Kind::Failed, error)
    }

    /// One more thing the user can do.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// [`CliError::hint`], when there is one.
    pub fn hint_opt(self, hint: Option<impl Into<String>>) -> Self {
        match hint {
            Some(h) => self.hint(h),
            None => self,
        }
    }

    /// Standard output's reader closed its end (a broken pipe).
    pub fn reader_gone() -> Self {
        Self::new(
            Kind::ReaderGone,
            anyhow::anyhow!("standard output was closed"),
        )
    }

    pub fn exit_code(&self) -> ExitCode {
        match self.kind {
            Kind::Usage => ExitCode::from(2),
            Kind::Failed => ExitCode::from(1),
            Kind::ReaderGone => ExitCode::SUCCESS,
        }
    }
}

impl From<AdapterError> for CliError {
    fn from(e: AdapterError) -> Self {
        // An adapter file the user named that cannot be an adapter is a
        // usage error; everything that happens while one runs is a failure.
        let kind = match &e {
            AdapterError::NotAComponent { .. }
            | AdapterError::NotAnAdapter { .. }
            | AdapterError::IncompatibleApi { .. }
            | AdapterError::Link { .. }
            | AdapterError::InvalidInfo { .. } => Kind::Usage,
            AdapterError::Compile { .. }
            | AdapterError::Limit { .. }
            | AdapterError::Panic { .. }
            | AdapterError::Exception { .. }
            | AdapterError::Trap { .. }
            | AdapterError::Parse { .. }
            | AdapterError::Protocol { .. }
            | AdapterError::Input { .. }
            | AdapterError::Engine { .. } => Kind::Failed,
        };
        let hint = e.hint();
        let detail = e.stderr_tail().map(str::to_string);
        let mut out = Self::new(kind, e).hint_opt(hint);
        out.detail = detail;
        out
    }
}

impl From<SelectError> for CliError {
    fn from(e: SelectError) -> Self {
        let hint = e.hint();
        match e {
            SelectError::Adapter(a) => a.into(),
            e @ SelectError::UnknownFormat { .. } => Self::usage(e).hint_opt(hint),
            e @ (SelectError::Unrecognized { .. } | SelectError::Ambiguous { .. }) => {
                Self::failed(e).hint_opt(hint)
            }
        }
    }
}

impl From<ImportError> for CliError {
    fn from(e: ImportError) -> Self {
        match e {
            ImportError::Manifest(m) => m.into(),
            ImportError::Lock(_) => Self::failed(e).hint(
                "another chatmill (an import or `serve`) is writing to this root; run again when it is done",
            ),
            ImportError::Inventory { .. } => {
                Self::failed(e).hint("check that the inputs exist and are readable")
            }
            ImportError::Root { .. } => {
                Self::failed(e).hint("check `--root` (or CHATMILL_ROOT): its parent must be writable")
            }
        }
    }
}

impl From<ManifestError> for CliError {
    fn from(e: ManifestError) -> Self {
        let hint = e.hint();
        Self::failed(e).hint_opt(hint)
    }
}

impl From<chatmill_report::ReportError> for CliError {
    fn from(e: chatmill_report::ReportError) -> Self {
        use chatmill_report::ReportError as R;
        let hint = match &e {
            R::Manifest(m) => m.hint().map(str::to_string),
            R::List { .. } => Some(
                "pass the root chatmill imported into (`chatmill report ROOT` or `--root`)".into(),
            ),
            R::Write { .. } => {
                Some("check the folder of `--html FILE` exists and is writable".into())
            }
        };
        Self::failed(e).hint_opt(hint)
    }
}

impl From<chatmill_index::IndexError> for CliError {
    fn from(e: chatmill_index::IndexError) -> Self {
        let hint = e.hint();
        Self::failed(e).hint_opt(hint)
    }
}

impl From<chatmill_pipeline::inline::InlineError> for CliError {
    fn from(e: chatmill_pipeline::inline::InlineError) -> Self {
        let kind = if e.is_client_error() {
            Kind::Usage
        } else {
            Kind::Failed
        };
        Self::new(kind, e)
    }
}

impl From<chatmill_mcp::McpError> for CliError {
    fn from(e: chatmill_mcp::McpError) -> Self {
        let kind = if e.is_usage() {
            Kind::Usage
        } else {
            Kind::Failed
        };
        let hint = e.hint();
        Self::new(kind, e).hint_opt(hint)
    }
}

impl From<chatmill_server::ServerError> for CliError {
    fn from(e: chatmill_server::ServerError) -> Self {
        use chatmill_server::ServerError;
        let kind = match &e {
            ServerError::NotLoopback(_) | ServerError::NoToken => Kind::Usage,
            ServerError::AlreadyRunning(_)
            | ServerError::Listen { .. }
            | ServerError::Inline(_) => Kind::Failed,
        };
        let hint = e.hint();
        Self::new(kind, e).hint_opt(hint)
    }
}

impl From<chatmill_server::client::ClientError> for CliError {
    fn from(e: chatmill_server::client::ClientError) -> Self {
        let hint = e.hint();
        Self::failed(e).hint_opt(hint)
    }
}

impl From<BackfillError> for CliError {
    fn from(e: BackfillError) -> Self {
        Self::failed(e)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        Self::failed(e)
    }
}

impl From<serde_json::Error> for CliError {
    fn from(e: serde_json::Error) -> Self {
        Self::failed(e)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;

    fn kind(e: impl Into<CliError>) -> Kind {
        e.into().kind
    }

    #[test]
    fn a_bad_adapter_file_is_usage_and_a_run_that_breaks_is_a_failure() {
        let path = PathBuf::from("x.wasm");
        let not_a_component = AdapterError::NotAComponent {
            path: path.clone(),
            reason: "r".into(),
        };
        assert_eq!(kind(not_a_component), Kind::Usage);
        let compile = AdapterError::Compile {
            path,
            reason: "r".into(),
        };
        assert_eq!(kind(compile), Kind::Failed);
        let engine = AdapterError::Engine { reason: "r".into() };
        assert_eq!(kind(engine), Kind::Failed);
    }

    #[test]
    fn a_locked_root_is_a_failure_with_a_retry_hint_not_a_usage_error() {
        let lock = chatmill_root::lock::LockError::Busy(Duration::from_secs(600));
        let e = CliError::from(ImportError::Lock(lock));
        assert_eq!(e.kind, Kind::Failed);
        assert!(e.hints[0].contains("run again"), "{:?}", e.hints);
    }

    #[test]
    fn an_unknown_adapter_id_is_usage() {
        let e = SelectError::UnknownFormat {
            id: "nope".into(),
            available: vec!["chatgpt".into()],
        };
        let e = CliError::from(e);
        assert_eq!(e.kind, Kind::Usage);
        assert_eq!(e.hints, ["available adapters: chatgpt"]);
    }

    #[test]
    fn hints_follow_a_blank_line_one_per_line() {
        let e = CliError::usage(anyhow::anyhow!("bad"))
            .hint("one")
            .hint("two");
        let text = crate::render::format_error(&e.error, &e.hints, None);
        assert_eq!(text, "error: bad\n\nhint: one\nhint: two");
        let bare = crate::render::format_error(&anyhow::anyhow!("bad"), &[], None);
        assert_eq!(bare, "error: bad");
    }
}
