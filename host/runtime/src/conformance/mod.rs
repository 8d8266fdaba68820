//! The conformance checks an adapter author runs before shipping
//! (`chatmill adapters test`), and CI runs on every first-party adapter and
//! example: `describe` is valid; `sniff` claims the author's fixtures and
//! no sample of another format; the output is the same on two runs, with
//! 1-byte reads (of the first MiB) and with 1-item batches; it keeps every trust-boundary rule
//! without a value repaired or cut; no limit is hit; a truncated and an
//! empty input give typed errors, not traps; and it equals an expected
//! output when one is given. Throughput and peak memory are measured on the
//! first run. Nothing here prints: the CLI renders the [`Report`].

mod diff;

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::AdapterError;
use crate::input::Input;
use crate::model::{Conversation, FormatInfo};
use crate::parse::Feed;
use crate::registry::{MIN_CONFIDENCE, SNIFF_BYTES, Sample};
use crate::runtime::{LoadedAdapter, Runtime};

/// How much of a fixture the `one-byte-reads` check hands over 1 byte per
/// read: enough for every boundary a fixture has, bounded so that a large
/// input does not turn into millions of calls (a JavaScript adapter makes
/// about 150,000 a second).
const TRICKLE: u64 = 1 << 20;

/// One file the author says is in the adapter's format.
pub struct Fixture {
    /// Its key in the expected output: the file name.
    pub name: String,
    pub bytes: Vec<u8>,
}

/// What one check found.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// A stable name (`sniff-own`, `boundary`, …).
    pub name: &'static str,
    /// The check in words.
    pub what: &'static str,
    pub passed: bool,
    /// Why it failed (or what it measured), one line each.
    pub details: Vec<String>,
}

/// The adapter that was checked.
#[derive(Debug, Clone, Serialize)]
pub struct Tested {
    pub id: String,
    pub name: String,
    pub version: String,
    pub api_version: String,
    pub sha256: String,
    pub formats: Vec<FormatInfo>,
}

/// Everything `adapters test` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub adapter: Tested,
    pub checks: Vec<Check>,
    /// Fixture bytes parsed in the measured run.
    pub bytes: u64,
    pub conversations: usize,
    pub pairs: usize,
    /// Fixture bytes per second of the measured run (instantiation, reads,
    /// parsing, lifting and the boundary's checks), MB/s.
    pub mb_per_s: f64,
    /// Highest total linear memory of the adapter over the fixtures, bytes.
    pub peak_memory_bytes: usize,
    /// The measured run's output, by fixture name (what `--bless` writes).
    #[serde(skip)]
    pub output: serde_json::Value,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

/// One fixture parsed to the end.
struct Run {
    result: Result<Vec<Conversation>, AdapterError>,
    adjustments: Vec<String>,
    peak_memory: usize,
    elapsed: Duration,
}

/// A whole parse of `bytes` as `name`, fed as `feed` says.
fn run(runtime: &Runtime, adapter: &LoadedAdapter, name: &str, bytes: &[u8], feed: Feed) -> Run {
    let input = Input::from_bytes(name, bytes.to_vec());
    let t = Instant::now();
    let mut peak_memory = 0;
    let mut adjustments = Vec::new();
    let result = runtime
        .parse_fed(adapter, &input, feed)
        .and_then(|mut stream| {
            let mut out = Vec::new();
            let done = loop {
                match stream.next_conversation() {
                    Ok(Some(c)) => out.push(c),
                    Ok(None) => break Ok(out),
                    Err(e) => break Err(e),
                }
            };
            peak_memory = stream.peak_memory;
            adjustments = stream.adjustments().lines();
            done
        });
    Run {
        result,
        adjustments,
        peak_memory,
        elapsed: t.elapsed(),
    }
}

fn check(name: &'static str, what: &'static str, details: Vec<String>) -> Check {
    Check {
        name,
        what,
        passed: details.is_empty(),
        details,
    }
}

