//! A title for a conversation whose source has none, derived the way the
//! chat platforms name a new conversation: a short phrase from its first
//! request. Chunk files mark such a title `title_derived: true`.
//!
//! The phrase is the request's first line of prose (code fences, quotes,
//! list markers and the `<tag>…</tag>` sections tools inject left out), cut
//! at its first sentence end when that leaves a phrase, without a leading
//! greeting, "ok" or "can you"/"please", at most [`MAX_WORDS`] words and
//! [`MAX_CHARS`] characters, its first letter capitalized. The request is
//! the conversation's first that is more than a greeting or thanks
//! ([`of_requests`]). The same requests always give the same title.

/// Most words of a derived title.
pub const MAX_WORDS: usize = 8;
/// Most characters of a derived title.
pub const MAX_CHARS: usize = 80;

/// Words a request opens with that say nothing about its subject, dropped
/// from the front (longest first where one is a prefix of another).
const OPENERS: &[&str] = &[
    "hi there",
    "hello there",
    "hey there",
    "hi",
    "hello",
    "hey",
    "good morning",
    "good afternoon",
    "good evening",
    "please",
    "can you please",
    "could you please",
    "would you please",
    "can you",
    "could you",
    "would you",
    "can u",
    "i need you to",
    "i want you to",
    "help me",
    "quick question",
    "ok so",
    "okay so",
    "ok",
    "okay",
    "so",
];

/// The title of a conversation whose requests are `requests`, in order:
/// from the first that is more than a greeting or thanks (a chat that opens
/// with "Hi" is named after what came next), else from the first with words.
pub fn of_requests(requests: impl IntoIterator<Item = String>) -> Option<String> {
    let mut courtesy = None;
    for request in requests {
        if names_conversation(&request) {
            return derived(&request);
        }
        courtesy = courtesy.or_else(|| derived(&request));
    }
    courtesy
}

/// Whether a conversation is named after `request` ([`of_requests`]): it is
/// more than a greeting or thanks, and has words to make a title.
pub fn names_conversation(request: &str) -> bool {
    !crate::chunker::is_courtesy(request) && derived(request).is_some()
}

