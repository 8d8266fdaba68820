//! Every real export in the shared corpus goes through the real sandbox:
//! it is recognized by the right built-in adapter (or by none, for the
//! non-chat files), and the sandboxed output is exactly what the same parser
//! gives natively — so the native corpus tests of each adapter also hold for
//! what the host sees.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chatmill_adapter_sdk as sdk;
use chatmill_runtime::model::{Conversation, Pair, Part};
use chatmill_runtime::{AdapterSet, Builtin, Input, Limits, Runtime, SelectError};

fn corpus_files() -> Vec<PathBuf> {
    sdk::testkit::corpus_files()
}

/// Which adapter must claim a corpus file, by where it lives: the corpus
/// folder named after a first-party adapter holds that adapter's formats.
fn expected_adapter(path: &Path) -> Option<&'static str> {
    let rel = path.strip_prefix(sdk::testkit::corpus_dir()).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    if name.ends_with(".meta.json") || name.starts_with("not-a-transcript") {
        return None;
    }
    let folder = rel.components().next()?.as_os_str().to_str()?;
    chatmill_builtin::ADAPTERS
        .iter()
        .map(|(id, _)| *id)
        .find(|id| *id == folder)
}

fn ts(t: Option<sdk::Timestamp>) -> Option<chrono::DateTime<chrono::Utc>> {
    t.map(|t| chrono::DateTime::from_timestamp(t.seconds, t.nanos).unwrap())
}

fn part(p: sdk::Part) -> Part {
    match p {
        sdk::Part::Text(text) => Part::Text { text },
        sdk::Part::Code { language, code } => Part::Code { language, code },
        sdk::Part::Thinking(text) => Part::Thinking { text },
        sdk::Part::ToolCall { name, summary } => Part::ToolCall { name, summary },
        sdk::Part::ToolResult(summary) => Part::ToolResult { summary },
        sdk::Part::Attachment {
            name,
            media_type,
            uri,
        } => Part::Attachment {
            name,
            media_type,
            uri,
        },
        sdk::Part::Other { kind, text } => Part::Other { kind, text },
    }
}

/// The native parser's output in the host's model.
fn native<A: sdk::Adapter>(path: &Path) -> Vec<Conversation> {
    let items = sdk::testkit::parse_file::<A>(path, 64 * 1024, 256)
        .unwrap_or_else(|e| panic!("{}: native parse failed: {e}", path.display()));
    let mut out: Vec<Conversation> = Vec::new();
    for item in items {
        match item {
            sdk::Item::ConversationStart(s) => out.push(Conversation {
                id: s.id,
                title: s.title,
                created: ts(s.created),
                updated: ts(s.updated),
                platform: s.platform,
                model: s.model,
                metadata: s.metadata.into_iter().collect(),
                pairs: Vec::new(),
                skipped: BTreeMap::new(),
            }),
            sdk::Item::Pair(p) => out.last_mut().unwrap().pairs.push(Pair {
                index: p.index,
                timestamp: ts(p.timestamp),
                model: p.model,
                user: p.user.into_iter().map(part).collect(),
                assistant: p.assistant.into_iter().map(part).collect(),
                metadata: p.metadata.into_iter().collect(),
            }),
            sdk::Item::ConversationEnd(e) => {
                let c = out.last_mut().unwrap();
                for s in e.skipped {
                    *c.skipped.entry(s.reason).or_default() += s.count;
                }
            }
        }
    }
    out
}

fn native_by_id(id: &str, path: &Path) -> Vec<Conversation> {
    match id {
        "chatgpt" => native::<chatmill_adapter_chatgpt::ChatGpt>(path),
        "claude" => native::<chatmill_adapter_claude::Claude>(path),
        "gemini" => native::<chatmill_adapter_gemini::Gemini>(path),
        "claude-code" => native::<chatmill_adapter_claude_code::ClaudeCode>(path),
        "api-log" => native::<chatmill_adapter_api_log::ApiLog>(path),
        "markdown" => native::<chatmill_adapter_markdown::Markdown>(path),
        other => panic!(
            "no native parser for the first-party adapter {other}: add its crate to \
             host/runtime's dev-dependencies and an arm here"
        ),
    }
}

/// A runtime (compiled cache in a temp folder, kept alive by the first
/// value) and the built-in adapters.
fn builtins() -> (tempfile::TempDir, Runtime, AdapterSet) {
    let cache = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(Limits::default(), Some(cache.path())).unwrap();
    let builtins: Vec<Builtin> = chatmill_builtin::ADAPTERS
        .iter()
        .map(|(name, wasm)| Builtin { name, wasm })
        .collect();
    let set = AdapterSet::load(&runtime, &builtins, None, &[]).unwrap();
    (cache, runtime, set)
}

