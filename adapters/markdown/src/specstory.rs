//! SpecStory histories (`.specstory/history/*.md`): the 2025 Cursor
//! vintage (`_**User**_` / `_**Assistant**_`, `---` between steps,
//! `<details>` tool tables, bare terminal fences) and Markdown v2.x
//! (`_**User (ts)**_`, `_**Agent (model ts)**_` per block, `<think>` and
//! `<tool-use>` wrappers, sub-agent `_**Agent - sidechain …**_` blocks).

use chatmill_adapter_sdk::text::{file_stem, summarize};
use chatmill_adapter_sdk::{Conversation, ErrorKind, ParseError, Part, Timestamp, TurnPair};

use crate::md::{Fence, fence_lang};
use crate::{CALL_SUMMARY, RESULT_SUMMARY, name_timestamp};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Header {
    User {
        time: Option<Timestamp>,
    },
    Agent {
        model: Option<String>,
        time: Option<Timestamp>,
        sidechain: bool,
    },
}

/// A turn header line (`_**User**_`, `_**Agent (…)**_`, `_**Assistant**_`).
pub fn header(line: &str) -> Option<Header> {
    let inner = line.trim_end().strip_prefix("_**")?.strip_suffix("**_")?;
    let (role, paren) = match inner.find(" (") {
        Some(i) if inner.ends_with(')') => (&inner[..i], Some(&inner[i + 2..inner.len() - 1])),
        _ => (inner, None),
    };
    match role {
        "User" => Some(Header::User {
            time: paren.and_then(Timestamp::parse),
        }),
        "Assistant" | "Agent" | "Agent - sidechain" | "Assistant - sidechain" => {
            let (model, time) = paren.map(agent_paren).unwrap_or((None, None));
            Some(Header::Agent {
                model,
                time,
                sidechain: role.ends_with("sidechain"),
            })
        }
        _ => None,
    }
}

/// `claude-opus-4-5-20251101 2026-01-16 16:48:43Z`, `2026-06-30 15:25:09Z`,
/// or `model gpt-5.1-codex-max, mode Agent`.
fn agent_paren(p: &str) -> (Option<String>, Option<Timestamp>) {
    let p = p.trim();
    if let Some(rest) = p.strip_prefix("model ") {
        let model = rest.split(',').next().unwrap_or("").trim();
        return ((!model.is_empty()).then(|| model.to_owned()), None);
    }
    if let Some(t) = Timestamp::parse(p) {
        return (None, Some(t));
    }
    match p.split_once(' ') {
        Some((model, rest)) => (Some(model.to_owned()), Timestamp::parse(rest)),
        None if !p.is_empty() => (Some(p.to_owned()), None),
        None => (None, None),
    }
}

/// Whether the head has turn headers outside code: (user, agent).
pub fn has_turns(text: &str) -> (bool, bool) {
    let mut fence = Fence::default();
    let (mut user, mut agent) = (false, false);
    for line in text.lines() {
        if fence.line(line) {
            continue;
        }
        match header(line) {
            Some(Header::User { .. }) => user = true,
            Some(Header::Agent { .. }) => agent = true,
            None => {}
        }
    }
    (user, agent)
}

struct PairBuild {
    user: String,
    time: Option<Timestamp>,
    model: Option<String>,
    assistant: Vec<Part>,
}

