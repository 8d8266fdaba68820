//! Term keys and scores: which words and two-word phrases an exchange is
//! about (its topics), what its reply brings in, the words a batch's
//! requests share, and how topics are joined in a sentence.

use std::borrow::Cow;

use rustc_hash::{FxHashMap, FxHashSet};

use super::text::{
    REPLY_CHARS, is_identifier, is_stopword, lowercase, prefix_chars, term_text, tokens,
    upper_after_first,
};

/// A token as it counts for topics: identifiers as written (and flagged),
/// other words lowercased; `None` for a stopword, which also ends a phrase.
pub(super) type Key<'a> = Option<(Cow<'a, str>, bool)>;

pub(super) fn keys(text: &str) -> Vec<Key<'_>> {
    tokens(text)
        .map(|t| {
            if t.is_ascii() {
                // One pass over the bytes for what `lowercase` and
                // `is_identifier` would each scan for.
                let b = t.as_bytes();
                let upper_after_first = b[1..].iter().any(u8::is_ascii_uppercase);
                let lower = if upper_after_first || b[0].is_ascii_uppercase() {
                    Cow::Owned(t.to_ascii_lowercase())
                } else {
                    Cow::Borrowed(t)
                };
                return if is_stopword(&lower, upper_after_first) {
                    None
                } else if upper_after_first || b.iter().any(|b| matches!(b, b'_' | b'/' | b'.')) {
                    Some((Cow::Borrowed(t), true))
                } else {
                    Some((lower, false))
                };
            }
            let lower = lowercase(t);
            if is_stopword(&lower, upper_after_first(t)) {
                None
            } else if is_identifier(t) {
                Some((Cow::Borrowed(t), true))
            } else {
                Some((lower, false))
            }
        })
        .collect()
}

/// The words (lowercase, stopwords left out) that more than half of
/// `prompts` contain, sorted; nothing for fewer than three prompts.
pub fn common_terms(prompts: &[&str]) -> Vec<String> {
    if prompts.len() < 3 {
        return Vec::new();
    }
    let mut counts: FxHashMap<String, usize> = FxHashMap::default();
    for p in prompts {
        let words: FxHashSet<String> = keys(p)
            .into_iter()
            .flatten()
            .map(|(k, _)| k.to_lowercase())
            .collect();
        for w in words {
            *counts.entry(w).or_default() += 1;
        }
    }
    let mut common: Vec<String> = counts
        .into_iter()
        .filter(|(_, n)| 2 * n > prompts.len())
        .map(|(w, _)| w)
        .collect();
    common.sort_unstable();
    common
}

/// 1–3 topics: the most salient terms and two-word phrases of the request,
/// weighted by the title and the answer.
pub fn topics(title: Option<&str>, user: &str, assistant: &str) -> Vec<String> {
    let assistant = term_text(assistant);
    let reply = keys(prefix_chars(&assistant, REPLY_CHARS));
    Terms::of(title, user, &reply).subject(&[], None)
}

/// Term scores of one exchange, in one pass over its words: each word
/// counts its source's weight (identifiers 1.5×), each two-word phrase
/// 1.6×. Two scores per term: as a topic of the exchange (title 2, request
/// 3, reply 0.5) and as something the reply brings (reply 3).
///
/// Words are numbered as first met and phrases kept as pairs of numbers: a
/// phrase's text is made only for the few that score enough to rank.
pub(super) struct Terms<'a> {
    // Short keys, hashed a lot: FxHash (no DoS concern in local text).
    ids: FxHashMap<Cow<'a, str>, u32>,
    words: Vec<[f64; 2]>,
    pairs: FxHashMap<(u32, u32), [f64; 2]>,
}

