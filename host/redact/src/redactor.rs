//! The redactor: finds candidates (prefilter, then each live rule's regex
//! and checks), resolves overlaps, applies the allow-list, and either
//! reports the findings or rewrites the text with placeholders.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use regex::Regex;
use serde::Serialize;

use crate::compile::{self, Compiled, Prefilter};
use crate::config::Config;
use crate::overlap::{self, Candidate};
use crate::rules::{self, Check};
use crate::{Error, Key, entropy, generic, placeholder};

/// How adapters end a value they shortened (the SDK's `shorten`).
const ELLIPSIS: &str = "\u{2026}";
/// How far before a `…` a secret cut short may start.
const CUT_WINDOW: usize = 512;
/// The shortest head of a cut secret worth replacing.
const CUT_MIN: usize = 8;
/// What completes a cut secret for the probe: token characters (any
/// vendor format); a URL's host (a password in user info); a key block's
/// END line; a JWT's signature, or its payload and signature.
/// Random-looking, so entropy checks pass.
const FILLERS: [&str; 5] = [
    ".Qx7Kp2Vw9Rt4Zm8Ny3Lb6Hc1Gd5Fj0Se7Ua2Ti9Ow4",
    ".eyJQx7Kp2Vw9Rt4Zm8Ny3Lb6.Hc1Gd5Fj0Se7Ua2Ti9Ow4Pq8Xk3",
    "Qx7Kp2Vw9Rt4Zm8Ny3Lb6Hc1Gd5Fj0Se7Ua2Ti9Ow4Pq8Xk3Yr6Mn1Bv5Cz0Dl7Eh2Fg9Jt4As8Wq3Ko6Iu1",
    "Qx7Kp2Vw9Rt4Zm8Ny3Lb6Hc1Gd5Fj0Se7Ua2Ti9Ow4Pq8Xk3Yr6Mn1Bv5Cz0@h.example/db",
    "Qx7Kp2Vw9Rt4Zm8Ny3Lb6Hc1Gd5Fj0Se7Ua2Ti9Ow4Pq8Xk3Yr6Mn1Bv5Cz0Dl7Eh2Fg9==\n-----END PRIVATE KEY-----\n",
];

/// Finds and replaces secrets. Compiled once; `Send + Sync`, so one can
/// serve every thread.
#[derive(Debug)]
pub struct Redactor {
    key: Key,
    rules: Vec<Compiled>,
    prefilter: Prefilter,
    allow: Vec<Regex>,
}

/// The result of `Redactor::redact`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text with each secret replaced; borrowed (no copy) when nothing
    /// was found.
    pub text: Cow<'a, str>,
    /// How many secrets each rule replaced, by rule id.
    pub counts: BTreeMap<String, u32>,
}

/// One secret found by `Redactor::find`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's id.
    pub rule: String,
    /// The secret's byte range in the text.
    pub range: Range<usize>,
    /// A masked view: its first few characters, `…` and its length.
    pub preview: String,
}

impl Redactor {
    /// Compiles the built-in rules, `config`'s extra rules and its
    /// allow-list. A pattern that does not compile is an error naming its
    /// rule id (or its allow-list index).
    pub fn new(key: Key, config: &Config) -> Result<Redactor, Error> {
        let builtin = rules::builtin();
        let mut compiled = Vec::with_capacity(builtin.len() + config.extra.len());
        let mut keywords: Vec<Vec<String>> = Vec::with_capacity(compiled.capacity());
        for info in builtin {
            compiled.push(compile::builtin_rule(info)?);
            keywords.push(info.keywords.iter().map(|k| (*k).to_owned()).collect());
        }
        for spec in &config.extra {
            if compiled.iter().any(|c: &Compiled| c.id == spec.id) {
                return Err(Error::Rule {
                    id: spec.id.clone(),
                    message: "two rules have this id".into(),
                });
            }
            compiled.push(compile::extra_rule(spec, builtin)?);
            keywords.push(
                spec.keywords
                    .iter()
                    .filter(|k| !k.is_empty())
                    .cloned()
                    .collect(),
            );
        }
        let allow = allow_list(&config.allow)?;
        let prefilter = compile::prefilter(&keywords)?;
        Ok(Redactor {
            key,
            rules: compiled,
            prefilter,
            allow,
        })
    }

    /// The secrets in `text`, in order, masked.
    pub fn find(&self, text: &str) -> Vec<Finding> {
        self.secrets(text)
            .into_iter()
            .map(|c| Finding {
                rule: self.rules[c.rule].id.clone(),
                preview: placeholder::preview(&text[c.range.clone()]),
                range: c.range,
            })
            .collect()
    }

