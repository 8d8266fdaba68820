//! `chatmill verify [--repair]`: chunk files ↔ manifest ↔ index.

use std::path::Path;
use std::process::ExitCode;

use chatmill_index::{Index, Indexer};
use chatmill_pipeline::verify;
use chatmill_root::chunk_store::{ChunkStore, refresh_metadata_from_files};
use chatmill_runtime::model::visible::visible;

use crate::cli::VerifyArgs;
use crate::command_error::CliError;
use crate::context::Context;
use crate::out::outln;

pub fn run(ctx: &Context, args: VerifyArgs) -> Result<ExitCode, CliError> {
    if !ctx.root.is_dir() {
        return Err(CliError::usage(anyhow::anyhow!(
            "the root `{}` does not exist",
            ctx.root.display()
        ))
        .hint("pass `--root DIR` (or set CHATMILL_ROOT) to a folder chatmill imported into"));
    }
    let index = ctx.index()?;
    // Chunks are checked for secrets while redaction is on.
    // (`--repair` rewrites the chunks that hold one, with the root's key.)
    let secrets = match (ctx.redact.enabled, args.repair) {
        (false, _) => None,
        (true, false) => Some(crate::redaction::finder(ctx, Some(&ctx.root))?),
        (true, true) => Some(crate::redaction::keyed(ctx, &ctx.root)?),
    };
    let mut report =
        verify::run(&ctx.root, Some(&index), args.repair, secrets.as_ref()).map_err(|e| {
            CliError::failed(anyhow::anyhow!(
                "cannot verify `{}`: {e}",
                ctx.root.display()
            ))
        })?;
    if args.repair {
        refresh_metadata(&ctx.root, &index, &mut report)?;
    }
    if args.json {
        let s = serde_json::to_string_pretty(&report)?;
        outln!("{s}");
    } else {
        outln!("root: {}", ctx.root.display());
        outln!("chunk files:       {}", report.chunk_files);
        outln!("manifest chunks:   {}", report.manifest_chunks);
        if let Some(n) = report.index_chunks {
            outln!("index chunks:      {n}");
        }
        if report.vectors_pending > 0 {
            outln!(
                "vectors pending:   {} (found by keywords until `chatmill embed` makes them)",
                report.vectors_pending
            );
        }
        for r in &report.repaired {
            outln!("repaired: {}", visible(r));
        }
        for p in &report.problems {
            outln!(
                "{}: {}: {}",
                p.kind,
                visible(&p.subject),
                visible(&p.message)
            );
        }
        if report.ok() {
            outln!("ok");
        } else if !args.repair {
            outln!(
                "{} problems; `chatmill verify --repair` re-derives the manifest and index from the chunk files",
                report.problems.len()
            );
        } else {
            outln!(
                "{} problems need a human: fix or delete those chunk files, then run `chatmill verify --repair` again",
                report.problems.len()
            );
        }
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Gives an index written before it kept every metadata field (`project`)
/// those fields from the chunk files, as import's catch-up does, so that a
/// repaired index is current. The files are read again only then (their
/// problems are already in `report`).
fn refresh_metadata(
    root: &Path,
    index: &Index,
    report: &mut verify::Report,
) -> Result<(), CliError> {
    if !index.metadata_outdated()? {
        return Ok(());
    }
    let chunks = ChunkStore::new(root).scan(&mut Vec::new())?;
    let n = refresh_metadata_from_files(index, &chunks)?;
    report.repaired.push(format!(
        "refreshed the index's metadata of {n} chunks from their files (the index predated `project`)"
    ));
    report.problems.retain(|p| p.kind != verify::INDEX_OUTDATED);
    Ok(())
}
