//! Grouping a conversation's pairs into chunks.
//!
//! The default unit is one pair per chunk. A following pair is merged into
//! the chunk only when it is a short follow-up that means little alone (a
//! "why?", "and for Python?", "what about the second one?"), and never past
//! the word limit. One very long answer with several top-level sections is
//! split into self-contained parts (each keeps the user's prompt).
//! Mechanical exchanges (greetings, thanks, "ok") are excluded and counted.
//! Every other pair lands in exactly one chunk; [`Plan::check`] proves it
//! for every plan before anything is written.

/// What the chunker sees of one pair.
#[derive(Debug, Clone)]
pub struct PairText {
    /// The pair's 1-based index in its conversation.
    pub index: u32,
    /// Plain text of the user prompt.
    pub user: String,
    /// The rendered assistant answer.
    pub assistant: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkerConfig {
    /// A chunk never grows past this many words by merging.
    pub max_words: usize,
    /// A follow-up prompt this short (in words) may be merged.
    pub max_follow_up_words: usize,
    /// An answer longer than this (in words) may be split at its sections.
    pub split_above_words: usize,
    /// A section shorter than this (in words) is no part of its own: it
    /// stays with the section before it (the first, with the one after).
    pub min_part_words: usize,
}

impl Default for ChunkerConfig {
    fn default() -> Self {
        Self {
            max_words: 2000,
            max_follow_up_words: 12,
            split_above_words: 1500,
            min_part_words: 200,
        }
    }
}

/// One planned chunk: consecutive pairs, or one part of one pair's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedChunk {
    /// Positions in the input slice, consecutive.
    pub pairs: Vec<usize>,
    /// For a split answer: (part number from 1, parts, the part's text).
    pub part: Option<(u32, u32, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion {
    /// A greeting, thanks or acknowledgement with no content.
    Mechanical,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub chunks: Vec<PlannedChunk>,
    /// Positions in the input slice that were left out, and why.
    pub excluded: Vec<(usize, Exclusion)>,
}

/// The plan broke its invariant: a bug in the chunker, never the input's
/// fault.
#[derive(Debug, thiserror::Error)]
#[error("chunking bug: pair at position {position} is {problem}")]
pub struct CoverageError {
    pub position: usize,
    pub problem: &'static str,
}

/// Words as `split_whitespace` counts them. Most text is ASCII, where a
/// byte scan is several times faster than decoding chars (word counting was
/// ~3 % of an import's CPU).
pub fn word_count(s: &str) -> usize {
    // `char::is_whitespace` over ASCII: space, \t, \n, \x0B, \x0C, \r.
    let space = |b: u8| b == b' ' || (b'\t'..=b'\r').contains(&b);
    // A word starts at a non-space after a space (`gap`: the byte before
    // `run` was one): counted over byte pairs without a carried state,
    // which the compiler vectorizes.
    let ascii = |run: &[u8], gap: bool| -> usize {
        let Some(&first) = run.first() else { return 0 };
        usize::from(gap & !space(first))
            + run
                .iter()
                .zip(&run[1..])
                .map(|(&prev, &next)| usize::from(space(prev) & !space(next)))
                .sum::<usize>()
    };
    let b = s.as_bytes();
    let (mut words, mut gap, mut i) = (0, true, 0);
    while i < b.len() {
        // A run of ASCII, counted as above; then one other char, a space
        // or not by its first byte (only the first bytes of the wide
        // spaces, U+0085, U+00A0, U+1680, U+2000–U+205F and U+3000, need
        // the char decoded).
        let end = b[i..]
            .iter()
            .position(|c| !c.is_ascii())
            .map_or(b.len(), |n| i + n);
        if end > i {
            words += ascii(&b[i..end], gap);
            gap = space(b[end - 1]);
            i = end;
            continue;
        }
        let c = &s[i..];
        let is_space =
            matches!(b[i], 0xC2 | 0xE1 | 0xE2 | 0xE3) && c.starts_with(char::is_whitespace);
        words += usize::from(gap & !is_space);
        gap = is_space;
        i += c.chars().next().map_or(1, char::len_utf8);
    }
    words
}

fn normalized(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect::<String>()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words a mechanical prompt is made of. A prompt is mechanical when it
/// has at most [`MECHANICAL_MAX_WORDS`] words, every one of them is a
/// [`MECHANICAL_HEADS`] or [`MECHANICAL_FILLERS`] word, at least one is a
/// head (none at all counts too: an emoji, "!!!"), and its answer has at most
/// [`MECHANICAL_ANSWER_WORDS`] words. One rule for every greeting, thanks,
/// acknowledgement and farewell, however it is worded: "hi there" and
/// "hi again" alike. The README's table is `tests::MECHANICAL_CASES`.
const MECHANICAL_HEADS: &[&str] = &[
    // Greetings.
    "hi",
    "hello",
    "hey",
    "heya",
    "hiya",
    "howdy",
    "yo",
    "greetings",
    "morning",
    "afternoon",
    "evening",
    // Thanks.
    "thanks",
    "thank",
    "thankyou",
    "thx",
    "ty",
    "cheers",
    "appreciated",
    // Acknowledgements.
    "ok",
    "okay",
    "k",
    "kk",
    "good",
    "great",
    "cool",
    "nice",
    "perfect",
    "awesome",
    "excellent",
    "wonderful",
    "fine",
    "alright",
    "got",
    "understood",
    "sounds",
    "sure",
    "yes",
    "yep",
    "yeah",
    "no",
    "nope",
    // Farewells.
    "bye",
    "goodbye",
    "goodnight",
    "night",
    "see",
    "later",
    "cya",
];

/// Words that may stand beside a head without making the prompt a request:
/// "hi *there*", "hi *again*", "thanks *for the help*", "*see you*".
const MECHANICAL_FILLERS: &[&str] = &[
    "there",
    "again",
    "back",
    "all",
    "everyone",
    "everybody",
    "you",
    "so",
    "much",
    "very",
    "a",
    "lot",
    "it",
    "that",
    "thats",
    "this",
    "works",
    "for",
    "the",
    "your",
    "help",
    "i",
    "me",
    "now",
    "then",
    "oh",
    "ah",
    "well",
    "really",
    "just",
    "too",
    "and",
    "please",
    "claude",
    "chatgpt",
    "gpt",
    "gemini",
    "assistant",
];

/// Most words a mechanical prompt has.
const MECHANICAL_MAX_WORDS: usize = 6;

/// Most words the answer to a mechanical prompt has: a longer one has
/// substance, and the pair is kept.
const MECHANICAL_ANSWER_WORDS: usize = 40;

/// The most letters and digits a mechanical prompt has: its most words,
/// each as long as the longest word of the two lists.
const MECHANICAL_LETTERS: usize = {
    let lists: [&[&str]; 2] = [MECHANICAL_HEADS, MECHANICAL_FILLERS];
    let (mut longest, mut l) = (0, 0);
    while l < lists.len() {
        let mut i = 0;
        while i < lists[l].len() {
            if lists[l][i].len() > longest {
                longest = lists[l][i].len();
            }
            i += 1;
        }
        l += 1;
    }
    longest * MECHANICAL_MAX_WORDS
};

/// A greeting/thanks/acknowledgement/farewell whose answer has no substance
/// either (the rule: [`MECHANICAL_HEADS`]).
pub fn is_mechanical(p: &PairText) -> bool {
    is_courtesy(&p.user) && word_count(&p.assistant) <= MECHANICAL_ANSWER_WORDS
}

/// A prompt that is only a greeting, thanks, acknowledgement or farewell
/// (the prompt's half of the rule: [`MECHANICAL_HEADS`]).
pub fn is_courtesy(prompt: &str) -> bool {
    // A prompt with more letters than any of them can have is none of them
    // (most prompts: known without normalizing the whole prompt).
    if prompt
        .chars()
        .filter(|c| c.is_alphanumeric())
        .nth(MECHANICAL_LETTERS)
        .is_some()
    {
        return false;
    }
    let user = normalized(prompt);
    let words: Vec<&str> = user.split(' ').filter(|w| !w.is_empty()).collect();
    if words.len() > MECHANICAL_MAX_WORDS {
        return false;
    }
    let all_known = words
        .iter()
        .all(|w| MECHANICAL_HEADS.contains(w) || MECHANICAL_FILLERS.contains(w));
    let headed = words.is_empty() || words.iter().any(|w| MECHANICAL_HEADS.contains(w));
    all_known && headed
}

const FOLLOW_UP_STARTS: &[&str] = &[
    "and ",
    "also ",
    "but ",
    "so ",
    "then ",
    "what about",
    "how about",
    "what if",
    "why",
    "how so",
    "really",
    "which one",
    "which of",
    "can you also",
    "could you also",
    "more ",
    "continue",
    "go on",
    "elaborate",
    "explain that",
    "explain this",
    "and what",
    "and how",
    "same for",
    "what does that",
    "what does this",
    "is that",
    "is it",
    "does that",
    "does it",
    "do it",
    "try again",
    "shorter",
    "longer",
];

/// A short prompt that only makes sense after the previous exchange.
pub fn is_follow_up(user: &str, cfg: &ChunkerConfig) -> bool {
    let words = word_count(user);
    if words == 0 || words > cfg.max_follow_up_words {
        return false;
    }
    let n = normalized(user);
    let padded = format!("{n} ");
    FOLLOW_UP_STARTS.iter().any(|s| padded.starts_with(s))
}

/// `line` opens a top-level section: a level-1 or level-2 ATX heading with
/// text, indented by at most three spaces (four make it code: the
/// `    # via aiohttp` comments of a pasted `pip-compile` output).
fn is_section_heading(line: &str) -> bool {
    let t = line.trim_start_matches(' ');
    line.len() - t.len() <= 3
        && (t.strip_prefix("# ").or_else(|| t.strip_prefix("## ")))
            .is_some_and(|title| !title.trim().is_empty())
}

/// Splits a long answer at its top-level Markdown headings (outside code
/// fences) into sections of at least `min_words` words: a shorter section
/// joins the one before it (the first joins the next), so no part is a
/// fragment. One section means no split.
fn sections(answer: &str, min_words: usize) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut fence: Option<&str> = None;
    for line in answer.split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            }
        } else if let Some(f) = crate::render::fence_opened(t) {
            fence = Some(f);
        } else if is_section_heading(line) && !current.trim().is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        current.push_str(line);
    }
    if !current.trim().is_empty() {
        parts.push(current);
    }
    let mut merged: Vec<(String, usize)> = Vec::new();
    for part in parts {
        let words = word_count(&part);
        match merged.last_mut() {
            Some((text, n)) if *n < min_words || words < min_words => {
                text.push_str(&part);
                *n += words;
            }
            _ => merged.push((part, words)),
        }
    }
    merged
        .into_iter()
        .map(|(p, _)| p.trim().to_string())
        .collect()
}

