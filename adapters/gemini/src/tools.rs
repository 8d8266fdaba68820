//! Gemini CLI tool calls summarized by their salient argument.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chatmill_adapter_sdk::text::summarize;
use serde_json::value::RawValue;

pub const CALL_SUMMARY_MAX: usize = 120;
pub const RESULT_SUMMARY_MAX: usize = 200;

const GENERIC_KEYS: &[&str] = &[
    "file_path",
    "absolute_path",
    "path",
    "dir_path",
    "command",
    "pattern",
    "query",
    "url",
    "prompt",
    "description",
    "fact",
    "name",
];

type Args<'a> = BTreeMap<Cow<'a, str>, &'a RawValue>;

fn arg<'a>(args: &Args<'a>, key: &str) -> Option<Cow<'a, str>> {
    let raw = args.get(key)?;
    serde_json::from_str::<Cow<'a, str>>(raw.get())
        .ok()
        .filter(|s| !s.trim().is_empty())
}

/// `name`'s salient argument: per well-known tool, else the first generic
/// key, else the first string argument, else the compact JSON.
pub fn call_summary(name: &str, input: Option<&RawValue>) -> String {
    let Some(input) = input else {
        return String::new();
    };
    let Ok(args) = serde_json::from_str::<Args<'_>>(input.get()) else {
        let s = input.get();
        return if s == "null" {
            String::new()
        } else {
            summarize(s, CALL_SUMMARY_MAX)
        };
    };
    let keys: &[&str] = match name {
        "run_shell_command" => &["command", "description"],
        "read_file" | "write_file" | "replace" | "edit" => &["file_path", "absolute_path", "path"],
        "glob" | "search_file_content" | "grep" => &["pattern"],
        "list_directory" | "ls" => &["path", "dir_path"],
        "web_fetch" => &["url", "prompt"],
        "google_web_search" => &["query"],
        "save_memory" => &["fact"],
        _ => &[],
    };
    let found = keys
        .iter()
        .chain(GENERIC_KEYS)
        .find_map(|k| arg(&args, k))
        .map(Cow::into_owned)
        .or_else(|| {
            // read_many_files: a list of paths.
            args.get("paths")
                .and_then(|raw| serde_json::from_str::<Vec<Cow<'_, str>>>(raw.get()).ok())
                .filter(|p| !p.is_empty())
                .map(|p| p.join(", "))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn salient_arguments() {
        let r = raw(r#"{"command":"ls -F","description":"List files."}"#);
        assert_eq!(call_summary("run_shell_command", Some(&r)), "ls -F");
        let r = raw(r#"{"absolute_path":"/src/a.rs"}"#);
        assert_eq!(call_summary("read_file", Some(&r)), "/src/a.rs");
        let r = raw(r#"{"paths":["a.rs","b.rs"]}"#);
        assert_eq!(call_summary("read_many_files", Some(&r)), "a.rs, b.rs");
        let r = raw(r#"{"zz":"x","aa":"first"}"#);
        assert_eq!(call_summary("custom", Some(&r)), "first");
        assert_eq!(
            call_summary("custom", Some(&raw(r#"{"n":2}"#))),
            r#"{"n":2}"#
        );
        assert_eq!(call_summary("custom", Some(&raw("{}"))), "");
        assert_eq!(call_summary("custom", Some(&raw("7"))), "7");
        assert_eq!(call_summary("custom", None), "");
    }
}
