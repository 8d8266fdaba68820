//! chatmill's own inline-mode raw log (`raw/<session-id>.md`): the writer
//! ([`render_raw_log_entry`]) and the reader ([`RawLogParser`]). The format,
//! including its escaping rule, is specified in `FORMAT.md` beside this
//! crate's `Cargo.toml`.

use chatmill_adapter_sdk::Timestamp;

/// One appended raw-log entry: one prompt/response exchange.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawLogEntry {
    /// When the user prompt was sent (UTC). `None` writes an empty value.
    pub timestamp: Option<Timestamp>,
    /// The model that answered. Written on one line (line breaks become
    /// spaces); `None` writes an empty value.
    pub model: Option<String>,
    /// 1-based turn index within the session.
    pub turn: u32,
    /// The user's prompt, verbatim.
    pub user: String,
    /// The assistant's response, verbatim.
    pub assistant: String,
}

pub const SEPARATOR: &str = "---";
pub const TIMESTAMP: &str = "**Timestamp:**";
pub const MODEL: &str = "**Model:**";
pub const TURN: &str = "**Turn:**";
pub const USER: &str = "**User:**";
pub const ASSISTANT: &str = "**Assistant:**";

/// Whether a text line, once its leading backslashes are removed, looks like
/// a line of the entry structure. Such lines are escaped with one more
/// leading backslash when written.
fn structural(line: &str) -> bool {
    let bare = line.trim_start_matches('\\');
    bare.trim_end() == SEPARATOR
        || [TIMESTAMP, MODEL, TURN, USER, ASSISTANT]
            .iter()
            .any(|m| bare.starts_with(m))
}

/// Escapes a text for the raw log: every structural-looking line gets one
/// leading backslash.
fn escape(text: &str, out: &mut String) {
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if structural(line) {
            out.push('\\');
        }
        out.push_str(line);
    }
}

/// Reverses [`escape`] for one line.
fn unescape(line: &str) -> &str {
    if line.starts_with('\\') && structural(line) {
        &line[1..]
    } else {
        line
    }
}

/// Renders one entry exactly as the inline writer appends it (ends with a
/// newline; entries are concatenated as they are).
pub fn render_raw_log_entry(entry: &RawLogEntry) -> String {
    let mut out = String::with_capacity(entry.user.len() + entry.assistant.len() + 128);
    out.push_str(SEPARATOR);
    out.push('\n');
    out.push_str(TIMESTAMP);
    if let Some(t) = entry.timestamp {
        out.push(' ');
        out.push_str(&t.to_rfc3339());
    }
    out.push('\n');
    out.push_str(MODEL);
    if let Some(m) = entry.model.as_deref() {
        let one_line: String = m
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        let one_line = one_line.trim();
        if !one_line.is_empty() {
            out.push(' ');
            out.push_str(one_line);
        }
    }
    out.push('\n');
    out.push_str(TURN);
    out.push(' ');
    out.push_str(&entry.turn.to_string());
    out.push('\n');
    out.push_str(USER);
    out.push('\n');
    escape(&entry.user, &mut out);
    out.push('\n');
    out.push_str(ASSISTANT);
    out.push('\n');
    escape(&entry.assistant, &mut out);
    out.push('\n');
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first entry.
    Preamble,
    Header,
    User,
    Assistant,
    /// Inside an entry whose header was broken: wait for the next entry.
    Broken,
}

/// A parsed entry plus where it started (1-based line of its `---`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedEntry {
    pub entry: RawLogEntry,
    pub line: u64,
    /// The entry had no `**Turn:**` value.
    pub turn_missing: bool,
    /// The entry had no `**Assistant:**` line (a cut-off file).
    pub unanswered: bool,
}

/// Line-at-a-time raw-log reader.
#[derive(Debug)]
pub struct RawLogParser {
    state: State,
    /// A `---` line not yet known to be a separator (it is one only when the
    /// next line starts with `**Timestamp:**`).
    held: Option<u64>,
    line_no: u64,
    cur: RawLogEntry,
    cur_line: u64,
    turn_seen: bool,
    user_lines: Vec<String>,
    assistant_lines: Vec<String>,
    entries: Vec<ParsedEntry>,
    /// Skip reasons (kebab-case).
    pub skips: Vec<&'static str>,
}

impl Default for RawLogParser {
    fn default() -> Self {
        Self::new()
    }
}

