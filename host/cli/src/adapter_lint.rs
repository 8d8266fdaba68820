//! Adapters as the user names and adds them: looked up by id, sniffed
//! against the first-party samples, and what that lint found said.

use chatmill_runtime::{AdapterSet, Lint, LoadedAdapter, Sample};

use crate::command_error::CliError;
use crate::render;

/// The adapter with the id the user named (`--adapter-id`, `adapters info`).
pub fn named_adapter<'s>(set: &'s AdapterSet, id: &str) -> Result<&'s LoadedAdapter, CliError> {
    set.get(id).ok_or_else(|| {
        CliError::usage(anyhow::anyhow!("no adapter has the id `{id}`"))
            .hint(format!("available adapters: {}", set.ids().join(", ")))
    })
}

/// The first-party samples every new adapter is sniffed against.
pub fn samples() -> Vec<Sample> {
    chatmill_builtin::SAMPLES
        .iter()
        .map(|s| Sample {
            adapter: s.adapter,
            format: s.format,
            file_name: s.file_name,
            bytes: s.bytes,
        })
        .collect()
}

/// Reports what [`AdapterSet::lint`] found as warnings and notes; returns
/// the claims on first-party formats as one line (empty: none).
pub fn report_lint(adapter: &LoadedAdapter, lint: &Lint) -> String {
    let id = &adapter.info.id;
    for (format, other) in &lint.shared_formats {
        render::warning(&format!(
            "adapter `{id}` declares the format id `{format}`, which adapter `{other}` declares too"
        ));
    }
    if let Some(builtin) = &lint.replaces {
        render::notice(&format!(
            "adapter `{id}` {} carries the id of the built-in adapter `{builtin}`: it replaces it when its version is higher",
            adapter.info.version
        ));
    }
    let mut listed: Vec<String> = lint
        .claims
        .iter()
        .take(3)
        .map(|(format, score)| format!("`{format}` ({score}/100)"))
        .collect();
    if lint.claims.len() > 3 {
        listed.push(format!("and {} more", lint.claims.len() - 3));
    }
    listed.join(", ")
}
