//! Criteria checked against records and structure: 3 metadata, 5
//! deduplication, 6 format, 7 information preservation.

use std::collections::BTreeSet;

use chatmill_root::manifest::{FileRecord, FileStatus, InputPairs, Manifest};
use chrono::{DateTime, Utc};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::{Criterion, Finding, measure};
use crate::bands;
use crate::facts::{Facts, PER_CHUNK_EXTRAS, Unreadable};

/// A chunk's timestamp this much before its predecessor's in the
/// conversation is outside the conversation's order.
const SPAN_SLACK_SECONDS: i64 = 60;

/// The file name an input key ends in (`a/b.json`, `x.zip!c/d.json`).
fn base(key: &str) -> &str {
    key.rsplit(['/', '!']).next().unwrap_or(key)
}

/// The hard metadata error of `f`, if any.
fn metadata_error(
    f: &Facts,
    before: Option<&Facts>,
    sources: &FxHashSet<&str>,
    now: DateTime<Utc>,
) -> Option<String> {
    let Some(time) = f.time else {
        return Some(format!("timestamp `{}` is not ISO 8601", f.timestamp));
    };
    if time > now + chrono::Duration::days(1) {
        return Some(format!("timestamp {} is in the future", f.timestamp));
    }
    if let Some(prev_time) = before.filter(|b| !b.independent).and_then(|b| b.time)
        && (prev_time - time).num_seconds() > SPAN_SLACK_SECONDS
    {
        return Some(format!(
            "timestamp {} is before the conversation's earlier chunk ({})",
            f.timestamp,
            before.map_or("", |b| b.timestamp.as_str())
        ));
    }
    (!sources.contains(base(&f.source_file))).then(|| {
        format!(
            "source_file `{}` is no input in the manifest",
            f.source_file
        )
    })
}

pub fn metadata(facts: &[Facts], manifest: &Manifest, now: DateTime<Utc>) -> Criterion {
    let sources: FxHashSet<&str> = manifest.files.keys().map(|k| base(k)).collect();
    let mut order: Vec<&Facts> = facts.iter().collect();
    order.sort_by(|a, b| (&a.conversation, a.turns).cmp(&(&b.conversation, b.turns)));
    let mut hard = Vec::new();
    for (i, f) in order.iter().enumerate() {
        let before = i
            .checked_sub(1)
            .map(|j| order[j])
            .filter(|b| b.conversation == f.conversation);
        if let Some(p) = metadata_error(f, before, &sources, now) {
            hard.push(super::finding(f, p));
        }
    }
    let topics: Vec<Finding> = facts
        .iter()
        .filter(|f| !f.topics.is_empty() && f.topics_absent.len() * 2 > f.topics.len())
        .map(|f| {
            super::finding(
                f,
                format!("topics not in the chunk: {}", f.topics_absent.join(", ")),
            )
        })
        .collect();
    let untagged = facts.iter().filter(|f| f.topics.is_empty()).count();
    let soft = topics.len() + untagged;
    let hard_share = bands::share(hard.len(), facts.len());
    let score = if hard.is_empty() {
        let t = bands::METADATA_TOPICS;
        let s = bands::share(soft, facts.len());
        if s <= t[0] {
            5
        } else if s <= t[1] {
            4
        } else if s <= t[2] {
            3
        } else {
            2
        }
    } else if hard_share <= bands::METADATA_HARD {
        2
    } else {
        1
    };
    let measures = vec![
        measure(
            "chunks with a wrong timestamp or provenance",
            hard.len(),
            facts.len(),
        ),
        measure(
            "chunks whose topics mostly do not occur in them",
            topics.len(),
            facts.len(),
        ),
        measure("chunks without topics", untagged, facts.len()),
    ];
    hard.extend(topics);
    Criterion::new(3, "Metadata Accuracy", score, measures).finish(
        hard,
        "timestamps and source files come from the adapter: check the inputs of the chunks listed (`chatmill parse FILE`), fix or update the adapter, then `chatmill import --reprocess`",
    )
}

