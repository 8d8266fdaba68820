//! Images and files of an export, linked from the chunks that show them.
//!
//! An adapter sees only its one input, so it reports an attachment by
//! reference (`attachment.uri`: ChatGPT's `file-service://file-…` or
//! `sediment://file_…` pointer or upload id; else only `attachment.name`,
//! as Gemini Takeout and Claude.ai give it). The host resolves the reference
//! against the other files of the same export, as the inventory listed
//! them: the same zip archive, or the input's folder and the folders under
//! it. The reference is hostile input and is never made into a path: a file
//! id must be `file-`/`file_` and letters and digits, a name one plain file
//! name, and either is only looked up among the listed files, so nothing
//! outside the export can be named. A file found is copied once to
//! `ROOT/assets/<first 16 hex digits of its SHA-256>.<ext>` (atomically;
//! durable with its group's `syncfs`; the same content from two files is
//! one asset), the attachment's uri becomes
//! `chatmill-asset:<name>` ([`chatmill_model::ASSET_URI_SCHEME`], which
//! the trust boundary drops from what adapters send), and
//! [`chatmill_chunking::render`] writes `![name](assets/…)` for an image and
//! `[name](assets/…)` for any other file. [`check`] is `verify`'s part.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use chatmill_chunking::asset_link::{ASSETS_DIR, EXT_MAX, HASH_DIGITS};
use chatmill_model::{ASSET_URI_SCHEME, Conversation, Part};
use chatmill_redact::Redactor;

use crate::inventory::{Item, Source};
use crate::manifest::{AssetRecord, Manifest};
use crate::root::Root;

pub use chatmill_chunking::asset_link::{is_asset_name, linked};

/// The files of one import's inventory an attachment may name, and the
/// assets copied so far.
pub struct Assets<'i> {
    dir: PathBuf,
    /// By ChatGPT file id (`file-…`, `file_…`), as the file name starts.
    by_id: HashMap<String, Vec<&'i Item>>,
    /// By file name, lowercase.
    by_name: HashMap<String, Vec<&'i Item>>,
    /// Input key → its asset name, for files copied this run.
    copied: Mutex<HashMap<String, String>>,
    /// What this run copied and the manifest does not have yet, and the
    /// files that could not be copied (why).
    outcome: Mutex<(BTreeMap<String, AssetRecord>, Vec<String>)>,
    /// Redacts text files as they are copied (`None`: copied as they are).
    redactor: Option<&'i Redactor>,
    /// Secrets replaced in the text files copied, by rule id.
    redactions: Mutex<BTreeMap<String, u32>>,
}

/// Largest text file redacted in memory as it is copied; a larger file is
/// taken as data and copied as it is.
const TEXT_MAX: u64 = 16 << 20;

/// The ChatGPT file id a name or pointer starts with: `file-` or `file_`
/// and then letters and digits.
fn file_id(s: &str) -> Option<&str> {
    let rest = s
        .strip_prefix("file-")
        .or_else(|| s.strip_prefix("file_"))?;
    let len = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
    (len > 0).then(|| &s[..5 + len])
}

/// The file id a reference names: a pointer (`scheme://file-id`, nothing
/// after the id) or a bare id.
fn referenced_id(uri: &str) -> Option<&str> {
    let id = uri.rsplit_once("://").map_or(uri, |(_, id)| id);
    file_id(id).filter(|found| found.len() == id.len())
}

/// Whether `found` lies in the export `input` came from: the same zip
/// archive, or under the input's folder.
fn same_export(input: &Item, found: &Item) -> bool {
    match (&input.source, &found.source) {
        (Source::ZipEntry { archive: a, .. }, Source::ZipEntry { archive: b, .. }) => a == b,
        (Source::File(a), Source::File(b)) => a.parent().is_some_and(|dir| b.starts_with(dir)),
        _ => false,
    }
}

/// The folder of an item inside its export (the zip's inner folder, or
/// the file's folder).
fn folder(item: &Item) -> (Option<&Path>, &str) {
    match &item.source {
        Source::File(p) => (p.parent(), ""),
        Source::ZipEntry { archive, name } => (
            Some(archive.as_path()),
            name.rsplit_once(['/', '\\']).map_or("", |(d, _)| d),
        ),
    }
}

