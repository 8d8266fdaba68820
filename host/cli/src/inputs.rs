//! The files a command reads: folders walked, paths checked.

use crate::command_error::CliError;

/// Every file under `inputs` (folders walked recursively, sorted).
pub fn expand_inputs(inputs: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>, CliError> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<_> = fs_err::read_dir(dir)?.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out)?;
            } else {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for input in inputs {
        if input.is_dir() {
            walk(input, &mut out)?;
        } else if input.exists() {
            out.push(input.clone());
        } else {
            return Err(
                CliError::usage(anyhow::anyhow!("`{}` does not exist", input.display()))
                    .hint("check the path"),
            );
        }
    }
    Ok(out)
}
