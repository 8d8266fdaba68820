//! The text rules of the boundary: one-line folding, bounded lengths,
//! snake_case keys, and the id alphabet.

use std::borrow::Cow;

/// Whether `c` breaks a line or is a control: what a one-line field may not
/// hold (tabs, CR/LF, NEL, the Unicode line and paragraph separators, C0/C1).
fn breaks_line(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` on one line: each run of whitespace and controls that holds a
/// control or line break becomes one space (dropped at either end). Runs of
/// plain spaces are left as they are, so text without controls is unchanged.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(breaks_line) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let mut run_breaks = false;
    let flush = |out: &mut String, run: &mut String, run_breaks: &mut bool| {
        if *run_breaks {
            if !out.is_empty() {
                out.push(' ');
            }
        } else {
            out.push_str(run);
        }
        run.clear();
        *run_breaks = false;
    };
    for c in text.chars() {
        if c.is_whitespace() || breaks_line(c) {
            run.push(c);
            run_breaks |= breaks_line(c);
        } else {
            flush(&mut out, &mut run, &mut run_breaks);
            out.push(c);
        }
    }
    if !run_breaks {
        out.push_str(&run);
    }
    Cow::Owned(out)
}

/// `text` cut to at most `max` bytes at a character boundary, with `…`
/// marking the cut; `None` when it fits.
pub fn truncated(text: &str, max: usize) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!("{}…", &text[..end]))
}

/// A metadata key as the frontmatter writes keys: lowercase ASCII letters,
/// digits and `_`, starting with a letter. Words split at anything else and
/// at a lower-to-upper case change (`gitBranch`, `session-id`, `Weird Key!`
/// → `git_branch`, `session_id`, `weird_key`). `None` when nothing usable
/// is left or it is longer than `max`.
pub fn snake_case(key: &str, max: usize) -> Option<Cow<'_, str>> {
    let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_';
    let bytes = key.as_bytes();
    let already = bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes.iter().all(|&b| plain(b))
        && !key.ends_with('_')
        && !key.contains("__");
    if already {
        return (key.len() <= max).then_some(Cow::Borrowed(key));
    }
    let mut out = String::with_capacity(key.len());
    let (mut split, mut after_lower) = (false, false);
    for c in key.chars() {
        if !c.is_ascii_alphanumeric() {
            (split, after_lower) = (true, false);
            continue;
        }
        if (split || (c.is_ascii_uppercase() && after_lower)) && !out.is_empty() {
            out.push('_');
        }
        split = false;
        after_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c.to_ascii_lowercase());
    }
    let usable = out.as_bytes().first().is_some_and(u8::is_ascii_lowercase) && out.len() <= max;
    usable.then_some(Cow::Owned(out))
}

/// The adapter-id alphabet: 1..=`max` lowercase ASCII letters, digits and
/// `-`, not starting with `-`.
pub fn is_id(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Whether `s` holds a control character or a bidi formatting character.
pub fn has_unsafe(s: &str) -> bool {
    s.chars().any(chatmill_model::visible::is_unsafe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_folds_breaks_and_controls_only() {
        assert_eq!(one_line("a  b"), "a  b");
        assert!(matches!(one_line("plain title"), Cow::Borrowed(_)));
        assert_eq!(
            one_line("line1\nline2\r\n---\nchunk_id: x"),
            "line1 line2 --- chunk_id: x"
        );
        assert_eq!(one_line("\n\ttitle \n"), "title");
        assert_eq!(one_line("a \u{1b}[31m b"), "a [31m b");
        assert_eq!(one_line("a\u{2028}b"), "a b");
    }

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncated("short", 10), None);
        let t = truncated("ééééé", 7).unwrap();
        assert!(t.len() <= 7 && t.ends_with('…'), "{t}");
        assert_eq!(t, "éé…");
    }

    #[test]
    fn keys_become_snake_case() {
        let k = |s| snake_case(s, 64).map(Cow::into_owned);
        assert_eq!(k("session_id").as_deref(), Some("session_id"));
        assert_eq!(k("session-id").as_deref(), Some("session_id"));
        assert_eq!(k("gitBranch").as_deref(), Some("git_branch"));
        assert_eq!(k("Weird Key!").as_deref(), Some("weird_key"));
        assert_eq!(k("  __x__y  ").as_deref(), Some("x_y"));
        assert_eq!(k("HTTPStatus").as_deref(), Some("httpstatus"));
        assert_eq!(k("1st"), None);
        assert_eq!(k("!!!"), None);
        assert_eq!(k("ключ"), None);
        assert_eq!(snake_case(&"a".repeat(65), 64), None);
    }

    #[test]
    fn ids_use_the_adapter_alphabet() {
        assert!(is_id("claude-code", 32));
        assert!(!is_id("../../x", 32));
        assert!(!is_id("/tmp/x", 32));
        assert!(!is_id("a\0b", 32));
        assert!(!is_id("-x", 32));
        assert!(!is_id("Chat", 32));
        assert!(!is_id(&"a".repeat(33), 32));
        assert!(!is_id("", 32));
    }
}