/// The extension an asset copied from `file_name` keeps: lowercase ASCII
/// letters and digits, at most [`EXT_MAX`]; else `bin`.
fn extension(file_name: &str) -> String {
    let ext = file_name
        .rsplit_once('.')
        .map_or("", |(_, e)| e)
        .to_ascii_lowercase();
    if (1..=EXT_MAX).contains(&ext.len()) && ext.bytes().all(|b| b.is_ascii_alphanumeric()) {
        ext
    } else {
        "bin".into()
    }
}

/// A name the adapter gave for want of one (ChatGPT's `image` for a
/// pointer with no upload record).
fn is_placeholder(name: &str) -> bool {
    matches!(
        name.trim().to_ascii_lowercase().as_str(),
        "" | "image" | "audio" | "video" | "file" | "attachment"
    )
}

impl<'i> Assets<'i> {
    /// The files of `items` an attachment may name, copied into `root`'s
    /// assets folder.
    pub fn new(root: &Path, items: &'i [Item]) -> Self {
        let mut by_id: HashMap<String, Vec<&Item>> = HashMap::new();
        let mut by_name: HashMap<String, Vec<&Item>> = HashMap::new();
        for item in items {
            if let Some(id) = file_id(&item.file_name) {
                by_id.entry(id.to_string()).or_default().push(item);
            }
            by_name
                .entry(item.file_name.to_lowercase())
                .or_default()
                .push(item);
        }
        Self {
            dir: Root::new(root).assets(),
            by_id,
            by_name,
            copied: Mutex::default(),
            outcome: Mutex::default(),
            redactor: None,
            redactions: Mutex::default(),
        }
    }

    /// Text files (UTF-8 without NUL bytes, up to 16 MiB: an uploaded
    /// `.env`, a log) are copied with their secrets replaced, like chunk
    /// text; images and other binary files as they are.
    pub fn redacting(mut self, redactor: Option<&'i Redactor>) -> Self {
        self.redactor = redactor;
        self
    }

    /// The secrets replaced in the text files copied since the last call,
    /// by rule id.
    pub fn take_redactions(&self) -> BTreeMap<String, u32> {
        std::mem::take(
            &mut *self
                .redactions
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// The file of `input`'s export an attachment names: by the file id its
    /// uri names (anywhere in the export), else by its name (in the input's
    /// own folder).
    fn find(&self, input: &Item, name: &str, uri: Option<&str>) -> Option<&'i Item> {
        if let Some(id) = uri.and_then(referenced_id) {
            return self
                .by_id
                .get(id)?
                .iter()
                .copied()
                .find(|f| same_export(input, f));
        }
        let name = crate::atomic::plain_name(name.trim()).ok()?;
        if name == ".." || name == "." {
            return None;
        }
        self.by_name
            .get(&name.to_lowercase())?
            .iter()
            .copied()
            .find(|f| same_export(input, f) && folder(f) == folder(input) && f.key != input.key)
    }

    /// Links the attachments of `conv` (read from `input`) that name a
    /// file of its export: the file is copied to the assets folder (once)
    /// and the attachment's uri set to it; a placeholder name becomes the
    /// file's.
    pub fn link(&self, input: &Item, conv: &mut Conversation) {
        let parts = conv
            .pairs
            .iter_mut()
            .flat_map(|p| p.user.iter_mut().chain(p.assistant.iter_mut()));
        for part in parts {
            let Part::Attachment { name, uri, .. } = part else {
                continue;
            };
            let Some(found) = self.find(input, name, uri.as_deref()) else {
                continue;
            };
            match self.copy(found) {
                Ok(asset) => {
                    if is_placeholder(name) {
                        let shown = file_id(&found.file_name)
                            .map_or(found.file_name.as_str(), |id| {
                                found.file_name[id.len()..].trim_start_matches(['-', '_'])
                            });
                        *name = shown.to_string();
                    }
                    *uri = Some(format!("{ASSET_URI_SCHEME}{asset}"));
                }
                Err(e) => {
                    let mut outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
                    outcome.1.push(format!(
                        "`{}` (attached in conversation `{}`) could not be copied to `{ASSETS_DIR}/`: {e}",
                        found.key, conv.id
                    ));
                }
            }
        }
    }

    /// Copies `file` to the assets folder unless this run did; returns its
    /// asset name. Written to a temp file while hashed, then renamed to its
    /// content's name: a crash leaves a temp file (swept) or the whole file.
    fn copy(&self, file: &Item) -> std::io::Result<String> {
        if let Some(name) = self
            .copied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&file.key)
        {
            return Ok(name.clone());
        }
        fs_err::create_dir_all(&self.dir)?;
        let tmp = tempfile::Builder::new()
            .prefix(crate::root::TEMP_PREFIX)
            .tempfile_in(&self.dir)?;
        let (mut sha256, mut size) = file.copy_into(std::io::BufWriter::new(tmp.as_file()))?;
        if let Some(r) = self.redactor
            && size <= TEXT_MAX
            && let Some(digest) = self.redact_copy(r, tmp.path())?
        {
            (sha256, size) = digest;
        }
        let name = format!("{}.{}", &sha256[..HASH_DIGITS], extension(&file.file_name));
        let path = crate::atomic::join_plain(&self.dir, &name)?;
        if path.exists() {
            drop(tmp);
        } else {
            tmp.persist(&path).map_err(|e| e.error)?;
        }
        self.copied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(file.key.clone(), name.clone());
        let record = AssetRecord {
            sha256,
            size,
            source: file.key.clone(),
        };
        let mut outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        outcome.0.entry(name.clone()).or_insert(record);
        Ok(name)
    }

