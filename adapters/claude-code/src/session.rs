//! One session file → its conversation, then one per sub-agent run written
//! inline.
//!
//! The whole file is read first (it *is* the conversation), as compact
//! [`Entry`]s, then:
//!
//! 1. **Threads.** In a main session file, `isSidechain` lines are sub-agent
//!    transcripts written inline (CLI 1.x): each run (a root sidechain line
//!    and the sidechain lines below it by `parentUuid`) becomes its own
//!    conversation, `<session>:sidechain-<root uuid's first 8>`, linked by
//!    `parent_session_id` and titled by the `Task` call that started it; a
//!    run without a pair is counted as `sidechain-line`s. In a sub-agent
//!    file (`agent-*.jsonl`, or a file whose first message line is a
//!    sidechain line with an `agentId`) every line belongs to the thread.
//!    Steps 3–5 run per thread.
//! 2. **Replays.** A line whose `uuid` was already seen is a replay: skipped.
//! 3. **Rewinds.** Two prompts whose nearest message ancestor (through
//!    attachment/progress/system lines) is the same line, with different
//!    timestamps, are a rewind: the earlier prompt and everything below it
//!    (by `parentUuid`) are a superseded branch, skipped and counted.
//!    Same-timestamp siblings are recording artifacts and both kept.
//! 4. **Order.** The remaining lines are read in file order, which is the
//!    order Claude Code wrote them in, a topological order of the
//!    `parentUuid` graph. Compaction (`system/compact_boundary`, a new root
//!    with `logicalParentUuid`) needs no special treatment then: the boundary
//!    and the `isCompactSummary` user line are skipped, and the preserved and
//!    later messages follow in file order even when their timestamps are
//!    earlier than their new parent's.
//! 5. **Pairs.** A prompt starts a pair; assistant blocks, tool results,
//!    command output and interruption markers go to the current pair's
//!    assistant side. Blocks of one API message written over several lines
//!    (same `message.id`) are concatenated; exact duplicate blocks dropped.
//!    A slash command or `!` shell escape answered only by local output (no
//!    assistant message) is dropped and counted as `local-command`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use chatmill_adapter_sdk::lines::LineReader;
use chatmill_adapter_sdk::text::file_stem;
use chatmill_adapter_sdk::{
    Conversation, ConversationReader, ConversationStart, ErrorKind, Input, Location, ParseError,
    Part, Skips, Timestamp, TurnPair,
};

use crate::line::{Entry, Event, Prompt, RawLine, TaskCall, entry};

/// Longest accepted line (base64 images make lines of several MB).
const MAX_LINE: usize = 64 * 1024 * 1024;

pub struct Reader {
    input: Option<Input>,
    /// The sub-agent runs of the file read, returned after its session.
    pending: VecDeque<Conversation>,
}

impl Reader {
    pub fn new(input: Input) -> Self {
        Self {
            input: Some(input),
            pending: VecDeque::new(),
        }
    }
}

impl ConversationReader for Reader {
    fn next_conversation(&mut self) -> Result<Option<Conversation>, ParseError> {
        if let Some(c) = self.pending.pop_front() {
            return Ok(Some(c));
        }
        match self.input.take() {
            Some(input) => {
                self.pending = read_session(input)?;
                Ok(self.pending.pop_front())
            }
            None => Ok(None),
        }
    }
}

/// Session-level facts gathered while reading.
#[derive(Default)]
struct Header {
    session_id: Option<String>,
    agent_id: Option<String>,
    cwd: Option<String>,
    git_branch: Option<String>,
    version: Option<String>,
    custom_title: Option<String>,
    ai_title: Option<String>,
    /// `(leafUuid, summary)` of `summary` lines.
    summaries: Vec<(String, String)>,
    /// Whether the first user/assistant line is a sidechain line with an agent id.
    first_message_is_agent: Option<bool>,
}

