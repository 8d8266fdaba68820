//! One ChatGPT message → a user prompt, a piece of an answer, or a counted
//! skip. Every `content_type` is classified here:
//!
//! | content_type | user side | assistant side |
//! |---|---|---|
//! | `text` | text | text, with the cited pages as `citation` parts where their markers were; addressed to a tool (`recipient` ≠ `all`): tool call; on a non-`final` channel: thinking; from a `tool`: tool result |
//! | `multimodal_text` | text, transcripts, image/audio pointers as attachments | the same (DALL·E images are attachments) |
//! | `code` | — | to `python`: code; to another tool (`browser`…): tool call |
//! | `execution_output`, `tether_browsing_display`, `tether_quote`, `tether_browsing_code`, `sonic_webpage`, `system_error`, `computer_output` | — | tool result (short summary) |
//! | `thoughts`, `reasoning_recap` | — | thinking |
//! | `user_editable_context`, `model_editable_context` | hidden (counted) | hidden (counted) |
//! | anything else | skipped, counted `unknown-content-type` | same |

use std::borrow::Cow;

use chatmill_adapter_sdk::text::summarize;
use chatmill_adapter_sdk::{Part, Timestamp};

use crate::lenient::LStr;
use crate::raw::{ContentPart, MediaPart, MessageMeta, RawContent, RawMessage};

/// Longest tool-call argument summary, in characters.
pub const CALL_SUMMARY: usize = 120;
/// Longest tool-result summary, in characters.
pub const RESULT_SUMMARY: usize = 200;