    /// `text` with every secret replaced by `[REDACTED:<rule>:<hmac>]`;
    /// everything around the secrets is kept byte for byte.
    pub fn redact<'a>(&self, text: &'a str) -> Redacted<'a> {
        let secrets = self.secrets(text);
        if secrets.is_empty() {
            return Redacted {
                text: Cow::Borrowed(text),
                counts: BTreeMap::new(),
            };
        }
        let mut out = String::with_capacity(text.len() + 32 * secrets.len());
        let mut counts = BTreeMap::new();
        let mut at = 0;
        for c in secrets {
            let id = &self.rules[c.rule].id;
            out.push_str(&text[at..c.range.start]);
            out.push_str(&placeholder::placeholder(
                &self.key,
                id,
                &text[c.range.clone()],
            ));
            *counts.entry(id.clone()).or_insert(0) += 1;
            at = c.range.end;
        }
        out.push_str(&text[at..]);
        Redacted {
            text: Cow::Owned(out),
            counts,
        }
    }

    /// The rule ids, in table order (built-in, then extra).
    pub fn rule_ids(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|r| r.id.as_str())
    }

    /// The secrets to replace: candidates outside existing placeholders,
    /// overlaps resolved, allow-listed ones dropped. Sorted by start.
    fn secrets(&self, text: &str) -> Vec<Candidate> {
        let (mut candidates, has_placeholders) = self.found(text);
        if memchr::memmem::find(text.as_bytes(), ELLIPSIS.as_bytes()).is_some() {
            self.cut_short(text, &mut candidates);
        }
        if candidates.is_empty() {
            return candidates;
        }
        if has_placeholders {
            let existing = placeholder::existing(text);
            candidates.retain(|c| !existing.iter().any(|p| overlaps(p, &c.range)));
        }
        let mut winners = overlap::resolve(candidates);
        if !self.allow.is_empty() {
            winners.retain(|c| {
                !self
                    .allow
                    .iter()
                    .any(|a| a.is_match(&text[c.range.clone()]))
            });
        }
        winners
    }

    /// Every live rule's accepted matches in `text`, and whether it holds a
    /// placeholder prefix.
    fn found(&self, text: &str) -> (Vec<Candidate>, bool) {
        let (live, has_placeholders) = self.live_rules(text);
        let mut candidates = Vec::new();
        for rule in live.iter() {
            self.candidates(rule, text, &mut candidates);
        }
        (candidates, has_placeholders)
    }

    /// Secrets an adapter cut short: a summary ends a long value with `…`,
    /// which can fall inside a secret, leaving a head no rule matches whole.
    /// Before each `…` the text is probed with fillers that complete the
    /// usual shapes (token characters; a URL's `@host`; a key block's END
    /// line); a match that runs from the real text into the filler is a
    /// secret cut short, and its real part (at least [`CUT_MIN`] bytes) is
    /// a candidate under the rule that matched.
    fn cut_short(&self, text: &str, out: &mut Vec<Candidate>) {
        for (at, _) in text.match_indices(ELLIPSIS) {
            let mut start = at.saturating_sub(CUT_WINDOW);
            while !text.is_char_boundary(start) {
                start += 1;
            }
            let before = &text[start..at];
            if let Some(c) = self.cut_token(before) {
                out.push(Candidate {
                    range: start + c.range.start..start + c.range.end,
                    ..c
                });
            }
            for filler in FILLERS {
                let probe = format!("{before}{filler}");
                for c in self.found(&probe).0 {
                    let real = c.range.start..c.range.end.min(before.len());
                    // A URL's password ends at its `@`: a head running past
                    // one is the filler's host taken for the real one's.
                    let past_at = before[real.clone()].contains('@');
                    if c.range.end > before.len() && real.len() >= CUT_MIN && !past_at {
                        out.push(Candidate {
                            range: start + real.start..start + real.end,
                            ..c
                        });
                    }
                }
            }
        }
    }

    /// The token that ends `before` (a `…` follows it) when it starts with
    /// a vendor format's prefix (`ghp_`, `AKIA`, `xoxb-`) and goes on with
    /// at least 8 token characters, letters and digits among them: a
    /// fixed-length secret cut short, which no filler completes to its
    /// exact length.
    fn cut_token(&self, before: &str) -> Option<Candidate> {
        let token_len = before
            .bytes()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
            .count();
        let from = before.len() - token_len;
        let token = &before[from..];
        let m = self.prefilter.automaton.find(token)?;
        let rest = &token[m.end()..];
        let mixed = rest.bytes().any(|b| b.is_ascii_digit())
            && rest.bytes().any(|b| b.is_ascii_alphabetic());
        if m.start() != 0 || rest.len() < 8 || !mixed {
            return None;
        }
        let rule = *self.prefilter.gates[m.pattern().as_usize()]
            .iter()
            .find(|&&r| self.rules[r].group == rules::Group::Specific)?;
        Some(Candidate {
            rule,
            group: self.rules[rule].group,
            range: from..before.len(),
        })
    }

    /// Which rules can match `text` (by their keywords), and whether it
    /// holds a placeholder prefix. The scan stops once every gated rule is
    /// on.
    fn live_rules(&self, text: &str) -> (RuleBits, bool) {
        let mut live = RuleBits::new(self.rules.len());
        for &r in &self.prefilter.always {
            live.set(r);
        }
        let mut gated_on = 0;
        for m in self.prefilter.automaton.find_overlapping_iter(text) {
            for &r in &self.prefilter.gates[m.pattern().as_usize()] {
                if !live.get(r) {
                    live.set(r);
                    gated_on += 1;
                }
            }
            if gated_on == self.prefilter.gated {
                break;
            }
        }
        let has_placeholders =
            memchr::memmem::find(text.as_bytes(), placeholder::PREFIX.as_bytes()).is_some();
        (live, has_placeholders)
    }

    /// Appends rule `r`'s accepted matches in `text` to `out`.
    fn candidates(&self, r: usize, text: &str, out: &mut Vec<Candidate>) {
        let rule = &self.rules[r];
        for caps in rule.regex.captures_iter(text) {
            let Some(m) = caps.get(rule.secret) else {
                continue;
            };
            let name = rule
                .name
                .and_then(|i| caps.get(i))
                .map(|n| whole_name(text, n.range()));
            let Some(len) = accept(rule, name, m.as_str()) else {
                continue;
            };
            out.push(Candidate {
                rule: r,
                group: rule.group,
                range: m.start()..m.start() + len,
            });
        }
    }
}

