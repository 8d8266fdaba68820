//! The `judge` section of a report: the model's verdict on each sampled
//! chunk and, per judged criterion, the judge's mean beside the measured
//! score.

use serde::Serialize;

/// The judged criteria: number and the answer's key.
pub const JUDGED: [(u8, &str); 3] = [(1, "self_containment"), (2, "boundaries"), (4, "header")];

/// The judged scores of one chunk (absent: the answer had none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Scores {
    pub self_containment: Option<u8>,
    pub boundaries: Option<u8>,
    pub header: Option<u8>,
}

impl Scores {
    pub(super) fn get(&self, key: &str) -> Option<u8> {
        match key {
            "self_containment" => self.self_containment,
            "boundaries" => self.boundaries,
            _ => self.header,
        }
    }
}

/// The model's verdict on one chunk.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub chunk: String,
    /// Absent when the answer held no score or there was no answer.
    pub scores: Option<Scores>,
    /// The model's reason (untrusted text).
    pub reason: Option<String>,
    /// Why there are no scores: the answer (cut short) or the failure.
    pub problem: Option<String>,
}

/// One judged criterion: the judge's mean beside the measured score.
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    pub number: u8,
    pub name: &'static str,
    pub measured: u8,
    /// Mean of the judge's scores (absent when none).
    pub judge_mean: Option<f64>,
    /// Chunks the judge scored on this criterion.
    pub n: usize,
}

/// The `judge` section of a report.
#[derive(Debug, Clone, Serialize)]
pub struct Judge {
    pub model: String,
    /// Chunk files sent.
    pub sample: usize,
    /// HTTP requests made (retries included).
    pub requests: u64,
    /// Answers without any score.
    pub unparsable: usize,
    /// Chunks without an answer (the endpoint failed).
    pub failed: usize,
    pub criteria: Vec<Judged>,
    pub verdicts: Vec<Verdict>,
}
