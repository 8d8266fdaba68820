//! Which inputs are read and how: an input the manifest has with the same
//! content is skipped; a new one is hashed beside its parse; the adapters
//! that may read it are chosen by sniffing; a batch's results file is
//! joined to its requests file when the same adapter reads both. Then the
//! input is read and chunked ([`super::input`]) and its outcome is recorded.

use std::collections::BTreeSet;

use chatmill_root::chunk::ChunkDoc;
use chatmill_root::inventory::{self, Item};
use chatmill_root::manifest::{FileRecord, FileStatus, Manifest};
use chatmill_runtime::{Input, LoadedAdapter, SelectError};
use chrono::Utc;

use super::options::{ImportOptions, Services};
use super::record::{Digest, Hashing, problem, record_file, unreadable};
use super::work::Work;
use crate::import::parse::file_input;
use crate::processor::Processor;

/// An input with its content hash and size, and its companion with theirs.
type Hashed<'i, 's> = ((&'i Item, Digest<'s>), Option<(&'i Item, (String, u64))>);

/// Processes one input — with its batch companion, when the two can be
/// parsed as one — unless the manifest already has it with the same
/// content; indexes its new chunks and records it in the manifest (the
/// caller saves it). Returns the companion when it must be imported on its
/// own.
pub(super) fn import_one<'i>(w: &mut Work<'_, '_, '_>, item: &'i Item) -> Option<&'i Item> {
    if item.companion.is_none() && !w.manifest.files.contains_key(&item.key) {
        return import_new(w, item);
    }
    if w.due.is_some_and(|due| due.contains(&item.key)) {
        return reread(w, item);
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

/// Reads an input a reprocess is due to read again, whatever its hash
/// says (with its batch companion, when it has one).
fn reread<'i>(w: &mut Work<'_, '_, '_>, item: &'i Item) -> Option<&'i Item> {
    let (sha256, size) = match item.hash() {
        Ok(h) => h,
        Err(e) => {
            unreadable(w, &item.key, &e);
            return item.companion.as_deref();
        }
    };
    let companion = item
        .companion
        .as_deref()
        .and_then(|c| c.hash().ok().map(|h| (c, h)));
    import_parsed(w, ((item, Digest::Known(sha256, size)), companion))
}

/// Imports an input the manifest does not have. Its hash decides nothing
/// (it is read in any case), so it is not waited for: a file is hashed on a
/// thread of its own beside the parse (a 160 MB export's hash takes a tenth
/// of a second of a core that would otherwise be idle), a zip entry while
/// it is copied out (so it is inflated once, not once for the hash and
/// again for the copy).
fn import_new<'i>(w: &mut Work<'_, '_, '_>, item: &'i Item) -> Option<&'i Item> {
    let inventory::Source::File(path) = &item.source else {
        return import_parsed(w, ((item, Digest::InCopy), None));
    };
    // Opened, not only listed: a file that cannot be read is reported
    // before its parse starts.
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

/// Whether the manifest has `key` processed with this content.
fn unchanged(manifest: &Manifest, key: &str, sha256: &str) -> bool {
    manifest
        .files
        .get(key)
        .is_some_and(|rec| rec.sha256 == sha256 && rec.status != FileStatus::Failed)
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
    chatmill_root::chunk_store::ChunkStore::new(&opts.processor.out_dir)
        .remove(&ids)
        .map_err(|e| format!("cannot remove its earlier chunk: {e}"))?;
    let gone: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    manifest
        .conversations
        .retain(|_, c| !c.chunk_ids.iter().any(|id| gone.contains(id.as_str())));
    if let Some(rec) = manifest.files.get_mut(key) {
        rec.chunk_ids.clear();
    }
    Ok(())
}

/// `items` without the root's own files — the manifest, `.chatmill/`,
/// `assets/` and the chunk files — which an input folder holds when it contains the root
/// (`chatmill import ~/Documents/conversations`): they are never inputs,
/// and listed as unrecognized inputs they would be noise.
pub(super) fn without_own_files(
    items: Vec<Item>,
    root: &std::path::Path,
    out_dir: &std::path::Path,
) -> Vec<Item> {
    let real = |p: &std::path::Path| std::fs::canonicalize(p).ok();
    let (Some(root), Some(out_dir)) = (real(root), real(out_dir)) else {
        return items;
    };
    let root = chatmill_root::root::Root::new(root);
    let (state, manifest, assets) = (root.state(), root.manifest(), root.assets());
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
                || p.starts_with(&assets)
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

/// Reads `item` (joined with `companion` when the same adapter reads both)
/// through [`super::input`] and records the outcome. Returns the companion when
/// it needs an import of its own.
fn import_parsed<'i>(
    w: &mut Work<'_, '_, '_>,
    ((item, digest), companion): Hashed<'i, '_>,
) -> Option<&'i Item> {
    let alone = companion.as_ref().map(|(c, _)| *c);
    let mut local = match item.materialize(&w.opts.root) {
        Ok(m) => m,
        Err(e) => {
            unreadable(w, &item.key, &e);
            return alone;
        }
    };
    let (sha256, size, hashing) = digest.resolve(&mut local);
    let mut record = FileRecord {
        sha256,
        size,
        adapter: None,
        processed_at: Utc::now(),
        status: FileStatus::Processed,
        reason: None,
        chunk_ids: w
            .manifest
            .files
            .get(&item.key)
            .map(|r| r.chunk_ids.clone())
            .unwrap_or_default(),
        joined: None,
        pairs: Default::default(),
        run: None,
        run_chunks: 0,
    };
    if size == 0 {
        record.status = FileStatus::Skipped;
        record.reason = Some("empty file".into());
        let skipped = problem(&item.key, "empty file".into(), None, false);
        w.summary.files_skipped.push(skipped);
        record_file(w, &item.key, record, hashing);
        return alone;
    }
    let input = file_input(item, size, &local.path);
    let forced = w.opts.adapter_id.as_deref();
    // Sniffed (and being parsed) ahead, or sniffed now.
    let ahead = w.ahead.take(&item.key);
    let selected = ahead.as_ref().and_then(super::ahead::Parse::selected);
    let selected =
        selected.unwrap_or_else(|| w.svc.adapters.candidates(w.svc.runtime, &input, forced));
    let candidates = match selected {
        Ok(c) => c,
        Err(e) => {
            not_selected(w, &item.key, &mut record, &e);
            record_file(w, &item.key, record, hashing);
            return alone;
        }
    };
    let joined = companion.and_then(|c| same_adapter(w, c, candidates[0]));
    let (input, alone) = match &joined {
        None => (input, alone),
        Some(j) => {
            if let Err(reason) = forget_unanswered(w, item, j, &mut record) {
                let hint = "run the import again; nothing was lost (the chunks are rewritten from the files)";
                let failed = problem(&item.key, reason, Some(hint.into()), true);
                w.summary.errors.push(failed);
                return None;
            }
            (j.input(item, &local, size), None)
        }
    };
    let chunked = super::input::chunk_input(w, &candidates, &input, item, &mut record, ahead);
    drop(local);
    super::record::outcome(w, &item.key, &mut record, chunked);
    if let Some(j) = joined {
        super::record::record_companion(w, &item.key, &mut record, j.item, j.hash);
    }
    record_file(w, &item.key, record, hashing);
    alone
}

/// Records why no adapter was chosen for `key`: unrecognized (skipped) or
/// ambiguous (failed).
fn not_selected(w: &mut Work<'_, '_, '_>, key: &str, record: &mut FileRecord, e: &SelectError) {
    let (hint, reason) = (e.hint(), e.to_string());
    let unrecognized = matches!(e, SelectError::Unrecognized { .. });
    let p = problem(key, reason.clone(), hint, false);
    if unrecognized {
        record.status = FileStatus::Skipped;
        w.summary.files_skipped.push(p);
    } else {
        record.status = FileStatus::Failed;
        w.summary.errors.push(p);
    }
    record.reason = Some(reason);
}

/// A batch's results file to be read after its requests file.
struct Joined<'i> {
    item: &'i Item,
    hash: (String, u64),
    local: inventory::Materialized,
}

impl Joined<'_> {
    /// The requests file (`item`, at `local`, `size` bytes) and then this
    /// results file, as one input.
    fn input(&self, item: &Item, local: &inventory::Materialized, size: u64) -> Input {
        let (first, second) = (local.path.clone(), self.local.path.clone());
        Input::from_opener(
            item.file_name.clone(),
            format!("{} + {}", item.key, self.item.key),
            Some(size + 1 + self.hash.1),
            move || joined_reader(&first, &second),
        )
    }
}

/// The companion, when `adapter` reads it too (else it is imported on its
/// own, later).
fn same_adapter<'i>(
    w: &Work<'_, '_, '_>,
    (c, hash): (&'i Item, (String, u64)),
    adapter: &LoadedAdapter,
) -> Option<Joined<'i>> {
    let local = c.materialize(&w.opts.root).ok()?;
    let input = file_input(c, hash.1, &local.path);
    let forced = w.opts.adapter_id.as_deref();
    let same = w
        .svc
        .adapters
        .select(w.svc.runtime, &input, forced)
        .is_ok_and(|a| a.info.id == adapter.info.id);
    same.then_some(Joined {
        item: c,
        hash,
        local,
    })
}

/// When the requests file was imported before its results came, or with
/// fewer of them (results read while the batch still ran), its chunks lack
/// answers: they are taken out, to be written again, answered.
fn forget_unanswered(
    w: &mut Work<'_, '_, '_>,
    item: &Item,
    j: &Joined<'_>,
    record: &mut FileRecord,
) -> Result<(), String> {
    let manifest = &*w.manifest;
    let results_grew = manifest
        .files
        .get(&j.item.key)
        .is_some_and(|r| r.sha256 != j.hash.0);
    let earlier = manifest.files.get(&item.key).is_some_and(|r| {
        r.status != FileStatus::Failed
            && (r.joined.as_deref() != Some(j.item.key.as_str()) || results_grew)
    });
    if !earlier {
        return Ok(());
    }
    if let Some(index) = w.index {
        // Its chunks queued for the index go in before they are taken out.
        index.flush();
    }
    forget_chunks_of(w.svc, w.opts, &item.key, w.manifest)?;
    w.notes.touched_all();
    record.chunk_ids.clear();
    *w.processor = Processor::new(w.opts.processor.clone(), w.svc.header, w.manifest);
    Ok(())
}
