//! Everything an adapter returns is hostile input (issue #22). The scripted
//! `hostile` adapter (tests/adapters/hostile) emits exactly the items a test
//! writes; other test adapters lie about their formats or themselves. Each
//! test proves one rule of the trust boundary: a broken protocol rule fails
//! the input (and only it), a repairable value is repaired and reported,
//! and nothing an adapter says reaches a path, the frontmatter or a
//! terminal as it is.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// A test adapter of `tests/adapters` (`hostile`, `greedy`, ...).
fn wasm(name: &str) -> String {
    let file = format!("{}.wasm", name.replace('-', "_"));
    bad_adapters().join(file).display().to_string()
}

/// Writes `in/NAME.hostile`, a script for the `hostile` adapter.
fn script(env: &Env, name: &str, script: &Value) -> PathBuf {
    env.write(&format!("in/{name}.hostile"), script.to_string())
}

/// A script of one conversation: its `start` fields and its `pairs`.
fn one(start: Value, pairs: Value) -> Value {
    json!({"items": [{"conversation": {"start": start, "pairs": pairs}}]})
}

/// A pair with a substantive question (never merged, never "mechanical").
fn qa(index: u64, user: &str) -> Value {
    let answer = format!("Here is a careful answer to: {user}");
    json!({"index": index, "user": user, "assistant": answer})
}

/// A script of one conversation with one ordinary pair; `start` its fields.
fn conv(start: Value) -> Value {
    let q = "How should a bounded queue treat a consumer that is slow?";
    one(start, json!([qa(1, q)]))
}

/// `chatmill --adapter A... ARGS...`, each of `adapters` a test adapter's name.
fn chatmill(env: &Env, adapters: &[&str], args: &[&str]) -> Run {
    let paths: Vec<String> = adapters.iter().map(|a| wasm(a)).collect();
    let mut all: Vec<&str> = Vec::new();
    for p in &paths {
        all.extend(["--adapter", p.as_str()]);
    }
    all.extend(args);
    env.run(&all)
}

/// `import --json` of `inputs` into `root` with the `hostile` adapter (and
/// `extra` global flags); the run and its summary.
fn import(env: &Env, root: &Path, extra: &[&str], inputs: &[PathBuf]) -> (Run, Value) {
    let mut args = vec!["--root", root.to_str().unwrap()];
    args.extend(extra);
    args.extend(["import", "--json"]);
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    let run = chatmill(env, &["hostile"], &args);
    let summary = run.json();
    (run, summary)
}

/// Imports the one script `v` into `ROOT` (exit 0 expected); the summary
/// and the root.
fn import_one(env: &Env, v: &Value) -> (Value, PathBuf) {
    let root = env.path("root");
    let (run, s) = import(env, &root, &[], &[script(env, "one", v)]);
    assert_eq!(run.code, 0, "{run:?}");
    (s, root)
}

/// `chatmill parse` of the one script `v`: its first conversation.
fn parse_one(env: &Env, v: &Value) -> Value {
    let input = script(env, "parsed", v);
    let run = chatmill(env, &["hostile"], &["parse", input.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    run.json()[0]["conversations"][0].clone()
}

/// The entry of the summary's `list` (`errors`, `warnings`) for the input
/// whose path ends with `file`: its reason.
fn reason<'a>(s: &'a Value, list: &str, file: &str) -> &'a str {
    let entries = s[list].as_array();
    entries
        .and_then(|l| {
            l.iter()
                .find(|e| e["file"].as_str().unwrap().ends_with(file))
        })
        .unwrap_or_else(|| panic!("no {list} entry for {file} in {s:#}"))["reason"]
        .as_str()
        .unwrap()
}

/// Imports `bad` scripts (each must fail its input with a violation of
/// `rule`, and only its input) and a `good` one into `root`; the summary.
fn violations(env: &Env, root: &Path, rule: &str, bad: &[Value], good: &Value) -> Value {
    let mut inputs: Vec<PathBuf> = (bad.iter().enumerate())
        .map(|(i, v)| script(env, &format!("bad{i}"), v))
        .collect();
    inputs.push(script(env, "good", good));
    let (run, s) = import(env, root, &[], &inputs);
    assert_eq!(run.code, 1, "{run:?}");
    for i in 0..bad.len() {
        let r = reason(&s, "errors", &format!("bad{i}.hostile"));
        assert!(r.contains("broke the adapter protocol"), "bad{i}: {r}");
        assert!(r.contains(&format!("rule `{rule}`")), "bad{i}: {r}");
    }
    assert_eq!(s["errors"].as_array().unwrap().len(), bad.len(), "{s:#}");
    s
}

