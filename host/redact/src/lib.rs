//! chatmill-redact: finds secrets in text (API keys and tokens of 77
//! vendor formats, JWTs, private key blocks, passwords in URLs and
//! connection strings, authorization headers, and `NAME=value`
//! assignments whose name says secret) and replaces each with a keyed
//! placeholder, `[REDACTED:<rule-id>:<8 hex>]`.
//!
//! # Design
//!
//! Chat exports are large and almost free of secrets, so the common case
//! (nothing found) must be cheap and must not allocate. A text goes
//! through five steps:
//!
//! 1. **Prefilter.** Every rule lists lowercase keywords, one of which
//!    occurs in any match (`ghp_`, `sk-ant-`, `private key`, `password`).
//!    One Aho–Corasick automaton over all keywords (ASCII
//!    case-insensitive) scans the text once and switches on the rules
//!    whose keywords occur; a rule without keywords is always on. On most
//!    texts few rules are on, and their regexes run instead of all 86.
//! 2. **Per-rule regex.** Each live rule's regex (compiled once, in
//!    `Redactor::new`) runs over the text. A pattern's named group
//!    `secret` is what is replaced; the rest of the match is context that
//!    stays (`postgres://user:` and `@host`, `AccountKey=`). Separate
//!    regexes rather than one `RegexSet` because a set only says which
//!    patterns match, not where, so each would run again anyway.
//! 3. **Checks.** A secret below the rule's minimum Shannon entropy is
//!    dropped (`sk-xxxxxxxx…`); the generic rule also checks the name (a
//!    whole word part that means secret: `db_password`, not
//!    `token_count`) and the value (a literal, not a number, boolean,
//!    placeholder, variable or expression); URL and connection-string
//!    passwords drop placeholders (`${PASS}`, `<password>`).
//! 4. **Overlap resolution.** Candidates that overlap an existing
//!    placeholder are dropped (so redacting twice changes nothing); among
//!    overlapping candidates the more specific group wins (vendor format,
//!    then structured, then generic), then the longer range. Then the
//!    allow-list drops winners it matches.
//! 5. **Placeholders.** Each winner is replaced by its rule id and the
//!    first 4 bytes of HMAC-SHA256(key, secret): equal secrets read
//!    equal, different ones differ, and without the key (kept in a 0600
//!    file, see [`Key`]) a placeholder cannot be checked against a guess.
//!    The placeholder has no quotes, backticks, backslashes or newlines,
//!    so JSON strings and Markdown fences around it stay valid.
//!
//! The rule table is data ([`rules()`], [`RULESET_VERSION`]); the library
//! never prints.

mod compile;
pub mod config;
pub mod entropy;
mod error;
pub mod generic;
pub mod key;
pub mod overlap;
pub mod placeholder;
mod redactor;
pub mod rules;

pub use config::{Config, RuleSpec};
pub use error::Error;
pub use key::Key;
pub use redactor::{Finding, Redacted, Redactor};
pub use rules::{Check, Group, RULESET_VERSION, RuleInfo};

/// The built-in rules, in table order, for docs (`id`, `description`,
/// `example` shape).
pub fn rules() -> impl Iterator<Item = &'static RuleInfo> {
    rules::builtin().iter()
}
