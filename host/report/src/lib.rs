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
mod error;
pub mod facts;
pub mod html;
pub mod judge;
mod report;
mod scope;
pub mod text;

pub use criteria::Exclusion;
pub use criteria::{Criterion, Finding, Measure, PASS};
pub use error::ReportError;
pub use report::{Redactions, Report, evaluate};
pub use scope::Scope;
