//! The words of a chat as headers read them: tokens and stopwords
//! (English and the function words of five other languages), separators,
//! identifiers, sentence ends, and the text that carries words — without
//! code blocks, the renderer's tool lines or markup tags.

use std::borrow::Cow;

use rustc_hash::FxHashSet;

const STOPWORDS: &str = "a about above after again against all also am an and any are aren as at be because been \
before being below between both but by can cannot could did do does doing don down during each \
few for from further get got had has have having he her here hers herself him himself his how i \
if in into is isn it its itself just let like make me more most my myself need no nor not now of \
off on once only or other our ours ourselves out over own please same she should so some such \
than that the their theirs them themselves then there these they this those through to too under \
until up use used using very want was we were what when where which while who whom why will with \
would you your yours yourself yourselves one two also there's it's i'm can't don't doesn't isn't \
thing things way ways really much many well okay ok yes hi hello thanks thank sure help tell show \
give know think try still even new good best better first \
hey hiya yeah yep yup nope wow oh ah uh um hmm lol haha cool nice great awesome amazing glad sorry \
congrats congratulations totally definitely absolutely super pretty quite gonna wanna gotta kinda sorta \
re ve ll didn doesn isn wasn weren won wouldn couldn shouldn aren haven hasn hadn \
none null nil true false self def";

/// Function words of the other languages chats are most often held in
/// (French, Spanish, German, Italian, Portuguese): "brings in je, que and
/// vous" names nothing. Only a word written in lowercase (or capitalized)
/// is one: "MIT", "EU", "DoS" and "NAS" stay names. Words that are also
/// English words or commands in lowercase are left out (`son`, `die`, `car`,
/// `con`, `sin`, `war`, `bin`, `hat`, `dir`, `ai`, `par`, `sans`, `man`,
/// `red`, `os`, `su`, `del`, `lo`, `sim`, `den`, `pour`, `hay`, `ton`,
/// `tout`, `uno`, `chi`, `em`, `sous`).
const FOREIGN_STOPWORDS: &str = "je tu il elle nous vous ils elles le la les un une des du de et que qui quoi \
est sont pas ne ce cette ces cet mon ma mes tes ses notre nos votre vos leur leurs mais ou où donc \
dans sur avec chez au aux être avoir fait faire peux peut veux avez avons suis sommes êtes était \
aussi comme très bien tous toute toutes oui non merci bonjour salut voici voilà en qu \
aujourd hui puis-je est-ce \
el los las una unos unas por para como pero es está están este esta esto estos estas yo tú usted \
ustedes él ella ellos nosotros mi mis sus muy más también ser estar tiene tengo puedo puede quiero \
hola gracias sí se al cómo qué \
der das und ist nicht ich sie wir ihr ein eine einen einem einer mit für auf dem zu von im oder aber \
wenn auch noch nur wie kann können habe haben wird werden sind bitte danke hallo ja nein zum zur vom beim \
dass sich mich mir uns euch sein seine ihre dieser diese dieses gibt wo \
gli di che è sono sei ho hai ha abbiamo questo questa quello quella anche molto grazie ciao sì più \
della dei delle nel nella alla tra fra \
um uma uns umas do da dos das na nas mas são estão eu você vocês ele eles meu minha seu sua \
muito obrigado obrigada olá não isso isto esse essa aquilo";

/// The stopwords, and which first two bytes each length of them starts
/// with: a word whose length and first two bytes no stopword has (most
/// content words) is known not to be one without hashing it. (By the first
/// byte alone, a third of an import's words would be hashed to find out.)
struct Stopwords {
    set: FxHashSet<&'static str>,
    /// Bit `(a % 64) * 64 + b % 64` of `starts[len]`, as 64 words: a
    /// stopword of `len` bytes starts with the bytes `a`, `b` (`b` is 0 for
    /// a word of one byte).
    starts: Vec<[u64; 64]>,
}

