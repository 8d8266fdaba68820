//! Notes checked against what they would be (`verify`), and written again
//! (`verify --repair`).

use std::collections::BTreeSet;

use crate::chunk::ChunkDoc;
use crate::chunk_store::Scanned;
use crate::manifest::Manifest;
use crate::notes::name::note_of;
use crate::notes::pass::Pass;
use crate::notes::{NoteError, render};
use crate::root::Root;

/// A note that is not what the chunk files make it: `(kind, subject,
/// message)` as `verify` reports them (`note-missing`, `note-outdated`,
/// `note-orphan`).
pub type Finding = (&'static str, String, String);

/// Whether the file `name` in the notes folder is a note chatmill wrote
/// (its first property is `chatmill_note`).
pub(super) fn is_ours(root: &Root, name: &str) -> bool {
    fs_err::read_to_string(root.notes().join(name)).is_ok_and(|t| {
        ChunkDoc::split(&t).is_ok_and(|(yaml, _)| yaml.starts_with("chatmill_note:"))
    })
}

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
pub(super) fn orphans(root: &Root, manifest: &Manifest) -> Vec<String> {
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
