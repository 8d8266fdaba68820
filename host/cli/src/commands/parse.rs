//! `chatmill parse`: inputs → normalized JSON, one entry per input.

#![allow(clippy::print_stdout, reason = "the command's output is stdout")]

use std::process::ExitCode;

use chatmill_runtime::{AdapterSet, Input, Runtime, model::Conversation};
use rayon::prelude::*;
use serde::Serialize;

use crate::cli::ParseArgs;
use crate::command_error::CliError;
use crate::context::Context;
use crate::render;

#[derive(Serialize)]
struct Parsed {
    input: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    adapter: Option<AdapterRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<chatmill_runtime::TextEncoding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    conversations: Option<Vec<Conversation>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorOut>,
    /// What the trust boundary changed, and adapters that declined the input.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct AdapterRef {
    id: String,
    version: String,
    source: &'static str,
}

#[derive(Serialize)]
struct ErrorOut {
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

pub fn run(ctx: &Context, args: ParseArgs) -> Result<ExitCode, CliError> {
    let set = ctx.adapter_set()?;
    if let Some(id) = &args.adapter_id {
        super::named_adapter(&set, id)?;
    }
    let files = super::expand_inputs(&args.inputs)?;
    // Files are independent: parse them in parallel, each in its own sandbox.
    let results: Vec<Parsed> = files
        .par_iter()
        .map(|path| {
            parse_one(
                &ctx.runtime,
                &set,
                Input::from_path(path),
                args.adapter_id.as_deref(),
            )
        })
        .collect();
    let mut failed = false;
    for r in &results {
        for w in &r.warnings {
            render::warning(&format!("{}: {w}", r.input));
        }
        if let Some(e) = &r.error {
            failed = true;
            let err = anyhow::anyhow!("{}", e.message);
            render::error(&CliError::failed(err).hint_opt(e.hint.clone()));
        }
    }
    let json = if args.compact {
        serde_json::to_string(&results)
    } else {
        serde_json::to_string_pretty(&results)
    }?;
    println!("{json}");
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn parse_one(runtime: &Runtime, set: &AdapterSet, input: Input, forced: Option<&str>) -> Parsed {
    let mut out = Parsed {
        input: input.display().to_string(),
        adapter: None,
        encoding: None,
        conversations: None,
        error: None,
        warnings: Vec::new(),
    };
    let candidates = match set.candidates(runtime, &input, forced) {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(ErrorOut {
                hint: e.hint(),
                message: e.to_string(),
            });
            return out;
        }
    };
    let result = runtime
        .parse_first(&candidates, &input)
        .and_then(|(mut stream, declined)| {
            let adapter = stream.adapter();
            out.adapter = Some(AdapterRef {
                id: adapter.info.id.clone(),
                version: adapter.info.version.clone(),
                source: adapter.origin.kind(),
            });
            out.encoding = Some(stream.encoding());
            for d in declined {
                out.warnings.push(format!(
                    "adapter {} said it is not its format ({}); read with `{}` instead",
                    d.adapter, d.message, adapter.info.id
                ));
            }
            let mut convs = Vec::new();
            let read = std::iter::from_fn(|| stream.next_conversation().transpose())
                .try_for_each(|c| c.map(|c| convs.push(c)));
            let id = &adapter.info.id;
            let lines = stream.adjustments().lines();
            out.warnings
                .extend(lines.into_iter().map(|l| format!("adapter `{id}`: {l}")));
            read.map(|()| convs)
        });
    match result {
        Ok(c) => out.conversations = Some(c),
        Err(e) => {
            let mut message = e.to_string();
            if let Some(t) = e.stderr_tail() {
                message.push_str(&format!("\n  adapter output: {}", t.trim()));
            }
            out.error = Some(ErrorOut {
                hint: e.hint(),
                message,
            });
        }
    }
    out
}
