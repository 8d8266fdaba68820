//! Batch import: inventory the inputs against the manifest, parse each new
//! or changed file with its adapter, process its conversations into chunk
//! files, and record the outcome per file. One bad file never stops the
//! others; the manifest is saved after every file, so a killed run resumes
//! where it stopped and converges to the same result.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use crate::lock::RootLock;

use chatmill_index::{ChunkRecord, Indexer};
use chatmill_runtime::{
    AdapterSet, Adjustments, Declined, Input, LoadedAdapter, Runtime, SelectError,
};
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::chunk::ChunkDoc;
use crate::header::HeaderWriter;
use crate::inventory::{self, Item};
use crate::manifest::{AdapterRef, FileRecord, FileStatus, MANIFEST_FILE, Manifest, ManifestError};
use crate::processor::{Prepared, Processor, ProcessorConfig};
use crate::record::index_record;

#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The root: chunk files and the manifest live here; `raw/` is the
    /// default input.
    pub root: PathBuf,
    /// Files or folders; empty means `ROOT/raw`.
    pub inputs: Vec<PathBuf>,
    /// Use this adapter for every input instead of sniffing.
    pub format: Option<String>,
    pub processor: ProcessorConfig,
}

/// What happened to one skipped or failed input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileProblem {
    pub file: String,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Whether running again may help (time limits, I/O).
    pub retryable: bool,
}

/// The processing summary the spec asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub files_processed: u32,
    /// Inputs already in the manifest with the same content.
    pub files_unchanged: u32,
    pub chunks_written: u32,
    pub duplicates_skipped: u32,
    pub mechanical_excluded: u32,
    pub files_skipped: Vec<FileProblem>,
    pub errors: Vec<FileProblem>,
    /// Inputs imported with something the user should know: values the
    /// trust boundary dropped or cut, an adapter that declined the file.
    pub warnings: Vec<FileProblem>,
    /// Chunks the manifest knows after the run.
    pub chunks_total: u32,
    /// Chunks handed to the index this run (new ones, and earlier ones the
    /// index was missing).
    pub chunks_indexed: u32,
    /// Chunks in the index after the run (`None` without an index, or when
    /// it could not be counted).
    pub index_total: Option<u64>,
    /// Chunks written with a stand-in header because the header model
    /// failed; queued for `chatmill backfill`.
    pub headers_pending: u32,
}

/// What an import runs with.
pub struct Services<'a> {
    pub runtime: &'a Runtime,
    pub adapters: &'a AdapterSet,
    pub header: &'a dyn HeaderWriter,
    /// `None`: chunk files and manifest only.
    pub indexer: Option<&'a dyn Indexer>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("cannot read input `{path}`: {source}")]
    Inventory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Lock(#[from] crate::lock::LockError),
    #[error("cannot create the root `{path}`: {source}")]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Progress events, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    Inventory {
        files: usize,
    },
    File {
        index: usize,
        of: usize,
        name: &'a str,
    },
}

