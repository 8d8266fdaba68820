//! Google Takeout → My Activity → Gemini Apps, as `MyActivity.json` (an
//! array of activity records) and `MyActivity.html` (the default: one
//! `outer-cell` block per record after ~140 KB of inline CSS).
//!
//! One record per prompt (`Prompted <prompt>`), the answer as HTML. Records
//! are read one at a time (JSON elements through `JsonStream`, HTML blocks
//! cut at each `outer-cell`) and reduced to their prompt, time, answer text
//! and chat link. Takeout lists records newest first and interleaves chats,
//! so grouping needs every record: the reduced records (text only, no HTML,
//! no CSS) are kept until the end, then grouped by their
//! `gemini.google.com/app/<id>` link (one conversation per chat, pairs by
//! time) or, without a link, one conversation per record with an id derived
//! from its time and prompt. File-level skips (non-prompt records) are
//! reported on the first conversation.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::io::Read;

use chatmill_adapter_sdk::json::JsonStream;
use chatmill_adapter_sdk::{
    Conversation, ConversationReader, ConversationStart, ErrorKind, Location, ParseError, Part,
    Skips, Timestamp, TurnPair,
};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::{date, html};

/// One prompt record, reduced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Position in the file (0 = first = newest).
    pub index: u64,
    pub prompt: String,
    pub time: Option<Timestamp>,
    pub answer: Option<String>,
    pub chat_id: Option<String>,
    pub attachments: Vec<String>,
}

/// Products/headers that mark Gemini activity (English and a few locales;
/// the product name is not translated in most).
fn is_gemini_label(s: &str) -> bool {
    let s = s.trim();
    s == "Gemini Apps" || s == "Gemini" || s.starts_with("Gemini ") || s.starts_with("Bard")
}

/// The prompt of a `Prompted …` title; `None` for other activity.
pub fn prompt_of(title: &str) -> Option<&str> {
    let t = title.trim_start();
    let rest = t.strip_prefix("Prompted")?;
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    if !rest.is_empty() && !rest.starts_with([' ', '\n', '\u{a0}']) && !t.starts_with("Prompted:") {
        return None; // "Promptedness…": not the marker
    }
    let p = rest.trim();
    if p.is_empty() { None } else { Some(p) }
}

/// The `<id>` of the first `gemini.google.com/app/<id>` in `s`.
pub fn chat_id(s: &str) -> Option<String> {
    const MARK: &str = "gemini.google.com/app/";
    let mut rest = s;
    while let Some(i) = rest.find(MARK) {
        let after = &rest[i + MARK.len()..];
        let id: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        if !id.is_empty() {
            return Some(id);
        }
        rest = after;
    }
    None
}

// ---- JSON ------------------------------------------------------------------

#[derive(Deserialize)]
struct JsonRecord<'a> {
    #[serde(borrow, default)]
    header: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    title: Option<Cow<'a, str>>,
    #[serde(rename = "titleUrl", borrow, default)]
    title_url: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    time: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    products: Option<Vec<Cow<'a, str>>>,
    #[serde(rename = "safeHtmlItem", borrow, default)]
    safe_html_item: Option<Vec<SafeHtml<'a>>>,
    #[serde(rename = "attachedFiles", borrow, default)]
    attached_files: Option<&'a RawValue>,
    #[serde(borrow, default)]
    details: Option<&'a RawValue>,
    #[serde(borrow, default)]
    subtitles: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct SafeHtml<'a> {
    #[serde(borrow, default)]
    html: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum FileRef {
    Name(String),
    Object {
        #[serde(default)]
        name: Option<String>,
        #[serde(default, rename = "fileName")]
        file_name: Option<String>,
    },
}