impl<'a> Terms<'a> {
    pub(super) fn of(title: Option<&'a str>, user: &'a str, reply: &[Key<'a>]) -> Self {
        let title = keys(title.unwrap_or(""));
        let user = keys(user);
        let n = title.len() + user.len() + reply.len();
        let mut terms = Self {
            ids: FxHashMap::with_capacity_and_hasher(n, Default::default()),
            words: Vec::with_capacity(n),
            pairs: FxHashMap::with_capacity_and_hasher(n, Default::default()),
        };
        terms.add(&title, [2.0, 0.0]);
        terms.add(&user, [3.0, 0.0]);
        terms.add(reply, [0.5, 3.0]);
        terms
    }

    #[allow(
        clippy::ptr_arg,
        reason = "a borrowed word is kept borrowed: the `Cow` is what is cloned"
    )]
    fn id(&mut self, k: &Cow<'a, str>) -> u32 {
        if let Some(&id) = self.ids.get(k.as_ref()) {
            return id;
        }
        let id = self.words.len() as u32;
        self.ids.insert(k.clone(), id);
        self.words.push([0.0; 2]);
        id
    }

    fn add(&mut self, keys: &[Key<'a>], weight: [f64; 2]) {
        let mut before: Option<u32> = None;
        for k in keys {
            let Some((k, ident)) = k else {
                before = None;
                continue;
            };
            let id = self.id(k);
            let by = if *ident { 1.5 } else { 1.0 };
            let v = &mut self.words[id as usize];
            v[0] += weight[0] * by;
            v[1] += weight[1] * by;
            if let Some(first) = before {
                let v = self.pairs.entry((first, id)).or_insert([0.0; 2]);
                v[0] += weight[0] * 1.6;
                v[1] += weight[1] * 1.6;
            }
            before = Some(id);
        }
    }

    /// The exchange's 1–3 topics, none with a word of `common`.
    fn topics(&self, common: &[String]) -> Vec<String> {
        self.best(0, common)
    }

    /// The reply's own 1–3 terms.
    pub(super) fn brought(&self, common: &[String]) -> Vec<String> {
        self.best(1, common)
    }

    /// The exchange's topics, else those of the exchange it continues
    /// (`previous`): a reply to something said before ("not true", "do
    /// it") names no subject of its own. Else, a request that names nothing
    /// ("hi") continuing nothing: what the reply takes up.
    pub(super) fn subject(&self, common: &[String], previous: Option<&[String]>) -> Vec<String> {
        let topics = self.topics(common);
        if !topics.is_empty() {
            return topics;
        }
        match previous {
            Some(p) if !p.is_empty() => p.to_vec(),
            _ => self.brought(common),
        }
    }

    /// The best 1–3 terms by score `slot`, none under 1.5, none with a word
    /// of `common`, no two sharing a word ("polish remover" after "nail
    /// polish": three distinct terms say more).
    fn best(&self, slot: usize, common: &[String]) -> Vec<String> {
        let mut names = vec![""; self.words.len()];
        for (name, &id) in &self.ids {
            names[id as usize] = name.as_ref();
        }
        // Words of `common` by number (empty when there are none).
        let shared: Vec<bool> = if common.is_empty() {
            Vec::new()
        } else {
            names
                .iter()
                .map(|w| common.iter().any(|c| c.eq_ignore_ascii_case(w)))
                .collect()
        };
        let is_shared = |id: u32| shared.get(id as usize).copied().unwrap_or(false);
        // A term as its words' numbers: a phrase is two, a word one and
        // `ONE` ("bye bye" is a phrase of one word twice).
        const ONE: u32 = u32::MAX;
        let mut ranked: Vec<([u32; 2], f64)> = self
            .words
            .iter()
            .enumerate()
            .map(|(id, s)| ([id as u32, ONE], s[slot]))
            .chain(self.pairs.iter().map(|(&(a, b), s)| ([a, b], s[slot])))
            .filter(|&([a, b], s)| s >= 1.5 && !is_shared(a) && !is_shared(b))
            .collect();
        // By score, then as the terms' texts sort (compared without making
        // them: a phrase is its words with a space between).
        let text = |[a, b]: [u32; 2]| {
            let (space, second): (&[u8], &[u8]) = match b {
                ONE => (b"", b""),
                b => (b" ", names[b as usize].as_bytes()),
            };
            names[a as usize]
                .as_bytes()
                .iter()
                .chain(space)
                .chain(second)
        };
        let order = |x: &([u32; 2], f64), y: &([u32; 2], f64)| {
            y.1.total_cmp(&x.1).then_with(|| text(x.0).cmp(text(y.0)))
        };
        // Three are picked, rarely from past the first few: those are
        // sorted first, the rest only if they are needed (a long reply's
        // every word and phrase ranks here).
        const FIRST: usize = 16;
        let sorted = if ranked.len() > FIRST {
            ranked.select_nth_unstable_by(FIRST - 1, order);
            FIRST
        } else {
            ranked.len()
        };
        ranked[..sorted].sort_unstable_by(order);
        let mut out: Vec<[u32; 2]> = Vec::new();
        for i in 0..ranked.len() {
            if i == sorted {
                ranked[sorted..].sort_unstable_by(order);
            }
            let term = ranked[i].0;
            let words = |t: [u32; 2]| t.into_iter().filter(|&w| w != ONE);
            if out
                .iter()
                .any(|&o| words(o).any(|w| words(term).any(|x| x == w)))
            {
                continue;
            }
            out.push(term);
            if out.len() == 3 {
                break;
            }
        }
        out.into_iter()
            .map(|[a, b]| match b {
                ONE => names[a as usize].to_string(),
                b => format!("{} {}", names[a as usize], names[b as usize]),
            })
            .collect()
    }
}