/// Runs one import.
pub fn run(
    svc: &Services<'_>,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Summary, ImportError> {
    let out_dir = &opts.processor.out_dir;
    fs_err::create_dir_all(out_dir).map_err(|source| ImportError::Root {
        path: out_dir.clone(),
        source,
    })?;
    // A killed run may have left temp files (never half chunk files: those
    // are renamed into place whole). Swept under the root lock: a running
    // server (or another import) writes its temp files under it, and one
    // swept mid-write made its rename fail.
    {
        let _lock = RootLock::acquire(&opts.root, Duration::from_secs(600))?;
        inventory::sweep_temp_files(out_dir);
        inventory::sweep_temp_files(&opts.root);
    }
    let manifest_path = opts.root.join(MANIFEST_FILE);
    let mut manifest = Manifest::load(&manifest_path)?;
    let inputs = if opts.inputs.is_empty() {
        let raw = opts.root.join("raw");
        if raw.exists() { vec![raw] } else { Vec::new() }
    } else {
        for input in &opts.inputs {
            if !input.exists() {
                return Err(ImportError::Inventory {
                    path: input.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "no such file or folder",
                    ),
                });
            }
        }
        opts.inputs.clone()
    };
    let (items, broken) = inventory::collect(&inputs).map_err(|e| ImportError::Inventory {
        path: e.path.clone(),
        source: std::io::Error::other(e.message),
    })?;
    let items = without_own_files(items, &opts.root, out_dir);
    let mut summary = Summary::default();
    let mut index_failure: IndexFailure = None;
    // The index takes the chunks the manifest has and it lacks (a killed
    // run, an index that was down) before the run adds its own: what there
    // is to compare is then only what earlier runs left (nothing, in a first
    // import), and the run does not end on a pass over every id.
    if let Some(indexer) = svc.indexer {
        catch_up_into(
            indexer,
            &manifest,
            out_dir,
            &mut summary,
            &mut index_failure,
        );
    }
    for b in broken {
        summary.errors.push(FileProblem {
            file: b.path.display().to_string(),
            reason: b.message,
            hint: Some("the archive is damaged or incomplete; download the export again".into()),
            retryable: false,
        });
    }
    progress(Progress::Inventory { files: items.len() });

    let mut stamp = file_stamp(&manifest_path);
    // Whether another writer changed the manifest during the run.
    let mut others_wrote = false;
    let mut processor = Processor::new(opts.processor.clone(), svc.header, &manifest);
    let total = items.len();
    for (index, item) in items.iter().enumerate() {
        progress(Progress::File {
            index,
            of: total,
            name: &item.key,
        });
        // One writer at a time on the root (an inline server may be
        // running): the lock per input file, and the manifest re-read when
        // someone else wrote it meanwhile.
        let _lock = RootLock::acquire(&opts.root, Duration::from_secs(600))?;
        let now = file_stamp(&manifest_path);
        if now != stamp {
            others_wrote = true;
            manifest = Manifest::load(&manifest_path)?;
            processor = Processor::new(opts.processor.clone(), svc.header, &manifest);
        }
        let mut work = Work {
            svc,
            opts,
            processor: &mut processor,
            manifest: &mut manifest,
            summary: &mut summary,
            index_failure: &mut index_failure,
        };
        if let Some(companion) = import_one(&mut work, item) {
            import_one(&mut work, companion);
        }
        manifest.save(&manifest_path)?;
        stamp = file_stamp(&manifest_path);
    }
    summary.chunks_total = manifest.chunk_count() as u32;
    if let Some(indexer) = svc.indexer {
        // Another writer's chunks that its index left out (an inline
        // server whose index failed) are taken in by this run, as before
        // the catch-up moved to the start.
        if others_wrote && index_failure.is_none() {
            catch_up_into(
                indexer,
                &manifest,
                out_dir,
                &mut summary,
                &mut index_failure,
            );
        }
        summary.index_total = indexer.count().ok();
        if let Some((n, e)) = index_failure {
            let what = if n > 0 {
                format!("{n} new chunks could not be indexed: {e}")
            } else {
                format!("the index could not be brought up to date: {e}")
            };
            summary.errors.push(FileProblem {
                file: "(index)".into(),
                reason: what,
                hint: Some(e.hint().unwrap_or_else(|| {
                    "the chunk files are written; run `chatmill import` again (it indexes what the index is missing) or `chatmill reindex`".into()
                })),
                retryable: true,
            });
        }
    }
    Ok(summary)
}

/// `items` without the root's own files — the manifest, `.chatmill/`, and
/// the chunk files — which an input folder holds when it contains the root
/// (`chatmill import ~/Documents/conversations`): they are never inputs,
/// and listing them as unrecognized inputs was noise.
fn without_own_files(
    items: Vec<Item>,
    root: &std::path::Path,
    out_dir: &std::path::Path,
) -> Vec<Item> {
    let real = |p: &std::path::Path| std::fs::canonicalize(p).ok();
    let (Some(root), Some(out_dir)) = (real(root), real(out_dir)) else {
        return items;
    };
    let state = root.join(".chatmill");
    let manifest = root.join(MANIFEST_FILE);
    items
        .into_iter()
        .filter(|item| {
            let inventory::Source::File(path) = &item.source else {
                return true;
            };
            let Some(p) = real(path) else {
                return true;
            };
            let own = p.starts_with(&state)
                || p == manifest
                || (p.parent() == Some(out_dir.as_path())
                    && p.extension().is_some_and(|e| e == "md")
                    && fs_err::read_to_string(&p).is_ok_and(|t| ChunkDoc::parse(&t).is_ok()));
            if own {
                tracing::debug!("not an input (the root's own file): {}", p.display());
            }
            !own
        })
        .collect()
}

