//! Rendering typed message parts as the Markdown a chunk shows: text as is,
//! code fenced, tool calls and results as one-line summaries, thinking left
//! out unless asked for.

use chatmill_model::Part;

/// What to include when rendering.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// Include the model's thinking (left out by default: it is long and
    /// rarely what a later reader needs).
    pub thinking: bool,
}

/// The fence a line opens (leading whitespace trimmed): its run of
/// backticks and tildes when it starts with three of either. The block
/// ends at a line that starts with the same run.
pub(crate) fn fence_opened(line: &str) -> Option<&str> {
    if !(line.starts_with("```") || line.starts_with("~~~")) {
        return None;
    }
    let end = line
        .find(|c: char| c != '`' && c != '~')
        .unwrap_or(line.len());
    Some(&line[..end])
}

/// A fence of backticks longer than any run inside `code`.
fn fence_for(code: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in code.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// `s` with its whitespace runs folded to one space, trimmed.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// The `other` part kind of an attached file's text (Claude.ai's
/// `extracted_content`), shown after the attachment as a fenced block.
pub const FILE_TEXT: &str = "file-text";
/// The most characters of an attached file's text a chunk shows.
pub const FILE_TEXT_MAX: usize = 16 * 1024;

/// One part as Markdown, or `None` when it is left out.
pub fn render_part(part: &Part, opts: RenderOptions) -> Option<String> {
    Some(match part {
        Part::Text { text } => {
            let t = text.trim_end();
            if t.trim().is_empty() {
                return None;
            }
            t.to_string()
        }
        Part::Code { language, code } => {
            let fence = fence_for(code);
            let lang = language.as_deref().unwrap_or("");
            format!("{fence}{lang}\n{}\n{fence}", code.trim_end_matches('\n'))
        }
        Part::Thinking { text } => {
            if !opts.thinking || text.trim().is_empty() {
                return None;
            }
            let quoted: Vec<String> = text.trim().lines().map(|l| format!("> {l}")).collect();
            format!("> *Thinking:*\n{}", quoted.join("\n"))
        }
        Part::ToolCall { name, summary } => {
            let summary = one_line(summary);
            if summary.is_empty() {
                format!("[Tool: {name}]")
            } else {
                format!("[Tool: {name} {summary}]")
            }
        }
        Part::ToolResult { summary } => {
            let summary = one_line(summary);
            if summary.is_empty() {
                return None;
            }
            format!("[Tool result: {summary}]")
        }
        Part::Attachment { name, uri, .. } => {
            match uri.as_deref().and_then(crate::asset_link::linked) {
                Some(asset) => markdown_link(name, asset),
                None => format!("[Attachment: {}]", one_line(name)),
            }
        }
        Part::Other { kind, text } if kind == FILE_TEXT => {
            let text = text.trim_matches('\n');
            if text.trim().is_empty() {
                return None;
            }
            let text = match text.char_indices().nth(FILE_TEXT_MAX) {
                Some((cut, _)) => {
                    format!("{}\n[… the rest of the file is not shown]", &text[..cut])
                }
                None => text.to_string(),
            };
            let fence = fence_for(&text);
            format!("{fence}\n{text}\n{fence}")
        }
        Part::Other { kind, text } => {
            let text = text.trim();
            if text.is_empty() {
                format!("[{kind}]")
            } else if text.contains('\n') {
                format!("[{kind}]\n{text}")
            } else {
                format!("[{kind}: {text}]")
            }
        }
    })
}

fn is_bracket_line(part: &Part) -> bool {
    matches!(
        part,
        Part::ToolCall { .. } | Part::ToolResult { .. } | Part::Attachment { .. }
    )
}

/// The `other` part kind of a citation where its marker was in the text
/// (its text: the cited page, `Title — URL`, one line).
pub const CITATION: &str = "citation";

/// The cited page of a [`CITATION`] part.
fn citation(part: &Part) -> Option<&str> {
    match part {
        Part::Other { kind, text } if kind == CITATION => Some(text),
        _ => None,
    }
}

/// A message's parts as Markdown: blocks separated by a blank line, runs of
/// one-line summaries (tool calls, results, attachments) on consecutive
/// lines. A citation is a footnote reference (`[^1]`) right where it is in
/// its paragraph (the text after it goes on as it was), numbered by page in
/// the message; the footnotes (`[^1]: Title — URL`) end the message.
pub fn render_parts(parts: &[Part], opts: RenderOptions) -> String {
    render_numbered(parts, opts, 1)
}

/// The answers of consecutive exchanges that share one chunk file, as
/// [`render_parts`] renders each, but with footnotes numbered on from one
/// answer to the next, so that a label is unique in its file. Each answer
/// comes with its text as rendered alone, kept where the numbers are the
/// same (an answer with no footnote before it).
pub fn answers_numbered_on(answers: &[(&[Part], &str)], opts: RenderOptions) -> Vec<String> {
    let mut first = 1;
    answers
        .iter()
        .map(|&(parts, alone)| {
            let text = if first == 1 {
                alone.to_string()
            } else {
                render_numbered(parts, opts, first)
            };
            first += footnotes(parts);
            text
        })
        .collect()
}

/// One part of a long answer split at its sections (`chunker`), with the
/// footnotes its references need: the footnotes that end the whole answer
/// go to the parts that refer to them, in label order, so each part file
/// stands alone.
pub fn part_with_footnotes(part: &str, whole: &str) -> String {
    let definitions = trailing_footnotes(whole);
    if definitions.is_empty() {
        return part.to_string();
    }
    // The last part ends with the whole answer's footnotes: without them.
    let own = trailing_footnotes(part);
    let body = match own.first() {
        Some((_, first_line)) => part[..part.len() - own_len(part, first_line)].trim_end(),
        None => part.trim_end(),
    };
    let mut out = body.to_string();
    let mut first = true;
    for (label, line) in &definitions {
        if body.contains(label.as_str()) {
            out.push_str(if first { "\n\n" } else { "\n" });
            out.push_str(line);
            first = false;
        }
    }
    out
}

/// The footnote definitions a rendered message ends with: `([^n], line)`.
fn trailing_footnotes(text: &str) -> Vec<(String, &str)> {
    let mut out: Vec<(String, &str)> = text
        .trim_end()
        .lines()
        .rev()
        .map_while(|line| {
            let label = line.strip_prefix("[^")?.split_once("]: ")?.0;
            label
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| (format!("[^{label}]"), line))
        })
        .collect();
    out.reverse();
    out
}

