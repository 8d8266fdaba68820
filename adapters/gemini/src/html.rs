//! HTML → clean text without a DOM: paragraphs and block elements become
//! blank-line separated, `<br>` a newline, list items `- ` / `1. ` lines,
//! table cells ` | `-separated, `<pre>` keeps its whitespace, `<script>` and
//! `<style>` are dropped, entities are decoded.

/// Decodes one entity body (between `&` and `;`).
fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse::<u32>().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "emsp" | "ensp" | "thinsp" | "hairsp" => ' ',
        "hellip" => '…',
        "mdash" => '—',
        "ndash" => '–',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "bull" => '•',
        "middot" => '·',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "times" => '×',
        "divide" => '÷',
        "deg" => '°',
        "plusmn" => '±',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "cent" => '¢',
        "sect" => '§',
        "para" => '¶',
        "larr" => '←',
        "rarr" => '→',
        "uarr" => '↑',
        "darr" => '↓',
        "le" => '≤',
        "ge" => '≥',
        "ne" => '≠',
        "minus" => '−',
        "zwj" => '\u{200d}',
        "zwnj" => '\u{200c}',
        _ => return None,
    })
}

/// `s` with entities decoded (unknown ones kept as written).
pub fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let end = after
            .char_indices()
            .take(12)
            .find(|(_, c)| *c == ';')
            .map(|(j, _)| j);
        match end.and_then(|j| entity(&after[..j]).map(|c| (j, c))) {
            Some((j, c)) => {
                out.push(c);
                rest = &after[j + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The output being built, with whitespace discipline.
struct Out {
    s: String,
    pending_space: bool,
}

impl Out {
    fn trim_trailing_spaces(&mut self) {
        while self.s.ends_with([' ', '\t']) {
            self.s.pop();
        }
    }

    /// Ensures the output ends with at least `n` newlines (nothing at the start).
    fn breaks(&mut self, n: usize) {
        self.pending_space = false;
        self.trim_trailing_spaces();
        if self.s.is_empty() {
            return;
        }
        let have = self.s.chars().rev().take_while(|c| *c == '\n').count();
        for _ in have..n {
            self.s.push('\n');
        }
    }

    fn text(&mut self, t: &str, pre: bool) {
        if pre {
            self.s.push_str(t);
            self.pending_space = false;
            return;
        }
        for c in t.chars() {
            if c.is_whitespace() && c != '\u{a0}' {
                self.pending_space = true;
                continue;
            }
            if self.pending_space && !self.s.is_empty() && !self.s.ends_with(['\n', ' ']) {
                self.s.push(' ');
            }
            self.pending_space = false;
            self.s.push(if c == '\u{a0}' { ' ' } else { c });
        }
    }
}

struct ListState {
    ordered: bool,
    next: u32,
}

/// Clean text of an HTML fragment.
pub fn to_text(html: &str) -> String {
    let mut out = Out {
        s: String::with_capacity(html.len() / 2),
        pending_space: false,
    };
    let mut lists: Vec<ListState> = Vec::new();
    let mut pre_depth = 0usize;
    let mut first_cell = true;
    let mut rest = html;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            out.text(&decode_entities(rest), pre_depth > 0);
            break;
        };
        if lt > 0 {
            out.text(&decode_entities(&rest[..lt]), pre_depth > 0);
        }
        let tag_src = &rest[lt..];
        // A comment.
        if let Some(c) = tag_src.strip_prefix("<!--") {
            rest = match c.find("-->") {
                Some(e) => &c[e + 3..],
                None => "",
            };
            continue;
        }
        // `<` not followed by a tag name is text.
        let opens_tag = tag_src[1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!');
        if !opens_tag {
            out.text("<", pre_depth > 0);
            rest = &tag_src[1..];
            continue;
        }
        // The tag's end, respecting quoted attribute values.
        let mut quote: Option<char> = None;
        let mut end = None;
        for (i, ch) in tag_src.char_indices().skip(1) {
            match quote {
                Some(q) if ch == q => quote = None,
                Some(_) => {}
                None if ch == '"' || ch == '\'' => quote = Some(ch),
                None if ch == '>' => {
                    end = Some(i);
                    break;
                }
                None => {}
            }
        }
        let Some(end) = end else {
            // A lone `<`: text.
            out.text("<", pre_depth > 0);
            rest = &tag_src[1..];
            continue;
        };
        let inner = &tag_src[1..end];
        rest = &tag_src[end + 1..];
        let closing = inner.starts_with('/');
        let name: String = inner
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() {
            out.text(&format!("<{inner}>"), pre_depth > 0);
            continue;
        }
        match name.as_str() {
            "script" | "style" | "template" if !closing => {
                let close = format!("</{name}");
                let lower = rest.to_ascii_lowercase();
                rest = match lower.find(&close) {
                    Some(i) => match rest[i..].find('>') {
                        Some(j) => &rest[i + j + 1..],
                        None => "",
                    },
                    None => "",
                };
            }
            "br" => {
                out.trim_trailing_spaces();
                out.s.push('\n');
                out.pending_space = false;
            }
            "p" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "blockquote" | "table" | "hr"
            | "figure" => out.breaks(2),
            "pre" => {
                out.breaks(2);
                if closing {
                    pre_depth = pre_depth.saturating_sub(1);
                } else {
                    pre_depth += 1;
                }
            }
            "ul" | "ol" => {
                if closing {
                    lists.pop();
                    out.breaks(if lists.is_empty() { 2 } else { 1 });
                } else {
                    out.breaks(if lists.is_empty() { 2 } else { 1 });
                    lists.push(ListState {
                        ordered: name == "ol",
                        next: 1,
                    });
                }
            }
            "li" => {
                if closing {
                    out.breaks(1);
                } else {
                    out.breaks(1);
                    let depth = lists.len().saturating_sub(1);
                    for _ in 0..depth {
                        out.s.push_str("  ");
                    }
                    match lists.last_mut() {
                        Some(l) if l.ordered => {
                            out.s.push_str(&format!("{}. ", l.next));
                            l.next += 1;
                        }
                        _ => out.s.push_str("- "),
                    }
                }
            }
            "tr" => {
                out.breaks(1);
                first_cell = true;
            }
            "td" | "th" if !closing => {
                if !first_cell {
                    out.trim_trailing_spaces();
                    out.s.push_str(" | ");
                    out.pending_space = false;
                }
                first_cell = false;
            }
            "div" | "section" | "article" | "header" | "footer" | "dt" | "dd" | "caption"
            | "thead" | "tbody" => out.breaks(1),
            _ => {}
        }
    }
    // Tidy: no trailing spaces on lines, at most one blank line in a row.
    let mut tidy = String::with_capacity(out.s.len());
    let mut blank = 0;
    for line in out.s.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        tidy.push_str(line);
        tidy.push('\n');
    }
    tidy.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_lists_and_entities() {
        let html = "<p>The capital of France is <b>Paris</b> &amp; it&#39;s big.</p><ul><li>One</li><li>Two &lt;2&gt;</li></ul><ol><li>First</li><li>Second</li></ol><p>Bye&nbsp;now</p>";
        assert_eq!(
            to_text(html),
            "The capital of France is Paris & it's big.\n\n- One\n- Two <2>\n\n1. First\n2. Second\n\nBye now"
        );
    }

    #[test]
    fn code_blocks_keep_their_lines() {
        let html = "<p>Run:</p><pre><code class=\"language-rust\">fn main() {\n    println!(&quot;hi&quot;);\n}\n</code></pre><p>Done.</p>";
        assert_eq!(
            to_text(html),
            "Run:\n\nfn main() {\n    println!(\"hi\");\n}\n\nDone."
        );
    }

    #[test]
    fn breaks_tables_scripts_and_nesting() {
        assert_eq!(to_text("a<br>b<br/>c"), "a\nb\nc");
        assert_eq!(
            to_text("<table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>"),
            "A | B\n1 | 2"
        );
        assert_eq!(
            to_text("x<script>var a = '<p>';</script>y<style>p{}</style>"),
            "xy"
        );
        assert_eq!(
            to_text("<ul><li>a<ul><li>b</li></ul></li></ul>"),
            "- a\n  - b"
        );
        assert_eq!(
            to_text("<img src=\"image_agent_tag_1\" alt=\"x > y\">ok"),
            "ok"
        );
        assert_eq!(to_text("1 < 2 and <!-- c --> 3"), "1 < 2 and 3");
        assert_eq!(to_text("unclosed <b"), "unclosed <b");
        assert_eq!(to_text("&bogus; &#x1F600; &#0;"), "&bogus; 😀 &#0;");
        assert_eq!(to_text(""), "");
    }
}