impl Header {
    /// What one line says about the session.
    fn learn(&mut self, raw: &RawLine<'_>) {
        let kind = raw.kind.as_deref().unwrap_or("");
        set_once(&mut self.session_id, raw.session_id.as_deref());
        set_once(&mut self.version, raw.version.as_deref());
        let nonblank = |t: &Option<std::borrow::Cow<'_, str>>| {
            t.as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        };
        match kind {
            "summary" => {
                if let (Some(leaf), Some(s)) = (raw.leaf_uuid.as_deref(), nonblank(&raw.summary)) {
                    self.summaries.push((leaf.to_string(), s));
                }
            }
            "custom-title" => {
                if let Some(t) = nonblank(&raw.custom_title) {
                    self.custom_title = Some(t);
                }
            }
            "ai-title" => {
                if let Some(t) = nonblank(&raw.ai_title) {
                    self.ai_title = Some(t);
                }
            }
            "user" | "assistant" => {
                let sidechain = raw.is_sidechain == Some(true);
                if self.first_message_is_agent.is_none() {
                    self.first_message_is_agent = Some(sidechain && raw.agent_id.is_some());
                }
                set_once(&mut self.agent_id, raw.agent_id.as_deref());
            }
            _ => {}
        }
    }
}

fn set_once(slot: &mut Option<String>, value: Option<&str>) {
    if slot.is_none()
        && let Some(v) = value.map(str::trim).filter(|v| !v.is_empty())
    {
        *slot = Some(v.to_string());
    }
}