impl Stopwords {
    #[inline]
    fn bit(word: &[u8]) -> Option<(usize, u64)> {
        let (&a, b) = (word.first()?, word.get(1).copied().unwrap_or(0));
        Some((usize::from(a % 64), 1 << (b % 64)))
    }

    #[inline]
    fn contains(&self, lower: &str) -> bool {
        let (Some((row, bit)), Some(starts)) =
            (Self::bit(lower.as_bytes()), self.starts.get(lower.len()))
        else {
            return false;
        };
        starts[row] & bit != 0 && self.set.contains(lower)
    }

    fn of(words: &'static str) -> Self {
        let set: FxHashSet<&'static str> = words.split_whitespace().collect();
        let mut starts = vec![[0u64; 64]; set.iter().map(|w| w.len()).max().unwrap_or(0) + 1];
        for w in &set {
            if let Some((row, bit)) = Self::bit(w.as_bytes()) {
                starts[w.len()][row] |= bit;
            }
        }
        Stopwords { set, starts }
    }
}

#[inline]
fn stopwords() -> &'static Stopwords {
    static SET: std::sync::OnceLock<Stopwords> = std::sync::OnceLock::new();
    SET.get_or_init(|| Stopwords::of(STOPWORDS))
}

#[inline]
fn foreign_stopwords() -> &'static Stopwords {
    static SET: std::sync::OnceLock<Stopwords> = std::sync::OnceLock::new();
    SET.get_or_init(|| Stopwords::of(FOREIGN_STOPWORDS))
}

/// Whether the word `t` (lowercased: `lower`; `upper_after_first`: it has
/// a capital past its first char, as acronyms do) is a stopword.
#[inline]
pub(super) fn is_stopword(lower: &str, upper_after_first: bool) -> bool {
    stopwords().contains(lower) || (!upper_after_first && foreign_stopwords().contains(lower))
}

#[inline]
pub(super) fn upper_after_first(t: &str) -> bool {
    if t.is_ascii() {
        t.as_bytes().iter().skip(1).any(u8::is_ascii_uppercase)
    } else {
        t.chars().skip(1).any(char::is_uppercase)
    }
}

/// ASCII separators (whitespace, control characters and punctuation that
/// never sits inside a word or an identifier), as a table: this runs on
/// every character.
const ASCII_SEPARATORS: [bool; 128] = {
    let mut table = [false; 128];
    // C0 controls (whitespace among them) and DEL: a chat's text can hold
    // terminal escapes, which are in no word.
    let mut c = 0;
    while c < 0x20 {
        table[c] = true;
        c += 1;
    }
    table[0x7f] = true;
    let seps = b" ,;:!?()[]{}\"'`<>|*=";
    let mut i = 0;
    while i < seps.len() {
        table[seps[i] as usize] = true;
        i += 1;
    }
    table
};

#[inline]
pub(super) fn is_separator(c: char) -> bool {
    if c.is_ascii() {
        ASCII_SEPARATORS[c as usize]
    } else {
        // Typographic quotes and apostrophes split as their ASCII forms do
        // ("they’re" is "they" and a contraction's tail, both stopwords), and
        // Spanish opening marks as `?` and `!` do ("¿cómo" is "cómo"); C1
        // controls as C0 controls do.
        c.is_whitespace()
            || c.is_control()
            || matches!(
                c,
                '\u{2018}' | '\u{2019}' | '\u{201C}' | '\u{201D}' | '\u{BF}' | '\u{A1}'
            )
    }
}

