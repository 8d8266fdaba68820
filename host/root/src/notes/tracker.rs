//! The notes an import keeps up to date as it commits conversations: the
//! ones it touched since its last update, and new notes ready to write.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use crate::chunk_store::Scanned;
use crate::manifest::{ConversationRecord, Manifest};
use crate::notes::check::is_ours;
use crate::notes::folder::{Naming, NotesFolder};
use crate::notes::name::note_of;
use crate::notes::pass::Pass;
use crate::notes::render;
use crate::root::Root;

/// What a conversation's record looked like when its note was last
/// brought in line: how many chunks, up to which pair, the last chunk's
/// id, the note's name.
pub(super) type Seen = (usize, u32, Option<String>, Option<String>);

/// The note of a conversation seen for the first time, rendered where its
/// chunks were written (on the thread pool) from what they were written
/// with: what the commit needs to name and write it without reading its
/// chunk files back.
#[derive(Debug)]
pub struct Ready {
    key: String,
    /// Its chunk ids, in the order they were written (the manifest's).
    ids: Vec<String>,
    text: String,
    naming: Naming,
}

impl Ready {
    /// The note of `key` listing `chunks`, in the order they were written
    /// (only their names, frontmatter and headers are read: their text and
    /// exchanges may be left empty). `None` when there are none.
    pub fn new(key: &str, chunks: &[Scanned]) -> Option<Self> {
        let refs: Vec<&Scanned> = chunks.iter().collect();
        let text = render(key, &refs).ok()??;
        Some(Self {
            key: key.to_string(),
            ids: chunks
                .iter()
                .map(|s| s.doc.frontmatter.chunk_id.clone())
                .collect(),
            text,
            naming: Naming::of(&refs)?,
        })
    }
}

pub(super) fn seen(record: &ConversationRecord) -> Seen {
    (
        record.chunk_ids.len(),
        record.last_pair,
        record.chunk_ids.last().cloned(),
        record.note.clone(),
    )
}

/// Whether `record` is still as `seen` (compared in place: every refresh
/// looks at every conversation).
pub(super) fn still(seen: &Seen, record: &ConversationRecord) -> bool {
    let (chunks, last_pair, last_id, note) = seen;
    *chunks == record.chunk_ids.len()
        && *last_pair == record.last_pair
        && last_id.as_deref() == record.chunk_ids.last().map(String::as_str)
        && note.as_deref() == record.note.as_deref()
}

/// Keeps the notes of a batch import in line: remembers each
/// conversation's record as the import found it, and after each input
/// refreshes the notes of the conversations that changed (or have none)
/// and removes those of the conversations that are gone.
pub struct Notes {
    seen: HashMap<String, Seen>,
    /// The notes folder as [`Notes::write_ready`] names into it, kept from
    /// input to input until an update names or removes notes itself, or
    /// looks at every conversation (then it starts afresh from the
    /// manifest).
    folder: Option<NotesFolder>,
    /// The conversations the import changed since the last update: all
    /// that update looks at, unless `all`.
    touched: BTreeSet<String>,
    /// The next update looks at every conversation: the first of a run,
    /// after the manifest was read again, after a change the import does
    /// not name conversation by conversation (a reprocess, late batch
    /// results).
    all: bool,
}

impl Notes {
    /// Notes are in line with `manifest` as it is now (a conversation
    /// without a note is refreshed anyway).
    pub fn new(manifest: &Manifest) -> Self {
        let seen = manifest
            .conversations
            .iter()
            .map(|(k, c)| (k.clone(), seen(c)))
            .collect();
        Self {
            seen,
            folder: None,
            touched: BTreeSet::new(),
            all: true,
        }
    }

    /// The record of conversation `key` changed.
    pub fn touched(&mut self, key: &str) {
        if !self.all {
            self.touched.insert(key.to_string());
        }
    }

    /// Any record may have changed (another writer's too: the folder
    /// `write_ready` names into is listed again).
    pub fn touched_all(&mut self) {
        self.all = true;
        self.touched.clear();
        self.folder = None;
    }

    /// Names and writes `ready` when it is the whole note of a conversation
    /// this import is the first to record: the import began without it, no
    /// note of it was written yet, and its record lists exactly the chunks
    /// the note was rendered from. Whether it did; when not, the next
    /// [`Notes::update`] makes the note from the chunk files.
    pub fn write_ready(&mut self, root: &Path, manifest: &mut Manifest, ready: Ready) -> bool {
        let Ready {
            key,
            ids,
            text,
            naming,
        } = ready;
        let fits = manifest
            .conversations
            .get(&key)
            .is_some_and(|r| r.note.is_none() && r.chunk_ids == ids);
        if !fits || self.seen.contains_key(&key) {
            return false;
        }
        let folder = self
            .folder
            .get_or_insert_with(|| NotesFolder::new(Root::new(root).notes()));
        let Some(name) = folder.name_for(manifest, &key, &naming) else {
            return false;
        };
        if let Err(e) = folder.write(&name, &text) {
            tracing::warn!("{e}");
            return false;
        }
        if let Some(record) = manifest.conversations.get_mut(&key) {
            record.note = Some(name);
            self.seen.insert(key, seen(record));
        }
        true
    }

