//! `chatmill embed`: the embedding stage on its own — the vectors of the
//! chunks an import stored without them (`import --no-wait`, or an import
//! that was stopped while it embedded). `import` runs the same stage after
//! its keyword stage unless `--no-wait`.

use crate::out::outln;
use std::io::IsTerminal;
use std::process::ExitCode;

use chatmill_index::Index;

use crate::cli::EmbedArgs;
use crate::command_error::CliError;
use crate::context::Context;

/// How often a server (`serve`, `mcp`) looks for chunks waiting for
/// vectors.
pub(super) const FILL_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

pub fn run(ctx: &Context, args: EmbedArgs) -> Result<ExitCode, CliError> {
    let index = ctx.index()?;
    let made = fill(&index)?;
    let waiting = index.pending_count()?;
    if args.json {
        outln!(
            "{}",
            serde_json::json!({"vectors_made": made, "vectors_pending": waiting, "embedder": index.embedder.id()})
        );
    } else if made == 0 {
        outln!("no chunk waits for its vector");
    } else {
        outln!("made {made} vectors with `{}`", index.embedder.id());
    }
    Ok(ExitCode::SUCCESS)
}

/// Makes the vectors of every chunk waiting for one, with a progress bar
/// on a terminal (stderr); how many it made. Stopped at any moment, it
/// loses nothing: the next fill goes on from the last batch written.
pub(super) fn fill(index: &Index) -> Result<u64, CliError> {
    let total = index.pending_count()?;
    if total == 0 {
        return Ok(0);
    }
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} vectors  {per_sec}  eta {eta}",
            )
            .expect("a valid template"),
        );
        bar
    });
    tracing::info!("making the vectors of {total} chunks");
    let made = index.fill_pending(&mut |done| {
        if let Some(bar) = &bar {
            bar.set_position(done);
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    Ok(made?)
}