/// The length of `secret` to replace if rule passes its checks.
fn accept(rule: &Compiled, name: Option<&str>, secret: &str) -> Option<usize> {
    let len = match rule.check {
        Check::None => secret.len(),
        Check::Password => generic::password_value(secret)?,
        Check::Assignment => {
            if !name.is_some_and(generic::secret_name) {
                return None;
            }
            generic::literal_value(secret)?
        }
    };
    let kept = &secret[..len];
    if len == 0
        || rule
            .min_entropy
            .is_some_and(|min| entropy::shannon(kept) < min)
    {
        return None;
    }
    Some(len)
}

/// The name that ends at `name.end`: `name` extended back over the
/// characters of a name (`DB_` before `PASSWORD`).
fn whole_name(text: &str, name: Range<usize>) -> &str {
    let before = &text.as_bytes()[..name.start];
    let extra = before
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        .count();
    &text[name.start - extra..name.end]
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

fn allow_list(patterns: &[String]) -> Result<Vec<Regex>, Error> {
    patterns
        .iter()
        .enumerate()
        .map(|(index, pattern)| {
            Regex::new(pattern).map_err(|e| Error::Allow {
                index,
                pattern: pattern.clone(),
                message: e.to_string(),
            })
        })
        .collect()
}

/// A set of rule indices; inline (no allocation) for up to 256 rules, so
/// the common no-secret path allocates nothing.
struct RuleBits {
    inline: [u64; 4],
    heap: Vec<u64>,
}

impl RuleBits {
    fn new(rules: usize) -> RuleBits {
        let extra = rules.saturating_sub(256).div_ceil(64);
        RuleBits {
            inline: [0; 4],
            heap: if extra == 0 {
                Vec::new()
            } else {
                vec![0; extra]
            },
        }
    }

    fn word(&mut self, i: usize) -> &mut u64 {
        if i < 256 {
            &mut self.inline[i / 64]
        } else {
            &mut self.heap[(i - 256) / 64]
        }
    }

    fn set(&mut self, i: usize) {
        *self.word(i) |= 1 << (i % 64);
    }

    fn get(&self, i: usize) -> bool {
        let w = if i < 256 {
            self.inline[i / 64]
        } else {
            self.heap[(i - 256) / 64]
        };
        w & (1 << (i % 64)) != 0
    }

    /// The set indices, ascending (table order).
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        let words = self.inline.iter().chain(self.heap.iter());
        words.enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }
}
