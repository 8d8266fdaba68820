//! Bringing the index up to the manifest: the chunks the manifest has and
//! the index lacks (what a killed run or a dead index left), read back from
//! their chunk files.

use std::collections::BTreeSet;

use chatmill_index::Indexer;
use chatmill_root::chunk_store::{ChunkStore, refresh_metadata_from_files, reindex_from_files};
use chatmill_root::manifest::Manifest;

use super::index_failure::IndexFailure;
use super::summary::Summary;

/// [`catch_up`], counted into `summary` or recorded as the index's failure.
pub(super) fn catch_up_into(
    indexer: &dyn Indexer,
    manifest: &Manifest,
    out_dir: &std::path::Path,
    summary: &mut Summary,
    failure: &mut IndexFailure,
) {
    let refreshed = refresh_metadata(indexer, manifest, out_dir);
    match refreshed.and_then(|()| catch_up(indexer, manifest, out_dir)) {
        Ok(n) => summary.chunks_indexed += n,
        Err(e) => *failure = Some((0, e)),
    }
}

/// Rewrites the metadata of an index written before it kept every field
/// (`project`), from the chunk files, once: vectors and keyword index stay.
fn refresh_metadata(
    indexer: &dyn Indexer,
    manifest: &Manifest,
    out_dir: &std::path::Path,
) -> Result<(), chatmill_index::IndexError> {
    if !indexer.metadata_outdated()? {
        return Ok(());
    }
    tracing::info!("the index predates `project`: refreshing its metadata from the chunk files");
    let files = ChunkStore::new(out_dir).find(manifest.chunk_ids());
    refresh_metadata_from_files(indexer, files).map(drop)
}

/// Indexes the chunks the manifest has and the index lacks (a killed run,
/// an index that was down). Returns how many it indexed.
fn catch_up(
    indexer: &dyn Indexer,
    manifest: &Manifest,
    out_dir: &std::path::Path,
) -> Result<u32, chatmill_index::IndexError> {
    let have = indexer.ids()?;
    let missing: BTreeSet<&str> = manifest
        .chunk_ids()
        .into_iter()
        .filter(|id| !have.contains(*id))
        .collect();
    reindex_from_files(indexer, ChunkStore::new(out_dir).find(missing))
}