/// The pieces of `text` between separators, as `text.split(is_separator)`
/// finds them: a byte scan that decodes only non-ASCII chars (the split's
/// char-by-char search would be most of the tokenizer's time).
#[inline]
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos > b.len() {
            return None;
        }
        let start = pos;
        let mut i = pos;
        while i < b.len() {
            let (sep, width) = if b[i].is_ascii() {
                (ASCII_SEPARATORS[usize::from(b[i])], 1)
            } else {
                // `i` is on a char boundary: ASCII bytes and whole chars
                // are all that is stepped over.
                let c = text[i..].chars().next().unwrap_or_default();
                (is_separator(c), c.len_utf8())
            };
            if sep {
                pos = i + width;
                return Some(&text[start..i]);
            }
            i += width;
        }
        pos = b.len() + 1;
        Some(&text[start..])
    })
}

/// Words, keeping identifiers (`src/totals.rs`, `snake_case`, `C++`) whole.
#[inline]
pub(super) fn tokens(text: &str) -> impl Iterator<Item = &str> {
    pieces(text)
        .map(|t| t.trim_matches(['.', '-', '#']))
        .filter(|t| {
            if t.is_ascii() {
                t.len() >= 2 && t.bytes().any(|b| b.is_ascii_alphabetic())
            } else {
                let mut chars = t.chars();
                chars.next().is_some()
                    && chars.next().is_some()
                    && t.chars().any(char::is_alphabetic)
            }
        })
}

#[inline]
pub(super) fn is_identifier(t: &str) -> bool {
    let b = t.as_bytes();
    b.iter().any(|b| matches!(b, b'_' | b'/' | b'.'))
        || if t.is_ascii() {
            b.iter().skip(1).any(u8::is_ascii_uppercase)
        } else {
            t.chars().skip(1).any(char::is_uppercase)
        }
}

/// `t` lowercased, borrowed when it already is.
#[inline]
pub(super) fn lowercase(t: &str) -> Cow<'_, str> {
    let upper = if t.is_ascii() {
        t.bytes().any(|b| b.is_ascii_uppercase())
    } else {
        t.chars().any(char::is_uppercase)
    };
    match (upper, t.is_ascii()) {
        (false, _) => Cow::Borrowed(t),
        (true, true) => Cow::Owned(t.to_ascii_lowercase()),
        (true, false) => Cow::Owned(t.to_lowercase()),
    }
}

/// The longest prefix of `s` with at most `n` chars.
#[inline]
pub(super) fn prefix_chars(s: &str, n: usize) -> &str {
    // No more bytes than `n`: no more chars either (most texts).
    if s.len() <= n {
        return s;
    }
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// Where the first sentence of `text` ends: after the first `.`, `?` or `!`
/// that whitespace follows; else the end, as if the text's whitespace were
/// folded first. Found in the text as it is: folding a whole long text
/// would copy it per call.
pub(super) fn sentence_end(text: &str) -> usize {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(i) = b[from..]
        .iter()
        .position(|c| matches!(c, b'.' | b'?' | b'!'))
        .map(|i| from + i)
    {
        if text[i + 1..].starts_with(char::is_whitespace) {
            return i + 1;
        }
        from = i + 1;
    }
    text.len()
}

/// How much of a reply its topics are drawn from.
pub(super) const REPLY_CHARS: usize = 4000;

/// `text` without fenced code blocks (the fences and what is between
/// them; an unclosed fence runs to the end), borrowed when it has none.
fn without_code(text: &str) -> Cow<'_, str> {
    if !text.contains("```") && !text.contains("~~~") {
        return Cow::Borrowed(text);
    }
    let mut kept = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        match fence {
            Some(f) => {
                if t.starts_with(f) {
                    fence = None;
                }
            }
            None => match crate::render::fence_opened(t) {
                Some(f) => fence = Some(f),
                None => kept.push_str(line),
            },
        }
    }
    Cow::Owned(kept)
}

