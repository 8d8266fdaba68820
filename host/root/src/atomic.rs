//! Atomic file writes: a temp file in the target's folder, then renamed over
//! the target, so a reader (or a crash) never sees half a file.
//!
//! Durability is batched: [`Folder::write`] does not fsync each file (on this
//! machine an fsync per chunk file made an import several times slower);
//! [`sync`] flushes the whole file system once, and callers do that before
//! they record the files in the manifest — so the manifest never claims a
//! file a power cut could still take away. [`write_durable`] syncs the one
//! file, for single writes (inline mode, the manifest itself).

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{Mode, OFlags};

/// Longest file name the host writes, bytes (ext4's and most others' limit).
pub const NAME_MAX: usize = 255;
/// What an atomic write's temp file is named with (a killed run's are
/// swept by the next import).
pub const TEMP_PREFIX: &str = ".chatmill-tmp-";

/// `name` when it is one plain file name: not empty, at most [`NAME_MAX`]
/// bytes, no `/` or `\\`, no NUL or other control character, and no leading
/// `.` (no `..`, no hidden or temp-looking file). Every file the host writes
/// under the root is checked so before the write: names are built from what
/// adapters and clients send, and the rules at the boundary are the first
/// line, this the second.
pub fn plain_name(name: &str) -> std::io::Result<&str> {
    let why = if name.is_empty() {
        "it is empty"
    } else if name.len() > NAME_MAX {
        "it is longer than 255 bytes"
    } else if name.contains(['/', '\\']) {
        "it holds a path separator"
    } else if name.starts_with('.') {
        "it starts with `.`"
    } else if name.chars().any(char::is_control) {
        "it holds a control character"
    } else {
        return Ok(name);
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "refusing to write `{}`: not one plain file name ({why})",
            name.escape_debug()
        ),
    ))
}

/// `dir/name`, when `name` is a [`plain_name`].
pub fn join_plain(dir: &Path, name: &str) -> std::io::Result<std::path::PathBuf> {
    Ok(dir.join(plain_name(name)?))
}

/// Replaces `path` whole, durably.
pub fn write_durable(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_durable_with(path, |w| w.write_all(bytes))
}

/// Replaces `path` whole, durably, with what `write` writes (through a
/// buffer: a large file is never held whole in memory).
pub fn write_durable_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)?;
    {
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, tmp.as_file_mut());
        write(&mut out)?;
        out.flush()?;
    }
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // The rename itself lives in the folder.
    if let Some(dir) = path.parent() {
        fs_err::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// An open folder that many files are written into: each write names the
/// file relative to the folder's handle (`openat`, `renameat`), so the
/// kernel does not walk the folder's path twice per file.
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
    pid: u32,
}

/// Numbers this process's temp files (with its pid, unique among the
/// processes writing at once).
static TEMP: AtomicU64 = AtomicU64::new(0);