fn written(s: &Value) -> u64 {
    s["chunks_written"].as_u64().unwrap()
}

/// The chunk files in `root`: (file stem = chunk id, text).
fn chunks(root: &Path) -> Vec<(String, String)> {
    let mut v: Vec<_> = (std::fs::read_dir(root).unwrap().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            (stem, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

/// All chunk files' text, joined.
fn all_chunks(root: &Path) -> String {
    chunks(root).into_iter().map(|(_, t)| t).collect()
}

/// The frontmatter's lines: between the opening `---` and the next `---`.
fn frontmatter(text: &str) -> Vec<&str> {
    assert!(text.starts_with("---\n"), "{text}");
    text.lines().skip(1).take_while(|l| *l != "---").collect()
}

/// A top-level frontmatter value, unquoted.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let prefix = format!("{key}:");
    frontmatter(text).into_iter().find_map(|l| {
        let v = l.strip_prefix(prefix.as_str())?.trim();
        Some(v.trim_matches(|c| c == '\'' || c == '"'))
    })
}

/// The frontmatter has one top-level `chunk_id`, the real one, and closes
/// where the writer closed it (right before `## Context`).
fn assert_real_chunk_id(stem: &str, text: &str) {
    let fm = frontmatter(text);
    let ids: Vec<&&str> = fm.iter().filter(|l| l.starts_with("chunk_id:")).collect();
    assert_eq!(ids, [&format!("chunk_id: {stem}")], "{text}");
    let after: Vec<&str> = text.lines().skip(fm.len() + 2).take(2).collect();
    assert_eq!(after, ["", "## Context"], "frontmatter cut short: {text}");
}

/// Every file under `dir`, except under `skip`.
fn files_under(dir: &Path, skip: &[&Path]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if skip.iter().any(|s| p.starts_with(s)) {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.insert(p);
            }
        }
    }
    out
}

// A platform becomes part of a file name: outside the id alphabet (a path,
// a NUL, too long) it fails the input before anything is written anywhere.
#[test]
fn a_platform_outside_the_id_alphabet_fails_the_input_and_writes_nothing() {
    let env = Env::new();
    env.write("config.toml", "");
    // Both targets exist, so a write there would succeed.
    let root = env.path("work/a/b/root");
    let abs = env.path("abs-target");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&abs).unwrap();
    let abs = abs.join("hostile-abs").display().to_string();
    let bad: Vec<Value> = ["../../escaped-hostile", &abs, "a\u{0}b", &"a".repeat(33)]
        .iter()
        .map(|p| conv(json!({"id": "c", "platform": p})))
        .collect();
    let skip = [root.as_path(), &env.path("in")];
    let before = files_under(env.dir.path(), &skip);
    let good = conv(json!({"id": "c", "platform": "a".repeat(32)}));
    let s = violations(&env, &root, "platform", &bad, &good);
    assert_eq!(written(&s), 1, "only the good input: {s:#}");
    assert_eq!(chunks(&root).len(), 1);
    let after = files_under(env.dir.path(), &skip);
    assert_eq!(after, before, "a file was written outside the root");
}

// Conversation ids are 1-1024 bytes of visible text, not blank.
#[test]
fn a_conversation_id_must_be_short_visible_text() {
    let env = Env::new();
    let bad: Vec<Value> = ["", "   ", "a\nb", "tab\there", &"i".repeat(1025)]
        .iter()
        .map(|id| conv(json!({ "id": id })))
        .collect();
    let good = conv(json!({"id": "i".repeat(1024)}));
    let s = violations(&env, &env.path("root"), "conversation-id", &bad, &good);
    assert_eq!(written(&s), 1, "{s:#}");
}