/// Runs every check on `adapter` with the author's `fixtures`, against the
/// first-party `samples`, comparing with `expected` (the JSON `--bless`
/// wrote) when given.
pub fn test_adapter(
    runtime: &Runtime,
    adapter: &LoadedAdapter,
    fixtures: &[Fixture],
    samples: &[Sample],
    expected: Option<&serde_json::Value>,
) -> Report {
    let mut checks = vec![describe(adapter), sniff_own(runtime, adapter, fixtures)];
    checks.push(sniff_others(runtime, adapter, samples));

    let first: Vec<Run> = fixtures
        .iter()
        .map(|f| run(runtime, adapter, &f.name, &f.bytes, Feed::default()))
        .collect();
    checks.extend(first_run(fixtures, &first));
    checks.push(same_output(
        "deterministic",
        "a second run gives the same output",
        runtime,
        adapter,
        fixtures,
        &first,
        Feed::default(),
    ));
    checks.push(same_output(
        "one-byte-reads",
        "reading 1 byte at a time (the first MiB) gives the same output",
        runtime,
        adapter,
        fixtures,
        &first,
        Feed {
            trickle: TRICKLE,
            items_per_batch: None,
        },
    ));
    checks.push(same_output(
        "one-item-batches",
        "asking for 1 item per batch gives the same output",
        runtime,
        adapter,
        fixtures,
        &first,
        Feed {
            trickle: 0,
            items_per_batch: Some(1),
        },
    ));
    checks.push(damaged(runtime, adapter, fixtures));

    let output = output_of(fixtures, &first);
    if let Some(expected) = expected {
        let details = diff::first_difference(expected, &output)
            .map(|d| vec![format!("the output differs from the expected one: {d}")])
            .unwrap_or_default();
        checks.push(check(
            "expected",
            "the output equals the expected output (`--expect`)",
            details,
        ));
    }
    measured(adapter, fixtures, &first, checks, output)
}

fn describe(adapter: &LoadedAdapter) -> Check {
    let mut details = Vec::new();
    let formats = &adapter.info.formats;
    if formats.is_empty() {
        details.push("`describe` declares no format".to_string());
    }
    for (i, f) in formats.iter().enumerate() {
        if formats[..i].iter().any(|g| g.id == f.id) {
            details.push(format!("the format id `{}` is declared twice", f.id));
        }
    }
    check(
        "describe",
        "`describe` is valid: ids, name, semantic version, at least one format",
        details,
    )
}

fn sniff_own(runtime: &Runtime, adapter: &LoadedAdapter, fixtures: &[Fixture]) -> Check {
    let mut details = Vec::new();
    if fixtures.is_empty() {
        details.push("no fixture was given".to_string());
    }
    for f in fixtures {
        let head = &f.bytes[..f.bytes.len().min(SNIFF_BYTES)];
        match runtime.sniff(adapter, head, &f.name) {
            Ok(s) if s >= MIN_CONFIDENCE => {}
            Ok(s) => details.push(format!(
                "`{}` scores {s}, below {MIN_CONFIDENCE}: the adapter would not be chosen for it",
                f.name
            )),
            Err(e) => details.push(format!("sniffing `{}` failed: {e}", f.name)),
        }
    }
    check(
        "sniff-own",
        "`sniff` claims every fixture (score of 50 or more)",
        details,
    )
}

fn sniff_others(runtime: &Runtime, adapter: &LoadedAdapter, samples: &[Sample]) -> Check {
    let mut details = Vec::new();
    for s in samples.iter().filter(|s| s.adapter != adapter.info.id) {
        let head = &s.bytes[..s.bytes.len().min(SNIFF_BYTES)];
        match runtime.sniff(adapter, head, s.file_name) {
            Ok(score) if score < MIN_CONFIDENCE => {}
            Ok(score) => details.push(format!(
                "the `{}` sample (`{}`, read by `{}`) scores {score}",
                s.format, s.file_name, s.adapter
            )),
            Err(e) => details.push(format!("sniffing the `{}` sample failed: {e}", s.format)),
        }
    }
    check(
        "sniff-others",
        "`sniff` scores below 50 on a sample of every other built-in format",
        details,
    )
}

/// `parses`, `boundary` and `limits`, from the first run's results.
fn first_run(fixtures: &[Fixture], first: &[Run]) -> [Check; 3] {
    let (mut parses, mut boundary, mut limits) = (Vec::new(), Vec::new(), Vec::new());
    for (f, r) in fixtures.iter().zip(first) {
        match &r.result {
            Ok(convs) if convs.is_empty() => {
                parses.push(format!("`{}` gave no conversation", f.name));
            }
            Ok(_) => {}
            Err(e @ AdapterError::Protocol { .. }) => boundary.push(e.to_string()),
            Err(e @ AdapterError::Limit { .. }) => limits.push(e.to_string()),
            Err(e) => parses.push(e.to_string()),
        }
        for line in &r.adjustments {
            boundary.push(format!("`{}`: {line}", f.name));
        }
    }
    [
        check(
            "parses",
            "every fixture parses to at least one conversation",
            parses,
        ),
        check(
            "boundary",
            "the output keeps every trust-boundary rule; nothing is repaired, cut or dropped",
            boundary,
        ),
        check("limits", "no sandbox limit is hit", limits),
    ]
}

