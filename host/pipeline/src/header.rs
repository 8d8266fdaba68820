//! Contextual headers and topic tags: 2–4 sentences written for the moment a
//! chunk is retrieved (what the exchange is about, what the user wanted,
//! the prior context it needs, platform and date) and 1–3 specific topics.
//!
//! [`HeaderWriter`] is the seam: the built-in [`ExtractiveWriter`] needs no
//! network and no model; an LLM writer for OpenAI-compatible endpoints plugs
//! in behind the same trait.

use chrono::{DateTime, Utc};
use std::borrow::Cow;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::render::one_line;

/// What a header is written from. Everything comes from the same
/// conversation: context never bleeds between files.
#[derive(Debug, Clone, Default)]
pub struct HeaderInput<'a> {
    pub platform: &'a str,
    pub title: Option<&'a str>,
    pub date: Option<DateTime<Utc>>,
    /// Plain text of the chunk's user prompts.
    pub user: &'a str,
    /// The chunk's assistant text.
    pub assistant: &'a str,
    /// `"3"` or `"3-4"`, and how many pairs the conversation has.
    pub turn_range: &'a str,
    pub total_pairs: u32,
    /// The preceding chunk of the same conversation, if any.
    pub previous: Option<&'a Previous>,
    /// Words most requests of the conversation share (the instruction every
    /// call of a batch repeats): they name no exchange, so no topic uses
    /// them. Empty for a dialogue.
    pub common: &'a [String],
    /// The conversation is separate calls (`pairs: independent`: a batch,
    /// a call log), not one dialogue.
    pub independent: bool,
}

/// What a header may say about the preceding exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previous {
    pub topics: Vec<String>,
    pub request: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub context: String,
    pub topics: Vec<String>,
    /// A stand-in (the model missed its deadline or failed): the chunk is
    /// written with it and queued for the real header later.
    pub backfill: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("header model did not answer in time")]
    Timeout,
    #[error("header model failed: {0}")]
    Failed(String),
}

pub trait HeaderWriter: Send + Sync {
    fn write(&self, input: &HeaderInput<'_>) -> Result<Header, HeaderError>;
}

/// Writes headers from the exchange itself: the title, the user's own
/// request (quoted), the most salient terms, and the preceding exchange's
/// topic. Deterministic, no network, no model.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractiveWriter;

/// "a" or "an" before a platform's name, by how it is said ("an API", "a
/// ChatGPT"): an initialism read letter by letter starts with a vowel sound
/// when its first letter's name does.
fn article(name: &str) -> &'static str {
    let letters: String = name.chars().take_while(char::is_ascii_alphabetic).collect();
    let initialism = letters.len() > 1 && letters.chars().all(|c| c.is_ascii_uppercase());
    let first = letters.chars().next().map(|c| c.to_ascii_lowercase());
    let vowel = if initialism {
        matches!(
            first,
            Some('a' | 'e' | 'f' | 'h' | 'i' | 'l' | 'm' | 'n' | 'o' | 'r' | 's' | 'x')
        )
    } else {
        matches!(first, Some('a' | 'e' | 'i' | 'o' | 'u'))
    };
    if vowel { "an" } else { "a" }
}

fn platform_name(p: &str) -> &str {
    match p {
        "chatgpt" => "ChatGPT",
        "claude" => "Claude.ai",
        "gemini" => "Gemini",
        "claude-code" => "Claude Code",
        "api" => "API",
        "local" => "local session",
        other => other,
    }
}

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
/// byte alone, a third of an import's words were hashed to find out.)
struct Stopwords {
    set: FxHashSet<&'static str>,
    /// Bit `(a % 64) * 64 + b % 64` of `starts[len]`, as 64 words: a
    /// stopword of `len` bytes starts with the bytes `a`, `b` (`b` is 0 for
    /// a word of one byte).
    starts: Vec<[u64; 64]>,
}

impl Stopwords {
    fn bit(word: &[u8]) -> Option<(usize, u64)> {
        let (&a, b) = (word.first()?, word.get(1).copied().unwrap_or(0));
        Some((usize::from(a % 64), 1 << (b % 64)))
    }

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

fn stopwords() -> &'static Stopwords {
    static SET: std::sync::OnceLock<Stopwords> = std::sync::OnceLock::new();
    SET.get_or_init(|| Stopwords::of(STOPWORDS))
}

fn foreign_stopwords() -> &'static Stopwords {
    static SET: std::sync::OnceLock<Stopwords> = std::sync::OnceLock::new();
    SET.get_or_init(|| Stopwords::of(FOREIGN_STOPWORDS))
}

/// Whether the word `t` (lowercased: `lower`; `upper_after_first`: it has
/// a capital past its first char, as acronyms do) is a stopword.
fn is_stopword(lower: &str, upper_after_first: bool) -> bool {
    stopwords().contains(lower) || (!upper_after_first && foreign_stopwords().contains(lower))
}

fn upper_after_first(t: &str) -> bool {
    if t.is_ascii() {
        t.as_bytes().iter().skip(1).any(u8::is_ascii_uppercase)
    } else {
        t.chars().skip(1).any(char::is_uppercase)
    }
}

/// ASCII separators (whitespace and punctuation that never sits inside a
/// word or an identifier), as a table: this runs on every character.
const ASCII_SEPARATORS: [bool; 128] = {
    let mut table = [false; 128];
    let seps = b" \t\n\r\x0b\x0c,;:!?()[]{}\"'`<>|*=";
    let mut i = 0;
    while i < seps.len() {
        table[seps[i] as usize] = true;
        i += 1;
    }
    table
};

fn is_separator(c: char) -> bool {
    if c.is_ascii() {
        ASCII_SEPARATORS[c as usize]
    } else {
        // Typographic quotes and apostrophes split as their ASCII forms do
        // ("they’re" is "they" and a contraction's tail, both stopwords), and
        // Spanish opening marks as `?` and `!` do ("¿cómo" is "cómo").
        c.is_whitespace()
            || matches!(
                c,
                '\u{2018}' | '\u{2019}' | '\u{201C}' | '\u{201D}' | '\u{BF}' | '\u{A1}'
            )
    }
}

