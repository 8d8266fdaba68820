//! The placeholder key: 32 random bytes kept in a file beside the user's
//! data, so that the same secret gets the same placeholder in every run (a
//! reader can tell two mentions of one key apart from two different keys)
//! while nobody without the file can test a guess against a placeholder.
//!
//! The file holds the key as 64 lowercase hex digits and a newline: text,
//! so a user can see at a glance it is intact, and copy it between machines.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::Error;

/// A 32-byte secret key for the placeholders' HMAC. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// A key from known bytes (tests, or a caller that keeps keys itself).
    pub fn from_bytes(bytes: [u8; 32]) -> Key {
        Key(bytes)
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Reads the key at `path`, or makes a new random one there if there is
    /// no file. A new file is written whole under a temporary name in the
    /// same folder, synced, and then linked into place, so a reader never
    /// sees half a key and two processes racing to create it end up with
    /// the same one (the loser reads the winner's). On Unix it is mode 0600.
    /// A file that is not 64 hex digits (and an optional newline) is an
    /// error naming the path; it is never overwritten.
    pub fn load_or_create(path: &Path) -> Result<Key, Error> {
        match fs::read(path) {
            Ok(bytes) => parse(path, &bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => create(path),
            Err(source) => Err(io_error(path, source)),
        }
    }
}

fn io_error(path: &Path, source: io::Error) -> Error {
    Error::KeyIo {
        path: path.to_path_buf(),
        source,
    }
}

/// 64 hex digits, optionally followed by one `\n` (or `\r\n`).
fn parse(path: &Path, bytes: &[u8]) -> Result<Key, Error> {
    let text = bytes
        .strip_suffix(b"\n")
        .map(|b| b.strip_suffix(b"\r").unwrap_or(b))
        .unwrap_or(bytes);
    let mut key = [0u8; 32];
    match hex::decode_to_slice(text, &mut key) {
        Ok(()) => Ok(Key(key)),
        Err(_) => Err(Error::KeyFormat {
            path: path.to_path_buf(),
            found: format!("{} bytes", bytes.len()),
        }),
    }
}

fn create(path: &Path) -> Result<Key, Error> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| Error::KeyRandom {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let tmp = temp_path(path, &key);
    let written = write_synced(&tmp, format!("{}\n", hex::encode(key)).as_bytes())
        .and_then(|()| publish(&tmp, path));
    // The temporary name goes whether or not it was published.
    let _ = fs::remove_file(&tmp);
    match written {
        Ok(true) => {
            sync_dir(path);
            Ok(Key(key))
        }
        // Another process created the file first: use its key.
        Ok(false) => Key::load_or_create(path),
        Err(source) => Err(io_error(path, source)),
    }
}

/// `.<name>.<8 hex>.tmp` beside `path`; the hex comes from the new key's
/// own random bytes, so concurrent creators do not collide.
fn temp_path(path: &Path, key: &[u8; 32]) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "key".to_owned());
    path.with_file_name(format!(".{name}.{}.tmp", hex::encode(&key[..4])))
}

fn write_synced(tmp: &Path, contents: &[u8]) -> io::Result<()> {
    let mut file = open_private(tmp)?;
    file.write_all(contents)?;
    file.sync_all()
}

#[cfg(unix)]
fn open_private(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn open_private(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

/// Puts `tmp` at `path` unless something is already there: `Ok(false)`
/// then. A hard link never replaces a file; where links are not supported
/// a rename does (that race is then last-writer-wins).
fn publish(tmp: &Path, path: &Path) -> io::Result<bool> {
    match fs::hard_link(tmp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(_) => fs::rename(tmp, path).map(|()| true),
    }
}

/// Makes the new name durable (best effort: not every system can sync a
/// folder).
fn sync_dir(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}
