//! The options of an import of some inputs into the context's root, as
//! `import`, the Claude Code hook and `watch` start from.

use chatmill_chunking::chunker::ChunkerConfig;
use chatmill_chunking::render::RenderOptions;
use chatmill_pipeline::import::ImportOptions;
use chatmill_pipeline::processor::ProcessorConfig;

use crate::context::Context;

/// An import of `inputs` into the root, with the defaults every command
/// that imports starts from.
pub fn options(ctx: &Context, inputs: Vec<std::path::PathBuf>) -> ImportOptions {
    ImportOptions {
        root: ctx.root.clone(),
        inputs,
        adapter_id: None,
        processor: ProcessorConfig {
            naming: Default::default(),
            out_dir: ctx.root.clone(),
            agent_id: "external".into(),
            render: RenderOptions::default(),
            chunker: ChunkerConfig::default(),
            redaction: None,
        },
        reprocess: None,
        live: false,
    }
}
