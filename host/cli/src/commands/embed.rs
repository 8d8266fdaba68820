//! `chatmill embed`: the embedding stage on its own — the vectors of the
//! chunks an import stored without them (`import --no-wait`, or an import
//! that was stopped while it embedded). `import` runs the same stage after
//! its keyword stage unless `--no-wait`.

use std::process::ExitCode;

use crate::cli::EmbedArgs;
use crate::command_error::CliError;
use crate::context::Context;
use crate::out::outln;

pub fn run(ctx: &Context, args: EmbedArgs) -> Result<ExitCode, CliError> {
    let index = ctx.index()?;
    let made = crate::vectors::fill(&index)?;
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