fn json_record(bytes: &[u8], index: u64, skips: &mut Skips) -> Option<Record> {
    let Ok(r) = serde_json::from_slice::<JsonRecord<'_>>(bytes) else {
        skips.add("malformed-record");
        return None;
    };
    let gemini = r.header.as_deref().is_some_and(is_gemini_label)
        || r.products.iter().flatten().any(|p| is_gemini_label(p));
    if !gemini {
        skips.add("other-product-record");
        return None;
    }
    let Some(prompt) = r.title.as_deref().and_then(prompt_of) else {
        skips.add("non-prompt-record");
        return None;
    };
    let answer_html: String = r
        .safe_html_item
        .iter()
        .flatten()
        .filter_map(|h| h.html.as_deref())
        .collect::<Vec<_>>()
        .join("\n");
    let answer = Some(html::to_text(&answer_html)).filter(|a| !a.is_empty());
    let chat = r
        .title_url
        .as_deref()
        .and_then(chat_id)
        .or_else(|| r.details.and_then(|d| chat_id(d.get())))
        .or_else(|| r.subtitles.and_then(|d| chat_id(d.get())));
    let attachments = r
        .attached_files
        .and_then(|raw| serde_json::from_str::<Vec<FileRef>>(raw.get()).ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| match f {
            FileRef::Name(n) => Some(n),
            FileRef::Object { name, file_name } => name.or(file_name),
        })
        .filter(|n| !n.trim().is_empty())
        .collect();
    Some(Record {
        index,
        prompt: html::decode_entities(prompt),
        time: r.time.as_deref().and_then(Timestamp::parse),
        answer,
        chat_id: chat,
        attachments,
    })
}

// ---- HTML ------------------------------------------------------------------

const OUTER: &[u8] = b"<div class=\"outer-cell";

/// The inner HTML of the first `<div …class="…{class}…">`, with nested divs
/// balanced.
fn div_inner<'a>(block: &'a str, class: &str) -> Option<&'a str> {
    let at = block.find(class)?;
    let open_end = at + block.get(at..)?.find('>')? + 1;
    let body = block.get(open_end..)?;
    let lower = body.to_ascii_lowercase();
    let mut depth = 1usize;
    let mut pos = 0usize;
    while pos < lower.len() {
        let rest = lower.get(pos..)?;
        let next_open = rest.find("<div");
        let next_close = rest.find("</div");
        match (next_open, next_close) {
            (Some(o), Some(c)) if o < c => {
                depth += 1;
                pos += o + 4;
            }
            (_, Some(c)) => {
                depth -= 1;
                if depth == 0 {
                    return body.get(..pos + c);
                }
                pos += c + 5;
            }
            _ => return Some(body),
        }
    }
    Some(body)
}

/// Splits at top-level `<br>` spellings.
fn split_br(s: &str) -> Vec<&str> {
    let lower = s.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut start = 0;
    let mut pos = 0;
    while let Some(i) = lower.get(pos..).and_then(|r| r.find("<br")) {
        let at = pos + i;
        let Some(end) = lower.get(at..).and_then(|r| r.find('>')) else {
            break;
        };
        // `<br>`, `<br/>`, `<br />` — not `<break>`.
        let tag = lower.get(at + 3..at + end).unwrap_or("x");
        if tag.trim().trim_end_matches('/').trim().is_empty() {
            out.push(s.get(start..at).unwrap_or(""));
            start = at + end + 1;
        }
        pos = at + end + 1;
    }
    out.push(s.get(start..).unwrap_or(""));
    out
}

