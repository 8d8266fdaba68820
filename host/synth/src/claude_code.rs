//! A folder of Claude Code sessions, as `~/.claude/projects/` holds them:
//! one folder per project (`-home-dev-<project>`), one `<session-id>.jsonl`
//! per session with 3–12 turn pairs (user text, assistant text with code,
//! a tool call and its result), and for every tenth session a sub-agent run
//! in `<session-id>/subagents/agent-<id>.jsonl` with its
//! `agent-<id>.meta.json`. Deterministic: the same call writes the same
//! bytes.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::Generated;

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A UUID-shaped id (version 4 layout) from the generator.
    fn uuid(&mut self) -> String {
        let (a, b) = (self.next(), self.next());
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }
}

/// One JSONL line of a session.
struct Line<'a> {
    session: &'a str,
    cwd: &'a str,
    sidechain: bool,
    parent: Option<&'a str>,
    uuid: &'a str,
    at: String,
}

impl Line<'_> {
    fn head(&self, kind: &str) -> String {
        let parent = self
            .parent
            .map_or_else(|| "null".to_string(), |p| format!("\"{p}\""));
        format!(
            r#"{{"parentUuid":{parent},"isSidechain":{},"userType":"external","cwd":"{}","sessionId":"{}","version":"2.1.14","gitBranch":"main","type":"{kind}","uuid":"{}","timestamp":"{}","#,
            self.sidechain, self.cwd, self.session, self.uuid, self.at
        )
    }

    fn user_text(&self, text: &str) -> String {
        format!(
            r#"{}"message":{{"role":"user","content":"{text}"}}}}"#,
            self.head("user")
        )
    }

    fn assistant(&self, rng: &mut Rng, content: &str) -> String {
        format!(
            r#"{}"requestId":"req_{:016x}","message":{{"model":"claude-sonnet-4-5-20250929","id":"msg_{:016x}","type":"message","role":"assistant","content":[{content}],"stop_reason":"end_turn","usage":{{"input_tokens":4,"output_tokens":120}}}}}}"#,
            self.head("assistant"),
            rng.next(),
            rng.next()
        )
    }

    fn tool_result(&self, tool_id: &str, text: &str) -> String {
        format!(
            r#"{}"message":{{"role":"user","content":[{{"tool_use_id":"{tool_id}","type":"tool_result","content":"{text}","is_error":false}}]}}}}"#,
            self.head("user")
        )
    }
}

/// A line of the session `ctx` (id, cwd, whether a sub-agent's).
fn line<'a>(
    (session, cwd, sidechain): (&'a str, &'a str, bool),
    parent: Option<&'a str>,
    uuid: &'a str,
    at: String,
) -> Line<'a> {
    Line {
        session,
        cwd,
        sidechain,
        parent,
        uuid,
        at,
    }
}

