//! Bringing the index up to the manifest: the chunks the manifest has and
//! the index lacks (what a killed run or a dead index left), read back from
//! their chunk files.

use std::collections::BTreeSet;

use chatmill_index::{ChunkRecord, Indexer};

use super::{IndexFailure, Summary};
use crate::chunk::ChunkDoc;
use crate::manifest::Manifest;
use crate::record::index_record;

/// [`catch_up`], counted into `summary` or recorded as the index's failure.
pub(super) fn catch_up_into(
    indexer: &dyn Indexer,
    manifest: &Manifest,
    out_dir: &std::path::Path,
    summary: &mut Summary,
    failure: &mut IndexFailure,
) {
    match catch_up(indexer, manifest, out_dir) {
        Ok(n) => summary.chunks_indexed += n,
        Err(e) => *failure = Some((0, e)),
    }
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
    let mut batch: Vec<ChunkRecord> = Vec::new();
    let mut done = 0u32;
    // Batch chunks are `<chunk_id>.md`; inline ones have descriptive names,
    // found by reading the frontmatter of every chunk file (once).
    let mut by_id: Option<std::collections::BTreeMap<String, crate::verify::Scanned>> = None;
    for id in missing {
        let rel = format!("{id}.md");
        let found = match fs_err::read_to_string(out_dir.join(&rel)) {
            Ok(text) => ChunkDoc::parse(&text)
                .ok()
                .map(|doc| index_record(&doc, &text, &rel)),
            Err(_) => {
                let map = by_id.get_or_insert_with(|| {
                    crate::verify::scan(out_dir, &mut Vec::new())
                        .unwrap_or_default()
                        .into_iter()
                        .map(|s| (s.doc.frontmatter.chunk_id.clone(), s))
                        .collect()
                });
                map.get(id).map(|s| index_record(&s.doc, &s.text, &s.rel))
            }
        };
        let Some(record) = found else {
            // `chatmill verify` reports manifest entries without a file.
            tracing::warn!("chunk `{id}` is in the manifest but no chunk file has it");
            continue;
        };
        batch.push(record);
        if batch.len() >= 256 {
            indexer.index(&batch)?;
            done += batch.len() as u32;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        indexer.index(&batch)?;
        done += batch.len() as u32;
    }
    Ok(done)
}