pub fn html_record(block: &str, index: u64, skips: &mut Skips) -> Option<Record> {
    let header = div_inner(block, "header-cell")
        .map(html::to_text)
        .unwrap_or_default();
    if !header.lines().any(is_gemini_label) {
        skips.add("other-product-record");
        return None;
    }
    let Some(content) = div_inner(block, "content-cell") else {
        skips.add("malformed-record");
        return None;
    };
    let segments = split_br(content);
    // The date line is the first segment after the title that parses as one.
    let mut date_at = None;
    let mut time = None;
    for (i, seg) in segments.iter().enumerate().skip(1) {
        if let Some(p) = date::parse(&html::to_text(seg)) {
            if p.unknown_zone {
                skips.add("unknown-timezone");
            }
            date_at = Some(i);
            time = Some(p.timestamp);
            break;
        }
    }
    let (title_segs, answer_segs) = match date_at {
        Some(i) => (&segments[..i], segments.get(i + 1..).unwrap_or(&[])),
        None => (
            &segments[..1.min(segments.len())],
            segments.get(1..).unwrap_or(&[]),
        ),
    };
    let title = title_segs
        .iter()
        .map(|s| html::to_text(s))
        .collect::<Vec<_>>()
        .join("\n");
    let Some(prompt) = prompt_of(&title) else {
        skips.add("non-prompt-record");
        return None;
    };
    let answer = html::to_text(&answer_segs.join("<br>"));
    // The caption cell (after the content cells) holds `Details: <chat url>`.
    let caption = block
        .find("mdl-typography--caption")
        .and_then(|i| block.get(i..))
        .unwrap_or("");
    Some(Record {
        index,
        prompt: prompt.to_string(),
        time,
        answer: Some(answer).filter(|a| !a.is_empty()),
        chat_id: chat_id(caption),
        attachments: Vec::new(),
    })
}

/// Cuts an HTML document into `outer-cell` blocks, reading in pieces.
pub struct HtmlBlocks<R> {
    reader: R,
    buf: Vec<u8>,
    eof: bool,
    started: bool,
}

impl<R: Read> HtmlBlocks<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            buf: Vec::new(),
            eof: false,
            started: false,
        }
    }

    fn find(hay: &[u8], from: usize) -> Option<usize> {
        hay.get(from..)?
            .windows(OUTER.len())
            .position(|w| w == OUTER)
            .map(|i| i + from)
    }

    fn fill(&mut self) -> Result<bool, ParseError> {
        if self.eof {
            return Ok(false);
        }
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.reader.read(&mut chunk) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(ParseError::new(
                        ErrorKind::Internal,
                        format!("reading input failed: {e}"),
                    ));
                }
            }
        }
    }

    /// The next block's bytes (from its `<div class="outer-cell` on).
    pub fn next_block(&mut self) -> Result<Option<Vec<u8>>, ParseError> {
        // Skip to the first block, dropping the head (CSS) as it streams by.
        while !self.started {
            if let Some(i) = Self::find(&self.buf, 0) {
                self.buf.drain(..i);
                self.started = true;
            } else {
                let keep = self.buf.len().min(OUTER.len());
                self.buf.drain(..self.buf.len() - keep);
                if !self.fill()? {
                    return Ok(None);
                }
            }
        }
        let mut scan_from = 1;
        loop {
            if let Some(i) = Self::find(&self.buf, scan_from) {
                let block: Vec<u8> = self.buf.drain(..i).collect();
                return Ok(Some(block));
            }
            scan_from = self.buf.len().saturating_sub(OUTER.len()).max(1);
            if !self.fill()? {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(std::mem::take(&mut self.buf)));
            }
        }
    }
}

// ---- Grouping --------------------------------------------------------------