/// Parses a whole SpecStory file.
pub fn parse(lines: &[String], file_name: &str) -> Result<Conversation, ParseError> {
    let mut conv = Conversation::default();
    conv.start.platform = "local".into();
    let mut session: Option<String> = None;
    let mut agent_name: Option<String> = None;
    let mut session_time = None;
    let mut title: Option<String> = None;

    // Split into blocks at headers outside code.
    let mut fence = Fence::default();
    let mut blocks: Vec<(Header, Vec<&str>)> = Vec::new();
    for line in lines {
        let code = fence.line(line);
        if !code && let Some(h) = header(line) {
            blocks.push((h, Vec::new()));
            continue;
        }
        match blocks.last_mut() {
            Some((_, body)) => body.push(line),
            None if !code => {
                let t = line.trim();
                if let Some(c) = t.strip_prefix("<!--").and_then(|c| c.strip_suffix("-->")) {
                    // `<!-- Claude Code Session <uuid> (<ts>) -->`
                    if let Some((agent, rest)) = c.trim().split_once(" Session ") {
                        let mut it = rest.splitn(2, ' ');
                        session = it.next().map(str::to_owned).filter(|s| !s.is_empty());
                        session_time = it
                            .next()
                            .and_then(|r| r.trim().strip_prefix('(')?.strip_suffix(')'))
                            .and_then(Timestamp::parse);
                        agent_name = Some(agent.trim().to_owned());
                    }
                } else if let Some(h) = t.strip_prefix("# ")
                    && title.is_none()
                {
                    title = Some(clean_title(h));
                }
            }
            None => {}
        }
    }
    if blocks.is_empty() {
        return Err(ParseError::new(
            ErrorKind::NotThisFormat,
            "a SpecStory-like file without any turn headers (not a transcript)",
        ));
    }

    let mut pairs: Vec<PairBuild> = Vec::new();
    let mut in_skipped_pair = false;
    for (h, body) in blocks {
        match h {
            Header::User { time } => {
                let text = user_text(&body);
                if text.is_empty() {
                    conv.skipped.add("empty-user-prompt");
                    in_skipped_pair = true;
                } else if text.starts_with("[Request interrupted by user") {
                    // A marker Claude Code writes, not a prompt: what follows
                    // still belongs to the previous prompt.
                    conv.skipped.add("interrupt-marker");
                } else if text.starts_with("<local-command-stdout>")
                    || text.starts_with("<local-command-stderr>")
                {
                    // The output of a local slash command, echoed as a user turn.
                    conv.skipped.add("local-command-output");
                } else {
                    in_skipped_pair = false;
                    pairs.push(PairBuild {
                        user: text,
                        time,
                        model: None,
                        assistant: Vec::new(),
                    });
                }
            }
            Header::Agent {
                sidechain: true, ..
            } => conv.skipped.add("sidechain-block"),
            Header::Agent { model, time, .. } => match pairs.last_mut() {
                Some(p) if !in_skipped_pair => {
                    if p.model.is_none() {
                        p.model = model;
                    }
                    if p.time.is_none() {
                        p.time = time;
                    }
                    assistant_parts(&body, &mut p.assistant);
                }
                _ => conv.skipped.add("assistant-without-prompt"),
            },
        }
    }

    // A slash command (`<command-name>/model</command-name>`) nobody
    // answered is bookkeeping, not a prompt.
    let before = pairs.len();
    pairs.retain(|p| !(p.user.starts_with("<command-name>") && p.assistant.is_empty()));
    for _ in pairs.len()..before {
        conv.skipped.add("slash-command");
    }

    let stem = file_stem(file_name);
    conv.start.id = session.clone().unwrap_or_else(|| stem.to_owned());
    conv.start.title = title.filter(|t| !t.is_empty());
    conv.start.created = name_timestamp(file_name)
        .or(session_time)
        .or_else(|| pairs.iter().find_map(|p| p.time));
    conv.start.updated = pairs.iter().filter_map(|p| p.time).max();
    conv.start
        .metadata
        .push(("source_tool".into(), "specstory".into()));
    if let Some(s) = session {
        conv.start.metadata.push(("session_id".into(), s));
    }
    if let Some(a) = agent_name {
        conv.start.metadata.push(("agent".into(), a));
    }
    let mut models = pairs.iter().filter_map(|p| p.model.as_deref());
    if let Some(first) = models.next()
        && models.all(|m| m == first)
    {
        conv.start.model = Some(first.to_owned());
    }
    conv.pairs = pairs
        .into_iter()
        .map(|p| TurnPair {
            index: 0,
            timestamp: p.time,
            model: p.model,
            user: vec![Part::Text(p.user)],
            assistant: p.assistant,
            metadata: Vec::new(),
        })
        .collect();
    Ok(conv)
}

