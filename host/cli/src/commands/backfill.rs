//! `chatmill backfill`: the headers still queued, from the header model.

use std::process::ExitCode;

use chatmill_chunking::llm::LlmWriter;
use chatmill_pipeline::backfill::{Queue, step};
use serde_json::json;

use crate::command_error::CliError;
use crate::context::Context;
use crate::out::outln;

pub fn run(ctx: &Context, json: bool) -> Result<ExitCode, CliError> {
    let queued = Queue::load(&ctx.root)?.len();
    let Some(cfg) = ctx.header.clone() else {
        if json {
            outln!(
                "{}",
                json!({ "queued": queued, "rewritten": 0, "failed": 0 })
            );
        } else if queued == 0 {
            outln!("nothing queued for backfill");
        } else {
            outln!("{queued} chunks wait for their header");
        }
        return if queued == 0 {
            Ok(ExitCode::SUCCESS)
        } else {
            Err(
                CliError::usage(anyhow::anyhow!("no header model is configured"))
                    .hint("add a `[header]` section (url, model) to the config file; see README"),
            )
        };
    };
    let llm = LlmWriter::new(cfg);
    let index = ctx.index()?;
    let mut failed = std::collections::HashSet::new();
    let mut rewritten = 0u32;
    while let Some((id, done)) = step(
        &ctx.root,
        &llm,
        Some(&index),
        std::time::Duration::from_secs(60),
        &failed,
    )? {
        if done {
            rewritten += 1;
        } else {
            failed.insert(id);
        }
    }
    if json {
        outln!(
            "{}",
            json!({ "queued": queued, "rewritten": rewritten, "failed": failed.len() })
        );
    } else {
        outln!(
            "{rewritten} headers written, {} still waiting (the model failed; try again later)",
            failed.len()
        );
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
