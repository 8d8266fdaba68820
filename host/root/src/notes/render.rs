//! A note's text: its properties, then one entry per chunk, in order;
//! grown entry by entry as an inline session gains turns.

use serde::{Deserialize, Serialize};

use crate::chunk::ChunkDoc;
use crate::chunk_store::Scanned;
use crate::manifest::ConversationRecord;
use crate::notes::NoteError;

/// The format of the notes this chatmill writes; also what marks a note
/// file as chatmill's (its `chatmill_note` property).
pub const NOTE_FORMAT: u32 = 1;

/// A note's properties (YAML frontmatter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct NoteFront {
    pub(super) chatmill_note: u32,
    pub(super) source_platform: String,
    pub(super) conversation_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) conversation_title: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) title_derived: bool,
    pub(super) first_timestamp: String,
    pub(super) last_timestamp: String,
    pub(super) chunk_count: usize,
    /// The chunk files, in order (relative to the root): how the next
    /// update finds chunks whose names are not their ids (inline mode's)
    /// without a scan of the root.
    pub(super) chunks: Vec<String>,
}

/// The first turn of a chunk (`"3-4"` → 3), what orders a note's entries.
pub(super) fn first_turn(s: &Scanned) -> u32 {
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
pub(super) fn inert(text: &str) -> String {
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
pub(super) fn one_line(text: &str) -> String {
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
pub(super) fn head(key: &str, front: &NoteFront) -> Result<String, NoteError> {
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
pub(super) fn push_entry(out: &mut String, n: usize, s: &Scanned) {
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
pub(super) fn appended(
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
pub(super) fn day(timestamp: &str) -> &str {
    timestamp.get(..10).unwrap_or(timestamp)
}

/// The chunk files a note lists, read from its text (empty when it is not
/// a note of ours).
pub(super) fn listed(text: &str) -> Vec<String> {
    ChunkDoc::split(text)
        .ok()
        .and_then(|(yaml, _)| serde_saphyr::from_str::<NoteFront>(yaml).ok())
        .map(|f| f.chunks)
        .unwrap_or_default()
}
