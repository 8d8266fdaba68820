//! Claude.ai message content → typed parts.
//!
//! * `content[]` blocks (2025+): `text` → text, `thinking` → thinking,
//!   `tool_use` → tool call (the `artifacts` tool → the artifact itself),
//!   `tool_result` → short result summary, `voice_note` → `voice-note`
//!   part; `token_budget` and unknown types are skipped and counted.
//! * Flat `text` (2024, or when `content[]` is absent/empty).
//! * In assistant text of either kind, the inline `<antThinking>` tags become
//!   thinking parts and `<antArtifact …>` tags become an `artifact` part
//!   (its title) followed by the body as code (or as a `document` part for
//!   Markdown/plain-text artifacts); the tags are stripped from the prose.

use chatmill_adapter_sdk::Part;
use chatmill_adapter_sdk::text::summarize;

use crate::raw::{Block, RawMessage, ResultContent, ToolInput};

/// Longest tool-call argument summary, in characters.
pub const CALL_SUMMARY: usize = 120;
/// Longest tool-result summary, in characters.
pub const RESULT_SUMMARY: usize = 200;

/// The parts of one message. `assistant` enables artifact/thinking tag
/// extraction. Skipped sub-parts are reported through `skip`.
pub fn message_parts(
    m: &RawMessage<'_>,
    assistant: bool,
    skip: &mut dyn FnMut(&'static str),
) -> Vec<Part> {
    let mut out = Vec::new();
    let blocks: Vec<&Block> = m.content.0.iter().filter_map(|b| b.0.as_ref()).collect();
    if blocks.is_empty() {
        if let Some(text) = m.text.get() {
            push_prose(&mut out, text, assistant);
        }
    } else {
        for b in blocks {
            block_parts(b, assistant, &mut out, skip);
        }
    }
    // Uploaded documents, each with its text, then files/images
    // (`files_v2` repeats `files`).
    for a in m.attachments.0.iter().filter_map(|a| a.0.as_ref()) {
        out.push(Part::Attachment {
            name: a.file_name.get().unwrap_or("attachment").to_owned(),
            media_type: a.file_type.get().map(str::to_owned),
            uri: None,
        });
        if let Some(text) = a.extracted_content.get().filter(|t| !t.trim().is_empty()) {
            out.push(Part::Other {
                kind: FILE_TEXT.into(),
                text: bounded(text, FILE_TEXT_MAX),
            });
        }
    }
    let files = if m.files.0.is_empty() {
        &m.files_v2.0
    } else {
        &m.files.0
    };
    for f in files.iter().filter_map(|f| f.0.as_ref()) {
        let name = f.file_name.get().unwrap_or("file");
        out.push(Part::Attachment {
            name: name.to_owned(),
            media_type: media_type(name, f.file_kind.get()),
            uri: f.preview_url.get().or(f.file_uuid.get()).map(str::to_owned),
        });
    }
    out
}

/// The `other` part kind of an attached document's text (the host shows
/// it after the attachment, as a block).
const FILE_TEXT: &str = "file-text";
/// The most bytes of a document's text a turn carries: a long PDF's text
/// would otherwise be most of the chunk.
const FILE_TEXT_MAX: usize = 16 * 1024;

/// `text`, cut to at most `max` bytes at a character boundary, with a note
/// of how much was left out.
fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[… {} more bytes of the file's text are not shown]",
        &text[..cut],
        text.len() - cut
    )
}

/// A MIME type from the file extension (or `image/*` for an image kind).
fn media_type(name: &str, kind: Option<&str>) -> Option<String> {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let t = match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "json" => "application/json",
        _ if kind == Some("image") => "image/*",
        _ => return None,
    };
    Some(t.to_owned())
}

