//! Contextual headers from a language model behind any OpenAI-compatible
//! `/chat/completions` endpoint (Ollama, llama.cpp's server, vLLM, OpenAI).
//!
//! The model is asked for JSON (`{"context": …, "topics": […]}`), with a
//! JSON schema when the server takes one (downgrading to `json_object`, then
//! to plain instructions, when it answers 400 — and remembering what
//! worked). The answer is parsed strictly and validated (2–4 sentences,
//! sane lengths, 1–3 specific lowercase topics); a bad answer is retried,
//! and so are timeouts, 429 and 5xx, with backoff. Calls are bounded by a
//! semaphore shared by every thread. When the model cannot deliver,
//! [`HeaderWriter::write`] falls back to the built-in extractive header
//! marked for backfill; [`LlmWriter::write_strict`] reports the failure.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::header::{ExtractiveWriter, Header, HeaderError, HeaderInput, HeaderWriter};

/// `[header]` in the config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL, e.g. `http://127.0.0.1:8080/v1` (llama.cpp),
    /// `http://127.0.0.1:11434/v1` (Ollama), `https://api.openai.com/v1`.
    pub url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Per request, ms.
    #[serde(default = "timeout_ms")]
    pub timeout_ms: u64,
    /// Requests in flight at once.
    #[serde(default = "concurrency")]
    pub max_concurrency: usize,
    /// Retries after the first attempt.
    #[serde(default = "retries")]
    pub retries: u32,
    /// Inline mode: how long a turn waits for the model, ms.
    #[serde(default = "deadline_ms")]
    pub deadline_ms: u64,
}

fn timeout_ms() -> u64 {
    30_000
}
fn concurrency() -> usize {
    2
}
fn retries() -> u32 {
    2
}
fn deadline_ms() -> u64 {
    1_500
}

/// How the answer format is requested; downgraded on 400.
const FORMAT_SCHEMA: u8 = 0;
const FORMAT_OBJECT: u8 = 1;
const FORMAT_NONE: u8 = 2;

/// A counting semaphore (std only).
struct Permits {
    free: Mutex<usize>,
    cv: Condvar,
}

impl Permits {
    fn acquire(&self) -> PermitGuard<'_> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = self.cv.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        PermitGuard(self)
    }
}

struct PermitGuard<'a>(&'a Permits);

impl Drop for PermitGuard<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.0.cv.notify_one();
    }
}

pub struct LlmWriter {
    cfg: LlmConfig,
    agent: ureq::Agent,
    permits: Permits,
    format: AtomicU8,
    /// Requests sent (for tests and `health`).
    pub requests: std::sync::atomic::AtomicU64,
}

/// Why one attempt failed.
enum Attempt {
    /// Worth trying again (timeout, 429, 5xx, an answer that did not
    /// validate).
    Retry(String),
    /// Not worth it (401, 404, …).
    Fatal(String),
}

const SYSTEM: &str = "You write the context header of one excerpt of a chat between a user and an AI assistant. \
The header is read later, when the excerpt is retrieved on its own, so it must say: what the exchange is about, \
what the user wanted, what earlier context from the same conversation it depends on (if any), and the platform and date. \
Answer with JSON only: {\"context\": \"2 to 4 sentences\", \"topics\": [\"1 to 3 specific lowercase topic tags\"]}. \
Tags name concrete subjects (\"nginx timeouts\", \"sourdough starter\"), never generic ones (\"conversation\", \"ai\", \"question\").";

const GENERIC: &[&str] = &[
    "conversation",
    "chat",
    "ai",
    "question",
    "questions",
    "help",
    "assistant",
    "user",
    "general",
    "discussion",
    "topic",
    "misc",
    "other",
];

fn truncate(s: &str, max: usize) -> &str {
    s.char_indices().nth(max).map_or(s, |(i, _)| &s[..i])
}

/// Rough sentence count: sentence-ending punctuation followed by a space or
/// the end.
fn sentences(s: &str) -> usize {
    let b = s.trim().as_bytes();
    (0..b.len())
        .filter(|&i| matches!(b[i], b'.' | b'!' | b'?') && b.get(i + 1).is_none_or(|c| *c == b' '))
        .count()
}

