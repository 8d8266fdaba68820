//! `chatmill report [ROOT]`: the seven criteria, scored with evidence, as
//! a terminal summary or JSON; `--html FILE` writes the page of charts.
//! Exits 1 when a criterion is below 3.

use crate::out::outln;
use std::process::ExitCode;

use chatmill_chunking::llm::LlmWriter;
use chatmill_report::judge::Judge;
use chatmill_report::{Report, Scope};
use chatmill_runtime::model::visible::visible;

use crate::cli::ReportArgs;
use crate::command_error::CliError;
use crate::context::Context;

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
    if let Some(path) = &args.html {
        chatmill_report::html::write(&report, path)?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_summary(&report, true)?;
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

/// The scores, one line each, with their counts; `detail` adds the worst
/// chunks (import prints the scores without them).
pub fn print_summary(report: &Report, detail: bool) -> Result<(), CliError> {
    outln!(
        "quality ({} chunks, {} inputs{}):",
        report.chunks,
        report.inputs,
        match report.scope {
            Scope::All => "",
            Scope::LastRun => ", the latest import",
        }
    );
    for c in &report.criteria {
        let first = c
            .measures
            .first()
            .map(|m| format!("{} of {} {}", m.count, m.of, m.what))
            .unwrap_or_default();
        outln!(
            "  {} {:<28} {}/5  {}",
            c.number,
            c.name,
            c.score,
            visible(&first)
        );
        if !detail {
            continue;
        }
        for m in c.measures.iter().skip(1) {
            outln!("      {} of {}: {}", m.count, m.of, m.what);
        }
        for f in c.findings.iter().take(3) {
            outln!(
                "      e.g. {}: {}",
                visible(&f.subject),
                visible(&f.problem)
            );
        }
    }
    for c in report.criteria.iter().filter(|c| c.unresolved_deficiency) {
        outln!(
            "UNRESOLVED DEFICIENCY: {} {} scores {}/5 (3 passes)",
            c.number,
            c.name,
            c.score
        );
        if let Some(fix) = &c.fix {
            outln!("  fix: {fix}");
        }
    }
    if let Some(judge) = &report.judge {
        print_judge(judge)?;
    }
    if detail && !report.exclusions.is_empty() {
        outln!(
            "{} pairs left out as mechanical (`--json` lists them all), e.g.:",
            report.exclusions.len()
        );
        for e in report.exclusions.iter().take(3) {
            outln!(
                "  {} pair {}: \"{}\"",
                visible(&e.conversation),
                e.pair,
                visible(&e.request)
            );
        }
    }
    Ok(())
}

/// The judge's means beside the measured scores, and the answers it could
/// not read (model output: escaped for the terminal).
fn print_judge(judge: &Judge) -> Result<(), CliError> {
    outln!(
        "judge ({}, {} chunks sampled, {} requests, {} unparsable, {} without an answer):",
        visible(&judge.model),
        judge.sample,
        judge.requests,
        judge.unparsable,
        judge.failed
    );
    for c in &judge.criteria {
        let mean = c
            .judge_mean
            .map_or_else(|| "no score".to_string(), |m| format!("{m:.1}/5"));
        outln!(
            "  {} {:<28} measured {}/5  judge {mean} (n {})",
            c.number,
            c.name,
            c.measured,
            c.n
        );
    }
    for v in judge
        .verdicts
        .iter()
        .filter(|v| v.problem.is_some())
        .take(3)
    {
        outln!(
            "  {}: {}",
            visible(&v.chunk),
            visible(v.problem.as_deref().unwrap_or_default())
        );
    }
    Ok(())
}
