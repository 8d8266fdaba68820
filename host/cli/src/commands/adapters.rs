//! `chatmill adapters …`: list, add, remove, info, sniff.

#![allow(clippy::print_stdout, reason = "the command's output is stdout")]

use std::process::ExitCode;

use chatmill_runtime::{AdapterOrigin, Input, LoadedAdapter};
use serde::Serialize;

use crate::cli::AdaptersCommand;
use crate::context::Context;
use crate::render::{self, CliError};

#[derive(Serialize)]
struct Listed<'a> {
    id: &'a str,
    name: &'a str,
    version: &'a str,
    api_version: &'a str,
    source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    sha256: &'a str,
    formats: &'a [chatmill_runtime::model::FormatInfo],
}

fn listed(a: &LoadedAdapter) -> Listed<'_> {
    Listed {
        id: &a.info.id,
        name: &a.info.name,
        version: &a.info.version,
        api_version: &a.api_version,
        source: a.origin.kind(),
        path: a.origin.path().map(|p| p.display().to_string()),
        sha256: &a.sha256,
        formats: &a.info.formats,
    }
}

fn json<T: Serialize>(value: &T) -> Result<(), CliError> {
    let s = serde_json::to_string_pretty(value).map_err(|e| CliError::failed(e, None))?;
    println!("{s}");
    Ok(())
}

pub fn run(ctx: &Context, cmd: AdaptersCommand) -> Result<ExitCode, CliError> {
    match cmd {
        AdaptersCommand::List { json: as_json } => {
            let set = ctx.adapter_set()?;
            if as_json {
                json(&set.adapters().iter().map(listed).collect::<Vec<_>>())?;
            } else {
                println!(
                    "{:<14} {:<9} {:<6} {:<8} FORMATS",
                    "ID", "VERSION", "API", "SOURCE"
                );
                for a in set.adapters() {
                    let formats: Vec<_> = a.info.formats.iter().map(|f| f.id.as_str()).collect();
                    println!(
                        "{:<14} {:<9} {:<6} {:<8} {}",
                        a.info.id,
                        a.info.version,
                        a.api_version,
                        a.origin.kind(),
                        formats.join(", ")
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        AdaptersCommand::Info { id, json: as_json } => {
            let set = ctx.adapter_set()?;
            let Some(a) = set.get(&id) else {
                return Err(CliError::usage(
                    anyhow::anyhow!("no adapter has the id `{id}`"),
                    Some(format!("available adapters: {}", set.ids().join(", "))),
                ));
            };
            if as_json {
                json(&listed(a))?;
            } else {
                println!("{} ({})", a.info.name, a.info.id);
                println!("version:     {}", a.info.version);
                println!("adapter API: {}", a.api_version);
                println!("source:      {}", a.origin.kind());
                if let Some(p) = a.origin.path() {
                    println!("path:        {}", p.display());
                }
                println!("sha256:      {}", a.sha256);
                println!("formats:");
                for f in &a.info.formats {
                    println!("  {:<28} {}", f.id, f.description);
                    if !f.file_patterns.is_empty() {
                        println!("  {:<28} files: {}", "", f.file_patterns.join(", "));
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        AdaptersCommand::Add { path } => add(ctx, &path),
        AdaptersCommand::Remove { id } => remove(ctx, &id),
        AdaptersCommand::Sniff { file } => {
            let set = ctx.adapter_set()?;
            let input = Input::from_path(&file);
            let scores = set.scores(&ctx.runtime, &input)?;
            for (id, score) in &scores {
                println!("{score:>3}  {id}");
            }
            match set.select(&ctx.runtime, &input, None) {
                Ok(a) => println!("chosen: {}", a.info.id),
                Err(e) => render::warning(&format!(
                    "{e}{}",
                    e.hint().map(|h| format!("\nhint: {h}")).unwrap_or_default()
                )),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn add(ctx: &Context, path: &std::path::Path) -> Result<ExitCode, CliError> {
    let bytes = fs_err::read(path)
        .map_err(|e| CliError::usage(e, Some("check the path to the `.wasm` file".into())))?;
    // Loading validates everything: a component, the right world and API
    // version, links, and `describe` answers. It also fills the compile cache.
    let adapter = ctx
        .runtime
        .load(AdapterOrigin::Dev(path.to_path_buf()), &bytes)?;
    // `sniff` must answer too (an empty head is a fair question).
    ctx.runtime.sniff(&adapter, b"", "probe.txt")?;
    let id = &adapter.info.id;
    fs_err::create_dir_all(&ctx.adapters_dir).map_err(|e| CliError::failed(e, None))?;
    let dest = ctx.adapters_dir.join(format!("{id}.wasm"));
    let mut tmp = tempfile::NamedTempFile::new_in(&ctx.adapters_dir)
        .map_err(|e| CliError::failed(e, None))?;
    std::io::Write::write_all(&mut tmp, &bytes).map_err(|e| CliError::failed(e, None))?;
    tmp.persist(&dest)
        .map_err(|e| CliError::failed(e.error, None))?;
    println!(
        "installed adapter `{id}` {} (API {}) to {}",
        adapter.info.version,
        adapter.api_version,
        dest.display()
    );
    if let Some((_, _)) = chatmill_builtin::ADAPTERS.iter().find(|(n, _)| n == id) {
        render::notice(&format!(
            "`{id}` is also a built-in adapter; the installed one is used only when its version is higher"
        ));
    }
    Ok(ExitCode::SUCCESS)
}

fn remove(ctx: &Context, id: &str) -> Result<ExitCode, CliError> {
    let path = ctx.adapters_dir.join(format!("{id}.wasm"));
    if path.exists() {
        fs_err::remove_file(&path).map_err(|e| CliError::failed(e, None))?;
        println!("removed adapter `{id}` ({})", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let builtin = chatmill_builtin::ADAPTERS.iter().any(|(n, _)| *n == id);
    let hint = if builtin {
        "built-in adapters cannot be removed; install a higher version to shadow one".to_string()
    } else {
        "`chatmill adapters list` shows the installed adapters".to_string()
    };
    Err(CliError::usage(
        anyhow::anyhow!(
            "no installed adapter `{id}` in {}",
            ctx.adapters_dir.display()
        ),
        Some(hint),
    ))
}