/// Validates and normalizes the model's JSON answer.
pub fn parse_answer(content: &str) -> Result<Header, String> {
    // Some servers wrap JSON in a code fence despite being told not to.
    let trimmed = content.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|s| s.strip_suffix("```"))
        .unwrap_or(trimmed);
    #[derive(Deserialize)]
    struct Answer {
        context: String,
        topics: Vec<String>,
    }
    let a: Answer =
        serde_json::from_str(body.trim()).map_err(|e| format!("not the JSON asked for: {e}"))?;
    let context = crate::render::one_line(&a.context);
    let n = sentences(&context);
    if !(2..=4).contains(&n) {
        return Err(format!("the context has {n} sentences, not 2–4"));
    }
    if context.chars().count() < 40 || context.chars().count() > 900 {
        return Err("the context is too short or too long".into());
    }
    let mut topics: Vec<String> = Vec::new();
    for t in a.topics {
        let t = t.trim().trim_start_matches('#').to_lowercase();
        let t = crate::render::one_line(&t);
        if t.chars().count() < 2 || t.chars().count() > 40 || GENERIC.contains(&t.as_str()) {
            continue;
        }
        if !topics.contains(&t) {
            topics.push(t);
        }
    }
    topics.truncate(3);
    if topics.is_empty() {
        return Err("no specific topic".into());
    }
    Ok(Header {
        context,
        topics,
        backfill: false,
    })
}

impl LlmWriter {
    pub fn new(cfg: LlmConfig) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_millis(cfg.timeout_ms)))
            .http_status_as_error(false)
            .build()
            .into();
        Self {
            permits: Permits {
                free: Mutex::new(cfg.max_concurrency.max(1)),
                cv: Condvar::new(),
            },
            cfg,
            agent,
            format: AtomicU8::new(FORMAT_SCHEMA),
            requests: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub fn config(&self) -> &LlmConfig {
        &self.cfg
    }

    fn prompt(input: &HeaderInput<'_>) -> String {
        let mut p = String::new();
        p.push_str(&format!("Platform: {}\n", input.platform));
        if let Some(d) = input.date {
            p.push_str(&format!("Date: {}\n", d.format("%Y-%m-%d")));
        }
        if let Some(t) = input.title {
            p.push_str(&format!("Conversation title: {t}\n"));
        }
        if input.independent {
            p.push_str(&format!(
                "Request: {} of {} separate requests in one file (not a dialogue)",
                input.turn_range, input.total_pairs
            ));
        } else {
            p.push_str(&format!("Exchange: {}", input.turn_range));
            if input.total_pairs > 1 {
                p.push_str(&format!(" of {}", input.total_pairs));
            }
        }
        p.push('\n');
        if !input.common.is_empty() {
            p.push_str(&format!(
                "Words most requests of the file share (not topics of this one): {}\n",
                input.common.join(", ")
            ));
        }
        if let Some(prev) = input.previous {
            p.push_str(&format!(
                "The previous exchange was about: {} (the user asked: {})\n",
                prev.topics.join(", "),
                truncate(&prev.request, 300)
            ));
        }
        p.push_str(&format!("\nUser:\n{}\n", truncate(input.user, 3000)));
        p.push_str(&format!(
            "\nAssistant:\n{}\n",
            truncate(input.assistant, 3000)
        ));
        p
    }

    fn body(&self, input: &HeaderInput<'_>, format: u8) -> Value {
        let mut body = json!({
            "model": self.cfg.model,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": Self::prompt(input)},
            ],
            "temperature": 0.2,
            "max_tokens": 300,
        });
        match format {
            FORMAT_SCHEMA => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {
                        "name": "chunk_header",
                        "strict": true,
                        "schema": {
                            "type": "object",
                            "properties": {
                                "context": {"type": "string", "minLength": 40, "maxLength": 900},
                                "topics": {"type": "array", "items": {"type": "string", "maxLength": 40}, "minItems": 1, "maxItems": 3},
                            },
                            "required": ["context", "topics"],
                            "additionalProperties": false,
                        },
                    },
                });
            }
            FORMAT_OBJECT => body["response_format"] = json!({"type": "json_object"}),
            _ => {}
        }
        body
    }

    fn attempt(&self, input: &HeaderInput<'_>) -> Result<Header, Attempt> {
        let url = format!("{}/chat/completions", self.cfg.url.trim_end_matches('/'));
        loop {
            let format = self.format.load(Ordering::Relaxed);
            let mut req = self.agent.post(&url);
            if let Some(k) = &self.cfg.api_key {
                req = req.header("Authorization", &format!("Bearer {k}"));
            }
            self.requests.fetch_add(1, Ordering::Relaxed);
            let mut resp = match req.send_json(self.body(input, format)) {
                Ok(r) => r,
                Err(e) => return Err(Attempt::Retry(format!("{url}: {e}"))),
            };
            let status = resp.status().as_u16();
            let text = resp
                .body_mut()
                .with_config()
                .limit(4 << 20)
                .read_to_string()
                .unwrap_or_default();
            match status {
                200..=299 => {}
                400 if format < FORMAT_NONE => {
                    // The server does not take this response_format.
                    tracing::debug!("{url}: 400 with response format {format}; downgrading");
                    let _ = self.format.compare_exchange(
                        format,
                        format + 1,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                    continue;
                }
                408 | 429 | 500..=599 => {
                    return Err(Attempt::Retry(format!("{url}: HTTP {status}")));
                }
                _ => {
                    return Err(Attempt::Fatal(format!(
                        "{url}: HTTP {status}: {}",
                        truncate(&text, 200)
                    )));
                }
            }
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| Attempt::Retry(format!("{url}: not a chat completion: {e}")))?;
            let content = v["choices"][0]["message"]["content"]
                .as_str()
                .ok_or_else(|| Attempt::Retry(format!("{url}: no message content")))?;
            return parse_answer(content).map_err(Attempt::Retry);
        }
    }

    /// The model's header, or why there is none (no fallback).
    pub fn write_strict(&self, input: &HeaderInput<'_>) -> Result<Header, HeaderError> {
        let _permit = self.permits.acquire();
        let mut last = String::new();
        for attempt in 0..=self.cfg.retries {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(200 * (1 << attempt.min(5))));
            }
            match self.attempt(input) {
                Ok(h) => return Ok(h),
                Err(Attempt::Fatal(e)) => return Err(HeaderError::Failed(e)),
                Err(Attempt::Retry(e)) => last = e,
            }
        }
        Err(HeaderError::Failed(format!(
            "no usable header after {} attempts: {last}",
            self.cfg.retries + 1
        )))
    }
}

