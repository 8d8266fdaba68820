//! The inventory: what an import looks at. Folders are walked recursively
//! (Claude Code keeps sessions in per-project folders; Takeout nests
//! `Takeout/My Activity/Gemini Apps/`), zip archives are opened in place
//! (users drop the ChatGPT / Claude / Takeout zip as-is), OS and archive junk
//! is left out, and everything is ordered oldest first.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// Where an input's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    File(PathBuf),
    /// An entry of a zip archive, by its name inside the archive.
    ZipEntry {
        archive: PathBuf,
        name: String,
    },
}

/// One input the import will consider.
#[derive(Debug, Clone)]
pub struct Item {
    pub source: Source,
    /// Its manifest key: the path as given, or `archive.zip!inner/path`.
    pub key: String,
    /// The file name (for `source_file` in chunk frontmatter).
    pub file_name: String,
    pub mtime: SystemTime,
}

/// An input's bytes, ready for an adapter: a plain file is read where it is;
/// a zip entry is copied (streamed) to a temporary file, which disappears
/// when this is dropped.
pub struct Materialized {
    pub path: PathBuf,
    _temp: Option<tempfile::TempPath>,
}

/// Why a folder or archive could not be listed.
#[derive(Debug, thiserror::Error)]
#[error("cannot read `{path}`: {message}")]
pub struct InventoryError {
    pub path: PathBuf,
    pub message: String,
}

/// Names that are never exports: OS and archive junk, and our own temp
/// files.
pub fn is_junk(name: &str) -> bool {
    name.split(['/', '\\']).any(|c| {
        c == "__MACOSX"
            || c == ".DS_Store"
            || c == "Thumbs.db"
            || c == "desktop.ini"
            || c.starts_with("._")
            || c.starts_with(".chatmill-tmp-")
    })
}

fn is_zip(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
}

fn file_name(s: &str) -> String {
    s.rsplit(['/', '\\']).next().unwrap_or(s).to_string()
}

fn walk(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = fs_err::read_dir(path)?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for e in entries {
            walk(&e, out)?;
        }
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}

fn zip_time(t: Option<zip::DateTime>) -> Option<SystemTime> {
    let t = t?;
    let date = chrono::NaiveDate::from_ymd_opt(t.year().into(), t.month().into(), t.day().into())?;
    let dt = date.and_hms_opt(t.hour().into(), t.minute().into(), t.second().into())?;
    Some(dt.and_utc().into())
}

/// Lists an archive's files. A broken archive is an error for that archive
/// only (the caller reports it and goes on).
fn list_zip(archive: &Path, out: &mut Vec<Item>) -> Result<(), InventoryError> {
    let err = |message: String| InventoryError {
        path: archive.to_path_buf(),
        message,
    };
    let file = fs_err::File::open(archive).map_err(|e| err(e.to_string()))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| err(format!("not a readable zip archive: {e}")))?;
    let outer_time = fs_err::metadata(archive)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    for i in 0..zip.len() {
        let entry = zip
            .by_index_raw(i)
            .map_err(|e| err(format!("entry {i}: {e}")))?;
        if entry.is_dir() {
            continue;
        }
        let name = entry
            .name()
            .map_err(|e| err(format!("entry {i} has an unreadable name: {e}")))?
            .into_owned();
        if is_junk(&name) {
            continue;
        }
        out.push(Item {
            key: format!("{}!{name}", archive.display()),
            file_name: file_name(&name),
            mtime: zip_time(entry.last_modified()).unwrap_or(outer_time),
            source: Source::ZipEntry {
                archive: archive.to_path_buf(),
                name,
            },
        });
    }
    Ok(())
}

/// Everything under `inputs`, oldest first (ties by key). Archives that
/// cannot be listed come back in the second list with the reason.
pub fn collect(inputs: &[PathBuf]) -> Result<(Vec<Item>, Vec<InventoryError>), InventoryError> {
    let mut files = Vec::new();
    for input in inputs {
        walk(input, &mut files).map_err(|e| InventoryError {
            path: input.clone(),
            message: e.to_string(),
        })?;
    }
    let mut items = Vec::new();
    let mut broken = Vec::new();
    for path in files {
        if is_junk(&path.to_string_lossy()) {
            continue;
        }
        if is_zip(&path) {
            if let Err(e) = list_zip(&path, &mut items) {
                broken.push(e);
            }
            continue;
        }
        let mtime = fs_err::metadata(&path)
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        items.push(Item {
            key: path.display().to_string(),
            file_name: file_name(&path.to_string_lossy()),
            mtime,
            source: Source::File(path),
        });
    }
    items.sort_by(|a, b| a.mtime.cmp(&b.mtime).then_with(|| a.key.cmp(&b.key)));
    Ok((items, broken))
}

