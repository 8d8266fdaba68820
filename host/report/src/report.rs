//! The report: the seven criteria of a root (or of its latest import),
//! measured from its chunk files and manifest.

use std::path::{Path, PathBuf};

use chatmill_root::manifest::Manifest;
use chatmill_root::root::Root;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::criteria::{self, Criterion, Exclusion, PASS};
use crate::error::ReportError;
use crate::facts::{self, Facts};
use crate::judge::Judge;
use crate::scope::{Scope, select};

/// The seven criteria of one root (or one import), with what they read.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub root: PathBuf,
    pub scope: Scope,
    pub generated_at: DateTime<Utc>,
    /// Chunk files read.
    pub chunks: usize,
    /// Inputs whose records were read.
    pub inputs: usize,
    pub criteria: Vec<Criterion>,
    /// Every pair left out of the chunks, so a person can check them.
    pub exclusions: Vec<Exclusion>,
    /// The secrets the chunks show as redaction placeholders.
    pub redactions: Redactions,
    /// The measures the charts of `--html` draw (not in `--json`).
    #[serde(skip)]
    pub facts: Vec<Facts>,
    /// A language model's rubric scores on a sample (`--judge`), beside
    /// the measured ones; they never change `criteria` or the exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<Judge>,
}

/// Secrets replaced in the chunks read: how many chunks hold a placeholder,
/// and the placeholders by rule id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Redactions {
    pub chunks: usize,
    pub by_rule: std::collections::BTreeMap<String, u32>,
}

impl Redactions {
    fn of(facts: &[Facts]) -> Self {
        let mut out = Self::default();
        for f in facts.iter().filter(|f| !f.redactions.is_empty()) {
            out.chunks += 1;
            for (rule, n) in &f.redactions {
                *out.by_rule.entry(rule.clone()).or_insert(0) += n;
            }
        }
        out
    }
}

impl Report {
    /// Replaces secrets in everything the report shows or draws: findings,
    /// the pairs left out, the judge's words, and the chunks' titles,
    /// topics and headers. Its chunks are redacted when written; this is for
    /// chunks written before that (or with redaction off).
    pub fn redact(&mut self, r: &chatmill_redact::Redactor) {
        let clean = |s: &mut String| {
            if let std::borrow::Cow::Owned(t) = r.redact(s).text {
                *s = t;
            }
        };
        for f in self.criteria.iter_mut().flat_map(|c| c.findings.iter_mut()) {
            clean(&mut f.subject);
            clean(&mut f.problem);
        }
        for e in &mut self.exclusions {
            clean(&mut e.request);
            clean(&mut e.conversation);
        }
        for f in &mut self.facts {
            for s in [
                &mut f.title,
                &mut f.header,
                &mut f.conversation,
                &mut f.model,
            ] {
                clean(s);
            }
            f.topics.iter_mut().for_each(clean);
        }
        if let Some(j) = &mut self.judge {
            for v in &mut j.verdicts {
                v.reason
                    .iter_mut()
                    .chain(v.problem.iter_mut())
                    .for_each(clean);
            }
        }
    }

    /// Every criterion scores 3 or more.
    pub fn passed(&self) -> bool {
        self.criteria.iter().all(|c| c.score >= PASS)
    }
}

/// Measures the root at `path` and scores the seven criteria.
pub fn evaluate(path: &Path, scope: Scope) -> Result<Report, ReportError> {
    let root = Root::new(path);
    let manifest = Manifest::load(&root.manifest())?;
    let (names, inputs) = select(&root, &manifest, scope)?;
    let (facts, unreadable) = facts::load(root.chunks(), names);
    let now = Utc::now();
    let flags = criteria::flags(&facts);
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let (preservation, exclusions) = criteria::preservation(&manifest, &inputs);
    let criteria = vec![
        criteria::containment(&facts, &flags),
        criteria::boundaries(&facts, &flags),
        criteria::metadata(&facts, &manifest, now),
        criteria::headers(&facts, &flags),
        criteria::dedup(&facts, &manifest, scope == Scope::All),
        criteria::format(&facts, &unreadable),
        preservation,
    ];
    tracing::debug!("report: {} chunks, {} inputs", facts.len(), inputs.len());
    Ok(Report {
        root: path.to_path_buf(),
        scope,
        generated_at: now,
        chunks: facts.len() + unreadable.len(),
        inputs: inputs.len(),
        criteria,
        exclusions,
        redactions: Redactions::of(&facts),
        facts,
        judge: None,
    })
}
