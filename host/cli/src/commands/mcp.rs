//! `chatmill mcp`: the root's memory over the Model Context Protocol, on
//! stdin/stdout (what desktop clients launch), or Streamable HTTP on
//! loopback with `--listen`. Logs go to stderr.

use std::process::ExitCode;
use std::sync::Arc;

use chatmill_chunking::header::ExtractiveWriter;
use chatmill_index::Indexer;
use chatmill_mcp::{Memory, Server};
use chatmill_pipeline::inline::InlineWriter;

use crate::cli::McpArgs;
use crate::command_error::CliError;
use crate::context::Context;

pub fn run(ctx: &Context, args: McpArgs) -> Result<ExitCode, CliError> {
    let index = Arc::new(ctx.index()?);
    // The model's one-time work before the first call, not in it.
    index.embedder.warm_up()?;
    // Chunks an import or the hook left waiting for vectors get them in the
    // background while the assistant's session runs.
    chatmill_index::fill::spawn_filler(Arc::clone(&index), crate::vectors::FILL_EVERY);
    let redactor = crate::redaction::redactor(ctx)?.map(Arc::new);
    let writer = if args.allow_write {
        let indexer = Arc::clone(&index) as Arc<dyn Indexer>;
        Some(
            InlineWriter::open(&ctx.root, Arc::new(ExtractiveWriter), Some(indexer))?
                .redacting(redactor.clone()),
        )
    } else {
        None
    };
    let memory = Memory::new(ctx.root.clone(), Some(index), writer).redacting(redactor);
    let server = Server::new(memory, env!("CARGO_PKG_VERSION"));
    match args.listen {
        Some(addr) => server.run_http(addr, args.token.unwrap_or_default())?,
        None => server.run_stdio()?,
    }
    Ok(ExitCode::SUCCESS)
}
