//! Importing a transcript that is still being written (`live`, as the
//! hooks do): a conversation's last pair is held back while it looks
//! unfinished, so it is chunked once, whole, by a later import of the grown
//! file — never early with half an answer (pairs already chunked are not
//! chunked again).
//!
//! Unfinished: the assistant has not answered in words since its last tool
//! call (or at all), or the file does not end with a line break, so its
//! last line is still being written.

use chatmill_model::{Conversation, Part};

/// Drops `conv`'s last pair when it is unfinished, or when `partial` (the
/// input's last line is incomplete and `conv` is its last conversation).
pub(super) fn hold_back(conv: &mut Conversation, partial: bool) -> bool {
    let unfinished = conv.pairs.last().is_some_and(|p| !answered(&p.assistant));
    if unfinished || (partial && !conv.pairs.is_empty()) {
        conv.pairs.pop();
        return true;
    }
    false
}

/// Whether the assistant's parts end in words: text or code after its last
/// tool call or result.
fn answered(parts: &[Part]) -> bool {
    for p in parts.iter().rev() {
        match p {
            Part::Text { text } if !text.trim().is_empty() => return true,
            Part::Code { .. } => return true,
            Part::ToolCall { .. } | Part::ToolResult { .. } => return false,
            _ => {}
        }
    }
    false
}

/// Whether the file at `path` ends inside a line.
pub(super) fn ends_mid_line(path: &std::path::Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let mut last = [0u8; 1];
    f.seek(SeekFrom::End(-1)).is_ok() && f.read_exact(&mut last).is_ok() && last[0] != b'\n'
}

#[cfg(test)]
mod tests {
    use super::*;
    use chatmill_model::Pair;

    fn pair(index: u32, assistant: Vec<Part>) -> Pair {
        Pair {
            index,
            timestamp: None,
            model: None,
            user: vec![Part::Text { text: "q".into() }],
            assistant,
            metadata: Default::default(),
        }
    }

    fn text(t: &str) -> Part {
        Part::Text { text: t.into() }
    }

    fn tool() -> Part {
        Part::ToolCall {
            name: "Read".into(),
            summary: "x".into(),
        }
    }

    #[test]
    fn the_last_pair_waits_until_the_assistant_has_answered_in_words() {
        let conv = |last: Vec<Part>| Conversation {
            id: "s".into(),
            title: None,
            created: None,
            updated: None,
            platform: "claude-code".into(),
            model: None,
            metadata: Default::default(),
            pairs: vec![pair(1, vec![text("done")]), pair(2, last)],
            skipped: Default::default(),
        };
        for (last, held) in [
            (vec![text("Looking."), tool()], true),
            (vec![], true),
            (vec![text("   ")], true),
            (vec![tool(), text("Here it is.")], false),
            (vec![text("Plain answer.")], false),
        ] {
            let mut c = conv(last.clone());
            assert_eq!(hold_back(&mut c, false), held, "{last:?}");
            assert_eq!(c.pairs.len(), if held { 1 } else { 2 });
        }
        let mut c = conv(vec![text("Plain answer.")]);
        assert!(hold_back(&mut c, true), "a partial last line holds it back");
    }
}
