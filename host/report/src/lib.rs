//! `chatmill report`: the spec's Layer 5 self-evaluation, measured. Each of
//! the seven Evaluation Criteria is scored 1–5 from counts over the chunk
//! files and the manifest (`criteria`), by thresholds written down in
//! `bands` and the README, each score with its evidence: the counts and
//! the worst chunks. It diagnoses and never rewrites: a criterion below 3
//! says which setting or fix would raise it and is flagged
//! `UNRESOLVED DEFICIENCY`. `html` draws the root's history as one
//! self-contained page. Never prints.

pub mod bands;
pub mod charts;
pub mod criteria;
pub mod facts;
pub mod html;
pub mod judge;
pub mod text;

use std::path::{Path, PathBuf};

use chatmill_root::manifest::{Manifest, ManifestError};
use chatmill_root::root::Root;
use chrono::{DateTime, Utc};
use serde::Serialize;

pub use criteria::Exclusion;
pub use criteria::{Criterion, Finding, Measure, PASS};

/// Which chunks a report reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Every chunk file of the root.
    All,
    /// The chunks the latest import added (by the manifest's `run`).
    LastRun,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("cannot list the chunk files of `{path}`: {source}")]
    List {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the page `{path}`: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

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
    /// The measures the charts of `--html` draw (not in `--json`).
    #[serde(skip)]
    pub facts: Vec<facts::Facts>,
    /// A language model's rubric scores on a sample (`--judge`), beside
    /// the measured ones; they never change `criteria` or the exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<judge::Judge>,
}

impl Report {
    /// Every criterion scores 3 or more.
    pub fn passed(&self) -> bool {
        self.criteria.iter().all(|c| c.score >= PASS)
    }
}

/// The chunk file names of `scope` in `root`, and the inputs they come
/// from.
fn select(
    root: &Root,
    manifest: &Manifest,
    scope: Scope,
) -> Result<(Vec<String>, Vec<String>), ReportError> {
    match scope {
        Scope::All => {
            let list = |source| ReportError::List {
                path: root.chunks().to_path_buf(),
                source,
            };
            let mut names: Vec<String> = fs_err::read_dir(root.chunks())
                .map_err(list)?
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with(".md") && !n.starts_with('.'))
                .collect();
            names.sort();
            Ok((names, manifest.files.keys().cloned().collect()))
        }
        Scope::LastRun => {
            let last = manifest.files.values().filter_map(|r| r.run).max();
            let inputs: Vec<(&String, _)> = manifest
                .files
                .iter()
                .filter(|(_, r)| last.is_some() && r.run == last)
                .collect();
            let names = inputs
                .iter()
                .flat_map(|(_, r)| {
                    let skip = r.chunk_ids.len().saturating_sub(r.run_chunks as usize);
                    r.chunk_ids[skip..].iter().map(|id| format!("{id}.md"))
                })
                .filter(|n| root.chunks().join(n).is_file())
                .collect();
            Ok((names, inputs.into_iter().map(|(k, _)| k.clone()).collect()))
        }
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
        facts,
        judge: None,
    })
}