// Pair indexes start at 1 and strictly increase; any such sequence, even
// one that ends at u32::MAX, is kept whole.
#[test]
fn pair_indexes_start_at_one_and_strictly_increase() {
    let env = Env::new();
    let seq = |ix: &[u64], qs: &[&str]| {
        let pairs: Vec<Value> = (ix.iter().zip(qs.iter().cycle()))
            .map(|(&n, q)| qa(n, q))
            .collect();
        one(json!({"id": "c"}), json!(pairs))
    };
    let q = ["Where does the build cache live?"];
    let bad = [seq(&[0], &q), seq(&[5, 5], &q), seq(&[5, 3], &q)];
    let questions = [
        "How do I pin a toolchain version for the whole team?",
        "Which flags make the linker report unused sections?",
        "Where should generated protobuf code live in a monorepo?",
    ];
    let good = seq(&[1, 2, u64::from(u32::MAX)], &questions);
    let root = env.path("root");
    violations(&env, &root, "pair-index", &bad, &good);
    let all = all_chunks(&root);
    for q in questions {
        assert!(all.contains(q), "pair lost: {q}\n{all}");
    }
}

// Timestamps: nanos below 1e9, an instant within the years 1 to 9999.
#[test]
fn timestamps_are_real_instants_within_four_digit_years() {
    let env = Env::new();
    let at = |t: Value| {
        let pair = json!({"index": 1, "timestamp": t, "user": "When was the cache warmed?",
            "assistant": "Right after the deploy."});
        one(json!({"id": "c"}), json!([pair]))
    };
    let bad = [
        conv(json!({"id": "c", "created": [i64::MAX, 0]})),
        conv(json!({"id": "c", "updated": [253_402_300_800_i64, 0]})),
        at(json!([0, 1_000_000_000])),
        at(json!([-62_135_596_801_i64, 0])),
    ];
    // The last instant of 9999 is fine.
    let good = at(json!([253_402_300_799_i64, 999_999_999]));
    let root = env.path("root");
    violations(&env, &root, "timestamp", &bad, &good);
    let files = chunks(&root);
    assert_eq!(files.len(), 1);
    let ts = field(&files[0].1, "timestamp").unwrap();
    assert!(ts.starts_with("9999-12-31T23:59:59"), "{}", files[0].1);
}

// Items nest as start, pairs, end with the start's id.
#[test]
fn a_conversation_end_must_match_its_start() {
    let env = Env::new();
    let q = "Which lock does the writer take first?";
    let mismatched = json!({"items": [{"conversation": {
        "start": {"id": "c"}, "pairs": [qa(1, q)], "end_id": "not-c"}}]});
    let lone_pair = json!({"items": [{"pair": qa(1, q)}]});
    let root = env.path("root");
    let good = conv(json!({"id": "c"}));
    violations(&env, &root, "structure", &[mismatched, lone_pair], &good);
    assert_eq!(chunks(&root).len(), 1);
}

// A batch holds at most the items asked for: a script that respects that
// is imported, one that does not fails alone.
#[test]
fn more_items_than_asked_for_fail_the_input() {
    let env = Env::new();
    let ten = |id: &str, flood: bool| {
        let mut v = conv(json!({ "id": id }));
        v["items"][0]["conversation"]["repeat"] = json!(10);
        v["ignore_max_items"] = json!(flood);
        v
    };
    let inputs = [
        script(&env, "flood", &ten("flood", true)),
        script(&env, "calm", &ten("calm", false)),
    ];
    let flags = ["--adapter-batch-items", "10"];
    let (run, s) = import(&env, &env.path("root"), &flags, &inputs);
    assert_eq!(run.code, 1, "{run:?}");
    let r = reason(&s, "errors", "flood.hostile");
    assert!(r.contains("`hostile`") && r.contains("per batch"), "{r}");
    assert_eq!(written(&s), 10, "the calm input, in batches of 10: {s:#}");
}

// A 300 MB string is stopped by a limit (memory or batch size): the input
// fails, the process survives, the other input is imported.
#[test]
fn a_300_mb_string_fails_its_input_and_the_run_goes_on() {
    let env = Env::new();
    let text = json!({"repeat": "x", "times": 300_000_000});
    let huge = one(json!({"id": "huge"}), json!([{"index": 1, "user": text}]));
    let inputs = [
        script(&env, "huge", &huge),
        script(&env, "good", &conv(json!({"id": "good"}))),
    ];
    let (run, s) = import(&env, &env.path("root"), &[], &inputs);
    assert_eq!(run.code, 1, "exit 1, not a crash or a signal: {run:?}");
    let r = reason(&s, "errors", "huge.hostile");
    assert!(r.contains("memory limit") || r.contains("per batch"), "{r}");
    assert_eq!(s["errors"].as_array().unwrap().len(), 1, "{s:#}");
    assert_eq!(written(&s), 1, "{s:#}");
}

