//! `chatmill import`: exports → chunk files, with a processing summary.

use std::io::IsTerminal;
use std::process::ExitCode;

use chatmill_chunking::header::ExtractiveWriter;
use chatmill_pipeline::import::{self, FileProblem, Progress, Services, Summary};
use chatmill_runtime::model::visible::visible;

use crate::cli::ImportArgs;
use crate::command_error::CliError;
use crate::context::Context;
use crate::out::outln;

pub fn run(ctx: &Context, args: ImportArgs) -> Result<ExitCode, CliError> {
    let set = ctx.adapter_set()?;
    if let Some(id) = &args.adapter_id {
        crate::adapter_lint::named_adapter(&set, id)?;
    }
    let mut opts = crate::import_options::options(ctx, args.inputs.clone());
    opts.adapter_id = args.adapter_id.clone();
    opts.reprocess = args.reprocess.then(|| import::Reprocess {
        only: args.only.clone(),
    });
    // A progress bar on a terminal (stderr), log lines otherwise.
    let bar = progress_bar();
    let mut progress = |p: Progress<'_>| report_progress(p, bar.as_ref());
    let index = if args.no_index {
        None
    } else {
        Some(ctx.index()?.deferring_vectors())
    };
    let llm = ctx
        .header
        .clone()
        .map(chatmill_chunking::llm::LlmWriter::new);
    let header: &dyn chatmill_chunking::header::HeaderWriter = match &llm {
        Some(w) => w,
        None => &ExtractiveWriter,
    };
    let redactor = crate::redaction::redactor(ctx)?;
    let svc = Services {
        runtime: &ctx.runtime,
        adapters: &set,
        header,
        indexer: index.as_ref().map(|i| i as &dyn chatmill_index::Indexer),
        redactor: redactor.as_ref(),
    };
    let result = import::run(&svc, &opts, &mut progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let summary = result?;
    let vectors = match &index {
        Some(index) if !args.no_wait => Some(crate::vectors::fill(index)),
        _ => None,
    };
    let pending = match &index {
        Some(index) => index.pending_count()?,
        None => 0,
    };
    warn_inputs(&summary);
    notice_outdated(&summary);
    if args.json {
        let mut s = serde_json::to_value(&summary)?;
        s["vectors_pending"] = pending.into();
        outln!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print_human(&summary, ctx)?;
        if pending > 0 {
            outln!(
                "vectors pending:     {pending} (found by keywords until `chatmill embed` makes them)"
            );
        }
        if summary.chunks_written > 0 {
            print_scores(ctx)?;
        }
    }
    if let Some(Err(e)) = vectors {
        // The chunks and keyword index are written; the vectors resume.
        return Err(e.hint("`chatmill embed` makes the vectors still waiting"));
    }
    // Skipped inputs (not a chat export, empty) are listed, not failures.
    Ok(if summary.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The import's progress bar, on a terminal (stderr) only.
fn progress_bar() -> Option<indicatif::ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} files  {wide_msg}",
            )
            .expect("a valid template"),
        );
        bar
    })
}

/// One progress event, on the bar, or as a log line without one.
fn report_progress(p: Progress<'_>, bar: Option<&indicatif::ProgressBar>) {
    match (p, bar) {
        (Progress::Inventory { files }, Some(bar)) => bar.set_length(files as u64),
        (Progress::File { index, name, .. }, Some(bar)) => {
            bar.set_position(index as u64);
            bar.set_message(name.to_string());
        }
        (Progress::Inventory { files }, None) => tracing::info!("{files} input files"),
        (Progress::File { index, of, name }, None) => {
            tracing::info!("[{}/{of}] {name}", index + 1);
        }
    }
}

/// The inputs imported with something the user should know, as warnings.
fn warn_inputs(summary: &Summary) {
    for w in &summary.warnings {
        let hint = w
            .hint
            .as_deref()
            .map(|h| format!("\nhint: {h}"))
            .unwrap_or_default();
        crate::render::warning(&format!("`{}`: {}{hint}", w.file, w.reason));
    }
}

fn print_human(s: &Summary, ctx: &Context) -> Result<(), CliError> {
    outln!("root: {}", ctx.root.display());
    outln!("files processed:     {}", s.files_processed);
    outln!("files unchanged:     {}", s.files_unchanged);
    outln!("chunks written:      {}", s.chunks_written);
    outln!("duplicates skipped:  {}", s.duplicates_skipped);
    outln!("mechanical excluded: {}", s.mechanical_excluded);
    if !s.redactions.is_empty() {
        let (total, kinds) = crate::render::counts(&s.redactions);
        outln!("secrets redacted:    {total} ({kinds})");
    }
    if s.files_reprocessed > 0 {
        outln!("files reprocessed:   {}", s.files_reprocessed);
    }
    outln!("chunks in total:     {}", s.chunks_total);
    if s.headers_pending > 0 {
        outln!(
            "headers pending:     {} (the header model failed; `chatmill backfill` retries)",
            s.headers_pending
        );
    }
    if let Some(n) = s.index_total {
        outln!(
            "chunks indexed:      {} this run, {n} in the index",
            s.chunks_indexed
        );
    }
    if !s.files_skipped.is_empty() {
        outln!("files skipped: {}", s.files_skipped.len());
        for f in &s.files_skipped {
            outln!("  {}: {}", visible(&f.file), visible(&f.reason));
        }
    }
    print_ignored(&s.files_ignored)?;
    for e in &s.errors {
        let error = CliError::failed(anyhow::anyhow!("`{}`: {}", e.file, e.reason));
        crate::render::error(&error.hint_opt(e.hint.clone()));
    }
    Ok(())
}

/// The seven criteria on this import's chunks (`chatmill report
/// --since-run`); they never change import's exit code.
fn print_scores(ctx: &Context) -> Result<(), CliError> {
    match chatmill_report::evaluate(&ctx.root, chatmill_report::Scope::LastRun) {
        Ok(report) => {
            crate::scores::print_summary(&report, false)?;
            outln!("(`chatmill report` shows the evidence)");
        }
        Err(e) => tracing::warn!("the quality report could not be made: {e}"),
    }
    Ok(())
}

/// Inputs an older chatmill read, by adapter, and how to rewrite them.
fn notice_outdated(s: &Summary) {
    if s.inputs_outdated.is_empty() {
        return;
    }
    let (total, by) = crate::render::counts(&s.inputs_outdated);
    crate::render::notice(&format!(
        "{total} inputs were read by an older chatmill ({by}); their chunks lack what this one writes\n\
         hint: `chatmill import --reprocess` reads them again and rewrites their chunks (`--only PLATFORM` for some)"
    ));
}

/// The export's files that hold no conversations, by what they are: up to
/// five names each (a ChatGPT export holds thousands of images).
fn print_ignored(ignored: &[FileProblem]) -> Result<(), CliError> {
    if ignored.is_empty() {
        return Ok(());
    }
    outln!(
        "files ignored: {} (they hold no conversations)",
        ignored.len()
    );
    let mut kinds: Vec<&str> = ignored.iter().map(|f| f.reason.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    for kind in kinds {
        let files: Vec<&str> = ignored
            .iter()
            .filter(|f| f.reason == kind)
            .map(|f| f.file.as_str())
            .collect();
        for f in files.iter().take(5) {
            outln!("  {}: {}", visible(f), visible(kind));
        }
        if files.len() > 5 {
            outln!("  … and {} more: {}", files.len() - 5, visible(kind));
        }
    }
    Ok(())
}
