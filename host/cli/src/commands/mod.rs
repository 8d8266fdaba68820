//! One module per subcommand.

mod adapters;
mod adapters_new;
mod adapters_test;
mod backfill;
mod embed;
mod hook;
mod import;
mod mcp;
mod parse;
mod reindex;
mod report;
mod search;
mod serve;
mod turn;
mod verify;
mod watch;

use std::process::ExitCode;

pub use adapters::{report_lint, samples};

use crate::cli::{Cli, Command};
use crate::command_error::CliError;
use crate::context::Context;

pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let ctx = Context::new(&cli.global)?;
    match cli.command {
        Command::Import(args) => import::run(&ctx, args),
        Command::Parse(args) => parse::run(&ctx, args),
        Command::Verify(args) => verify::run(&ctx, args),
        Command::Report(args) => report::run(&ctx, args),
        Command::Embed(args) => embed::run(&ctx, args),
        Command::Search(args) => search::run(&ctx, args),
        Command::Serve(args) => serve::run(&ctx, args),
        Command::Mcp(args) => mcp::run(&ctx, args),
        Command::Hook(cmd) => hook::run(&ctx, cmd),
        Command::Watch(args) => watch::run(&ctx, args),
        Command::Turn(args) => turn::run(&ctx, args),
        Command::Backfill { json } => backfill::run(&ctx, json),
        Command::Reindex(args) => reindex::run(&ctx, args),
        Command::Adapters(cmd) => adapters::run(&ctx, cmd),
    }
}

/// The adapter with the id the user named (`--adapter-id`, `adapters info`).
pub fn named_adapter<'s>(
    set: &'s chatmill_runtime::AdapterSet,
    id: &str,
) -> Result<&'s chatmill_runtime::LoadedAdapter, CliError> {
    set.get(id).ok_or_else(|| {
        CliError::usage(anyhow::anyhow!("no adapter has the id `{id}`"))
            .hint(format!("available adapters: {}", set.ids().join(", ")))
    })
}

/// Every file under `inputs` (folders walked recursively, sorted).
pub fn expand_inputs(inputs: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>, CliError> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<_> = fs_err::read_dir(dir)?.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out)?;
            } else {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for input in inputs {
        if input.is_dir() {
            walk(input, &mut out)?;
        } else if input.exists() {
            out.push(input.clone());
        } else {
            return Err(
                CliError::usage(anyhow::anyhow!("`{}` does not exist", input.display()))
                    .hint("check the path"),
            );
        }
    }
    Ok(out)
}