/// `Title (2025-04-26 16:30:55)` → `Title`; a title that is only a
/// timestamp (`2026-01-16 16:48:38Z`) → empty.
fn clean_title(h: &str) -> String {
    let mut t = h.trim();
    if let Some(i) = t.rfind(" (")
        && t.ends_with(')')
        && Timestamp::parse(&t[i + 2..t.len() - 1]).is_some()
    {
        t = &t[..i];
    }
    if Timestamp::parse(t).is_some() {
        return String::new();
    }
    t.trim().to_owned()
}

fn trim_lines<'a, 'b>(mut lines: &'b [&'a str]) -> &'b [&'a str] {
    while let [first, rest @ ..] = lines {
        if first.trim().is_empty() {
            lines = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = lines {
        if last.trim().is_empty() || last.trim_end() == "---" {
            lines = rest;
        } else {
            break;
        }
    }
    lines
}

fn user_text(body: &[&str]) -> String {
    trim_lines(body).join("\n")
}

/// One assistant block (or a Cursor-vintage assistant turn) as parts.
pub fn assistant_parts(body: &[&str], out: &mut Vec<Part>) {
    let mut fence = Fence::default();
    let mut segments: Vec<Vec<&str>> = vec![Vec::new()];
    for &line in body {
        let code = fence.line(line);
        if !code && line.trim_end() == "---" {
            segments.push(Vec::new());
        } else if let Some(s) = segments.last_mut() {
            s.push(line);
        }
    }
    for seg in &segments {
        segment_parts(trim_lines(seg), out);
    }
}

fn segment_parts(seg: &[&str], out: &mut Vec<Part>) {
    if seg.is_empty() {
        return;
    }
    if let Some((cmd, output)) = terminal(seg) {
        out.push(Part::ToolCall {
            name: "terminal".into(),
            summary: summarize(&cmd, CALL_SUMMARY),
        });
        if !output.trim().is_empty() {
            out.push(Part::ToolResult(summarize(&output, RESULT_SUMMARY)));
        }
        return;
    }
    if let [only] = seg
        && let Some(path) = only.strip_prefix("Read file: ")
    {
        out.push(Part::ToolCall {
            name: "read_file".into(),
            summary: summarize(path, CALL_SUMMARY),
        });
        return;
    }
    let mut fence = Fence::default();
    let mut text: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < seg.len() {
        let line = seg[i];
        if !fence.is_open() {
            let region = if line.starts_with("<think>") {
                Some((Region::Think, end_of(seg, i, "</think>")))
            } else if line.starts_with("<tool-use") {
                Some((Region::ToolUse, end_of(seg, i, "</tool-use>")))
            } else if line.trim_start().starts_with("<details") {
                Some((Region::Details, end_of(seg, i, "</details>")))
            } else {
                None
            };
            if let Some((kind, end)) = region {
                flush_text(&mut text, out);
                let lines = seg.get(i..=end).unwrap_or(&seg[i..]);
                match kind {
                    Region::Think => think(lines, out),
                    Region::ToolUse => tool_use(lines, out),
                    Region::Details => details(lines, out),
                }
                i = end + 1;
                continue;
            }
        }
        fence.line(line);
        text.push(line);
        i += 1;
    }
    flush_text(&mut text, out);
}

#[derive(Clone, Copy)]
enum Region {
    Think,
    ToolUse,
    Details,
}

/// Index of the line (outside code) that ends with `close`, else the last.
fn end_of(seg: &[&str], start: usize, close: &str) -> usize {
    let mut fence = Fence::default();
    for (j, line) in seg.iter().enumerate().skip(start) {
        let code = j > start && fence.line(line);
        if !code && line.trim_end().ends_with(close) {
            return j;
        }
    }
    seg.len().saturating_sub(1)
}

fn flush_text(text: &mut Vec<&str>, out: &mut Vec<Part>) {
    let t = trim_lines(text).join("\n");
    if !t.trim().is_empty() {
        out.push(Part::Text(t));
    }
    text.clear();
}

fn strip_tags(s: &str) -> String {
    let mut s = s.to_owned();
    for tag in [
        "<think>",
        "</think>",
        "<details>",
        "</details>",
        "<summary>Thought Process</summary>",
    ] {
        s = s.replace(tag, "");
    }
    s.trim().to_owned()
}

fn think(lines: &[&str], out: &mut Vec<Part>) {
    let t = strip_tags(&lines.join("\n"));
    if !t.is_empty() {
        out.push(Part::Thinking(t));
    }
}

fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = s.find(open)? + open.len();
    let end = s[start..].find(close)? + start;
    Some(&s[start..end])
}

/// `<tool-use data-tool-name="Glob"><details><summary>Tool use: **Glob**</summary>`
/// + argument lines + a fenced output + `</details></tool-use>`.
fn tool_use(lines: &[&str], out: &mut Vec<Part>) {
    let first = lines.first().copied().unwrap_or("");
    let summary_idx = lines.iter().position(|l| l.contains("<summary>"));
    let name = between(first, "data-tool-name=\"", "\"")
        .map(str::to_owned)
        .or_else(|| {
            summary_idx
                .and_then(|i| between(lines[i], "**", "**"))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "tool".into());
    let body = summary_idx.map_or(&lines[..0], |i| &lines[i + 1..]);
    let mut args: Vec<&str> = Vec::new();
    let mut output: Vec<&str> = Vec::new();
    let mut fence = Fence::default();
    let mut in_output = false;
    let mut done = false;
    for line in body {
        if done {
            break;
        }
        let was_open = fence.is_open();
        let code = fence.line(line);
        if code {
            if !was_open {
                in_output = true; // the opening fence line
            } else if !fence.is_open() {
                done = true; // the closing fence line
            } else {
                output.push(line);
            }
            continue;
        }
        if in_output {
            continue;
        }
        let t = line.trim();
        if t.starts_with("</details>") || t.starts_with("</tool-use>") {
            break;
        }
        if !t.is_empty() {
            args.push(t);
        }
    }
    let args = args.join(" ").replace('`', "");
    out.push(Part::ToolCall {
        name,
        summary: summarize(args.trim(), CALL_SUMMARY),
    });
    let output = output.join("\n");
    if !output.trim().is_empty() {
        out.push(Part::ToolResult(summarize(&output, RESULT_SUMMARY)));
    }
}

/// A Cursor-vintage `<details><summary>Searched codebase "x" • **25** results</summary>`.
fn details(lines: &[&str], out: &mut Vec<Part>) {
    let joined = lines.join("\n");
    let summary = between(&joined, "<summary>", "</summary>")
        .unwrap_or("")
        .replace("**", "");
    let summary = summary.trim();
    let lower = summary.to_lowercase();
    let name = if lower.starts_with("searched codebase") {
        "codebase_search"
    } else if lower.starts_with("listed") {
        "list_dir"
    } else if lower.starts_with("grep") {
        "grep_search"
    } else if lower.starts_with("searched web") {
        "web_search"
    } else if lower.starts_with("searched files") {
        "file_search"
    } else if lower.starts_with("read file") {
        "read_file"
    } else if summary.is_empty() {
        "details"
    } else {
        "tool"
    };
    out.push(Part::ToolCall {
        name: name.into(),
        summary: summarize(summary, CALL_SUMMARY),
    });
}

/// A segment that is only a shell fence, optionally followed by an output
/// fence: (command, output).
fn terminal(seg: &[&str]) -> Option<(String, String)> {
    let lang = fence_lang(seg.first()?)?;
    if !matches!(
        lang,
        "bash" | "sh" | "shell" | "zsh" | "console" | "powershell"
    ) {
        return None;
    }
    let mut fence = Fence::default();
    fence.line(seg[0]);
    let mut i = 1;
    let mut cmd = Vec::new();
    while i < seg.len() {
        let l = seg[i];
        i += 1;
        fence.line(l);
        if !fence.is_open() {
            break;
        }
        cmd.push(l);
    }
    if fence.is_open() {
        return None;
    }
    while i < seg.len() && seg[i].trim().is_empty() {
        i += 1;
    }
    let mut output = Vec::new();
    if i < seg.len() {
        fence_lang(seg[i])?;
        fence.line(seg[i]);
        i += 1;
        while i < seg.len() {
            let l = seg[i];
            i += 1;
            fence.line(l);
            if !fence.is_open() {
                break;
            }
            output.push(l);
        }
        if seg[i..].iter().any(|l| !l.trim().is_empty()) {
            return None;
        }
    }
    Some((cmd.join("\n"), output.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        assert_eq!(header("_**User**_"), Some(Header::User { time: None }));
        assert_eq!(
            header("_**User (2026-01-23T17:24:15.996Z)**_"),
            Some(Header::User {
                time: Timestamp::parse("2026-01-23T17:24:15.996Z")
            })
        );
        assert_eq!(
            header("_**Agent (claude-opus-4-5-20251101 2026-01-16 16:48:43Z)**_"),
            Some(Header::Agent {
                model: Some("claude-opus-4-5-20251101".into()),
                time: Timestamp::parse("2026-01-16T16:48:43Z"),
                sidechain: false
            })
        );
        assert_eq!(
            header("_**Agent - sidechain (2026-06-30 15:25:09Z)**_"),
            Some(Header::Agent {
                model: None,
                time: Timestamp::parse("2026-06-30T15:25:09Z"),
                sidechain: true
            })
        );
        assert_eq!(
            header("_**Agent (model gpt-5.1-codex-max, mode Agent)**_"),
            Some(Header::Agent {
                model: Some("gpt-5.1-codex-max".into()),
                time: None,
                sidechain: false
            })
        );
        assert_eq!(header("_**Assistant**_ and more"), None);
        assert_eq!(header("**User**"), None);
        assert_eq!(header("_**Note**_"), None);
    }

    #[test]
    fn assistant_blocks_become_typed_parts() {
        let body = [
            "",
            "I'll look.",
            "",
            "---",
            "",
            "```bash",
            "bun init -y",
            "```",
            "",
            "```",
            "created index.ts",
            "```",
            "",
            "---",
            "",
            "<details>",
            "            <summary>Searched codebase \"task #008\" • **25** results</summary>",
            "| File |",
            "</details>",
            "",
            "---",
            "",
            "Read file: src/cli.ts",
            "",
            "---",
            "",
            "<think><details><summary>Thought Process</summary>",
            "Hmm.",
            "</details></think>",
            "",
            "<tool-use data-tool-type=\"search\" data-tool-name=\"Glob\"><details>",
            "<summary>Tool use: **Glob**</summary>",
            " pattern `.github/**/*`",
            "",
            "```text",
            "/a/.github/x.md",
            "---",
            "_**User**_",
            "```",
            "</details></tool-use>",
            "",
            "Done:",
            "```yaml",
            "---",
            "a: 1",
            "```",
        ];
        let mut parts = Vec::new();
        assistant_parts(&body, &mut parts);
        assert_eq!(
            parts,
            vec![
                Part::Text("I'll look.".into()),
                Part::ToolCall {
                    name: "terminal".into(),
                    summary: "bun init -y".into()
                },
                Part::ToolResult("created index.ts".into()),
                Part::ToolCall {
                    name: "codebase_search".into(),
                    summary: "Searched codebase \"task #008\" • 25 results".into()
                },
                Part::ToolCall {
                    name: "read_file".into(),
                    summary: "src/cli.ts".into()
                },
                Part::Thinking("Hmm.".into()),
                Part::ToolCall {
                    name: "Glob".into(),
                    summary: "pattern .github/**/*".into()
                },
                Part::ToolResult("/a/.github/x.md --- _**User**_".into()),
                Part::Text("Done:\n```yaml\n---\na: 1\n```".into()),
            ]
        );
    }

    #[test]
    fn titles() {
        assert_eq!(
            clean_title("Setting Up Minsky CLI with Bun (2025-04-26 16:30:55)"),
            "Setting Up Minsky CLI with Bun"
        );
        assert_eq!(clean_title("2026-01-16 16:48:38Z"), "");
        assert_eq!(clean_title("Plain (notes)"), "Plain (notes)");
    }
}