pub(super) fn join_topics(t: &[String]) -> String {
    match t {
        [] => String::new(),
        [a] => a.clone(),
        [a, b] => format!("{a} and {b}"),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::text::tests::TERM_TEXTS;

    #[test]
    fn words_lowercase_and_identifiers_stay_as_written() {
        let k = keys("Fix the Parser in src/Lexer.rs, Été and camelCase please");
        let got: Vec<(String, bool)> = k
            .into_iter()
            .flatten()
            .map(|(k, ident)| (k.into_owned(), ident))
            .collect();
        assert_eq!(
            got,
            [
                ("fix".to_string(), false),
                ("parser".into(), false),
                ("src/Lexer.rs".into(), true),
                ("été".into(), false),
                ("camelCase".into(), true),
            ]
        );
    }

    #[test]
    fn topics_prefer_specific_terms_over_filler() {
        let t = topics(
            Some("Reviving a sourdough starter"),
            "My sourdough starter smells like nail polish remover. Is it dead?",
            "Not dead, hungry: the acetone smell means it ran out of food. Feed the starter twice a day.",
        );
        assert_eq!(t[0], "sourdough starter", "{t:?}");
        assert!(t.len() <= 3);
        for filler in ["is", "it", "like", "my"] {
            assert!(!t.iter().any(|x| x == filler), "{t:?}");
        }
    }

    #[test]
    fn contraction_tails_and_interjections_are_never_topics() {
        for (user, reply) in [
            (
                "They're adorable! I've got a guinea pig named Oscar.",
                "Wow, cool! We'll get a pup soon, you're so lucky.",
            ),
            (
                "They\u{2019}re adorable! I\u{2019}ve got a guinea pig named Oscar.",
                "Wow, cool! We\u{2019}ll get a pup soon, you\u{2019}re so lucky.",
            ),
        ] {
            let t = topics(None, user, reply);
            assert!(t.iter().any(|x| x.contains("guinea pig")), "{t:?}");
            for junk in ["re", "ve", "ll", "wow", "cool"] {
                assert!(
                    !t.iter().any(|x| x.split(' ').any(|w| w == junk)),
                    "{junk} in {t:?}"
                );
            }
        }
    }

    #[test]
    fn code_literals_and_assignments_are_never_topics() {
        // Keyword arguments, as aider's chats are full of.
        let user = "Make commit_before_message default to None in Coder.__init__";
        let reply = "def __init__(self, main_model, io, repo=None, pretty=True, stream=False,\n    commit_before_message=None, done_messages=None, read_only=False):\n    self.commit_before_message = commit_before_message or []";
        let t = topics(None, user, reply);
        assert!(
            t.iter().any(|x| x.contains("commit_before_message")),
            "{t:?}"
        );
        for junk in ["none", "true", "false", "self", "def"] {
            assert!(
                !t.iter()
                    .any(|x| x.split(' ').any(|w| w.eq_ignore_ascii_case(junk))),
                "{junk} in {t:?}"
            );
        }
        assert!(!t.iter().any(|x| x.contains('=')), "{t:?}");
    }

    #[test]
    fn topics_hold_no_control_characters() {
        let t = topics(None, "\u{1b}[2J\u{1b}]0;pwned\u{7}", "");
        assert_eq!(t, ["2J pwned"]);
        let common = common_terms(&["summarize\u{1b}report\u{7}"; 3]);
        assert_eq!(common, ["report", "summarize"]);
    }

    #[test]
    fn acronyms_are_no_foreign_stopwords() {
        for acronym in ["MIT", "EU", "DoS", "NAS", "DES", "HA"] {
            assert!(keys(acronym)[0].is_some(), "{acronym}");
        }
        assert!(
            keys("Which OS for my NAS with the SIM card?")
                .iter()
                .flatten()
                .count()
                >= 4
        );
    }

    /// The reference forms: `str::split` for words, one map with a string
    /// per word and phrase, ranked as strings.
    mod reference {
        use super::super::*;
        use crate::header::text::is_separator;

        pub fn tokens(text: &str) -> impl Iterator<Item = &str> {
            text.split(is_separator)
                .map(|t| t.trim_matches(|c: char| c == '.' || c == '-' || c == '#'))
                .filter(|t| {
                    let mut chars = t.chars();
                    chars.next().is_some()
                        && chars.next().is_some()
                        && t.chars().any(char::is_alphabetic)
                })
        }

        fn keys(text: &str) -> Vec<Option<(String, bool)>> {
            tokens(text)
                .map(|t| {
                    let lower = lowercase(t);
                    if is_stopword(&lower, upper_after_first(t)) {
                        None
                    } else if is_identifier(t) {
                        Some((t.to_string(), true))
                    } else {
                        Some((lower.into_owned(), false))
                    }
                })
                .collect()
        }

        pub fn best(
            title: &str,
            user: &str,
            reply: &str,
            slot: usize,
            common: &[String],
        ) -> Vec<String> {
            let mut score: FxHashMap<String, [f64; 2]> = FxHashMap::default();
            for (text, weight) in [(title, [2.0, 0.0]), (user, [3.0, 0.0]), (reply, [0.5, 3.0])] {
                let keys = keys(text);
                for (i, k) in keys.iter().enumerate() {
                    let Some((k, ident)) = k else { continue };
                    let by = if *ident { 1.5 } else { 1.0 };
                    let v = score.entry(k.clone()).or_default();
                    v[0] += weight[0] * by;
                    v[1] += weight[1] * by;
                    if let Some(Some((next, _))) = keys.get(i + 1) {
                        let v = score.entry(format!("{k} {next}")).or_default();
                        v[0] += weight[0] * 1.6;
                        v[1] += weight[1] * 1.6;
                    }
                }
            }
            let shared = |t: &str| {
                t.split(' ')
                    .any(|w| common.iter().any(|c| c.eq_ignore_ascii_case(w)))
            };
            let mut ranked: Vec<(&str, f64)> = score
                .iter()
                .map(|(t, s)| (t.as_str(), s[slot]))
                .filter(|(t, s)| *s >= 1.5 && !shared(t))
                .collect();
            ranked.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            let mut out: Vec<String> = Vec::new();
            for (term, _) in ranked {
                let words: Vec<&str> = term.split(' ').collect();
                if out.iter().any(|o| o.split(' ').any(|w| words.contains(&w))) {
                    continue;
                }
                out.push(term.to_string());
                if out.len() == 3 {
                    break;
                }
            }
            out
        }
    }

    #[test]
    fn words_and_terms_are_what_the_reference_forms_find() {
        for text in TERM_TEXTS {
            assert_eq!(
                tokens(text).collect::<Vec<_>>(),
                reference::tokens(text).collect::<Vec<_>>(),
                "{text:?}"
            );
        }
        let common = [vec![], vec!["nginx".to_string(), "POLISH".to_string()]];
        for title in ["", "Sourdough and nginx"] {
            for user in TERM_TEXTS {
                for reply in TERM_TEXTS {
                    for common in &common {
                        let reply_keys = keys(reply);
                        let terms = Terms::of(Some(title), user, &reply_keys);
                        for slot in [0, 1] {
                            assert_eq!(
                                terms.best(slot, common),
                                reference::best(title, user, reply, slot, common),
                                "{title:?} {user:?} {reply:?} {slot} {common:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}
