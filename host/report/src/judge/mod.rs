//! `report --judge`: a language model's rubric scores for criteria 1
//! (self-containment), 2 (boundaries) and 4 (header quality) on an evenly
//! spaced sample of chunk files, beside the measured scores and never
//! instead of them. The model's answers are untrusted: the first JSON
//! object in an answer is read, scores are clamped to 1–5, and an answer
//! without any score counts as unparsable; no score is ever filled in.

mod section;

use std::path::Path;

use chatmill_chunking::header::HeaderError;
use chatmill_chunking::llm::LlmWriter;
use rayon::prelude::*;
use serde_json::Value;

use crate::report::Report;

pub use section::{JUDGED, Judge, Judged, Scores, Verdict};

/// Characters of a chunk file the model is shown (small local models have
/// small context windows).
const SHOWN: usize = 3_000;

/// Characters of an answer or reason kept in the report.
const KEPT: usize = 300;

const SYSTEM: &str = "You grade one chunk file cut from a chat between a user and an AI assistant. \
The file has YAML frontmatter, a context header, and one exchange. Score 1 (bad) to 5 (good): \
self_containment: can the chunk be understood on its own, without the rest of the conversation (no references to things it does not contain)? \
boundaries: does the chunk hold one complete exchange on one topic (not cut mid-answer, not two unrelated topics)? \
header: does the context header, in 2 to 4 sentences, name the subject and what the user wanted, specifically rather than formulaically? \
Answer with JSON only: {\"self_containment\": 1-5, \"boundaries\": 1-5, \"header\": 1-5, \"reason\": \"one sentence\"}.";

/// `n` chunk files evenly spaced by chunk id (deterministic).
pub fn sample(report: &Report, n: usize) -> Vec<String> {
    let mut all: Vec<(&str, &str)> = report
        .facts
        .iter()
        .map(|f| (f.chunk_id.as_str(), f.rel.as_str()))
        .collect();
    all.sort_unstable();
    let n = n.min(all.len());
    (0..n)
        .map(|i| all[i * all.len() / n].1.to_string())
        .collect()
}

fn cut(s: &str, max: usize) -> String {
    s.char_indices()
        .nth(max)
        .map_or(s, |(i, _)| &s[..i])
        .to_string()
}

/// The JSON objects that start in `answer`, in order (models wrap JSON in
/// prose or code fences).
fn objects(answer: &str) -> impl Iterator<Item = serde_json::Map<String, Value>> + '_ {
    answer.match_indices('{').filter_map(|(i, _)| {
        let mut values = serde_json::Deserializer::from_str(&answer[i..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(Value::Object(map))) => Some(map),
            _ => None,
        }
    })
}

/// A score as a number or a string that starts with one ("4", "4/5"),
/// rounded and clamped to 1–5.
fn score(v: &Value) -> Option<u8> {
    let x = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => {
            let lead: String = s
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            lead.parse().ok()?
        }
        _ => return None,
    };
    x.is_finite().then(|| x.round().clamp(1.0, 5.0) as u8)
}

/// The scores and reason of the first JSON object in `answer` that holds
/// a score; `None` when none does.
pub fn parse(answer: &str) -> Option<(Scores, Option<String>)> {
    objects(answer).find_map(|map| {
        let get = |key: &str| map.get(key).and_then(score);
        let scores = Scores {
            self_containment: get("self_containment"),
            boundaries: get("boundaries"),
            header: get("header"),
        };
        let reason = map
            .get("reason")
            .and_then(Value::as_str)
            .map(|r| cut(r, KEPT));
        (scores != Scores::default()).then_some((scores, reason))
    })
}

fn verdict(writer: &LlmWriter, chunks: &Path, rel: &str) -> Verdict {
    let mut v = Verdict {
        chunk: rel.to_string(),
        scores: None,
        reason: None,
        problem: None,
    };
    let text = match fs_err::read_to_string(chunks.join(rel)) {
        Ok(t) => t,
        Err(e) => {
            v.problem = Some(format!("cannot read the chunk: {e}"));
            return v;
        }
    };
    let prompt = format!("Chunk file:\n\n{}", cut(&text, SHOWN));
    match writer.chat(SYSTEM, &prompt, 200) {
        Ok(answer) => match parse(&answer) {
            Some((scores, reason)) => {
                v.scores = Some(scores);
                v.reason = reason;
            }
            None => v.problem = Some(format!("unparsable answer: {}", cut(&answer, KEPT))),
        },
        Err(HeaderError::Failed(e)) => v.problem = Some(format!("no answer: {e}")),
        Err(e) => v.problem = Some(format!("no answer: {e}")),
    }
    v
}