impl LlmWriter {
    /// One free-form chat turn through this writer's client, permits and
    /// retries (the judge of `chatmill report --judge` uses it): the
    /// answer's text, untrusted and unparsed. A JSON object is asked for
    /// (`json_object`), and not again once the server answers 400 to it.
    pub fn chat(&self, system: &str, user: &str, max_tokens: u32) -> Result<String, HeaderError> {
        let _permit = self.permits.acquire();
        let url = format!("{}/chat/completions", self.cfg.url.trim_end_matches('/'));
        let mut json_mode = self.format.load(Ordering::Relaxed) < FORMAT_NONE;
        let mut last = String::new();
        let mut attempt = 0;
        while attempt <= self.cfg.retries {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(200 * (1 << attempt.min(5))));
            }
            let mut body = json!({
                "model": self.cfg.model,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                "temperature": 0.0,
                "max_tokens": max_tokens,
            });
            if json_mode {
                body["response_format"] = json!({"type": "json_object"});
            }
            let mut req = self.agent.post(&url);
            if let Some(k) = &self.cfg.api_key {
                req = req.header("Authorization", &format!("Bearer {k}"));
            }
            self.requests.fetch_add(1, Ordering::Relaxed);
            attempt += 1;
            let mut resp = match req.send_json(body) {
                Ok(r) => r,
                Err(e) => {
                    last = format!("{url}: {e}");
                    continue;
                }
            };
            let status = resp.status().as_u16();
            let text = resp
                .body_mut()
                .with_config()
                .limit(4 << 20)
                .read_to_string()
                .unwrap_or_default();
            match status {
                200..=299 => {}
                400 if json_mode => {
                    json_mode = false;
                    attempt -= 1;
                    continue;
                }
                408 | 429 | 500..=599 => {
                    last = format!("{url}: HTTP {status}");
                    continue;
                }
                _ => {
                    return Err(HeaderError::Failed(format!(
                        "{url}: HTTP {status}: {}",
                        truncate(&text, 200)
                    )));
                }
            }
            let content = serde_json::from_str::<Value>(&text).ok().and_then(|v| {
                v["choices"][0]["message"]["content"]
                    .as_str()
                    .map(str::to_owned)
            });
            match content {
                Some(c) => return Ok(c),
                None => last = format!("{url}: not a chat completion"),
            }
        }
        Err(HeaderError::Failed(format!(
            "no answer after {} attempts: {last}",
            self.cfg.retries + 1
        )))
    }
}