/// [`catch_up`], counted into `summary` or recorded as the index's failure.
fn catch_up_into(
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

fn file_stamp(path: &std::path::Path) -> Option<(std::time::SystemTime, u64)> {
    let m = fs_err::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Pairs being chunked at once, at most (and one conversation, however
/// long): what bounds the memory of a file's parsed conversations.
const IN_FLIGHT_PAIRS: usize = 512;

/// Chunks handed to the index at once.
const INDEX_BATCH: usize = 256;

/// A failed index call: how many chunks it left out, and why.
type IndexFailure = Option<(u32, chatmill_index::IndexError)>;

/// `prepared` with its chunks' vectors when the index embeds in no time
/// (the lexical stand-in): made here, on the thread that chunked them, so
/// that the index thread only writes.
fn embedded_here(mut prepared: Prepared, indexer: Option<&dyn Indexer>) -> Prepared {
    let written = prepared.written_mut();
    let Some(indexer) = indexer.filter(|_| !written.is_empty()) else {
        return prepared;
    };
    let texts: Vec<&str> = written
        .iter()
        .map(|w| w.record.embed_text.as_str())
        .collect();
    if let Some(vectors) = indexer
        .embed_here(&texts)
        .filter(|v| v.len() == written.len())
    {
        for (w, v) in written.iter_mut().zip(vectors) {
            w.vector = Some(v);
        }
    }
    prepared
}

/// What an index thread did: chunks indexed, and those it left out with
/// the last error.
#[derive(Default)]
struct Indexed {
    chunks: u32,
    failure: IndexFailure,
}

/// Chunks on their way to the index, with the vectors made beside their
/// chunking when every one of them has one.
#[derive(Default)]
struct Batch {
    records: Vec<ChunkRecord>,
    vectors: Vec<Vec<f32>>,
}

impl Batch {
    fn push(&mut self, record: ChunkRecord, vector: Option<Vec<f32>>) {
        match vector {
            Some(v) if self.vectors.len() == self.records.len() => self.vectors.push(v),
            // One without: the index embeds them all.
            _ => self.vectors.clear(),
        }
        self.records.push(record);
    }

    fn len(&self) -> usize {
        self.records.len()
    }
}

impl Indexed {
    fn add(&mut self, indexer: &dyn Indexer, batch: &Batch) {
        let done = if batch.vectors.len() == batch.records.len() {
            indexer.index_with(&batch.records, &batch.vectors)
        } else {
            indexer.index(&batch.records)
        };
        match done {
            Ok(()) => self.chunks += batch.len() as u32,
            Err(e) => {
                let n = batch.len() as u32 + self.failure.as_ref().map_or(0, |f| f.0);
                self.failure = Some((n, e));
            }
        }
    }

    fn merge_into(self, summary: &mut Summary, failure: &mut IndexFailure) {
        summary.chunks_indexed += self.chunks;
        if let Some((n, e)) = self.failure {
            let before = failure.as_ref().map_or(0, |f| f.0);
            *failure = Some((before + n, e));
        }
    }
}

/// Processes one input — with its batch companion, when the two can be
/// parsed as one — unless the manifest already has it with the same
/// content; indexes its new chunks and records it in the manifest (the
/// caller saves it). Returns the companion when it must be imported on its
/// own.
fn import_one<'i>(w: &mut Work<'_, '_>, item: &'i Item) -> Option<&'i Item> {
    if item.companion.is_none() && !w.manifest.files.contains_key(&item.key) {
        return import_new(w, item);
    }
    let (sha256, size) = match item.hash() {
        Ok(h) => h,
        Err(e) => {
            unreadable(w, &item.key, &e);
            return item.companion.as_deref();
        }
    };
    let manifest = &*w.manifest;
    // A companion that cannot be read is imported (and reported) alone.
    let companion = match item.companion.as_deref() {
        Some(c) => match c.hash() {
            Ok(h) => Some((c, h)),
            Err(_) => {
                if unchanged(manifest, &item.key, &sha256) {
                    w.summary.files_unchanged += 1;
                } else {
                    import_parsed(w, ((item, Digest::Known(sha256, size)), None));
                }
                return Some(c);
            }
        },
        None => None,
    };
    if unchanged(manifest, &item.key, &sha256) {
        let joined = |key: &str| manifest.files.get(key).and_then(|r| r.joined.as_deref());
        match &companion {
            None => {
                w.summary.files_unchanged += 1;
                return None;
            }
            Some((c, h)) if unchanged(manifest, &c.key, &h.0) => {
                if joined(&item.key) == Some(c.key.as_str()) {
                    w.summary.files_unchanged += 2;
                    return None;
                }
                if joined(&c.key).is_none() {
                    // Imported on its own before (another adapter reads
                    // it): so again.
                    w.summary.files_unchanged += 1;
                    return Some(c);
                }
            }
            // New or changed results: read again with the requests.
            Some(_) => {}
        }
    }
    import_parsed(w, ((item, Digest::Known(sha256, size)), companion))
}

/// Imports an input the manifest does not have. Its hash decides nothing
/// (it is read in any case), so it is not waited for: a file is hashed on a
/// thread of its own beside the parse (a 160 MB export's hash was a tenth
/// of a second with one core idle), a zip entry while it is copied out
/// (it was inflated twice, once for the hash and once for the copy).
fn import_new<'i>(w: &mut Work<'_, '_>, item: &'i Item) -> Option<&'i Item> {
    let inventory::Source::File(path) = &item.source else {
        return import_parsed(w, ((item, Digest::InCopy), None));
    };
    // Opened, not only listed: a file that cannot be read is reported as
    // it was when its hash came first.
    let listed = match fs_err::File::open(path).and_then(|f| f.metadata()) {
        Ok(m) => (m.len(), m.modified().ok()),
        Err(e) => {
            unreadable(w, &item.key, &e);
            return None;
        }
    };
    std::thread::scope(|s| {
        let hashing = Hashing {
            handle: s.spawn(|| item.hash()),
            path,
            listed,
        };
        import_parsed(w, ((item, Digest::Beside(hashing)), None))
    })
}

/// A file's hash being read beside its parse, and the file's size and
/// modification time as the import found it.
struct Hashing<'s> {
    handle: std::thread::ScopedJoinHandle<'s, std::io::Result<(String, u64)>>,
    path: &'s std::path::Path,
    listed: (u64, Option<std::time::SystemTime>),
}

