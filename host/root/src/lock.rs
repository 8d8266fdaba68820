//! One writer at a time on a root: an advisory lock (`flock`) on
//! `ROOT/.chatmill/lock`, taken per write transaction (a group of inputs of an
//! import, one inline turn), so `chatmill import` and `chatmill serve` can
//! run together; each re-reads the manifest after taking the lock.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, flock};

/// Held while it lives.
pub struct RootLock {
    file: fs_err::File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot open the lock file `{path}`: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("another chatmill process has been writing to this root for over {0:?}")]
    Busy(Duration),
}

impl RootLock {
    /// Waits up to `timeout` for the lock.
    pub fn acquire(root: &Path, timeout: Duration) -> Result<Self, LockError> {
        let root = crate::root::Root::new(root);
        let path = root.lock();
        let open = || -> std::io::Result<fs_err::File> {
            fs_err::create_dir_all(root.state())?;
            fs_err::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
        };
        let file = open().map_err(|source| LockError::Open {
            path: path.clone(),
            source,
        })?;
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(Self { file }),
                Err(_) if started.elapsed() < timeout => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(_) => return Err(LockError::Busy(timeout)),
            }
        }
    }
}

impl Drop for RootLock {
    fn drop(&mut self) {
        let _ = flock(&self.file, FlockOperation::Unlock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let a = RootLock::acquire(dir.path(), Duration::from_millis(10)).unwrap();
        let busy = RootLock::acquire(dir.path(), Duration::from_millis(30));
        assert!(matches!(busy, Err(LockError::Busy(_))));
        drop(a);
        RootLock::acquire(dir.path(), Duration::from_millis(10)).unwrap();
    }
}
