//! Batch import. One import goes: [`run`] inventories the inputs and, per
//! input under the root lock, [`select`] decides whether and how it is read
//! (unchanged inputs skipped, a new one hashed beside its parse, the
//! adapters that may read it, a batch's results joined to its requests),
//! [`input`] parses it, prepares its conversations on the thread pool and
//! commits them in order into a [`crate::sink::ChunkSink`] (chunk ids,
//! backfill queue, index), and [`record`] records the outcome in the
//! manifest and the summary. One bad file never stops the others; the
//! manifest is saved after every [`group`] of inputs (one save per 250 ms
//! of work, not per file), so a killed run resumes where it stopped and
//! converges to the same result.

mod ahead;
mod catch_up;
mod error;
mod group;
mod index_failure;
mod input;
mod known_files;
mod live;
mod options;
mod parse;
mod prepare;
mod record;
mod reprocess;
mod select;
mod summary;
#[cfg(test)]
mod tests;
mod work;

use std::path::PathBuf;
use std::time::Duration;

use catch_up::catch_up_into;
use chatmill_root::assets::Assets;
use chatmill_root::inventory::{self, Item};
use chatmill_root::lock::RootLock;
use chatmill_root::manifest::Manifest;
use chatmill_root::root::Root;

use crate::processor::Processor;
use crate::sink::IndexSink;

pub use error::ImportError;
use index_failure::{IndexFailure, index_problem, merge_indexed};
pub use options::{ImportOptions, Progress, Reprocess, Services};
pub use reprocess::{is_outdated, outdated};
pub use summary::{FileProblem, Summary};
use work::Work;

/// Runs one import.
pub fn run(
    svc: &Services<'_>,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Summary, ImportError> {
    // Chunks say whether (and with which rule set) they were redacted.
    let mut opts = opts.clone();
    opts.processor.redaction = svc.redaction();
    let opts = &opts;
    // A reprocess is one group: its forgotten conversations are rewritten
    // before any save names the run's work.
    let time = match opts.reprocess {
        Some(_) => Duration::MAX,
        None => group::GROUP_TIME,
    };
    run_grouped(svc, opts, progress, (time, ahead::width()))
}

/// Runs one import whose inputs are made durable in groups that stay open
/// `group_time` (zero: each input on its own, as the tests that play
/// another writer between two inputs need), with up to `ahead` inputs
/// parsed ahead at once.
fn run_grouped(
    svc: &Services<'_>,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(Progress<'_>),
    (group_time, ahead): (Duration, usize),
) -> Result<Summary, ImportError> {
    sweep(opts)?;
    let manifest_path = Root::new(&opts.root).manifest();
    let manifest = Manifest::load(&manifest_path)?;
    let (items, broken) =
        inventory::collect(&inputs_of(opts)?).map_err(|e| ImportError::Inventory {
            path: e.path.clone(),
            source: std::io::Error::other(e.message),
        })?;
    let items = select::without_own_files(items, &opts.root, &opts.processor.out_dir);
    let assets = Assets::new(&opts.root, &items).redacting(svc.redactor);
    let shared = ahead::Shared::new(svc, opts, &manifest, ahead);
    std::thread::scope(|scope| {
        let index = svc.indexer.map(|ix| IndexSink::threaded(scope, ix));
        let ahead = ahead::Ahead::new(&shared);
        let mut run = Driver::new(
            svc,
            opts,
            (manifest_path, manifest),
            group_time,
            index,
            ahead,
        );
        // The index takes the chunks the manifest has and it lacks (a killed
        // run, an index that was down) before the run adds its own: what
        // there is to compare is then only what earlier runs left (nothing,
        // in a first import), and the run does not end on a pass over every
        // id.
        run.catch_up();
        for b in broken {
            run.summary.errors.push(FileProblem {
                file: b.path.display().to_string(),
                reason: b.message,
                hint: Some(
                    "the archive is damaged or incomplete; download the export again".into(),
                ),
                retryable: false,
            });
        }
        progress(Progress::Inventory { files: items.len() });
        for (index, item) in items.iter().enumerate() {
            progress(Progress::File {
                index,
                of: items.len(),
                name: &item.key,
            });
            run.ahead
                .start(scope, svc, opts, &run.manifest, (&items, index));
            run.input(item, &items, &assets)?;
        }
        run.finish(&items)
    })
}