/// Criterion 5: no chunk id twice, no exchanges imported twice, and the
/// manifest and the chunk files agreeing on which chunks there are.
pub fn dedup(facts: &[Facts], manifest: &Manifest, whole_root: bool) -> Criterion {
    let mut by_id: FxHashMap<&str, Vec<&Facts>> = FxHashMap::default();
    let mut by_text: FxHashMap<u64, Vec<&Facts>> = FxHashMap::default();
    for f in facts {
        by_id.entry(&f.chunk_id).or_default().push(f);
        by_text.entry(f.text_hash).or_default().push(f);
    }
    let mut findings = Vec::new();
    let dup_ids = duplicate_ids(&by_id, &mut findings);
    let (dup_text, repeated) = duplicate_texts(&by_text, &mut findings);
    let on_disk: FxHashSet<&str> = by_id.keys().copied().collect();
    let gaps = manifest_gaps(facts, manifest, &on_disk, whole_root, &mut findings);
    let n = facts.len();
    let score = dedup_score(dup_ids, dup_text, gaps, n);
    let measures = vec![
        measure("duplicate chunk ids", dup_ids, n),
        measure(
            "chunks repeating another's exchanges and time under another id",
            dup_text,
            n,
        ),
        measure(
            "exchanges asked again in another conversation (not scored)",
            repeated,
            n,
        ),
        measure(
            "manifest gaps (chunks unrecorded, or recorded without a file)",
            gaps,
            n,
        ),
    ];
    Criterion::new(5, "Deduplication", score, measures).finish(
        findings,
        "`chatmill verify --repair` re-derives the manifest from the chunk files; duplicates under other ids come from one conversation imported under two ids (two exports of one chat): remove the older input and run `chatmill import --reprocess`",
    )
}

/// Chunks whose id another chunk file already has, each a finding; their
/// count.
fn duplicate_ids(by_id: &FxHashMap<&str, Vec<&Facts>>, findings: &mut Vec<Finding>) -> usize {
    let mut dup_ids = 0;
    for group in by_id.values().filter(|g| g.len() > 1) {
        dup_ids += group.len() - 1;
        for f in &group[1..] {
            findings.push(super::finding(
                f,
                format!("chunk id also in `{}`", group[0].rel),
            ));
        }
    }
    dup_ids
}

