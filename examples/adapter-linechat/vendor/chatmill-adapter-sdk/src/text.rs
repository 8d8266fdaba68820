//! Small text helpers adapters share: sniffing heads, summarizing tool
//! arguments, cleaning titles.

use std::borrow::Cow;

/// The head as text (lossy: a cut multi-byte character at the end is fine).
pub fn head_str(head: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(head)
}

/// The first non-whitespace byte of `head`, skipping a UTF-8 BOM.
pub fn first_byte(head: &[u8]) -> Option<u8> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    head.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// How many of `needles` occur in `haystack`.
pub fn count_present(haystack: &str, needles: &[&str]) -> usize {
    needles.iter().filter(|n| haystack.contains(*n)).count()
}

/// `s` cut to at most `max` characters on a character boundary, with `…`
/// when cut, and whitespace runs (including newlines) collapsed to one space.
pub fn summarize(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max + 4));
    let mut chars = 0;
    let mut pending_space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            if chars + 1 >= max {
                out.push('…');
                return out;
            }
            out.push(' ');
            chars += 1;
            pending_space = false;
        }
        if chars >= max {
            out.push('…');
            return out;
        }
        out.push(c);
        chars += 1;
    }
    out
}

/// The file name's stem without directories or extension.
pub fn file_stem(name: &str) -> &str {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    match base.rfind('.') {
        Some(0) | None => base,
        Some(i) => &base[..i],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_collapse_whitespace_and_cut_on_char_boundaries() {
        assert_eq!(summarize("  ls   -la\n /tmp ", 80), "ls -la /tmp");
        assert_eq!(summarize("héllo wörld", 5), "héllo…");
        assert_eq!(summarize("", 5), "");
    }

    #[test]
    fn first_byte_skips_bom_and_space() {
        assert_eq!(first_byte(b"\xEF\xBB\xBF  [1]"), Some(b'['));
        assert_eq!(first_byte(b"   "), None);
    }

    #[test]
    fn stems() {
        assert_eq!(file_stem("a/b/session-1.jsonl"), "session-1");
        assert_eq!(file_stem(".hidden"), ".hidden");
        assert_eq!(file_stem("noext"), "noext");
    }
}