/// Creates the chunk folder and sweeps what a killed run may have left:
/// temp files (never half chunk files: those are renamed into place whole).
/// Under the root lock: a running server (or another import) writes its
/// temp files under it, and one swept mid-write made its rename fail.
fn sweep(opts: &ImportOptions) -> Result<(), ImportError> {
    let out_dir = &opts.processor.out_dir;
    fs_err::create_dir_all(out_dir).map_err(|source| ImportError::Root {
        path: out_dir.clone(),
        source,
    })?;
    let _lock = RootLock::acquire(&opts.root, Duration::from_secs(600))?;
    inventory::sweep_temp_files(out_dir);
    inventory::sweep_temp_files(&opts.root);
    inventory::sweep_temp_files(&Root::new(&opts.root).assets());
    inventory::sweep_temp_files(&Root::new(&opts.root).notes());
    Ok(())
}

/// One import between its inputs: the manifest and the processor as of
/// the last input, the summary so far, the open group, and the parses
/// running ahead.
struct Driver<'r, 'p, 's> {
    svc: &'r Services<'s>,
    ahead: ahead::Ahead<'p, 's>,
    opts: &'r ImportOptions,
    manifest_path: PathBuf,
    manifest: Manifest,
    processor: Processor<'s>,
    summary: Summary,
    index_failure: IndexFailure,
    /// One writer at a time on the root (an inline server may be running):
    /// the lock per group of inputs, made durable together.
    group: group::Group,
    /// What `--reprocess` reads again, once the run holds the lock.
    plan: Option<reprocess::Plan>,
    /// Whether another writer changed the manifest during the run.
    others_wrote: bool,
    /// The conversation notes, refreshed after each input.
    notes: chatmill_root::notes::Notes,
    /// The run's index sink (see [`Work::index`]).
    index: Option<IndexSink<'p>>,
}

impl<'r, 'p, 's> Driver<'r, 'p, 's> {
    fn new(
        svc: &'r Services<'s>,
        opts: &'r ImportOptions,
        (manifest_path, manifest): (PathBuf, Manifest),
        group_time: Duration,
        index: Option<IndexSink<'p>>,
        ahead: ahead::Ahead<'p, 's>,
    ) -> Self {
        let group = group::Group::new(opts.root.clone(), manifest_path.clone(), group_time);
        Self {
            svc,
            ahead,
            opts,
            processor: Processor::new(opts.processor.clone(), svc.header, &manifest),
            notes: chatmill_root::notes::Notes::new(&manifest),
            manifest_path,
            manifest,
            summary: Summary::default(),
            index_failure: None,
            group,
            plan: None,
            others_wrote: false,
            index,
        }
    }

    fn catch_up(&mut self) {
        if let Some(indexer) = self.svc.indexer {
            let out_dir = &self.opts.processor.out_dir;
            let (summary, failure) = (&mut self.summary, &mut self.index_failure);
            catch_up_into(indexer, &self.manifest, out_dir, summary, failure);
        }
    }

    /// Imports one input (with its companion) in the open group.
    fn input(
        &mut self,
        item: &Item,
        items: &[Item],
        assets: &Assets<'_>,
    ) -> Result<(), ImportError> {
        // A file of the export that holds no conversations (an account
        // file, an image) is listed with what it is; no adapter is asked.
        if let Some(what) = known_files::what_is(&item.file_name) {
            let ignored = record::problem(&item.key, what.into(), None, false);
            self.summary.files_ignored.push(ignored);
            return Ok(());
        }
        if self.group.enter()? {
            // Someone else saved the manifest meanwhile.
            self.others_wrote = true;
            self.manifest = Manifest::load(&self.manifest_path)?;
            self.notes.touched_all();
            self.renew_processor();
        }
        self.plan_reprocess(items);
        let mut work = Work {
            svc: self.svc,
            ahead: &mut self.ahead,
            opts: self.opts,
            processor: &mut self.processor,
            manifest: &mut self.manifest,
            summary: &mut self.summary,
            assets,
            due: self.plan.as_ref().map(|p| &p.due),
            notes: &mut self.notes,
            index: self.index.as_ref(),
        };
        if let Some(companion) = select::import_one(&mut work, item) {
            select::import_one(&mut work, companion);
        }
        let redacted = assets.take_redactions();
        crate::redaction::add(&mut self.summary.redactions, &redacted);
        for failed in assets.record_into(&mut self.manifest) {
            let hint = "the chunk names the file without a link; run the import again once the file can be read";
            let warning = record::problem(&item.key, failed, Some(hint.into()), true);
            self.summary.warnings.push(warning);
        }
        self.notes
            .update(&Root::new(&self.opts.root), &mut self.manifest);
        if self.group.time_up() {
            self.group.close(&self.manifest)?;
        }
        Ok(())
    }

