//! One input's entry of `parse`'s JSON array, written field by field as its
//! parts arrive, laid out exactly as serde_json lays out the whole value:
//!
//! ```text
//! [{"input":…,"adapter":{…},"encoding":…,"conversations":[{…},…],"error":{…},"warnings":[…]},…]
//! ```
//!
//! `adapter` and `encoding` are there when an adapter read the input,
//! `conversations` when it was read to the end or any conversation came
//! before an error, `error` when it failed, `warnings` when there are any.

use std::io::{Result, Write};

use chatmill_runtime::model::Conversation;
use serde::Serialize;

/// Compact (one line) or pretty (serde_json's two-space layout).
#[derive(Debug, Clone, Copy)]
pub(super) enum Layout {
    Compact,
    Pretty,
}

/// Indentation of an entry's fields and of its conversations, pretty.
const FIELD_INDENT: &str = "\n    ";
const ITEM_INDENT: &str = "\n      ";

impl Layout {
    /// A conversation as it stands in the `conversations` array.
    pub(super) fn conversation(self, c: &Conversation) -> String {
        self.value(c, ITEM_INDENT)
    }

    /// `value` as JSON; pretty, its inner lines indented by `indent`
    /// (serde_json never puts a raw line break inside a string).
    fn value(self, value: &impl Serialize, indent: &str) -> String {
        let json = match self {
            Layout::Compact => serde_json::to_string(value),
            Layout::Pretty => serde_json::to_string_pretty(value),
        };
        // The model's types serialize without fail (string keys, no
        // floats that JSON cannot hold); null says so if one ever does not.
        let json = json.unwrap_or_else(|_| "null".into());
        match self {
            Layout::Compact => json,
            Layout::Pretty => json.replace('\n', indent),
        }
    }
}

/// The entry being written.
pub(super) struct Entry {
    layout: Layout,
    /// Conversations written so far; `None` until the array is opened.
    conversations: Option<usize>,
    /// The array was opened and closed.
    closed: bool,
}

impl Entry {
    /// Opens the entry (after a comma unless it is the array's first) and
    /// writes its `input`.
    pub(super) fn begin(
        out: &mut impl Write,
        layout: Layout,
        first: bool,
        input: &str,
    ) -> Result<Self> {
        let comma = if first { "" } else { "," };
        let input = layout.value(&input, FIELD_INDENT);
        match layout {
            Layout::Compact => write!(out, "{comma}{{\"input\":{input}")?,
            Layout::Pretty => write!(out, "{comma}\n  {{{FIELD_INDENT}\"input\": {input}")?,
        }
        Ok(Self {
            layout,
            conversations: None,
            closed: false,
        })
    }

    /// One more field (closing the conversations first, if open).
    pub(super) fn field(
        &mut self,
        out: &mut impl Write,
        key: &str,
        value: &impl Serialize,
    ) -> Result<()> {
        self.close_conversations(out)?;
        let value = self.layout.value(value, FIELD_INDENT);
        match self.layout {
            Layout::Compact => write!(out, ",\"{key}\":{value}"),
            Layout::Pretty => write!(out, ",{FIELD_INDENT}\"{key}\": {value}"),
        }
    }

    /// One conversation, already laid out by [`Layout::conversation`].
    pub(super) fn conversation(&mut self, out: &mut impl Write, json: &str) -> Result<()> {
        let written = match self.conversations {
            Some(n) => n,
            None => {
                match self.layout {
                    Layout::Compact => out.write_all(b",\"conversations\":[")?,
                    Layout::Pretty => write!(out, ",{FIELD_INDENT}\"conversations\": [")?,
                }
                0
            }
        };
        let comma = if written == 0 { "" } else { "," };
        match self.layout {
            Layout::Compact => write!(out, "{comma}{json}")?,
            Layout::Pretty => write!(out, "{comma}{ITEM_INDENT}{json}")?,
        }
        self.conversations = Some(written + 1);
        Ok(())
    }

