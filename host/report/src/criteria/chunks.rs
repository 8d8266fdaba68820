//! Criteria judged chunk by chunk: 1 self-containment, 2 semantic
//! boundaries, 4 header quality.

use rustc_hash::FxHashMap;

use super::{Criterion, Finding, measure};
use crate::bands;
use crate::facts::Facts;
use crate::text::overlap;

/// A merged chunk's exchanges sharing less than this of their content
/// words are about unrelated things.
const UNRELATED: f64 = 0.1;
/// The spec's merge limit.
const MAX_MERGED_WORDS: usize = 2000;
/// A part of a split answer shorter than this is a fragment.
const MIN_PART_WORDS: usize = 100;
/// A request this short that leans on earlier context is not
/// self-contained whatever its header says.
const SHORT_REQUEST: usize = 15;

/// What is wrong with one chunk, per criterion (`None`: nothing found).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub containment: Option<String>,
    pub boundary: Option<String>,
    pub header: Option<String>,
}

/// The flags of every chunk of `facts` (in the same order): headers are
/// compared across chunks, and a chunk with its predecessor in the
/// conversation.
pub fn flags(facts: &[Facts]) -> Vec<Flags> {
    let mut same_header: FxHashMap<&str, usize> = FxHashMap::default();
    for f in facts {
        *same_header.entry(f.header.as_str()).or_default() += 1;
    }
    let by_turn: FxHashMap<(&str, u32), &Facts> = facts
        .iter()
        .map(|f| ((f.conversation.as_str(), f.turns.1), f))
        .collect();
    facts
        .iter()
        .map(|f| {
            let previous = f
                .turns
                .0
                .checked_sub(1)
                .and_then(|t| by_turn.get(&(f.conversation.as_str(), t)).copied());
            Flags {
                containment: containment_problem(f),
                boundary: boundary_problem(f, previous),
                header: header_problem(f, same_header[f.header.as_str()]),
            }
        })
        .collect()
}

/// A request too short to carry its own subject: from a conversation's
/// middle, it means something only after what came before.
const BARE_REQUEST: usize = 3;

/// How the chunk's first request leans on what came before, if it does: a
/// phrase pointing back, or a bare request from a conversation's middle.
fn leans_back(f: &Facts) -> Option<String> {
    let words = f.exchanges.first().map_or(0, |e| e.user_words);
    match f.reference {
        Some(phrase) => Some(format!("\"{phrase}\"")),
        None if f.turns.0 > 1 && words <= BARE_REQUEST && !f.part => {
            Some(format!("a request of {words} words"))
        }
        None => None,
    }
}

fn containment_problem(f: &Facts) -> Option<String> {
    if !f.header_names_subject {
        return Some("the header does not name the conversation's subject".into());
    }
    let how = leans_back(f)?;
    let mid = f.turns.0 > 1;
    let short = f
        .exchanges
        .first()
        .is_some_and(|e| e.user_words < SHORT_REQUEST);
    (mid && (!f.header_prior || short))
        .then(|| format!("the request leans on earlier context ({how}) the chunk does not give"))
}

fn boundary_problem(f: &Facts, previous: Option<&Facts>) -> Option<String> {
    if f.exchanges.len() > 1 && f.words() > MAX_MERGED_WORDS {
        return Some(format!(
            "{} merged exchanges make {} words (the spec's limit is {MAX_MERGED_WORDS})",
            f.exchanges.len(),
            f.words()
        ));
    }
    for (i, pair) in f.exchanges.windows(2).enumerate() {
        let shared = overlap(&pair[0].terms, &pair[1].terms);
        if shared < UNRELATED {
            return Some(format!(
                "exchanges {} and {} share {:.0} % of their words: two topics in one chunk",
                i + 1,
                i + 2,
                shared * 100.0
            ));
        }
    }
    if f.part && f.words() < MIN_PART_WORDS {
        return Some(format!("a part of a split answer of {} words", f.words()));
    }
    let first = f.exchanges.first()?;
    let prev = previous?.exchanges.last()?;
    let bare = first.user_words <= BARE_REQUEST;
    let follow_up = leans_back(f).is_some() && first.user_words < SHORT_REQUEST && !f.part;
    (follow_up && (bare || overlap(&prev.terms, &first.terms) >= UNRELATED)).then(|| {
        "a short follow-up kept apart from the exchange it continues (the topic is split across neighbours)".into()
    })
}

