//! Vectors made for chunks that wait for one: by `embed`, after an import,
//! and every [`FILL_EVERY`] in a server (`serve`, `mcp`).

use std::io::IsTerminal;

use chatmill_index::Index;

use crate::command_error::CliError;

/// How often a server (`serve`, `mcp`) looks for chunks waiting for
/// vectors.
pub const FILL_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// Makes the vectors of every chunk waiting for one, with a progress bar
/// on a terminal (stderr); how many it made. Stopped at any moment, it
/// loses nothing: the next fill goes on from the last batch written.
pub fn fill(index: &Index) -> Result<u64, CliError> {
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
