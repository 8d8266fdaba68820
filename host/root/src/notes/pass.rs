//! One pass of note writing over some conversations: their chunk files
//! found, their notes rendered and written, named once.

use std::collections::HashMap;
use std::path::Path;

use crate::chunk::ChunkDoc;
use crate::chunk_store::{ChunkStore, Scanned};
use crate::manifest::{ConversationRecord, Manifest};
use crate::notes::folder::{Naming, NotesFolder};
use crate::notes::name::note_of;
use crate::notes::render::{appended, listed};
use crate::notes::{NoteError, render};
use crate::root::Root;

/// Finds chunk files by id: a batch chunk by its name, others among the
/// files a caller names (a note's list, a chunk just written), and, when
/// those do not have it, by one scan of the root.
pub(super) struct Finder<'d> {
    store: ChunkStore<'d>,
    dir: &'d Path,
    hinted: HashMap<String, Scanned>,
    scanned: Option<HashMap<String, Scanned>>,
}

impl<'d> Finder<'d> {
    pub(super) fn new(dir: &'d Path) -> Self {
        Self {
            store: ChunkStore::new(dir),
            dir,
            hinted: HashMap::new(),
            scanned: None,
        }
    }

    /// Reads the chunk files `names` (relative to the root) as hints.
    fn hint(&mut self, names: impl IntoIterator<Item = String>) {
        for rel in names {
            if crate::atomic::plain_name(&rel).is_err() {
                continue;
            }
            let Ok(text) = fs_err::read_to_string(self.dir.join(&rel)) else {
                continue;
            };
            if let Ok(doc) = ChunkDoc::parse(&text) {
                let id = doc.frontmatter.chunk_id.clone();
                self.hinted.insert(id, Scanned { rel, text, doc });
            }
        }
    }

    fn find(&mut self, id: &str) -> Option<Scanned> {
        let rel = ChunkStore::batch_name(id);
        let named = fs_err::read_to_string(self.dir.join(&rel))
            .ok()
            .and_then(|text| Some((ChunkDoc::parse(&text).ok()?, text)))
            .filter(|(doc, _)| doc.frontmatter.chunk_id == id);
        if let Some((doc, text)) = named {
            return Some(Scanned { rel, text, doc });
        }
        if let Some(s) = self.hinted.remove(id) {
            return Some(s);
        }
        let store = self.store;
        let all = self.scanned.get_or_insert_with(|| {
            let found = store.scan(&mut Vec::new()).unwrap_or_default();
            found
                .into_iter()
                .map(|s| (s.doc.frontmatter.chunk_id.clone(), s))
                .collect()
        });
        all.remove(id)
    }
}

/// One pass of note writing (an input's notes, a turn's, a repair's): the
/// chunk finder (a scan of the root, when one is needed, is made once) and
/// the notes folder as the pass sees it.
pub(super) struct Pass<'d> {
    root: &'d Root,
    finder: Finder<'d>,
    folder: NotesFolder,
}

impl<'d> Pass<'d> {
    pub(super) fn new(root: &'d Root) -> Self {
        Self::with_folder(root, NotesFolder::new(root.notes()))
    }

    fn with_folder(root: &'d Root, folder: NotesFolder) -> Self {
        Self {
            root,
            finder: Finder::new(root.chunks()),
            folder,
        }
    }

    pub(super) fn refresh(
        &mut self,
        manifest: &mut Manifest,
        key: &str,
        new_files: &[String],
    ) -> Result<bool, NoteError> {
        let Some(record) = manifest.conversations.get(key) else {
            return Ok(false);
        };
        if record.chunk_ids.is_empty() {
            return Ok(false);
        }
        if let Some(wrote) = self.append(key, record, new_files)? {
            return Ok(wrote);
        }
        let found = self.chunks_of(record, new_files);
        let chunks: Vec<&Scanned> = found.iter().collect();
        self.write_named(manifest, key, &chunks)
    }