// Many small conversations in one input: every one is chunked.
#[test]
fn fifty_thousand_conversations_in_one_input_are_all_imported() {
    let env = Env::new();
    let mut bulk = conv(json!({"id": "bulk"}));
    bulk["items"][0]["conversation"]["repeat"] = json!(50_000);
    let (s, _) = import_one(&env, &bulk);
    assert_eq!(written(&s), 50_000, "{s:#}");
}

// A title is one line in the frontmatter: line breaks cannot add fields.
#[test]
fn a_title_is_folded_to_one_line() {
    let env = Env::new();
    let v = conv(json!({"id": "c", "title": "line1\nline2\r\n---\nchunk_id: evil"}));
    let folded = "line1 line2 --- chunk_id: evil";
    let (_, root) = import_one(&env, &v);
    let files = chunks(&root);
    assert_eq!(files.len(), 1);
    let (stem, text) = &files[0];
    assert_eq!(field(text, "conversation_title"), Some(folded), "{text}");
    assert_real_chunk_id(stem, text);
    assert_eq!(parse_one(&env, &v)["title"], folded);
}

// Metadata keys become snake_case ASCII; a value with line breaks and a
// fake frontmatter stays one value.
#[test]
fn metadata_keys_are_snake_case_and_values_stay_values() {
    let env = Env::new();
    let note = "line a\n---\nchunk_id: x\n---";
    let meta = json!([
        ["Weird Key!", "1"],
        ["session-id", "s-1"],
        ["gitBranch", "main"],
        ["note", note]
    ]);
    let v = conv(json!({"id": "c", "metadata": meta}));
    let (_, root) = import_one(&env, &v);
    let files = chunks(&root);
    assert_eq!(files.len(), 1);
    let (stem, text) = &files[0];
    assert_real_chunk_id(stem, text);
    assert_eq!(field(text, "weird_key"), Some("1"), "{text}");
    assert_eq!(field(text, "session_id"), Some("s-1"), "{text}");
    assert_eq!(field(text, "git_branch"), Some("main"), "{text}");
    assert!(field(text, "note").is_some(), "{text}");
    assert_eq!(
        parse_one(&env, &v)["metadata"],
        json!({"weird_key": "1", "session_id": "s-1", "git_branch": "main", "note": note})
    );
}

