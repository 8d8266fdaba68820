//! The notes folder as one pass of note writing sees it: the names the
//! manifest has taken, the files already there (listed once), and the open
//! folder notes are written into atomically.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::error::NoteError;
use super::name::{file_name, note_of, numbered};
use super::render::{NoteFront, first_turn};
use crate::chunk::ChunkDoc;
use crate::chunk_store::Scanned;
use crate::manifest::Manifest;
use crate::root::Root;

/// What a new note is named from: the date of the conversation's first
/// chunk and the title of its last, and the conversation it belongs to.
#[derive(Debug, Clone)]
pub(super) struct Naming {
    pub first_timestamp: String,
    pub title: Option<String>,
    pub platform: String,
    pub conversation_id: String,
}

impl Naming {
    /// The naming of a note listing `chunks` (`None` when there are none).
    pub fn of(chunks: &[&Scanned]) -> Option<Self> {
        let first = chunks.iter().min_by_key(|s| first_turn(s))?;
        let last = chunks.iter().max_by_key(|s| first_turn(s))?;
        let fm = &last.doc.frontmatter;
        Some(Self {
            first_timestamp: first.doc.frontmatter.timestamp.clone(),
            title: fm.conversation_title.clone(),
            platform: fm.source_platform.clone(),
            conversation_id: fm.conversation_id.clone(),
        })
    }
}

pub(super) struct NotesFolder {
    dir: PathBuf,
    /// The lowercase names of the notes the manifest records.
    taken: Option<BTreeSet<String>>,
    /// Per lowercase name, the first number from which `name (n).md` may
    /// not be taken yet: many conversations of one day and title (50,000
    /// "New chat"s) are numbered in one pass, not each from 2 again.
    next: HashMap<String, u32>,
    folder: Option<crate::atomic::Folder>,
    /// The lowercase names of the files in the folder, listed once when a
    /// pass names a note: a name not among them needs no read (a failed
    /// open per new note was a good part of a first import's notes on this
    /// machine's disk).
    on_disk: Option<HashSet<String>>,
}

impl NotesFolder {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            taken: None,
            next: HashMap::new(),
            folder: None,
            on_disk: None,
        }
    }

    /// The name `key`'s note has, or gets: the recorded one, else a new
    /// unique one from `naming` (then taken).
    pub fn name_for(&mut self, manifest: &Manifest, key: &str, naming: &Naming) -> Option<String> {
        if let Some(name) = note_of(manifest.conversations.get(key)?) {
            return Some(name.to_string());
        }
        let name = file_name(&naming.first_timestamp, naming.title.as_deref());
        let taken = self.taken.get_or_insert_with(|| {
            let notes = manifest.conversations.values();
            notes
                .filter_map(|c| c.note.as_deref().map(str::to_lowercase))
                .collect()
        });
        let owner = (naming.platform.as_str(), naming.conversation_id.as_str());
        let dir = &self.dir;
        let on_disk = self.on_disk.get_or_insert_with(|| listed_names(dir));
        let lower = name.to_lowercase();
        let mut from = self.next.get(&lower).copied().unwrap_or(1);
        // `from` moves on only past names the manifest holds: a file on
        // disk that is not free now may become this pass's conversation's
        // own (a reprocess re-adding them in another order).
        let mut all_taken = true;
        let chosen = (from..)
            .map(|n| (n, numbered(&name, n)))
            .find(|(n, c)| {
                if taken.contains(&c.to_lowercase()) {
                    if all_taken {
                        from = n + 1;
                    }
                    return false;
                }
                let free = !on_disk.contains(&c.to_lowercase()) || free_on_disk(dir, c, owner);
                all_taken &= free;
                free
            })
            .map(|(n, c)| {
                if all_taken {
                    from = n + 1;
                }
                c
            })
            .expect("some number is free");
        self.next.insert(lower, from);
        taken.insert(chosen.to_lowercase());
        Some(chosen)
    }

    /// Writes `text` as the note `name` unless it already says that;
    /// whether it wrote.
    pub fn write(&mut self, name: &str, text: &str) -> Result<bool, NoteError> {
        let path = self.dir.join(name);
        // The folder's list, when this pass made one, says whether there is
        // an old note to compare with.
        let lower = name.to_lowercase();
        let there = self.on_disk.as_ref().is_none_or(|l| l.contains(&lower));
        if there && fs_err::read_to_string(&path).is_ok_and(|old| old == text) {
            return Ok(false);
        }
        if let Some(listed) = &mut self.on_disk {
            listed.insert(lower);
        }
        let write = |source| NoteError::Write {
            path: path.clone(),
            source,
        };
        let folder = match self.folder.take() {
            Some(f) => f,
            None => {
                fs_err::create_dir_all(&self.dir).map_err(write)?;
                crate::atomic::Folder::open(&self.dir).map_err(write)?
            }
        };
        let written = folder.write(name, text.as_bytes());
        self.folder = Some(folder);
        written.map_err(write)?;
        Ok(true)
    }
}

/// Whether the file `name` in `dir` may become the note of the
/// conversation `(platform, id)`: no file has the name, or it is already
/// that conversation's note (written by a run killed before its manifest
/// was saved, or before a reprocess forgot the conversation for a while).
/// Anything else there — another conversation's note, a file of the user's
/// — is left alone.
fn free_on_disk(dir: &Path, name: &str, (platform, id): (&str, &str)) -> bool {
    let text = match fs_err::read_to_string(dir.join(name)) {
        Ok(text) => text,
        Err(e) => return e.kind() == std::io::ErrorKind::NotFound,
    };
    ChunkDoc::split(&text)
        .ok()
        .and_then(|(yaml, _)| serde_saphyr::from_str::<NoteFront>(yaml).ok())
        .is_some_and(|f| f.source_platform == platform && f.conversation_id == id)
}

/// The lowercase names of the files in `dir` (none when it is not there).
fn listed_names(dir: &Path) -> HashSet<String> {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return Default::default();
    };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_lowercase())
        .collect()
}

/// Whether `dir` is a root's notes folder (`<root>/conversations` beside
/// the root's manifest or state folder): never an input.
pub fn is_notes_folder(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == crate::root::NOTES_DIR)
        && dir.parent().is_some_and(|p| {
            let root = Root::new(p);
            root.manifest().is_file() || root.state().is_dir()
        })
}