/// What one message contributes.
#[derive(Debug, PartialEq)]
pub enum Piece {
    /// A real user prompt: opens a pair.
    User {
        parts: Vec<Part>,
        time: Option<Timestamp>,
        id: Option<String>,
    },
    /// Part of the answer to the current prompt (assistant or tool message).
    Answer {
        parts: Vec<Part>,
        model: Option<String>,
        time: Option<Timestamp>,
        interrupted: bool,
    },
    /// Skipped on purpose, with the reason.
    Skip(&'static str),
}

/// Classifies one message: its content piece, preceded by the reasons of
/// any sub-parts skipped on the way; or a single skip.
pub fn classify(m: &RawMessage<'_>) -> Vec<Piece> {
    let mut skips = Vec::new();
    let piece = classify_inner(m, &mut skips);
    let mut out: Vec<Piece> = Vec::new();
    match piece {
        Some(p) => {
            out.extend(skips.into_iter().map(Piece::Skip));
            out.push(p);
        }
        None => out.push(Piece::Skip(
            skips.first().copied().unwrap_or("empty-message"),
        )),
    }
    out
}

fn classify_inner(m: &RawMessage<'_>, skips: &mut Vec<&'static str>) -> Option<Piece> {
    let default_meta = MessageMeta::default();
    let meta = m.metadata.0.as_ref().unwrap_or(&default_meta);
    let role = m.author.0.as_ref().map(|a| a.role.or_empty()).unwrap_or("");
    let Some(content) = m.content.0.as_ref() else {
        skips.push("empty-message");
        return None;
    };
    let ct = content.content_type.or_empty();
    if ct == "user_editable_context" || meta.is_user_system_message.0 {
        skips.push("custom-instructions");
        return None;
    }
    if ct == "model_editable_context" {
        skips.push("memory-context");
        return None;
    }
    if role == "system" {
        skips.push("system-message");
        return None;
    }
    if meta.is_visually_hidden_from_conversation.0 || meta.is_contextual_answers_system_message.0 {
        skips.push("hidden-message");
        return None;
    }
    let time = m.create_time.0.or(m.update_time.0);
    match role {
        "user" => {
            let parts = user_parts(content, meta, skips);
            if parts.is_empty() {
                skips.push("empty-message");
                return None;
            }
            Some(Piece::User {
                parts,
                time,
                id: m.id.get().map(str::to_owned),
            })
        }
        "assistant" | "tool" => {
            let parts = if role == "tool" {
                let name = m
                    .author
                    .0
                    .as_ref()
                    .and_then(|a| a.name.get())
                    .unwrap_or("tool");
                tool_parts(name, content, skips)
            } else {
                assistant_parts(m, content, meta, skips)
            };
            if parts.is_empty() {
                if skips.is_empty() {
                    skips.push("empty-message");
                }
                return None;
            }
            let interrupted = role == "assistant"
                && (m.status.or_empty() == "in_progress"
                    || meta
                        .finish_details
                        .0
                        .as_ref()
                        .is_some_and(|f| f.kind.or_empty() == "interrupted"));
            Some(Piece::Answer {
                parts,
                model: if role == "assistant" {
                    meta.model_slug.get().map(str::to_owned)
                } else {
                    None
                },
                time,
                interrupted,
            })
        }
        _ => {
            skips.push("unknown-role");
            None
        }
    }
}

/// The string parts of `parts` joined by newlines (objects ignored).
fn joined_text(content: &RawContent<'_>) -> String {
    let mut out = String::new();
    for p in &content.parts.0 {
        if let ContentPart::Text(t) = p {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(t);
        }
    }
    out
}

fn push_text(out: &mut Vec<Part>, text: &str) {
    let t = text.trim();
    if !t.is_empty() {
        out.push(Part::Text(t.to_owned()));
    }
}

fn user_parts(
    content: &RawContent<'_>,
    meta: &MessageMeta<'_>,
    skips: &mut Vec<&'static str>,
) -> Vec<Part> {
    let mut out = Vec::new();
    let mut used_attachments = Vec::new();
    match content.content_type.or_empty() {
        "text" => push_text(&mut out, &joined_text(content)),
        "multimodal_text" => media_parts(content, meta, &mut used_attachments, &mut out, skips),
        "code" => {
            if let Some(code) = content.text.get() {
                out.push(code_part(&content.language, None, code));
            }
        }
        _ => {
            if let Some(t) = content.text.get() {
                push_text(&mut out, t);
            } else {
                skips.push("unknown-content-type");
            }
        }
    }
    // Uploaded files not already shown as an image part.
    for (i, a) in meta.attachments.0.iter().enumerate() {
        let Some(a) = a.0.as_ref() else { continue };
        if used_attachments.contains(&i) {
            continue;
        }
        out.push(Part::Attachment {
            name: a
                .name
                .get()
                .or(a.id.get())
                .unwrap_or("attachment")
                .to_owned(),
            media_type: a.mime_type.get().map(str::to_owned),
            uri: a.id.get().map(str::to_owned),
        });
    }
    out
}

/// `multimodal_text` parts: strings as text, pointers as attachments,
/// transcripts as text.
fn media_parts(
    content: &RawContent<'_>,
    meta: &MessageMeta<'_>,
    used_attachments: &mut Vec<usize>,
    out: &mut Vec<Part>,
    skips: &mut Vec<&'static str>,
) {
    let mut text = String::new();
    let flush = |text: &mut String, out: &mut Vec<Part>| {
        push_text(out, text);
        text.clear();
    };
    for p in &content.parts.0 {
        match p {
            ContentPart::Text(t) => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(t);
            }
            ContentPart::Object(obj) => {
                let kind = obj.content_type.or_empty();
                match kind {
                    "audio_transcription" => {
                        if let Some(t) = obj.text.get() {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(t);
                        }
                    }
                    _ if kind.ends_with("asset_pointer") || obj.asset_pointer.get().is_some() => {
                        flush(&mut text, out);
                        out.push(pointer_part(obj, kind, meta, used_attachments));
                    }
                    _ => {
                        if let Some(t) = obj.text.get() {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(t);
                        } else {
                            skips.push("unknown-part-type");
                        }
                    }
                }
            }
            ContentPart::Other => skips.push("unknown-part-type"),
        }
    }
    flush(&mut text, out);
}

fn pointer_part(
    obj: &MediaPart<'_>,
    kind: &str,
    meta: &MessageMeta<'_>,
    used_attachments: &mut Vec<usize>,
) -> Part {
    let pointer = obj.asset_pointer.get();
    // `file-service://file-abc` / `sediment://file_abc`: the file id.
    let file_id = pointer.map(|p| p.rsplit("://").next().unwrap_or(p));
    let matched = file_id.and_then(|fid| {
        meta.attachments
            .0
            .iter()
            .enumerate()
            .find(|(_, a)| a.0.as_ref().is_some_and(|a| a.id.get() == Some(fid)))
    });
    let (mut name, mut media_type) = (None, None);
    if let Some((i, a)) = matched {
        used_attachments.push(i);
        if let Some(a) = a.0.as_ref() {
            name = a.name.get().map(str::to_owned);
            media_type = a.mime_type.get().map(str::to_owned);
        }
    }
    let default_name = if kind.contains("audio") {
        "audio"
    } else if kind.contains("video") {
        "video"
    } else {
        "image"
    };
    Part::Attachment {
        name: name
            .or_else(|| obj.name.get().map(str::to_owned))
            .unwrap_or_else(|| default_name.to_owned()),
        media_type: media_type.or_else(|| obj.mime_type.get().map(str::to_owned)),
        uri: pointer.map(str::to_owned),
    }
}

