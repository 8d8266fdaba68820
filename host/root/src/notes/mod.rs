//! Conversation notes: one Markdown file per conversation under
//! `ROOT/conversations/`, named `<date> <title>.md`, that lists the
//! conversation's chunks in order — each as an Obsidian wiki-link (and a
//! plain relative link for other Markdown viewers) with its contextual
//! header — so a person can read a whole conversation in Obsidian and jump
//! from a search hit to its neighbours.
//!
//! Notes are generated from the chunk files and the manifest, and only
//! from them: writing one again gives the same bytes (an unchanged note is
//! not rewritten), `verify` compares every note with what it would be, and
//! `verify --repair` writes it again. They are not chunks: the chunk store
//! reads only the root's own top-level files, so notes are never indexed,
//! and [`crate::inventory`] never reads a root's notes folder as input.
//!
//! A note's file name comes from the conversation's title, which an adapter
//! returned and is untrusted: [`file_name`] keeps letters, digits and a few
//! plain marks, bounds it, and [`unique_name`] keeps names unique in the
//! folder (ignoring case, for file systems that do). The name is chosen
//! once and recorded on the conversation (`ConversationRecord::note`), so a
//! title derived later, or renamed at the source, leaves the note's name —
//! and every link to it — as it was.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use chrono::DateTime;
use serde::{Deserialize, Serialize};

use crate::chunk::ChunkDoc;
use crate::chunk_store::{ChunkStore, Scanned};
use crate::manifest::{ConversationRecord, Manifest};
use crate::root::Root;

mod folder;
use folder::{Naming, NotesFolder};

/// The format of the notes this chatmill writes; also what marks a note
/// file as chatmill's (its `chatmill_note` property).
pub const NOTE_FORMAT: u32 = 1;

/// Longest title part of a note's name, in bytes (the whole name stays far
/// below 255 bytes, room left for the date and a ` (N)` suffix).
const TITLE_MAX: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum NoteError {
    #[error("cannot write the conversation note `{path}`: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot render the note of conversation `{key}`: {message}")]
    Render { key: String, message: String },
}

/// A note's properties (YAML frontmatter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct NoteFront {
    chatmill_note: u32,
    source_platform: String,
    conversation_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    conversation_title: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    title_derived: bool,
    first_timestamp: String,
    last_timestamp: String,
    chunk_count: usize,
    /// The chunk files, in order (relative to the root): how the next
    /// update finds chunks whose names are not their ids (inline mode's)
    /// without a scan of the root.
    chunks: Vec<String>,
}

/// The title part of a note's name: letters and digits of any script, and
/// ` - _ . , ' ( ) & + ! = @ ~ ;`; everything else (separators, control,
/// format and bidi characters, `[]#^|` that would break a wiki-link,
/// Windows' reserved `<>:"\|?*`) becomes a space; runs of spaces become
/// one; no leading or trailing space or dot; at most [`TITLE_MAX`] bytes.
/// `untitled` when nothing is left.
pub fn title_part(title: &str) -> String {
    let mut out = String::with_capacity(title.len().min(TITLE_MAX));
    for c in title.chars() {
        let keep = c.is_alphanumeric()
            || matches!(
                c,
                '-' | '_' | '.' | ',' | '\'' | '(' | ')' | '&' | '+' | '!' | '=' | '@' | '~' | ';'
            );
        if keep {
            if out.len() + c.len_utf8() > TITLE_MAX {
                break;
            }
            out.push(c);
        } else if !out.is_empty() && !out.ends_with(' ') {
            out.push(' ');
        }
    }
    let trimmed = out.trim_matches([' ', '.']);
    if trimmed.is_empty() {
        "untitled".into()
    } else {
        trimmed.to_string()
    }
}

/// `<date> <title>.md`: the date (`YYYY-MM-DD`) of `timestamp` (an ISO
/// 8601 time; `undated` when it is not one) and [`title_part`].
pub fn file_name(timestamp: &str, title: Option<&str>) -> String {
    let date = DateTime::parse_from_rfc3339(timestamp)
        .map(|t| t.to_utc().format("%Y-%m-%d").to_string())
        .unwrap_or_else(|_| "undated".into());
    format!("{date} {}.md", title_part(title.unwrap_or("")))
}

