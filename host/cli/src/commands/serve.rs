//! `chatmill serve`, `chatmill turn`, `chatmill backfill`.

#![allow(clippy::print_stdout, reason = "the command's output is stdout")]

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use chatmill_pipeline::header::{Deadline, ExtractiveWriter, HeaderWriter};
use chatmill_pipeline::llm::LlmWriter;
use chatmill_server::client::Client;
use chatmill_server::{ServerConfig, Services};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::cli::{ServeArgs, TurnArgs};
use crate::context::Context;
use crate::render::CliError;

/// The default socket for a root: one per root, in the runtime dir when
/// there is one.
pub fn default_socket(ctx: &Context) -> PathBuf {
    let root = std::fs::canonicalize(&ctx.root).unwrap_or_else(|_| ctx.root.clone());
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => {
            let hash = hex::encode(Sha256::digest(root.to_string_lossy().as_bytes()));
            PathBuf::from(dir)
                .join("chatmill")
                .join(format!("{}.sock", &hash[..12]))
        }
        None => root.join(".chatmill/chatmill.sock"),
    }
}

pub fn run(ctx: &Context, args: ServeArgs) -> Result<ExitCode, CliError> {
    fs_err::create_dir_all(&ctx.root).map_err(|e| CliError::usage(e, None))?;
    let socket = args.socket.clone().unwrap_or_else(|| default_socket(ctx));
    let set = ctx.adapter_set()?;
    let index = Arc::new(ctx.index()?);
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
        if print {
            println!("{}", c.socket.display());
        }
        crate::render::notice(&format!(
            "chatmill serving `{}` on {}{}",
            c.root.display(),
            c.socket.display(),
            c.tcp.map(|a| format!(" and {a}")).unwrap_or_default()
        ));
    })
    .map_err(|e| {
        let hint = e.hint();
        CliError::failed(e, hint)
    })?;
    Ok(ExitCode::SUCCESS)
}

pub fn turn(ctx: &Context, args: TurnArgs) -> Result<ExitCode, CliError> {
    let params = if args.json_stdin {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::usage(e, None))?;
        serde_json::from_str(&s).map_err(|e| {
            CliError::usage(
                anyhow::anyhow!("stdin is not a JSON turn: {e}"),
                Some(r#"{"session_id":"s1","turn_index":1,"user":"…","assistant":"…"}"#.into()),
            )
        })?
    } else {
        json!({
            "session_id": args.session,
            "turn_index": args.turn,
            "user": args.user,
            "assistant": args.assistant,
            "model": args.model,
            "agent_id": args.agent,
            "title": args.title,
        })
    };
    let socket = args.socket.clone().unwrap_or_else(|| default_socket(ctx));
    let fail = |e: chatmill_server::client::ClientError| {
        let hint = e.hint();
        CliError::failed(e, hint)
    };
    let mut client = Client::unix(&socket).map_err(fail)?;
    let ack = client.call("turn", params).map_err(fail)?;
    println!("{ack}");
    Ok(ExitCode::SUCCESS)
}

pub fn backfill(ctx: &Context, json: bool) -> Result<ExitCode, CliError> {
    let fail = |e: chatmill_pipeline::backfill::BackfillError| CliError::failed(e, None);
    let queued = chatmill_pipeline::backfill::Queue::load(&ctx.root)
        .map_err(fail)?
        .len();
    let Some(cfg) = ctx.header.clone() else {
        if json {
            println!(
                "{}",
                json!({ "queued": queued, "rewritten": 0, "failed": 0 })
            );
        } else if queued == 0 {
            println!("nothing queued for backfill");
        } else {
            println!("{queued} chunks wait for their header");
        }
        return if queued == 0 {
            Ok(ExitCode::SUCCESS)
        } else {
            Err(CliError::usage(
                anyhow::anyhow!("no header model is configured"),
                Some("add a `[header]` section (url, model) to the config file; see README".into()),
            ))
        };
    };
    let llm = LlmWriter::new(cfg);
    let index = ctx.index()?;
    let mut failed = std::collections::HashSet::new();
    let mut rewritten = 0u32;
    while let Some((id, done)) = chatmill_pipeline::backfill::step(
        &ctx.root,
        &llm,
        Some(&index),
        std::time::Duration::from_secs(60),
        &failed,
    )
    .map_err(fail)?
    {
        if done {
            rewritten += 1;
        } else {
            failed.insert(id);
        }
    }
    if json {
        println!(
            "{}",
            json!({ "queued": queued, "rewritten": rewritten, "failed": failed.len() })
        );
    } else {
        println!(
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
