//! The write-ahead log's checkpoints, on a thread of their own.
//!
//! SQLite copies the log back into the database file (a checkpoint) on the
//! connection that commits, once the log holds 1,000 pages: a tenth of an
//! import's index thread, the one thread every chunk goes through. Here
//! the writing connection only says when, and a thread with a connection
//! of its own copies, passively (it never blocks the writer or a reader).
//! Should the log still grow to [`CATCH_UP`] pages (the thread behind, or a
//! reader holding the log), the writer checkpoints itself, as SQLite would.
//! Nothing about durability changes: a commit is in the log either way.

use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use rusqlite::Connection;

/// Log pages after which a checkpoint is asked for (SQLite's default).
const AFTER: c_int = 1000;
/// Log pages after which the writer checkpoints itself.
const CATCH_UP: c_int = 8000;

#[derive(Default)]
struct State {
    asked: bool,
    /// Checkpoints the thread made.
    made: u64,
    closing: bool,
    thread: Option<JoinHandle<()>>,
}

/// What the writing connection's hook and the checkpointing thread share.
struct Shared {
    path: PathBuf,
    state: Mutex<State>,
    wake: Condvar,
}

/// The checkpoints of one store's log; ends its thread when dropped.
pub(super) struct Checkpoints(Arc<Shared>);

impl Checkpoints {
    /// Asks for the checkpoints of `conn`'s log (the store at `path`) on a
    /// thread, started at the first one.
    pub(super) fn start(conn: &mut Connection, path: &Path) -> rusqlite::Result<Self> {
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            state: Mutex::default(),
            wake: Condvar::new(),
        });
        let hook = Arc::clone(&shared);
        conn.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages: c_int| {
            if pages >= CATCH_UP {
                if let Err(e) = wal.checkpoint() {
                    tracing::debug!("checkpoint on the writer: {e}");
                }
            } else if pages >= AFTER {
                hook.ask();
            }
            Ok(())
        }))?;
        Ok(Self(shared))
    }
}

#[cfg(test)]
impl Checkpoints {
    /// Checkpoints the thread made.
    pub(super) fn made(&self) -> u64 {
        self.0.lock().made
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the thread for a checkpoint, starting it if need be.
    fn ask(self: &Arc<Self>) {
        let mut state = self.lock();
        state.asked = true;
        if state.thread.is_none() && !state.closing {
            let me = Arc::clone(self);
            state.thread = std::thread::Builder::new()
                .name("chatmill-checkpoint".into())
                .spawn(move || me.run())
                .inspect_err(|e| tracing::debug!("no checkpoint thread: {e}"))
                .ok();
        }
        drop(state);
        self.wake.notify_one();
    }

    /// The thread: a passive checkpoint whenever asked, until closing.
    fn run(&self) {
        let conn = match Connection::open(&self.path) {
            Ok(conn) => conn,
            Err(e) => {
                tracing::debug!("no checkpoint connection: {e}");
                return;
            }
        };
        loop {
            let mut state = self.lock();
            while !state.asked && !state.closing {
                state = self
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.closing {
                return;
            }
            state.asked = false;
            drop(state);
            if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                tracing::debug!("checkpoint: {e}");
            }
            self.lock().made += 1;
        }
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        let thread = {
            let mut state = self.0.lock();
            state.closing = true;
            state.thread.take()
        };
        self.0.wake.notify_one();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::Store;
    use crate::embedded::SqliteStore;
    use crate::embedded::tests::rec;

    #[test]
    fn a_thread_checkpoints_the_log_and_it_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.sqlite3");
        let store = SqliteStore::open(&path).unwrap();
        // The keyword file's log: the documents are its writes.
        let wal =
            || std::fs::metadata(dir.path().join("i-keywords.sqlite3-wal")).map_or(0, |m| m.len());
        // ~850 pages of 8 KiB a write: two pass `AFTER`.
        let write = |n: usize| {
            let words: Vec<String> = (0..2_000_000).map(|i| format!("w{}", i % 99_991)).collect();
            let text = words.join(" ");
            let r = rec(&format!("c{n}"), n as i64, "local", "a", &text);
            store.upsert(&[r], &[vec![1.0, 0.0]], "m").unwrap();
        };
        write(0);
        write(1);
        let checkpoints = store.keyword_checkpoints.as_ref().expect("the hook is set");
        let waited = Instant::now();
        while checkpoints.made() == 0 {
            assert!(waited.elapsed() < Duration::from_secs(20), "no checkpoint");
            std::thread::sleep(Duration::from_millis(10));
        }
        let after_one = wal();
        assert!(
            after_one > 8_000_000,
            "the writer did not checkpoint: {after_one}"
        );
        // Copied back: the next write starts the log over, not after it.
        write(2);
        assert!(wal() <= after_one + 1_000_000, "{} > {after_one}", wal());
        let hits = store.keyword("w17", 5, &crate::Filter::default()).unwrap();
        assert_eq!(hits.len(), 3);
    }
}
