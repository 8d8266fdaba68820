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
    /// The results file of a batch whose requests this file holds (see
    /// [`pair_batches`]): parsed together with it, as one input.
    pub companion: Option<Box<Item>>,
}

/// An input's bytes, ready for an adapter: a plain file is read where it is;
/// a zip entry is copied (streamed) to a temporary file, which disappears
/// when this is dropped.
pub struct Materialized {
    pub path: PathBuf,
    /// The content hash and size, when making the bytes available read
    /// them (a zip entry's copy hashes what it copies).
    pub digest: Option<(String, u64)>,
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
            || c.starts_with(crate::root::TEMP_PREFIX)
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
    // A root's conversation notes are made from its chunks: never an input
    // (the Markdown adapter would otherwise read them as conversations).
    let notes = if path.is_dir() {
        crate::notes::is_notes_folder(path)
    } else {
        path.parent().is_some_and(crate::notes::is_notes_folder)
    };
    if notes {
        tracing::debug!("not an input (a root's notes): {}", path.display());
        return Ok(());
    }
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
            companion: None,
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
            companion: None,
        });
    }
    items.sort_by(|a, b| a.mtime.cmp(&b.mtime).then_with(|| a.key.cmp(&b.key)));
    Ok((pair_batches(items), broken))
}

/// Words that name the request side of a batch, and what the results side
/// of the same batch is then called.
const BATCH_SIDES: &[(&str, &[&str])] = &[
    ("input", &["output"]),
    ("inputs", &["outputs"]),
    ("request", &["response", "result"]),
    ("requests", &["responses", "results"]),
];

/// The folder an item sits in (inside its archive, for a zip entry).
fn folder(item: &Item) -> String {
    match &item.source {
        Source::File(p) => p
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        Source::ZipEntry { archive, name } => {
            let dir = name.rsplit_once(['/', '\\']).map_or("", |(d, _)| d);
            format!("{}!{dir}", archive.display())
        }
    }
}

/// The names (lowercase) the results file of a batch whose requests are in
/// `name` may have: one request-side word of the name swapped for its
/// results-side word, everything else equal. `batch_input.jsonl` →
/// `batch_output.jsonl`; `requests.jsonl` → `responses.jsonl`, `results.jsonl`.
fn results_names(name: &str) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        if !bytes[start].is_ascii_alphabetic() {
            start += 1;
            continue;
        }
        let end = (start..bytes.len())
            .find(|&i| !bytes[i].is_ascii_alphabetic())
            .unwrap_or(bytes.len());
        let word = &lower[start..end];
        for (request, results) in BATCH_SIDES {
            if word == *request {
                for r in *results {
                    out.push(format!("{}{r}{}", &lower[..start], &lower[end..]));
                }
            }
        }
        start = end;
    }
    out
}

/// Pairs the request and results files of a batch (OpenAI and Anthropic
/// batch input/output JSONL, and any format split the same way): a file
/// whose name differs from another one's in the same folder only by a
/// request-side word (`input`, `request(s)`) where the other has the
/// results-side word (`output`, `response(s)`, `result(s)`). The results
/// file becomes the request file's [`Item::companion`], so the adapter sees
/// both and can join each answer to its question. Only unambiguous pairs: a
/// results file two request files could claim stays on its own.
pub fn pair_batches(items: Vec<Item>) -> Vec<Item> {
    use std::collections::HashMap;
    let place = |i: &Item| (folder(i), i.file_name.to_ascii_lowercase());
    let by_place: HashMap<(String, String), usize> = items
        .iter()
        .enumerate()
        .map(|(n, i)| (place(i), n))
        .collect();
    // request file -> results file, by position.
    let mut pairs: HashMap<usize, usize> = HashMap::new();
    let mut claims: HashMap<usize, usize> = HashMap::new();
    for (n, item) in items.iter().enumerate() {
        let dir = folder(item);
        let found: Vec<usize> = results_names(&item.file_name)
            .into_iter()
            .filter_map(|name| by_place.get(&(dir.clone(), name)).copied())
            .filter(|&m| m != n)
            .collect();
        if let [m] = found[..] {
            pairs.insert(n, m);
            *claims.entry(m).or_default() += 1;
        }
    }
    // A results file claimed twice, or one that is itself a request file
    // (or claimed) in another pair, is left alone.
    let requests: std::collections::HashSet<usize> = pairs.keys().copied().collect();
    pairs.retain(|n, m| claims[m] == 1 && !claims.contains_key(n) && !requests.contains(m));
    let companions: std::collections::HashSet<usize> = pairs.values().copied().collect();
    let mut slots: Vec<Option<Item>> = items.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    for n in 0..slots.len() {
        if companions.contains(&n) {
            continue;
        }
        let Some(mut item) = slots[n].take() else {
            continue;
        };
        if let Some(&m) = pairs.get(&n) {
            item.companion = slots[m].take().map(Box::new);
        }
        out.push(item);
    }
    out
}

