//! `chatmill reindex`: the index rebuilt from the chunk files (the source of
//! truth), or another store filled from them (`--to chroma`).

use std::process::ExitCode;

use chatmill_index::{ChromaConfig, Indexer};
use chatmill_root::chunk_store::{ChunkStore, reindex_from_files};

use crate::backend;
use crate::cli::ReindexArgs;
use crate::command_error::CliError;
use crate::context::Context;
use crate::out::outln;

pub fn run(ctx: &Context, args: ReindexArgs) -> Result<ExitCode, CliError> {
    let ReindexArgs {
        json,
        to,
        chroma_url,
    } = args;
    let mut cfg = ctx.index.clone();
    let backend = to.unwrap_or(cfg.backend);
    if let Some(url) = chroma_url.as_deref() {
        let mut c = cfg.chroma.take().unwrap_or_else(|| ChromaConfig::new(url));
        c.url = url.to_string();
        cfg.chroma = Some(c);
    }
    let index = chatmill_index::Index::new(
        backend::store(&ctx.root, &cfg, backend)?,
        backend::embedder(&ctx.root, &ctx.embedding)?,
    );
    let mut problems = Vec::new();
    let chunks = ChunkStore::new(&ctx.root).scan(&mut problems)?;
    let on_disk: std::collections::BTreeSet<&str> = chunks
        .iter()
        .map(|s| s.doc.frontmatter.chunk_id.as_str())
        .collect();
    let stale: Vec<String> = index
        .ids()?
        .into_iter()
        .filter(|id| !on_disk.contains(id.as_str()))
        .collect();
    index.remove(&stale)?;
    // Everything again, embedded with the current model: a model change
    // needs every vector redone (replacing the store's vectors wholesale
    // keeps dimensions consistent).
    let all: Vec<String> = index.ids()?.into_iter().collect();
    index.remove(&all)?;
    let indexed = reindex_from_files(&index, &chunks)?;
    // Every record was just written from its file: an index that predated
    // a metadata field (`project`) has it now.
    if index.metadata_outdated()? {
        index.metadata_refreshed()?;
    }
    let total = index.count()?;
    if json {
        outln!(
            "{}",
            serde_json::json!({"indexed": indexed, "removed": stale.len(), "index_total": total, "unreadable": problems.len(), "store": index.store.name(), "embedder": index.embedder.id()})
        );
    } else {
        outln!(
            "indexed {indexed} chunks ({} stale entries removed) into `{}` with `{}`; {total} in the index",
            stale.len(),
            index.store.name(),
            index.embedder.id()
        );
        for p in &problems {
            crate::render::warning(&format!("{}: {}", p.subject, p.message));
        }
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