// Metadata may not name a frontmatter field: such keys are dropped and
// reported once per input (not per conversation), without `-v`.
#[test]
fn reserved_metadata_keys_are_dropped_and_reported_once_per_input() {
    let env = Env::new();
    let meta = json!([
        ["chunk_id", "evil-id"],
        ["timestamp", "1999-01-01T00:00:00Z"],
        ["project", "kept"]
    ]);
    let conversation = |id: &str| {
        let user = format!("How do I rotate the logs of service {id}?");
        let pair = json!({"index": 1, "timestamp": [1_714_557_600, 0], "user": user,
            "assistant": "With logrotate."});
        json!({"conversation": {"start": {"id": id, "metadata": meta}, "pairs": [pair]}})
    };
    let v = json!({"items": [conversation("one"), conversation("two")]});
    let (s, root) = import_one(&env, &v);
    let reported: Vec<&Value> = (s["warnings"].as_array().unwrap().iter())
        .filter(|w| {
            w["reason"]
                .as_str()
                .unwrap()
                .contains("metadata key `chunk_id`")
        })
        .collect();
    assert_eq!(reported.len(), 1, "once per input: {s:#}");
    assert!(
        reported[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("one.hostile")
    );
    assert!(reported[0]["reason"].as_str().unwrap().contains("reserved"));
    let files = chunks(&root);
    assert_eq!(files.len(), 2);
    for (stem, text) in &files {
        assert_real_chunk_id(stem, text);
        let ts = field(text, "timestamp").unwrap();
        assert!(ts.starts_with("2024-05-01T10:00:00"), "{text}");
        assert_eq!(field(text, "project"), Some("kept"), "{text}");
    }

    // The human summary says it too, on stderr.
    let (root2, input) = (env.path("root2"), env.path("in/one.hostile"));
    let args = [
        "--root",
        root2.to_str().unwrap(),
        "import",
        input.to_str().unwrap(),
    ];
    let human = chatmill(&env, &["hostile"], &args);
    assert_eq!(human.code, 0, "{human:?}");
    let warned =
        (human.stderr.lines()).any(|l| l.starts_with("warning:") && l.contains("chunk_id"));
    assert!(warned, "{human:?}");
}

// Pair metadata is normalized, shown by `parse`, and not written into the
// chunk frontmatter.
#[test]
fn pair_metadata_is_normalized_and_kept_out_of_the_frontmatter() {
    let env = Env::new();
    let mut v = conv(json!({"id": "c"}));
    v["items"][0]["conversation"]["pairs"][0]["metadata"] =
        json!([["Pair Key", "pv"], ["toolUseId", "t-1"]]);
    assert_eq!(
        parse_one(&env, &v)["pairs"][0]["metadata"],
        json!({"pair_key": "pv", "tool_use_id": "t-1"})
    );
    let (_, root) = import_one(&env, &v);
    let text = all_chunks(&root);
    for key in ["pair_key", "tool_use_id", "toolUseId", "Pair Key"] {
        assert!(!text.contains(key), "{key} in a chunk file: {text}");
    }
}

// A code block's language goes after the fence: anything but a plain token
// is dropped, so it cannot add a Markdown line.
#[test]
fn a_code_language_that_is_not_a_plain_token_is_dropped() {
    let env = Env::new();
    let code = |i: u64, lang: &str, q: &str| {
        let code = json!({"language": lang, "code": "let x = 1;"});
        json!({"index": i, "user": q, "assistant": "Like this:", "code": code})
    };
    let pairs = json!([
        code(
            1,
            "rust\n## Injected",
            "How do I declare a constant binding in Rust?"
        ),
        code(
            2,
            "a`b",
            "Can you show the same declaration in another dialect?"
        ),
        code(
            3,
            "rust extra",
            "Please write that binding again with a type annotation."
        ),
        code(
            4,
            "python",
            "What would the equivalent assignment look like in Python?"
        ),
    ]);
    let (_, root) = import_one(&env, &one(json!({"id": "c"}), pairs));
    let all = all_chunks(&root);
    assert!(!all.contains("Injected"), "{all}");
    let fences: Vec<&str> = all.lines().filter(|l| l.starts_with("```")).collect();
    for f in &fences {
        let bare = f.bytes().all(|b| b == b'`');
        assert!(bare || *f == "```python", "fence {f:?} in\n{all}");
    }
    assert!(fences.contains(&"```python"), "a plain token stays: {all}");
    assert!(fences.len() >= 8, "4 blocks, opened and closed: {all}");
}

// Skip reasons are bounded per conversation (the rest merged into `other
// reasons`) and counts saturate instead of overflowing, in `parse` and in
// `import` (which sums them).
#[test]
fn skip_reasons_are_bounded_and_counts_saturate() {
    let env = Env::new();
    let max = u32::MAX;
    let mut skipped = vec![
        json!(["big one", max]),
        json!(["big one", max]),
        json!(["big two", max]),
    ];
    skipped.extend((0..10_000).map(|i| json!([format!("reason {i:05}"), 1])));
    let mut v = conv(json!({"id": "c"}));
    v["items"][0]["conversation"]["skipped"] = json!(skipped);

    let parsed = parse_one(&env, &v);
    let map = parsed["skipped"].as_object().unwrap();
    assert!(
        map.len() <= 65,
        "64 reasons and `other reasons`: {}",
        map.len()
    );
    assert!(map.contains_key("other reasons"), "{map:?}");
    assert_eq!(map["big one"], u64::from(max));
    assert_eq!(map["big two"], u64::from(max));
    let rest: u64 = (map.iter())
        .filter(|(k, _)| !k.starts_with("big "))
        .map(|(_, n)| n.as_u64().unwrap())
        .sum();
    assert_eq!(rest, 10_000, "merged counts add up");

    let (s, _) = import_one(&env, &v);
    assert_eq!(written(&s), 1, "{s:#}");
}

// An adapter that claims every file and a built-in's format id never takes
// that format's files from the built-in, and is warned about; forced with
// `--adapter-id`, it gets the file (and declines it).
#[test]
fn a_greedy_adapter_never_takes_a_first_party_format() {
    let env = Env::new();
    let input = chatgpt_export(&env);
    let root = env.path("root").display().to_string();
    let run = chatmill(
        &env,
        &["greedy"],
        &["--root", &root, "import", "--json", &input],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(written(&run.json()) > 0, "{run:?}");
    let err = &run.stderr;
    assert!(
        err.contains("format id `chatgpt-conversations-json`"),
        "{err}"
    );
    let claims = |l: &str| l.contains("greedy") && l.contains("claims files of other formats");
    assert!(err.lines().any(claims), "{err}");
    let parsed = chatmill(&env, &["greedy"], &["parse", &input]).json();
    assert_eq!(
        entry(&parsed, "conversations.json")["adapter"]["id"],
        "chatgpt"
    );

    let root2 = env.path("root2").display().to_string();
    let args = [
        "--root",
        &root2,
        "import",
        "--json",
        "--adapter-id",
        "greedy",
        &input,
    ];
    let forced = chatmill(&env, &["greedy"], &args);
    assert_eq!(forced.code, 1, "{forced:?}");
    let s = forced.json();
    assert_eq!(written(&s), 0, "{s:#}");
    assert!(
        reason(&s, "errors", "conversations.json").contains("greedy"),
        "{s:#}"
    );
}

// An adapter that declines a file at its first batch hands it on to the
// next adapter that claims it, with a warning.
#[test]
fn an_adapter_that_declines_late_hands_the_file_to_the_next_claimant() {
    let env = Env::new();
    let fixture = std::fs::read(linechat_fixture()).unwrap();
    let input = env.write("in/x.unknownext", fixture).display().to_string();
    let linechat = linechat_adapter().display().to_string();
    let root = env.path("root").display().to_string();
    let args = [
        "--adapter",
        &linechat,
        "--root",
        &root,
        "import",
        "--json",
        &input,
    ];
    let run = chatmill(&env, &["greedy-late"], &args);
    assert_eq!(run.code, 0, "{run:?}");
    let s = run.json();
    assert!(written(&s) > 0, "{s:#}");
    let r = reason(&s, "warnings", "x.unknownext");
    let named = r.contains("greedy-late") && r.contains("linechat");
    assert!(named && r.contains("not its format"), "{r}");
}

// `adapters add` refuses an adapter that claims first-party formats unless
// forced; installed anyway, it still does not take their files.
#[test]
fn adding_a_greedy_adapter_needs_force_and_changes_nothing_for_builtin_formats() {
    let env = Env::new();
    let greedy = wasm("greedy");
    let installed = env.adapters_dir().join("greedy.wasm");
    let add = env.run(&["adapters", "add", &greedy]);
    assert_eq!(add.code, 1, "{add:?}");
    assert!(
        add.stderr.contains("claims files of other formats"),
        "{add:?}"
    );
    let hint = |l: &str| l.starts_with("hint:") && l.contains("--force");
    assert!(add.stderr.lines().any(hint), "{add:?}");
    assert!(!installed.exists());

    let forced = env.run(&["adapters", "add", "--force", &greedy]);
    assert_eq!(forced.code, 0, "{forced:?}");
    assert!(installed.exists());
    let shared = "format id `chatgpt-conversations-json`";
    assert!(forced.stderr.contains(shared), "{forced:?}");

    let input = chatgpt_export(&env);
    let root = env.path("root").display().to_string();
    let run = env.run(&["--root", &root, "import", "--json", &input]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(written(&run.json()) > 0, "{run:?}");
    let parsed = env.run(&["parse", &input]).json();
    assert_eq!(
        entry(&parsed, "conversations.json")["adapter"]["id"],
        "chatgpt"
    );
}

/// `env.run`, killed (and failed) after `limit`.
fn run_within(env: &Env, args: &[&str], limit: Duration) -> Run {
    let mut cmd = env.cmd();
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(limit) {
        Ok(out) => Run::from(out.unwrap()),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid]).status();
            panic!("`chatmill {}` still ran after {limit:?}", args.join(" "));
        }
    }
}