    /// Refreshes the notes of the conversations whose record changed since
    /// the last call, or that have chunks but no note, and removes the notes
    /// of conversations gone from the manifest since (their chunks taken
    /// out to be written again: late batch results, a reprocess). Looks
    /// only at the conversations [`Notes::touched`] names, unless
    /// [`Notes::touched_all`] (an import calls it after every input: a look
    /// at every conversation each time made a folder of many sessions
    /// quadratic). A note that cannot be written is logged and left to
    /// `verify`; the import goes on. Returns how many notes were written.
    pub fn update(&mut self, root: &Root, manifest: &mut Manifest) -> usize {
        let started = std::time::Instant::now();
        let touched = std::mem::take(&mut self.touched);
        let scope = (!std::mem::replace(&mut self.all, false)).then_some(touched);
        let removed = self.remove_gone(root, manifest, scope.as_ref());
        let restored = self.restore_names(manifest, scope.as_ref());
        let is_due = |k: &str, c: &ConversationRecord| {
            !c.chunk_ids.is_empty()
                && (c.note.is_none()
                    || restored.contains(k)
                    || !self.seen.get(k).is_some_and(|s| still(s, c)))
        };
        let due: Vec<String> = match &scope {
            None => manifest
                .conversations
                .iter()
                .filter(|(k, c)| is_due(k, c))
                .map(|(k, _)| k.clone())
                .collect(),
            Some(keys) => keys
                .iter()
                .filter(|k| manifest.conversations.get(*k).is_some_and(|c| is_due(k, c)))
                .cloned()
                .collect(),
        };
        // Names taken or freed here, or another writer's: what the folder
        // of `write_ready` knows is out of date.
        if scope.is_none() || removed || !restored.is_empty() || !due.is_empty() {
            self.folder = None;
        }
        let mut written = 0;
        let mut pass = Pass::new(root);
        for key in due {
            match pass.refresh(manifest, &key, &[]) {
                Ok(wrote) => written += usize::from(wrote),
                Err(e) => tracing::warn!("{e}"),
            }
            if let Some(c) = manifest.conversations.get(&key) {
                // One still without a note (it could not be written) is
                // tried again at the next update, as a full look would.
                if c.note.is_none() {
                    self.touched.insert(key.clone());
                }
                self.seen.insert(key, seen(c));
            }
        }
        tracing::debug!(
            "{written} conversation notes written in {:?}",
            started.elapsed()
        );
        written
    }

    /// A conversation whose record was made anew during the run (its
    /// chunks taken out and written again: late batch results, a
    /// reprocess) keeps the name its note had, unless another conversation
    /// has taken it meanwhile.
    fn restore_names(
        &self,
        manifest: &mut Manifest,
        scope: Option<&BTreeSet<String>>,
    ) -> BTreeSet<String> {
        let lost_name = |k: &String, c: &ConversationRecord| {
            let lost = c.note.is_none() && !c.chunk_ids.is_empty();
            lost.then(|| Some((k.clone(), self.seen.get(k)?.3.clone()?)))
                .flatten()
        };
        let lost: Vec<(String, String)> = match scope {
            None => manifest
                .conversations
                .iter()
                .filter_map(|(k, c)| lost_name(k, c))
                .collect(),
            Some(keys) => keys
                .iter()
                .filter_map(|k| lost_name(k, manifest.conversations.get(k)?))
                .collect(),
        };
        let mut restored = BTreeSet::new();
        if lost.is_empty() {
            return restored;
        }
        let mut claimed: BTreeSet<String> = manifest
            .conversations
            .values()
            .filter_map(note_of)
            .map(str::to_lowercase)
            .collect();
        for (key, name) in lost {
            if claimed.insert(name.to_lowercase())
                && let Some(c) = manifest.conversations.get_mut(&key)
            {
                c.note = Some(name);
                restored.insert(key);
            }
        }
        restored
    }

    /// Removes the notes of the conversations (of `scope`, or all) that
    /// had chunks and a note and now have neither, unless another
    /// conversation holds the name. Whether any was gone.
    fn remove_gone(
        &mut self,
        root: &Root,
        manifest: &Manifest,
        scope: Option<&BTreeSet<String>>,
    ) -> bool {
        let is_gone = |k: &&String| {
            let record = manifest.conversations.get(k.as_str());
            record.is_none_or(|c| c.chunk_ids.is_empty() && c.note.is_none())
        };
        let gone: Vec<String> = match scope {
            None => self.seen.keys().filter(is_gone).cloned().collect(),
            Some(keys) => keys
                .iter()
                .filter(|k| self.seen.contains_key(k.as_str()))
                .filter(is_gone)
                .cloned()
                .collect(),
        };
        if gone.is_empty() {
            return false;
        }
        let claimed: BTreeSet<&str> = manifest
            .conversations
            .values()
            .filter_map(note_of)
            .collect();
        for key in gone {
            let Some((_, _, _, Some(name))) = self.seen.remove(&key) else {
                continue;
            };
            let plain = crate::atomic::plain_name(&name).is_ok();
            if plain
                && !claimed.contains(name.as_str())
                && is_ours(root, &name)
                && let Err(e) = fs_err::remove_file(root.notes().join(&name))
            {
                tracing::warn!("{e}");
            }
        }
        true
    }
}
