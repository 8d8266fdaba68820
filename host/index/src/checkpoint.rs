//! The embedded store's WAL checkpoints, on a thread of their own.
//!
//! SQLite appends every committed page to the write-ahead log and, by
//! default, the commit that takes the log past 1,000 pages copies it back
//! into the database (a checkpoint) before it returns: two fsyncs and the
//! copy, on the writing thread. An import's index thread is the pipeline's
//! one serial stage, so on a disk it stood still for every checkpoint (~95
//! of them, ~7 ms each, per 100k chunks), and an inline turn that crossed
//! the line paid one before its answer.
//!
//! Here the writer's commit only wakes a checkpointer thread, which runs a
//! `PASSIVE` checkpoint on a connection of its own: it copies what is
//! committed without blocking the writer or any reader, and the writer
//! starts the log again from its beginning once everything in it is copied.
//! Durability is SQLite's own (`synchronous = NORMAL` in WAL mode: the
//! checkpoint syncs the log before it copies and the database after). If
//! the thread falls far behind (the log past [`HARD_PAGES`]), the writer
//! checkpoints itself, as SQLite would, so the log stays bounded (give or
//! take what is written while one of the thread's checkpoints runs; a reader
//! holding an old snapshot holds the log back, as it always did).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, OpenFlags};

/// A commit that leaves at least this many pages in the log wakes the
/// checkpointer (SQLite's own autocheckpoint threshold).
pub(crate) const SOFT_PAGES: i32 = 1_000;

/// A commit that leaves at least this many pages in the log (128 MiB at
/// 8 KiB pages) checkpoints on the writer's thread: the background one has
/// not kept up.
pub(crate) const HARD_PAGES: i32 = 16_384;

/// What the writer's hook and the thread share.
#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Checkpoints the thread ran that copied pages, and those the writer
    /// ran itself.
    background: AtomicU64,
    inline: AtomicU64,
    /// Held by a test to keep the thread from checkpointing.
    #[cfg(test)]
    hold: Mutex<()>,
}

#[derive(Default)]
struct State {
    wanted: bool,
    closing: bool,
}

/// Owns the checkpointer thread of one store; dropping it stops the thread
/// (after the checkpoint it may be running).
pub(crate) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Hands the checkpoints of `writer` (a connection to the WAL database
    /// at `path`) to a new thread. Replaces SQLite's autocheckpoint on that
    /// connection; a `PRAGMA wal_autocheckpoint` on it would undo this.
    pub(crate) fn start(writer: &mut Connection, path: &Path) -> rusqlite::Result<Self> {
        Self::with_limits(writer, path, SOFT_PAGES, HARD_PAGES)
    }

    /// [`Checkpointer::start`] with other thresholds (in pages).
    fn with_limits(
        writer: &mut Connection,
        path: &Path,
        soft: i32,
        hard: i32,
    ) -> rusqlite::Result<Self> {
        let shared = Arc::new(Shared::default());
        let hook = Arc::clone(&shared);
        writer.wal_hook(Some(
            move |wal: &mut rusqlite::hooks::Wal, pages: i32| -> rusqlite::Result<()> {
                if pages >= hard {
                    // Busy (the thread is checkpointing) or not: the commit
                    // itself has succeeded; the next one tries again.
                    if wal.checkpoint_v2(CheckpointMode::PASSIVE).is_ok() {
                        hook.inline.fetch_add(1, Ordering::Relaxed);
                    }
                } else if pages >= soft {
                    hook.request();
                }
                Ok(())
            },
        ))?;
        // Absolute: the thread opens it later, whatever the working
        // folder is by then.
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let run = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("chatmill-checkpoint".into())
            .spawn(move || run.serve(&path))
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// Checkpoints the thread has run, and the writer itself.
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.shared.background.load(Ordering::Relaxed),
            self.shared.inline.load(Ordering::Relaxed),
        )
    }
}

impl Shared {
    fn request(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !state.wanted {
            state.wanted = true;
            self.wake.notify_one();
        }
    }