    /// The input was read to the end: its conversations, `[]` if none.
    pub(super) fn end_conversations(&mut self, out: &mut impl Write) -> Result<()> {
        if self.conversations.is_none() {
            match self.layout {
                Layout::Compact => out.write_all(b",\"conversations\":[")?,
                Layout::Pretty => write!(out, ",{FIELD_INDENT}\"conversations\": [")?,
            }
            self.conversations = Some(0);
        }
        self.close_conversations(out)
    }

    fn close_conversations(&mut self, out: &mut impl Write) -> Result<()> {
        match self.conversations {
            Some(n) if !self.closed => {
                self.closed = true;
                match self.layout {
                    Layout::Pretty if n > 0 => write!(out, "{FIELD_INDENT}]"),
                    _ => out.write_all(b"]"),
                }
            }
            _ => Ok(()),
        }
    }

    /// Closes the entry.
    pub(super) fn end(mut self, out: &mut impl Write) -> Result<()> {
        self.close_conversations(out)?;
        match self.layout {
            Layout::Compact => out.write_all(b"}"),
            Layout::Pretty => out.write_all(b"\n  }"),
        }
    }
}

/// The array's end after `entries` entries.
pub(super) fn close_array(out: &mut impl Write, layout: Layout, entries: usize) -> Result<()> {
    match layout {
        Layout::Pretty if entries > 0 => out.write_all(b"\n]\n"),
        _ => out.write_all(b"]\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn conversation(id: &str) -> Conversation {
        Conversation {
            id: id.into(),
            title: Some("t \"q\"\nline".into()),
            created: None,
            updated: None,
            platform: "p".into(),
            model: None,
            metadata: BTreeMap::from([("k".into(), "v".into())]),
            pairs: Vec::new(),
            skipped: BTreeMap::new(),
        }
    }

    #[derive(Serialize)]
    struct Whole {
        input: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        encoding: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        conversations: Option<Vec<Conversation>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    }

    /// Writes `entries` through `Entry` and compares with serde_json's
    /// layout of the same values in one piece.
    fn same_as_serde(layout: Layout, entries: &[Whole]) {
        let mut out = Vec::new();
        out.write_all(b"[").unwrap();
        for (i, w) in entries.iter().enumerate() {
            let mut e = Entry::begin(&mut out, layout, i == 0, &w.input).unwrap();
            if let Some(enc) = &w.encoding {
                e.field(&mut out, "encoding", enc).unwrap();
            }
            for c in w.conversations.iter().flatten() {
                e.conversation(&mut out, &layout.conversation(c)).unwrap();
            }
            match &w.error {
                Some(err) => e.field(&mut out, "error", err).unwrap(),
                None => e.end_conversations(&mut out).unwrap(),
            }
            if !w.warnings.is_empty() {
                e.field(&mut out, "warnings", &w.warnings).unwrap();
            }
            e.end(&mut out).unwrap();
        }
        close_array(&mut out, layout, entries.len()).unwrap();
        let expected = match layout {
            Layout::Compact => serde_json::to_string(entries),
            Layout::Pretty => serde_json::to_string_pretty(entries),
        }
        .unwrap()
            + "\n";
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn streamed_entries_are_laid_out_as_serde_json_lays_out_the_whole() {
        let cases = || {
            vec![
                Whole {
                    input: "a.json".into(),
                    encoding: Some("utf-8".into()),
                    conversations: Some(vec![conversation("1"), conversation("2")]),
                    error: None,
                    warnings: vec!["w \u{1b}".into()],
                },
                Whole {
                    input: "empty.json".into(),
                    encoding: Some("utf-8".into()),
                    conversations: Some(Vec::new()),
                    error: None,
                    warnings: Vec::new(),
                },
                Whole {
                    input: "bad.json".into(),
                    encoding: None,
                    conversations: None,
                    error: Some("no adapter".into()),
                    warnings: Vec::new(),
                },
                Whole {
                    input: "half.json".into(),
                    encoding: Some("utf-16le".into()),
                    conversations: Some(vec![conversation("3")]),
                    error: Some("cut off".into()),
                    warnings: Vec::new(),
                },
            ]
        };
        for layout in [Layout::Compact, Layout::Pretty] {
            same_as_serde(layout, &cases());
            same_as_serde(layout, &cases()[2..3]);
            same_as_serde(layout, &[]);
        }
    }
}