fn copy_hashing(mut from: impl Read, mut to: impl Write) -> std::io::Result<(String, u64)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut size = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        size += n as u64;
        h.update(&buf[..n]);
        to.write_all(&buf[..n])?;
    }
    to.flush()?;
    Ok((hex::encode(h.finalize()), size))
}

impl Item {
    /// The content hash and size, without copying anything.
    pub fn hash(&self) -> std::io::Result<(String, u64)> {
        match &self.source {
            Source::File(p) => copy_hashing(fs_err::File::open(p)?, std::io::sink()),
            Source::ZipEntry { archive, name } => {
                let mut zip = open_zip(archive)?;
                let entry = zip.by_name(name).map_err(std::io::Error::other)?;
                copy_hashing(entry, std::io::sink())
            }
        }
    }

    /// Makes the bytes available as a file for an adapter.
    pub fn materialize(&self, temp_dir: &Path) -> std::io::Result<Materialized> {
        match &self.source {
            Source::File(p) => Ok(Materialized {
                path: p.clone(),
                _temp: None,
            }),
            Source::ZipEntry { archive, name } => {
                let mut zip = open_zip(archive)?;
                let entry = zip.by_name(name).map_err(std::io::Error::other)?;
                // Keep the entry's own name last, so adapters that look at
                // the file name (sharded ChatGPT, Claude Code session ids)
                // see it.
                let tmp = tempfile::Builder::new()
                    .prefix(".chatmill-tmp-")
                    .suffix(&format!("-{}", file_name(name)))
                    .tempfile_in(temp_dir)?;
                copy_hashing(entry, std::io::BufWriter::new(tmp.as_file()))?;
                let temp = tmp.into_temp_path();
                Ok(Materialized {
                    path: temp.to_path_buf(),
                    _temp: Some(temp),
                })
            }
        }
    }
}

fn open_zip(archive: &Path) -> std::io::Result<zip::ZipArchive<std::io::BufReader<fs_err::File>>> {
    let f = fs_err::File::open(archive)?;
    zip::ZipArchive::new(std::io::BufReader::new(f)).map_err(std::io::Error::other)
}

/// Removes temp files a killed run left behind in `dir` (not recursive).
pub fn sweep_temp_files(dir: &Path) -> usize {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".chatmill-tmp-")
        })
        .filter(|e| fs_err::remove_file(e.path()).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_zip(path: &Path, entries: &[(&str, &[u8])]) {
        let f = std::fs::File::create(path).unwrap();
        let mut z = zip::ZipWriter::new(f);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in entries {
            if name.ends_with('/') {
                z.add_directory(*name, opts).unwrap();
            } else {
                z.start_file(*name, opts).unwrap();
                z.write_all(bytes).unwrap();
            }
        }
        z.finish().unwrap();
    }

    #[test]
    fn zips_are_opened_in_place_and_junk_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        std::fs::create_dir_all(raw.join("nested")).unwrap();
        std::fs::write(raw.join("nested/a.jsonl"), b"{}\n").unwrap();
        std::fs::write(raw.join(".DS_Store"), b"junk").unwrap();
        write_zip(
            &raw.join("export.zip"),
            &[
                ("conversations.json", b"[]"),
                ("__MACOSX/._conversations.json", b"junk"),
                ("Takeout/My Activity/Gemini Apps/", b""),
                ("Takeout/My Activity/Gemini Apps/MyActivity.json", b"[1]"),
            ],
        );
        std::fs::write(raw.join("broken.zip"), b"PK\x03\x04 not really").unwrap();
        let (items, broken) = collect(std::slice::from_ref(&raw)).unwrap();
        let mut keys: Vec<String> = items
            .iter()
            .map(|i| i.key.replace(&raw.display().to_string(), "RAW"))
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "RAW/export.zip!Takeout/My Activity/Gemini Apps/MyActivity.json",
                "RAW/export.zip!conversations.json",
                "RAW/nested/a.jsonl",
            ]
        );
        assert_eq!(broken.len(), 1);
        assert!(broken[0].message.contains("zip"), "{}", broken[0]);

        let takeout = items
            .iter()
            .find(|i| i.file_name == "MyActivity.json")
            .unwrap();
        let m = takeout.materialize(dir.path()).unwrap();
        assert_eq!(std::fs::read(&m.path).unwrap(), b"[1]");
        assert!(m.path.to_string_lossy().ends_with("-MyActivity.json"));
        assert_eq!(takeout.hash().unwrap().1, 3);
        let temp = m.path.clone();
        drop(m);
        assert!(!temp.exists(), "the temporary copy is removed");
    }

    #[test]
    fn leftover_temp_files_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".chatmill-tmp-abc"), b"half").unwrap();
        std::fs::write(dir.path().join("keep.md"), b"chunk").unwrap();
        assert_eq!(sweep_temp_files(dir.path()), 1);
        assert!(dir.path().join("keep.md").exists());
    }
}
