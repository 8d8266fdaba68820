//! How a processor is set up: chunk file naming, rendering and chunking
//! options, the agent chunks are written for.

use std::path::PathBuf;

use chatmill_chunking::chunker::ChunkerConfig;
use chatmill_chunking::render::RenderOptions;

/// How chunk files are named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Naming {
    /// `<chunk_id>.md` (batch import).
    #[default]
    ChunkId,
    /// The spec's inline name:
    /// `YYYY-MM-DD_HH-MM_session-<short-id>_pair-<NNN>_<topic-slug>.md`.
    Inline,
}

#[derive(Debug, Clone)]
pub struct ProcessorConfig {
    pub naming: Naming,
    /// Where chunk files are written.
    pub out_dir: PathBuf,
    /// `external` for imports, the agent's id inline.
    pub agent_id: String,
    pub render: RenderOptions,
    pub chunker: ChunkerConfig,
    /// The redaction rule-set version the conversations were redacted
    /// with, written in each chunk's frontmatter (`None`: not redacted). An
    /// import sets it from its services.
    pub redaction: Option<u32>,
}

/// Lowercase ASCII letters and digits joined by `-`, at most `max` chars.
pub fn slug(s: &str, max: usize) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= max {
            break;
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "x".into()
    } else {
        out.to_string()
    }
}