/// Sends `n` sampled chunk files of `report` to the model behind `writer`
/// and sets the report's `judge` section; the measured scores stay as
/// they are.
pub fn judge(report: &mut Report, writer: &LlmWriter, n: usize) {
    let chunks = chatmill_root::root::Root::new(&report.root)
        .chunks()
        .to_path_buf();
    let names = sample(report, n);
    let before = writer.requests.load(std::sync::atomic::Ordering::Relaxed);
    let verdicts: Vec<Verdict> = names
        .par_iter()
        .map(|rel| verdict(writer, &chunks, rel))
        .collect();
    let requests = writer.requests.load(std::sync::atomic::Ordering::Relaxed) - before;
    let failed = verdicts
        .iter()
        .filter(|v| {
            v.problem
                .as_deref()
                .is_some_and(|p| !p.starts_with("unparsable"))
        })
        .count();
    let unparsable = verdicts.iter().filter(|v| v.scores.is_none()).count() - failed;
    let criteria = JUDGED
        .iter()
        .filter_map(|&(number, key)| {
            let c = report.criteria.iter().find(|c| c.number == number)?;
            let got: Vec<u8> = verdicts
                .iter()
                .filter_map(|v| v.scores.as_ref()?.get(key))
                .collect();
            let mean = (!got.is_empty())
                .then(|| got.iter().map(|&s| f64::from(s)).sum::<f64>() / got.len() as f64);
            Some(Judged {
                number,
                name: c.name,
                measured: c.score,
                judge_mean: mean,
                n: got.len(),
            })
        })
        .collect();
    tracing::debug!("judge: {} chunks, {requests} requests", verdicts.len());
    report.judge = Some(Judge {
        model: writer.config().model.clone(),
        sample: verdicts.len(),
        requests,
        unparsable,
        failed,
        criteria,
        verdicts,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_leniently_and_never_invented() {
        let (s, r) = parse(
            "Sure! ```json\n{\"self_containment\": 9, \"boundaries\": \"4/5\", \"header\": 2.6, \"reason\": \"ok\"}\n```",
        )
        .unwrap();
        assert_eq!(
            s,
            Scores {
                self_containment: Some(5),
                boundaries: Some(4),
                header: Some(3)
            }
        );
        assert_eq!(r.as_deref(), Some("ok"));
        let (s, _) = parse("{\"note\": {}} then {\"header\": 0}").unwrap();
        assert_eq!(
            s.header,
            Some(1),
            "clamped up, the first object with a score wins"
        );
        assert_eq!(s.boundaries, None, "a missing score stays missing");
        assert!(parse("I think it is a 4.").is_none());
        assert!(parse("{\"self_containment\": \"good\"}").is_none());
        assert!(parse("{\"reason\": \"x\"").is_none());
    }

    #[test]
    fn the_page_escapes_what_the_model_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let mut report = crate::evaluate(dir.path(), crate::Scope::All).unwrap();
        report.judge = Some(Judge {
            model: "<b>m</b>".into(),
            sample: 2,
            requests: 2,
            unparsable: 1,
            failed: 0,
            criteria: Vec::new(),
            verdicts: vec![
                Verdict {
                    chunk: "a.md".into(),
                    scores: Some(Scores::default()),
                    reason: Some("<script>alert(1)</script>".into()),
                    problem: None,
                },
                Verdict {
                    chunk: "b.md".into(),
                    scores: None,
                    reason: None,
                    problem: Some("unparsable answer: <img src=x onerror=alert(1)>".into()),
                },
            ],
        });
        let page = crate::html::page(&report);
        assert!(page.contains("<table id=\"judge\">"), "{page}");
        assert!(!page.contains("<script>") && !page.contains("<img") && !page.contains("<b>m"));
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
    }
}
