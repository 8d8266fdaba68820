//! Upgrades reach roots that exist. An input is skipped while its content
//! is unchanged, and pairs up to a conversation's recorded last pair are
//! never chunked again, so a better adapter or chunk format would reach
//! only fresh roots. Each input's record names what read it (the adapter's
//! id, version and SHA-256) and the chunk format its chunks were written in;
//! an input read by anything else than what would read it now is
//! *outdated*. `import` counts them; `import --reprocess` reads them again.
//!
//! A reprocess forgets, in memory, every conversation an outdated input
//! wrote, and its chunk ids; the run then reads those inputs as if they were
//! new, oldest first, so the root ends as a fresh import of the same inputs
//! would leave it: the same chunk ids where the pairs are the same, their
//! files replaced atomically. The run is one durable group (the root lock
//! held throughout): a kill before its save leaves the old manifest, whose
//! chunk files are all still there. The forgotten ids go into the manifest's
//! `stale` list with that save; only then are the ones no conversation
//! claims taken out of the index and the chunk folder, and the list cleared
//! (a run killed in between does it at its end).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chatmill_root::chunk::CHUNK_FORMAT;
use chatmill_root::chunk_store::ChunkStore;
use chatmill_root::inventory::Item;
use chatmill_root::lock::RootLock;
use chatmill_root::manifest::{FileRecord, FileStatus, Manifest};
use chatmill_root::root::Root;
use chatmill_runtime::AdapterSet;

use super::error::ImportError;
use super::options::{ImportOptions, Services};
use crate::import::Reprocess;

/// How long the removal of stale chunks waits for the root lock.
const LOCK_WAIT: Duration = Duration::from_secs(600);

/// Whether the input of `rec` was read by something else than would read
/// it now: another build of its adapter, an older chunk format, or (while
/// redaction is on: `redaction` is the rule-set version) no redaction or
/// an older rule set. Inputs whose adapter is no longer installed are not
/// (nothing could reread them).
pub fn is_outdated(rec: &FileRecord, adapters: &AdapterSet, redaction: Option<u32>) -> bool {
    let Some(made) = rec.adapter.as_ref() else {
        return false;
    };
    if rec.status != FileStatus::Processed {
        return false;
    }
    let unredacted = redaction.is_some_and(|now| made.redaction.is_none_or(|then| then < now));
    adapters.get(&made.id).is_some_and(|now| {
        now.sha256 != made.sha256 || made.chunk_format < CHUNK_FORMAT || unredacted
    })
}

/// Outdated inputs by the id of the adapter that read them.
pub fn outdated(
    manifest: &Manifest,
    adapters: &AdapterSet,
    redaction: Option<u32>,
) -> BTreeMap<String, u32> {
    let mut by_adapter = BTreeMap::new();
    for rec in manifest.files.values() {
        if is_outdated(rec, adapters, redaction)
            && let Some(a) = &rec.adapter
        {
            *by_adapter.entry(a.id.clone()).or_insert(0) += 1;
        }
    }
    by_adapter
}

/// The inputs a reprocess reads again, and the outdated ones it cannot.
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// Keys of the inputs read again.
    pub due: BTreeSet<String>,
    /// Keys of outdated inputs that are not among this run's inputs (no
    /// longer in `raw/`, or not given): their chunks are kept.
    pub missing: Vec<String>,
}

