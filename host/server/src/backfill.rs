//! The backfill thread: asks the slow header model for the headers that
//! missed their deadline, without holding up turns.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chatmill_chunking::header::HeaderWriter;
use chatmill_index::{Index, Indexer};
use chatmill_pipeline::backfill;

use crate::config::ServerConfig;
use crate::services::Services;

/// The backfill thread, when a slow header model is configured; it ends
/// once `stop` is set.
pub(crate) fn spawn_backfill(
    cfg: &ServerConfig,
    services: &Services,
    stop: &Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    services.backfill.clone().map(|w| {
        let root = cfg.root.clone();
        let index = services.index.clone();
        let stop = Arc::clone(stop);
        let every = cfg.backfill_every;
        std::thread::spawn(move || backfill_loop(&root, w.as_ref(), index.as_deref(), &stop, every))
    })
}

fn backfill_loop(
    root: &Path,
    writer: &dyn HeaderWriter,
    index: Option<&Index>,
    stop: &AtomicBool,
    every: Duration,
) {
    let mut failed = std::collections::HashSet::new();
    while !stop.load(Ordering::SeqCst) {
        match backfill::step(
            root,
            writer,
            index.map(|i| i as &dyn Indexer),
            Duration::from_secs(5),
            &failed,
        ) {
            Ok(Some((_, true))) => continue,
            Ok(Some((id, false))) => {
                // Try it again next round, not in a tight loop.
                failed.insert(id);
                continue;
            }
            Ok(None) => failed.clear(),
            Err(e) => tracing::warn!("backfill: {e}"),
        }
        let until = std::time::Instant::now() + every;
        while std::time::Instant::now() < until && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