fn block_parts(
    b: &Block<'_>,
    assistant: bool,
    out: &mut Vec<Part>,
    skip: &mut dyn FnMut(&'static str),
) {
    match b.kind.or_empty() {
        "text" => {
            if let Some(t) = b.text.get() {
                push_prose(out, t, assistant);
            }
        }
        "thinking" => {
            let text = match b.thinking.get() {
                Some(t) => t.trim().to_owned(),
                None => b
                    .summaries
                    .0
                    .iter()
                    .filter_map(|s| s.0.as_ref().and_then(|s| s.summary.get()))
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
            if !text.trim().is_empty() {
                out.push(Part::Thinking(text));
            }
        }
        "tool_use" => {
            let name = b.name.get().unwrap_or("tool");
            let default_input = ToolInput::default();
            let input = b.input.0.as_ref().unwrap_or(&default_input);
            if name == "artifacts" {
                artifact_call(input, out);
            } else {
                out.push(Part::ToolCall {
                    name: name.to_owned(),
                    summary: summarize(tool_args(input), CALL_SUMMARY),
                });
            }
        }
        "tool_result" => {
            let mut text = String::new();
            match &b.content {
                ResultContent::Text(t) => text.push_str(t),
                ResultContent::Items(items) => {
                    for it in items.iter().filter_map(|i| i.0.as_ref()) {
                        let piece = it.text.get().or(it.title.get()).or(it.url.get());
                        if let Some(p) = piece {
                            if !text.is_empty() {
                                text.push_str("; ");
                            }
                            text.push_str(p);
                        }
                    }
                }
                ResultContent::None => {}
            }
            if text.trim().is_empty() {
                text = b.name.get().unwrap_or("(no output)").to_owned();
            }
            if b.is_error.0 {
                text = format!("error: {text}");
            }
            out.push(Part::ToolResult(summarize(&text, RESULT_SUMMARY)));
        }
        "voice_note" => {
            let text = match (b.title.get(), b.text.get()) {
                (Some(t), Some(x)) => format!("{}\n{}", t.trim(), x.trim()),
                (None, Some(x)) => x.trim().to_owned(),
                (Some(t), None) => t.trim().to_owned(),
                (None, None) => return,
            };
            out.push(Part::Other {
                kind: "voice-note".into(),
                text,
            });
        }
        "token_budget" => skip("bookkeeping-block"),
        _ => skip("unknown-block-type"),
    }
}

/// The argument that best summarizes a tool call.
fn tool_args<'i>(input: &'i ToolInput<'_>) -> &'i str {
    [
        &input.query,
        &input.q,
        &input.url,
        &input.path,
        &input.file_path,
        &input.command,
        &input.pattern,
        &input.title,
        &input.description,
        &input.prompt,
        &input.code,
        &input.content,
    ]
    .into_iter()
    .find_map(|s| s.get())
    .unwrap_or("")
}

/// The 2025 `artifacts` tool: a created/rewritten artifact is shown like an
/// inline `<antArtifact>`; an update is a tool call.
fn artifact_call(input: &ToolInput<'_>, out: &mut Vec<Part>) {
    let command = input.command.get().unwrap_or("");
    let title = input.title.get().or(input.id.get()).unwrap_or("artifact");
    match (command, input.content.get()) {
        ("create" | "rewrite", Some(body)) => {
            artifact_parts(title, input.kind.get(), input.language.get(), body, out);
        }
        _ => out.push(Part::ToolCall {
            name: "artifacts".into(),
            summary: summarize(&format!("{command} {title}"), CALL_SUMMARY),
        }),
    }
}

fn artifact_parts(
    title: &str,
    kind: Option<&str>,
    language: Option<&str>,
    body: &str,
    out: &mut Vec<Part>,
) {
    out.push(Part::Other {
        kind: "artifact".into(),
        text: title.trim().to_owned(),
    });
    let body = body.trim_matches('\n');
    if body.trim().is_empty() {
        return;
    }
    let language = match kind.unwrap_or("") {
        "text/markdown" | "text/plain" | "text/md" => {
            out.push(Part::Other {
                kind: "document".into(),
                text: body.to_owned(),
            });
            return;
        }
        "text/html" => Some("html"),
        "application/vnd.ant.react" => Some("jsx"),
        "image/svg+xml" => Some("svg"),
        "application/vnd.ant.mermaid" => Some("mermaid"),
        _ => language,
    };
    out.push(Part::Code {
        language: language.filter(|l| !l.is_empty()).map(str::to_owned),
        code: body.to_owned(),
    });
}

fn push_text(out: &mut Vec<Part>, text: &str) {
    let t = text.trim();
    if !t.is_empty() {
        out.push(Part::Text(t.to_owned()));
    }
}

fn push_prose(out: &mut Vec<Part>, text: &str, assistant: bool) {
    if assistant {
        split_tags(text, out);
    } else {
        push_text(out, text);
    }
}

const THINK_OPEN: &str = "<antThinking>";
const THINK_CLOSE: &str = "</antThinking>";
const ART_OPEN: &str = "<antArtifact";
const ART_CLOSE: &str = "</antArtifact>";

/// Splits assistant prose on `<antThinking>` / `<antArtifact>` tags. An
/// unclosed tag runs to the end of the text (a cut-off answer).
pub fn split_tags(text: &str, out: &mut Vec<Part>) {
    let mut rest = text;
    loop {
        let think = rest.find(THINK_OPEN);
        let art = rest.find(ART_OPEN);
        let (pos, is_think) = match (think, art) {
            (None, None) => {
                push_text(out, rest);
                return;
            }
            (Some(t), Some(a)) => {
                if t < a {
                    (t, true)
                } else {
                    (a, false)
                }
            }
            (Some(t), None) => (t, true),
            (None, Some(a)) => (a, false),
        };
        push_text(out, &rest[..pos]);
        if is_think {
            let after = &rest[pos + THINK_OPEN.len()..];
            let (body, next) = match after.find(THINK_CLOSE) {
                Some(e) => (&after[..e], &after[e + THINK_CLOSE.len()..]),
                None => (after, ""),
            };
            let body = body.trim();
            if !body.is_empty() {
                out.push(Part::Thinking(body.to_owned()));
            }
            rest = next;
        } else {
            let after = &rest[pos + ART_OPEN.len()..];
            let Some(tag_end) = open_tag_end(after) else {
                // `<antArtifact` without `>`: keep as prose.
                push_text(out, &rest[pos..]);
                return;
            };
            let attrs = &after[..tag_end];
            let after = &after[tag_end + 1..];
            let (body, next) = match after.find(ART_CLOSE) {
                Some(e) => (&after[..e], &after[e + ART_CLOSE.len()..]),
                None => (after, ""),
            };
            let title = attr(attrs, "title")
                .or_else(|| attr(attrs, "identifier"))
                .unwrap_or("artifact");
            artifact_parts(
                title,
                attr(attrs, "type"),
                attr(attrs, "language"),
                body,
                out,
            );
            rest = next;
        }
    }
}

/// Index of the `>` that closes an open tag, skipping quoted values.
fn open_tag_end(s: &str) -> Option<usize> {
    let mut quote = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quote = !quote,
            '>' if !quote => return Some(i),
            _ => {}
        }
    }
    None
}