/// The pieces of `text` between separators, as `text.split(is_separator)`
/// finds them: a byte scan that decodes only non-ASCII chars (the split's
/// char-by-char search was most of the tokenizer's time).
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
fn tokens(text: &str) -> impl Iterator<Item = &str> {
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

fn is_identifier(t: &str) -> bool {
    let b = t.as_bytes();
    b.iter().any(|b| matches!(b, b'_' | b'/' | b'.'))
        || if t.is_ascii() {
            b.iter().skip(1).any(u8::is_ascii_uppercase)
        } else {
            t.chars().skip(1).any(char::is_uppercase)
        }
}

/// `t` lowercased, borrowed when it already is.
fn lowercase(t: &str) -> Cow<'_, str> {
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
fn prefix_chars(s: &str, n: usize) -> &str {
    // No more bytes than `n`: no more chars either (most texts).
    if s.len() <= n {
        return s;
    }
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// Where the first sentence of `text` ends: after the first `.`, `?` or `!`
/// that whitespace follows; else the end. (Found in the text as it is:
/// folding the whitespace of a whole long text first was a copy per call.)
fn sentence_end(text: &str) -> usize {
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
const REPLY_CHARS: usize = 4000;

/// A token as it counts for topics: identifiers as written (and flagged),
/// other words lowercased; `None` for a stopword, which also ends a phrase.
type Key<'a> = Option<(Cow<'a, str>, bool)>;

fn keys(text: &str) -> Vec<Key<'_>> {
    tokens(text)
        .map(|t| {
            if t.is_ascii() {
                // One pass over the bytes for what `lowercase` and
                // `is_identifier` would each scan for.
                let b = t.as_bytes();
                let upper_after_first = b[1..].iter().any(u8::is_ascii_uppercase);
                let lower = if upper_after_first || b[0].is_ascii_uppercase() {
                    Cow::Owned(t.to_ascii_lowercase())
                } else {
                    Cow::Borrowed(t)
                };
                return if is_stopword(&lower, upper_after_first) {
                    None
                } else if upper_after_first || b.iter().any(|b| matches!(b, b'_' | b'/' | b'.')) {
                    Some((Cow::Borrowed(t), true))
                } else {
                    Some((lower, false))
                };
            }
            let lower = lowercase(t);
            if is_stopword(&lower, upper_after_first(t)) {
                None
            } else if is_identifier(t) {
                Some((Cow::Borrowed(t), true))
            } else {
                Some((lower, false))
            }
        })
        .collect()
}

/// The words (lowercase, stopwords left out) that more than half of
/// `prompts` contain, sorted; nothing for fewer than three prompts.
pub fn common_terms(prompts: &[&str]) -> Vec<String> {
    if prompts.len() < 3 {
        return Vec::new();
    }
    let mut counts: FxHashMap<String, usize> = FxHashMap::default();
    for p in prompts {
        let words: FxHashSet<String> = keys(p)
            .into_iter()
            .flatten()
            .map(|(k, _)| k.to_lowercase())
            .collect();
        for w in words {
            *counts.entry(w).or_default() += 1;
        }
    }
    let mut common: Vec<String> = counts
        .into_iter()
        .filter(|(_, n)| 2 * n > prompts.len())
        .map(|(w, _)| w)
        .collect();
    common.sort_unstable();
    common
}

/// 1–3 topics: the most salient terms and two-word phrases of the request,
/// weighted by the title and the answer.
pub fn topics(title: Option<&str>, user: &str, assistant: &str) -> Vec<String> {
    let assistant = term_text(assistant);
    let reply = keys(prefix_chars(&assistant, REPLY_CHARS));
    Terms::of(title, user, &reply).subject(&[], None)
}

/// Term scores of one exchange, in one pass over its words: each word
/// counts its source's weight (identifiers 1.5×), each two-word phrase
/// 1.6×. Two scores per term: as a topic of the exchange (title 2, request
/// 3, reply 0.5) and as something the reply brings (reply 3).
///
/// Words are numbered as first met and phrases kept as pairs of numbers: a
/// phrase's text is made only for the few that score enough to rank.
struct Terms<'a> {
    // Short keys, hashed a lot: FxHash (no DoS concern in local text).
    ids: FxHashMap<Cow<'a, str>, u32>,
    words: Vec<[f64; 2]>,
    pairs: FxHashMap<(u32, u32), [f64; 2]>,
}

