//! Tool calls and tool results, summarized: a tool's salient argument (a path,
//! a command, a pattern) and a short excerpt of its output, never the payload.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chatmill_adapter_sdk::text::summarize;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Longest tool-call summary, in characters.
pub const CALL_SUMMARY_MAX: usize = 120;
/// Longest tool-result summary, in characters.
pub const RESULT_SUMMARY_MAX: usize = 200;

/// Argument keys tried, in order, for tools without a specific rule.
const GENERIC_KEYS: &[&str] = &[
    "file_path",
    "notebook_path",
    "path",
    "command",
    "pattern",
    "query",
    "url",
    "description",
    "prompt",
    "skill",
    "name",
    "title",
];

type Args<'a> = BTreeMap<Cow<'a, str>, &'a RawValue>;

/// A string argument, if the key holds a JSON string.
fn arg<'a>(args: &Args<'a>, key: &str) -> Option<Cow<'a, str>> {
    let raw = args.get(key)?;
    let s: Cow<'a, str> = serde_json::from_str::<Cow<'a, str>>(raw.get()).ok()?;
    if s.trim().is_empty() { None } else { Some(s) }
}

/// `path` shown relative to `cwd` when it lies below it.
fn relative<'p>(path: &'p str, cwd: Option<&str>) -> &'p str {
    if let Some(cwd) = cwd {
        let cwd = cwd.trim_end_matches(['/', '\\']);
        if !cwd.is_empty()
            && let Some(rest) = path.strip_prefix(cwd)
            && let Some(rest) = rest.strip_prefix(['/', '\\'])
            && !rest.is_empty()
        {
            return rest;
        }
    }
    path
}

/// The summary of a `tool_use` block: the salient argument of well-known
/// tools, else the first generic argument, else the first string argument,
/// else a compact rendering of the input.
pub fn call_summary(name: &str, input: Option<&RawValue>, cwd: Option<&str>) -> String {
    let Some(input) = input else {
        return String::new();
    };
    let args: Args<'_> = match serde_json::from_str(input.get()) {
        Ok(a) => a,
        // Not an object (a string, null...): show it as it is.
        Err(_) => {
            let s = input.get();
            return if s == "null" || s == "{}" {
                String::new()
            } else {
                summarize(s, CALL_SUMMARY_MAX)
            };
        }
    };
    let lower = name.to_ascii_lowercase();
    let path_of = |keys: &[&str]| -> Option<String> {
        keys.iter()
            .find_map(|k| arg(&args, k))
            .map(|p| relative(&p, cwd).to_string())
    };
    let specific: Option<String> = match lower.as_str() {
        "read" | "write" | "edit" | "multiedit" | "notebookedit" | "notebookread" => {
            path_of(&["file_path", "notebook_path", "path"])
        }
        "bash" | "powershell" => arg(&args, "command")
            .or_else(|| arg(&args, "description"))
            .map(Cow::into_owned),
        "glob" | "grep" => arg(&args, "pattern").map(|p| match path_of(&["path"]) {
            Some(dir) => format!("{p} in {dir}"),
            None => p.into_owned(),
        }),
        "ls" => path_of(&["path"]),
        "webfetch" => arg(&args, "url").map(Cow::into_owned),
        "websearch" => arg(&args, "query").map(Cow::into_owned),
        "task" | "agent" => {
            let desc = arg(&args, "description").or_else(|| arg(&args, "prompt"));
            match (arg(&args, "subagent_type"), desc) {
                (Some(t), Some(d)) => Some(format!("{t}: {d}")),
                (None, Some(d)) => Some(d.into_owned()),
                (Some(t), None) => Some(t.into_owned()),
                (None, None) => None,
            }
        }
        "todowrite" => args
            .get("todos")
            .and_then(|raw| serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok())
            .map(|todos| match todos.len() {
                1 => "1 todo".to_string(),
                n => format!("{n} todos"),
            }),
        "exitplanmode" => arg(&args, "plan").map(Cow::into_owned),
        "killshell" | "bashoutput" | "taskoutput" => arg(&args, "shell_id")
            .or_else(|| arg(&args, "bash_id"))
            .or_else(|| arg(&args, "task_id"))
            .map(Cow::into_owned),
        _ => None,
    };
    let found = specific
        .or_else(|| {
            GENERIC_KEYS
                .iter()
                .find_map(|k| arg(&args, k))
                .map(|v| relative(&v, cwd).to_string())
        })
        .or_else(|| {
            args.values()
                .find_map(|raw| serde_json::from_str::<Cow<'_, str>>(raw.get()).ok())
                .filter(|s| !s.trim().is_empty())
                .map(Cow::into_owned)
        });
    match found {
        Some(s) => summarize(&s, CALL_SUMMARY_MAX),
        None if args.is_empty() => String::new(),
        None => summarize(input.get(), CALL_SUMMARY_MAX),
    }
}

