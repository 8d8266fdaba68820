//! `chatmill adapters …`: list, add, remove, info, sniff; `new` and `test`
//! are [`new`] and [`test`].

mod new;
mod test;

use std::process::ExitCode;

use chatmill_runtime::model::visible::visible;
use chatmill_runtime::{AdapterOrigin, AdapterSet, Input, LoadedAdapter};
use serde::Serialize;

use crate::cli::AdaptersCommand;
use crate::command_error::CliError;
use crate::context::Context;
use crate::out::outln;
use crate::render;

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
    let s = serde_json::to_string_pretty(value)?;
    outln!("{s}");
    Ok(())
}

pub fn run(ctx: &Context, cmd: AdaptersCommand) -> Result<ExitCode, CliError> {
    match cmd {
        AdaptersCommand::List { json } => list(ctx, json),
        AdaptersCommand::Info { id, json } => info(ctx, &id, json),
        AdaptersCommand::Add { path, force } => add(ctx, &path, force),
        AdaptersCommand::Remove { id } => remove(ctx, &id),
        AdaptersCommand::New { name, lang, dir } => new::run(&name, lang, dir),
        AdaptersCommand::Test {
            adapter,
            fixtures,
            expect,
            bless,
            json,
        } => test::run(
            ctx,
            test::TestArgs {
                adapter,
                fixtures,
                expect,
                bless,
                json,
            },
        ),
        AdaptersCommand::Sniff { file } => sniff(ctx, &file),
    }
}

/// `adapters list`: one line per adapter, or JSON.
fn list(ctx: &Context, as_json: bool) -> Result<ExitCode, CliError> {
    let set = ctx.adapter_set()?;
    if as_json {
        json(&set.adapters().iter().map(listed).collect::<Vec<_>>())?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<14} {:<9} {:<6} {:<8} FORMATS",
        "ID",
        "VERSION",
        "API",
        "SOURCE"
    );
    for a in set.adapters() {
        let formats: Vec<_> = a.info.formats.iter().map(|f| f.id.as_str()).collect();
        outln!(
            "{:<14} {:<9} {:<6} {:<8} {}",
            a.info.id,
            visible(&a.info.version),
            a.api_version,
            a.origin.kind(),
            visible(&formats.join(", "))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `adapters info ID`: what one adapter is and reads.
fn info(ctx: &Context, id: &str, as_json: bool) -> Result<ExitCode, CliError> {
    let set = ctx.adapter_set()?;
    let a = crate::adapter_lint::named_adapter(&set, id)?;
    if as_json {
        json(&listed(a))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{} ({})", visible(&a.info.name), a.info.id);
    outln!("version:     {}", visible(&a.info.version));
    outln!("adapter API: {}", a.api_version);
    outln!("source:      {}", a.origin.kind());
    if let Some(p) = a.origin.path() {
        outln!("path:        {}", visible(&p.display().to_string()));
    }
    outln!("sha256:      {}", a.sha256);
    outln!("formats:");
    for f in &a.info.formats {
        outln!("  {:<28} {}", f.id, visible(&f.description));
        if !f.file_patterns.is_empty() {
            let patterns = f.file_patterns.join(", ");
            outln!("  {:<28} files: {}", "", visible(&patterns));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `adapters sniff FILE`: every adapter's score, and the one chosen.
fn sniff(ctx: &Context, file: &std::path::Path) -> Result<ExitCode, CliError> {
    let set = ctx.adapter_set()?;
    let input = Input::from_path(file);
    let scores = set.scores(&ctx.runtime, &input)?;
    for (id, score) in &scores {
        outln!("{score:>3}  {id}");
    }
    match set.select(&ctx.runtime, &input, None) {
        Ok(a) => outln!("chosen: {}", a.info.id),
        Err(e) => render::warning(&format!(
            "{e}{}",
            e.hint().map(|h| format!("\nhint: {h}")).unwrap_or_default()
        )),
    }
    Ok(ExitCode::SUCCESS)
}

fn add(ctx: &Context, path: &std::path::Path, force: bool) -> Result<ExitCode, CliError> {
    let bytes = fs_err::read(path)
        .map_err(|e| CliError::usage(e).hint("check the path to the `.wasm` file"))?;
    // Loading validates everything: a component, the right world and API
    // version, links, and `describe` answers. It also fills the compile cache.
    let adapter = ctx
        .runtime
        .load(AdapterOrigin::Dev(path.to_path_buf()), &bytes)?;
    // `sniff` must answer too (an empty head is a fair question).
    ctx.runtime.sniff(&adapter, b"", "probe.txt")?;
    let set: AdapterSet = ctx.adapter_set()?;
    let lint = set.lint(&ctx.runtime, &adapter, &crate::adapter_lint::samples())?;
    let claims = crate::adapter_lint::report_lint(&adapter, &lint);
    let id = &adapter.info.id;
    if !claims.is_empty() {
        let claimed = anyhow::anyhow!("adapter `{id}` claims files of other formats: {claims}");
        if !force {
            return Err(CliError::failed(claimed)
                .hint("an adapter's `sniff` must answer below 50 for files that are not its format: fix it")
                .hint("or install it anyway with `--force`: those files stay with their built-in adapters unless an import names it with `--adapter-id`"));
        }
        render::warning(&format!("{claimed}; installed anyway (`--force`)"));
    }
    fs_err::create_dir_all(&ctx.adapters_dir)?;
    let dest = ctx.adapters_dir.join(format!("{id}.wasm"));
    let mut tmp = tempfile::NamedTempFile::new_in(&ctx.adapters_dir)?;
    std::io::Write::write_all(&mut tmp, &bytes)?;
    tmp.persist(&dest).map_err(|e| e.error)?;
    outln!(
        "installed adapter `{id}` {} (API {}) to {}",
        adapter.info.version,
        adapter.api_version,
        dest.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn remove(ctx: &Context, id: &str) -> Result<ExitCode, CliError> {
    let path = ctx.adapters_dir.join(format!("{id}.wasm"));
    if path.exists() {
        fs_err::remove_file(&path)?;
        outln!("removed adapter `{id}` ({})", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let builtin = chatmill_builtin::ADAPTERS.iter().any(|(n, _)| *n == id);
    let hint = if builtin {
        "built-in adapters cannot be removed; install a higher version to shadow one".to_string()
    } else {
        "`chatmill adapters list` shows the installed adapters".to_string()
    };
    Err(CliError::usage(anyhow::anyhow!(
        "no installed adapter `{id}` in {}",
        ctx.adapters_dir.display()
    ))
    .hint(hint))
}
