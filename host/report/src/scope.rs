//! Which chunks a report reads: every chunk file of the root, or the ones
//! the latest import added.

use chatmill_root::manifest::Manifest;
use chatmill_root::root::Root;
use serde::Serialize;

use crate::error::ReportError;

/// Which chunks a report reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Every chunk file of the root.
    All,
    /// The chunks the latest import added (by the manifest's `run`).
    LastRun,
}

/// The chunk file names of `scope` in `root`, and the inputs they come
/// from.
pub(crate) fn select(
    root: &Root,
    manifest: &Manifest,
    scope: Scope,
) -> Result<(Vec<String>, Vec<String>), ReportError> {
    match scope {
        Scope::All => {
            let list = |source| ReportError::List {
                path: root.chunks().to_path_buf(),
                source,
            };
            let mut names: Vec<String> = fs_err::read_dir(root.chunks())
                .map_err(list)?
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with(".md") && !n.starts_with('.'))
                .collect();
            names.sort();
            Ok((names, manifest.files.keys().cloned().collect()))
        }
        Scope::LastRun => {
            let last = manifest.files.values().filter_map(|r| r.run).max();
            let inputs: Vec<(&String, _)> = manifest
                .files
                .iter()
                .filter(|(_, r)| last.is_some() && r.run == last)
                .collect();
            let names = inputs
                .iter()
                .flat_map(|(_, r)| {
                    let skip = r.chunk_ids.len().saturating_sub(r.run_chunks as usize);
                    r.chunk_ids[skip..].iter().map(|id| format!("{id}.md"))
                })
                .filter(|n| root.chunks().join(n).is_file())
                .collect();
            Ok((names, inputs.into_iter().map(|(k, _)| k.clone()).collect()))
        }
    }
}