/// The bytes from `first_line` (the first footnote definition at the end of
/// `part`) to the end of `part`.
fn own_len(part: &str, first_line: &str) -> usize {
    part.rfind(first_line).map_or(0, |at| part.len() - at)
}

/// How many footnotes [`render_parts`] writes for `parts`: their distinct
/// cited pages.
fn footnotes(parts: &[Part]) -> usize {
    let mut pages: Vec<String> = Vec::new();
    for page in parts.iter().filter_map(citation).map(one_line) {
        if !pages.contains(&page) {
            pages.push(page);
        }
    }
    pages.len()
}

/// [`render_parts`] with footnotes numbered from `first`.
fn render_numbered(parts: &[Part], opts: RenderOptions, first: usize) -> String {
    let mut out = String::new();
    let mut prev_bracket = false;
    let mut notes: Vec<String> = Vec::new();
    // Text or a reference was written last: a reference or text goes on it.
    let mut inline = false;
    let mut after_reference = false;
    for part in parts {
        if let Some(page) = citation(part) {
            let page = one_line(page);
            let n = first
                + match notes.iter().position(|p| *p == page) {
                    Some(i) => i,
                    None => {
                        notes.push(page);
                        notes.len() - 1
                    }
                };
            if !out.is_empty() && !inline {
                out.push_str("\n\n");
            }
            out.push_str(&format!("[^{n}]"));
            (inline, after_reference, prev_bracket) = (true, true, false);
            continue;
        }
        let Some(s) = render_part(part, opts) else {
            continue;
        };
        let is_text = matches!(part, Part::Text { .. });
        let bracket = is_bracket_line(part);
        // Text right after a reference goes on in its paragraph.
        let goes_on = after_reference && is_text;
        if !goes_on && !out.is_empty() {
            out.push_str(if bracket && prev_bracket {
                "\n"
            } else {
                "\n\n"
            });
        }
        out.push_str(&s);
        (inline, after_reference, prev_bracket) = (is_text, false, bracket);
    }
    if !notes.is_empty() {
        for (i, page) in notes.iter().enumerate() {
            out.push_str(if i == 0 { "\n\n" } else { "\n" });
            out.push_str(&format!("[^{}]: {page}", first + i));
        }
    }
    out
}

