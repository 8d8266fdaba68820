//! A note's file name: the date and the title's plain part, kept unique
//! in the folder.

use std::collections::BTreeSet;

use chrono::DateTime;

use crate::manifest::ConversationRecord;

/// Longest title part of a note's name, in bytes (the whole name stays far
/// below 255 bytes, room left for the date and a ` (N)` suffix).
pub(super) const TITLE_MAX: usize = 100;

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
pub(super) fn first_free(name: &str, mut free: impl FnMut(&str) -> bool) -> String {
    (1u32..)
        .map(|n| numbered(name, n))
        .find(|c| free(c))
        .expect("some suffix is free")
}

/// `name` (`n` = 1), else `name (n).md`.
pub(super) fn numbered(name: &str, n: u32) -> String {
    if n == 1 {
        return name.to_string();
    }
    let stem = name.strip_suffix(".md").unwrap_or(name);
    format!("{stem} ({n}).md")
}

/// The note name the manifest records for `record`, when it is one plain
/// `.md` file name (a hand-edited manifest never points a read or a write
/// elsewhere; a name that is not is chosen again).
pub(super) fn note_of(record: &ConversationRecord) -> Option<&str> {
    let name = record.note.as_deref()?;
    let plain = crate::atomic::plain_name(name).is_ok() && name.ends_with(".md");
    plain.then_some(name)
}