// A `sniff` that never returns is stopped by the time limit, reported once,
// and not asked again in the run; the other adapters read their files.
#[test]
fn a_sniff_that_never_returns_is_stopped_once_and_left_out() {
    let env = Env::new();
    let session = "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl";
    let inputs: Vec<String> = [
        (
            "chatgpt/librechat-chatgpt-export.json",
            "conversations.json",
        ),
        (
            "claude/osteele-claude-api-single-conversation-bakery.json",
            "bakery.json",
        ),
        (
            &format!("claude-code/claude-code-viewer-{session}"),
            session,
        ),
    ]
    .iter()
    .map(|(rel, name)| {
        let bytes = std::fs::read(corpus(rel)).unwrap();
        env.write(&format!("in/{name}"), bytes)
            .display()
            .to_string()
    })
    .collect();
    let (sniff_loop, root) = (wasm("sniff-loop"), env.path("root").display().to_string());
    let mut args = vec!["--adapter", &sniff_loop, "--adapter-timeout-ms", "1000"];
    args.extend(["--root", &root, "import", "--json"]);
    args.extend(inputs.iter().map(String::as_str));
    let run = run_within(&env, &args, Duration::from_secs(120));
    assert_eq!(run.code, 0, "{run:?}");
    assert!(written(&run.json()) > 0, "{run:?}");
    let warnings = (run.stderr.lines())
        .filter(|l| l.contains("sniff-loop") && l.to_lowercase().contains("warn"))
        .count();
    assert_eq!(warnings, 1, "{}", run.stderr);
}

