//! `chatmill parse`: inputs → normalized JSON, one entry per input.

#![allow(clippy::print_stdout, reason = "the command's output is stdout")]

use std::process::ExitCode;

use chatmill_runtime::{AdapterSet, Input, Runtime, model::Conversation};
use rayon::prelude::*;
use serde::Serialize;

use crate::cli::ParseArgs;
use crate::context::Context;
use crate::render::{self, CliError};

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
    if let Some(id) = &args.format
        && set.get(id).is_none()
    {
        return Err(CliError::usage(
            anyhow::anyhow!("no adapter has the id `{id}`"),
            Some(format!("available adapters: {}", set.ids().join(", "))),
        ));
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
                args.format.as_deref(),
            )
        })
        .collect();
    let mut failed = false;
    for r in &results {
        if let Some(e) = &r.error {
            failed = true;
            let err = anyhow::anyhow!("{}", e.message);
            render::error(&CliError::failed(err, e.hint.clone()));
        }
    }
    let json = if args.compact {
        serde_json::to_string(&results)
    } else {
        serde_json::to_string_pretty(&results)
    }
    .map_err(|e| CliError::failed(e, None))?;
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
    };
    let adapter = match set.select(runtime, &input, forced) {
        Ok(a) => a,
        Err(e) => {
            out.error = Some(ErrorOut {
                hint: e.hint(),
                message: e.to_string(),
            });
            return out;
        }
    };
    out.adapter = Some(AdapterRef {
        id: adapter.info.id.clone(),
        version: adapter.info.version.clone(),
        source: adapter.origin.kind(),
    });
    let result = runtime.parse(adapter, &input).and_then(|mut stream| {
        out.encoding = Some(stream.encoding());
        let mut convs = Vec::new();
        while let Some(c) = stream.next_conversation()? {
            convs.push(c);
        }
        Ok(convs)
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
