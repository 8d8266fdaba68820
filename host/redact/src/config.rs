//! What a user can add to the built-in table: allow-list patterns (a found
//! secret that one of them matches is kept) and extra rules of their own.

use serde::{Deserialize, Serialize};

/// The redactor's settings. `Default` is the built-in table alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Regexes (unanchored: anchor with `^…$` to match whole secrets). A
    /// secret, as the winning rule captured it, that any of them matches
    /// stays in the text. The rules it beat stay beaten, so an allowed
    /// secret is kept whole.
    pub allow: Vec<String>,
    /// User rules, tried like the built-in ones and ranked with the
    /// specific formats (they win overlaps against structured and generic
    /// rules).
    pub extra: Vec<RuleSpec>,
}

/// One user rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleSpec {
    /// Kebab-case (`a-z`, `0-9`, `-`), not a built-in id.
    pub id: String,
    #[serde(default)]
    pub description: String,
    /// A regex. Its named group `secret` is what is replaced; without one,
    /// the whole match is.
    pub pattern: String,
    /// Literals (matched ASCII case-insensitively) one of which occurs in
    /// every match; empty: the rule is tried on every text.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Minimum Shannon entropy (bits per byte) of the secret.
    #[serde(default)]
    pub min_entropy: Option<f64>,
}