    /// Replaces the secrets of the text file just copied to `path`; the
    /// hash and size of what it then holds, when it changed.
    fn redact_copy(&self, r: &Redactor, path: &Path) -> std::io::Result<Option<(String, u64)>> {
        let bytes = fs_err::read(path)?;
        if bytes.contains(&0) {
            return Ok(None);
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return Ok(None);
        };
        let done = r.redact(text);
        let std::borrow::Cow::Owned(text) = done.text else {
            return Ok(None);
        };
        let mut all = self
            .redactions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (rule, n) in done.counts {
            *all.entry(rule).or_insert(0) += n;
        }
        drop(all);
        fs_err::write(path, text.as_bytes())?;
        crate::inventory::copy_hashing(text.as_bytes(), std::io::sink()).map(Some)
    }

    /// Records the assets copied since the last call in `manifest` (an
    /// asset it has keeps its first source); returns the files that could
    /// not be copied, as warnings.
    pub fn record_into(&self, manifest: &mut Manifest) -> Vec<String> {
        let mut outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        let (copied, failed) = std::mem::take(&mut *outcome);
        for (name, record) in copied {
            manifest.assets.entry(name).or_insert(record);
        }
        failed
    }
}

/// A problem `verify` finds with the assets: its kind, subject, message.
pub type AssetProblem = (&'static str, String, String);

/// Checks the assets: each one the manifest records is in `ROOT/assets/`
/// with its size and the hash its name says (`asset-missing`,
/// `asset-changed`), and each asset a chunk links is recorded and on disk
/// (`asset-missing`). `chunks` are (file name, text).
pub fn check<'a>(
    root: &Path,
    manifest: &Manifest,
    chunks: impl Iterator<Item = (&'a str, &'a str)>,
) -> Vec<AssetProblem> {
    let root = Root::new(root);
    let mut problems = Vec::new();
    for (name, record) in &manifest.assets {
        let path = match root.asset(name) {
            Ok(path) if is_asset_name(name) => path,
            _ => {
                let why = "the manifest records an asset under a name chatmill does not write";
                problems.push(("asset-changed", name.clone(), why.into()));
                continue;
            }
        };
        match hash_of(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => problems.push((
                "asset-missing",
                name.clone(),
                format!(
                    "the manifest records this asset (from `{}`) but `{ASSETS_DIR}/{name}` is gone; importing its export again copies it",
                    record.source
                ),
            )),
            Err(e) => problems.push(("asset-missing", name.clone(), e.to_string())),
            Ok((sha256, size))
                if sha256 != record.sha256
                    || size != record.size
                    || !sha256.starts_with(&name[..HASH_DIGITS]) =>
            {
                problems.push((
                    "asset-changed",
                    name.clone(),
                    format!("`{ASSETS_DIR}/{name}` no longer holds the file copied from `{}`", record.source),
                ));
            }
            Ok(_) => {}
        }
    }
    for (file, text) in chunks {
        for asset in links_in(text) {
            if !manifest.assets.contains_key(asset) {
                problems.push((
                    "asset-missing",
                    asset.to_string(),
                    format!(
                        "`{file}` links `{ASSETS_DIR}/{asset}`, which the manifest does not record"
                    ),
                ));
            }
        }
    }
    problems
}

