//! `chatmill turn`: one finished exchange to a running server.

use std::io::Read;
use std::process::ExitCode;

use chatmill_server::client::Client;
use serde_json::json;

use crate::cli::TurnArgs;
use crate::command_error::CliError;
use crate::context::Context;
use crate::out::outln;

pub fn run(ctx: &Context, args: TurnArgs) -> Result<ExitCode, CliError> {
    let params = if args.json_stdin {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        serde_json::from_str(&s).map_err(|e| {
            CliError::usage(anyhow::anyhow!("stdin is not a JSON turn: {e}"))
                .hint(r#"{"session_id":"s1","turn_index":1,"user":"…","assistant":"…"}"#)
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
    let socket = args
        .socket
        .clone()
        .unwrap_or_else(|| crate::socket::default_socket(ctx));
    let mut client = Client::unix(&socket)?;
    let ack = client.call("turn", params)?;
    outln!("{ack}");
    Ok(ExitCode::SUCCESS)
}
