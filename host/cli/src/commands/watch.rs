//! `chatmill watch`: new and changed inputs are imported as they appear.
//! Folders are watched recursively (notify, debounced: a file written in
//! bursts is imported once it has been quiet for `--debounce-ms`); each
//! batch of changed files goes through the normal import, live (a
//! conversation's unfinished last pair waits for the file to grow, so no
//! chunk keeps half an answer). On start it imports what changed while it
//! was not running (the manifest knows what was read). One line per import
//! on stderr; SIGTERM or SIGINT stop it between imports, exit 0.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chatmill_chunking::header::ExtractiveWriter;
use chatmill_pipeline::import::{self, Services};
use chatmill_root::root::Root;
use notify_debouncer_mini::notify::RecursiveMode;
use notify_debouncer_mini::{DebounceEventResult, new_debouncer};

use crate::cli::WatchArgs;
use crate::command_error::CliError;
use crate::context::Context;
use crate::render;

pub fn run(ctx: &Context, args: WatchArgs) -> Result<ExitCode, CliError> {
    let watched = folders(ctx, &args.paths);
    if watched.is_empty() {
        return Err(CliError::usage(anyhow::anyhow!("nothing to watch"))
            .hint("name a folder: `chatmill watch DIR`, or create ROOT/raw"));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let (tx, rx) = std::sync::mpsc::channel::<DebounceEventResult>();
    let mut debouncer = new_debouncer(Duration::from_millis(args.debounce_ms), tx)
        .map_err(|e| CliError::failed(anyhow::anyhow!("cannot watch files: {e}")))?;
    for dir in &watched {
        debouncer
            .watcher()
            .watch(dir, RecursiveMode::Recursive)
            .map_err(|e| {
                CliError::failed(anyhow::anyhow!("cannot watch `{}`: {e}", dir.display()))
            })?;
    }
    let shown: Vec<String> = watched.iter().map(|d| d.display().to_string()).collect();
    render::notice(&format!("watching {}", shown.join(", ")));
    let importer = Importer::open(ctx, args.no_index)?;
    importer.import(watched.clone());
    while !stop.load(Ordering::Relaxed) {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Ok(events)) => {
                let changed: BTreeSet<PathBuf> = events
                    .into_iter()
                    .map(|e| e.path)
                    .filter(|p| p.is_file())
                    .collect();
                if !changed.is_empty() {
                    importer.import(changed.into_iter().collect());
                }
            }
            Ok(Err(e)) => render::warning(&format!("watching: {e}")),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    render::notice("stopped");
    Ok(ExitCode::SUCCESS)
}

/// What to watch: the folders named, else `ROOT/raw` (created) and the
/// assistants' session folders that exist.
fn folders(ctx: &Context, named: &[PathBuf]) -> Vec<PathBuf> {
    if !named.is_empty() {
        return named.iter().filter(|p| p.exists()).cloned().collect();
    }
    let raw = Root::new(&ctx.root).raw();
    let _ = fs_err::create_dir_all(&raw);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut out = vec![raw];
    for rel in [".claude/projects", ".gemini/tmp"] {
        if let Some(dir) = home.as_ref().map(|h| h.join(rel)).filter(|d| d.is_dir()) {
            out.push(dir);
        }
    }
    out.into_iter().filter(|p| p.is_dir()).collect()
}

/// The adapters and the index, opened once for every import.
struct Importer<'c> {
    ctx: &'c Context,
    set: chatmill_runtime::AdapterSet,
    index: Option<chatmill_index::Index>,
    /// Replaces the secrets of what is imported (`None`: off).
    redactor: Option<chatmill_redact::Redactor>,
}

impl<'c> Importer<'c> {
    fn open(ctx: &'c Context, no_index: bool) -> Result<Self, CliError> {
        let set = ctx.adapter_set()?;
        let index = if no_index {
            None
        } else {
            Some(ctx.index()?.deferring_vectors())
        };
        let redactor = crate::redaction::redactor(ctx)?;
        Ok(Self {
            ctx,
            set,
            index,
            redactor,
        })
    }

    /// Imports `paths` (those still there), live, and says what it did.
    fn import(&self, paths: Vec<PathBuf>) {
        let paths: Vec<PathBuf> = paths.into_iter().filter(|p| p.exists()).collect();
        if paths.is_empty() {
            return;
        }
        let started = Instant::now();
        let mut opts = crate::import_options::options(self.ctx, paths);
        opts.live = true;
        let svc = Services {
            runtime: &self.ctx.runtime,
            adapters: &self.set,
            header: &ExtractiveWriter,
            indexer: self
                .index
                .as_ref()
                .map(|i| i as &dyn chatmill_index::Indexer),
            redactor: self.redactor.as_ref(),
        };
        match import::run(&svc, &opts, &mut |_| {}) {
            Ok(s) => {
                let changed = s.files_processed;
                if changed > 0 || !s.errors.is_empty() {
                    render::notice(&format!(
                        "imported {changed} changed files: {} new chunks, {} pairs waiting, {} errors ({:.2}s)",
                        s.chunks_written,
                        s.pairs_waiting,
                        s.errors.len(),
                        started.elapsed().as_secs_f64()
                    ));
                }
                for e in &s.errors {
                    render::warning(&format!("`{}`: {}", e.file, e.reason));
                }
                self.fill(started);
            }
            Err(e) => render::warning(&format!("the import failed: {e}")),
        }
    }

    /// Makes the vectors of what the import left waiting (it is keyword
    /// searchable already), and says so.
    fn fill(&self, started: Instant) {
        let Some(index) = &self.index else { return };
        match index.fill_pending(&mut |_| {}) {
            Ok(0) => {}
            Ok(n) => render::notice(&format!(
                "made {n} vectors ({:.2}s after the change)",
                started.elapsed().as_secs_f64()
            )),
            Err(e) => render::warning(&format!(
                "the vectors wait (`chatmill embed` makes them): {e}"
            )),
        }
    }
}