/// The first request's title, or `None` when it has no words to make one.
pub fn derived(request: &str) -> Option<String> {
    let request = without_tag_sections(request);
    let line = first_prose_line(&request)?;
    let sentence = first_sentence(line);
    let words: Vec<&str> = sentence.split_whitespace().collect();
    // A greeting alone is its own title ("Hi there", not "There").
    let words = if crate::chunker::is_courtesy(sentence) {
        &words[..]
    } else {
        without_openers(&words)
    };
    let mut title = String::new();
    for w in words.iter().take(MAX_WORDS) {
        if title.chars().count() + 1 + w.chars().count() > MAX_CHARS {
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(w);
    }
    if title.is_empty() {
        // One word longer than the limit: its start.
        title = words.first()?.chars().take(MAX_CHARS).collect();
    }
    let title = title.trim_end_matches(|c: char| !c.is_alphanumeric() && !")]}\"'`".contains(c));
    if !title.chars().any(char::is_alphanumeric) {
        return None;
    }
    let mut chars = title.chars();
    let first = chars.next()?;
    Some(first.to_uppercase().chain(chars).collect())
}

/// `text` without the `<tag>…</tag>` sections that open a line: what tools
/// put into a prompt (`<local-command-caveat>`, `<system-reminder>`), not
/// what the user asked. An unclosed tag is text.
fn without_tag_sections(text: &str) -> std::borrow::Cow<'_, str> {
    let opens_tag = |line: &str| -> Option<usize> {
        let name = line.strip_prefix('<')?.split_once('>')?.0;
        let plain = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        let close = format!("</{name}>");
        let end = line.find(&close)? + close.len();
        // A section, not markup inside a sentence: nothing after it on its line.
        let after = &line[end..];
        let line_ends = after
            .find('\n')
            .map_or(after, |i| &after[..i])
            .trim()
            .is_empty();
        (plain && line_ends).then_some(end)
    };
    if !text.contains("</") {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let start = rest.len() - rest.trim_start().len();
        match opens_tag(&rest[start..]) {
            Some(end) => rest = &rest[start + end..],
            None => {
                let line_end = rest.find('\n').map_or(rest.len(), |i| i + 1);
                out.push_str(&rest[..line_end]);
                rest = &rest[line_end..];
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The first line with a letter or digit, outside code fences, without a
/// leading Markdown marker (`#`, `>`, `-`, `*`, `1.`).
fn first_prose_line(text: &str) -> Option<&str> {
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if let Some(f) = crate::render::fence_opened(t) {
            fence = Some(f);
            continue;
        }
        let bare = t.trim_start_matches(['#', '>', '-', '*', '+']).trim_start();
        // A numbered item's number (`1.`, `2)`), not a number that starts prose.
        let digits = bare.len() - bare.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let bare = match bare[digits..].strip_prefix(['.', ')']) {
            Some(rest) if digits > 0 => rest.trim(),
            _ => bare.trim(),
        };
        if bare.chars().any(char::is_alphanumeric) {
            return Some(bare);
        }
    }
    None
}

/// `line` up to its first sentence end (`.`, `?`, `!` or `:` before a space),
/// when at least two words come before it; else the whole line.
fn first_sentence(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let end = matches!(b, b'.' | b'?' | b'!' | b':')
            && bytes.get(i + 1).is_none_or(u8::is_ascii_whitespace);
        if end && line[..i].split_whitespace().count() >= 2 {
            return &line[..i];
        }
    }
    line
}

/// `words` without the [`OPENERS`] at their front (read as lowercase
/// letters, so "Hi," and "hi" are one word).
fn without_openers<'a, 'w>(words: &'a [&'w str]) -> &'a [&'w str] {
    let bare = |w: &str| -> String {
        w.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let mut rest = words;
    'outer: loop {
        for opener in OPENERS {
            let n = opener.split(' ').count();
            if rest.len() > n
                && rest[..n]
                    .iter()
                    .zip(opener.split(' '))
                    .all(|(w, o)| bare(w) == o)
            {
                rest = &rest[n..];
                continue 'outer;
            }
        }
        return rest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_a_short_phrase_from_the_first_request() {
        for (request, title) in [
            (
                "How do I undo a git commit that I already pushed?",
                Some("How do I undo a git commit that"),
            ),
            (
                "Hi! Can you explain Rust lifetimes? I keep getting E0106.",
                Some("Explain Rust lifetimes"),
            ),
            (
                "please fix this:\n```rust\nfn main() {}\n```",
                Some("Fix this"),
            ),
            (
                "```\nTraceback (most recent call last)\n```\nwhat does this error mean",
                Some("What does this error mean"),
            ),
            (
                "# Plan for the migration\nsteps…",
                Some("Plan for the migration"),
            ),
            (
                "/orchestrator create TODO app by Next.js",
                Some("/orchestrator create TODO app by Next.js"),
            ),
            ("naïve café — review it", Some("Naïve café — review it")),
            ("hi", Some("Hi")),
            ("1. Set up CI\n2. Deploy", Some("Set up CI")),
            ("2024 budget plan", Some("2024 budget plan")),
            ("   \n```\ncode only\n```", None),
            ("", None),
            ("👍", None),
            (
                "<local-command-caveat>Caveat: generated\nby commands.</local-command-caveat>\n\
                 Deploy the staging branch",
                Some("Deploy the staging branch"),
            ),
            (
                "<local-command-caveat>only noise</local-command-caveat>",
                None,
            ),
            (
                "<b>bold</b> claim, check it",
                Some("<b>bold</b> claim, check it"),
            ),
            (
                "OK, let's start a planning document at ./docs/PLAN.md",
                Some("Let's start a planning document at ./docs/PLAN.md"),
            ),
        ] {
            assert_eq!(derived(request).as_deref(), title, "{request:?}");
        }
    }

    #[test]
    fn a_conversation_is_named_after_its_first_real_request() {
        let titled = |requests: &[&str]| of_requests(requests.iter().map(|r| r.to_string()));
        assert_eq!(
            titled(&["Hi", "hello again!", "Why is my build slow?", "thanks"]).as_deref(),
            Some("Why is my build slow")
        );
        assert_eq!(titled(&["Hi there", "thanks"]).as_deref(), Some("Hi there"));
        assert_eq!(
            titled(&["", "```\nx\n```", "Fix CI"]).as_deref(),
            Some("Fix CI")
        );
        assert_eq!(titled(&[]), None);
    }

    #[test]
    fn a_title_is_bounded_and_one_line() {
        let long = "word ".repeat(100);
        let t = derived(&long).unwrap();
        assert_eq!(t.split(' ').count(), MAX_WORDS);
        let giant = "x".repeat(500);
        assert_eq!(derived(&giant).unwrap().chars().count(), MAX_CHARS);
        let t = derived("Line one\nline two").unwrap();
        assert_eq!(t, "Line one");
        assert!(!t.contains('\n'));
    }
}