/// Plans the chunks of one conversation.
pub fn plan(pairs: &[PairText], cfg: &ChunkerConfig) -> Plan {
    let mut out = Plan::default();
    let mut current: Option<(Vec<usize>, usize)> = None;
    for (pos, pair) in pairs.iter().enumerate() {
        if is_mechanical(pair) {
            out.excluded.push((pos, Exclusion::Mechanical));
            continue;
        }
        let answer_words = word_count(&pair.assistant);
        let words = word_count(&pair.user) + answer_words;
        if let Some((members, total)) = &mut current
            && is_follow_up(&pair.user, cfg)
            && *total + words <= cfg.max_words
            && members.last() == Some(&(pos - 1))
        {
            members.push(pos);
            *total += words;
            continue;
        }
        if let Some((members, _)) = current.take() {
            out.chunks.push(PlannedChunk {
                pairs: members,
                part: None,
            });
        }
        if answer_words > cfg.split_above_words {
            let parts = sections(&pair.assistant, cfg.min_part_words);
            if parts.len() >= 2 {
                let n = parts.len() as u32;
                for (i, text) in parts.into_iter().enumerate() {
                    out.chunks.push(PlannedChunk {
                        pairs: vec![pos],
                        part: Some((i as u32 + 1, n, text)),
                    });
                }
                continue;
            }
        }
        current = Some((vec![pos], words));
    }
    if let Some((members, _)) = current {
        out.chunks.push(PlannedChunk {
            pairs: members,
            part: None,
        });
    }
    out
}