impl<'a> Terms<'a> {
    fn of(title: Option<&'a str>, user: &'a str, reply: &[Key<'a>]) -> Self {
        let title = keys(title.unwrap_or(""));
        let user = keys(user);
        let n = title.len() + user.len() + reply.len();
        let mut terms = Self {
            ids: FxHashMap::with_capacity_and_hasher(n, Default::default()),
            words: Vec::with_capacity(n),
            pairs: FxHashMap::with_capacity_and_hasher(n, Default::default()),
        };
        terms.add(&title, [2.0, 0.0]);
        terms.add(&user, [3.0, 0.0]);
        terms.add(reply, [0.5, 3.0]);
        terms
    }

    #[allow(
        clippy::ptr_arg,
        reason = "a borrowed word is kept borrowed: the `Cow` is what is cloned"
    )]
    fn id(&mut self, k: &Cow<'a, str>) -> u32 {
        if let Some(&id) = self.ids.get(k.as_ref()) {
            return id;
        }
        let id = self.words.len() as u32;
        self.ids.insert(k.clone(), id);
        self.words.push([0.0; 2]);
        id
    }

    fn add(&mut self, keys: &[Key<'a>], weight: [f64; 2]) {
        let mut before: Option<u32> = None;
        for k in keys {
            let Some((k, ident)) = k else {
                before = None;
                continue;
            };
            let id = self.id(k);
            let by = if *ident { 1.5 } else { 1.0 };
            let v = &mut self.words[id as usize];
            v[0] += weight[0] * by;
            v[1] += weight[1] * by;
            if let Some(first) = before {
                let v = self.pairs.entry((first, id)).or_insert([0.0; 2]);
                v[0] += weight[0] * 1.6;
                v[1] += weight[1] * 1.6;
            }
            before = Some(id);
        }
    }

    /// The exchange's 1–3 topics, none with a word of `common`.
    fn topics(&self, common: &[String]) -> Vec<String> {
        self.best(0, common)
    }

    /// The reply's own 1–3 terms.
    fn brought(&self, common: &[String]) -> Vec<String> {
        self.best(1, common)
    }

    /// The exchange's topics, else those of the exchange it continues
    /// (`previous`): a reply to something said before ("not true", "do
    /// it") names no subject of its own. Else, a request that names nothing
    /// ("hi") continuing nothing: what the reply takes up.
    fn subject(&self, common: &[String], previous: Option<&[String]>) -> Vec<String> {
        let topics = self.topics(common);
        if !topics.is_empty() {
            return topics;
        }
        match previous {
            Some(p) if !p.is_empty() => p.to_vec(),
            _ => self.brought(common),
        }
    }

    /// The best 1–3 terms by score `slot`, none under 1.5, none with a word
    /// of `common`, no two sharing a word ("polish remover" after "nail
    /// polish": three distinct terms say more).
    fn best(&self, slot: usize, common: &[String]) -> Vec<String> {
        let mut names = vec![""; self.words.len()];
        for (name, &id) in &self.ids {
            names[id as usize] = name.as_ref();
        }
        // Words of `common` by number (empty when there are none).
        let shared: Vec<bool> = if common.is_empty() {
            Vec::new()
        } else {
            names
                .iter()
                .map(|w| common.iter().any(|c| c.eq_ignore_ascii_case(w)))
                .collect()
        };
        let is_shared = |id: u32| shared.get(id as usize).copied().unwrap_or(false);
        // A term as its words' numbers: a phrase is two, a word one and
        // `ONE` ("bye bye" is a phrase of one word twice).
        const ONE: u32 = u32::MAX;
        let mut ranked: Vec<([u32; 2], f64)> = self
            .words
            .iter()
            .enumerate()
            .map(|(id, s)| ([id as u32, ONE], s[slot]))
            .chain(self.pairs.iter().map(|(&(a, b), s)| ([a, b], s[slot])))
            .filter(|&([a, b], s)| s >= 1.5 && !is_shared(a) && !is_shared(b))
            .collect();
        // By score, then as the terms' texts sort (compared without making
        // them: a phrase is its words with a space between).
        let text = |[a, b]: [u32; 2]| {
            let (space, second): (&[u8], &[u8]) = match b {
                ONE => (b"", b""),
                b => (b" ", names[b as usize].as_bytes()),
            };
            names[a as usize]
                .as_bytes()
                .iter()
                .chain(space)
                .chain(second)
        };
        let order = |x: &([u32; 2], f64), y: &([u32; 2], f64)| {
            y.1.total_cmp(&x.1).then_with(|| text(x.0).cmp(text(y.0)))
        };
        // Three are picked, rarely from past the first few: those are
        // sorted first, the rest only if they are needed (a long reply's
        // every word and phrase ranks here).
        const FIRST: usize = 16;
        let sorted = if ranked.len() > FIRST {
            ranked.select_nth_unstable_by(FIRST - 1, order);
            FIRST
        } else {
            ranked.len()
        };
        ranked[..sorted].sort_unstable_by(order);
        let mut out: Vec<[u32; 2]> = Vec::new();
        for i in 0..ranked.len() {
            if i == sorted {
                ranked[sorted..].sort_unstable_by(order);
            }
            let term = ranked[i].0;
            let words = |t: [u32; 2]| t.into_iter().filter(|&w| w != ONE);
            if out
                .iter()
                .any(|&o| words(o).any(|w| words(term).any(|x| x == w)))
            {
                continue;
            }
            out.push(term);
            if out.len() == 3 {
                break;
            }
        }
        out.into_iter()
            .map(|[a, b]| match b {
                ONE => names[a as usize].to_string(),
                b => format!("{} {}", names[a as usize], names[b as usize]),
            })
            .collect()
    }
}

/// The first sentence of `text`, whitespace folded, at most `max` chars.
pub fn first_sentence(text: &str, max: usize) -> String {
    clip(one_line(&text[..sentence_end(text)]), max)
}

/// `s` if it has at most `max` chars, else its words that fit and `…`.
fn clip(s: String, max: usize) -> String {
    if s.chars().count() <= max {
        return s;
    }
    let cut: String = s.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(a, _)| a);
    format!("{cut}…")
}

/// The sentence of `text` that says something: the first with at least
/// three content words ("Thanks, Melanie!", "Hey Gina!" and "Wow!" carry
/// nothing), else the one with the most, the earliest on a tie; whitespace
/// folded, at most `max` chars.
pub fn key_sentence(text: &str, max: usize) -> String {
    // Six sentences fit in this much of a long text; folding the whole of a
    // long reply was a pass and a copy of it per chunk.
    let head = prefix_chars(text, REPLY_CHARS);
    let mut rest = head;
    let mut best: Option<(usize, String)> = None;
    // The first few sentences only: the request is rarely later.
    for _ in 0..6 {
        if rest.trim_start().is_empty() {
            break;
        }
        let end = sentence_end(rest);
        let s = &rest[..end];
        // A sentence running into the cut goes on past it.
        let sentence = || {
            let out = first_sentence(s, max);
            if end == rest.len() && head.len() < text.len() && !out.ends_with('…') {
                format!("{out}…")
            } else {
                out
            }
        };
        let content = tokens(s)
            .filter(|t| !is_stopword(&lowercase(t), upper_after_first(t)))
            .count();
        if content >= 3 {
            return sentence();
        }
        if best.as_ref().is_none_or(|(most, _)| content > *most) {
            best = Some((content, sentence()));
        }
        rest = &rest[end..];
    }
    best.map(|(_, s)| s).unwrap_or_default()
}

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
fn prose(text: &str) -> Cow<'_, str> {
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
fn term_text(text: &str) -> Cow<'_, str> {
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