impl HeaderWriter for LlmWriter {
    fn costly(&self) -> bool {
        true
    }

    fn write(&self, input: &HeaderInput<'_>) -> Result<Header, HeaderError> {
        match self.write_strict(input) {
            Ok(h) => Ok(h),
            Err(e) => {
                tracing::warn!("header model: {e}; using the built-in header for now");
                let mut h = ExtractiveWriter.write(input)?;
                h.backfill = true;
                Ok(h)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    /// A scripted OpenAI-compatible server (a test double; the real-server
    /// test is in tests/llm_header.rs): each request gets the next
    /// (status, body, delay) of the script, the last one repeats.
    fn server(
        script: Vec<(u16, String, u64)>,
    ) -> (String, Arc<Mutex<Vec<Value>>>, Arc<AtomicUsize>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", l.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let live = Arc::new(AtomicUsize::new(0));
        let (seen2, live2) = (Arc::clone(&seen), Arc::clone(&live));
        std::thread::spawn(move || {
            let mut i = 0usize;
            for stream in l.incoming() {
                let Ok(mut s) = stream else { continue };
                let (status, body, delay) = script[i.min(script.len() - 1)].clone();
                i += 1;
                let seen = Arc::clone(&seen2);
                let live = Arc::clone(&live2);
                std::thread::spawn(move || {
                    let mut r = BufReader::new(s.try_clone().unwrap());
                    let mut len = 0usize;
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut buf = vec![0; len];
                    r.read_exact(&mut buf).unwrap();
                    seen.lock()
                        .unwrap()
                        .push(serde_json::from_slice(&buf).unwrap_or(Value::Null));
                    live.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(delay));
                    let _ = write!(
                        s,
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    live.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        (url, seen, live)
    }

    fn completion(content: &str) -> String {
        json!({"choices": [{"message": {"role": "assistant", "content": content}}]}).to_string()
    }

    const GOOD: &str = r#"{"context": "The user asks why nginx returns 504 on long uploads. The assistant explains proxy timeouts.", "topics": ["Nginx timeouts", "uploads", "conversation"]}"#;

    fn input() -> HeaderInput<'static> {
        HeaderInput {
            platform: "chatgpt",
            title: Some("nginx"),
            date: None,
            user: "Why does nginx return 504 on long uploads?",
            assistant: "Raise proxy_read_timeout.",
            turn_range: "1",
            total_pairs: 1,
            previous: None,
            common: &[],
            independent: false,
        }
    }

    fn cfg(url: &str) -> LlmConfig {
        LlmConfig {
            url: url.into(),
            model: "m".into(),
            api_key: Some("k".into()),
            timeout_ms: 2_000,
            max_concurrency: 2,
            retries: 2,
            deadline_ms: 1_500,
        }
    }

    #[test]
    fn the_prompt_says_a_batch_call_is_one_of_separate_requests() {
        let dialogue = LlmWriter::prompt(&input());
        assert!(dialogue.contains("Exchange: 1\n"), "{dialogue}");
        let common = ["scene".to_string(), "dictionary".to_string()];
        let call = LlmWriter::prompt(&HeaderInput {
            turn_range: "3",
            total_pairs: 65,
            common: &common,
            independent: true,
            ..input()
        });
        assert!(
            call.contains("Request: 3 of 65 separate requests in one file (not a dialogue)\n"),
            "{call}"
        );
        assert!(
            call.contains("not topics of this one): scene, dictionary\n"),
            "{call}"
        );
        assert!(!call.contains("Exchange:"), "{call}");
    }

    #[test]
    fn a_good_answer_is_normalized_and_asks_for_a_schema() {
        let (url, seen, _) = server(vec![(200, completion(GOOD), 0)]);
        let w = LlmWriter::new(cfg(&url));
        let h = w.write_strict(&input()).unwrap();
        assert_eq!(
            h.topics,
            ["nginx timeouts", "uploads"],
            "lowercased, generic dropped"
        );
        assert!(!h.backfill);
        let req = &seen.lock().unwrap()[0];
        assert_eq!(req["response_format"]["type"], "json_schema");
        assert_eq!(req["model"], "m");
    }

    #[test]
    fn errors_and_bad_answers_are_retried_then_fall_back_for_backfill() {
        let (url, seen, _) = server(vec![
            (500, "{}".into(), 0),
            (200, completion("Sure! Here is a header."), 0),
            (200, completion(GOOD), 0),
        ]);
        let w = LlmWriter::new(cfg(&url));
        assert!(w.write_strict(&input()).is_ok());
        assert_eq!(seen.lock().unwrap().len(), 3);

        let (url, _, _) = server(vec![(
            200,
            completion(r#"{"context": "Too short.", "topics": ["x"]}"#),
            0,
        )]);
        let w = LlmWriter::new(cfg(&url));
        assert!(w.write_strict(&input()).is_err());
        let h = w.write(&input()).unwrap();
        assert!(h.backfill, "fallback is marked for backfill");
        assert!(
            h.context.starts_with("From a ChatGPT conversation"),
            "{}",
            h.context
        );
    }

    #[test]
    fn a_400_on_the_schema_downgrades_and_remembers() {
        let (url, seen, _) = server(vec![
            (
                400,
                r#"{"error":"response_format not supported"}"#.into(),
                0,
            ),
            (200, completion(GOOD), 0),
        ]);
        let w = LlmWriter::new(cfg(&url));
        w.write_strict(&input()).unwrap();
        w.write_strict(&input()).unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0]["response_format"]["type"], "json_schema");
        assert_eq!(seen[1]["response_format"]["type"], "json_object");
        assert_eq!(seen[2]["response_format"]["type"], "json_object");
    }

    #[test]
    fn timeouts_dead_servers_and_auth_failures_fail_fast_enough() {
        let (url, _, _) = server(vec![(200, completion(GOOD), 3_000)]);
        let mut c = cfg(&url);
        c.timeout_ms = 200;
        c.retries = 1;
        let t = std::time::Instant::now();
        assert!(LlmWriter::new(c).write_strict(&input()).is_err());
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());

        let dead = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", dead.local_addr().unwrap());
        drop(dead);
        let h = LlmWriter::new(cfg(&url)).write(&input()).unwrap();
        assert!(h.backfill);

        let (url, seen, _) = server(vec![(401, "{}".into(), 0)]);
        assert!(LlmWriter::new(cfg(&url)).write_strict(&input()).is_err());
        assert_eq!(seen.lock().unwrap().len(), 1, "401 is not retried");
    }

    #[test]
    fn chat_returns_the_raw_answer_and_drops_json_mode_on_400() {
        let (url, seen, _) = server(vec![
            (400, r#"{"error":"no response_format"}"#.into(), 0),
            (500, "{}".into(), 0),
            (200, completion("not JSON at all"), 0),
        ]);
        let w = LlmWriter::new(cfg(&url));
        assert_eq!(w.chat("grade", "chunk", 50).unwrap(), "not JSON at all");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 3, "the 400, a retried 500, the answer");
        assert_eq!(seen[0]["response_format"]["type"], "json_object");
        assert!(seen[1]["response_format"].is_null());
        assert_eq!(seen[2]["messages"][0]["content"], "grade");
        assert_eq!(seen[2]["max_tokens"], 50);

        let (url, seen, _) = server(vec![(404, "{}".into(), 0)]);
        assert!(
            LlmWriter::new(cfg(&url))
                .chat("grade", "chunk", 50)
                .is_err()
        );
        assert_eq!(seen.lock().unwrap().len(), 1, "404 is not retried");
    }

    #[test]
    fn concurrency_is_bounded() {
        let (url, _, live) = server(vec![(200, completion(GOOD), 150)]);
        let w = Arc::new(LlmWriter::new(cfg(&url)));
        let peak = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..6 {
                let (w, live, peak) = (Arc::clone(&w), Arc::clone(&live), Arc::clone(&peak));
                s.spawn(move || {
                    let watcher = {
                        let (live, peak) = (Arc::clone(&live), Arc::clone(&peak));
                        std::thread::spawn(move || {
                            for _ in 0..40 {
                                peak.fetch_max(live.load(Ordering::SeqCst), Ordering::SeqCst);
                                std::thread::sleep(Duration::from_millis(5));
                            }
                        })
                    };
                    w.write_strict(&input()).unwrap();
                    watcher.join().unwrap();
                });
            }
        });
        let p = peak.load(Ordering::SeqCst);
        assert!(
            (1..=2).contains(&p),
            "at most max_concurrency in flight, saw {p}"
        );
    }
}