fn code_part(language: &LStr<'_>, fallback: Option<&str>, code: &str) -> Part {
    let language = language
        .get()
        .filter(|l| *l != "unknown")
        .or(fallback)
        .map(str::to_owned);
    Part::Code {
        language,
        code: code.replace("\r\n", "\n").trim_matches('\n').to_owned(),
    }
}

fn assistant_parts(
    m: &RawMessage<'_>,
    content: &RawContent<'_>,
    meta: &MessageMeta<'_>,
    skips: &mut Vec<&'static str>,
) -> Vec<Part> {
    let ct = content.content_type.or_empty();
    let mut out = Vec::new();
    // Addressed to a tool: the message is the call.
    if let Some(recipient) = m.recipient.get().filter(|r| *r != "all") {
        if ct == "code" && (recipient == "python" || recipient.starts_with("python")) {
            if let Some(code) = content.text.get() {
                out.push(code_part(&content.language, Some("python"), code));
            }
            return out;
        }
        let args = match ct {
            "text" | "multimodal_text" => joined_text(content),
            _ => content.text.or_empty().to_owned(),
        };
        out.push(Part::ToolCall {
            name: recipient.to_owned(),
            summary: summarize(&args, CALL_SUMMARY),
        });
        return out;
    }
    let internal_channel = m.channel.get().is_some_and(|c| c != "final");
    match ct {
        "text" => {
            let text = joined_text(content);
            let clean = strip_citation_markers(&text);
            if internal_channel {
                let t = clean.trim();
                if !t.is_empty() {
                    out.push(Part::Thinking(t.to_owned()));
                }
            } else {
                push_cited_text(&mut out, &text, meta);
            }
        }
        "multimodal_text" => {
            let mut used = Vec::new();
            media_parts(content, meta, &mut used, &mut out, skips);
        }
        "code" => {
            if let Some(code) = content.text.get() {
                out.push(code_part(&content.language, None, code));
            }
        }
        "thoughts" => {
            for t in &content.thoughts.0 {
                let Some(t) = t.0.as_ref() else { continue };
                let text = match (t.summary.get(), t.content.get()) {
                    (Some(s), Some(c)) => format!("{}\n{}", s.trim(), c.trim()),
                    (Some(s), None) => s.trim().to_owned(),
                    (None, Some(c)) => c.trim().to_owned(),
                    (None, None) => continue,
                };
                out.push(Part::Thinking(text));
            }
        }
        "reasoning_recap" => {
            if let Some(c) = content.content.get().or(content.text.get()) {
                out.push(Part::Thinking(c.trim().to_owned()));
            }
        }
        _ => match tool_output(content) {
            Some(p) => out.push(p),
            None => skips.push("unknown-content-type"),
        },
    }
    out
}

/// A `tool` message (`author.name` is the tool).
fn tool_parts(_name: &str, content: &RawContent<'_>, skips: &mut Vec<&'static str>) -> Vec<Part> {
    let mut out = Vec::new();
    match content.content_type.or_empty() {
        "text" => {
            let text = joined_text(content);
            let clean = strip_citation_markers(&text);
            if !clean.trim().is_empty() {
                out.push(Part::ToolResult(summarize(&clean, RESULT_SUMMARY)));
            }
        }
        "multimodal_text" => {
            // DALL·E and similar: images as attachments, words as a summary.
            let mut parts = Vec::new();
            let mut used = Vec::new();
            media_parts(
                content,
                &MessageMeta::default(),
                &mut used,
                &mut parts,
                skips,
            );
            for p in parts {
                match p {
                    Part::Text(t) => out.push(Part::ToolResult(summarize(&t, RESULT_SUMMARY))),
                    other => out.push(other),
                }
            }
        }
        "thoughts" | "reasoning_recap" => {
            if let Some(c) = content.content.get().or(content.text.get()) {
                out.push(Part::Thinking(c.trim().to_owned()));
            }
        }
        _ => match tool_output(content) {
            Some(p) => out.push(p),
            None => skips.push("unknown-content-type"),
        },
    }
    out
}