/// `date` as `%B %-d, %Y` ("May 1, 2024"), without chrono reading that
/// pattern anew for every header.
fn long_date(date: DateTime<Utc>) -> String {
    use chrono::Datelike;
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    if (0..=9999).contains(&date.year()) {
        format!(
            "{} {}, {:04}",
            MONTHS[date.month0() as usize],
            date.day(),
            date.year()
        )
    } else {
        date.format("%B %-d, %Y").to_string()
    }
}

fn join_topics(t: &[String]) -> String {
    match t {
        [] => String::new(),
        [a] => a.clone(),
        [a, b] => format!("{a} and {b}"),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

impl HeaderWriter for ExtractiveWriter {
    fn write(&self, input: &HeaderInput<'_>) -> Result<Header, HeaderError> {
        // The reply is tokenized once, for the chunk's topics and its own.
        let assistant = term_text(input.assistant);
        let reply = keys(prefix_chars(&assistant, REPLY_CHARS));
        let terms = Terms::of(input.title, input.user, &reply);
        // Its own topics, else the ones it continues, else the reply's.
        let topics = terms.subject(input.common, input.previous.map(|p| p.topics.as_slice()));
        let mut sentences = Vec::new();
        let platform = platform_name(input.platform);
        let date = input
            .date
            .map(|d| format!(" on {}", long_date(d)))
            .unwrap_or_default();
        // Separate calls are requests of one file, not exchanges of one
        // conversation.
        let (what, place) = match (input.independent, input.total_pairs > 1) {
            (false, true) => (
                "conversation",
                format!(" (exchange {} of {})", input.turn_range, input.total_pairs),
            ),
            (false, false) => ("conversation", String::new()),
            (true, true) => (
                "request",
                format!(
                    " ({} of {} separate requests in one file)",
                    input.turn_range, input.total_pairs
                ),
            ),
            (true, false) => ("request", String::new()),
        };
        // Where the exchange sits: the previous exchange's subject joins the
        // first sentence so that four sentences are never exceeded.
        let follows = input
            .previous
            .map(|prev| {
                let about = if prev.topics.is_empty() {
                    format!("\"{}\"", first_sentence(&prev.request, 120))
                } else {
                    join_topics(&prev.topics)
                };
                format!(", following an exchange about {about}")
            })
            .unwrap_or_default();
        match input.title.map(str::trim).filter(|t| !t.is_empty()) {
            Some(t) => sentences.push(format!(
                "From {} {platform} {what} titled \"{t}\"{date}{place}{follows}.",
                article(platform)
            )),
            None => sentences.push(format!(
                "From {} {platform} {what}{date}{place}{follows}.",
                article(platform)
            )),
        }
        // The request in words; a request of code alone is quoted as it is.
        let asked = prose(input.user);
        let request = key_sentence(if asked.is_empty() { input.user } else { &asked }, 220);
        if !request.is_empty() {
            sentences.push(format!("The user asked: \"{request}\""));
        }
        if !topics.is_empty() {
            sentences.push(format!("The exchange covers {}.", join_topics(&topics)));
        }
        // What the reply says and brings that the request did not name:
        // what a later search for the answer ("what did she paint?") looks
        // for. One sentence of it, not the reply (the embedding holds the
        // header, so the whole reply would dilute it).
        let gist = key_sentence(&prose(input.assistant), 160);
        let brings: Vec<String> = terms
            .brought(input.common)
            .into_iter()
            .filter(|r| {
                !topics
                    .iter()
                    .any(|t| t.split(' ').any(|w| r.split(' ').any(|x| x == w)))
            })
            .collect();
        match (gist.is_empty(), brings.is_empty()) {
            (false, false) => sentences.push(format!(
                "The reply says \"{}\" and brings in {}.",
                gist.trim_end_matches(['.', '!', '?']),
                join_topics(&brings)
            )),
            (false, true) => sentences.push(format!(
                "The reply says \"{}\".",
                gist.trim_end_matches(['.', '!', '?'])
            )),
            (true, false) => {
                sentences.push(format!("The reply brings in {}.", join_topics(&brings)));
            }
            (true, true) => {}
        }
        Ok(Header {
            context: sentences.join(" "),
            topics,
            backfill: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_specific_and_two_to_four_sentences() {
        let date = DateTime::parse_from_rfc3339("2025-03-02T09:14:03Z")
            .unwrap()
            .to_utc();
        let prev = Previous {
            topics: vec!["invoice totals".into()],
            request: "The totals are off by one cent.".into(),
        };
        let input = HeaderInput {
            platform: "claude-code",
            title: Some("invoice-tool"),
            date: Some(date),
            user: "Store amounts as integer cents in src/totals.rs and add a test for invoice 1042. Thanks.",
            assistant: "Done: totals are integer cents now; the sums_in_cents test reproduces invoice 1042.",
            turn_range: "2",
            total_pairs: 2,
            previous: Some(&prev),
            common: &[],
            independent: false,
        };
        let h = ExtractiveWriter.write(&input).unwrap();
        assert!(h.context.starts_with("From a Claude Code conversation titled \"invoice-tool\" on March 2, 2025 (exchange 2 of 2),"), "{}", h.context);
        assert!(h.context.contains("The user asked: \"Store amounts as integer cents in src/totals.rs and add a test for invoice 1042.\""), "{}", h.context);
        assert!(
            h.context
                .contains("(exchange 2 of 2), following an exchange about invoice totals."),
            "{}",
            h.context
        );
        assert!(
            h.context
                .contains("The reply says \"Done: totals are integer cents now; the sums_in_cents test reproduces invoice 1042\""),
            "{}",
            h.context
        );
        let sentences = h.context.matches(". ").count() + 1;
        assert!((2..=4).contains(&sentences), "{}", h.context);
        assert!(
            !h.topics.is_empty() && h.topics.len() <= 3,
            "{:?}",
            h.topics
        );
        assert!(
            h.topics
                .iter()
                .any(|t| t.contains("src/totals.rs") || t.contains("cents")),
            "{:?}",
            h.topics
        );
        assert!(!h.context.to_lowercase().contains("a conversation about ai"));
    }

    #[test]
    fn words_a_batch_repeats_name_no_topic() {
        let prompts = [
            "Describe the scene graph of this dictionary: {'tricycle_1': [1, 2], 'wheel_1': [3, 4]}",
            "Describe the scene graph of this dictionary: {'refrigerator_1': [5, 6]}",
            "Describe the scene graph of this dictionary: {'bucket_1': [7, 8], 'mop_1': [9, 9]}",
            "Something else about a kitchen",
        ];
        let common = common_terms(&prompts);
        assert_eq!(common, ["describe", "dictionary", "graph", "scene"]);
        assert!(common_terms(&prompts[..2]).is_empty(), "too few to tell");
        let input = |common| HeaderInput {
            platform: "api",
            title: None,
            date: None,
            user: prompts[0],
            assistant: "The tricycle has a wheel.",
            turn_range: "1",
            total_pairs: 4,
            previous: None,
            common,
            independent: true,
        };
        let alone = ExtractiveWriter.write(&input(&[])).unwrap();
        assert!(
            alone
                .topics
                .iter()
                .any(|t| t.contains("scene") || t.contains("graph")),
            "{:?}",
            alone.topics
        );
        let batch = ExtractiveWriter.write(&input(&common)).unwrap();
        assert!(!batch.topics.is_empty());
        for t in &batch.topics {
            assert!(
                !t.split(' ').any(|w| common.iter().any(|c| c == w)),
                "{:?}",
                batch.topics
            );
        }
        assert!(
            batch.topics.iter().any(|t| t.contains("tricycle_1")),
            "{:?}",
            batch.topics
        );
        // A call of a batch is a request of a file, not an exchange of a
        // conversation.
        assert!(
            batch
                .context
                .starts_with("From an API request (1 of 4 separate requests in one file)."),
            "{}",
            batch.context
        );
    }

    #[test]
    fn the_request_is_the_first_sentence_that_says_something() {
        assert_eq!(
            key_sentence(
                "Thanks, Melanie! That's really sweet. Is this your own painting of a sunrise?",
                200
            ),
            "Is this your own painting of a sunrise?"
        );
        assert_eq!(key_sentence("Wow!", 200), "Wow!");
        // Greetings and a name say nothing either: the request is the
        // sentence with the news in it.
        assert_eq!(
            key_sentence(
                "Hey Gina! Good to see you too. Lost my job as a banker yesterday, so I'm gonna start my own business.",
                200
            ),
            "Lost my job as a banker yesterday, so I'm gonna start my own business."
        );
        // With no sentence of three content words, the one with the most.
        assert_eq!(
            key_sentence("Yep, Melanie! Exciting but kinda nerve-wracking.", 200),
            "Exciting but kinda nerve-wracking."
        );
        assert_eq!(
            key_sentence("Fix the flaky test in src/a.rs today. Thanks.", 200),
            "Fix the flaky test in src/a.rs today."
        );
        assert_eq!(key_sentence("", 200), "");
        // A long run-on text: the sentence is cut at the scanned prefix and
        // says so.
        let long = "word ".repeat(2000);
        let got = key_sentence(&long, 200);
        assert!(got.ends_with('…') && got.chars().count() <= 201, "{got}");
        let fits = format!("{}end", "x ".repeat(1999));
        assert!(key_sentence(&fits, 5000).ends_with('…'));
    }

    #[test]
    fn the_header_names_what_the_reply_brings_in() {
        let input = HeaderInput {
            platform: "local",
            title: None,
            date: None,
            user: "I'm keen on counseling or working in mental health.",
            assistant: "You'd be great at it! I painted a sunrise over the lake last year; painting the sunrise calms me, and the lake at sunrise is my favourite spot.",
            turn_range: "6",
            total_pairs: 9,
            previous: None,
            common: &[],
            independent: false,
        };
        let h = ExtractiveWriter.write(&input).unwrap();
        assert!(h.context.contains("and brings in"), "{}", h.context);
        assert!(h.context.contains("sunrise"), "{}", h.context);
        // The reply's first sentence says nothing; its gist is the next one.
        assert!(
            h.context
                .contains("The reply says \"I painted a sunrise over the lake last year; painting"),
            "{}",
            h.context
        );
        let sentences = h.context.matches(". ").count() + 1;
        assert!((2..=4).contains(&sentences), "{}", h.context);
    }

    #[test]
    fn tool_output_and_other_languages_function_words_are_not_terms() {
        let header = |user: &str, assistant: &str| {
            ExtractiveWriter
                .write(&HeaderInput {
                    platform: "claude-code",
                    title: None,
                    date: None,
                    user,
                    assistant,
                    turn_range: "1",
                    total_pairs: 1,
                    previous: None,
                    common: &[],
                    independent: false,
                })
                .unwrap()
        };
        // What a tool printed is not what the reply brings in; the call
        // itself is, without the renderer's "Tool" marker.
        let h = header(
            "Search the repo for TODO comments",
            "Searching.\n\n[Tool: Bash grep -rn TODO]\n[Tool result: The file /src/app.rs has been updated successfully]\n[Tool result: ^C again to exit]",
        );
        let terms = format!("{} {}", h.context, h.topics.join(" ")).to_lowercase();
        // The same after a fence the text left open.
        let open = header(
            "Search the repo for TODO comments",
            "Searching.\n```\n\n[Tool: Bash grep -rn TODO]\n[Tool result: The file /src/app.rs has been updated successfully]\n[Tool result: ^C again to exit]",
        );
        let terms = format!("{terms} {} {}", open.context, open.topics.join(" ")).to_lowercase();
        for noise in ["tool", "result", "updated", "successfully", "again", "exit"] {
            assert!(
                !terms
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == noise),
                "{noise}: {} / {}",
                h.context,
                open.context
            );
        }
        assert!(h.context.contains("brings in bash grep"), "{}", h.context);
        // A reply of tool lines alone is about its calls, not about "tool
        // result".
        let edits =
            "[Tool: Edit]\n[Tool result: The file /a has been updated successfully]\n".repeat(4);
        assert_eq!(topics(None, "hi", &edits), ["edit"]);
        // French function words name nothing; the reply's content words do.
        let h = header(
            "hi",
            "Je comprends que vous n'avez pas encore partagé de fichiers que je peux éditer.",
        );
        let brought = h
            .context
            .split_once("brings in ")
            .map_or("", |(_, b)| b.trim_end_matches('.'));
        let words: Vec<&str> = brought
            .split([',', ' '])
            .chain(h.topics.iter().flat_map(|t| t.split(' ')))
            .filter(|w| !w.is_empty() && *w != "and")
            .collect();
        assert!(!words.is_empty(), "{}", h.context);
        for w in ["je", "que", "vous", "avez", "pas", "de", "peux"] {
            assert!(!words.contains(&w), "{w}: {}", h.context);
        }
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
        // (`<<EOF` once opened a tag that ran to the next `>`), and
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
        let html = format!(
            "I'll create an HTML artifact with a pricing calculator.\n\n```html\n{}```\n",
            "<div class=\"calculator\">\n  <div class=\"input-group\">\n    <label>Input tokens</label>\n  </div>\n</div>\n"
                .repeat(3)
        );
        let h = header("Build me a pricing calculator", &html);
        assert!(!h.context.contains("div"), "{}", h.context);
        assert!(!h.context.contains("class"), "{}", h.context);
        assert!(
            !h.topics
                .iter()
                .any(|t| t.contains("div") || t.contains("class")),
            "{:?}",
            h.topics
        );
        // Spanish opening marks split as `?` and `!` do.
        let t = topics(None, "Hola, ¿cómo se configura nginx? ¡Gracias!", "");
        assert_eq!(t, ["configura nginx"]);
    }

    #[test]
    fn the_separator_table_is_the_separator_set() {
        let old = |c: char| {
            c.is_whitespace()
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
            assert_eq!(is_separator(c), old(c), "{c:?}");
        }
    }

    #[test]
    fn words_lowercase_and_identifiers_stay_as_written() {
        let k = keys("Fix the Parser in src/Lexer.rs, Été and camelCase please");
        let got: Vec<(String, bool)> = k
            .into_iter()
            .flatten()
            .map(|(k, ident)| (k.into_owned(), ident))
            .collect();
        assert_eq!(
            got,
            [
                ("fix".to_string(), false),
                ("parser".into(), false),
                ("src/Lexer.rs".into(), true),
                ("été".into(), false),
                ("camelCase".into(), true),
            ]
        );
    }

    #[test]
    fn topics_prefer_specific_terms_over_filler() {
        let t = topics(
            Some("Reviving a sourdough starter"),
            "My sourdough starter smells like nail polish remover. Is it dead?",
            "Not dead, hungry: the acetone smell means it ran out of food. Feed the starter twice a day.",
        );
        assert_eq!(t[0], "sourdough starter", "{t:?}");
        assert!(t.len() <= 3);
        for filler in ["is", "it", "like", "my"] {
            assert!(!t.iter().any(|x| x == filler), "{t:?}");
        }
    }

    #[test]
    fn contraction_tails_and_interjections_are_never_topics() {
        for (user, reply) in [
            (
                "They're adorable! I've got a guinea pig named Oscar.",
                "Wow, cool! We'll get a pup soon, you're so lucky.",
            ),
            (
                "They\u{2019}re adorable! I\u{2019}ve got a guinea pig named Oscar.",
                "Wow, cool! We\u{2019}ll get a pup soon, you\u{2019}re so lucky.",
            ),
        ] {
            let t = topics(None, user, reply);
            assert!(t.iter().any(|x| x.contains("guinea pig")), "{t:?}");
            for junk in ["re", "ve", "ll", "wow", "cool"] {
                assert!(
                    !t.iter().any(|x| x.split(' ').any(|w| w == junk)),
                    "{junk} in {t:?}"
                );
            }
        }
    }

    #[test]
    fn the_reply_gist_is_prose_not_a_tool_summary() {
        let mut input = HeaderInput {
            platform: "claude-code",
            title: None,
            date: None,
            user: "Why does the totals test fail on an empty cart?",
            assistant: "[Tool: Read src/totals.rs]\n[Tool result: pub fn total(items: &[Item]) -> u64]\n\nThe total divides by the item count, which is zero for an empty cart.",
            turn_range: "1",
            total_pairs: 1,
            previous: None,
            common: &[],
            independent: false,
        };
        let h = ExtractiveWriter.write(&input).unwrap();
        assert!(
            h.context
                .contains("The reply says \"The total divides by the item count"),
            "{}",
            h.context
        );
        // A reply of tool calls alone is summarized by them.
        input.assistant = "[Tool: Bash cargo test totals]";
        let h = ExtractiveWriter.write(&input).unwrap();
        assert!(
            h.context.contains("[Tool: Bash cargo test totals]"),
            "{}",
            h.context
        );
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
        for acronym in ["MIT", "EU", "DoS", "NAS", "DES", "HA"] {
            assert!(keys(acronym)[0].is_some(), "{acronym}");
        }
        assert!(
            keys("Which OS for my NAS with the SIM card?")
                .iter()
                .flatten()
                .count()
                >= 4
        );
    }

    #[test]
    fn code_literals_and_assignments_are_never_topics() {
        // Keyword arguments, as aider's chats are full of.
        let user = "Make commit_before_message default to None in Coder.__init__";
        let reply = "def __init__(self, main_model, io, repo=None, pretty=True, stream=False,\n    commit_before_message=None, done_messages=None, read_only=False):\n    self.commit_before_message = commit_before_message or []";
        let t = topics(None, user, reply);
        assert!(
            t.iter().any(|x| x.contains("commit_before_message")),
            "{t:?}"
        );
        for junk in ["none", "true", "false", "self", "def"] {
            assert!(
                !t.iter()
                    .any(|x| x.split(' ').any(|w| w.eq_ignore_ascii_case(junk))),
                "{junk} in {t:?}"
            );
        }
        assert!(!t.iter().any(|x| x.contains('=')), "{t:?}");
    }

    #[test]
    fn a_reply_that_names_no_subject_keeps_the_one_it_continues() {
        let previous = Previous {
            topics: vec!["cloud-resume".into(), "specstory-sync".into()],
            request: "Why does cloud-resume skip the sync?".into(),
        };
        let mut input = HeaderInput {
            platform: "claude-code",
            user: "not true",
            turn_range: "9",
            total_pairs: 15,
            previous: Some(&previous),
            ..Default::default()
        };
        let h = ExtractiveWriter.write(&input).unwrap();
        assert_eq!(h.topics, previous.topics);
        // Nothing to continue and a reply that takes nothing up: no topics
        // rather than made-up ones.
        input.previous = None;
        assert!(ExtractiveWriter.write(&input).unwrap().topics.is_empty());
        // Nothing to continue, and a reply that does take something up:
        // that is what the exchange is about, said once.
        input.user = "hi";
        input.assistant =
            "Hello! Is there a coding task in this git repository you want help with?";
        let h = ExtractiveWriter.write(&input).unwrap();
        assert!(!h.topics.is_empty(), "{}", h.context);
        assert!(
            h.topics.iter().any(|t| t.contains("coding task")),
            "{:?}",
            h.topics
        );
        assert!(h.context.contains("The exchange covers"), "{}", h.context);
        assert!(!h.context.contains("brings in"), "{}", h.context);
        assert_eq!(topics(None, "hi", input.assistant), h.topics);
    }

    #[test]
    fn code_is_not_quoted_as_what_was_said() {
        let mut input = HeaderInput {
            platform: "chatgpt",
            user: "```python\nimport numpy as np\nx = np.zeros(3)\n```\nWhy is the average distance always zero here?",
            assistant: "```python\n# Re-run the simulation\navg = []\n```\n\nThe distance is zero because every point starts at the origin.",
            turn_range: "1",
            total_pairs: 1,
            ..Default::default()
        };
        let context = ExtractiveWriter.write(&input).unwrap().context;
        for said in [
            "The user asked: \"Why is the average distance always zero here?\"",
            "The reply says \"The distance is zero because every point starts at the origin\"",
        ] {
            assert!(context.contains(said), "{context}");
        }
        // A reply of code alone has no sentence to quote; an unclosed fence
        // runs to the end.
        input.assistant = "~~~html\n<div class=\"calc\"><input type=\"number\"></div>";
        let h = ExtractiveWriter.write(&input).unwrap();
        assert!(!h.context.contains("The reply says"), "{}", h.context);
        assert!(!h.context.contains('='), "{}", h.context);
        // A request of code alone is quoted as it is.
        input.user = "```\nls -la /tmp\n```";
        let h = ExtractiveWriter.write(&input).unwrap();
        assert!(h.context.contains("The user asked: \"```"), "{}", h.context);
    }

    #[test]
    fn the_platform_takes_the_article_it_is_said_with() {
        for (platform, article) in [
            ("api", "an"),
            ("chatgpt", "a"),
            ("claude", "a"),
            ("gemini", "a"),
            ("claude-code", "a"),
            ("local", "a"),
            ("openrouter", "an"),
            ("LLM proxy", "an"),
            ("HTTP log", "an"),
            ("GPT store", "a"),
        ] {
            let input = HeaderInput {
                platform,
                title: None,
                date: None,
                user: "Summarize the meeting notes about the Q3 roadmap.",
                assistant: "The roadmap moves the billing rewrite to Q4.",
                turn_range: "1",
                total_pairs: 1,
                previous: None,
                common: &[],
                independent: false,
            };
            let h = ExtractiveWriter.write(&input).unwrap();
            let want = format!("From {article} {} conversation", platform_name(platform));
            assert!(h.context.starts_with(&want), "{}", h.context);
        }
    }

    #[test]
    fn sentences_are_found_in_the_text_as_folding_it_first_found_them() {
        // The first version folded the whitespace of the whole text, then
        // looked for a `.`, `?` or `!` followed by a space.
        let folded_first = |text: &str, max: usize| -> String {
            let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let end = folded
                .char_indices()
                .find(|&(i, c)| matches!(c, '.' | '?' | '!') && folded[i + 1..].starts_with(' '))
                .map_or(folded.len(), |(i, c)| i + c.len_utf8());
            clip(folded[..end].to_string(), max)
        };
        for text in [
            "",
            "   ",
            "How are you?\n\nFine.",
            "v1.2 is out. Really!",
            "  leading space. then\tmore",
            "ends with a dot.",
            "ends with a dot and space. ",
            "Wait...what? Yes!!  Ok",
            "Ünïcödé… ça va?\u{a0}Oui.",
            "no-break\u{a0}space. After\u{2003}em space! x",
            "a.b.c d",
            "!",
            ". leading",
        ] {
            for max in [3, 10, 200] {
                assert_eq!(
                    first_sentence(text, max),
                    folded_first(text, max),
                    "{text:?} {max}"
                );
            }
        }
    }

    /// Texts that exercise the tokenizer and the ranking: identifiers,
    /// case, stopwords between words, a word twice in a row, typographic
    /// quotes, non-ASCII separators and letters, score ties.
    const TERM_TEXTS: &[&str] = &[
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

    /// The first versions: `str::split` for words, one map with a string
    /// per word and phrase, ranked as strings.
    mod first {
        use super::super::*;

        pub fn tokens(text: &str) -> impl Iterator<Item = &str> {
            text.split(is_separator)
                .map(|t| t.trim_matches(|c: char| c == '.' || c == '-' || c == '#'))
                .filter(|t| {
                    let mut chars = t.chars();
                    chars.next().is_some()
                        && chars.next().is_some()
                        && t.chars().any(char::is_alphabetic)
                })
        }

        fn keys(text: &str) -> Vec<Option<(String, bool)>> {
            tokens(text)
                .map(|t| {
                    let lower = lowercase(t);
                    if is_stopword(&lower, upper_after_first(t)) {
                        None
                    } else if is_identifier(t) {
                        Some((t.to_string(), true))
                    } else {
                        Some((lower.into_owned(), false))
                    }
                })
                .collect()
        }

        pub fn best(
            title: &str,
            user: &str,
            reply: &str,
            slot: usize,
            common: &[String],
        ) -> Vec<String> {
            let mut score: FxHashMap<String, [f64; 2]> = FxHashMap::default();
            for (text, weight) in [(title, [2.0, 0.0]), (user, [3.0, 0.0]), (reply, [0.5, 3.0])] {
                let keys = keys(text);
                for (i, k) in keys.iter().enumerate() {
                    let Some((k, ident)) = k else { continue };
                    let by = if *ident { 1.5 } else { 1.0 };
                    let v = score.entry(k.clone()).or_default();
                    v[0] += weight[0] * by;
                    v[1] += weight[1] * by;
                    if let Some(Some((next, _))) = keys.get(i + 1) {
                        let v = score.entry(format!("{k} {next}")).or_default();
                        v[0] += weight[0] * 1.6;
                        v[1] += weight[1] * 1.6;
                    }
                }
            }
            let shared = |t: &str| {
                t.split(' ')
                    .any(|w| common.iter().any(|c| c.eq_ignore_ascii_case(w)))
            };
            let mut ranked: Vec<(&str, f64)> = score
                .iter()
                .map(|(t, s)| (t.as_str(), s[slot]))
                .filter(|(t, s)| *s >= 1.5 && !shared(t))
                .collect();
            ranked.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            let mut out: Vec<String> = Vec::new();
            for (term, _) in ranked {
                let words: Vec<&str> = term.split(' ').collect();
                if out.iter().any(|o| o.split(' ').any(|w| words.contains(&w))) {
                    continue;
                }
                out.push(term.to_string());
                if out.len() == 3 {
                    break;
                }
            }
            out
        }
    }

    #[test]
    fn words_and_terms_are_what_the_first_versions_found() {
        for text in TERM_TEXTS {
            assert_eq!(
                tokens(text).collect::<Vec<_>>(),
                first::tokens(text).collect::<Vec<_>>(),
                "{text:?}"
            );
        }
        let common = [vec![], vec!["nginx".to_string(), "POLISH".to_string()]];
        for title in ["", "Sourdough and nginx"] {
            for user in TERM_TEXTS {
                for reply in TERM_TEXTS {
                    for common in &common {
                        let reply_keys = keys(reply);
                        let terms = Terms::of(Some(title), user, &reply_keys);
                        for slot in [0, 1] {
                            assert_eq!(
                                terms.best(slot, common),
                                first::best(title, user, reply, slot, common),
                                "{title:?} {user:?} {reply:?} {slot} {common:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn dates_are_written_as_chronos_pattern_writes_them() {
        for t in [
            0,
            1_714_557_600,
            1_709_251_199,
            -62_135_596_800,
            253_402_300_800,
        ] {
            let d = DateTime::from_timestamp(t, 0).unwrap();
            assert_eq!(long_date(d), d.format("%B %-d, %Y").to_string(), "{t}");
        }
        // Every month's name.
        for m in 1..=12 {
            let d = chrono::NaiveDate::from_ymd_opt(2024, m, 9)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap()
                .and_utc();
            assert_eq!(long_date(d), d.format("%B %-d, %Y").to_string());
        }
    }

    #[test]
    fn first_sentences_are_cut_on_words() {
        assert_eq!(first_sentence("How are you? Fine.", 50), "How are you?");
        assert_eq!(first_sentence("v1.2 is out", 50), "v1.2 is out");
        assert_eq!(first_sentence("one two three four", 9), "one two…");
    }
}

/// A header writer with a deadline: asks `inner` (an LLM writer, say) and
/// waits at most `deadline`; past it, or when `inner` fails, the chunk gets
/// the built-in extractive header marked for backfill. The slow call is
/// left to finish on its own thread (its own timeout bounds it).
pub struct Deadline {
    pub inner: std::sync::Arc<dyn HeaderWriter>,
    pub deadline: std::time::Duration,
}

/// What [`Deadline`] needs to hand the inner writer a request it owns.
#[derive(Debug, Clone)]
struct OwnedInput {
    platform: String,
    title: Option<String>,
    date: Option<DateTime<Utc>>,
    user: String,
    assistant: String,
    turn_range: String,
    total_pairs: u32,
    previous: Option<Previous>,
    common: Vec<String>,
    independent: bool,
}

impl HeaderWriter for Deadline {
    fn write(&self, input: &HeaderInput<'_>) -> Result<Header, HeaderError> {
        let owned = OwnedInput {
            platform: input.platform.to_string(),
            title: input.title.map(str::to_string),
            date: input.date,
            user: input.user.to_string(),
            assistant: input.assistant.to_string(),
            turn_range: input.turn_range.to_string(),
            total_pairs: input.total_pairs,
            previous: input.previous.cloned(),
            common: input.common.to_vec(),
            independent: input.independent,
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let inner = std::sync::Arc::clone(&self.inner);
        std::thread::spawn(move || {
            let o = owned;
            let result = inner.write(&HeaderInput {
                platform: &o.platform,
                title: o.title.as_deref(),
                date: o.date,
                user: &o.user,
                assistant: &o.assistant,
                turn_range: &o.turn_range,
                total_pairs: o.total_pairs,
                previous: o.previous.as_ref(),
                common: &o.common,
                independent: o.independent,
            });
            let _ = tx.send(result);
        });
        match rx.recv_timeout(self.deadline) {
            Ok(Ok(h)) if !h.backfill => Ok(h),
            _ => {
                let mut h = ExtractiveWriter.write(input)?;
                h.backfill = true;
                Ok(h)
            }
        }
    }
}