fn header_problem(f: &Facts, same: usize) -> Option<String> {
    let h = f.header.trim();
    if h.is_empty() {
        return Some("no header".into());
    }
    if h.eq_ignore_ascii_case(f.title.trim()) || h.eq_ignore_ascii_case(f.source_file.trim()) {
        return Some("the header only echoes the title or file name".into());
    }
    if same > 1 {
        return Some(format!(
            "the same header as {} other chunks (formulaic)",
            same - 1
        ));
    }
    if !f.header_names_subject {
        return Some("the header does not name the subject".into());
    }
    if f.topic_words < 2 {
        return Some("generic: the subject it names is one word or none".into());
    }
    if !f.header_intent {
        return Some("the header does not say what the user wanted".into());
    }
    (!(2..=4).contains(&f.header_sentences))
        .then(|| format!("{} sentences (the spec asks for 2–4)", f.header_sentences))
}

/// Scores the chunks' flags picked by `pick`: the share with a problem, by
/// [`bands::SHARE`].
fn by_flags(
    facts: &[Facts],
    flags: &[Flags],
    pick: impl Fn(&Flags) -> Option<&String>,
) -> (u8, usize, Vec<Finding>) {
    let findings: Vec<Finding> = facts
        .iter()
        .zip(flags)
        .filter_map(|(f, fl)| pick(fl).map(|p| super::finding(f, p.clone())))
        .collect();
    let score = bands::by_share(findings.len(), facts.len(), &bands::SHARE);
    (score, findings.len(), findings)
}

pub fn containment(facts: &[Facts], flags: &[Flags]) -> Criterion {
    let (score, n, findings) = by_flags(facts, flags, |f| f.containment.as_ref());
    let references = facts.iter().filter(|f| f.reference.is_some()).count();
    let unnamed = facts.iter().filter(|f| !f.header_names_subject).count();
    let measures = vec![
        measure(
            "chunks that lean on missing context or whose header does not name the subject",
            n,
            facts.len(),
        ),
        measure(
            "requests with a phrase pointing back (any position)",
            references,
            facts.len(),
        ),
        measure("headers that do not name the subject", unnamed, facts.len()),
    ];
    Criterion::new(1, "Chunk Self-Containment", score, measures).finish(
        findings,
        "configure a header model (`[header]` in the config) so headers carry the context a chunk leans on, then `chatmill import --reprocess`; chunks from a conversation's middle need the previous exchange named in their header",
    )
}

pub fn boundaries(facts: &[Facts], flags: &[Flags]) -> Criterion {
    let (score, n, findings) = by_flags(facts, flags, |f| f.boundary.as_ref());
    let merged = facts.iter().filter(|f| f.exchanges.len() > 1).count();
    let parts = facts.iter().filter(|f| f.part).count();
    let measures = vec![
        measure("chunks with a boundary problem", n, facts.len()),
        measure(
            "merged chunks (follow-ups kept with what they follow)",
            merged,
            facts.len(),
        ),
        measure("parts of split long answers", parts, facts.len()),
    ];
    Criterion::new(2, "Semantic Boundary Accuracy", score, measures).finish(
        findings,
        "the chunker merges only short follow-ups (`ChunkerConfig::max_follow_up_words`, 12 words) up to 2,000 words and splits answers over 1,500 words at sections: check the chunks listed, and re-chunk with `chatmill import --reprocess` after a chunker change",
    )
}

pub fn headers(facts: &[Facts], flags: &[Flags]) -> Criterion {
    let (score, n, findings) = by_flags(facts, flags, |f| f.header.as_ref());
    let mut counts: FxHashMap<&str, usize> = FxHashMap::default();
    for f in facts {
        *counts.entry(f.header.as_str()).or_default() += 1;
    }
    let identical: usize = counts.values().filter(|&&c| c > 1).sum();
    let sentences = facts
        .iter()
        .filter(|f| !(2..=4).contains(&f.header_sentences))
        .count();
    let measures = vec![
        measure("headers with a problem", n, facts.len()),
        measure(
            "headers identical to another chunk's",
            identical,
            facts.len(),
        ),
        measure("headers outside 2–4 sentences", sentences, facts.len()),
    ];
    Criterion::new(4, "Contextual Header Quality", score, measures).finish(
        findings,
        "configure a header model (`[header]` in the config; an OpenAI-compatible endpoint) and run `chatmill import --reprocess`; headers identical across a batch of requests come from a shared instruction: the model is given each request's own words",
    )
}