fn fnv_hex(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.as_bytes().iter().chain(std::iter::once(&0xff)) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn pair_of(r: Record) -> TurnPair {
    let mut user = vec![Part::Text(r.prompt)];
    for a in r.attachments {
        user.push(Part::Attachment {
            name: a,
            media_type: None,
            uri: None,
        });
    }
    TurnPair {
        index: 0,
        timestamp: r.time,
        model: None,
        user,
        assistant: r.answer.map(Part::Text).into_iter().collect(),
        metadata: Vec::new(),
    }
}

/// Groups records into conversations, in a deterministic order (earliest
/// first, ties by id).
pub fn group(records: Vec<Record>, mut file_skips: Skips, source: &str) -> Vec<Conversation> {
    let mut chats: BTreeMap<String, Vec<Record>> = BTreeMap::new();
    let mut singles: Vec<Record> = Vec::new();
    for r in records {
        match r.chat_id.clone() {
            Some(id) => chats.entry(id).or_default().push(r),
            None => singles.push(r),
        }
    }
    let mut convs: Vec<Conversation> = Vec::new();
    let base_meta = |extra: Option<(String, String)>| {
        let mut m = vec![("source".to_string(), source.to_string())];
        m.extend(extra);
        m
    };
    for (id, mut recs) in chats {
        // Oldest first; same time: later in the file is older.
        recs.sort_by(|a, b| a.time.cmp(&b.time).then(b.index.cmp(&a.index)));
        let created = recs.iter().filter_map(|r| r.time).min();
        let updated = recs.iter().filter_map(|r| r.time).max();
        convs.push(Conversation {
            start: ConversationStart {
                id: id.clone(),
                title: None,
                created,
                updated,
                platform: "gemini".into(),
                model: None,
                metadata: base_meta(Some((
                    "chat_url".to_string(),
                    format!("https://gemini.google.com/app/{id}"),
                ))),
            },
            pairs: recs.into_iter().map(pair_of).collect(),
            skipped: Skips::default(),
        });
    }
    for r in singles {
        let secs = r.time.map(|t| t.seconds.to_string()).unwrap_or_default();
        let id = format!("gemini-activity-{}", fnv_hex(&[&secs, &r.prompt]));
        convs.push(Conversation {
            start: ConversationStart {
                id,
                title: None,
                created: r.time,
                updated: r.time,
                platform: "gemini".into(),
                model: None,
                metadata: base_meta(None),
            },
            pairs: vec![pair_of(r)],
            skipped: Skips::default(),
        });
    }
    convs.sort_by(|a, b| {
        let ka = (a.start.created.is_none(), a.start.created);
        let kb = (b.start.created.is_none(), b.start.created);
        ka.cmp(&kb).then_with(|| a.start.id.cmp(&b.start.id))
    });
    if let Some(first) = convs.first_mut() {
        std::mem::swap(&mut first.skipped, &mut file_skips);
    }
    convs
}

// ---- Readers ---------------------------------------------------------------

/// Which Takeout file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Json,
    Html,
}

pub struct TakeoutReader<R> {
    input: Option<R>,
    kind: Kind,
    queue: VecDeque<Conversation>,
}

impl<R: Read> TakeoutReader<R> {
    pub fn new(input: R, kind: Kind) -> Self {
        Self {
            input: Some(input),
            kind,
            queue: VecDeque::new(),
        }
    }

    fn load(&mut self, input: R) -> Result<(), ParseError> {
        let mut skips = Skips::default();
        let mut records = Vec::new();
        match self.kind {
            Kind::Json => {
                let mut stream = JsonStream::new(input, &[]);
                while let Some(el) = stream.next_element()? {
                    if let Some(r) = json_record(&el.bytes, el.index, &mut skips) {
                        records.push(r);
                    }
                }
            }
            Kind::Html => {
                let mut blocks = HtmlBlocks::new(input);
                let mut index = 0u64;
                let mut any = false;
                while let Some(b) = blocks.next_block()? {
                    any = true;
                    let text = String::from_utf8_lossy(&b);
                    if let Some(r) = html_record(&text, index, &mut skips) {
                        records.push(r);
                    }
                    index += 1;
                }
                if !any {
                    return Err(ParseError::not_this_format(
                        "no `outer-cell` activity record in this HTML",
                    )
                    .at(Location::byte(0)));
                }
            }
        }
        let source = match self.kind {
            Kind::Json => "google-takeout-json",
            Kind::Html => "google-takeout-html",
        };
        self.queue = group(records, skips, source).into();
        Ok(())
    }
}