impl RawLogParser {
    pub fn new() -> Self {
        Self {
            state: State::Preamble,
            held: None,
            line_no: 0,
            cur: RawLogEntry::default(),
            cur_line: 0,
            turn_seen: false,
            user_lines: Vec::new(),
            assistant_lines: Vec::new(),
            entries: Vec::new(),
            skips: Vec::new(),
        }
    }

    /// Feeds one line (without its `\n`).
    pub fn push_line(&mut self, line: &str) {
        self.line_no += 1;
        if let Some(sep_line) = self.held.take() {
            if line.starts_with(TIMESTAMP) {
                self.finish_entry();
                self.begin_entry(sep_line);
                self.header_line(line);
                return;
            }
            // Not a separator after all: text.
            self.text_line(SEPARATOR);
        }
        if line == SEPARATOR {
            self.held = Some(self.line_no);
            return;
        }
        match self.state {
            State::Preamble | State::Broken => {}
            State::Header => self.header_line(line),
            State::User | State::Assistant => self.text_line(line),
        }
    }

    fn begin_entry(&mut self, line: u64) {
        self.state = State::Header;
        self.cur = RawLogEntry::default();
        self.cur_line = line;
        self.turn_seen = false;
        self.user_lines.clear();
        self.assistant_lines.clear();
    }

    fn header_line(&mut self, line: &str) {
        let value = |m: &str| line[m.len()..].trim().to_owned();
        if line.starts_with(TIMESTAMP) {
            self.cur.timestamp = Timestamp::parse(&value(TIMESTAMP));
        } else if line.starts_with(MODEL) {
            let v = value(MODEL);
            self.cur.model = (!v.is_empty()).then_some(v);
        } else if line.starts_with(TURN) {
            if let Ok(n) = value(TURN).parse::<u32>() {
                self.cur.turn = n;
                self.turn_seen = true;
            }
        } else if line.trim_end() == USER {
            self.state = State::User;
        } else if line.trim().is_empty() || (line.starts_with("**") && line.contains(":**")) {
            // Blank lines and unknown `**Key:** value` header lines are tolerated.
        } else {
            self.skips.push("malformed-entry");
            self.state = State::Broken;
        }
    }

    fn text_line(&mut self, line: &str) {
        match self.state {
            State::User if line.trim_end() == ASSISTANT => self.state = State::Assistant,
            State::User => self.user_lines.push(unescape(line).to_owned()),
            State::Assistant => self.assistant_lines.push(unescape(line).to_owned()),
            _ => {}
        }
    }

    fn finish_entry(&mut self) {
        match self.state {
            State::User | State::Assistant => {
                let mut entry = std::mem::take(&mut self.cur);
                entry.user = self.user_lines.join("\n");
                entry.assistant = self.assistant_lines.join("\n");
                self.entries.push(ParsedEntry {
                    entry,
                    line: self.cur_line,
                    turn_missing: !self.turn_seen,
                    unanswered: self.state == State::User,
                });
            }
            State::Header => self.skips.push("truncated-entry"),
            State::Preamble | State::Broken => {}
        }
        self.user_lines.clear();
        self.assistant_lines.clear();
        self.state = State::Preamble;
    }

    /// Entries completed so far (an entry completes when the next begins).
    pub fn take_entries(&mut self) -> Vec<ParsedEntry> {
        std::mem::take(&mut self.entries)
    }

    /// Ends the input; returns the remaining entries.
    pub fn finish(&mut self) -> Vec<ParsedEntry> {
        if self.held.take().is_some() {
            self.text_line(SEPARATOR);
        }
        self.finish_entry();
        self.take_entries()
    }
}