/// The tool-output content types, as a short result summary.
fn tool_output(content: &RawContent<'_>) -> Option<Part> {
    let s = |t: &str| Part::ToolResult(summarize(t, RESULT_SUMMARY));
    Some(match content.content_type.or_empty() {
        "execution_output" => {
            let t = content.text.or_empty().trim();
            s(if t.is_empty() { "(no output)" } else { t })
        }
        "tether_browsing_display" => {
            let r = content.result.get().or(content.summary.get()).unwrap_or("");
            s(&browsing_summary(r))
        }
        "tether_quote" | "sonic_webpage" => {
            let title = content.title.get().map(str::trim);
            let url = content.url.get().or(content.domain.get());
            match (title, url) {
                (Some(t), Some(u)) => s(&format!("{t} — {u}")),
                (Some(t), None) => s(t),
                (None, Some(u)) => s(u),
                (None, None) => s(&strip_citation_markers(content.text.or_empty())),
            }
        }
        "tether_browsing_code" => s(content.text.or_empty()),
        "system_error" => s(&format!("error: {}", content.text.or_empty().trim())),
        "computer_output" => s("screenshot"),
        _ => return None,
    })
}

/// `# 【0†Title†domain】` result lines → `Title (domain); …`.
pub fn browsing_summary(result: &str) -> String {
    let mut titles = Vec::new();
    for line in result.lines() {
        let Some(rest) = line.trim_start().strip_prefix("# 【") else {
            continue;
        };
        let Some(inner) = rest.split('】').next() else {
            continue;
        };
        let mut fields = inner.split('†');
        let _n = fields.next();
        match (fields.next(), fields.next()) {
            (Some(t), Some(d)) if !d.trim().is_empty() => {
                titles.push(format!("{} ({})", t.trim(), d.trim()));
            }
            (Some(t), _) => titles.push(t.trim().to_owned()),
            _ => {}
        }
    }
    if titles.is_empty() {
        strip_citation_markers(result).into_owned()
    } else {
        titles.join("; ")
    }
}

/// The page one entry of `metadata.citations` cites (`Title — URL`, the
/// footnote the renderer writes), and where its marker starts (characters).
struct Page {
    start: Option<u64>,
    url: String,
    text: String,
}

fn cited_pages(meta: &MessageMeta<'_>) -> Vec<Option<Page>> {
    meta.citations
        .0
        .iter()
        .map(|c| {
            let c = c.0.as_ref()?;
            let cm = c.metadata.0.as_ref()?;
            let url = cm.url.get()?.trim();
            let text = match cm.title.get().map(str::trim).filter(|t| !t.is_empty()) {
                Some(t) => format!("{t} — {url}"),
                None => url.to_owned(),
            };
            let start = c.start_ix.as_ref().and_then(serde_json::Value::as_u64);
            Some(Page {
                start,
                url: url.to_owned(),
                text,
            })
        })
        .collect()
}

/// An answer's text with its citations where its markers were: the text up
/// to a marker, a `citation` part (the page, `Title — URL`), the text after
/// it. The text between is not trimmed (a marker may end a paragraph); the
/// renderer writes each citation as a footnote reference inside its
/// paragraph. A marker is matched to the citation that starts where it does
/// (`start_ix`), or, when no citation says where it starts, to the citation
/// of its rank; one with no page is removed. Pages cited but never marked
/// follow the text, once each.
fn push_cited_text(out: &mut Vec<Part>, text: &str, meta: &MessageMeta<'_>) {
    let pages = cited_pages(meta);
    let mut used = vec![false; pages.len()];
    let markers = citation_markers(text);
    if markers.is_empty() {
        // Most answers: the text as it is, one copy.
        push_text(out, text);
    } else {
        place_citations(out, text, &markers, &pages, &mut used);
    }
    // By URL: a page shown is not shown again.
    let mut shown: Vec<&str> = Vec::new();
    for (i, p) in pages.iter().enumerate() {
        let Some(p) = p else { continue };
        if used[i] {
            shown.push(&p.url);
        }
    }
    for (i, p) in pages.iter().enumerate() {
        let Some(p) = p else { continue };
        if used[i] || shown.contains(&p.url.as_str()) {
            continue;
        }
        shown.push(&p.url);
        out.push(Part::Other {
            kind: "citation".into(),
            text: p.text.clone(),
        });
    }
}