impl Hashing<'_> {
    /// The file's content hash and size, unless the file changed while it
    /// was read (a session still being written: the hash could cover
    /// bytes the parse did not see), which leaves the hash empty so that
    /// the next import reads the file again.
    fn finish(self) -> std::io::Result<(String, u64)> {
        let (sha256, size) = self
            .handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        let now = fs_err::metadata(self.path)
            .ok()
            .map(|m| (m.len(), m.modified().ok()));
        if size == self.listed.0 && now == Some(self.listed) {
            Ok((sha256, size))
        } else {
            tracing::info!(
                "`{}` changed while it was read: it is read again by the next import",
                self.path.display()
            );
            Ok((String::new(), size))
        }
    }
}

/// Reports that the input `key` cannot be read (`e`); a later run may
/// read it.
fn unreadable(w: &mut Work<'_, '_>, key: &str, e: &dyn std::fmt::Display) {
    w.summary.errors.push(FileProblem {
        file: key.to_string(),
        reason: format!("cannot read it: {e}"),
        hint: None,
        retryable: true,
    });
}

/// An input's content hash and size, as its import gets them.
enum Digest<'s> {
    /// Read before: the manifest compared it.
    Known(String, u64),
    /// Being read on another thread.
    Beside(Hashing<'s>),
    /// Read as the input is copied out (a zip entry).
    InCopy,
}

/// Records `record` for `key` with its content hash, once that is read
/// (`hashing`). An input whose hash could not be read is recorded without
/// one, so the next import reads it again (its chunks, already written,
/// are not written twice); that it could not be read is reported unless
/// its import reported a failure already.
fn record_file(
    w: &mut Work<'_, '_>,
    key: &str,
    mut record: FileRecord,
    hashing: Option<Hashing<'_>>,
) {
    match hashing.map(Hashing::finish) {
        None => {}
        Some(Ok((sha256, size))) => (record.sha256, record.size) = (sha256, size),
        Some(Err(e)) => {
            record.sha256.clear();
            if record.status == FileStatus::Processed {
                unreadable(w, key, &e);
            }
        }
    }
    w.manifest.files.insert(key.to_string(), record);
}

/// What importing one input works on and reports to.
struct Work<'r, 's> {
    svc: &'r Services<'s>,
    opts: &'r ImportOptions,
    processor: &'r mut Processor<'s>,
    manifest: &'r mut Manifest,
    summary: &'r mut Summary,
    index_failure: &'r mut IndexFailure,
}

/// An input with its content hash and size, and its companion with theirs.
type Hashed<'i, 's> = ((&'i Item, Digest<'s>), Option<(&'i Item, (String, u64))>);

/// Whether the manifest has `key` processed with this content.
fn unchanged(manifest: &Manifest, key: &str, sha256: &str) -> bool {
    manifest
        .files
        .get(key)
        .is_some_and(|rec| rec.sha256 == sha256 && rec.status != FileStatus::Failed)
}

/// The input an adapter reads for `item` (`size` bytes, at `local`): it
/// sees the entry's own name (session ids, shard numbers come from it), and
/// messages name the input as the user knows it.
fn file_input(item: &Item, size: u64, local: &inventory::Materialized) -> Input {
    let path = local.path.clone();
    Input::from_opener(
        item.file_name.clone(),
        item.key.clone(),
        Some(size),
        move || Ok(Box::new(fs_err::File::open(&path)?) as Box<dyn std::io::Read + Send>),
    )
}

/// A batch's requests file followed by its results file, as one input
/// (one line break between them, the second file's UTF-8 BOM dropped).
fn joined_reader(
    first: &std::path::Path,
    second: &std::path::Path,
) -> std::io::Result<Box<dyn std::io::Read + Send>> {
    use std::io::Read as _;
    let a = fs_err::File::open(first)?;
    let mut b = fs_err::File::open(second)?;
    let mut head = [0u8; 3];
    let mut n = 0;
    while n < head.len() {
        match b.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    let head = if head[..n] == [0xEF, 0xBB, 0xBF] {
        Vec::new()
    } else {
        head[..n].to_vec()
    };
    Ok(Box::new(
        a.chain(&b"\n"[..])
            .chain(std::io::Cursor::new(head))
            .chain(b),
    ))
}

/// Takes the chunks the file `key` produced earlier out of the chunk files,
/// the index and the manifest (its conversations are then read afresh):
/// its requests were imported before their results arrived, and the joined
/// parse writes them again with their answers.
fn forget_chunks_of(
    svc: &Services<'_>,
    opts: &ImportOptions,
    key: &str,
    manifest: &mut Manifest,
) -> Result<(), String> {
    let Some(ids) = manifest.files.get(key).map(|r| r.chunk_ids.clone()) else {
        return Ok(());
    };
    if ids.is_empty() {
        return Ok(());
    }
    if let Some(indexer) = svc.indexer {
        indexer
            .remove(&ids)
            .map_err(|e| format!("cannot take its earlier chunks out of the index: {e}"))?;
    }
    for id in &ids {
        let path = opts.processor.out_dir.join(format!("{id}.md"));
        match fs_err::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot remove its earlier chunk: {e}")),
        }
    }
    let gone: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    manifest
        .conversations
        .retain(|_, c| !c.chunk_ids.iter().any(|id| gone.contains(id.as_str())));
    if let Some(rec) = manifest.files.get_mut(key) {
        rec.chunk_ids.clear();
    }
    Ok(())
}

/// Parses `item` (joined with `companion`, when it has one the same adapter
/// reads) and writes its chunks. Returns the companion when it turned out
/// to need an import of its own.
/// What the parse thread leaves: the adapter that read the input, the ones
/// that declined it first, what the trust boundary changed, and the hint of
/// the error that ended the parse.
#[derive(Default)]
struct Parsed<'a> {
    adapter: Option<&'a LoadedAdapter>,
    declined: Vec<Declined>,
    adjustments: Adjustments,
    hint: Option<String>,
}

/// Parses `input` with the first of `candidates` that takes it, sending
/// each conversation (or the error that ends the parse) on `tx`.
fn parse_into<'a>(
    svc: &Services<'a>,
    candidates: &[&'a LoadedAdapter],
    input: &Input,
    tx: &std::sync::mpsc::SyncSender<Result<chatmill_model::Conversation, String>>,
) -> Parsed<'a> {
    let (mut stream, declined) = match svc.runtime.parse_first(candidates, input) {
        Ok(opened) => opened,
        Err(e) => {
            let _ = tx.send(Err(e.to_string()));
            return Parsed {
                hint: e.hint(),
                ..Parsed::default()
            };
        }
    };
    let mut hint = None;
    loop {
        match stream.next_conversation() {
            Ok(Some(conv)) => {
                if tx.send(Ok(conv)).is_err() {
                    break; // The processing side gave up.
                }
            }
            Ok(None) => break,
            Err(e) => {
                hint = e.hint();
                let _ = tx.send(Err(e.to_string()));
                break;
            }
        }
    }
    Parsed {
        adapter: Some(stream.adapter()),
        declined,
        adjustments: stream.adjustments().clone(),
        hint,
    }
}