    /// Adds the chunk files `new_files` to the end of `record`'s note
    /// when that is all that changed ([`appended`]); `None` when the note
    /// has to be made from all its chunks.
    fn append(
        &mut self,
        key: &str,
        record: &ConversationRecord,
        new_files: &[String],
    ) -> Result<Option<bool>, NoteError> {
        let Some(name) = note_of(record).filter(|_| !new_files.is_empty()) else {
            return Ok(None);
        };
        let Ok(old) = fs_err::read_to_string(self.root.notes().join(name)) else {
            return Ok(None);
        };
        let mut new = Vec::new();
        for rel in new_files {
            let read = |rel: &str| {
                let text = fs_err::read_to_string(self.root.chunks().join(rel)).ok()?;
                let doc = ChunkDoc::parse(&text).ok()?;
                Some((text, doc))
            };
            let Some((text, doc)) = crate::atomic::plain_name(rel).ok().and_then(read) else {
                return Ok(None);
            };
            let rel = rel.clone();
            new.push(Scanned { rel, text, doc });
        }
        match appended(key, &old, record, &new)? {
            Some(text) => self.folder.write(name, &text).map(Some),
            None => Ok(None),
        }
    }

    /// The chunk files of `record` that are there, in its order, with
    /// those its note lists and `new_files` as hints.
    fn chunks_of(&mut self, record: &ConversationRecord, new_files: &[String]) -> Vec<Scanned> {
        if let Some(old) =
            note_of(record).and_then(|n| fs_err::read_to_string(self.root.notes().join(n)).ok())
        {
            self.finder.hint(listed(&old));
        }
        self.finder.hint(new_files.iter().cloned());
        record
            .chunk_ids
            .iter()
            .filter_map(|id| self.finder.find(id))
            .collect()
    }

    /// Renders and writes `key`'s note from `chunks`, naming it if needed.
    pub(super) fn write_named(
        &mut self,
        manifest: &mut Manifest,
        key: &str,
        chunks: &[&Scanned],
    ) -> Result<bool, NoteError> {
        let Some(text) = render(key, chunks)? else {
            return Ok(false);
        };
        let Some(naming) = Naming::of(chunks) else {
            return Ok(false);
        };
        let Some(name) = self.folder.name_for(manifest, key, &naming) else {
            return Ok(false);
        };
        let wrote = self.folder.write(&name, &text)?;
        if let Some(record) = manifest.conversations.get_mut(key) {
            record.note = Some(name);
        }
        Ok(wrote)
    }
}

/// Brings the note of conversation `key` in line with its chunk files,
/// naming it (in `manifest`) when it has no name yet. `new_files` are
/// chunk files just written for it (relative to the root). Durable with
/// the next manifest save (which syncs the file system first). Returns
/// whether the note was written.
pub fn refresh(
    root: &Root,
    manifest: &mut Manifest,
    key: &str,
    new_files: &[String],
) -> Result<bool, NoteError> {
    Pass::new(root).refresh(manifest, key, new_files)
}

/// Writes the note of the conversation `platform:conversation_id` again
/// after one of its chunk files changed in place (a backfilled header),
/// when it has a note: the manifest (read, not changed) names it.
pub fn rewrite(root: &Root, platform: &str, conversation_id: &str) -> Result<bool, NoteError> {
    let key = crate::manifest::conversation_key(platform, conversation_id);
    let manifest = Manifest::load(&root.manifest()).map_err(|e| NoteError::Render {
        key: key.clone(),
        message: e.to_string(),
    })?;
    let Some(record) = manifest.conversations.get(&key) else {
        return Ok(false);
    };
    let Some(name) = note_of(record) else {
        return Ok(false);
    };
    let mut pass = Pass::new(root);
    let found = pass.chunks_of(record, &[]);
    match render(&key, &found.iter().collect::<Vec<_>>())? {
        Some(text) => pass.folder.write(name, &text),
        None => Ok(false),
    }
}