    /// The thread: one checkpoint per wake-up, on a connection opened at
    /// the first.
    fn serve(&self, path: &Path) {
        let mut conn: Option<Connection> = None;
        loop {
            {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                while !state.wanted && !state.closing {
                    state = self
                        .wake
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                if state.closing {
                    // The last connection to close checkpoints what is left.
                    return;
                }
                state.wanted = false;
            }
            if conn.is_none() {
                match open(path) {
                    Ok(c) => conn = Some(c),
                    Err(e) => {
                        tracing::debug!("checkpointer cannot open {}: {e}", path.display());
                        continue;
                    }
                }
            }
            if let Some(c) = &conn {
                #[cfg(test)]
                let _held = self.hold.lock().unwrap_or_else(PoisonError::into_inner);
                match c.wal_checkpoint_v2(Some("main"), CheckpointMode::PASSIVE) {
                    Ok((_, copied)) => {
                        if copied > 0 {
                            self.background.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    // Another checkpoint (the writer's, another process's)
                    // is running; the next commit asks again.
                    Err(e) => tracing::debug!("checkpoint of {}: {e}", path.display()),
                }
            }
        }
    }
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    // Never created here: a store moved aside leaves no empty one behind.
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // As the writer's: the checkpoint syncs the log, then the database.
    conn.execute_batch("PRAGMA synchronous = NORMAL;")?;
    Ok(conn)
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        {
            let mut state = self
                .shared
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            state.closing = true;
            self.shared.wake.notify_one();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const SOFT: i32 = 40;
    const HARD: i32 = 300;
    /// Rows (one 8 KiB page each) per transaction.
    const ROWS: i64 = 50;

    /// A WAL database with one table, its writer handing checkpoints over
    /// (checkpointing itself past `hard` pages).
    fn store(dir: &Path, hard: i32) -> (Connection, Checkpointer, PathBuf) {
        let path = dir.join("db.sqlite3");
        let mut conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA page_size = 8192; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
             CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB NOT NULL);",
        )
        .unwrap();
        let cp = Checkpointer::with_limits(&mut conn, &path, SOFT, hard).unwrap();
        (conn, cp, path)
    }

    fn wal_bytes(path: &Path) -> u64 {
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        std::fs::metadata(wal).map_or(0, |m| m.len())
    }

    /// A transaction of `ROWS` new pages: past the soft threshold at every
    /// commit.
    fn write_batch(conn: &mut Connection) {
        let tx = conn.transaction().unwrap();
        {
            let mut insert = tx.prepare("INSERT INTO t (b) VALUES (?1)").unwrap();
            for _ in 0..ROWS {
                insert.execute([vec![7u8; 7_000]]).unwrap();
            }
        }
        tx.commit().unwrap();
    }

    fn rows(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    /// The log's size bound: the hard limit and the transaction that
    /// crossed it, plus one more written while a checkpoint ran.
    const MAX_LOG: u64 = (HARD as u64 + 2 * ROWS as u64 + 2) * 8_224;

    #[test]
    fn the_thread_checkpoints_and_the_log_starts_again() {
        let dir = tempfile::tempdir().unwrap();
        // The writer never checkpoints: only the thread can start the log
        // again.
        let (mut conn, cp, path) = store(dir.path(), i32::MAX);
        let batches = 40; // 2,000 pages
        for _ in 0..batches {
            write_batch(&mut conn);
            // A writer that pauses now and then lets the thread catch up.
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // The log was started again: it holds far less than was written.
        let written = (batches * ROWS) as u64 * 8_216;
        assert!(
            wal_bytes(&path) < written / 2,
            "log {} bytes",
            wal_bytes(&path)
        );
        let (background, inline) = cp.counts();
        assert!(background >= 1, "the thread copied nothing");
        assert_eq!(inline, 0);
        assert_eq!(rows(&conn), batches * ROWS);
        drop(cp);
        drop(conn);
        // Closed: the last connection checkpointed the rest and removed the
        // log; a new connection sees every row.
        assert_eq!(wal_bytes(&path), 0);
        assert_eq!(rows(&Connection::open(&path).unwrap()), batches * ROWS);
    }

    #[test]
    fn a_writer_ahead_of_the_thread_checkpoints_itself_past_the_hard_limit() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, cp, path) = store(dir.path(), HARD);
        let batches = 40;
        {
            // The thread is kept from checkpointing: only the writer's own
            // checkpoints can bound the log.
            let _held = cp.shared.hold.lock().unwrap();
            for _ in 0..batches {
                write_batch(&mut conn);
                assert!(
                    wal_bytes(&path) <= MAX_LOG,
                    "log {} bytes",
                    wal_bytes(&path)
                );
            }
        }
        let (_, inline) = cp.counts();
        assert!(inline >= 1, "the writer never checkpointed itself");
        assert_eq!(rows(&conn), batches * ROWS);
    }
}
