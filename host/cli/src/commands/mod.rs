//! One module per subcommand.

mod adapters;
mod backfill;
mod embed;
mod hook;
mod import;
mod mcp;
mod parse;
mod reindex;
mod report;
mod scan;
mod search;
mod serve;
mod turn;
mod verify;
mod watch;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::command_error::CliError;
use crate::context::Context;

pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let ctx = Context::new(&cli.global)?;
    match cli.command {
        Command::Import(args) => import::run(&ctx, args),
        Command::Parse(args) => parse::run(&ctx, args),
        Command::Scan(args) => scan::run(&ctx, args),
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