impl Plan {
    /// Every pair is either excluded or in exactly one chunk (a split pair
    /// in all the parts of one split, and nowhere else).
    pub fn check(&self, pairs: usize) -> Result<(), CoverageError> {
        let mut seen = vec![0u32; pairs];
        let mut split_parts = vec![0u32; pairs];
        for c in &self.chunks {
            for &p in &c.pairs {
                let slot = seen.get_mut(p).ok_or(CoverageError {
                    position: p,
                    problem: "out of range",
                })?;
                match &c.part {
                    Some((_, n, _)) => {
                        split_parts[p] += 1;
                        if split_parts[p] == *n {
                            *slot += 1;
                        }
                    }
                    None => *slot += 1,
                }
            }
        }
        for &(p, _) in &self.excluded {
            if let Some(slot) = seen.get_mut(p) {
                *slot += 1;
            }
        }
        for (position, &n) in seen.iter().enumerate() {
            if n == 0 {
                return Err(CoverageError {
                    position,
                    problem: "in no chunk",
                });
            }
            if n > 1 {
                return Err(CoverageError {
                    position,
                    problem: "in more than one chunk",
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(index: u32, user: &str, assistant: &str) -> PairText {
        PairText {
            index,
            user: user.into(),
            assistant: assistant.into(),
        }
    }

    fn shape(plan: &Plan) -> Vec<Vec<usize>> {
        plan.chunks.iter().map(|c| c.pairs.clone()).collect()
    }

    #[test]
    fn one_pair_per_chunk_by_default() {
        let pairs = vec![
            p(
                1,
                "How do I rotate logs with logrotate?",
                "Use copytruncate or a postrotate hook.",
            ),
            p(
                2,
                "Write a Python function that reverses a linked list.",
                "def reverse(head): ...",
            ),
        ];
        let plan = plan(&pairs, &ChunkerConfig::default());
        assert_eq!(shape(&plan), vec![vec![0], vec![1]]);
        plan.check(2).unwrap();
    }

    #[test]
    fn short_follow_ups_merge_and_new_questions_do_not() {
        let pairs = vec![
            p(
                1,
                "How do I rotate logs with logrotate?",
                "Use copytruncate.",
            ),
            p(2, "Why?", "Because the writer keeps its file handle."),
            p(
                3,
                "And for journald?",
                "journald rotates itself: SystemMaxUse=.",
            ),
            p(
                4,
                "What is the capital of Australia and why was it chosen?",
                "Canberra, a compromise.",
            ),
        ];
        let plan = plan(&pairs, &ChunkerConfig::default());
        assert_eq!(shape(&plan), vec![vec![0, 1, 2], vec![3]]);
        plan.check(4).unwrap();
    }

    #[test]
    fn words_are_counted_as_split_whitespace_counts_them() {
        for s in [
            "",
            " ",
            "one",
            "  two  words ",
            "tabs\tand\nnew\r\nlines\x0Bvertical\x0Cfeed",
            "trailing\n\n",
            "no-break\u{a0}space and\u{3000}ideographic",
            "résumé 日本語 text",
            "\u{85}next line",
            "a\u{2028}b\u{2029}c",
            "\u{1680}ogham\u{200a}hair\u{202f}narrow\u{205f}math \u{2014}dash\u{2019}s ✓ 🙂x",
            "\u{a0}",
            "é",
            "é ✓ mixed runs — of\u{2003}ASCII and not ",
        ] {
            assert_eq!(word_count(s), s.split_whitespace().count(), "{s:?}");
        }
    }

    #[test]
    fn merging_stops_at_the_word_limit() {
        let long = "word ".repeat(1995);
        let pairs = vec![
            p(1, "Explain TCP congestion control in depth.", &long),
            p(2, "Why?", "Because of loss."),
        ];
        let cfg = ChunkerConfig::default();
        let plan = plan(&pairs, &cfg);
        assert_eq!(shape(&plan), vec![vec![0], vec![1]]);
    }

    #[test]
    fn mechanical_exchanges_are_excluded_but_a_thanks_with_a_real_answer_is_kept() {
        let pairs = vec![
            p(1, "Hi!", "Hello! How can I help?"),
            p(2, "How do I undo a git commit?", "git reset --soft HEAD~1"),
            p(3, "Thanks!", "You're welcome."),
            p(
                4,
                "thanks",
                &"Here is a much longer explanation. ".repeat(20),
            ),
        ];
        let plan = plan(&pairs, &ChunkerConfig::default());
        assert_eq!(
            plan.excluded,
            vec![(0, Exclusion::Mechanical), (2, Exclusion::Mechanical)]
        );
        assert_eq!(shape(&plan), vec![vec![1], vec![3]]);
        plan.check(4).unwrap();
    }

    #[test]
    fn mechanical_is_read_from_the_letters_however_much_punctuation_surrounds_them() {
        assert_eq!(
            MECHANICAL_LETTERS,
            "appreciated".len() * MECHANICAL_MAX_WORDS
        );
        let ok = |user: &str| is_mechanical(&p(1, user, "You're welcome."));
        assert!(ok(&format!(
            "{} thank you so much {}",
            "!".repeat(200),
            "🙏".repeat(50)
        )));
        assert!(ok("Thank\tyou  SO much!!"));
        assert!(!ok("thank you so much!!x"));
        assert!(!ok("ok ok ok ok ok ok ok ok"));
    }

    /// The mechanical-exchange rule as cases: (prompt, answer, left out).
    /// README.md's "Mechanical exchanges" table is this table, row for row.
    pub(super) const MECHANICAL_CASES: &[(&str, &str, bool)] = &[
        ("hi there", "Hello! How can I help you today?", true),
        (
            "hi again",
            "Hey! Welcome back. What are we working on?",
            true,
        ),
        ("Hello!", "Hi! What can I do for you?", true),
        ("good morning", "Good morning! How can I help?", true),
        ("hey claude", "Hey! What's up?", true),
        ("thanks!", "You're welcome!", true),
        ("Thank you so much!!", "Glad it helped.", true),
        ("thanks for the help", "Anytime.", true),
        ("ok, got it", "Great.", true),
        ("perfect, that works", "Glad to hear it.", true),
        ("yes please", "Done.", true),
        ("bye", "Goodbye!", true),
        ("see you later", "See you!", true),
        ("👍", "Glad to help!", true),
        (
            "thanks",
            "You're welcome. One more thing worth knowing: the cache keeps stale entries for an hour after a deploy, so purge it with `cache purge --all` before you test the new build, or requests will still see the old assets and the old headers for a while.",
            false,
        ),
        (
            "yes",
            "Here is the full migration, step by step: first add the column as nullable, then backfill it in batches of ten thousand rows, then add the NOT NULL constraint with NOT VALID, validate it separately, and only then drop the old column once every reader has moved over to the new one.",
            false,
        ),
        (
            "hi, can you review this function?",
            "Sure, paste it.",
            false,
        ),
        (
            "hello world in rust",
            "fn main() { println!(\"Hello, world!\"); }",
            false,
        ),
        ("thanks, and what about Python?", "print(\"Hello\")", false),
        ("why?", "Because the lock is held.", false),
        ("no, the other file", "Opening src/main.rs.", false),
        ("ok ok ok ok ok ok ok ok", "Okay.", false),
    ];

    #[test]
    fn the_mechanical_rule_is_its_table_of_cases() {
        for &(user, answer, left_out) in MECHANICAL_CASES {
            assert_eq!(
                is_mechanical(&p(1, user, answer)),
                left_out,
                "{user:?} / {answer:?}"
            );
        }
    }

    #[test]
    fn the_readme_shows_the_mechanical_table_row_for_row() {
        let readme = include_str!("../../../README.md");
        let rows: Vec<&str> = readme
            .lines()
            .skip_while(|l| !l.starts_with("| Prompt | Answer | Chunk |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        assert_eq!(rows.len(), MECHANICAL_CASES.len(), "{rows:#?}");
        for (row, &(user, answer, left_out)) in rows.iter().zip(MECHANICAL_CASES) {
            let cell = |s: &str| s.replace('|', "\\|");
            let want = format!(
                "| {} | {} | {} |",
                cell(user),
                cell(answer),
                if left_out { "left out" } else { "kept" }
            );
            assert_eq!(*row, want);
        }
    }

    #[test]
    fn a_very_long_sectioned_answer_is_split_into_self_contained_parts() {
        let body = "text ".repeat(600);
        let answer = format!(
            "## Install\n{body}\n```sh\n## not a heading\n```\n## Configure\n{body}\n## Run\n{body}"
        );
        let pairs = vec![p(1, "Set up Postgres for me", &answer)];
        let plan = plan(&pairs, &ChunkerConfig::default());
        assert_eq!(plan.chunks.len(), 3);
        let parts: Vec<_> = plan
            .chunks
            .iter()
            .map(|c| c.part.clone().unwrap())
            .collect();
        assert_eq!((parts[0].0, parts[0].1), (1, 3));
        assert!(parts[0].2.starts_with("## Install"));
        assert!(
            parts[0].2.contains("## not a heading"),
            "headings inside code fences do not split"
        );
        assert!(parts[2].2.starts_with("## Run"));
        plan.check(1).unwrap();
    }

    #[test]
    fn indented_hashes_and_fragments_are_not_parts() {
        // A pasted `pip-compile` output: comment lines indented as code,
        // and a few top-level `#` comments before it.
        let mut out = String::from("#\n# This file is autogenerated by pip-compile\n#\n");
        for i in 0..400 {
            out.push_str(&format!("package{i}==1.0\n    # via\n    #   httpx\n"));
        }
        let pairs = vec![p(1, "/run scripts/pip-compile.sh --upgrade", &out)];
        let plan = plan(&pairs, &ChunkerConfig::default());
        assert_eq!(shape(&plan), vec![vec![0]], "not split");
        assert!(plan.chunks[0].part.is_none());
        plan.check(1).unwrap();

        // Two real sections and a two-line closing one: the closing words
        // stay with the section before them.
        let body = "text ".repeat(800);
        let answer = format!("Intro.\n## Install\n{body}\n## Run\n{body}\n## Done\nThat is all.\n");
        let plan = super::plan(
            &[p(1, "Set up Postgres", &answer)],
            &ChunkerConfig::default(),
        );
        let parts: Vec<String> = plan
            .chunks
            .iter()
            .map(|c| c.part.clone().unwrap().2)
            .collect();
        assert_eq!(parts.len(), 2, "{:?}", plan.chunks.len());
        assert!(
            parts[0].starts_with("Intro.\n## Install"),
            "the preamble joins the first"
        );
        assert!(parts[1].starts_with("## Run") && parts[1].ends_with("That is all."));
        plan.check(1).unwrap();
    }

    #[test]
    fn the_coverage_check_catches_gaps_and_duplicates() {
        let gap = Plan {
            chunks: vec![PlannedChunk {
                pairs: vec![0],
                part: None,
            }],
            excluded: vec![],
        };
        assert!(
            gap.check(2)
                .unwrap_err()
                .to_string()
                .contains("in no chunk")
        );
        let dup = Plan {
            chunks: vec![
                PlannedChunk {
                    pairs: vec![0],
                    part: None,
                },
                PlannedChunk {
                    pairs: vec![0],
                    part: None,
                },
            ],
            excluded: vec![],
        };
        assert!(
            dup.check(1)
                .unwrap_err()
                .to_string()
                .contains("more than one")
        );
    }
}
