//! Roots made to score 5, 3 and 1 on each criterion: the arithmetic from
//! measures to bands. Each starts from a clean root of 100 chunks (25
//! conversations of 4 single-pair chunks) and breaks a share of it.

use std::collections::BTreeMap;

use chatmill_report::{Scope, evaluate};
use chatmill_root::chunk::{ChunkDoc, Exchange, Frontmatter, chunk_id, turn_range};
use chatmill_root::manifest::{
    ConversationRecord, Excluded, FileRecord, FileStatus, InputPairs, Manifest,
};
use chrono::{DateTime, Duration, Utc};

const CONVERSATIONS: u32 = 25;
const TURNS: u32 = 4;
const INPUT: &str = "raw/conversations.json";

fn start() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2024-05-01T10:00:00Z")
        .unwrap()
        .to_utc()
}

/// The `n`-th chunk of a clean root: conversation `n / 4`, turn `n % 4 + 1`.
fn clean(n: u32) -> ChunkDoc {
    let (conv, turn) = (n / TURNS, n % TURNS + 1);
    let time = start() + Duration::days(i64::from(conv)) + Duration::minutes(i64::from(turn));
    let conv_id = format!("conv-{conv}");
    let plant = ["tomato", "pepper", "basil", "squash"][(turn - 1) as usize];
    ChunkDoc {
        frontmatter: Frontmatter {
            source_file: "conversations.json".into(),
            source_platform: "chatgpt".into(),
            model_used: "gpt-4o".into(),
            timestamp: time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            conversation_title: Some(format!("Garden plan {conv}")),
            title_derived: false,
            turn_range: turn_range(turn, turn),
            topics: vec![format!("{plant} pruning"), "garden".into()],
            chunk_id: chunk_id("chatgpt", &conv_id, turn, turn, time),
            agent_id: "external".into(),
            conversation_id: conv_id,
            redaction: None,
            extra: BTreeMap::new(),
        },
        context: format!(
            "From a ChatGPT conversation titled \"Garden plan {conv}\" on May 1, 2024. The user asked how to prune the {plant} plants of bed {n} in the garden. The reply gives a pruning schedule."
        ),
        exchanges: vec![Exchange {
            user: format!(
                "How should I prune the {plant} plants in bed {n} of my garden this summer?"
            ),
            assistant: format!(
                "Prune {plant} bed {n} garden plants lightly every two weeks, removing suckers and yellow leaves; stop in late summer."
            ),
        }],
    }
}

/// A root to break: its chunks and manifest, written by [`Root::write`].
struct Root {
    docs: Vec<ChunkDoc>,
    manifest: Manifest,
    /// Files written as they are (not chunks of `docs`).
    raw_files: Vec<(String, String)>,
}

impl Root {
    fn clean() -> Self {
        let docs: Vec<ChunkDoc> = (0..CONVERSATIONS * TURNS).map(clean).collect();
        let mut manifest = Manifest::new();
        let mut pairs = BTreeMap::new();
        for d in &docs {
            let key = format!("chatgpt:{}", d.frontmatter.conversation_id);
            let record: &mut ConversationRecord =
                manifest.conversations.entry(key.clone()).or_default();
            record.chunk_ids.push(d.frontmatter.chunk_id.clone());
            record.last_pair = record.chunk_ids.len() as u32;
            pairs.insert(
                key,
                InputPairs {
                    parsed: TURNS,
                    excluded: Vec::new(),
                },
            );
        }
        let ids: Vec<String> = docs
            .iter()
            .map(|d| d.frontmatter.chunk_id.clone())
            .collect();
        manifest.files.insert(
            INPUT.into(),
            FileRecord {
                sha256: "00".repeat(32),
                size: 1,
                adapter: None,
                processed_at: start(),
                status: FileStatus::Processed,
                reason: None,
                run_chunks: ids.len() as u32,
                chunk_ids: ids,
                joined: None,
                pairs,
                run: Some(start()),
            },
        );
        Self {
            docs,
            manifest,
            raw_files: Vec::new(),
        }
    }

    /// The score of criterion `number` of this root.
    fn score(&self, number: u8) -> u8 {
        let dir = tempfile::tempdir().unwrap();
        for d in &self.docs {
            let name = format!("{}.md", d.frontmatter.chunk_id);
            std::fs::write(dir.path().join(name), d.to_markdown().unwrap()).unwrap();
        }
        for (name, text) in &self.raw_files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        self.manifest
            .save(&dir.path().join(".processing-manifest.json"))
            .unwrap();
        let report = evaluate(dir.path(), Scope::All).unwrap();
        let c = report.criteria.iter().find(|c| c.number == number).unwrap();
        assert_eq!(c.unresolved_deficiency, c.score < 3, "{c:?}");
        assert_eq!(c.fix.is_some(), c.score < 3, "{c:?}");
        c.score
    }

    /// Applies `f` to every `step`-th chunk from `from`.
    fn every(mut self, step: usize, from: usize, f: impl Fn(&mut ChunkDoc)) -> Self {
        for d in self.docs.iter_mut().skip(from).step_by(step) {
            f(d);
        }
        self
    }
}

#[test]
fn a_clean_root_scores_5_on_every_criterion() {
    let root = Root::clean();
    for n in 1..=7 {
        assert_eq!(root.score(n), 5, "criterion {n}");
    }
}