/// Chunks with the same exchanges as another: at the same time under
/// another id they were imported twice (each a finding); at another time,
/// they were asked again (counted, not scored). Returns both counts.
fn duplicate_texts(
    by_text: &FxHashMap<u64, Vec<&Facts>>,
    findings: &mut Vec<Finding>,
) -> (usize, usize) {
    let (mut dup_text, mut repeated) = (0, 0);
    for group in by_text.values().filter(|g| g.len() > 1) {
        let mut seen: FxHashMap<&str, &Facts> = FxHashMap::default();
        for f in group {
            match seen.get(f.timestamp.as_str()) {
                Some(first) if first.chunk_id != f.chunk_id => {
                    dup_text += 1;
                    findings.push(super::finding(
                        f,
                        format!(
                            "the same exchanges at the same time as `{}`",
                            first.chunk_id
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    repeated += usize::from(!seen.is_empty());
                    seen.insert(&f.timestamp, f);
                }
            }
        }
    }
    (dup_text, repeated)
}

/// Chunks no conversation of the manifest claims and, over the whole root,
/// chunk ids the manifest lists without a file (`on_disk`), each a
/// finding; their count.
fn manifest_gaps(
    facts: &[Facts],
    manifest: &Manifest,
    on_disk: &FxHashSet<&str>,
    whole_root: bool,
    findings: &mut Vec<Finding>,
) -> usize {
    let known: FxHashSet<&str> = manifest.each_chunk_id().collect();
    let unrecorded = facts
        .iter()
        .filter(|f| !known.contains(f.chunk_id.as_str()));
    let mut gaps = 0;
    for f in unrecorded {
        gaps += 1;
        findings.push(super::finding(
            f,
            "no conversation in the manifest claims it",
        ));
    }
    if whole_root {
        for id in known.iter().filter(|id| !on_disk.contains(*id)) {
            gaps += 1;
            findings.push(Finding {
                subject: (*id).to_string(),
                file: None,
                problem: "in the manifest, but no chunk file has it".into(),
            });
        }
    }
    gaps
}

/// The deduplication score of `n` chunks: duplicate ids and manifest gaps
/// weigh most, then exchanges imported twice.
fn dedup_score(dup_ids: usize, dup_text: usize, gaps: usize, n: usize) -> u8 {
    let text_share = bands::share(dup_text, n);
    match (dup_ids, gaps) {
        (0, 0) if dup_text == 0 => 5,
        (0, 0) if text_share <= bands::DEDUP_TEXT_OK => 4,
        (0, _) if text_share <= bands::DEDUP_TEXT_OK => 3,
        _ if bands::share(dup_ids + dup_text, n) <= bands::DEDUP_SHARE => 2,
        _ => 1,
    }
}

pub fn format(facts: &[Facts], unreadable: &[Unreadable]) -> Criterion {
    let mut findings: Vec<Finding> = unreadable
        .iter()
        .map(|u| Finding {
            subject: u.rel.clone(),
            file: Some(u.rel.clone()),
            problem: format!("a strict parser cannot read it: {}", u.message),
        })
        .collect();
    // A conversation's chunks carry the same per-format extras.
    let mut extras: FxHashMap<&str, &BTreeSet<String>> = FxHashMap::default();
    let mut inconsistent = 0;
    for f in facts {
        let shared = |e: &&String| !PER_CHUNK_EXTRAS.contains(&e.as_str());
        let first = *extras.entry(&f.conversation).or_insert(&f.extras);
        let a: BTreeSet<&String> = first.iter().filter(shared).collect();
        let b: BTreeSet<&String> = f.extras.iter().filter(shared).collect();
        let problem = f
            .key_problem
            .clone()
            .or(f.body_problem.clone())
            .or_else(|| {
                (a != b).then(|| {
                    "its extra keys differ from its conversation's other chunks'".to_string()
                })
            });
        if let Some(p) = problem {
            inconsistent += 1;
            findings.push(super::finding(f, p));
        }
    }
    let total = facts.len() + unreadable.len();
    let bad = inconsistent + unreadable.len();
    let share = bands::share(bad, total);
    let score = if bad == 0 {
        5
    } else if bad <= bands::FORMAT_FEW {
        4
    } else if share <= bands::FORMAT_SHARE[0] {
        3
    } else if share <= bands::FORMAT_SHARE[1] {
        2
    } else {
        1
    };
    let measures = vec![
        measure("files a strict parser cannot read", unreadable.len(), total),
        measure(
            "chunks with keys, body or extras out of shape",
            inconsistent,
            total,
        ),
    ];
    Criterion::new(6, "Format Consistency", score, measures).finish(
        findings,
        "chunk files edited by hand or by another tool: fix or delete the files listed, then `chatmill verify --repair`; chunks of an older chatmill are rewritten by `chatmill import --reprocess`",
    )
}

/// A pair left out of the chunks, with where it came from.
#[derive(Debug, Clone, Serialize)]
pub struct Exclusion {
    pub input: String,
    pub conversation: String,
    pub pair: u32,
    pub reason: String,
    pub request: String,
}

/// The pairs of each conversation its chunks cover, by the chunk ids the
/// manifest lists (`<platform>-<12 hex>-003-2024-05-01`, or `…-003-005-…`
/// for a merged chunk, maybe with `-part-N`).
fn covered(manifest: &Manifest) -> FxHashMap<&str, BTreeSet<u32>> {
    let range = |id: &str| -> Option<(u32, u32)> {
        let id = id.split("-part-").next()?;
        let stem = id.get(..id.len().checked_sub(11)?)?;
        let tokens: Vec<&str> = stem.split('-').collect();
        let last: u32 = tokens.last()?.parse().ok()?;
        let before = tokens.get(tokens.len().checked_sub(2)?)?;
        match before.parse::<u32>() {
            Ok(first) if before.len() != 12 && first <= last => Some((first, last)),
            _ => Some((last, last)),
        }
    };
    manifest
        .conversations
        .iter()
        .map(|(key, record)| {
            let pairs = record
                .chunk_ids
                .iter()
                .filter_map(|id| range(id))
                .flat_map(|(a, b)| a..=b)
                .collect();
            (key.as_str(), pairs)
        })
        .collect()
}

/// What the inputs in `inputs` hold against what their conversations'
/// chunks and exclusions cover.
pub fn preservation(manifest: &Manifest, inputs: &[&str]) -> (Criterion, Vec<Exclusion>) {
    let mut tally = Tally {
        covered: covered(manifest),
        left_out: left_out(manifest),
        ..Tally::default()
    };
    for key in inputs {
        if let Some(record) = manifest.files.get(*key) {
            tally.input(key, record);
        }
    }
    let Tally {
        parsed,
        lost,
        uncounted,
        failed,
        findings,
        exclusions,
        ..
    } = tally;
    let borderline = exclusions
        .iter()
        .filter(|e| e.request.split_whitespace().count() > bands::BORDERLINE_WORDS)
        .count();
    let score = preservation_score(lost, parsed, borderline);
    let measures = vec![
        measure(
            "pairs in the inputs (per input, per conversation)",
            parsed,
            parsed,
        ),
        measure("pairs in no chunk and not excluded", lost, parsed),
        measure("pairs left out as mechanical", exclusions.len(), parsed),
        measure(
            "left out though the request has more than 8 words (borderline)",
            borderline,
            exclusions.len(),
        ),
        measure(
            "inputs recorded without pair counts (an older chatmill)",
            uncounted,
            inputs.len(),
        ),
        measure("inputs that failed", failed, inputs.len()),
    ];
    let criterion = Criterion::new(7, "Information Preservation", score, measures).finish(
        findings,
        "inputs recorded without pair counts are counted by `chatmill import --reprocess`; pairs lost point at a chunking bug: run `chatmill verify`, and report the input listed",
    );
    (criterion, exclusions)
}

/// The pairs of each conversation its inputs' records exclude.
fn left_out(manifest: &Manifest) -> FxHashMap<&str, BTreeSet<u32>> {
    let mut left_out: FxHashMap<&str, BTreeSet<u32>> = FxHashMap::default();
    for record in manifest.files.values() {
        for (conv, p) in &record.pairs {
            left_out
                .entry(conv)
                .or_default()
                .extend(p.excluded.iter().map(|e| e.pair));
        }
    }
    left_out
}

/// The pairs of the inputs counted so far against what their
/// conversations' chunks (`covered`) and exclusions (`left_out`) hold.
#[derive(Default)]
struct Tally<'m> {
    covered: FxHashMap<&'m str, BTreeSet<u32>>,
    left_out: FxHashMap<&'m str, BTreeSet<u32>>,
    /// Pairs the adapters parsed.
    parsed: usize,
    /// Pairs in no chunk and not excluded.
    lost: usize,
    /// Inputs recorded without pair counts.
    uncounted: usize,
    failed: usize,
    findings: Vec<Finding>,
    exclusions: Vec<Exclusion>,
}

impl Tally<'_> {
    /// Counts the input `key`, recorded as `record`.
    fn input(&mut self, key: &str, record: &FileRecord) {
        match record.status {
            FileStatus::Failed => {
                self.failed += 1;
                let why = record.reason.clone().unwrap_or_default();
                self.findings.push(Finding {
                    subject: key.to_string(),
                    file: None,
                    problem: format!("the input failed: {why}"),
                });
                return;
            }
            FileStatus::Skipped => return,
            FileStatus::Processed if record.pairs.is_empty() && record.joined.is_none() => {
                self.uncounted += 1;
                return;
            }
            FileStatus::Processed => {}
        }
        let mut input_lost = 0usize;
        for (conv, p) in &record.pairs {
            input_lost += self.conversation(key, conv, p);
        }
        if input_lost > 0 {
            self.findings.push(Finding {
                subject: key.to_string(),
                file: None,
                problem: format!("{input_lost} pairs in no chunk and not excluded"),
            });
        }
        self.lost += input_lost;
    }

    /// Counts the pairs `p` of conversation `conv` in input `key`, keeps
    /// its exclusions, and returns the pairs lost.
    fn conversation(&mut self, key: &str, conv: &str, p: &InputPairs) -> usize {
        let none = BTreeSet::new();
        let chunked = self.covered.get(conv).unwrap_or(&none);
        let excluded = self.left_out.get(conv).unwrap_or(&none);
        let kept = chunked.union(excluded).count();
        self.parsed += p.parsed as usize;
        self.exclusions.extend(p.excluded.iter().map(|e| Exclusion {
            input: key.to_string(),
            conversation: conv.to_string(),
            pair: e.pair,
            reason: e.reason.clone(),
            request: e.request.clone(),
        }));
        (p.parsed as usize).saturating_sub(kept)
    }
}

/// The preservation score: no pair lost, then how few borderline requests
/// were left out; else how small a share was lost.
fn preservation_score(lost: usize, parsed: usize, borderline: usize) -> u8 {
    let share = bands::share(lost, parsed);
    match lost {
        _ if parsed == 0 => 3,
        0 if borderline == 0 => 5,
        0 if borderline <= 2 => 4,
        0 => 3,
        _ if share <= bands::LOST_SHARE[0] => 3,
        _ if share <= bands::LOST_SHARE[1] => 2,
        _ => 1,
    }
}