/// `text` split at its `markers`, each replaced by the citation part of its
/// page (marked `used`), or removed when it has none.
fn place_citations(
    out: &mut Vec<Part>,
    text: &str,
    markers: &[Marker],
    pages: &[Option<Page>],
    used: &mut [bool],
) {
    let positioned = pages.iter().flatten().any(|p| p.start.is_some());
    let mut pieces: Vec<Part> = Vec::new();
    let mut buf = String::new();
    let mut pos = 0;
    for (rank, m) in markers.iter().enumerate() {
        buf.push_str(&text[pos..m.bytes.start]);
        pos = m.bytes.end;
        let by_start = pages
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| p.start == Some(m.chars)));
        let by_rank = || pages.get(rank)?.as_ref().map(|_| rank);
        let page = if positioned { by_start } else { by_rank() };
        if let Some(i) = page {
            used[i] = true;
            if !buf.is_empty() {
                pieces.push(Part::Text(std::mem::take(&mut buf)));
            }
            let text = pages[i]
                .as_ref()
                .map(|p| p.text.clone())
                .unwrap_or_default();
            pieces.push(Part::Other {
                kind: "citation".into(),
                text,
            });
        }
    }
    buf.push_str(&text[pos..]);
    pieces.push(Part::Text(buf));
    // Trimmed at the answer's ends only; blank pieces dropped.
    if let Some(Part::Text(t)) = pieces.first_mut() {
        let blank = t.len() - t.trim_start().len();
        t.drain(..blank);
    }
    if let Some(Part::Text(t)) = pieces.last_mut() {
        t.truncate(t.trim_end().len());
    }
    out.extend(
        pieces
            .into_iter()
            .filter(|p| !matches!(p, Part::Text(t) if t.trim().is_empty())),
    );
}

/// A citation marker in a text: its bytes, and where it starts in characters.
struct Marker {
    bytes: std::ops::Range<usize>,
    chars: u64,
}

/// The citation markers of `s`, as [`strip_citation_markers`] finds them.
fn citation_markers(s: &str) -> Vec<Marker> {
    let mut out = Vec::new();
    if !has_marker_lead_byte(s.as_bytes()) {
        return out;
    }
    let (mut at, mut chars) = (0usize, 0u64);
    while let Some((i, open)) = s[at..]
        .char_indices()
        .find(|(_, c)| *c == '【' || *c == '\u{e200}')
    {
        let start = at + i;
        chars += s[at..start].chars().count() as u64;
        let after = start + open.len_utf8();
        let close = if open == '【' { '】' } else { '\u{e201}' };
        match s[after..].find(close) {
            Some(j) if j <= 400 && (open != '【' || s[after..after + j].contains('†')) => {
                let end = after + j + close.len_utf8();
                out.push(Marker {
                    bytes: start..end,
                    chars,
                });
                chars += s[start..end].chars().count() as u64;
                at = end;
            }
            _ => {
                chars += 1;
                at = after;
            }
        }
    }
    out
}

/// Whether `b` holds 0xE3 or 0xEE. Eight bytes at a time: a word without a
/// high bit (ASCII) is skipped whole — wasm has 64-bit integers but no SIMD
/// memchr, and a byte-at-a-time scan was 5× slower there than natively.
fn has_marker_lead_byte(b: &[u8]) -> bool {
    let lead = |x: &u8| *x == 0xE3 || *x == 0xEE;
    let words = b.chunks_exact(8);
    let tail = words.remainder();
    for w in words {
        let word = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        if word & 0x8080_8080_8080_8080 != 0 && w.iter().any(lead) {
            return true;
        }
    }
    tail.iter().any(lead)
}

/// Removes inline citation markers: `【6†source】`-style (2023–2024) and
/// the private-use `\u{e200}cite\u{e202}…\u{e201}` spans of newer exports.
pub fn strip_citation_markers(s: &str) -> Cow<'_, str> {
    // A plain byte scan first: both markers start with a lead byte (0xE3 for
    // U+3010, 0xEE for U+E200) that most text never contains. `str::contains`
    // with a non-ASCII char runs a two-way string search, which costs a lot
    // per message inside wasm (no SIMD memchr there).
    if !has_marker_lead_byte(s.as_bytes()) || (!s.contains('【') && !s.contains('\u{e200}')) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let next = rest
            .char_indices()
            .find(|(_, c)| *c == '【' || *c == '\u{e200}');
        let Some((i, open)) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..i]);
        let after = &rest[i + open.len_utf8()..];
        let close = if open == '【' { '】' } else { '\u{e201}' };
        match after.find(close) {
            // Only short spans are markers; `【` inside prose stays.
            Some(j) if j <= 400 && (open != '【' || after[..j].contains('†')) => {
                rest = &after[j + close.len_utf8()..];
            }
            _ => {
                out.push(open);
                rest = after;
            }
        }
    }
    Cow::Owned(out)
}