/// The last 8-4-4-4-12 hex UUID in `s`.
pub fn find_uuid(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    if b.len() < 36 {
        return None;
    }
    (0..=b.len() - 36).rev().find_map(|i| {
        let w = &b[i..i + 36];
        let ok = w.iter().enumerate().all(|(j, c)| match j {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
        if ok { s.get(i..i + 36) } else { None }
    })
}

/// `agent-<id>`: a sub-agent transcript's file name (the id is
/// alphanumeric; `agent-sessions-x` is not one).
pub fn is_agent_file_stem(stem: &str) -> bool {
    stem.strip_prefix("agent-")
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// The last path component of a working directory.
pub fn project_of(cwd: &str) -> Option<String> {
    cwd.trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .filter(|p| !p.is_empty())
        .map(str::to_string)
}

/// The lines of one file with a place in the conversation, `(entry,
/// sidechain)`, and what was learnt and skipped reading them.
struct FileLines {
    header: Header,
    entries: Vec<(Entry, bool)>,
    skips: Skips,
}

/// The session of one file, then one conversation per sub-agent run
/// written inline; empty for an empty file.
fn read_session(input: Input) -> Result<VecDeque<Conversation>, ParseError> {
    let file_name = input.name().to_string();
    let Some(file) = read_lines(input)? else {
        return Ok(VecDeque::new());
    };
    let FileLines {
        mut header,
        entries,
        mut skips,
    } = file;
    let stem = file_stem(&file_name);
    let subagent = is_agent_file_stem(stem) || header.first_message_is_agent == Some(true);

    // 1. Threads; 2. replays.
    let threads = threads(entries, subagent, &mut skips);
    let tasks: Vec<TaskCall> = threads
        .main
        .iter()
        .flat_map(|e| e.tasks.iter().cloned())
        .collect();
    let main = thread(threads.main, &mut skips);
    set_once(&mut header.cwd, main.cwd.as_deref());
    set_once(&mut header.git_branch, main.git_branch.as_deref());

    let (id, session_id, parent_session) = identity(&header, stem, subagent);
    // A `summary` names the leaf it summarizes; resumed sessions copy other
    // sessions' summaries, so only one whose leaf is in this thread counts.
    let title = header
        .custom_title
        .clone()
        .or_else(|| header.ai_title.clone())
        .or_else(|| {
            header
                .summaries
                .iter()
                .rev()
                .find(|(leaf, _)| threads.main_uuids.contains(leaf))
                .map(|(_, s)| s.clone())
        });
    let mut metadata = session_metadata(&header, &session_id);
    if subagent {
        if let Some(a) = &header.agent_id {
            metadata.push(("subagent_id".to_string(), a.clone()));
        }
        if let Some(p) = &parent_session {
            metadata.push(("parent_session_id".to_string(), p.clone()));
        }
    }
    let mut out = VecDeque::new();
    let runs = sidechain_runs(threads.runs, &tasks, &header, &id, &session_id, &mut skips);
    out.push_back(conversation(id, title, metadata, main, skips));
    out.extend(runs);
    Ok(out)
}

/// Reads every line: header facts, entries, and what was skipped. `None`
/// for a file without lines; an error when no line is a JSON object.
fn read_lines(input: Input) -> Result<Option<FileLines>, ParseError> {
    let mut lines = LineReader::new(input).with_max_line(MAX_LINE);
    let mut skips = Skips::default();
    let mut header = Header::default();
    let mut entries: Vec<(Entry, bool)> = Vec::new();
    let mut valid_lines = 0u64;
    let mut first_bad: Option<(u64, u64)> = None;
    let mut last_cwd: Option<String> = None;

    while let Some(line) = lines.next_line()? {
        if line.too_long {
            skips.add("line-too-long");
            continue;
        }
        if line.bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let raw: RawLine<'_> = match serde_json::from_slice(line.bytes) {
            Ok(r) => r,
            Err(_) => {
                skips.add(if line.unterminated {
                    "partial-last-line"
                } else {
                    "malformed-line"
                });
                first_bad.get_or_insert((line.number, line.offset));
                continue;
            }
        };
        valid_lines += 1;
        header.learn(&raw);
        let kind = raw.kind.as_deref().unwrap_or("");
        let sidechain = raw.is_sidechain == Some(true);
        let is_message = kind == "user" || kind == "assistant";
        let e = entry(&raw, line.number, last_cwd.as_deref());
        if let Some(c) = &e.cwd
            && last_cwd.as_ref() != Some(c)
        {
            last_cwd = Some(c.clone());
        }
        if e.uuid.is_none() && !is_message && kind != "attachment" {
            // Bookkeeping without a place in the graph: count it now.
            for ev in &e.events {
                if let Event::Skip(r) = ev {
                    skips.add(*r);
                }
            }
            continue;
        }
        entries.push((e, sidechain));
    }

    if valid_lines == 0 {
        return match first_bad {
            None => Ok(None), // empty file
            Some((line, offset)) => Err(ParseError::new(
                ErrorKind::NotThisFormat,
                "no line of this file is a JSON object",
            )
            .at(Location {
                line: Some(line),
                byte_offset: Some(offset),
                ..Location::default()
            })),
        };
    }
    Ok(Some(FileLines {
        header,
        entries,
        skips,
    }))
}

/// A file's lines split into threads, replays dropped.
struct Threads {
    /// The session's own lines (in a sub-agent file: all of them).
    main: Vec<Entry>,
    /// The uuids of `main`.
    main_uuids: BTreeSet<String>,
    /// Sidechain lines of a session file, one list per sub-agent run: a
    /// run is a root line (no parent, or a parent outside the sidechain)
    /// and every sidechain line below it.
    runs: Vec<Vec<Entry>>,
}

fn threads(entries: Vec<(Entry, bool)>, subagent: bool, skips: &mut Skips) -> Threads {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut out = Threads {
        main: Vec::with_capacity(entries.len()),
        main_uuids: BTreeSet::new(),
        runs: Vec::new(),
    };
    let mut run_of: BTreeMap<String, usize> = BTreeMap::new();
    for (e, sidechain) in entries {
        if let Some(u) = &e.uuid
            && !seen.insert(u.clone())
        {
            skips.add("duplicate-uuid");
            continue;
        }
        if !sidechain || subagent {
            if let Some(u) = &e.uuid {
                out.main_uuids.insert(u.clone());
            }
            out.main.push(e);
            continue;
        }
        let run = match e.parent.as_deref().and_then(|p| run_of.get(p)) {
            Some(&r) => r,
            None => {
                out.runs.push(Vec::new());
                out.runs.len() - 1
            }
        };
        if let Some(u) = &e.uuid {
            run_of.insert(u.clone(), run);
        }
        out.runs[run].push(e);
    }
    out
}

/// One thread's pairs and the facts its lines give.
#[derive(Default)]
struct Thread {
    pairs: Vec<TurnPair>,
    created: Option<Timestamp>,
    updated: Option<Timestamp>,
    model: Option<String>,
    cwd: Option<String>,
    git_branch: Option<String>,
}

/// 3. Rewinds; 4./5. pairs, over one thread's entries in file order.
fn thread(kept: Vec<Entry>, skips: &mut Skips) -> Thread {
    let dropped = superseded(&kept);
    let mut t = Thread::default();
    for e in kept.iter().filter(|e| e.is_message) {
        set_once(&mut t.cwd, e.cwd.as_deref());
        set_once(&mut t.git_branch, e.git_branch.as_deref());
    }
    let mut current: Option<Building> = None;
    let mut block_keys: BTreeSet<u64> = BTreeSet::new();
    for (i, mut e) in kept.into_iter().enumerate() {
        if dropped.get(i).copied().unwrap_or(false) {
            skips.add("rewound-branch");
            continue;
        }
        if e.is_message
            && let Some(ts) = e.timestamp
        {
            t.created = Some(t.created.map_or(ts, |c| c.min(ts)));
            t.updated = Some(t.updated.map_or(ts, |u| u.max(ts)));
        }
        for ev in std::mem::take(&mut e.events) {
            match ev {
                Event::Prompt(p) => {
                    if let Some(b) = current.take() {
                        b.finish(&mut t.pairs, skips);
                    }
                    current = Some(Building::new(p, &e, &t));
                }
                Event::Assistant { part, key } => {
                    let Some(b) = current.as_mut() else {
                        skips.add("assistant-without-prompt");
                        continue;
                    };
                    if let Some(k) = key
                        && !block_keys.insert(k)
                    {
                        skips.add("duplicate-block");
                        continue;
                    }
                    b.answered = true;
                    if b.pair.timestamp.is_none() {
                        b.pair.timestamp = e.timestamp;
                    }
                    if b.pair.model.is_none() {
                        b.pair.model = e.model.clone();
                    }
                    if t.model.is_none() {
                        t.model = e.model.clone();
                    }
                    b.pair.assistant.push(part);
                }
                Event::Side(part) => match current.as_mut() {
                    Some(b) => b.pair.assistant.push(part),
                    None => skips.add("output-without-prompt"),
                },
                Event::Skip(reason) => skips.add(reason),
            }
        }
    }
    if let Some(b) = current.take() {
        b.finish(&mut t.pairs, skips);
    }
    t
}

/// `(conversation id, session_id, parent session)` of the file's session.
fn identity(header: &Header, stem: &str, subagent: bool) -> (String, String, Option<String>) {
    let line_session = header.session_id.clone();
    if subagent {
        let agent = header
            .agent_id
            .clone()
            .map(|a| format!("agent-{a}"))
            .or_else(|| is_agent_file_stem(stem).then(|| stem.to_string()))
            .or_else(|| line_session.clone())
            .unwrap_or_else(|| stem.to_string());
        // CLI 2.1.x writes `sessionId: agent-<id>` in sub-agent files; older
        // project-level `agent-*.jsonl` files carry the parent's session id.
        let parent = line_session.clone().filter(|s| !s.starts_with("agent-"));
        let id = match &parent {
            Some(p) => format!("{p}:{agent}"),
            None => agent.clone(),
        };
        (id, line_session.unwrap_or(agent), parent)
    } else {
        let sid = find_uuid(stem)
            .map(str::to_string)
            .or(line_session)
            .unwrap_or_else(|| stem.to_string());
        (sid.clone(), sid, None)
    }
}

/// The metadata every conversation of the file carries.
fn session_metadata(header: &Header, session_id: &str) -> Vec<(String, String)> {
    let mut metadata = vec![("session_id".to_string(), session_id.to_string())];
    if let Some(cwd) = &header.cwd {
        if let Some(p) = project_of(cwd) {
            metadata.push(("project".to_string(), p));
        }
        metadata.push(("cwd".to_string(), cwd.clone()));
    }
    if let Some(b) = &header.git_branch {
        metadata.push(("git_branch".to_string(), b.clone()));
    }
    if let Some(v) = &header.version {
        metadata.push(("claude_code_version".to_string(), v.clone()));
    }
    metadata
}

/// The conversation of one thread.
fn conversation(
    id: String,
    title: Option<String>,
    metadata: Vec<(String, String)>,
    t: Thread,
    skipped: Skips,
) -> Conversation {
    Conversation {
        start: ConversationStart {
            id,
            title,
            created: t.created,
            updated: t.updated,
            platform: "claude-code".into(),
            model: t.model,
            metadata,
        },
        pairs: t.pairs,
        skipped,
    }
}

/// One conversation per sub-agent run that has pairs, linked to its
/// session (`parent_session_id`) as a `subagents/` file is: id
/// `<session>:sidechain-<label>`, the label the first 8 characters of the
/// run's root line's uuid (its whole uuid when an earlier run of the file
/// has those: labels are given in file order, so a file that grows keeps
/// them), titled by the `Task` call whose prompt started it. A run without
/// pairs stays counted in the session's skips as `sidechain-line`s.
fn sidechain_runs(
    runs: Vec<Vec<Entry>>,
    tasks: &[TaskCall],
    header: &Header,
    session_conv: &str,
    session_id: &str,
    skips: &mut Skips,
) -> Vec<Conversation> {
    let mut used = vec![false; tasks.len()];
    let mut labels: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for run in runs {
        let lines = run.len();
        let root = match (run[0].uuid.as_deref(), run[0].line) {
            (Some(u), _) => u.to_string(),
            (None, n) => format!("line-{n}"),
        };
        let short: String = root.chars().take(8).collect();
        let label = if labels.insert(short.clone()) {
            short
        } else {
            labels.insert(root.clone());
            root
        };
        let mut run_skips = Skips::default();
        let t = thread(run, &mut run_skips);
        let Some(first) = t.pairs.first() else {
            for _ in 0..lines {
                skips.add("sidechain-line");
            }
            continue;
        };
        let prompt = prompt_text(first);
        let task = tasks
            .iter()
            .enumerate()
            .position(|(i, c)| !used[i] && c.prompt.trim() == prompt);
        let mut metadata = session_metadata(header, session_id);
        // The run's own working directory; the project stays the session's.
        if let Some(c) = &t.cwd {
            metadata.retain(|(k, _)| k != "cwd");
            metadata.push(("cwd".to_string(), c.clone()));
        }
        let mut title = None;
        if let Some(i) = task {
            used[i] = true;
            title = tasks[i].description.clone();
            if let Some(kind) = &tasks[i].subagent_type {
                metadata.push(("subagent_type".to_string(), kind.clone()));
            }
        }
        metadata.push(("parent_session_id".to_string(), session_id.to_string()));
        let id = format!("{session_conv}:sidechain-{label}");
        out.push(conversation(id, title, metadata, t, run_skips));
    }
    out
}

/// The text parts of a pair's prompt, joined.
fn prompt_text(p: &TurnPair) -> String {
    let texts: Vec<&str> = p
        .user
        .iter()
        .filter_map(|x| match x {
            Part::Text(t) => Some(t.trim()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// A pair being assembled.
struct Building {
    pair: TurnPair,
    /// The prompt is a slash command or shell escape.
    command: bool,
    /// An assistant message answered it.
    answered: bool,
}

impl Building {
    /// A pair opened by the prompt `p` of line `e` in thread `t`.
    fn new(p: Prompt, e: &Entry, t: &Thread) -> Self {
        let mut metadata = Vec::new();
        if let Some(u) = &e.uuid {
            metadata.push(("message_id".to_string(), u.clone()));
        }
        if let Some(c) = &p.command {
            metadata.push(("command".to_string(), c.clone()));
        }
        if let Some(c) = e.cwd.as_ref().filter(|c| t.cwd.as_ref() != Some(*c)) {
            metadata.push(("cwd".to_string(), c.clone()));
        }
        if let Some(b) = e
            .git_branch
            .as_ref()
            .filter(|b| t.git_branch.as_ref() != Some(*b))
        {
            metadata.push(("git_branch".to_string(), b.clone()));
        }
        Self {
            command: p.command.is_some(),
            answered: false,
            pair: TurnPair {
                index: 0,
                timestamp: e.timestamp,
                model: None,
                user: p.parts,
                assistant: Vec::new(),
                metadata,
            },
        }
    }

    fn finish(self, pairs: &mut Vec<TurnPair>, skips: &mut Skips) {
        if self.command && !self.answered {
            skips.add("local-command");
            return;
        }
        pairs.push(self.pair);
    }
}

/// Which entries (by index) lie on a superseded branch of a rewind.
fn superseded(entries: &[Entry]) -> Vec<bool> {
    let n = entries.len();
    let mut dropped = vec![false; n];
    let mut by_uuid: BTreeMap<&str, usize> = BTreeMap::new();
    let mut children: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        if let Some(u) = e.uuid.as_deref() {
            by_uuid.entry(u).or_insert(i);
        }
        if let Some(p) = e.parent.as_deref()
            && e.uuid.as_deref() != Some(p)
        {
            children.entry(p).or_default().push(i);
        }
    }
    // The nearest message ancestor of each prompt.
    let mut siblings: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        if !e.is_prompt() {
            continue;
        }
        let mut cursor = e.parent.as_deref();
        let mut steps = 0usize;
        let mut anchor = None;
        while let Some(p) = cursor {
            steps += 1;
            if steps > n {
                break; // a cycle
            }
            let Some(&j) = by_uuid.get(p) else {
                break; // a dangling parent
            };
            if j == i {
                break;
            }
            if entries[j].is_message {
                anchor = Some(j);
                break;
            }
            cursor = entries[j].parent.as_deref();
        }
        if let Some(a) = anchor {
            siblings.entry(a).or_default().push(i);
        }
    }
    for prompts in siblings.values() {
        for (k, &a) in prompts.iter().enumerate() {
            let Some(ta) = entries[a].timestamp else {
                continue;
            };
            let rewound = prompts
                .iter()
                .skip(k + 1)
                .any(|&b| entries[b].timestamp.is_some_and(|tb| tb != ta));
            if !rewound || dropped[a] {
                continue;
            }
            // Drop `a` and everything below it.
            let mut queue = VecDeque::from([a]);
            while let Some(x) = queue.pop_front() {
                if dropped[x] {
                    continue;
                }
                dropped[x] = true;
                if let Some(u) = entries[x].uuid.as_deref()
                    && let Some(kids) = children.get(u)
                {
                    queue.extend(kids.iter().copied().filter(|&c| !dropped[c]));
                }
            }
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_found_in_prefixed_file_names() {
        assert_eq!(
            find_uuid("claude-code-viewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b"),
            Some("fe5e1c67-53e7-4862-81ae-d0e013e3270b")
        );
        assert_eq!(find_uuid("agent-a0ad4f44468bdf20d"), None);
        assert_eq!(find_uuid(""), None);
        assert_eq!(find_uuid("ünïcödé-ünïcödé-ünïcödé-ünïcödé-ünï"), None);
    }

    #[test]
    fn agent_file_names() {
        assert!(is_agent_file_stem("agent-a0ad4f44468bdf20d"));
        assert!(is_agent_file_stem("agent-1a2b3c4d"));
        assert!(!is_agent_file_stem("agent-sessions-small-multiversion"));
        assert!(!is_agent_file_stem("agent-"));
        assert!(!is_agent_file_stem("fe5e1c67-53e7-4862-81ae-d0e013e3270b"));
    }

    #[test]
    fn projects_are_the_last_cwd_component() {
        assert_eq!(project_of("/path/to/Demo").as_deref(), Some("Demo"));
        assert_eq!(project_of("/path/to/Demo/").as_deref(), Some("Demo"));
        assert_eq!(project_of("C:\\work\\app").as_deref(), Some("app"));
        assert_eq!(project_of("/"), None);
    }
}