/// The value of `name="…"` in a tag's attribute text.
fn attr<'s>(attrs: &'s str, name: &str) -> Option<&'s str> {
    let mut rest = attrs;
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].rsplit(|c: char| c.is_whitespace()).next()?;
        let after = &rest[eq + 2..];
        let end = after.find('"')?;
        if key == name {
            return Some(&after[..end]);
        }
        rest = &after[end + 1..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_become_parts_and_leave_the_prose() {
        let mut out = Vec::new();
        split_tags(
            " Sure.\n\n<antThinking>Worth an artifact.</antThinking>\n\n<antArtifact identifier=\"calc\" type=\"text/html\" title=\"A > B Calc\">\n<p>x</p>\n</antArtifact>\n\nDone.",
            &mut out,
        );
        assert_eq!(
            out,
            [
                Part::Text("Sure.".into()),
                Part::Thinking("Worth an artifact.".into()),
                Part::Other {
                    kind: "artifact".into(),
                    text: "A > B Calc".into()
                },
                Part::Code {
                    language: Some("html".into()),
                    code: "<p>x</p>".into()
                },
                Part::Text("Done.".into()),
            ]
        );
    }

    #[test]
    fn code_and_document_artifacts_and_unclosed_tags() {
        let mut out = Vec::new();
        split_tags(
            "<antArtifact identifier=\"s\" type=\"application/vnd.ant.code\" language=\"python\" title=\"S\">print(1)</antArtifact><antArtifact identifier=\"doc\" type=\"text/markdown\">\n# Notes\n",
            &mut out,
        );
        assert_eq!(
            out,
            [
                Part::Other {
                    kind: "artifact".into(),
                    text: "S".into()
                },
                Part::Code {
                    language: Some("python".into()),
                    code: "print(1)".into()
                },
                Part::Other {
                    kind: "artifact".into(),
                    text: "doc".into()
                },
                Part::Other {
                    kind: "document".into(),
                    text: "# Notes".into()
                },
            ]
        );
        let mut out = Vec::new();
        split_tags("a <antArtifact title=\"x\" never closed", &mut out);
        assert_eq!(
            out,
            [
                Part::Text("a".into()),
                Part::Text("<antArtifact title=\"x\" never closed".into())
            ]
        );
        let mut out = Vec::new();
        split_tags("<antThinking>cut off", &mut out);
        assert_eq!(out, [Part::Thinking("cut off".into())]);
    }

    #[test]
    fn attributes() {
        assert_eq!(attr(" identifier=\"a\" title=\"T\"", "title"), Some("T"));
        assert_eq!(attr(" identifier=\"a\" title=\"T\"", "type"), None);
        assert_eq!(attr(" title=\"unterminated", "title"), None);
        assert_eq!(open_tag_end(" title=\"a>b\">rest"), Some(12));
    }

    #[test]
    fn media_types_from_names() {
        assert_eq!(media_type("Shot.PNG", None).as_deref(), Some("image/png"));
        assert_eq!(
            media_type("image", Some("image")).as_deref(),
            Some("image/*")
        );
        assert_eq!(media_type("notes", None), None);
    }
}