/// Writes `pairs` turn pairs of one session (or sub-agent run) to `out`.
fn write_session(
    out: &mut dyn Write,
    rng: &mut Rng,
    (session, cwd, sidechain): (&str, &str, bool),
    t0: u64,
    pairs: usize,
) -> std::io::Result<usize> {
    let mut parent: Option<String> = None;
    let mut bytes = 0;
    let mut clock = t0;
    let mut at = || {
        clock += 7 + rng_free_step(clock);
        let (d, s) = (clock / 86_400, clock % 86_400);
        format!(
            "2025-{:02}-{:02}T{:02}:{:02}:{:02}.000Z",
            1 + (d / 28) % 12,
            1 + d % 28,
            s / 3600,
            (s / 60) % 60,
            s % 60
        )
    };
    for i in 0..pairs {
        let mut lines = Vec::with_capacity(4);
        let ids: Vec<String> = (0..4).map(|_| rng.uuid()).collect();
        let n = rng.next() % 1000;
        let ctx = (session, cwd, sidechain);
        let l = line(ctx, parent.as_deref(), &ids[0], at());
        lines.push(l.user_text(&format!(
            "Step {i}: make the parser in src/parse_{n}.rs handle quoted fields, then run the tests"
        )));
        let tool_id = format!("toolu_{:016x}", rng.next());
        let l = line(ctx, Some(&ids[0]), &ids[1], at());
        lines.push(l.assistant(
            rng,
            &format!(
                r#"{{"type":"text","text":"I will read the file first."}},{{"type":"tool_use","id":"{tool_id}","name":"Read","input":{{"file_path":"{cwd}/src/parse_{n}.rs"}}}}"#
            ),
        ));
        let l = line(ctx, Some(&ids[1]), &ids[2], at());
        lines.push(l.tool_result(
            &tool_id,
            &"fn parse(line: &str) -> Vec<String> { line.split(',').map(str::to_owned).collect() }\\n"
                .repeat(1 + (rng.next() % 6) as usize),
        ));
        let l = line(ctx, Some(&ids[2]), &ids[3], at());
        let body = format!(
            "The parser split on every comma, quoted or not. It now walks the line once and keeps commas inside quotes:\\n\\n```rust\\nfn parse(line: &str) -> Vec<String> {{\\n    let mut out = vec![String::new()];\\n    let mut quoted = false;\\n    for c in line.chars() {{\\n        match c {{\\n            '\\\"' => quoted = !quoted,\\n            ',' if !quoted => out.push(String::new()),\\n            c => out.last_mut().unwrap().push(c),\\n        }}\\n    }}\\n    out\\n}}\\n```\\n\\n{}",
            "All 14 tests pass, including the new case for a quoted comma. "
                .repeat(1 + (rng.next() % 4) as usize)
        );
        lines.push(l.assistant(rng, &format!(r#"{{"type":"text","text":"{body}"}}"#)));
        parent = Some(ids[3].clone());
        for l in lines {
            out.write_all(l.as_bytes())?;
            out.write_all(b"\n")?;
            bytes += l.len() + 1;
        }
    }
    Ok(bytes)
}

/// A step of the session clock that does not need the generator.
fn rng_free_step(clock: u64) -> u64 {
    (clock.wrapping_mul(2_654_435_761) >> 16) % 50
}

/// Writes `sessions` Claude Code sessions under `dir` (created), spread
/// over 12 project folders, and a sub-agent run (with its `.meta.json`)
/// for every tenth session.
pub fn claude_code_sessions(dir: &Path, sessions: usize) -> std::io::Result<Generated> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut made = Generated {
        conversations: 0,
        pairs: 0,
        bytes: 0,
    };
    for s in 0..sessions {
        let project = format!("-home-dev-project-{}", s % 12);
        let cwd = format!("/home/dev/project-{}", s % 12);
        let folder = dir.join(&project);
        std::fs::create_dir_all(&folder)?;
        let session = rng.uuid();
        let pairs = 3 + (rng.next() % 10) as usize;
        let mut out = BufWriter::new(std::fs::File::create(
            folder.join(format!("{session}.jsonl")),
        )?);
        let t0 = 1_000_000 + s as u64 * 5_000;
        made.bytes += write_session(&mut out, &mut rng, (&session, &cwd, false), t0, pairs)?;
        out.flush()?;
        made.conversations += 1;
        made.pairs += pairs;
        if s % 10 == 0 {
            let agents = folder.join(&session).join("subagents");
            std::fs::create_dir_all(&agents)?;
            let agent = format!("a{:016x}", rng.next());
            let mut out = BufWriter::new(std::fs::File::create(
                agents.join(format!("agent-{agent}.jsonl")),
            )?);
            made.bytes += write_session(&mut out, &mut rng, (&session, &cwd, true), t0 + 60, 2)?;
            out.flush()?;
            let meta = r#"{"agentType":"general-purpose","spawnDepth":1}"#;
            std::fs::write(agents.join(format!("agent-{agent}.meta.json")), meta)?;
            made.bytes += meta.len();
            made.conversations += 1;
            made.pairs += 2;
        }
    }
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_deterministic_json_lines_with_meta_files() {
        let base = std::env::temp_dir().join(format!("chatmill-synth-cc-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        let g = claude_code_sessions(&a, 21).unwrap();
        assert_eq!(claude_code_sessions(&b, 21).unwrap(), g);
        assert_eq!(g.conversations, 21 + 3);
        let mut files = Vec::new();
        let mut stack = vec![a.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap().flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                } else {
                    files.push(e.path());
                }
            }
        }
        let metas = files
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".meta.json"))
            .count();
        assert_eq!(metas, 3);
        let mut total = 0;
        for f in files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        {
            let text = std::fs::read_to_string(f).unwrap();
            let twin = b.join(f.strip_prefix(&a).unwrap());
            assert_eq!(text, std::fs::read_to_string(twin).unwrap());
            for line in text.lines() {
                // Every line is one JSON object with the keys Claude Code writes.
                assert!(line.starts_with("{\"parentUuid\":") && line.ends_with('}'));
                assert!(line.contains("\"sessionId\":\"") && line.contains("\"timestamp\":\""));
            }
            total += text.len();
        }
        assert_eq!(total, g.bytes - metas * 46);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
