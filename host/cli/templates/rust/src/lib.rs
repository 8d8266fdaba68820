//! A chatmill adapter for the "{{name}} chat log" format:
//!
//! ```text
//! # {{name}} chat log v1
//! [2024-05-01T10:00:00Z] user: a question
//! [2024-05-01T10:00:09Z] assistant: its answer
//! ```
//!
//! One file is one conversation (its id is the file name without the
//! extension); a `user:` line starts a pair, `assistant:` lines answer it.
//! Replace the parsing with your format's; keep `describe`'s id stable.

use chatmill_adapter_sdk::lines::LineReader;
use chatmill_adapter_sdk::{
    Adapter, AdapterInfo, Conversation, ConversationReader, FormatInfo, Input, Location, Options,
    ParseError, Part, Session, Timestamp, TurnPair, batched, text,
};

const HEADER: &str = "# {{name}} chat log v1";

pub struct Format;

impl Adapter for Format {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "{{name}}".into(),
            name: "{{name}} chat logs".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![FormatInfo {
                id: "{{name}}-v1".into(),
                description: "{{name}} chat log, version 1".into(),
                file_patterns: vec!["*.chatlog".into()],
            }],
        }
    }

    /// 50 or more claims the file. The header is proof; the file name alone
    /// is a hint, kept below 50 so it never claims another format's file.
    fn sniff(head: &[u8], file_name: &str) -> u8 {
        if text::head_str(head).starts_with(HEADER) {
            95
        } else if file_name.ends_with(".chatlog") {
            20
        } else {
            0
        }
    }

    fn open(input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        let name = input.name().to_string();
        Ok(batched(Reader {
            lines: Some(LineReader::new(input)),
            name,
        }))
    }
}

struct Reader {
    lines: Option<LineReader<Input>>,
    name: String,
}

impl ConversationReader for Reader {
    fn next_conversation(&mut self) -> Result<Option<Conversation>, ParseError> {
        let Some(mut lines) = self.lines.take() else {
            return Ok(None);
        };
        let mut c = Conversation::default();
        c.start.id = text::file_stem(&self.name).to_string();
        c.start.platform = "{{name}}".into();
        let mut seen_header = false;
        while let Some(line) = lines.next_line()? {
            let s = String::from_utf8_lossy(line.bytes);
            if line.number == 1 {
                if !s.starts_with(HEADER) {
                    return Err(ParseError::not_this_format(format!(
                        "the first line is not `{HEADER}`"
                    ))
                    .at(Location::line(1)));
                }
                seen_header = true;
                continue;
            }
            if s.trim().is_empty() {
                continue;
            }
            let Some((stamp, said)) = s.strip_prefix('[').and_then(|r| r.split_once("] ")) else {
                c.skipped.add("malformed-line");
                continue;
            };
            let time = Timestamp::parse(stamp);
            if let Some(q) = said.strip_prefix("user: ") {
                c.pairs.push(TurnPair {
                    timestamp: time,
                    user: vec![Part::Text(q.to_string())],
                    ..TurnPair::default()
                });
            } else if let Some(a) = said.strip_prefix("assistant: ") {
                match c.pairs.last_mut() {
                    Some(p) => p.assistant.push(Part::Text(a.to_string())),
                    None => c.skipped.add("answer-before-question"),
                }
            } else {
                c.skipped.add("unknown-speaker");
            }
        }
        if !seen_header {
            return Err(ParseError::not_this_format("the input is empty"));
        }
        c.start.created = c.pairs.first().and_then(|p| p.timestamp);
        Ok(Some(c))
    }
}

chatmill_adapter_sdk::export_adapter!(Format);

/// Native tests (`cargo test`): no wasm needed.
#[cfg(test)]
mod tests {
    use std::path::Path;

    use chatmill_adapter_sdk::testkit::{assert_chunking_invariant, count, sniff_file};

    use super::*;

    fn sample() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/sample.chatlog"))
    }

    #[test]
    fn the_sample_is_one_conversation_of_two_pairs() {
        // Same output for 1-byte reads and 1-item batches as for big ones.
        let items = assert_chunking_invariant::<Format>(sample());
        assert_eq!(count(&items), (1, 2));
        assert!(sniff_file::<Format>(sample()) >= 50);
    }

    #[test]
    fn another_format_is_not_claimed() {
        assert!(Format::sniff(b"[{\"mapping\": {}}]", "conversations.json") < 50);
        assert!(Format::sniff(b"hello", "notes.chatlog") < 50);
    }
}
