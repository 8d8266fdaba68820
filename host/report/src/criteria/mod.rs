//! The seven criteria, each measured and scored with its evidence. The
//! chunk-by-chunk judgements of criteria 1, 2 and 4 are [`Flags`], so the
//! labelled sample is compared with exactly what the scores count.

mod chunks;
mod records;

pub use chunks::{Flags, boundaries, containment, flags, headers};
pub use records::{Exclusion, dedup, format, metadata, preservation};

use serde::Serialize;

use crate::facts::Facts;

/// One criterion, scored.
#[derive(Debug, Clone, Serialize)]
pub struct Criterion {
    pub number: u8,
    pub name: &'static str,
    /// 1–5; 3 is the minimum that passes.
    pub score: u8,
    /// The counts the score comes from.
    pub measures: Vec<Measure>,
    /// The worst examples, worst first (at most [`WORST`]).
    pub findings: Vec<Finding>,
    /// Below 3: which setting or fix would raise it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// Below 3 after the one modification the spec allows. The report
    /// diagnoses and never rewrites, so every criterion below 3 stays so.
    pub unresolved_deficiency: bool,
}

/// A count, out of how many.
#[derive(Debug, Clone, Serialize)]
pub struct Measure {
    pub what: &'static str,
    pub count: usize,
    pub of: usize,
}

/// A chunk (or input) with a problem.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The chunk's id, or the input's key.
    pub subject: String,
    /// The chunk file's name in the root, for a chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub problem: String,
}

/// Worst examples kept per criterion.
pub const WORST: usize = 8;

/// The passing score.
pub const PASS: u8 = 3;

impl Criterion {
    fn new(number: u8, name: &'static str, score: u8, measures: Vec<Measure>) -> Self {
        Self {
            number,
            name,
            score,
            measures,
            findings: Vec::new(),
            fix: None,
            unresolved_deficiency: false,
        }
    }

    /// Adds the worst findings and, below 3, the fix and the flag.
    fn finish(mut self, mut findings: Vec<Finding>, fix: &str) -> Self {
        findings.truncate(WORST);
        self.findings = findings;
        if self.score < PASS {
            self.fix = Some(fix.to_string());
            self.unresolved_deficiency = true;
        }
        self
    }
}

fn measure(what: &'static str, count: usize, of: usize) -> Measure {
    Measure { what, count, of }
}

fn finding(f: &Facts, problem: impl Into<String>) -> Finding {
    Finding {
        subject: f.chunk_id.clone(),
        file: Some(f.rel.clone()),
        problem: problem.into(),
    }
}
