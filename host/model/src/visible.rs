//! Text for a terminal: characters that a terminal would act on rather than
//! show, made visible.
//!
//! Chat content and adapter metadata come from strangers. Printed as they
//! are, an ESC sequence could clear the screen, set the window title or
//! forge a line, and a bidi override could make text read differently from
//! what it is. Every human-readable output goes through [`visible`]; JSON
//! output stays exact.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as it is: C0 and C1 controls, DEL,
/// and the Unicode bidi embeddings, overrides and isolates.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// The bidi formatting characters: LRE, RLE, PDF, LRO, RLO (U+202A–U+202E),
/// LRI, RLI, FSI, PDI (U+2066–U+2069), and the marks ALM, LRM, RLM.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}' | '\u{200e}' | '\u{200f}'
    )
}

/// `text` with every unsafe character written as an escape: `\x1b` for
/// controls below U+0100, `\u{202e}` for the others. A backslash stays a
/// backslash (the output is for reading, not for parsing back).
pub fn visible(text: &str) -> Cow<'_, str> {
    visible_keeping(text, &[])
}

/// Like [`visible`], but `keep` (e.g. `\n` for multi-line messages) passes
/// as it is.
pub fn visible_keeping<'a>(text: &'a str, keep: &[char]) -> Cow<'a, str> {
    let unsafe_char = |c: char| is_unsafe(c) && !keep.contains(&c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        let s = "héllo — 世界 `code`\\n";
        assert!(matches!(visible(s), Cow::Borrowed(t) if t == s));
    }

    #[test]
    fn controls_and_bidi_overrides_are_escaped() {
        assert_eq!(
            visible("a\u{1b}[2Jb\u{7}\u{202e}c\u{9b}d\u{7f}\n"),
            "a\\x1b[2Jb\\x07\\u{202e}c\\x9bd\\x7f\\x0a"
        );
        assert_eq!(visible("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
    }

    #[test]
    fn kept_characters_pass() {
        assert_eq!(visible_keeping("a\nb\u{1b}", &['\n']), "a\nb\\x1b");
    }
}