/// What a text says in words: without the one-line tool summaries the
/// renderer writes (`[Tool: …]`, `[Tool result: …]`) and without code
/// blocks ("The user asked: \"```python import numpy…\"" says nothing).
/// A text of code alone says nothing in words (empty); one of tool
/// summaries alone is summarized by them.
pub(super) fn prose(text: &str) -> Cow<'_, str> {
    let words = without_code(text);
    if words.trim().is_empty() {
        return Cow::Borrowed("");
    }
    if !words.contains("[Tool") {
        return words;
    }
    let kept: Vec<&str> = words.lines().filter(|l| tool_line(l).is_none()).collect();
    if kept.iter().all(|l| l.trim().is_empty()) {
        words
    } else {
        Cow::Owned(kept.join("\n"))
    }
}

/// A line the renderer wrote for a tool: a call (`[Tool: Bash grep -rn
/// TODO]`, as its name and summary) or a result (`[Tool result: …]`).
enum ToolLine<'a> {
    Call(&'a str),
    Result,
}

fn tool_line(line: &str) -> Option<ToolLine<'_>> {
    let inner = line.trim().strip_prefix("[Tool")?.strip_suffix(']')?;
    if let Some(call) = inner.strip_prefix(": ") {
        Some(ToolLine::Call(call))
    } else if inner.starts_with(" result: ") {
        Some(ToolLine::Result)
    } else {
        None
    }
}

/// A reply as its terms are drawn from: a tool call's line as the call
/// (`Bash grep -rn TODO`, not the word "Tool"), a tool result's line left
/// out — what a tool printed ("has been updated successfully", "^C again to
/// exit") is not what the reply brings in — and markup tags in code blocks
/// left out (an HTML artifact "brings in div class" otherwise). Borrowed
/// when there is nothing to leave out.
pub(super) fn term_text(text: &str) -> Cow<'_, str> {
    let tools = text.contains("[Tool");
    let markup = text.contains('<') && (text.contains("```") || text.contains("~~~"));
    if !tools && !markup {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(4 * REPLY_CHARS + 64));
    let mut fence: Option<&str> = None;
    // Inside a tag that spans lines (`<div\n  class="x"\n>`).
    let mut in_tag = false;
    for line in text.split_inclusive('\n') {
        // Terms are drawn from the first `REPLY_CHARS` chars: this many
        // bytes hold them all.
        if out.len() >= 4 * REPLY_CHARS {
            break;
        }
        // The renderer's tool lines first: a fence the text left open does
        // not make them code.
        match tool_line(line) {
            Some(ToolLine::Call(call)) => {
                // A stopword after each call: one call's last word and the
                // next's first ("Edit" twice) are no phrase.
                out.push_str(call);
                out.push_str(" and\n");
                continue;
            }
            Some(ToolLine::Result) => continue,
            None => {}
        }
        let t = line.trim_start();
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
                in_tag = false;
                out.push_str(line);
            } else {
                in_tag = without_tags(line, in_tag, &mut out);
            }
        } else if let Some(f) = crate::render::fence_opened(t) {
            fence = Some(f);
            out.push_str(line);
        } else {
            out.push_str(line);
        }
    }
    Cow::Owned(out)
}

/// `line` onto `out` without its markup tags (`<div class="x">`, `</p>`,
/// `<!DOCTYPE html>`): from a `<` that opens a tag (not `Vec<String>`, not
/// `a < b`) up to the next `>`. `in_tag`: the line starts inside a tag an
/// earlier line opened; the result: it ends inside one.
fn without_tags(line: &str, in_tag: bool, out: &mut String) -> bool {
    let b = line.as_bytes();
    let mut i = 0;
    if in_tag {
        match tag_end(line) {
            Some(end) => i = end + 1,
            None => return true,
        }
        out.push(' ');
    }
    let mut kept = i;
    while i < b.len() {
        let next = |n: usize| b.get(i + n).copied().unwrap_or(b' ');
        // `</p>` closes a tag wherever it is; `<p` opens one unless it
        // follows a word (`Vec<String>`) or another `<` (a heredoc's
        // `<<EOF`, a shift), and only as a whole name (`<p>`, `<div `, a
        // line's end): `i <n;` compares.
        let closes = next(1) == b'/' && next(2).is_ascii_alphabetic();
        let opens = matches!(next(1), b'!' | b'?')
            || (next(1).is_ascii_alphabetic() && names_a_tag(&b[i + 1..]));
        let after_word_or_lt =
            i > 0 && (b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'_' | b'<'));
        let starts_tag = b[i] == b'<' && (closes || (opens && !after_word_or_lt));
        if !starts_tag {
            i += 1;
            continue;
        }
        out.push_str(&line[kept..i]);
        out.push(' ');
        match tag_end(&line[i..]) {
            Some(end) => i += end + 1,
            None => return true,
        }
        kept = i;
    }
    out.push_str(&line[kept..]);
    false
}

