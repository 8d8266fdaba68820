//! An example third-party chatmill adapter for the made-up "linechat" format:
//!
//! ```text
//! # linechat v1
//! [2024-05-01 10:00:00] me: question
//! [2024-05-01 10:00:09] bot: answer
//! ```
//!
//! One file is one conversation; a `me:` line starts a pair, `bot:` lines
//! answer it.

use chatmill_adapter_sdk::lines::LineReader;
use chatmill_adapter_sdk::{
    Adapter, AdapterInfo, Conversation, ConversationReader, FormatInfo, Input, Location, Options,
    ParseError, Part, Session, Timestamp, TurnPair, batched, text,
};

pub struct LineChat;

impl Adapter for LineChat {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "linechat".into(),
            name: "linechat logs".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![FormatInfo {
                id: "linechat-v1".into(),
                description: "linechat v1 text logs".into(),
                file_patterns: vec!["*.linechat".into()],
            }],
        }
    }

    fn sniff(head: &[u8], file_name: &str) -> u8 {
        let head = text::head_str(head);
        match (
            head.starts_with("# linechat v1"),
            file_name.ends_with(".linechat"),
        ) {
            (true, _) => 95,
            (false, true) => 40,
            _ => 0,
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
        c.start.title = Some(c.start.id.clone());
        c.start.platform = "linechat".into();
        while let Some(line) = lines.next_line()? {
            let s = String::from_utf8_lossy(line.bytes);
            if line.number == 1 {
                if !s.starts_with("# linechat v1") {
                    return Err(
                        ParseError::not_this_format("missing `# linechat v1` header")
                            .at(Location::line(1)),
                    );
                }
                continue;
            }
            if s.trim().is_empty() {
                continue;
            }
            let Some((stamp, rest)) = s.strip_prefix('[').and_then(|r| r.split_once("] ")) else {
                c.skipped.add("malformed-line");
                continue;
            };
            let time = Timestamp::parse(stamp);
            if let Some(q) = rest.strip_prefix("me: ") {
                c.pairs.push(TurnPair {
                    timestamp: time,
                    user: vec![Part::Text(q.to_string())],
                    ..TurnPair::default()
                });
            } else if let Some(a) = rest.strip_prefix("bot: ") {
                match c.pairs.last_mut() {
                    Some(p) => p.assistant.push(Part::Text(a.to_string())),
                    None => c.skipped.add("answer-before-question"),
                }
            } else {
                c.skipped.add("unknown-speaker");
            }
        }
        c.start.created = c.pairs.first().and_then(|p| p.timestamp);
        Ok(Some(c))
    }
}

chatmill_adapter_sdk::export_adapter!(LineChat);

#[cfg(test)]
mod tests {
    use super::*;
    use chatmill_adapter_sdk::{Item, parse_all};

    #[test]
    fn parses_the_fixture() {
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/team.linechat"
        ))
        .unwrap();
        let items = parse_all::<LineChat>(Input::from_bytes("team.linechat", bytes), 10).unwrap();
        let pairs = items.iter().filter(|i| matches!(i, Item::Pair(_))).count();
        assert_eq!(pairs, 2);
    }
}