/// Parses a whole raw log held in memory.
pub fn parse_raw_log(text: &str) -> Vec<RawLogEntry> {
    let mut p = RawLogParser::new();
    let body = text.strip_suffix('\n').unwrap_or(text);
    if !text.is_empty() {
        for line in body.split('\n') {
            p.push_line(line);
        }
    }
    p.finish().into_iter().map(|e| e.entry).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(turn: u32, user: &str, assistant: &str) -> RawLogEntry {
        RawLogEntry {
            timestamp: Timestamp::parse("2026-03-31T14:23:05Z"),
            model: Some("claude-opus-4-5".into()),
            turn,
            user: user.into(),
            assistant: assistant.into(),
        }
    }

    #[test]
    fn renders_the_spec_layout() {
        let got = render_raw_log_entry(&entry(4, "Hi", "Hello!\n\n```\n---\n```"));
        assert_eq!(
            got,
            "---\n**Timestamp:** 2026-03-31T14:23:05Z\n**Model:** claude-opus-4-5\n**Turn:** 4\n**User:**\nHi\n**Assistant:**\nHello!\n\n```\n\\---\n```\n"
        );
        let bare = RawLogEntry::default();
        assert_eq!(
            render_raw_log_entry(&bare),
            "---\n**Timestamp:**\n**Model:**\n**Turn:** 0\n**User:**\n\n**Assistant:**\n\n"
        );
    }

    /// Texts that would break a naive reader: separators, markers, blank
    /// lines at either end, backslashes, fences, nothing at all.
    pub const TRICKY: &[&str] = &[
        "",
        "\n",
        "\n\n",
        "plain",
        "trailing newline\n",
        "\nleading newline",
        "---",
        "---\n**Timestamp:** 2020-01-01T00:00:00Z",
        "a\n---\nb",
        "**Assistant:**",
        "**User:**\n**Assistant:**\nfake",
        "**Turn:** 9\n**Model:** x",
        "\\---",
        "\\\\---\n\\**User:**",
        "\\",
        "text \\--- inline",
        " ---",
        "--- ",
        "----",
        "```\n---\n**Timestamp:** now\n```",
        "```md\n---\n**User:**\n**Assistant:**\n---\n```\nafter",
        "**Assistant:** inline answer",
        "ends with separator\n---",
        "ends with separator and blank\n---\n",
        "unicode é ✓ 日本語\n\ttabs  ",
    ];

    #[test]
    fn tricky_texts_round_trip() {
        let mut log = String::new();
        let mut want = Vec::new();
        let mut turn = 0;
        for u in TRICKY {
            for a in TRICKY {
                turn += 1;
                let e = entry(turn, u, a);
                // Each entry alone.
                let one = render_raw_log_entry(&e);
                assert_eq!(
                    parse_raw_log(&one),
                    vec![e.clone()],
                    "user {u:?} assistant {a:?}"
                );
                log.push_str(&one);
                want.push(e);
            }
        }
        // And all of them appended to one log.
        assert_eq!(parse_raw_log(&log), want);
    }

    #[test]
    fn the_format_md_example() {
        let log = "---\n**Timestamp:** 2026-03-31T14:23:05Z\n**Model:** claude-opus-4-5\n**Turn:** 4\n**User:**\nWhat does this mean?\n\\---\n\\**Assistant:** is this a marker?\n**Assistant:**\nIt separates YAML documents:\n```yaml\n\\---\na: 1\n```\n";
        let got = parse_raw_log(log);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].user,
            "What does this mean?\n---\n**Assistant:** is this a marker?"
        );
        assert_eq!(
            got[0].assistant,
            "It separates YAML documents:\n```yaml\n---\na: 1\n```"
        );
        assert_eq!(render_raw_log_entry(&got[0]), log);
    }

    #[test]
    fn unescaped_legacy_logs_still_parse() {
        // A writer that did not escape: `---` inside a fence and at the end
        // of an answer stay text, because no `**Timestamp:**` follows.
        let log = "---\n**Timestamp:** 2026-03-31T14:23:05Z\n**Model:** m\n**Turn:** 1\n**User:**\nshow yaml\n**Assistant:**\n```yaml\n---\na: 1\n```\n---\n---\n**Timestamp:** 2026-03-31T14:25:00Z\n**Model:** m\n**Turn:** 2\n**User:**\nthanks\n**Assistant:**\nwelcome\n";
        let got = parse_raw_log(log);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].assistant, "```yaml\n---\na: 1\n```\n---");
        assert_eq!(got[1].user, "thanks");
        assert_eq!(got[1].turn, 2);
    }

    #[test]
    fn cut_off_and_broken_entries() {
        let mut p = RawLogParser::new();
        for l in [
            "---",
            "**Timestamp:** x",
            "garbage",
            "---",
            "**Timestamp:** 2026-01-01T00:00:00Z",
            "**User:**",
            "unanswered",
        ] {
            p.push_line(l);
        }
        let got = p.finish();
        assert_eq!(got.len(), 1);
        assert!(got[0].unanswered);
        assert!(got[0].turn_missing);
        assert_eq!(got[0].entry.user, "unanswered");
        assert_eq!(p.skips, vec!["malformed-entry"]);
    }
}
