//! Markdown line helpers: fenced-code tracking.

/// Tracks fenced code blocks (``` or ~~~, three or more, indented at most
/// three spaces) line by line, so structure is never read inside code.
#[derive(Debug, Default, Clone)]
pub struct Fence {
    open: Option<(u8, usize)>,
}

/// The fence marker a line starts with: (character, run length).
fn marker(line: &str) -> Option<(u8, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let n = rest.bytes().take_while(|&b| b == ch).count();
    if n < 3 {
        return None;
    }
    // A backtick fence's info string may not contain backticks.
    if ch == b'`' && rest[n..].contains('`') {
        return None;
    }
    Some((ch, n))
}

impl Fence {
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Feeds a line; returns whether the line is inside a fence or is a fence
    /// line itself (i.e. is code, not structure).
    pub fn line(&mut self, line: &str) -> bool {
        match self.open {
            Some((ch, n)) => {
                if let Some((c2, n2)) = marker(line) {
                    let after = line.trim_start_matches(' ');
                    if c2 == ch && n2 >= n && after[n2..].trim().is_empty() {
                        self.open = None;
                    }
                }
                true
            }
            None => {
                if let Some(m) = marker(line) {
                    self.open = Some(m);
                    true
                } else {
                    false
                }
            }
        }
    }

    pub fn reset(&mut self) {
        self.open = None;
    }
}

/// The info string (language) of a fence opening line, if `line` is one.
pub fn fence_lang(line: &str) -> Option<&str> {
    let (ch, n) = marker(line)?;
    let _ = ch;
    Some(line.trim_start_matches(' ')[n..].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_open_and_close() {
        let mut f = Fence::default();
        let lines = [
            "text",
            "```md",
            "_**User**_",
            "```` not a close",
            "```",
            "after",
            "````",
            "```",
            "````",
            "x",
        ];
        let code: Vec<bool> = lines.iter().map(|l| f.line(l)).collect();
        assert_eq!(
            code,
            [
                false, true, true, true, true, false, true, true, true, false
            ]
        );
        assert_eq!(fence_lang("```bash"), Some("bash"));
        assert_eq!(fence_lang("    ```bash"), None);
        assert_eq!(fence_lang("``inline``"), None);
    }
}