fn import_parsed<'i>(
    w: &mut Work<'_, '_>,
    ((item, digest), companion): Hashed<'i, '_>,
) -> Option<&'i Item> {
    let (svc, opts) = (w.svc, w.opts);
    let mut local = match item.materialize(&opts.root) {
        Ok(m) => m,
        Err(e) => {
            unreadable(w, &item.key, &e);
            return companion.map(|(c, _)| c);
        }
    };
    let (sha256, size, hashing) = match digest {
        Digest::Known(sha256, size) => (sha256, size, None),
        Digest::Beside(hashing) => (String::new(), hashing.listed.0, Some(hashing)),
        Digest::InCopy => {
            let (sha256, size) = local
                .digest
                .take()
                .expect("a copied-out input is hashed as it is copied");
            (sha256, size, None)
        }
    };
    let processor = &mut *w.processor;
    let manifest = &mut *w.manifest;
    let summary = &mut *w.summary;
    let index_failure = &mut *w.index_failure;
    let problem = |reason: String, hint: Option<String>, retryable: bool| FileProblem {
        file: item.key.clone(),
        reason,
        hint,
        retryable,
    };
    let alone = companion.as_ref().map(|(c, _)| *c);
    let mtime: DateTime<Utc> = item.mtime.into();
    let mut record = FileRecord {
        sha256,
        size,
        adapter: None,
        processed_at: Utc::now(),
        status: FileStatus::Processed,
        reason: None,
        chunk_ids: manifest
            .files
            .get(&item.key)
            .map(|r| r.chunk_ids.clone())
            .unwrap_or_default(),
        joined: None,
    };
    let mut pending = Batch::default();
    // Chunks whose header model failed: written with the built-in header,
    // queued for the real one.
    let mut backfill = crate::backfill::Queue::default();
    if size == 0 {
        record.status = FileStatus::Skipped;
        record.reason = Some("empty file".into());
        summary
            .files_skipped
            .push(problem("empty file".into(), None, false));
        record_file(w, &item.key, record, hashing);
        return alone;
    }
    let mut input = file_input(item, size, &local);
    let candidates = match svc
        .adapters
        .candidates(svc.runtime, &input, opts.format.as_deref())
    {
        Ok(c) => c,
        Err(e) => {
            let hint = e.hint();
            let reason = e.to_string();
            if matches!(e, SelectError::Unrecognized { .. }) {
                record.status = FileStatus::Skipped;
                summary
                    .files_skipped
                    .push(problem(reason.clone(), hint, false));
            } else {
                record.status = FileStatus::Failed;
                summary.errors.push(problem(reason.clone(), hint, false));
            }
            record.reason = Some(reason);
            record_file(w, &item.key, record, hashing);
            return alone;
        }
    };
    let adapter = candidates[0];
    // A batch's results file is parsed after its requests, as one input,
    // when the same adapter reads both (else it is imported on its own).
    let mut joined: Option<(&Item, (String, u64), inventory::Materialized)> = None;
    if let Some((c, c_hash)) = companion
        && let Ok(c_local) = c.materialize(&opts.root)
    {
        let c_input = file_input(c, c_hash.1, &c_local);
        let same = svc
            .adapters
            .select(svc.runtime, &c_input, opts.format.as_deref())
            .is_ok_and(|a| a.info.id == adapter.info.id);
        if same {
            joined = Some((c, c_hash, c_local));
        }
    }
    let alone = if let Some((c, c_hash, c_local)) = &joined {
        let (first, second) = (local.path.clone(), c_local.path.clone());
        input = Input::from_opener(
            item.file_name.clone(),
            format!("{} + {}", item.key, c.key),
            Some(size + 1 + c_hash.1),
            move || joined_reader(&first, &second),
        );
        // Its requests were imported before their results came, or with
        // fewer of them (results read while the batch still ran): those
        // chunks lack answers. They are all written again, answered.
        let results_grew = manifest
            .files
            .get(&c.key)
            .is_some_and(|r| r.sha256 != c_hash.0);
        let earlier = manifest.files.get(&item.key).is_some_and(|r| {
            r.status != FileStatus::Failed
                && (r.joined.as_deref() != Some(c.key.as_str()) || results_grew)
        });
        if earlier {
            if let Err(reason) = forget_chunks_of(svc, opts, &item.key, manifest) {
                summary.errors.push(problem(
                    reason,
                    Some("run the import again; nothing was lost (the chunks are rewritten from the files)".into()),
                    true,
                ));
                return None;
            }
            record.chunk_ids.clear();
            *processor = Processor::new(opts.processor.clone(), svc.header, manifest);
        }
        None
    } else {
        alone
    };
    let mut pairs = 0usize;
    let mut skipped_by_adapter = 0u32;
    // The adapter parses on its own thread while this one chunks and writes
    // (two stages, two cores); a bounded channel keeps memory to a few
    // conversations.
    let (result, parsed) = std::thread::scope(|scope| {
        let (tx, rx) =
            std::sync::mpsc::sync_channel::<Result<chatmill_model::Conversation, String>>(4);
        let input = &input;
        let candidates = &candidates;
        let parser = scope.spawn(move || parse_into(svc, candidates, input, &tx));
        // Full batches are indexed on their own thread, overlapping the
        // chunking of the next ones (the store's inserts or the embedding
        // model take as long as everything else); in order, one at a time.
        let (index_tx, index_thread) = match svc.indexer {
            Some(indexer) => {
                let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(2);
                let thread = scope.spawn(move || {
                    let mut done = Indexed::default();
                    for batch in rx {
                        done.add(indexer, &batch);
                    }
                    done
                });
                (Some(tx), Some(thread))
            }
            None => (None, None),
        };
        let chunk_all = || -> Result<(), String> {
            // Each conversation is chunked, given headers and written on the
            // thread pool as soon as it is parsed (no batch waits for its
            // slowest conversation), and recorded here in its order, so the
            // output never depends on timing. How far a conversation is
            // already chunked is worked out here as the conversations before
            // it leave it: a second copy in the same file continues where the
            // first ends, as it would in the next import.
            let p = &*processor;
            let indexer = svc.indexer;
            let file_name = item.file_name.as_str();
            let mut chunked: std::collections::HashMap<String, u32> =
                std::collections::HashMap::new();
            rayon::in_place_scope(|scope| -> Result<(), String> {
                type Done = (usize, u32, Result<Prepared, String>);
                let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, Done)>();
                let mut waiting: std::collections::BTreeMap<usize, Done> = Default::default();
                let mut parsed = rx.into_iter();
                let (mut sent, mut next, mut in_flight, mut parsed_all) = (0, 0, 0, false);
                loop {
                    while !parsed_all && in_flight < IN_FLIGHT_PAIRS {
                        let Some(conv) = parsed.next() else {
                            parsed_all = true;
                            break;
                        };
                        let conv = conv?;
                        let key = crate::manifest::conversation_key(&conv.platform, &conv.id);
                        let seen = chunked
                            .get(&key)
                            .copied()
                            .unwrap_or_else(|| crate::processor::chunked_to(manifest, &conv));
                        chunked.insert(key, crate::processor::chunked_after(&conv, seen));
                        in_flight += conv.pairs.len().max(1);
                        let (seq, tx) = (sent, done_tx.clone());
                        scope.spawn(move |_| {
                            // Whatever happens in it, the task answers: the
                            // commit loop waits for every conversation.
                            let prepared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
                                || {
                                    p.prepare(&conv, file_name, mtime, seen, None)
                                        .map(|p| embedded_here(p, indexer))
                                },
                            ));
                            let prepared = match prepared {
                                Ok(done) => done.map_err(|e| e.to_string()),
                                Err(_) => Err(format!(
                                    "chunking conversation `{}` failed unexpectedly (a bug in chatmill: please report it)",
                                    conv.id
                                )),
                            };
                            let skipped = conv
                                .skipped
                                .values()
                                .fold(0u32, |n, &m| n.saturating_add(m));
                            // The receiver is gone only when this file failed.
                            let _ = tx.send((seq, (conv.pairs.len(), skipped, prepared)));
                        });
                        sent += 1;
                    }
                    if parsed_all && next == sent {
                        return Ok(());
                    }
                    let (seq, done) = done_rx
                        .recv()
                        .expect("every conversation sent on is answered");
                    waiting.insert(seq, done);
                    while let Some((n, skipped, prepared)) = waiting.remove(&next) {
                        next += 1;
                        in_flight -= n.max(1);
                        pairs += n;
                        skipped_by_adapter = skipped_by_adapter.saturating_add(skipped);
                        let out = p.commit(prepared?, manifest);
                        summary.chunks_written += out.written.len() as u32;
                        summary.duplicates_skipped += out.duplicates;
                        summary.mechanical_excluded += out.excluded;
                        for w in out.written {
                            if w.header_pending {
                                backfill.push(&w.chunk_id, &w.record.meta.path);
                            }
                            record.chunk_ids.push(w.chunk_id);
                            if let Some(tx) = &index_tx {
                                pending.push(w.record, w.vector);
                                if pending.len() >= INDEX_BATCH {
                                    // The index thread only ends when this
                                    // sender is dropped, so the send cannot
                                    // fail.
                                    let _ = tx.send(std::mem::take(&mut pending));
                                }
                            }
                        }
                    }
                }
            })
        };
        let chunked = chunk_all();
        drop(index_tx);
        if let Some(thread) = index_thread {
            let done = thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            done.merge_into(summary, index_failure);
        }
        let parsed = parser
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (chunked, parsed)
    });
    let adapter = parsed.adapter.unwrap_or(adapter);
    record.adapter = Some(AdapterRef {
        id: adapter.info.id.clone(),
        version: adapter.info.version.clone(),
        sha256: adapter.sha256.clone(),
    });
    for d in &parsed.declined {
        summary.warnings.push(problem(
            format!(
                "adapter {} said it is not its format ({}); read with `{}` instead",
                d.adapter, d.message, adapter.info.id
            ),
            Some(format!(
                "`--adapter-id {}` picks that adapter without asking the others",
                adapter.info.id
            )),
            false,
        ));
    }
    for line in parsed.adjustments.lines() {
        summary.warnings.push(problem(
            format!("adapter `{}`: {line}", adapter.info.id),
            Some("the adapter breaks a rule of `wit/adapter.wit`: report it to its author".into()),
            false,
        ));
    }
    if let Some(indexer) = svc.indexer.filter(|_| !pending.records.is_empty()) {
        let mut done = Indexed::default();
        done.add(indexer, &pending);
        done.merge_into(summary, index_failure);
    }
    if !backfill.is_empty() {
        summary.headers_pending += backfill.len() as u32;
        let queued = crate::backfill::Queue::load(&opts.root).and_then(|mut q| {
            for e in &backfill.entries {
                q.push(&e.chunk_id, &e.path);
            }
            q.save()
        });
        if let Err(e) = queued {
            tracing::warn!("{e}");
        }
    }
    drop(local);
    match result {
        Err(reason) => {
            record.status = FileStatus::Failed;
            record.reason = Some(reason.clone());
            let hint = match parsed.hint {
                Some(h) => format!("{h}; chunks already written from it are kept"),
                None => format!(
                    "chunks already written from it are kept; fix the file or force an adapter with `--adapter-id`, then run again (adapter `{}`)",
                    adapter.info.id
                ),
            };
            summary.errors.push(problem(reason, Some(hint), false));
        }
        Ok(()) if pairs == 0 => {
            let reason = format!(
                "adapter `{}` found no turn pairs in a non-empty file ({skipped_by_adapter} items skipped)",
                adapter.info.id
            );
            record.status = FileStatus::Failed;
            record.reason = Some(reason.clone());
            summary.errors.push(problem(
                reason,
                Some("if this is the results file of a batch, keep it in the folder of its requests file and name the two alike (`x_input.jsonl` and `x_output.jsonl`, or `requests` and `results`): they are then read together; otherwise check the file is a complete export".into()),
                false,
            ));
        }
        Ok(()) => summary.files_processed += 1,
    }
    if let Some((c, (c_sha256, c_size), c_local)) = joined {
        drop(c_local);
        record.joined = Some(c.key.clone());
        if record.status == FileStatus::Processed {
            summary.files_processed += 1;
        }
        // Its chunks are listed on the requests file's record.
        let c_record = FileRecord {
            sha256: c_sha256,
            size: c_size,
            adapter: record.adapter.clone(),
            processed_at: record.processed_at,
            status: record.status,
            reason: record.reason.clone(),
            chunk_ids: Vec::new(),
            joined: Some(item.key.clone()),
        };
        manifest.files.insert(c.key.clone(), c_record);
    }
    record_file(w, &item.key, record, hashing);
    alone
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::ExtractiveWriter;
    use chatmill_runtime::{AdapterSet, Limits, Runtime};

    /// An import of `inputs` into `root`, with the defaults.
    fn options(root: &std::path::Path, inputs: Vec<PathBuf>) -> ImportOptions {
        ImportOptions {
            root: root.to_path_buf(),
            inputs,
            format: None,
            processor: ProcessorConfig {
                naming: Default::default(),
                out_dir: root.to_path_buf(),
                agent_id: "external".into(),
                render: Default::default(),
                chunker: Default::default(),
            },
        }
    }

    #[test]
    fn chunks_another_writer_records_during_an_import_are_indexed_by_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let corpus =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
        let rt = Runtime::new(Limits::default(), Some(&dir.path().join("cache"))).unwrap();
        let builtins: Vec<chatmill_runtime::Builtin> = chatmill_builtin::ADAPTERS
            .iter()
            .map(|(name, wasm)| chatmill_runtime::Builtin { name, wasm })
            .collect();
        let adapters = AdapterSet::load(&rt, &builtins, None, &[]).unwrap();
        let store =
            chatmill_index::SqliteStore::open(&root.join(".chatmill/index.sqlite3")).unwrap();
        let index = chatmill_index::Index::new(
            std::sync::Arc::new(store),
            std::sync::Arc::new(chatmill_index::Lexical::default()),
        );
        let svc = Services {
            runtime: &rt,
            adapters: &adapters,
            header: &ExtractiveWriter,
            indexer: Some(&index),
        };
        let opts = options(
            &root,
            vec![
                corpus.join("chatgpt/librechat-chatgpt-tree.json"),
                corpus.join("markdown/aider-chat-history-aider-repo-fixture-first-sessions.md"),
            ],
        );
        // Between the two inputs, another writer records a chunk it wrote
        // but did not index (as an inline server whose index was down).
        let other = "local-other-001-2024-05-01";
        let mut progress = |p: Progress<'_>| {
            let Progress::File { index: 1, .. } = p else {
                return;
            };
            let path = root.join(MANIFEST_FILE);
            let mut m = Manifest::load(&path).unwrap();
            let first = m.chunk_ids().into_iter().next().unwrap().to_string();
            let text = std::fs::read_to_string(root.join(format!("{first}.md"))).unwrap();
            std::fs::write(
                root.join(format!("{other}.md")),
                text.replace(&format!("chunk_id: {first}"), &format!("chunk_id: {other}")),
            )
            .unwrap();
            m.conversations.insert(
                "local:other".into(),
                crate::manifest::ConversationRecord {
                    last_pair: 1,
                    chunk_ids: vec![other.into()],
                },
            );
            m.save(&path).unwrap();
        };
        let s = run(&svc, &opts, &mut progress).unwrap();
        assert!(s.errors.is_empty(), "{s:?}");
        let ids = Indexer::ids(&index).unwrap();
        assert!(ids.contains(other), "the other writer's chunk is indexed");
        assert_eq!(ids.len() as u32, s.chunks_total, "{s:?}");
    }

    #[test]
    fn a_file_that_changes_while_it_is_hashed_is_recorded_without_a_hash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        std::fs::write(&path, "{\"a\":1}\n").unwrap();
        let items = inventory::collect(std::slice::from_ref(&path)).unwrap().0;
        let item = &items[0];
        let listed = |p: &std::path::Path| {
            let m = std::fs::metadata(p).unwrap();
            (m.len(), m.modified().ok())
        };
        std::thread::scope(|s| {
            let same = Hashing {
                handle: s.spawn(|| item.hash()),
                path: &path,
                listed: listed(&path),
            };
            let (sha, size) = same.finish().unwrap();
            assert_eq!(
                (sha, size),
                item.hash().unwrap(),
                "an unchanged file keeps its hash"
            );

            let growing = Hashing {
                handle: s.spawn(|| item.hash()),
                path: &path,
                listed: listed(&path),
            };
            // Written to (another line) while it is read.
            std::fs::write(&path, "{\"a\":1}\n{\"b\":2}\n").unwrap();
            let (sha, _) = growing.finish().unwrap();
            assert!(sha.is_empty(), "read again by the next import");
        });
    }

    #[test]
    fn temp_files_are_swept_only_while_holding_the_root_lock() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        fs_err::create_dir_all(&root).unwrap();
        // Another writer's temp file, mid-write under the root lock.
        let tmp = root.join(".chatmill-tmp-inflight");
        fs_err::write(&tmp, b"half a manifest").unwrap();
        let held = RootLock::acquire(&root, Duration::from_secs(5)).unwrap();
        let rt = Runtime::new(Limits::default(), None).unwrap();
        let adapters = AdapterSet::load(&rt, &[], None, &[]).unwrap();
        let svc = Services {
            runtime: &rt,
            adapters: &adapters,
            header: &ExtractiveWriter,
            indexer: None,
        };
        let opts = options(&root, Vec::new());
        std::thread::scope(|s| {
            let import = s.spawn(|| run(&svc, &opts, &mut |_| {}));
            std::thread::sleep(Duration::from_millis(300));
            assert!(tmp.exists(), "swept while another writer held the root");
            drop(held);
            import.join().unwrap().unwrap();
        });
        assert!(!tmp.exists(), "a temp file nobody writes is swept");
    }
}
