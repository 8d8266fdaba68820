//! chatmill adapter for Google Gemini:
//!
//! - Google Takeout "My Activity → Gemini Apps" as `MyActivity.json` and
//!   `MyActivity.html` ([`takeout`]);
//! - Gemini CLI sessions, `session-*.json` and the 0.40+ `session-*.jsonl`
//!   form ([`cli`]).
//!
//! `open` looks at the first bytes to pick the reader.

pub mod cli;
pub mod date;
pub mod html;
pub mod takeout;
pub mod tools;

use std::io::Read;

use chatmill_adapter_sdk::text::{count_present, first_byte, head_str};
use chatmill_adapter_sdk::{
    Adapter, AdapterInfo, ErrorKind, FormatInfo, Input, Location, Options, ParseError, Session,
    batched,
};

pub struct Gemini;

const HEAD: usize = 64 * 1024;

impl Adapter for Gemini {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "gemini".into(),
            name: "Google Gemini".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![
                FormatInfo {
                    id: "gemini-takeout-json".into(),
                    description: "Google Takeout My Activity > Gemini Apps, JSON".into(),
                    file_patterns: vec!["MyActivity.json".into(), "*Activit*.json".into()],
                },
                FormatInfo {
                    id: "gemini-takeout-html".into(),
                    description: "Google Takeout My Activity > Gemini Apps, HTML (the default)"
                        .into(),
                    file_patterns: vec!["MyActivity.html".into(), "*Activit*.html".into()],
                },
                FormatInfo {
                    id: "gemini-cli-session".into(),
                    description:
                        "Gemini CLI session (~/.gemini/tmp/<project>/chats/session-*.json / .jsonl)"
                            .into(),
                    file_patterns: vec!["session-*.json".into(), "session-*.jsonl".into()],
                },
            ],
        }
    }

    fn sniff(head: &[u8], file_name: &str) -> u8 {
        sniff(head, file_name)
    }

    fn open(mut input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        let name = input.name().to_string();
        let mut head = Vec::with_capacity(HEAD);
        let mut chunk = vec![0u8; HEAD];
        while head.len() < HEAD {
            match input.read(&mut chunk[..HEAD - head.len()]) {
                Ok(0) => break,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(ParseError::new(
                        ErrorKind::Internal,
                        format!("reading input failed: {e}"),
                    ));
                }
            }
        }
        let format = detect(&head);
        let reader = std::io::Cursor::new(head).chain(input);
        Ok(match format {
            Detected::TakeoutHtml => {
                batched(takeout::TakeoutReader::new(reader, takeout::Kind::Html))
            }
            Detected::TakeoutJson => {
                batched(takeout::TakeoutReader::new(reader, takeout::Kind::Json))
            }
            Detected::CliJsonl => batched(cli::JsonlSession::new(reader, name)),
            Detected::CliJson => batched(cli::JsonSession::new(reader, name)),
            Detected::Empty => batched(cli::JsonlSession::new(reader, name)),
            Detected::Unknown(b) => {
                return Err(ParseError::not_this_format(format!(
                    "expected a Gemini Takeout or Gemini CLI file, found `{}` first",
                    (b as char).escape_default()
                ))
                .at(Location::byte(0)));
            }
        })
    }
}

enum Detected {
    TakeoutHtml,
    TakeoutJson,
    CliJsonl,
    CliJson,
    Empty,
    Unknown(u8),
}

fn detect(head: &[u8]) -> Detected {
    match first_byte(head) {
        None => Detected::Empty,
        Some(b'<') => Detected::TakeoutHtml,
        Some(b'[') => Detected::TakeoutJson,
        Some(b'{') => {
            let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
            let first_line = body
                .split(|b| *b == b'\n')
                .find(|l| !l.iter().all(u8::is_ascii_whitespace))
                .unwrap_or(&[]);
            let complete_line = body.len() > first_line.len();
            if complete_line && serde_json::from_slice::<serde::de::IgnoredAny>(first_line).is_ok()
            {
                Detected::CliJsonl
            } else {
                Detected::CliJson
            }
        }
        Some(b) => Detected::Unknown(b),
    }
}

/// Scores the three shapes by their structural keys; the file name only
/// adds a little.
pub fn sniff(head: &[u8], file_name: &str) -> u8 {
    let h = head_str(head);
    let lower_name = file_name.to_ascii_lowercase();
    let mut score: u8 = match first_byte(head) {
        Some(b'{') => {
            let cli = count_present(&h, &["\"sessionId\"", "\"projectHash\""]);
            let msgs = count_present(
                &h,
                &[
                    "\"type\": \"gemini\"",
                    "\"type\":\"gemini\"",
                    "\"type\": \"user\"",
                    "\"type\":\"user\"",
                    "\"messages\"",
                ],
            );
            match (cli, msgs) {
                (2, _) => 90,
                (1, m) if m >= 2 && (h.contains("\"gemini\"")) => 75,
                _ => 0,
            }
        }
        Some(b'[') => {
            let takeout =
                count_present(&h, &["\"header\"", "\"title\"", "\"time\"", "\"products\""]);
            let gemini = h.contains("\"Gemini Apps\"") || h.contains("\"Gemini\"");
            let prompted = h.contains("\"Prompted ") || h.contains("\"Prompted:");
            match (takeout, gemini, prompted) {
                (t, true, _) if t >= 3 => 90,
                (t, _, true) if t >= 3 => 85,
                (t, false, false) if t >= 4 => 40, // My Activity of another product
                _ => 0,
            }
        }
        Some(b'<') => {
            let activity = h.contains("outer-cell") || h.contains("My Activity");
            let mdl = h.contains("mdl-");
            let gemini = h.contains("Gemini Apps");
            match (activity, mdl, gemini) {
                (true, _, true) => 95,
                (true, true, false) => 70,
                (true, false, false) => 40,
                _ => 0,
            }
        }
        _ => 0,
    };
    if score > 0 && (lower_name.contains("activit") || lower_name.starts_with("session-")) {
        score = score.saturating_add(5);
    }
    score.min(100)
}

chatmill_adapter_sdk::export_adapter!(Gemini);
