//! How the CLI talks to people on stderr: `error:` / `hint:` messages,
//! warnings and notes, and logging.

#![allow(clippy::print_stderr, reason = "this module is the CLI's stderr")]

use chatmill_runtime::model::visible::{visible, visible_keeping};
use tracing_subscriber::EnvFilter;

use crate::command_error::CliError;

/// Prints `e` the way every chatmill error looks.
pub fn error(e: &CliError) {
    let text = format_error(&e.error, &e.hints, e.detail.as_deref());
    eprintln!("{}", for_terminal(&text));
}

/// `error: …`, its causes, what the adapter printed, then a blank line and
/// one `hint: …` line per hint.
pub fn format_error(error: &anyhow::Error, hints: &[String], detail: Option<&str>) -> String {
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
    if !hints.is_empty() {
        out.push('\n');
    }
    for h in hints {
        out.push_str(&format!("\nhint: {h}"));
    }
    out
}

/// `text` with controls and bidi overrides made visible, line breaks kept
/// (every message may quote what an adapter or a chat said).
pub fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    visible_keeping(text, &['\n'])
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

/// Counts by name as `total` and `name: n, name: n` (names made safe for
/// a terminal), for summary lines.
pub fn counts(by: &std::collections::BTreeMap<String, u32>) -> (u32, String) {
    let total = by.values().sum();
    let list: Vec<String> = by
        .iter()
        .map(|(name, n)| format!("{}: {n}", visible(name)))
        .collect();
    (total, list.join(", "))
}