#[test]
fn every_corpus_file_is_recognized_and_parses_identically_in_the_sandbox() {
    let (_cache, runtime, set) = builtins();
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in corpus_files() {
        let input = Input::from_path(&path);
        let expected = expected_adapter(&path);
        let chosen = match set.select(&runtime, &input, None) {
            Ok(a) => Some(a),
            Err(SelectError::Unrecognized { .. }) => None,
            Err(e) => {
                failures.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let chosen_id = chosen.map(|a| a.info.id.as_str());
        if chosen_id != expected {
            failures.push(format!(
                "{}: chosen {chosen_id:?}, expected {expected:?} (scores {:?})",
                path.display(),
                set.scores(&runtime, &input).unwrap()
            ));
            continue;
        }
        let Some(adapter) = chosen else { continue };
        let parsed = runtime.parse(adapter, &input).and_then(|mut stream| {
            let mut all = Vec::new();
            while let Some(c) = stream.next_conversation()? {
                all.push(c);
            }
            Ok((all, stream.adjustments().lines()))
        });
        let sandboxed = match parsed {
            Ok((c, adjusted)) => {
                // First-party adapters obey every rule of the trust boundary:
                // nothing of theirs is folded, dropped or cut.
                if !adjusted.is_empty() {
                    failures.push(format!("{}: adjusted: {adjusted:?}", path.display()));
                }
                c
            }
            Err(e) => {
                failures.push(format!("{}: sandboxed parse failed: {e}", path.display()));
                continue;
            }
        };
        let pairs: usize = sandboxed.iter().map(|c| c.pairs.len()).sum();
        // Files that hold no complete exchange, established by reading them:
        // batch *output* files hold responses without their requests, and
        // the citations fixture was trimmed of its user prompt upstream.
        // Their adapters count what they skipped instead.
        let name = path.file_name().unwrap().to_string_lossy();
        let no_pairs_expected =
            name.ends_with("batch_output.jsonl") || name == "librechat-chatgpt-citations.json";
        let skipped: u32 = sandboxed.iter().flat_map(|c| c.skipped.values()).sum();
        if no_pairs_expected {
            if pairs != 0 || skipped == 0 {
                failures.push(format!(
                    "{}: expected 0 pairs with skips, got {pairs} pairs",
                    path.display()
                ));
            }
        } else if pairs == 0 {
            failures.push(format!("{}: no pairs", path.display()));
        }
        if sandboxed != native_by_id(&adapter.info.id, &path) {
            failures.push(format!(
                "{}: sandboxed output differs from native",
                path.display()
            ));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 25, "only {checked} corpus files were parsed");
}

/// The samples `adapters add` sniffs new adapters against: one for every
/// format a built-in declares, each read in the sandbox by its own adapter
/// (with at least one pair) and claimed by no other — else the lint would
/// refuse honest adapters or pass greedy ones.
#[test]
fn every_builtin_format_has_a_sample_only_its_adapter_claims() {
    let (_cache, runtime, set) = builtins();
    let declared: Vec<(&str, &str)> = set
        .adapters()
        .iter()
        .flat_map(|a| {
            a.info
                .formats
                .iter()
                .map(|f| (a.info.id.as_str(), f.id.as_str()))
        })
        .collect();
    let sampled: Vec<(&str, &str)> = chatmill_builtin::SAMPLES
        .iter()
        .map(|s| (s.adapter, s.format))
        .collect();
    let (mut declared_sorted, mut sampled_sorted) = (declared.clone(), sampled.clone());
    declared_sorted.sort();
    sampled_sorted.sort();
    assert_eq!(
        declared_sorted, sampled_sorted,
        "one sample per declared format"
    );
    for s in chatmill_builtin::SAMPLES {
        let input = Input::from_bytes(s.file_name, s.bytes.to_vec());
        let scores = set.scores(&runtime, &input).unwrap();
        let claims: Vec<_> = scores.iter().filter(|(_, n)| *n >= 50).collect();
        assert_eq!(claims.len(), 1, "{}: {scores:?}", s.format);
        assert_eq!(claims[0].0, s.adapter, "{}: {scores:?}", s.format);
        assert!(claims[0].1 >= 70, "{}: {scores:?}", s.format);
        let adapter = set.get(s.adapter).unwrap();
        let convs = runtime.parse_all(adapter, &input).unwrap();
        let pairs: usize = convs.iter().map(|c| c.pairs.len()).sum();
        assert!(pairs >= 1, "{}: no pairs", s.format);
    }
}