/// Records in `manifest` the assets in `root`'s assets folder it lacks (a
/// manifest rebuilt by `verify --repair`), when a file's content matches
/// its name; their source is unknown and said so. Returns how many.
pub fn recover_records(root: &Path, manifest: &mut Manifest) -> std::io::Result<usize> {
    let dir = Root::new(root).assets();
    let entries = match fs_err::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_asset_name(n) && !manifest.assets.contains_key(n))
        .collect();
    names.sort();
    let mut recovered = 0;
    for name in names {
        let (sha256, size) = hash_of(&dir.join(&name))?;
        if sha256.starts_with(&name[..HASH_DIGITS]) {
            let source = "(unknown: recorded again by `chatmill verify --repair`)".into();
            let record = AssetRecord {
                sha256,
                size,
                source,
            };
            manifest.assets.insert(name, record);
            recovered += 1;
        }
    }
    Ok(recovered)
}

/// The asset names a chunk's Markdown links (`](assets/<name>)`).
fn links_in(text: &str) -> impl Iterator<Item = &str> {
    let marker = "](assets/";
    text.match_indices(marker).filter_map(move |(at, _)| {
        let rest = &text[at + marker.len()..];
        let name = &rest[..rest.find(')')?];
        is_asset_name(name).then_some(name)
    })
}

