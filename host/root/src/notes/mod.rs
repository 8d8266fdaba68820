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
//! returned and is untrusted: [`name::file_name`] keeps letters, digits and a few
//! plain marks, bounds it, and [`name::unique_name`] keeps names unique in the
//! folder (ignoring case, for file systems that do). The name is chosen
//! once and recorded on the conversation (`ConversationRecord::note`), so a
//! title derived later, or renamed at the source, leaves the note's name —
//! and every link to it — as it was.

mod check;
mod error;
mod folder;
mod name;
mod pass;
mod render;
mod tracker;

pub use check::{Finding, check, repair};
pub use error::NoteError;
pub use folder::is_notes_folder;
pub use name::{file_name, title_part, unique_name};
pub use pass::{refresh, rewrite};
pub use render::{NOTE_FORMAT, render};
pub use tracker::{Notes, Ready};

#[cfg(test)]
mod tests;