/// A block inside a `tool_result`'s content list.
#[derive(Deserialize)]
struct ResultBlock<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// The summary of a `tool_result` block's content (a string or a list of
/// blocks), `error: ` in front when the tool failed.
pub fn result_summary(content: Option<&RawValue>, is_error: bool) -> String {
    let mut text = String::new();
    if let Some(raw) = content {
        let s = raw.get();
        if s.starts_with('"') {
            if let Ok(t) = serde_json::from_str::<Cow<'_, str>>(s) {
                text.push_str(&t);
            }
        } else if s.starts_with('[')
            && let Ok(blocks) = serde_json::from_str::<Vec<ResultBlock<'_>>>(s)
        {
            for b in blocks {
                let piece = match (b.kind.as_deref(), b.text) {
                    (_, Some(t)) => t.into_owned(),
                    (Some("image"), None) => "[image]".to_string(),
                    (Some(other), None) => format!("[{other}]"),
                    (None, None) => continue,
                };
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&piece);
            }
        }
    }
    let mut error = is_error;
    let mut body = text.trim();
    if let Some(inner) = body.strip_prefix("<tool_use_error>") {
        error = true;
        body = inner
            .trim_end()
            .strip_suffix("</tool_use_error>")
            .unwrap_or(inner)
            .trim();
    }
    let summary = if body.is_empty() {
        "(no output)".to_string()
    } else {
        summarize(body, RESULT_SUMMARY_MAX)
    };
    if error {
        format!("error: {summary}")
    } else {
        summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn well_known_tools_show_their_salient_argument() {
        let cwd = Some("/home/a/proj");
        let r = raw(r#"{"file_path":"/home/a/proj/src/totals.rs","limit":20}"#);
        assert_eq!(call_summary("Read", Some(&r), cwd), "src/totals.rs");
        let r = raw(r#"{"file_path":"/etc/hosts"}"#);
        assert_eq!(call_summary("Edit", Some(&r), cwd), "/etc/hosts");
        let r = raw(r#"{"command":"cargo test\n  --all","description":"Run tests"}"#);
        assert_eq!(call_summary("Bash", Some(&r), cwd), "cargo test --all");
        let r = raw(r#"{"command":"ls"}"#);
        assert_eq!(call_summary("bash", Some(&r), cwd), "ls");
        let r = raw(r#"{"pattern":"**/*.rs","path":"/home/a/proj/src"}"#);
        assert_eq!(call_summary("Glob", Some(&r), cwd), "**/*.rs in src");
        let r = raw(r#"{"url":"https://example.com/x","prompt":"summarize"}"#);
        assert_eq!(
            call_summary("WebFetch", Some(&r), cwd),
            "https://example.com/x"
        );
        let r = raw(
            r#"{"subagent_type":"general-purpose","description":"search files","prompt":"long"}"#,
        );
        assert_eq!(
            call_summary("Task", Some(&r), cwd),
            "general-purpose: search files"
        );
        let r = raw(r#"{"todos":[{"content":"a"},{"content":"b"}]}"#);
        assert_eq!(call_summary("TodoWrite", Some(&r), cwd), "2 todos");
    }

    #[test]
    fn unknown_tools_fall_back_generically() {
        let r = raw(r#"{"zeta":"last","alpha":"first string"}"#);
        assert_eq!(call_summary("mcp__x__y", Some(&r), None), "first string");
        let r = raw(r#"{"query":"rust wasm"}"#);
        assert_eq!(call_summary("mcp__search", Some(&r), None), "rust wasm");
        let r = raw(r#"{"n":1}"#);
        assert_eq!(call_summary("Counter", Some(&r), None), r#"{"n":1}"#);
        assert_eq!(call_summary("Nothing", Some(&raw("{}")), None), "");
        assert_eq!(call_summary("Nothing", None, None), "");
        assert_eq!(call_summary("Weird", Some(&raw("[1,2]")), None), "[1,2]");
        let long = format!(r#"{{"command":"{}"}}"#, "x".repeat(500));
        assert!(
            call_summary("Bash", Some(&raw(&long)), None)
                .chars()
                .count()
                <= CALL_SUMMARY_MAX + 1
        );
    }

    #[test]
    fn results_are_short_and_flag_errors() {
        assert_eq!(
            result_summary(Some(&raw(r#""No files found""#)), false),
            "No files found"
        );
        assert_eq!(result_summary(Some(&raw(r#""""#)), false), "(no output)");
        assert_eq!(result_summary(None, false), "(no output)");
        assert_eq!(
            result_summary(
                Some(&raw(
                    r#""<tool_use_error>File has not been read yet.</tool_use_error>""#
                )),
                false
            ),
            "error: File has not been read yet."
        );
        assert_eq!(
            result_summary(
                Some(&raw(
                    r#"[{"type":"text","text":"a\nb"},{"type":"image","source":{}}]"#
                )),
                true
            ),
            "error: a b [image]"
        );
        let long = format!(r#""{}""#, "y".repeat(5000));
        assert!(result_summary(Some(&raw(&long)), false).chars().count() <= RESULT_SUMMARY_MAX + 1);
    }
}