/// The SHA-256 (hex) and size of the file at `path`.
fn hash_of(path: &Path) -> std::io::Result<(String, u64)> {
    crate::inventory::copy_hashing(fs_err::File::open(path)?, std::io::sink())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_ids_or_plain_names_never_paths() {
        assert_eq!(
            referenced_id("file-service://file-Q1w2E3"),
            Some("file-Q1w2E3")
        );
        assert_eq!(referenced_id("sediment://file_00ab"), Some("file_00ab"));
        assert_eq!(referenced_id("file-Q1w2E3"), Some("file-Q1w2E3"));
        for bad in [
            "file-service://file-../../etc/passwd",
            "sediment://file_",
            "file-service://../file-abc",
            "https://example.com/file-abc/x",
            "file-abc/../../x",
        ] {
            assert_eq!(referenced_id(bad), None, "{bad}");
        }
        assert_eq!(file_id("file-Q1w2-fern.png"), Some("file-Q1w2"));
        assert_eq!(extension("x.PNG"), "png");
        assert_eq!(extension("x.tar.gz"), "gz");
        assert_eq!(extension("x"), "bin");
        assert_eq!(extension("x.p/ng"), "bin");
    }

    #[test]
    fn only_the_hosts_asset_names_are_linked_and_names_are_escaped() {
        assert_eq!(
            linked("chatmill-asset:0123456789abcdef.png"),
            Some("0123456789abcdef.png")
        );
        for bad in [
            "chatmill-asset:../0123456789abcdef.png",
            "chatmill-asset:0123456789abcdef.png/x",
            "chatmill-asset:0123456789ABCDEF.png",
            "chatmill-asset:0123456789abcdef",
            "0123456789abcdef.png",
        ] {
            assert_eq!(linked(bad), None, "{bad}");
        }
        assert_eq!(
            chatmill_chunking::render::markdown_link("fern.png", "0123456789abcdef.png"),
            "![fern.png](assets/0123456789abcdef.png)"
        );
        assert_eq!(
            chatmill_chunking::render::markdown_link("a](javascript:x) [b", "0123456789abcdef.pdf"),
            "[a\\](javascript:x) \\[b](assets/0123456789abcdef.pdf)"
        );
        let text = "see ![x](assets/0123456789abcdef.png) and [y](assets/../z)";
        assert_eq!(links_in(text).collect::<Vec<_>>(), ["0123456789abcdef.png"]);
    }

    /// A text file is copied with its secrets replaced (and named by what
    /// was written, which `verify` checks); a binary file as it is.
    #[test]
    fn text_assets_are_copied_redacted_and_binary_ones_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "ghp_0123456789abcdefABCDEF0123456789wxyz";
        let env = dir.path().join("app.env");
        std::fs::write(&env, format!("DEBUG=1\nGITHUB_TOKEN={secret}\n")).unwrap();
        let png = dir.path().join("shot.png");
        let binary = [&b"\x89PNG\0\0"[..], secret.as_bytes()].concat();
        std::fs::write(&png, &binary).unwrap();
        let item = |path: &Path| Item {
            source: Source::File(path.to_path_buf()),
            key: path.display().to_string(),
            file_name: path.file_name().unwrap().to_string_lossy().into_owned(),
            mtime: std::time::SystemTime::UNIX_EPOCH,
            companion: None,
        };
        let items = [item(&env), item(&png)];
        let root = dir.path().join("root");
        let r = Redactor::new(
            chatmill_redact::Key::from_bytes([1; 32]),
            &chatmill_redact::Config::default(),
        )
        .unwrap();
        let assets = Assets::new(&root, &items).redacting(Some(&r));
        let text_asset = assets.copy(&items[0]).unwrap();
        let binary_asset = assets.copy(&items[1]).unwrap();
        let text = std::fs::read_to_string(root.join("assets").join(&text_asset)).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert!(text.starts_with("DEBUG=1\nGITHUB_TOKEN=[REDACTED:github-token:"));
        assert_eq!(assets.take_redactions().get("github-token"), Some(&1));
        let copied = std::fs::read(root.join("assets").join(&binary_asset)).unwrap();
        assert_eq!(copied, binary);
        let mut manifest = Manifest::default();
        assets.record_into(&mut manifest);
        let (sha, size) = hash_of(&root.join("assets").join(&text_asset)).unwrap();
        assert_eq!(manifest.assets[&text_asset].sha256, sha);
        assert_eq!(manifest.assets[&text_asset].size, size);
        assert!(text_asset.starts_with(&sha[..HASH_DIGITS]));
    }

    fn zip_item(archive: &str, name: &str) -> Item {
        Item {
            source: Source::ZipEntry {
                archive: archive.into(),
                name: name.into(),
            },
            key: format!("{archive}!{name}"),
            file_name: name.rsplit('/').next().unwrap().into(),
            mtime: std::time::SystemTime::UNIX_EPOCH,
            companion: None,
        }
    }

    #[test]
    fn a_reference_finds_only_files_of_its_own_export() {
        let items = vec![
            zip_item("a.zip", "conversations.json"),
            zip_item("a.zip", "dalle-generations/file_00ab-1.png"),
            zip_item("b.zip", "file-XY-other.png"),
            zip_item("a.zip", "Takeout/x/1-2.png"),
            zip_item("a.zip", "photo.png"),
        ];
        let assets = Assets::new(Path::new("/r"), &items);
        let input = &items[0];
        let found =
            |name: &str, uri: Option<&str>| assets.find(input, name, uri).map(|f| f.key.as_str());
        assert_eq!(
            found("image", Some("sediment://file_00ab")),
            Some("a.zip!dalle-generations/file_00ab-1.png")
        );
        assert_eq!(
            found("image", Some("file-service://file-XY")),
            None,
            "another archive"
        );
        assert_eq!(found("1-2.png", None), None, "another folder");
        assert_eq!(found("photo.png", None), Some("a.zip!photo.png"));
        assert_eq!(found("../photo.png", None), None);
        assert_eq!(
            found("conversations.json", None),
            None,
            "not the input itself"
        );
    }
}