/// The plain text of a message (text and code only): what headers, topics
/// and the mechanical-exchange filter look at.
pub fn plain_text(parts: &[Part]) -> String {
    let mut out = String::new();
    // Text on both sides of a citation is one text.
    let mut after_reference = false;
    for p in parts {
        let s = match p {
            Part::Text { text } => text.as_str(),
            Part::Code { code, .. } => code.as_str(),
            _ => {
                after_reference = citation(p).is_some();
                continue;
            }
        };
        if after_reference && matches!(p, Part::Text { .. }) {
            out.push_str(s.trim_end());
        } else {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(s.trim());
        }
        after_reference = false;
    }
    out
}

/// An attachment linked to its asset, as Markdown relative to the chunk
/// file (chunk files live in the root, beside `assets/`): an image shown,
/// any other file linked.
pub fn markdown_link(name: &str, asset: &str) -> String {
    let mut text = String::with_capacity(name.len());
    for c in one_line(name).chars() {
        // What could end the link text or open code or HTML in it.
        if matches!(c, '[' | ']' | '\\' | '`' | '<' | '>') {
            text.push('\\');
        }
        text.push(c);
    }
    let image = matches!(
        asset.rsplit_once('.').map_or("", |(_, e)| e),
        "png" | "jpg" | "jpeg" | "gif" | "webp" | "svg" | "bmp" | "avif"
    );
    format!(
        "{}[{text}]({}/{asset})",
        if image { "!" } else { "" },
        crate::asset_link::ASSETS_DIR
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Part {
        Part::Text { text: s.into() }
    }

    #[test]
    fn tool_calls_are_one_line_summaries_and_thinking_is_left_out() {
        let parts = vec![
            Part::Thinking {
                text: "let me think".into(),
            },
            text("Let me look."),
            Part::ToolCall {
                name: "Read".into(),
                summary: "src/totals.rs".into(),
            },
            Part::ToolResult {
                summary: "pub fn total(\n  items)".into(),
            },
            text("Found it."),
        ];
        assert_eq!(
            render_parts(&parts, RenderOptions::default()),
            "Let me look.\n\n[Tool: Read src/totals.rs]\n[Tool result: pub fn total( items)]\n\nFound it."
        );
        let with = render_parts(&parts, RenderOptions { thinking: true });
        assert!(
            with.starts_with("> *Thinking:*\n> let me think\n\nLet me look."),
            "{with}"
        );
    }

    #[test]
    fn citations_are_footnote_references_inside_their_paragraph() {
        let cite = |page: &str| Part::Other {
            kind: CITATION.into(),
            text: page.into(),
        };
        let parts = vec![
            text("Founded in 2014"),
            cite("Crunchbase — https://c.example"),
            text(".\n\nAcquired in 2020."),
            cite("Fastly\n— https://f.example"),
            cite("Crunchbase — https://c.example"),
            text("\n\nThe end."),
            Part::ToolCall {
                name: "browser".into(),
                summary: "search".into(),
            },
            cite("Late — https://l.example"),
        ];
        assert_eq!(
            render_parts(&parts, RenderOptions::default()),
            "Founded in 2014[^1].\n\nAcquired in 2020.[^2][^1]\n\nThe end.\n\n\
             [Tool: browser search]\n\n[^3]\n\n\
             [^1]: Crunchbase — https://c.example\n\
             [^2]: Fastly — https://f.example\n\
             [^3]: Late — https://l.example"
        );
        assert_eq!(
            plain_text(&parts),
            "Founded in 2014.\n\nAcquired in 2020.\n\nThe end."
        );
        // Answers that share a chunk number their footnotes on.
        let second = [
            text("Later"),
            cite("Other — https://o.example"),
            cite("Late — https://l.example"),
        ];
        let answers = answers_numbered_on(
            &[
                (&parts, &render_parts(&parts, RenderOptions::default())),
                (&[text("No notes.")], "No notes."),
                (&second, &render_parts(&second, RenderOptions::default())),
            ],
            RenderOptions::default(),
        );
        assert_eq!(answers[0], render_parts(&parts, RenderOptions::default()));
        assert_eq!(answers[1], "No notes.");
        assert_eq!(
            answers[2],
            "Later[^4][^5]\n\n[^4]: Other — https://o.example\n[^5]: Late — https://l.example"
        );
        // A long answer split at its sections: each part keeps the
        // footnotes it refers to.
        let whole = "## A\nOne[^1].\n\n## B\nTwo[^2] and one[^1].\n\n## C\nNone.\n\n\
                     [^1]: P1 — https://1.example\n[^2]: P2 — https://2.example";
        assert_eq!(
            part_with_footnotes("## A\nOne[^1].", whole),
            "## A\nOne[^1].\n\n[^1]: P1 — https://1.example"
        );
        assert_eq!(
            part_with_footnotes("## B\nTwo[^2] and one[^1].", whole),
            "## B\nTwo[^2] and one[^1].\n\n[^1]: P1 — https://1.example\n[^2]: P2 — https://2.example"
        );
        assert_eq!(
            part_with_footnotes(
                "## C\nNone.\n\n[^1]: P1 — https://1.example\n[^2]: P2 — https://2.example",
                whole
            ),
            "## C\nNone."
        );
        assert_eq!(
            part_with_footnotes("## D\nplain", "## D\nplain"),
            "## D\nplain"
        );
        // No citation, no footnotes.
        assert_eq!(
            render_parts(&[text("a"), text("b")], RenderOptions::default()),
            "a\n\nb"
        );
    }

    #[test]
    fn a_fence_is_three_backticks_or_tildes_and_their_whole_run() {
        assert_eq!(fence_opened("```rust"), Some("```"));
        assert_eq!(fence_opened("````md"), Some("````"));
        assert_eq!(fence_opened("~~~"), Some("~~~"));
        assert_eq!(fence_opened("``not"), None);
        assert_eq!(fence_opened("text ```"), None);
    }

    #[test]
    fn code_fences_outgrow_backticks_inside() {
        let p = Part::Code {
            language: Some("md".into()),
            code: "```rust\nfn x() {}\n```\n".into(),
        };
        assert_eq!(
            render_part(&p, RenderOptions::default()).unwrap(),
            "````md\n```rust\nfn x() {}\n```\n````"
        );
    }

    #[test]
    fn empty_parts_vanish_and_plain_text_skips_tools() {
        let parts = vec![
            text("  "),
            Part::ToolCall {
                name: "Bash".into(),
                summary: "ls".into(),
            },
            text("hello"),
        ];
        assert_eq!(
            render_parts(&parts, RenderOptions::default()),
            "[Tool: Bash ls]\n\nhello"
        );
        assert_eq!(plain_text(&parts), "hello");
    }
}