/// Plans the reprocess of `items` and forgets, in `manifest`, what the due
/// inputs wrote: their conversations (every chunk id of which goes into
/// `stale`) and their chunk lists. Called once the run holds the root lock.
pub(super) fn prepare(
    manifest: &mut Manifest,
    items: &[Item],
    (adapters, redaction): (&AdapterSet, Option<u32>),
    opts: &Reprocess,
) -> Plan {
    let present: BTreeSet<&str> = items
        .iter()
        .flat_map(|i| std::iter::once(i).chain(i.companion.as_deref()))
        .map(|i| i.key.as_str())
        .collect();
    let mut plan = Plan::default();
    for (key, rec) in &manifest.files {
        if !is_outdated(rec, adapters, redaction) || !selected(manifest, rec, opts) {
            continue;
        }
        if present.contains(key.as_str()) {
            plan.due.insert(key.clone());
        } else {
            plan.missing.push(key.clone());
        }
    }
    let written: BTreeSet<String> = plan
        .due
        .iter()
        .filter_map(|k| manifest.files.get(k))
        .flat_map(|r| r.chunk_ids.iter().cloned())
        .collect();
    let mut stale = Vec::new();
    manifest.conversations.retain(|_, c| {
        let touched = c.chunk_ids.iter().any(|id| written.contains(id));
        if touched {
            stale.append(&mut c.chunk_ids);
        }
        !touched
    });
    for key in &plan.due {
        if let Some(rec) = manifest.files.get_mut(key) {
            rec.chunk_ids.clear();
        }
    }
    manifest.stale.extend(stale);
    manifest.stale.sort_unstable();
    manifest.stale.dedup();
    plan
}

/// Whether `--only` lets `rec`'s input through: its adapter's id, or the
/// platform of a conversation it wrote.
fn selected(manifest: &Manifest, rec: &FileRecord, opts: &Reprocess) -> bool {
    let Some(only) = opts.only.as_deref() else {
        return true;
    };
    if rec.adapter.as_ref().is_some_and(|a| a.id == only) {
        return true;
    }
    let ids: BTreeSet<&str> = rec.chunk_ids.iter().map(String::as_str).collect();
    manifest.conversations.iter().any(|(key, c)| {
        key.split_once(':')
            .is_some_and(|(platform, _)| platform == only)
            && c.chunk_ids.iter().any(|id| ids.contains(id.as_str()))
    })
}

/// The stale ids no conversation claims any more, taken out of `stale` and
/// out of every input's chunk list: what the caller removes from the index
/// and the chunk folder once this manifest is durable.
pub(super) fn unclaimed(manifest: &mut Manifest) -> Vec<String> {
    if manifest.stale.is_empty() {
        return Vec::new();
    }
    let claimed: BTreeSet<&str> = manifest.each_chunk_id().collect();
    let gone: Vec<String> = manifest
        .stale
        .iter()
        .filter(|id| !claimed.contains(id.as_str()))
        .cloned()
        .collect();
    let gone_set: BTreeSet<&str> = gone.iter().map(String::as_str).collect();
    for rec in manifest.files.values_mut() {
        rec.chunk_ids.retain(|id| !gone_set.contains(id.as_str()));
    }
    gone
}

/// Takes the `gone` chunks out of the index and the chunk folder, then
/// clears `stale` and saves, under the root lock. Called after the save of
/// a manifest that no longer claims them; a failure leaves them listed, to
/// be removed by the next run.
pub(super) fn remove_stale(
    svc: &Services<'_>,
    opts: &ImportOptions,
    manifest: &mut Manifest,
    gone: &[String],
) -> Result<(), ImportError> {
    if manifest.stale.is_empty() {
        return Ok(());
    }
    let _lock = RootLock::acquire(&opts.root, LOCK_WAIT)?;
    let path = Root::new(&opts.root).manifest();
    let on_disk = Manifest::load(&path)?;
    if on_disk.stale != manifest.stale {
        // Another writer saved meanwhile: the next run removes them.
        return Ok(());
    }
    if let Some(indexer) = svc.indexer
        && let Err(e) = indexer.remove(gone)
    {
        tracing::warn!("stale chunks stay in the index until the next run: {e}");
        return Ok(());
    }
    if let Err(e) = ChunkStore::new(&opts.processor.out_dir).remove(gone) {
        tracing::warn!("stale chunk files stay until the next run: {e}");
        return Ok(());
    }
    manifest.stale.clear();
    manifest.save(&path)?;
    Ok(())
}
