//! Rust source read as text: the files of a crate, the source with
//! comments and literals blanked (so that a path in a comment or a string
//! is not taken for an import), `#[cfg(test)]` items taken out, and the
//! functions with their lengths.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    out
}

/// A file that holds only tests: `tests.rs`, or anything in a `tests/`
/// folder.
pub fn is_test_file(path: &Path) -> bool {
    path.file_stem().is_some_and(|s| s == "tests")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// `text` with comments, string and char literals turned into spaces
/// (line breaks kept, so line numbers hold).
pub fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let end = if b[i..].starts_with(b"//") {
            b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n)
        } else if b[i..].starts_with(b"/*") {
            block_comment_end(b, i)
        } else if let Some(end) = raw_string_end(b, i) {
            end
        } else if b[i] == b'"' {
            string_end(b, i + 1)
        } else if b[i] == b'\'' {
            char_end(b, i).unwrap_or(i + 1)
        } else {
            i + 1
        };
        if end > i + 1 {
            for c in &mut out[i..end] {
                if *c != b'\n' {
                    *c = b' ';
                }
            }
        }
        i = end.max(i + 1);
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn block_comment_end(b: &[u8], start: usize) -> usize {
    let mut depth = 0;
    let mut i = start;
    while i + 1 < b.len() {
        if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// The end of `r"…"`, `r#"…"#`, `br"…"` starting at `i`, if one starts there.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let from = j + 1;
    let n = b[from..]
        .windows(close.len())
        .position(|w| w == close.as_slice())?;
    Some(from + n + close.len())
}

/// The end of a string whose contents start at `i`.
fn string_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of a char literal at `i` (`'a'`, `'\n'`, `'\''`, `'é'`);
/// `None` for a lifetime or a label.
fn char_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i + 1) == Some(&b'\\') {
        let close = b.get(i + 3..)?.iter().take(10).position(|&c| c == b'\'')?;
        return Some(i + 3 + close + 1);
    }
    let width = match *b.get(i + 1)? {
        0..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    };
    let after = i + 1 + width;
    (b.get(after) == Some(&b'\'')).then_some(after + 1)
}

/// [`blank`]ed `text` without its `#[cfg(test)]` items (a test module, a
/// test-only helper), each taken out whole, lines and all.
pub fn without_tests(text: &str) -> String {
    let mut s = blank(text);
    while let Some(at) = s.find("#[cfg(test)]") {
        let end = item_end(&s, at + "#[cfg(test)]".len());
        s.replace_range(at..end, "");
    }
    s
}

/// Where the item after `from` ends: its closing brace at depth 0, or its
/// `;` when it has no body.
fn item_end(s: &str, from: usize) -> usize {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    b.len()
}

pub struct Function {
    pub name: String,
    /// 1-based line of its `fn`.
    pub line: usize,
    /// From the `fn` line to the closing brace's, both counted.
    pub lines: usize,
}

/// Every function with a body in blanked `text`.
pub fn functions(text: &str) -> Vec<Function> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(n) = text[i..].find("fn ") {
        let at = i + n;
        i = at + 3;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let name: String = text[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body opens at the first `{` before any `;` (a declaration).
        let Some(open) = text[at..].find(['{', ';']).map(|k| at + k) else {
            break;
        };
        if b[open] == b';' {
            continue;
        }
        let close = item_end(text, open);
        let line = text[..at].matches('\n').count() + 1;
        let last = text[..close].matches('\n').count() + 1;
        out.push(Function {
            name,
            line,
            lines: last - line + 1,
        });
    }
    out
}