fn same_output(
    name: &'static str,
    what: &'static str,
    runtime: &Runtime,
    adapter: &LoadedAdapter,
    fixtures: &[Fixture],
    first: &[Run],
    feed: Feed,
) -> Check {
    let mut details = Vec::new();
    for (f, r) in fixtures.iter().zip(first) {
        let Ok(expected) = &r.result else { continue };
        let again = run(runtime, adapter, &f.name, &f.bytes, feed);
        match again.result {
            Ok(got) if &got == expected => {}
            Ok(got) => {
                let diff = diff::first_difference(&json(expected), &json(&got))
                    .unwrap_or_else(|| "the conversations differ".into());
                details.push(format!("`{}`: {diff}", f.name));
            }
            Err(e) => details.push(format!("`{}`: {e}", f.name)),
        }
    }
    check(name, what, details)
}

/// A truncated copy of each fixture and an empty input: an adapter may
/// read them (fewer conversations) or refuse them with a typed error, but
/// not trap, panic, hit a limit or break a rule.
fn damaged(runtime: &Runtime, adapter: &LoadedAdapter, fixtures: &[Fixture]) -> Check {
    let mut details = Vec::new();
    // (file name the adapter sees, what to call it, bytes)
    let mut inputs: Vec<(&str, String, &[u8])> = fixtures
        .iter()
        .map(|f| {
            let label = format!("`{}` cut in half", f.name);
            (f.name.as_str(), label, truncated(&f.bytes))
        })
        .collect();
    let name = fixtures.first().map_or("empty", |f| f.name.as_str());
    inputs.push((name, format!("an empty `{name}`"), &[]));
    for (name, label, bytes) in inputs {
        match run(runtime, adapter, name, bytes, Feed::default()).result {
            Ok(_) | Err(AdapterError::Parse { .. }) => {}
            Err(e) => details.push(format!("{label}: {e}")),
        }
    }
    check(
        "damaged-input",
        "a truncated and an empty input give a typed parse error or fewer conversations, not a crash",
        details,
    )
}

/// The first half of `bytes`, cut at a character boundary.
fn truncated(bytes: &[u8]) -> &[u8] {
    let mut cut = bytes.len() / 2;
    while cut > 0 && cut < bytes.len() && (bytes[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    &bytes[..cut]
}

fn json(convs: &[Conversation]) -> serde_json::Value {
    serde_json::to_value(convs).unwrap_or(serde_json::Value::Null)
}

fn output_of(fixtures: &[Fixture], first: &[Run]) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for (f, r) in fixtures.iter().zip(first) {
        let value = match &r.result {
            Ok(c) => json(c),
            Err(e) => serde_json::json!({ "error": e.to_string() }),
        };
        map.insert(f.name.clone(), value);
    }
    serde_json::Value::Object(map)
}

fn measured(
    adapter: &LoadedAdapter,
    fixtures: &[Fixture],
    first: &[Run],
    checks: Vec<Check>,
    output: serde_json::Value,
) -> Report {
    let bytes: u64 = fixtures.iter().map(|f| f.bytes.len() as u64).sum();
    let elapsed: Duration = first.iter().map(|r| r.elapsed).sum();
    let ok = first.iter().filter_map(|r| r.result.as_ref().ok());
    let (conversations, pairs) = ok.fold((0, 0), |(c, p), convs| {
        (
            c + convs.len(),
            p + convs.iter().map(|c| c.pairs.len()).sum::<usize>(),
        )
    });
    Report {
        adapter: Tested {
            id: adapter.info.id.clone(),
            name: adapter.info.name.clone(),
            version: adapter.info.version.clone(),
            api_version: adapter.api_version.clone(),
            sha256: adapter.sha256.clone(),
            formats: adapter.info.formats.clone(),
        },
        checks,
        bytes,
        conversations,
        pairs,
        mb_per_s: bytes as f64 / 1e6 / elapsed.as_secs_f64().max(1e-9),
        peak_memory_bytes: first.iter().map(|r| r.peak_memory).max().unwrap_or(0),
        output,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_utf8_whole() {
        let s = "ab€€".as_bytes(); // 2 + 3 + 3 bytes; half is 4, inside the first €
        let t = truncated(s);
        assert_eq!(t, b"ab");
        assert!(std::str::from_utf8(truncated("aé".as_bytes())).is_ok());
        assert_eq!(truncated(b""), b"");
    }

    #[test]
    fn a_check_passes_only_without_details() {
        assert!(check("x", "x", vec![]).passed);
        assert!(!check("x", "x", vec!["bad".into()]).passed);
    }
}
