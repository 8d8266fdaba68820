//! `chatmill hook claude-code`: what a Claude Code hook runs. It reads the
//! hook's JSON on stdin (`session_id`, `transcript_path`,
//! `hook_event_name`, …) and imports that transcript incrementally, live: a
//! last pair that is still being written waits for the next hook. It never
//! disturbs the session it serves: it always exits 0 (a `Stop` hook's exit
//! 2 would feed its stderr back to the model) and writes what it did, or
//! why it could not, to `ROOT/.chatmill/hook.log`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use chatmill_chunking::header::ExtractiveWriter;
use chatmill_pipeline::import::{self, Services, Summary};
use chatmill_root::root::Root;
use serde::Deserialize;

use crate::cli::HookCommand;
use crate::command_error::CliError;
use crate::context::Context;

/// The most of stdin a hook reads (Claude Code's payloads are small).
const MAX_PAYLOAD: u64 = 1 << 20;
/// The log is started afresh (the old one kept as `hook.log.1`) past this.
const MAX_LOG: u64 = 1 << 20;

/// The fields of Claude Code's hook payload chatmill uses.
#[derive(Debug, Deserialize)]
struct Payload {
    #[serde(default)]
    session_id: Option<String>,
    transcript_path: PathBuf,
    #[serde(default)]
    hook_event_name: Option<String>,
}

pub fn run(ctx: &Context, cmd: HookCommand) -> Result<ExitCode, CliError> {
    let HookCommand::ClaudeCode(args) = cmd;
    let started = Instant::now();
    let mut line = match claude_code(ctx) {
        Ok((event, session, s)) => format!(
            "claude-code {event} session={session} chunks={} waiting={} errors={}{}",
            s.chunks_written,
            s.pairs_waiting,
            s.errors.len(),
            s.errors
                .iter()
                .map(|e| format!(" [{}: {}]", e.file, e.reason))
                .collect::<String>()
        ),
        Err(e) => format!("claude-code error: {e}"),
    };
    if !args.ignored.is_empty() {
        line.push_str(&format!(" (ignored arguments: {:?})", args.ignored));
    }
    log(
        &ctx.root,
        &format!("{line} in {:.3}s", started.elapsed().as_secs_f64()),
    );
    Ok(ExitCode::SUCCESS)
}

/// Reads the payload and imports its transcript: (event, session, summary).
fn claude_code(ctx: &Context) -> Result<(String, String, Summary), String> {
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_PAYLOAD)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the hook's payload: {e}"))?;
    let p: Payload = serde_json::from_str(&text)
        .map_err(|e| format!("the payload is not a Claude Code hook's JSON: {e}"))?;
    let path = transcript(&p.transcript_path)?;
    let event = p.hook_event_name.unwrap_or_else(|| "?".into());
    // At the session's end nothing more will be written: every pair counts.
    let live = event != "SessionEnd";
    let mut opts = crate::import_options::options(ctx, vec![path]);
    opts.adapter_id = Some("claude-code".into());
    opts.live = live;
    let set = ctx.adapter_set().map_err(|e| format!("{:#}", e.error))?;
    // Keyword-searchable within the hook's budget; the vectors are made by
    // `chatmill mcp`, `serve` or `watch` in the background, or the next
    // import or `chatmill embed`.
    let index = ctx
        .index()
        .map_err(|e| format!("{:#}", e.error))?
        .deferring_vectors();
    let redactor = crate::redaction::redactor(ctx).map_err(|e| format!("{:#}", e.error))?;
    let svc = Services {
        runtime: &ctx.runtime,
        adapters: &set,
        header: &ExtractiveWriter,
        indexer: Some(&index),
        redactor: redactor.as_ref(),
    };
    let summary = import::run(&svc, &opts, &mut |_| {}).map_err(|e| e.to_string())?;
    let session = p.session_id.unwrap_or_else(|| "?".into());
    Ok((event, session, summary))
}

/// The transcript a payload names: an absolute path to an existing `.jsonl`
/// file (anything else is not a Claude Code transcript).
fn transcript(path: &Path) -> Result<PathBuf, String> {
    let shown = path.display();
    if !path.is_absolute() || path.extension().is_none_or(|e| e != "jsonl") {
        return Err(format!(
            "`{shown}` is not an absolute path to a .jsonl transcript"
        ));
    }
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    if !meta.is_file() {
        return Err(format!("`{shown}` is not a file"));
    }
    Ok(path.to_path_buf())
}

/// Appends `line` to the root's hook log (its controls escaped), starting
/// it afresh past [`MAX_LOG`]. A log that cannot be written is given up on
/// silently: the hook's caller must not see it.
fn log(root: &Path, line: &str) {
    let path = Root::new(root).hook_log();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG) {
        let _ = std::fs::rename(&path, path.with_extension("log.1"));
    }
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let line = chatmill_runtime::model::visible::visible(line);
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = writeln!(f, "{now} {line}");
    }
}
