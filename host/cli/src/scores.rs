//! The quality report's scores as text: `report` prints them with their
//! evidence, `import` without.

use chatmill_report::judge::Judge;
use chatmill_report::{Report, Scope};
use chatmill_runtime::model::visible::visible;

use crate::command_error::CliError;
use crate::out::outln;

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
    if detail {
        print_redactions(&report.redactions)?;
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

/// How many secrets the chunks show as placeholders, by kind.
fn print_redactions(r: &chatmill_report::Redactions) -> Result<(), CliError> {
    if r.chunks == 0 {
        return Ok(());
    }
    let (total, kinds) = crate::render::counts(&r.by_rule);
    outln!("secrets redacted: {total} in {} chunks ({kinds})", r.chunks);
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
