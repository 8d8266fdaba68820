//! One module per subcommand.

mod adapters;
mod import;
mod parse;
mod search;
mod serve;
mod verify;

use std::process::ExitCode;

pub use adapters::{report_lint, samples};

use crate::cli::{Cli, Command};
use crate::context::Context;
use crate::render::CliError;

pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let ctx = Context::new(&cli.global)?;
    match cli.command {
        Command::Import(args) => import::run(&ctx, args),
        Command::Parse(args) => parse::run(&ctx, args),
        Command::Verify(args) => verify::run(&ctx, args),
        Command::Search(args) => search::run(&ctx, args),
        Command::Serve(args) => serve::run(&ctx, args),
        Command::Turn(args) => serve::turn(&ctx, args),
        Command::Backfill { json } => serve::backfill(&ctx, json),
        Command::Reindex {
            json,
            to,
            chroma_url,
        } => search::reindex(&ctx, json, to.as_deref(), chroma_url.as_deref()),
        Command::Adapters(cmd) => adapters::run(&ctx, cmd),
    }
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
            walk(input, &mut out).map_err(|e| CliError::failed(e, None))?;
        } else if input.exists() {
            out.push(input.clone());
        } else {
            return Err(CliError::usage(
                anyhow::anyhow!("`{}` does not exist", input.display()),
                Some("check the path".into()),
            ));
        }
    }
    Ok(out)
}