impl Folder {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let fd = rustix::fs::open(
            path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            fd,
            pid: std::process::id(),
        })
    }

    /// Replaces the file `name` (no folders in it) whole; durable after the
    /// next [`sync`]. Owner-only, as [`write_durable`]'s temp files are.
    pub fn write(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let name = plain_name(name)?;
        let (tmp, file) = self.temp_file()?;
        let written = std::fs::File::from(file).write_all(bytes);
        let renamed = written.and_then(|()| {
            rustix::fs::renameat(&self.fd, &tmp, &self.fd, name).map_err(std::io::Error::from)
        });
        if renamed.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, &tmp, rustix::fs::AtFlags::empty());
        }
        renamed
    }

    /// Writes `bytes` to a new temp file of the folder, to be put in place
    /// later ([`Folder::place`]) or taken out ([`Folder::discard`]); its
    /// name. A killed run's are swept by the next import.
    pub fn stage(&self, bytes: &[u8]) -> std::io::Result<String> {
        let (tmp, file) = self.temp_file()?;
        if let Err(e) = std::fs::File::from(file).write_all(bytes) {
            self.discard(&tmp);
            return Err(e);
        }
        Ok(tmp)
    }

    /// Puts the staged temp file `tmp` in place as `name`, replacing it.
    pub fn place(&self, tmp: &str, name: &str) -> std::io::Result<()> {
        let name = plain_name(name)?;
        rustix::fs::renameat(&self.fd, tmp, &self.fd, name).map_err(std::io::Error::from)
    }

    /// Takes out the staged temp file `tmp` (gone already: nothing to do).
    pub fn discard(&self, tmp: &str) {
        let _ = rustix::fs::unlinkat(&self.fd, tmp, rustix::fs::AtFlags::empty());
    }

    /// A new temp file: one a killed run left under the same name (a pid
    /// used again) is stepped over.
    fn temp_file(&self) -> std::io::Result<(String, OwnedFd)> {
        loop {
            let name = format!(
                "{}{}-{}",
                TEMP_PREFIX,
                self.pid,
                TEMP.fetch_add(1, Ordering::Relaxed)
            );
            match rustix::fs::openat(
                &self.fd,
                &name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                Mode::RUSR | Mode::WUSR,
            ) {
                Ok(fd) => return Ok((name, fd)),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Makes everything written so far on `dir`'s file system durable (one
/// `syncfs`, not one fsync per file).
pub fn sync(dir: &Path) -> std::io::Result<()> {
    let d = fs_err::File::open(dir)?;
    rustix::fs::syncfs(&d).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::{Folder, plain_name};

    #[test]
    fn only_plain_names_are_written() {
        for bad in [
            "",
            "../escaped.md",
            "/tmp/abs.md",
            "a\0b.md",
            ".hidden.md",
            "..",
            "a\\b.md",
            "a\nb.md",
        ] {
            assert!(plain_name(bad).is_err(), "{bad:?}");
        }
        assert!(plain_name(&"a".repeat(256)).is_err());
        assert!(plain_name("chatgpt-3f9a1c2b7d4e-003-2024-05-01.md").is_ok());
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("root");
        std::fs::create_dir(&inner).unwrap();
        let folder = Folder::open(&inner).unwrap();
        let e = folder.write("../escaped.md", b"x").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(!dir.path().join("escaped.md").exists());
        assert_eq!(
            std::fs::read_dir(&inner).unwrap().count(),
            0,
            "no temp file left"
        );
    }

    #[test]
    fn a_staged_file_is_placed_whole_or_discarded() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::open(dir.path()).unwrap();
        let kept = folder.stage(b"kept").unwrap();
        let dropped = folder.stage(b"dropped").unwrap();
        assert!(!dir.path().join("a.md").exists(), "nothing in place yet");
        folder.place(&kept, "a.md").unwrap();
        folder.discard(&dropped);
        folder.discard(&dropped);
        assert_eq!(std::fs::read(dir.path().join("a.md")).unwrap(), b"kept");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let e = folder.place(&dropped, "b.md").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "a swept temp file");
        let other = folder.stage(b"x").unwrap();
        assert!(folder.place(&other, "../escaped.md").is_err());
    }

    #[test]
    fn writes_replace_whole_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.md");
        super::write_durable(&p, b"first").unwrap();
        super::write_durable(&p, b"second").unwrap();
        super::sync(dir.path()).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_folder_replaces_whole_files_and_steps_over_stale_temp_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::open(dir.path()).unwrap();
        // What a killed run with this pid would have left for the next
        // two temp names.
        let next = super::TEMP.load(std::sync::atomic::Ordering::Relaxed);
        for n in next..next + 2 {
            let stale = format!(".chatmill-tmp-{}-{n}", std::process::id());
            std::fs::write(dir.path().join(stale), b"half").unwrap();
        }
        folder.write("a.md", b"first").unwrap();
        folder.write("a.md", b"second").unwrap();
        let file = dir.path().join("a.md");
        assert_eq!(std::fs::read(&file).unwrap(), b"second");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // The two stale files, untouched, and the one written.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
        // A name with a folder that does not exist: an error, nothing left.
        assert!(folder.write("missing/b.md", b"x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }
}
