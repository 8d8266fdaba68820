//! How the CLI talks to people: `error:` / `hint:` messages and logging.

#![allow(clippy::print_stderr, reason = "this module is the CLI's stderr")]

use std::process::ExitCode;

use chatmill_runtime::model::visible::visible_keeping;
use chatmill_runtime::{AdapterError, SelectError};
use tracing_subscriber::EnvFilter;

/// What went wrong at the CLI edge, with its exit code.
#[derive(Debug)]
pub struct CliError {
    pub kind: Kind,
    pub error: anyhow::Error,
    pub hint: Option<String>,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad arguments or configuration: exit 2.
    Usage,
    /// The command ran but failed: exit 1.
    Failed,
}

impl CliError {
    pub fn usage(error: impl Into<anyhow::Error>, hint: Option<String>) -> Self {
        Self {
            kind: Kind::Usage,
            error: error.into(),
            hint,
            detail: None,
        }
    }

    pub fn failed(error: impl Into<anyhow::Error>, hint: Option<String>) -> Self {
        Self {
            kind: Kind::Failed,
            error: error.into(),
            hint,
            detail: None,
        }
    }

    pub fn exit_code(&self) -> ExitCode {
        match self.kind {
            Kind::Usage => ExitCode::from(2),
            Kind::Failed => ExitCode::from(1),
        }
    }
}

impl From<AdapterError> for CliError {
    fn from(e: AdapterError) -> Self {
        let hint = e.hint();
        let detail = e.stderr_tail().map(str::to_string);
        let kind = match e {
            AdapterError::Input { .. }
            | AdapterError::Parse { .. }
            | AdapterError::Limit { .. }
            | AdapterError::Panic { .. }
            | AdapterError::Trap { .. }
            | AdapterError::Protocol { .. } => Kind::Failed,
            _ => Kind::Usage,
        };
        Self {
            kind,
            error: e.into(),
            hint,
            detail,
        }
    }
}

impl From<SelectError> for CliError {
    fn from(e: SelectError) -> Self {
        match e {
            SelectError::Adapter(a) => a.into(),
            SelectError::UnknownFormat { .. } => {
                let hint = e.hint();
                Self::usage(e, hint)
            }
            other => {
                let hint = other.hint();
                Self::failed(other, hint)
            }
        }
    }
}

/// Renders an error the way every chatmill message looks.
pub fn error(e: &CliError) {
    let text = format_error(&e.error, e.hint.as_deref(), e.detail.as_deref());
    eprintln!("{}", for_terminal(&text));
}

/// `text` with controls and bidi overrides made visible, line breaks kept
/// (every message may quote what an adapter or a chat said).
pub fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    visible_keeping(text, &['\n'])
}

pub fn format_error(error: &anyhow::Error, hint: Option<&str>, detail: Option<&str>) -> String {
    let mut out = format!("error: {error}");
    for cause in error.chain().skip(1) {
        out.push_str(&format!("\n  caused by: {cause}"));
    }
    if let Some(d) = detail {
        out.push_str("\n  adapter output:");
        for line in d.trim_end().lines().take(20) {
            out.push_str(&format!("\n    {line}"));
        }
    }
    if let Some(h) = hint {
        out.push_str(&format!("\nhint: {h}"));
    }
    out
}

pub fn warning(message: &str) {
    eprintln!("warning: {}", for_terminal(message));
}

pub fn notice(message: &str) {
    eprintln!("note: {}", for_terminal(message));
}

/// Quiet by default; `-v` raises chatmill's own crates only; `CHATMILL_LOG`
/// takes a full filter.
pub fn init_tracing(verbose: u8) {
    let filter = match std::env::var("CHATMILL_LOG") {
        Ok(f) => EnvFilter::new(f),
        Err(_) => EnvFilter::new(match verbose {
            0 => "warn",
            1 => "warn,chatmill=info,chatmill_runtime=info",
            _ => "warn,chatmill=debug,chatmill_runtime=debug",
        }),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only for a terminal: logs piped to a file stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .without_time()
        .init();
}