/// Where the tag `text` is in ends: its first `>` outside quotes and JSX
/// braces (`onClick={() => go()}` holds an arrow, not the tag's end).
fn tag_end(text: &str) -> Option<usize> {
    let (mut braces, mut quote) = (0u32, None::<u8>);
    for (i, &c) in text.as_bytes().iter().enumerate() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(c),
            (None, b'{') => braces += 1,
            (None, b'}') => braces = braces.saturating_sub(1),
            (None, b'>') if braces == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// Whether `rest` (what follows a `<`) starts with a tag's name that ends
/// as a tag's does: at a space, `>`, `/` or the line's end.
fn names_a_tag(rest: &[u8]) -> bool {
    let name = rest
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'-' | b':' | b'.')))
        .unwrap_or(rest.len());
    rest.get(name)
        .is_none_or(|c| c.is_ascii_whitespace() || matches!(c, b'>' | b'/'))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn the_separator_table_is_the_separator_set() {
        let listed = |c: char| {
            c.is_whitespace()
                || c.is_control()
                || matches!(
                    c,
                    ',' | ';'
                        | ':'
                        | '!'
                        | '?'
                        | '('
                        | ')'
                        | '['
                        | ']'
                        | '{'
                        | '}'
                        | '"'
                        | '\''
                        | '`'
                        | '<'
                        | '>'
                        | '|'
                        | '*'
                        | '='
                        | '¿'
                        | '¡'
                        | '\u{2018}'
                        | '\u{2019}'
                        | '\u{201C}'
                        | '\u{201D}'
                )
        };
        for c in (0..=0x3000u32).filter_map(char::from_u32) {
            assert_eq!(is_separator(c), listed(c), "{c:?}");
        }
    }

    #[test]
    fn the_stopword_check_is_the_sets() {
        let stop = stopwords();
        let words = STOPWORDS
            .split_whitespace()
            .chain(FOREIGN_STOPWORDS.split_whitespace())
            .chain([
                "",
                "a",
                "ab",
                "about",
                "abouts",
                "x",
                "nginx",
                "sourdough",
                "é",
                "ü",
                "don’t",
                "\u{212a}",
            ]);
        let foreign = foreign_stopwords();
        for w in words.chain(TERM_TEXTS.iter().flat_map(|t| t.split(' '))) {
            assert_eq!(stop.contains(w), stop.set.contains(w), "{w:?}");
            assert_eq!(foreign.contains(w), foreign.set.contains(w), "{w:?}");
        }
        // Another language's function word is one only as a word, not as
        // an acronym.
        assert!(is_stopword("mit", false));
        assert!(!is_stopword("mit", true));
        assert!(is_stopword("the", true));
    }

    #[test]
    fn control_characters_separate_words() {
        // A chat's text can hold terminal escapes (ESC, BEL, a C1 CSI, DEL,
        // NUL): they split words as whitespace does and are in none.
        let text = "clear\u{1b}[2J\u{1b}]0;pwned\u{7}bell\u{9b}31mred\u{7f}del\u{0}nul";
        assert_eq!(
            tokens(text).collect::<Vec<_>>(),
            ["clear", "2J", "pwned", "bell", "31mred", "del", "nul"]
        );
    }

    #[test]
    fn markup_tags_are_left_out_and_code_holds_no_tags() {
        // An HTML artifact brings in what its page says, not its tags;
        // generics and comparisons in code are no tags.
        let mut out = String::new();
        let open = without_tags(
            "  <div class=\"calc\"><label for=\"n\">Input tokens</label></div> <!DOCTYPE html>\n",
            false,
            &mut out,
        );
        assert!(!open);
        assert_eq!(
            out.split_whitespace().collect::<Vec<_>>(),
            ["Input", "tokens"]
        );
        for code in [
            "let v: Vec<String> = x;\n",
            "if a < b && c > d {\n",
            "for (i = 0; i <n; i++) {\n",
            "cat <<EOF > notes.txt\n",
            "x = y <<2;\n",
        ] {
            let mut out = String::new();
            assert!(!without_tags(code, false, &mut out));
            assert_eq!(out, code);
        }
        // An arrow in a JSX attribute does not end its tag.
        let mut out = String::new();
        assert!(!without_tags(
            "<button onClick={() => save(\"a>b\")} title='x > y'>Save draft</button>\n",
            false,
            &mut out
        ));
        assert_eq!(
            out.split_whitespace().collect::<Vec<_>>(),
            ["Save", "draft"]
        );
        // A heredoc in a code block leaves the lines after it as they are
        // (`<<EOF` opens no tag running to the next `>`), and
        // `#include <vector>` loses only its tag.
        let reply = "Run this:\n\n```sh\ncat <<EOF\nexport NGINX_PORT=8080\nEOF\n```\n\nThen `#include <vector>` in the header.\n";
        assert!(
            term_text(reply).contains("NGINX_PORT"),
            "{}",
            term_text(reply)
        );
        let mut out = String::new();
        assert!(!without_tags("#include <vector>\n", false, &mut out));
        assert_eq!(out.split_whitespace().collect::<Vec<_>>(), ["#include"]);
        // A tag over three lines: its attributes are tags too.
        let mut out = String::new();
        let mut open = false;
        for line in [
            "<div\n",
            "  className=\"calc\" onClick={go}\n",
            "  >Total</div>\n",
        ] {
            open = without_tags(line, open, &mut out);
        }
        assert!(!open);
        assert_eq!(out.split_whitespace().collect::<Vec<_>>(), ["Total"]);
    }

    /// Texts that exercise the tokenizer and the ranking: identifiers,
    /// case, stopwords between words, a word twice in a row, typographic
    /// quotes, non-ASCII separators and letters, score ties.
    pub(in crate::header) const TERM_TEXTS: &[&str] = &[
        "",
        "a",
        "Why does my sourdough starter smell like acetone? The starter is hungry.",
        "bye bye, bye bye — ha ha ha",
        "src/totals.rs divides by zero in total_items(); see C++ and snake_case",
        "They’re “quoted” and it's fine: nginx nginx upstream timeout (504)",
        "Größe naïve café — 東京タワー\u{a0}tower\u{2003}tower emoji 🙂 x",
        "alpha beta gamma delta alpha beta gamma delta",
        "--flag #tag .dotted. -dash- __init__ A.B Kelvin\u{212a}",
        "The nail polish remover and the polish remover; nail polish again",
        "Hey Gina! Yep, Melanie! Great Mel, so cool",
        // More terms than are sorted first, and a word in all the phrases
        // that lead: the three come from past the first sixteen.
        "nginx alpha nginx beta nginx gamma nginx delta nginx epsilon nginx zeta nginx eta \
         nginx theta nginx iota nginx kappa nginx lambda nginx mu nginx nu nginx xi nginx omicron",
        "ant bee cat dog eel fox gnu hen ibis jay kite lynx mole newt owl puma quail rat seal toad",
    ];
}