// An adapter that describes itself with terminal escapes or a bad format id
// is refused, on the command line and by `adapters add`, and none of its
// text reaches the terminal raw.
#[test]
fn an_adapter_with_escapes_in_its_info_is_refused_without_echoing_them() {
    let env = Env::new();
    let input = env.write("in/x.txt", "hello\n").display().to_string();
    let run = chatmill(&env, &["hostile-info"], &["parse", &input]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("describes itself with an invalid"),
        "{run:?}"
    );
    let add = env.run(&["adapters", "add", &wasm("hostile-info")]);
    assert_eq!(add.code, 2, "{add:?}");
    assert!(
        add.stderr.contains("describes itself with an invalid"),
        "{add:?}"
    );
    assert!(!env.adapters_dir().join("hostile-info.wasm").exists());
    for out in [&run.stdout, &run.stderr, &add.stdout, &add.stderr] {
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{202e}'),
            "{out:?}"
        );
    }
}

// Chat text is shown to people with its controls and bidi overrides made
// visible; JSON output keeps it exact.
#[test]
fn text_for_humans_shows_controls_visibly_and_json_keeps_them() {
    let env = Env::new();
    let user = "zanzibarquux \u{1b}[2J\u{1b}]0;pwned\u{7} then \u{202e}reversed words";
    let title = "zanzibarquux \u{202e}gnp.exe";
    let pairs = json!([{"index": 1, "user": user, "assistant": "The zanzibarquux answer."}]);
    let (_, root) = import_one(&env, &one(json!({"id": "c", "title": title}), pairs));
    let r = root.to_str().unwrap();
    let search = |more: &[&str]| {
        let run = env.run(&[&["--root", r, "search", "zanzibarquux"], more].concat());
        assert_eq!(run.code, 0, "{run:?}");
        run
    };
    let raw =
        |out: &str| out.contains('\u{1b}') || out.contains('\u{7}') || out.contains('\u{202e}');

    // The list shows the title: its bidi override is shown, not obeyed.
    let list = search(&[]).stdout;
    assert!(!raw(&list) && list.contains("\\u{202e}"), "{list:?}");
    // The context block shows the exchange itself.
    let context = search(&["--format", "context"]).stdout;
    assert!(!raw(&context), "{context:?}");
    for shown in ["\\x1b[2J", "\\x07", "\\u{202e}"] {
        assert!(context.contains(shown), "{shown}: {context}");
    }

    let hits = search(&["--json"]).json()["hits"].clone();
    let doc = hits[0]["document"].as_str().unwrap();
    assert!(doc.contains("\u{1b}[2J\u{1b}]0;pwned\u{7}"), "{doc:?}");
    assert!(doc.contains('\u{202e}'), "{doc:?}");
    assert_eq!(hits[0]["meta"]["title"], title);
}