/// Copies `from` to `to`, returning the SHA-256 (hex) and size of what
/// was copied.
pub(crate) fn copy_hashing(
    mut from: impl Read,
    mut to: impl Write,
) -> std::io::Result<(String, u64)> {
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

    /// Copies the bytes to `to`, returning their hash and size.
    pub fn copy_into(&self, to: impl Write) -> std::io::Result<(String, u64)> {
        match &self.source {
            Source::File(p) => copy_hashing(fs_err::File::open(p)?, to),
            Source::ZipEntry { archive, name } => {
                let mut zip = open_zip(archive)?;
                let entry = zip.by_name(name).map_err(std::io::Error::other)?;
                copy_hashing(entry, to)
            }
        }
    }

    /// Makes the bytes available as a file for an adapter.
    pub fn materialize(&self, temp_dir: &Path) -> std::io::Result<Materialized> {
        match &self.source {
            Source::File(p) => Ok(Materialized {
                path: p.clone(),
                digest: None,
                _temp: None,
            }),
            Source::ZipEntry { archive, name } => {
                let mut zip = open_zip(archive)?;
                let entry = zip.by_name(name).map_err(std::io::Error::other)?;
                // Keep the entry's own name last, so adapters that look at
                // the file name (sharded ChatGPT, Claude Code session ids)
                // see it.
                let tmp = tempfile::Builder::new()
                    .prefix(crate::root::TEMP_PREFIX)
                    .suffix(&format!("-{}", file_name(name)))
                    .tempfile_in(temp_dir)?;
                let digest = copy_hashing(entry, std::io::BufWriter::new(tmp.as_file()))?;
                let temp = tmp.into_temp_path();
                Ok(Materialized {
                    path: temp.to_path_buf(),
                    digest: Some(digest),
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
                .starts_with(crate::root::TEMP_PREFIX)
        })
        .filter(|e| fs_err::remove_file(e.path()).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str) -> Item {
        Item {
            source: Source::File(PathBuf::from(path)),
            key: path.into(),
            file_name: file_name(path),
            mtime: SystemTime::UNIX_EPOCH,
            companion: None,
        }
    }

    #[test]
    fn a_root_s_notes_are_never_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let notes = root.join("conversations");
        std::fs::create_dir_all(&notes).unwrap();
        std::fs::create_dir_all(root.join("raw")).unwrap();
        std::fs::write(root.join(".processing-manifest.json"), "{}").unwrap();
        std::fs::write(notes.join("2024-05-01 Bread.md"), "# Bread\n").unwrap();
        std::fs::write(root.join("raw/s.md"), "# a log\n").unwrap();
        // Another folder called `conversations` (an export's) is read.
        let export = dir.path().join("export/conversations");
        std::fs::create_dir_all(&export).unwrap();
        std::fs::write(export.join("c.json"), "[]").unwrap();
        for input in [
            dir.path().to_path_buf(),
            notes.clone(),
            notes.join("2024-05-01 Bread.md"),
        ] {
            let (items, _) = collect(&[input]).unwrap();
            assert!(
                items.iter().all(|i| !i.key.contains("Bread")),
                "{:?}",
                items.iter().map(|i| &i.key).collect::<Vec<_>>()
            );
        }
        let (items, _) = collect(&[dir.path().to_path_buf()]).unwrap();
        assert!(items.iter().any(|i| i.file_name == "c.json"));
        assert!(items.iter().any(|i| i.file_name == "s.md"));
    }

    /// (request file, its companion) for each item after pairing.
    fn paired(paths: &[&str]) -> Vec<(String, Option<String>)> {
        pair_batches(paths.iter().map(|p| file(p)).collect())
            .into_iter()
            .map(|i| (i.key, i.companion.map(|c| c.key)))
            .collect()
    }

    #[test]
    fn batch_request_and_results_files_are_paired() {
        let got = paired(&[
            "raw/navirag-batch_output.jsonl",
            "raw/navirag-batch_input.jsonl",
            "raw/conversations.json",
            "raw/anthropic/Requests.JSONL",
            "raw/anthropic/results.jsonl",
            "raw/other/batch_output.jsonl",
        ]);
        assert_eq!(
            got,
            vec![
                (
                    "raw/navirag-batch_input.jsonl".into(),
                    Some("raw/navirag-batch_output.jsonl".into())
                ),
                ("raw/conversations.json".into(), None),
                (
                    "raw/anthropic/Requests.JSONL".into(),
                    Some("raw/anthropic/results.jsonl".into())
                ),
                // Its input is in another folder: not a pair.
                ("raw/other/batch_output.jsonl".into(), None),
            ]
        );
    }

    #[test]
    fn ambiguous_or_partial_names_are_not_paired() {
        for paths in [
            // Two files could be the results of `requests.jsonl`.
            &["a/requests.jsonl", "a/responses.jsonl", "a/results.jsonl"][..],
            // Two request files claim one results file.
            &[
                "a/input_output.jsonl",
                "a/output_input.jsonl",
                "a/output_output.jsonl",
            ][..],
            // `inputs` is a word, `input` inside `myinput` is not.
            &["a/myinput.jsonl", "a/myoutput.jsonl"][..],
            // Different extensions.
            &["a/batch_input.jsonl", "a/batch_output.json"][..],
            // A chain: `input_request` -> `output_request` -> `output_response`.
            &[
                "a/input_request.jsonl",
                "a/output_request.jsonl",
                "a/output_response.jsonl",
            ][..],
        ] {
            let got = paired(paths);
            assert!(got.iter().all(|(_, c)| c.is_none()), "{paths:?}: {got:?}");
            assert_eq!(got.len(), paths.len());
        }
    }

    #[test]
    fn results_names_swap_one_whole_word() {
        assert_eq!(
            results_names("x_Input-2024.jsonl"),
            vec!["x_output-2024.jsonl"]
        );
        assert_eq!(
            results_names("requests.jsonl"),
            vec!["responses.jsonl", "results.jsonl"]
        );
        assert!(results_names("inputfile.jsonl").is_empty());
    }

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
