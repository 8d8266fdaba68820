//! `[redact]` in the config file: whether redaction is on, what it keeps,
//! the user's own rules, and the second setting remote endpoints need.

use chatmill_redact::RuleSpec;
use serde::Deserialize;

/// `[redact]` in config.toml.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedactConfig {
    /// Replace secrets in everything written, indexed or sent (default
    /// true).
    pub enabled: bool,
    /// With redaction off (here or by `--no-redact`), unredacted text may go
    /// to a header or embedding endpoint that is not on this machine only
    /// when this is true as well.
    pub send_unredacted: bool,
    /// Regexes of secrets to keep (a test key everyone shares).
    pub allow: Vec<String>,
    /// Rules of your own: `{ id, pattern, keywords, min_entropy,
    /// description }`.
    pub extra: Vec<RuleSpec>,
}

impl Default for RedactConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            send_unredacted: false,
            allow: Vec::new(),
            extra: Vec::new(),
        }
    }
}

impl RedactConfig {
    pub fn rules(&self) -> chatmill_redact::Config {
        chatmill_redact::Config {
            allow: self.allow.clone(),
            extra: self.extra.clone(),
        }
    }
}
