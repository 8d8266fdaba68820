//! The chunk files of a root as a store: scanning them, finding them by
//! chunk id, removing them, and indexing them again. The files are the
//! source of truth; the manifest and the index are derived from them.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chatmill_index::{ChunkRecord, IndexError, Indexer};

use crate::chunk::ChunkDoc;
use crate::problem::Problem;
use crate::record::index_record;

/// Chunk records indexed at once when the index is rebuilt from files.
const BATCH: usize = 256;

/// A chunk file that parsed.
pub struct Scanned {
    /// Relative to the folder.
    pub rel: String,
    pub text: String,
    pub doc: ChunkDoc,
}

impl Scanned {
    /// What the index gets for it.
    pub fn record(&self) -> ChunkRecord {
        index_record(&self.doc, &self.text, &self.rel)
    }
}

/// The folder of chunk files.
#[derive(Debug, Clone, Copy)]
pub struct ChunkStore<'d> {
    dir: &'d Path,
}

impl<'d> ChunkStore<'d> {
    pub fn new(dir: &'d Path) -> Self {
        Self { dir }
    }

    /// A batch-imported chunk's file name: `<chunk_id>.md`.
    pub fn batch_name(chunk_id: &str) -> String {
        format!("{chunk_id}.md")
    }

    /// Every chunk file (Markdown that opens with a YAML frontmatter
    /// holding a `chunk_id`; other Markdown is not ours and is left alone),
    /// sorted by name. Files that cannot be read or parsed are `problems`.
    pub fn scan(&self, problems: &mut Vec<Problem>) -> std::io::Result<Vec<Scanned>> {
        let mut paths: Vec<PathBuf> = fs_err::read_dir(self.dir)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "md"))
            .collect();
        paths.sort();
        let mut out = Vec::new();
        for path in paths {
            let rel = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let problem = |message: String| Problem {
                kind: "unparsable",
                subject: rel.clone(),
                message,
            };
            let text = match fs_err::read_to_string(&path) {
                Ok(t) => t,
                Err(e) => {
                    problems.push(problem(format!("cannot read it: {e}")));
                    continue;
                }
            };
            let ours = text.starts_with("---\n")
                && text
                    .split("\n---\n")
                    .next()
                    .is_some_and(|fm| fm.contains("\nchunk_id:"));
            if !ours {
                continue;
            }
            match ChunkDoc::parse(&text) {
                Ok(doc) => out.push(Scanned { rel, text, doc }),
                Err(e) => problems.push(problem(e.to_string())),
            }
        }
        Ok(out)
    }

    /// The chunk files of `ids`, one at a time: a batch chunk by its name,
    /// any other (inline chunks have dated names) by a scan of the folder,
    /// made once. An id no file has is logged and left out.
    pub fn find<'i>(
        &self,
        ids: impl IntoIterator<Item = &'i str> + 'i,
    ) -> impl Iterator<Item = Scanned> + 'i
    where
        'd: 'i,
    {
        let store = *self;
        let mut by_id: Option<BTreeMap<String, Scanned>> = None;
        ids.into_iter().filter_map(move |id| {
            let rel = Self::batch_name(id);
            let named = fs_err::read_to_string(store.dir.join(&rel))
                .ok()
                .and_then(|text| {
                    let doc = ChunkDoc::parse(&text).ok()?;
                    Some(Scanned { rel, text, doc })
                });
            let found = named.or_else(|| {
                let map = by_id.get_or_insert_with(|| {
                    let scanned = store.scan(&mut Vec::new()).unwrap_or_default();
                    let by = |s: Scanned| (s.doc.frontmatter.chunk_id.clone(), s);
                    scanned.into_iter().map(by).collect()
                });
                map.remove(id)
            });
            if found.is_none() {
                // `chatmill verify` reports manifest entries without a file.
                tracing::warn!("chunk `{id}` is in the manifest but no chunk file has it");
            }
            found
        })
    }

    /// Removes the batch chunk files of `ids` (one already gone is fine).
    pub fn remove(&self, ids: &[String]) -> std::io::Result<()> {
        for id in ids {
            match fs_err::remove_file(self.dir.join(Self::batch_name(id))) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }
}

/// Indexes `chunks` from their files, in batches: what import's catch-up,
/// `verify --repair` and `reindex` share. Returns how many it indexed.
pub fn reindex_from_files<S: Borrow<Scanned>>(
    indexer: &dyn Indexer,
    chunks: impl IntoIterator<Item = S>,
) -> Result<u32, IndexError> {
    let mut batch: Vec<ChunkRecord> = Vec::with_capacity(BATCH);
    let mut done = 0u32;
    for s in chunks {
        batch.push(s.borrow().record());
        if batch.len() == BATCH {
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

/// Rewrites the metadata of `chunks` in the index from their files, in
/// batches, and marks the index current: how an index written before it
/// kept every field (`project`) gets them, its vectors and keyword index
/// left as they are. What import's catch-up and `verify --repair` share.
/// Returns how many chunks it refreshed.
pub fn refresh_metadata_from_files<S: Borrow<Scanned>>(
    indexer: &dyn Indexer,
    chunks: impl IntoIterator<Item = S>,
) -> Result<usize, IndexError> {
    let mut batch: Vec<ChunkRecord> = Vec::with_capacity(BATCH);
    let mut done = 0;
    for s in chunks {
        batch.push(s.borrow().record());
        if batch.len() == BATCH {
            indexer.refresh_metadata(&batch)?;
            done += batch.len();
            batch.clear();
        }
    }
    indexer.refresh_metadata(&batch)?;
    indexer.metadata_refreshed()?;
    Ok(done + batch.len())
}
