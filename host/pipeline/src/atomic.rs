//! Atomic file writes: a temp file in the target's folder, then renamed over
//! the target, so a reader (or a crash) never sees half a file.
//!
//! Durability is batched: [`write`] does not fsync each file (on this
//! machine an fsync per chunk file made an import several times slower);
//! [`sync`] flushes the whole file system once, and callers do that before
//! they record the files in the manifest — so the manifest never claims a
//! file a power cut could still take away. [`write_durable`] syncs the one
//! file, for single writes (inline mode, the manifest itself).

use std::io::Write;
use std::path::Path;

fn write_inner(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".chatmill-tmp-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if durable {
        tmp.as_file().sync_data()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Replaces `path` whole; durable after the next [`sync`].
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_inner(path, bytes, false)
}

/// Replaces `path` whole, durably.
pub fn write_durable(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_inner(path, bytes, true)?;
    // The rename itself lives in the folder.
    if let Some(dir) = path.parent() {
        fs_err::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Makes everything written so far on `dir`'s file system durable (one
/// `syncfs`, not one fsync per file).
pub fn sync(dir: &Path) -> std::io::Result<()> {
    let d = fs_err::File::open(dir)?;
    rustix::fs::syncfs(&d).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    #[test]
    fn writes_replace_whole_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.md");
        super::write(&p, b"first").unwrap();
        super::write_durable(&p, b"second").unwrap();
        super::sync(dir.path()).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