    fn renew_processor(&mut self) {
        let (cfg, header) = (self.opts.processor.clone(), self.svc.header);
        self.processor = Processor::new(cfg, header, &self.manifest);
    }

    /// With `--reprocess`, once per run and under the lock: forgets what the
    /// outdated inputs wrote.
    fn plan_reprocess(&mut self, items: &[Item]) {
        let Some(r) = self.opts.reprocess.as_ref().filter(|_| self.plan.is_none()) else {
            return;
        };
        let plan = reprocess::prepare(
            &mut self.manifest,
            items,
            (self.svc.adapters, self.svc.redaction()),
            r,
        );
        self.notes.touched_all();
        record::reprocess_planned(&mut self.summary, &plan);
        self.renew_processor();
        self.plan = Some(plan);
    }

    /// Makes the last group durable, removes what a reprocess replaced, and
    /// completes the summary.
    fn finish(mut self, items: &[Item]) -> Result<Summary, ImportError> {
        // Everything committed is indexed before anything is taken out.
        if let Some(done) = self.index.take().map(IndexSink::finish) {
            merge_indexed(&mut self.summary, &mut self.index_failure, done);
        }
        if self.opts.reprocess.is_some() && self.plan.is_none() {
            // No input was read: the outdated ones are all missing.
            self.group.enter()?;
            self.plan_reprocess(items);
        }
        let gone = reprocess::unclaimed(&mut self.manifest);
        self.group.close(&self.manifest)?;
        tracing::debug!("inputs made durable in {} groups", self.group.saves);
        reprocess::remove_stale(self.svc, self.opts, &mut self.manifest, &gone)?;
        let mut summary = self.summary;
        summary.inputs_outdated = outdated(&self.manifest, self.svc.adapters, self.svc.redaction());
        summary.chunks_total = self.manifest.chunk_count() as u32;
        let Some(indexer) = self.svc.indexer else {
            return Ok(summary);
        };
        let mut failure = self.index_failure;
        // Another writer's chunks that its index left out (an inline server
        // whose index failed) are taken in by this run.
        if self.others_wrote && failure.is_none() {
            let out_dir = &self.opts.processor.out_dir;
            catch_up_into(indexer, &self.manifest, out_dir, &mut summary, &mut failure);
        }
        // A reprocess replaced chunks (their old text may hold secrets):
        // nothing of the old text stays in the index's files.
        if self.plan.as_ref().is_some_and(|p| !p.due.is_empty())
            && let Err(e) = indexer.purge()
        {
            tracing::warn!("the index could not drop what the replaced chunks left: {e}");
        }
        summary.index_total = indexer.count().ok();
        if let Some((n, e)) = failure {
            summary.errors.push(index_problem(n, &e));
        }
        Ok(summary)
    }
}

/// The inputs to inventory: `opts.inputs` (each must exist), else `ROOT/raw`.
fn inputs_of(opts: &ImportOptions) -> Result<Vec<PathBuf>, ImportError> {
    if opts.inputs.is_empty() {
        let raw = Root::new(&opts.root).raw();
        return Ok(if raw.exists() { vec![raw] } else { Vec::new() });
    }
    if let Some(missing) = opts.inputs.iter().find(|i| !i.exists()) {
        return Err(ImportError::Inventory {
            path: missing.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder"),
        });
    }
    Ok(opts.inputs.clone())
}