/// A request that leans on what came before, in a chunk from the middle.
fn leaning(d: &mut ChunkDoc) {
    d.exchanges[0].user = "Now do the second option instead".into();
}

#[test]
fn self_containment_scores_by_the_share_of_leaning_chunks() {
    // 10 of 100 (turns 2, 3 of every fifth conversation... every 10th chunk from the 2nd).
    assert_eq!(Root::clean().every(10, 1, leaning).score(1), 3);
    // 60: turns 2–4 of most conversations.
    let most = Root::clean()
        .every(4, 1, leaning)
        .every(4, 2, leaning)
        .every(4, 3, leaning);
    assert_eq!(most.score(1), 1);
}

/// An unrelated second exchange merged in.
fn merged_unrelated(d: &mut ChunkDoc) {
    d.exchanges.push(Exchange {
        user: "What is the capital of Mongolia and how old is its university?".into(),
        assistant: "Ulaanbaatar; the National University of Mongolia was founded in 1942.".into(),
    });
}

#[test]
fn boundaries_score_by_the_share_of_chunks_spanning_two_topics() {
    assert_eq!(Root::clean().every(10, 0, merged_unrelated).score(2), 3);
    assert_eq!(Root::clean().every(2, 0, merged_unrelated).score(2), 1);
}

#[test]
fn metadata_scores_wrong_timestamps_low_and_stray_topics_by_share() {
    let stray = |d: &mut ChunkDoc| d.frontmatter.topics = vec!["quantum chromodynamics".into()];
    assert_eq!(Root::clean().every(5, 0, stray).score(3), 3);
    let not_iso = |d: &mut ChunkDoc| d.frontmatter.timestamp = "May 1st, 2024".into();
    assert_eq!(Root::clean().every(10, 0, not_iso).score(3), 1);
    let nowhere = |d: &mut ChunkDoc| d.frontmatter.source_file = "gone.json".into();
    assert_eq!(Root::clean().every(50, 0, nowhere).score(3), 2);
}

#[test]
fn header_quality_scores_formulaic_and_generic_headers() {
    let formulaic = |d: &mut ChunkDoc| {
        d.context = "A conversation about plants. The user asked something.".into()
    };
    assert_eq!(Root::clean().every(10, 0, formulaic).score(4), 3);
    let echo = |d: &mut ChunkDoc| d.context = d.frontmatter.conversation_title.clone().unwrap();
    assert_eq!(Root::clean().every(2, 0, echo).score(4), 1);
}

#[test]
fn deduplication_scores_gaps_3_and_copies_1() {
    let mut gap = Root::clean();
    let ids = &mut gap
        .manifest
        .conversations
        .get_mut("chatgpt:conv-0")
        .unwrap()
        .chunk_ids;
    ids.pop();
    assert_eq!(gap.score(5), 3);
    let mut copies = Root::clean();
    for n in 0..10 {
        let mut d = copies.docs[n].clone();
        d.frontmatter.chunk_id.push_str("-copy");
        copies.docs.push(d);
    }
    assert_eq!(copies.score(5), 1);
}

#[test]
fn format_scores_by_the_files_out_of_shape() {
    let mut few = Root::clean();
    for n in 0..4 {
        let text = few.docs[n].to_markdown().unwrap();
        let swapped = text.replacen(
            "source_file: conversations.json\nsource_platform: chatgpt\n",
            "source_platform: chatgpt\nsource_file: conversations.json\n",
            1,
        );
        assert_ne!(swapped, text);
        few.raw_files
            .push((format!("{}.md", few.docs[n].frontmatter.chunk_id), swapped));
    }
    few.docs.drain(0..4);
    assert_eq!(few.score(6), 3);
    let mut broken = Root::clean();
    for n in 0..30 {
        let text = broken.docs[n].to_markdown().unwrap();
        let cut = text.split("\n## Exchange\n").next().unwrap().to_string();
        broken
            .raw_files
            .push((format!("{}.md", broken.docs[n].frontmatter.chunk_id), cut));
    }
    broken.docs.drain(0..30);
    assert_eq!(broken.score(6), 1);
}

#[test]
fn preservation_scores_pairs_lost_and_borderline_exclusions() {
    let mut one_lost = Root::clean();
    let pairs = &mut one_lost.manifest.files.get_mut(INPUT).unwrap().pairs;
    pairs.get_mut("chatgpt:conv-0").unwrap().parsed = TURNS + 1;
    assert_eq!(one_lost.score(7), 3);
    let mut borderline = Root::clean();
    let pairs = &mut borderline.manifest.files.get_mut(INPUT).unwrap().pairs;
    let conv = pairs.get_mut("chatgpt:conv-0").unwrap();
    conv.parsed = TURNS + 1;
    conv.excluded.push(Excluded {
        pair: TURNS + 1,
        reason: "mechanical".into(),
        request: "thanks, and what about the sweet peppers in the north bed?".into(),
    });
    assert_eq!(borderline.score(7), 4);
    let mut half_lost = Root::clean();
    for p in half_lost
        .manifest
        .files
        .get_mut(INPUT)
        .unwrap()
        .pairs
        .values_mut()
    {
        p.parsed = 2 * TURNS;
    }
    assert_eq!(half_lost.score(7), 1);
}
