//! Turning the rule table (and a `Config`) into what the redactor runs:
//! one compiled regex per rule, and one Aho–Corasick automaton over every
//! rule's keywords that tells, in a single pass over the text, which rules
//! can match at all.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::Regex;

use crate::Error;
use crate::config::RuleSpec;
use crate::rules::{Check, Group, RuleInfo};

/// A rule ready to run.
#[derive(Debug)]
pub struct Compiled {
    pub id: String,
    pub group: Group,
    pub regex: Regex,
    /// Capture index of `secret` (0, the whole match, for a user rule
    /// without that group).
    pub secret: usize,
    /// Capture index of `name` (the generic rule's assignment name).
    pub name: Option<usize>,
    pub min_entropy: Option<f64>,
    pub check: Check,
}

/// The keyword prefilter: pattern `i` of `automaton` is keyword `i`, which
/// gates the rules `gates[i]`.
#[derive(Debug)]
pub struct Prefilter {
    pub automaton: AhoCorasick,
    pub gates: Vec<Vec<usize>>,
    /// Rules without keywords: tried on every text.
    pub always: Vec<usize>,
    /// How many rules have keywords (so a scan can stop once all are on).
    pub gated: usize,
}

pub fn builtin_rule(info: &RuleInfo) -> Result<Compiled, Error> {
    compiled(
        info.id,
        info.group,
        info.pattern,
        info.min_entropy,
        info.check,
    )
}

pub fn extra_rule(spec: &RuleSpec, builtin: &[RuleInfo]) -> Result<Compiled, Error> {
    let fail = |message: String| Error::Rule {
        id: spec.id.clone(),
        message,
    };
    if !valid_id(&spec.id) {
        return Err(fail("an id is kebab-case: a-z, 0-9 and -".into()));
    }
    if builtin.iter().any(|r| r.id == spec.id) {
        return Err(fail("a built-in rule has this id".into()));
    }
    let mut rule = compiled(
        &spec.id,
        Group::Specific,
        &spec.pattern,
        spec.min_entropy,
        Check::None,
    );
    if let Err(Error::Rule { message, .. }) = &rule
        && message.contains("no `secret` group")
    {
        let regex = Regex::new(&spec.pattern).map_err(|e| fail(e.to_string()))?;
        rule = Ok(Compiled {
            id: spec.id.clone(),
            group: Group::Specific,
            regex,
            secret: 0,
            name: None,
            min_entropy: spec.min_entropy,
            check: Check::None,
        });
    }
    rule
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn compiled(
    id: &str,
    group: Group,
    pattern: &str,
    min_entropy: Option<f64>,
    check: Check,
) -> Result<Compiled, Error> {
    let fail = |message: String| Error::Rule {
        id: id.to_owned(),
        message,
    };
    let regex = Regex::new(pattern).map_err(|e| fail(e.to_string()))?;
    let index = |group: &str| regex.capture_names().position(|n| n == Some(group));
    let secret = index("secret").ok_or_else(|| fail("the pattern has no `secret` group".into()))?;
    let name = index("name");
    if check == Check::Assignment && name.is_none() {
        return Err(fail("an assignment rule needs a `name` group".into()));
    }
    Ok(Compiled {
        id: id.to_owned(),
        group,
        regex,
        secret,
        name,
        min_entropy,
        check,
    })
}

/// Builds the automaton over every distinct keyword (lowercased) of
/// `keywords[rule]`. A DFA: it scans ~3x faster than the default NFA for
/// this many patterns, and the keywords are short, so it stays small.
pub fn prefilter(keywords: &[Vec<String>]) -> Result<Prefilter, Error> {
    let mut words: Vec<String> = Vec::new();
    let mut gates: Vec<Vec<usize>> = Vec::new();
    let mut always = Vec::new();
    for (rule, kws) in keywords.iter().enumerate() {
        if kws.is_empty() {
            always.push(rule);
        }
        for kw in kws {
            let kw = kw.to_ascii_lowercase();
            match words.iter().position(|w| *w == kw) {
                Some(i) => gates[i].push(rule),
                None => {
                    words.push(kw);
                    gates.push(vec![rule]);
                }
            }
        }
    }
    let automaton = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(&words)
        .map_err(|e| Error::Prefilter(e.to_string()))?;
    let gated = keywords.len() - always.len();
    Ok(Prefilter {
        automaton,
        gates,
        always,
        gated,
    })
}
