//! What the measurements read in text: content words, sentences, and the
//! phrases that lean on context outside a chunk.

use rustc_hash::FxHasher;
use std::hash::Hasher;

/// Words too common to say what a text is about.
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "your", "with", "this", "that", "have",
    "from", "they", "will", "would", "there", "their", "what", "about", "which", "when", "make",
    "can", "like", "just", "into", "than", "then", "them", "these", "those", "some", "could",
    "should", "also", "how", "its", "was", "were", "been", "being", "has", "had", "does", "did",
    "doing", "all", "any", "each", "more", "most", "other", "such", "only", "own", "same", "very",
    "use", "using", "here", "where", "why", "who", "whom", "our", "out", "over", "under", "again",
    "once", "because", "while", "both", "few", "much", "many", "may", "might", "must", "need",
    "want", "get", "got", "one", "two", "yes", "okay", "please", "thanks", "thank", "sure", "let",
    "it's", "i'm", "don't", "can't", "i'll", "you're", "that's", "there's",
];

/// Lowercase words of letters, digits and apostrophes.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty())
}

/// Whether `word` says something about a text's subject.
pub fn is_content(word: &str) -> bool {
    word.chars().count() >= 3
        && !STOPWORDS.contains(&word)
        && !word.chars().all(|c| c.is_ascii_digit())
}

fn hash(word: &str) -> u64 {
    let mut h = FxHasher::default();
    h.write(word.as_bytes());
    h.finish()
}

/// A text's content words, hashed, sorted and once each.
pub fn terms(text: &str) -> Vec<u64> {
    let mut out: Vec<u64> = words(text)
        .filter(|w| is_content(w))
        .map(|w| hash(&w))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Shared terms over the smaller set's size (0 when either is empty): how
/// much two exchanges are about the same thing, whatever their lengths.
pub fn overlap(a: &[u64], b: &[u64]) -> f64 {
    let small = a.len().min(b.len());
    if small == 0 {
        return 0.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared as f64 / small as f64
}

/// Sentences in `text`, what a quoted passage holds not counted (a header
/// that quotes a request with full stops in it still has one sentence
/// there). A quote opens after a space, `:` or `(` and closes before a
/// space or punctuation; a closing quote followed by a capitalised word
/// ends a sentence (`The user asked: "…" The exchange covers …`).
pub fn sentences(text: &str) -> usize {
    let chars: Vec<char> = text.trim().chars().collect();
    let is_quote = |c: char| matches!(c, '"' | '“' | '”');
    let (mut count, mut quoted) = (0, false);
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        if is_quote(c) {
            if !quoted && prev.is_none_or(|p| p.is_whitespace() || ":(".contains(p)) {
                quoted = true;
            } else if quoted && next.is_none_or(|n| n.is_whitespace() || ".,;:!?)".contains(n)) {
                quoted = false;
                let capital = chars.get(i + 2).is_some_and(|a| a.is_uppercase());
                if next.is_none() || (next.is_some_and(char::is_whitespace) && capital) {
                    count += 1;
                }
            }
        } else if !quoted && matches!(c, '.' | '!' | '?') && next.is_none_or(char::is_whitespace) {
            count += 1;
        }
    }
    let unterminated = chars
        .iter()
        .rev()
        .find(|c| !c.is_whitespace())
        .is_some_and(|c| !matches!(c, '.' | '!' | '?') && !is_quote(*c));
    count + usize::from(unterminated)
}

/// Phrases that point at something said before: without an antecedent in
/// the chunk or its header, the reader cannot tell what they mean.
const REFERENCES: &[&str] = &[
    "as discussed",
    "as mentioned",
    "mentioned above",
    "discussed above",
    "as i said",
    "as you said",
    "like you said",
    "you mentioned",
    "you suggested",
    "as we discussed",
    "the above",
    "that one",
    "the first one",
    "the second one",
    "the last one",
    "the second option",
    "the first option",
    "the other option",
    "option 2",
    "option b",
    "your previous",
    "your last",
    "the previous",
    "same thing",
    "same for",
    "do it",
    "do that",
    "try again",
    "rerun",
    "re run",
    "redo",
    "go on",
    "keep going",
    "continue",
    "what about",
    "how about",
    "instead",
    "it again",
    "that code",
    "that file",
    "that error",
    "this error",
    "the error",
    "it still",
    "still not",
    "didn't work",
    "doesn't work",
    "not working",
];

/// The first phrase of `text` that leans on earlier context, if any
/// (matched on word boundaries, in the first 400 characters: where a
/// request says what it is about).
pub fn reference(text: &str) -> Option<&'static str> {
    let head: String = text.chars().take(400).collect::<String>().to_lowercase();
    let head = format!(
        " {} ",
        head.split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    );
    REFERENCES
        .iter()
        .find(|r| head.contains(&format!(" {r} ")))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_skip_quotes_and_count_the_last_one() {
        assert_eq!(sentences("One. Two! Three?"), 3);
        assert_eq!(sentences(r#"The user asked: "a. b. c." Then it ended."#), 2);
        let json = r#"From an API request (1 of 3). The user asked: "{"id": "T-1", "message": "Where is O-1?" The exchange covers orders."#;
        assert_eq!(sentences(json), 3);
        assert_eq!(
            sentences(r#"Titled "Garden plan 3" on May 1. The user asked how."#),
            2
        );
        assert_eq!(sentences("no stop at all"), 1);
        assert_eq!(sentences(""), 0);
        assert_eq!(sentences("Version 1.5 is out. Good."), 2);
    }

    #[test]
    fn references_are_whole_phrases() {
        assert_eq!(
            reference("Do the second option, please"),
            Some("the second option")
        );
        assert_eq!(reference("It still fails"), Some("it still"));
        assert_eq!(reference("Continue."), Some("continue"));
        assert_eq!(reference("continued fractions in Rust"), None);
        assert_eq!(reference("How do I bake bread?"), None);
    }

    #[test]
    fn overlap_is_shared_over_the_smaller() {
        let a = terms("sourdough starter feeding schedule");
        let b = terms("starter feeding");
        assert!((overlap(&a, &b) - 1.0).abs() < 1e-9);
        assert_eq!(overlap(&a, &terms("rust borrow checker")), 0.0);
        assert_eq!(overlap(&a, &[]), 0.0);
    }
}
