//! aider's `.aider.chat.history.md`: `# aider chat started at <local time>`
//! starts a session (one conversation each); `#### ` lines are the user's
//! input (multi-line prompts prefixed line by line); `> ` lines are aider's
//! own output (banner, file adds, commits, lint and command output); the
//! rest is the model's answer. Read line by line: a session is yielded as
//! soon as the next one starts.

use std::collections::{BTreeMap, VecDeque};

use chatmill_adapter_sdk::text::summarize;
use chatmill_adapter_sdk::{Conversation, Part, Skips, Timestamp, TurnPair};

use crate::md::Fence;
use crate::{RESULT_SUMMARY, fnv64};

pub const SESSION_HEADER: &str = "# aider chat started at ";

fn is_user(line: &str) -> bool {
    line == "####" || line.starts_with("#### ")
}

fn is_tool(line: &str) -> bool {
    line == ">" || line.starts_with("> ")
}

/// `> Models: X with diff edit format, …` / `> Main model: X with …` /
/// `> Model: X with …` → X.
fn model_line(tool: &str) -> Option<String> {
    let rest = ["Models: ", "Main model: ", "Model: "]
        .iter()
        .find_map(|p| tool.strip_prefix(p))?;
    let model = rest.split(" with ").next().unwrap_or(rest).trim();
    let model = model.split(',').next().unwrap_or(model).trim();
    (!model.is_empty()).then(|| model.to_owned())
}

#[derive(Default)]
struct Pending {
    user: Vec<String>,
    parts: Vec<Part>,
    text: Vec<String>,
    tool: Vec<String>,
    prose: bool,
    model: Option<String>,
}

impl Pending {
    fn flush_text(&mut self) {
        let joined = self.text.join("\n");
        let t = joined.trim_matches('\n');
        if !t.trim().is_empty() {
            self.parts.push(Part::Text(t.trim_end().to_owned()));
        }
        self.text.clear();
    }

    fn flush_tool(&mut self) {
        let joined = self.tool.join("\n");
        if !joined.trim().is_empty() {
            self.parts
                .push(Part::ToolResult(summarize(&joined, RESULT_SUMMARY)));
        }
        self.tool.clear();
    }
}

#[derive(Default)]
struct Session {
    /// `None` for text before the first header.
    started: Option<(String, Option<Timestamp>)>,
    model: Option<String>,
    first_model: Option<String>,
    version: Option<String>,
    pairs: Vec<TurnPair>,
    skips: Skips,
    /// The prompt being read and its answer so far.
    cur: Option<Pending>,
    /// Still reading `#### ` lines of `cur`.
    in_user: bool,
    fence: Fence,
}

/// Streaming aider parser.
pub struct AiderParser {
    session: Session,
    ids: BTreeMap<String, u32>,
    pub ready: VecDeque<Conversation>,
}

impl Default for AiderParser {
    fn default() -> Self {
        Self::new()
    }
}

impl AiderParser {
    pub fn new() -> Self {
        Self {
            session: Session::default(),
            ids: BTreeMap::new(),
            ready: VecDeque::new(),
        }
    }

    pub fn push_line(&mut self, line: &str) {
        if let Some(ts) = line.strip_prefix(SESSION_HEADER) {
            self.end_session();
            let ts = ts.trim().to_owned();
            let parsed = Timestamp::parse(&ts);
            self.session.started = Some((ts, parsed));
            return;
        }
        let s = &mut self.session;
        if is_user(line) {
            if !s.in_user {
                finish_pair(s);
                s.cur = Some(Pending {
                    model: s.model.clone(),
                    ..Pending::default()
                });
                s.in_user = true;
                s.fence.reset();
            }
            if let Some(p) = s.cur.as_mut() {
                p.user
                    .push(line.get(5..).unwrap_or("").trim_end().to_owned());
            }
            return;
        }
        s.in_user = false;
        let tool = is_tool(line) && !s.fence.is_open();
        if tool {
            let t = line.get(2..).unwrap_or("").trim_end();
            if let Some(m) = model_line(t) {
                s.model = Some(m.clone());
                if s.first_model.is_none() {
                    s.first_model = Some(m);
                }
            } else if let Some(v) = t.strip_prefix("Aider v")
                && s.version.is_none()
            {
                s.version = Some(v.trim().to_owned());
            }
        }
        let Some(p) = s.cur.as_mut() else {
            // The session banner before the first prompt.
            return;
        };
        if tool {
            p.flush_text();
            p.tool
                .push(line.get(2..).unwrap_or("").trim_end().to_owned());
        } else {
            p.flush_tool();
            s.fence.line(line);
            if !line.trim().is_empty() {
                p.prose = true;
            }
            p.text.push(line.to_owned());
        }
    }

