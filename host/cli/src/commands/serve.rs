//! `chatmill serve`: inline mode on a local socket.

use std::process::ExitCode;
use std::sync::Arc;

use chatmill_chunking::header::{Deadline, ExtractiveWriter, HeaderWriter};
use chatmill_chunking::llm::LlmWriter;
use chatmill_server::{ServerConfig, Services};

use crate::cli::ServeArgs;
use crate::command_error::CliError;
use crate::context::Context;

pub fn run(ctx: &Context, args: ServeArgs) -> Result<ExitCode, CliError> {
    fs_err::create_dir_all(&ctx.root).map_err(|e| {
        CliError::usage(e).hint("check `--root` (or CHATMILL_ROOT): its parent must be writable")
    })?;
    let socket = args
        .socket
        .clone()
        .unwrap_or_else(|| crate::socket::default_socket(ctx));
    let set = ctx.adapter_set()?;
    let index = Arc::new(ctx.index()?);
    // The model's one-time work before the first client, not in its batch.
    index.embedder.warm_up()?;
    // Chunks an import left waiting for vectors get them in the background.
    chatmill_index::fill::spawn_filler(Arc::clone(&index), crate::vectors::FILL_EVERY);
    // With a header model: each turn waits at most its deadline, then gets
    // the built-in header and a place in the backfill queue.
    let (header, backfill): (Arc<dyn HeaderWriter>, Option<Arc<dyn HeaderWriter>>) =
        match ctx.header.clone() {
            Some(cfg) => {
                let deadline = std::time::Duration::from_millis(cfg.deadline_ms);
                let llm: Arc<dyn HeaderWriter> = Arc::new(LlmWriter::new(cfg));
                (
                    Arc::new(Deadline {
                        inner: Arc::clone(&llm),
                        deadline,
                    }),
                    Some(llm),
                )
            }
            None => (Arc::new(ExtractiveWriter), None),
        };
    let services = Services {
        index: Some(index),
        header,
        backfill,
        redactor: crate::redaction::redactor(ctx)?.map(Arc::new),
        adapters: set.ids().iter().map(|s| s.to_string()).collect(),
        version: env!("CARGO_PKG_VERSION").into(),
    };
    let mut cfg = ServerConfig::new(&ctx.root, &socket);
    cfg.tcp = args.listen;
    cfg.allow_remote = args.allow_remote;
    cfg.token = args.token.clone();
    cfg.max_line = args.max_line;
    let print = args.print_socket;
    chatmill_server::run(cfg, services, |c| {
        // A reader gone from the socket line does not stop the server.
        if print {
            let _ = crate::out::write(format_args!("{}\n", c.socket.display()));
        }
        crate::render::notice(&format!(
            "chatmill serving `{}` on {}{}",
            c.root.display(),
            c.socket.display(),
            c.tcp.map(|a| format!(" and {a}")).unwrap_or_default()
        ));
    })?;
    Ok(ExitCode::SUCCESS)
}