/// `name`, or `name (2).md`, `(3)` … : the first that `taken` (lowercase
/// names) does not hold.
pub fn unique_name(name: &str, taken: &BTreeSet<String>) -> String {
    first_free(name, |c| !taken.contains(&c.to_lowercase()))
}

/// `name`, or `name (2).md`, `(3)` … : the first that `free` takes.
fn first_free(name: &str, mut free: impl FnMut(&str) -> bool) -> String {
    (1u32..)
        .map(|n| numbered(name, n))
        .find(|c| free(c))
        .expect("some suffix is free")
}

/// `name` (`n` = 1), else `name (n).md`.
fn numbered(name: &str, n: u32) -> String {
    if n == 1 {
        return name.to_string();
    }
    let stem = name.strip_suffix(".md").unwrap_or(name);
    format!("{stem} ({n}).md")
}

/// The note name the manifest records for `record`, when it is one plain
/// `.md` file name (a hand-edited manifest never points a read or a write
/// elsewhere; a name that is not is chosen again).
fn note_of(record: &ConversationRecord) -> Option<&str> {
    let name = record.note.as_deref()?;
    let plain = crate::atomic::plain_name(name).is_ok() && name.ends_with(".md");
    plain.then_some(name)
}

/// The first turn of a chunk (`"3-4"` → 3), what orders a note's entries.
fn first_turn(s: &Scanned) -> u32 {
    let range = &s.doc.frontmatter.turn_range;
    range
        .split('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Untrusted text (a title, a header) as inert Markdown: bidi and control
/// characters written as visible escapes (`\u{202e}`), and the backslash
/// and `[ ] < >` escaped, so it makes no link, embed or HTML in a note.
fn inert(text: &str) -> String {
    let shown = chatmill_model::visible::visible(text);
    let mut out = String::with_capacity(shown.len() + 8);
    for c in shown.chars() {
        if matches!(c, '\\' | '[' | ']' | '<' | '>') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` on one line, as a heading holds it.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The note of a conversation whose chunks (in the manifest's order) are
/// `chunks`; `None` when it has none.
pub fn render(key: &str, chunks: &[&Scanned]) -> Result<Option<String>, NoteError> {
    let mut chunks = chunks.to_vec();
    // Stable: the parts of one pair keep the manifest's order.
    chunks.sort_by_key(|s| first_turn(s));
    let (Some(first), Some(last)) = (chunks.first(), chunks.last()) else {
        return Ok(None);
    };
    let fm = &last.doc.frontmatter;
    let front = NoteFront {
        chatmill_note: NOTE_FORMAT,
        source_platform: fm.source_platform.clone(),
        conversation_id: fm.conversation_id.clone(),
        conversation_title: fm.conversation_title.clone(),
        title_derived: fm.title_derived,
        first_timestamp: first.doc.frontmatter.timestamp.clone(),
        last_timestamp: fm.timestamp.clone(),
        chunk_count: chunks.len(),
        chunks: chunks.iter().map(|s| s.rel.clone()).collect(),
    };
    let mut out = head(key, &front)?;
    for (n, s) in chunks.iter().enumerate() {
        push_entry(&mut out, n + 1, s);
    }
    Ok(Some(out))
}

/// A note's properties, title line and summary: what comes before its
/// entries.
fn head(key: &str, front: &NoteFront) -> Result<String, NoteError> {
    let yaml = serde_saphyr::to_string(front).map_err(|e| NoteError::Render {
        key: key.to_string(),
        message: e.to_string(),
    })?;
    let title = front.conversation_title.as_deref().map_or_else(
        || {
            let (platform, id) = (&front.source_platform, &front.conversation_id);
            format!("{platform} conversation {id}")
        },
        one_line,
    );
    let mut out = format!("---\n{yaml}");
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "---\n\n# {}\n\n{} · {} → {} · {} chunks. Written by chatmill from the chunk files; edits here are overwritten.\n",
        inert(&one_line(&title)),
        front.source_platform,
        day(&front.first_timestamp),
        day(&front.last_timestamp),
        front.chunk_count,
    ));
    Ok(out)
}

/// The `n`th entry of a note: the chunk's wiki-link, turns and date, its
/// header quoted, and a relative link.
fn push_entry(out: &mut String, n: usize, s: &Scanned) {
    let stem = s.rel.strip_suffix(".md").unwrap_or(&s.rel);
    let turns = &s.doc.frontmatter.turn_range;
    let label = if turns.contains('-') { "Turns" } else { "Turn" };
    out.push_str(&format!(
        "\n## {n}. [[{stem}|{label} {turns}]] · {}\n\n",
        day(&s.doc.frontmatter.timestamp)
    ));
    for line in s.doc.context.trim().lines() {
        out.push_str(if line.is_empty() { ">" } else { "> " });
        out.push_str(&inert(line));
        out.push('\n');
    }
    out.push_str(&format!("\n[chunk file](../{})\n", s.rel));
}

/// The note `old` with the chunks `new` added at its end, without reading
/// the chunks it lists again (inline mode, turn by turn): `new` must be the
/// end of `record`'s chunks and `old` list exactly the ones before, whose
/// pairs all come before theirs (an inline session only grows). The same
/// text [`render`] makes of all of them. `None` when `old` is not that note.
fn appended(
    key: &str,
    old: &str,
    record: &ConversationRecord,
    new: &[Scanned],
) -> Result<Option<String>, NoteError> {
    let Some((mut front, entries)) = ChunkDoc::split(old).ok().and_then(|(yaml, rest)| {
        let front = serde_saphyr::from_str::<NoteFront>(yaml).ok()?;
        Some((front, &rest[rest.find("\n## 1. [[")?..]))
    }) else {
        return Ok(None);
    };
    let before = front.chunks.len();
    let tail = record.chunk_ids.get(before..).unwrap_or_default();
    let fits = front.chatmill_note == NOTE_FORMAT
        && front.chunk_count == before
        && !new.is_empty()
        && tail.len() == new.len()
        && tail
            .iter()
            .zip(new)
            .all(|(id, s)| *id == s.doc.frontmatter.chunk_id);
    if !fits {
        return Ok(None);
    }
    let mut new: Vec<&Scanned> = new.iter().collect();
    new.sort_by_key(|s| first_turn(s));
    let fm = &new[new.len() - 1].doc.frontmatter;
    front.source_platform.clone_from(&fm.source_platform);
    front.conversation_title.clone_from(&fm.conversation_title);
    front.title_derived = fm.title_derived;
    front.last_timestamp.clone_from(&fm.timestamp);
    front.chunk_count += new.len();
    front.chunks.extend(new.iter().map(|s| s.rel.clone()));
    let mut out = head(key, &front)?;
    out.push_str(entries);
    for (n, s) in new.iter().enumerate() {
        push_entry(&mut out, before + n + 1, s);
    }
    Ok(Some(out))
}

/// The date of an ISO 8601 timestamp as written (its first 10 characters).
fn day(timestamp: &str) -> &str {
    timestamp.get(..10).unwrap_or(timestamp)
}

/// The chunk files a note lists, read from its text (empty when it is not
/// a note of ours).
fn listed(text: &str) -> Vec<String> {
    ChunkDoc::split(text)
        .ok()
        .and_then(|(yaml, _)| serde_saphyr::from_str::<NoteFront>(yaml).ok())
        .map(|f| f.chunks)
        .unwrap_or_default()
}

/// Finds chunk files by id: a batch chunk by its name, others among the
/// files a caller names (a note's list, a chunk just written), and, when
/// those do not have it, by one scan of the root.
struct Finder<'d> {
    store: ChunkStore<'d>,
    dir: &'d Path,
    hinted: HashMap<String, Scanned>,
    scanned: Option<HashMap<String, Scanned>>,
}

impl<'d> Finder<'d> {
    fn new(dir: &'d Path) -> Self {
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

/// One pass of note writing (an input's notes, a turn's, a repair's): the
/// chunk finder (a scan of the root, when one is needed, is made once) and
/// the notes folder as the pass sees it.
struct Pass<'d> {
    root: &'d Root,
    finder: Finder<'d>,
    folder: NotesFolder,
}

impl<'d> Pass<'d> {
    fn new(root: &'d Root) -> Self {
        Self::with_folder(root, NotesFolder::new(root.notes()))
    }

    fn with_folder(root: &'d Root, folder: NotesFolder) -> Self {
        Self {
            root,
            finder: Finder::new(root.chunks()),
            folder,
        }
    }

    fn refresh(
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
    fn write_named(
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

/// What a conversation's record looked like when its note was last
/// brought in line: how many chunks, up to which pair, the last chunk's
/// id, the note's name.
type Seen = (usize, u32, Option<String>, Option<String>);

fn seen(record: &ConversationRecord) -> Seen {
    (
        record.chunk_ids.len(),
        record.last_pair,
        record.chunk_ids.last().cloned(),
        record.note.clone(),
    )
}

/// Whether `record` is still as `seen` (compared in place: every refresh
/// looks at every conversation).
fn still(seen: &Seen, record: &ConversationRecord) -> bool {
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

/// Whether the file `name` in the notes folder is a note chatmill wrote
/// (its first property is `chatmill_note`).
fn is_ours(root: &Root, name: &str) -> bool {
    fs_err::read_to_string(root.notes().join(name)).is_ok_and(|t| {
        ChunkDoc::split(&t).is_ok_and(|(yaml, _)| yaml.starts_with("chatmill_note:"))
    })
}

/// A note that is not what the chunk files make it: `(kind, subject,
/// message)` as `verify` reports them (`note-missing`, `note-outdated`,
/// `note-orphan`).
pub type Finding = (&'static str, String, String);

/// Compares every conversation's note with what its chunk files (`by_id`)
/// make it, and lists the notes no conversation claims.
pub fn check(
    root: &Root,
    manifest: &Manifest,
    by_id: &std::collections::BTreeMap<&str, &Scanned>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (key, record) in &manifest.conversations {
        let chunks: Vec<&Scanned> = record
            .chunk_ids
            .iter()
            .filter_map(|id| by_id.get(id.as_str()).copied())
            .collect();
        let Ok(Some(text)) = render(key, &chunks) else {
            continue;
        };
        let Some(name) = note_of(record) else {
            out.push((
                "note-missing",
                key.clone(),
                "the conversation has no note under `conversations/`".into(),
            ));
            continue;
        };
        match fs_err::read_to_string(root.notes().join(name)) {
            Ok(old) if old == text => {}
            Ok(_) => out.push((
                "note-outdated",
                name.to_string(),
                format!("the note of `{key}` does not list its chunks as they are"),
            )),
            Err(_) => out.push((
                "note-missing",
                name.to_string(),
                format!("the note of `{key}` is gone"),
            )),
        }
    }
    for name in orphans(root, manifest) {
        out.push((
            "note-orphan",
            name,
            "a chatmill note no conversation in the manifest claims".into(),
        ));
    }
    out
}

/// Notes of ours (with a `chatmill_note` property) in the notes folder that
/// no conversation claims.
fn orphans(root: &Root, manifest: &Manifest) -> Vec<String> {
    let claimed: BTreeSet<&str> = manifest
        .conversations
        .values()
        .filter_map(|c| c.note.as_deref())
        .collect();
    let Ok(entries) = fs_err::read_dir(root.notes()) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".md") && !claimed.contains(n.as_str()))
        .filter(|n| is_ours(root, n))
        .collect();
    out.sort();
    out
}

/// Writes every note that is missing or out of date (naming those without
/// a name in `manifest`, which the caller saves) and removes the notes no
/// conversation claims. Returns how many notes were written and removed.
pub fn repair(
    root: &Root,
    manifest: &mut Manifest,
    by_id: &std::collections::BTreeMap<&str, &Scanned>,
) -> Result<(usize, usize), NoteError> {
    let keys: Vec<String> = manifest.conversations.keys().cloned().collect();
    let mut written = 0;
    let mut pass = Pass::new(root);
    for key in keys {
        let chunks: Vec<&Scanned> = manifest.conversations[&key]
            .chunk_ids
            .iter()
            .filter_map(|id| by_id.get(id.as_str()).copied())
            .collect();
        written += usize::from(pass.write_named(manifest, &key, &chunks)?);
    }
    let gone = orphans(root, manifest);
    for name in &gone {
        let path = root.notes().join(name);
        fs_err::remove_file(&path).map_err(|source| NoteError::Write { path, source })?;
    }
    Ok((written, gone.len()))
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

#[cfg(test)]
mod tests;
