//! `chatmill report [ROOT]`: the seven criteria, scored with evidence, as
//! a terminal summary or JSON; `--html FILE` writes the page of charts.
//! Exits 1 when a criterion is below 3.

use std::process::ExitCode;

use chatmill_chunking::llm::LlmWriter;
use chatmill_report::Scope;
use chatmill_runtime::model::visible::visible;

use crate::cli::ReportArgs;
use crate::command_error::CliError;
use crate::context::Context;
use crate::out::outln;

pub fn run(ctx: &Context, args: ReportArgs) -> Result<ExitCode, CliError> {
    let root = args.root.clone().unwrap_or_else(|| ctx.root.clone());
    if !root.is_dir() {
        return Err(CliError::usage(anyhow::anyhow!(
            "the root `{}` does not exist",
            root.display()
        ))
        .hint("pass the folder chatmill imported into: `chatmill report ROOT`"));
    }
    let scope = if args.since_run {
        Scope::LastRun
    } else {
        Scope::All
    };
    let writer = if args.judge {
        let cfg = ctx.header.clone().ok_or_else(|| {
            CliError::usage(anyhow::anyhow!(
                "`--judge` needs a language model and none is configured"
            ))
            .hint("set `url` and `model` under `[header]` in the config file (any OpenAI-compatible endpoint; `api_key` when it needs one)")
        })?;
        Some(LlmWriter::new(cfg))
    } else {
        None
    };
    let mut report = chatmill_report::evaluate(&root, scope)?;
    if let Some(writer) = &writer {
        chatmill_report::judge::judge(&mut report, writer, args.judge_sample);
    }
    // Evidence never shows a secret, whenever its chunk was written.
    if ctx.redact.enabled && !ctx.no_redact {
        let r = crate::redaction::finder(ctx, Some(&root))?;
        report.redact(&r);
    }
    if let Some(path) = &args.html {
        chatmill_report::html::write(&report, path)?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        crate::scores::print_summary(&report, true)?;
        if let Some(path) = &args.html {
            outln!("page: {}", visible(&path.display().to_string()));
        }
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