impl<R: Read> ConversationReader for TakeoutReader<R> {
    fn next_conversation(&mut self) -> Result<Option<Conversation>, ParseError> {
        if let Some(input) = self.input.take() {
            self.load(input)?;
        }
        Ok(self.queue.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompted_titles() {
        assert_eq!(prompt_of("Prompted what is rust?"), Some("what is rust?"));
        assert_eq!(prompt_of("Prompted: hi"), Some("hi"));
        assert_eq!(prompt_of("Used an Extension"), None);
        assert_eq!(prompt_of("Prompted"), None);
        assert_eq!(prompt_of("Promptedness"), None);
        assert_eq!(prompt_of("Gave feedback: Good response"), None);
    }

    #[test]
    fn chat_links() {
        assert_eq!(
            chat_id("x https://gemini.google.com/app/0a1b2c3d4e5f6071<br>").as_deref(),
            Some("0a1b2c3d4e5f6071")
        );
        assert_eq!(chat_id("https://gemini.google.com/app/"), None);
        assert_eq!(chat_id("nothing"), None);
    }

    #[test]
    fn br_splitting_and_div_balancing() {
        assert_eq!(
            split_br("a<br>b<BR/>c<br />d<break>e"),
            ["a", "b", "c", "d<break>e"]
        );
        let block =
            r#"<div class="content-cell x">A<div>inner</div>B</div><div class="other">C</div>"#;
        assert_eq!(div_inner(block, "content-cell"), Some("A<div>inner</div>B"));
        assert_eq!(
            div_inner("<div class=\"content-cell\">unclosed", "content-cell"),
            Some("unclosed")
        );
        assert_eq!(div_inner("no cell", "content-cell"), None);
    }

    #[test]
    fn html_blocks_are_cut_whatever_the_read_size() {
        let doc = "<html><style>.outer-cell{}</style><body><div class=\"outer-cell a\">one</div><div class=\"outer-cell b\">two</div></body></html>";
        for size in [1, 3, 7, 1000] {
            let r = chatmill_adapter_sdk::Trickle::new(doc.as_bytes(), size);
            let mut b = HtmlBlocks::new(r);
            let mut got = Vec::new();
            while let Some(x) = b.next_block().unwrap() {
                got.push(String::from_utf8(x).unwrap());
            }
            assert_eq!(
                got,
                [
                    "<div class=\"outer-cell a\">one</div>",
                    "<div class=\"outer-cell b\">two</div></body></html>"
                ],
                "read size {size}"
            );
        }
    }

    #[test]
    fn grouping_orders_by_time_and_derives_stable_ids() {
        let t = |s: i64| {
            Some(Timestamp {
                seconds: s,
                nanos: 0,
            })
        };
        let rec = |index, prompt: &str, time, chat: Option<&str>| Record {
            index,
            prompt: prompt.into(),
            time,
            answer: None,
            chat_id: chat.map(str::to_string),
            attachments: Vec::new(),
        };
        let records = vec![
            rec(0, "third", t(300), Some("c1")),
            rec(1, "lonely", t(250), None),
            rec(2, "first", t(100), Some("c1")),
            rec(3, "second", t(200), Some("c1")),
        ];
        let mut skips = Skips::default();
        skips.add("non-prompt-record");
        let convs = group(records.clone(), skips, "test");
        assert_eq!(convs.len(), 2);
        assert_eq!(convs[0].start.id, "c1");
        let prompts: Vec<_> = convs[0]
            .pairs
            .iter()
            .map(|p| match &p.user[0] {
                Part::Text(t) => t.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(prompts, ["first", "second", "third"]);
        assert_eq!(convs[0].skipped.get("non-prompt-record"), 1);
        assert!(convs[1].start.id.starts_with("gemini-activity-"));
        let again = group(records, Skips::default(), "test");
        assert_eq!(again[1].start.id, convs[1].start.id);
    }
}
