//! Durability by group of inputs. An import holds the root lock for a
//! group of inputs and makes the group durable at its end, once: one
//! `syncfs` (every chunk and asset file of the group) and one manifest save.
//! A group closes after the input during which [`GROUP_TIME`] ran out, so
//! many small inputs share one save (a save per input made a folder of 300
//! Claude Code sessions wait on the disk most of its wall time) and a large
//! input is a group of its own.
//!
//! The kill guarantee holds as it did per input: files are written
//! atomically before the manifest names them, and a group's inputs are
//! recorded only by its save, so a killed run redoes at most the group it
//! was in, writing the same chunk ids and bytes. The lock is held across the
//! group because the records of its inputs live only in this run's memory
//! until the save: another writer (an inline server) that saved the
//! manifest between two of them would have its records overwritten or ours
//! lost. A writer waiting for the lock waits at most one group.
//!
//! The group knows nothing of how its inputs are processed: a commit loop
//! that prepares inputs on many cores and commits them in order calls
//! [`Group::enter`] before committing an input, and after it
//! [`Group::close`] once [`Group::time_up`], as the one-at-a-time loop does.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chatmill_root::lock::RootLock;
use chatmill_root::manifest::{self, Manifest};

use super::error::ImportError;

/// How long a group of inputs stays open, at least: what a killed run may
/// have to redo, and how long an inline server may wait for the lock.
pub(super) const GROUP_TIME: Duration = Duration::from_millis(250);

/// How long a writer waits for the root lock.
const LOCK_WAIT: Duration = Duration::from_secs(600);

/// The open group: the root lock, and since when it is held.
struct Open {
    _lock: RootLock,
    since: Instant,
}

/// The groups of one import.
pub(super) struct Group {
    /// How long a group stays open ([`GROUP_TIME`]; zero: one input each).
    time: Duration,
    root: PathBuf,
    manifest_path: PathBuf,
    /// The manifest file as this run last saw it (loaded or saved).
    stamp: Option<(std::time::SystemTime, u64)>,
    open: Option<Open>,
    /// Groups made durable (for the tests and the trace).
    pub(super) saves: u32,
}

impl Group {
    pub(super) fn new(root: PathBuf, manifest_path: PathBuf, time: Duration) -> Self {
        let stamp = manifest::stamp(&manifest_path);
        Self {
            time,
            root,
            manifest_path,
            stamp,
            open: None,
            saves: 0,
        }
    }

    /// Opens a group unless one is open (taking the root lock). Returns
    /// whether another writer saved the manifest since this run last saw
    /// it: the caller then loads it again before going on.
    pub(super) fn enter(&mut self) -> Result<bool, ImportError> {
        if self.open.is_some() {
            return Ok(false);
        }
        let lock = RootLock::acquire(&self.root, LOCK_WAIT)?;
        self.open = Some(Open {
            _lock: lock,
            since: Instant::now(),
        });
        let now = manifest::stamp(&self.manifest_path);
        let changed = now != self.stamp;
        self.stamp = now;
        Ok(changed)
    }

    /// Whether a group is open and its time is up: the input just recorded
    /// is its last, and the caller closes it.
    pub(super) fn time_up(&self) -> bool {
        self.open
            .as_ref()
            .is_some_and(|open| open.since.elapsed() >= self.time)
    }

    /// Makes the open group durable (one `syncfs`, one manifest save) and
    /// lets the lock go.
    pub(super) fn close(&mut self, manifest: &Manifest) -> Result<(), ImportError> {
        if self.open.is_none() {
            return Ok(());
        }
        manifest.save(&self.manifest_path)?;
        self.saves += 1;
        self.stamp = manifest::stamp(&self.manifest_path);
        self.open = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_share_a_group_until_its_time_is_up_and_the_lock_is_held_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let path = chatmill_root::root::Root::new(&root).manifest();
        let mut group = Group::new(root.clone(), path.clone(), GROUP_TIME);
        let m = Manifest::new();
        assert!(!group.enter().unwrap(), "no manifest, and none saved since");
        for _ in 0..50 {
            assert!(!group.enter().unwrap());
            assert!(!group.time_up(), "the group stays open while its time runs");
        }
        assert_eq!(group.saves, 0, "quick inputs share the open group");
        assert!(!path.exists());
        let busy = RootLock::acquire(&root, Duration::from_millis(30));
        assert!(busy.is_err(), "the lock is held while the group is open");
        std::thread::sleep(GROUP_TIME);
        assert!(group.time_up());
        group.close(&m).unwrap();
        assert!(!group.time_up(), "none is open");
        assert_eq!(group.saves, 1, "saved once its time is up");
        assert_eq!(Manifest::load(&path).unwrap(), m);
        // Between groups the lock is free, and another writer's save is
        // noticed by the next group.
        drop(RootLock::acquire(&root, Duration::from_millis(30)).unwrap());
        std::fs::write(&path, r#"{"version": 1, "files": {}, "conversations": {}}"#).unwrap();
        assert!(group.enter().unwrap());
        group.close(&m).unwrap();
        group.close(&m).unwrap();
        assert_eq!(group.saves, 2, "closing with no group open saves nothing");
    }
}