    fn end_session(&mut self) {
        let mut s = std::mem::take(&mut self.session);
        finish_pair(&mut s);
        if s.pairs.is_empty() {
            // Started and left without a prompt: nothing to keep.
            return;
        }
        let first_prompt = match s.pairs.first().and_then(|p| p.user.first()) {
            Some(Part::Text(t)) => t.clone(),
            _ => String::new(),
        };
        let stamp = match &s.started {
            Some((raw, Some(t))) => {
                let _ = raw;
                t.to_rfc3339().trim_end_matches('Z').to_owned()
            }
            Some((raw, None)) => raw.replace(' ', "T"),
            None => "preamble".to_owned(),
        };
        let base = format!("aider-{stamp}-{:08x}", fnv64(&first_prompt) >> 32);
        let n = self.ids.entry(base.clone()).or_insert(0);
        *n += 1;
        let id = if *n == 1 { base } else { format!("{base}-{n}") };
        let mut conv = Conversation::default();
        conv.start.id = id;
        conv.start.platform = "local".into();
        conv.start.created = s.started.as_ref().and_then(|(_, t)| *t);
        conv.start.model = s.first_model.clone();
        conv.start
            .metadata
            .push(("source_tool".into(), "aider".into()));
        if let Some(v) = s.version {
            conv.start.metadata.push(("aider_version".into(), v));
        }
        conv.pairs = s.pairs;
        conv.skipped = s.skips;
        self.ready.push_back(conv);
    }

    /// Ends the input.
    pub fn finish(&mut self) {
        self.end_session();
    }
}

fn finish_pair(s: &mut Session) {
    s.in_user = false;
    let Some(mut p) = s.cur.take() else { return };
    p.flush_text();
    p.flush_tool();
    let user = p.user.join("\n").trim().to_owned();
    if user.is_empty() {
        s.skips.add("empty-user-prompt");
        return;
    }
    if user.starts_with('/') && !p.prose {
        // `/add`, `/run`, `/drop`…: aider commands the model never answered.
        s.skips.add("aider-command");
        return;
    }
    s.pairs.push(TurnPair {
        index: 0,
        timestamp: None,
        model: p.model,
        user: vec![Part::Text(user)],
        assistant: p.parts,
        metadata: Vec::new(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Vec<Conversation> {
        let mut p = AiderParser::new();
        for l in text.lines() {
            p.push_line(l);
        }
        p.finish();
        p.ready.into_iter().collect()
    }

    #[test]
    fn sessions_prompts_and_tool_output() {
        let convs = run("-*- mode: fundamental -*-\n\
# aider chat started at 2024-08-05 19:33:02\n\n\
> Aider v0.47.2-dev  \n\
> Models: claude-3-5-sonnet-20240620 with diff edit format, weak model claude-3-haiku  \n\n\
# aider chat started at 2024-08-05 19:33:32\n\n\
> Aider v0.47.2-dev  \n\
> Main model: gpt-4o with diff edit format  \n\n\
#### /add a.py  \n\n\
> Added a.py to the chat  \n\n\
#### Use the Spinner  \n\
####   \n\
#### please  \n\n\
Certainly!\n\n\
```python\n\
> not tool output, code\n\
```\n\n\
> Applied edit to a.py  \n\
> Commit d0ffbf1 fix  \n\n\
#### hi  \n");
        assert_eq!(convs.len(), 1, "the banner-only session is dropped");
        let c = &convs[0];
        assert_eq!(c.start.created, Timestamp::parse("2024-08-05T19:33:32"));
        assert_eq!(c.start.model.as_deref(), Some("gpt-4o"));
        assert!(c.start.id.starts_with("aider-2024-08-05T19:33:32-"));
        assert_eq!(c.skipped.get("aider-command"), 1);
        assert_eq!(c.pairs.len(), 2);
        assert_eq!(
            c.pairs[0].user,
            vec![Part::Text("Use the Spinner\n\nplease".into())]
        );
        assert_eq!(
            c.pairs[0].assistant,
            vec![
                Part::Text("Certainly!\n\n```python\n> not tool output, code\n```".into()),
                Part::ToolResult("Applied edit to a.py Commit d0ffbf1 fix".into()),
            ]
        );
        assert_eq!(c.pairs[0].model.as_deref(), Some("gpt-4o"));
        assert!(c.pairs[1].assistant.is_empty());
    }

    #[test]
    fn headerless_preamble_and_duplicate_ids() {
        let convs = run(
            "#### fix it  \n\nok\n# aider chat started at x\n#### q\n# aider chat started at x\n#### q\n",
        );
        assert_eq!(convs.len(), 3);
        assert!(convs[0].start.id.starts_with("aider-preamble-"));
        assert_eq!(convs[0].start.created, None);
        assert_eq!(convs[2].start.id, format!("{}-2", convs[1].start.id));
    }

    #[test]
    fn model_lines() {
        assert_eq!(
            model_line("Models: a with diff edit format, weak model b").as_deref(),
            Some("a")
        );
        assert_eq!(
            model_line("Model: gpt-4 with whole edit format").as_deref(),
            Some("gpt-4")
        );
        assert_eq!(model_line("Main model: x").as_deref(), Some("x"));
        assert_eq!(model_line("Added x"), None);
    }
}
