//! [`RemoteEmbedder`]: any OpenAI-compatible `/v1/embeddings` endpoint
//! (Ollama, llama.cpp's `llama-server --embeddings`, vLLM, OpenAI).
//! Batched, retried on timeouts / 429 / 5xx with backoff, vectors
//! L2-normalized here (not every server does), dimension probed once.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Embedder, IndexError};

/// `[embedding]` with `provider = "openai"` in config.toml.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteConfig {
    /// Base URL, e.g. `http://127.0.0.1:11434/v1` (Ollama),
    /// `http://127.0.0.1:8080/v1` (llama.cpp), `https://api.openai.com/v1`.
    pub url: String,
    pub model: String,
    #[serde(default)]
    pub api_key: Option<String>,
    /// Asked of models that can shorten their vectors (OpenAI text-embedding-3).
    #[serde(default)]
    pub dimensions: Option<usize>,
    #[serde(default = "timeout_ms")]
    pub timeout_ms: u64,
    /// Texts per request.
    #[serde(default = "batch")]
    pub batch: usize,
    #[serde(default = "retries")]
    pub retries: u32,
}

fn timeout_ms() -> u64 {
    30_000
}
fn batch() -> usize {
    64
}
fn retries() -> u32 {
    2
}

impl RemoteConfig {
    pub fn new(url: &str, model: &str) -> Self {
        Self {
            url: url.into(),
            model: model.into(),
            api_key: None,
            dimensions: None,
            timeout_ms: timeout_ms(),
            batch: batch(),
            retries: retries(),
        }
    }
}

#[derive(Debug)]
pub struct RemoteEmbedder {
    cfg: RemoteConfig,
    agent: ureq::Agent,
    id: String,
    dim: usize,
}

enum Failure {
    Retry(String),
    Fatal(String),
}

impl RemoteEmbedder {
    /// Connects and learns the vector size with one probe request.
    pub fn connect(cfg: RemoteConfig) -> Result<Self, IndexError> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_millis(cfg.timeout_ms)))
            .http_status_as_error(false)
            .build()
            .into();
        let id = format!("openai:{}@{}", cfg.model, cfg.url.trim_end_matches('/'));
        let mut me = Self {
            cfg,
            agent,
            id,
            dim: 0,
        };
        let probe = me.call(&["dimension probe"])?;
        me.dim = probe.first().map_or(0, Vec::len);
        if me.dim == 0 {
            return Err(me.err("the endpoint returned an empty vector".into()));
        }
        Ok(me)
    }

    fn err(&self, message: String) -> IndexError {
        IndexError::Embed {
            model: self.id.clone(),
            message,
            hint: Some(format!(
                "check that an OpenAI-compatible server serves embeddings for `{}` at {} (llama.cpp: `llama-server --embeddings`; Ollama: `ollama pull {}`)",
                self.cfg.model, self.cfg.url, self.cfg.model
            )),
        }
    }

    fn attempt(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Failure> {
        let url = format!("{}/embeddings", self.cfg.url.trim_end_matches('/'));
        let mut body = json!({"model": self.cfg.model, "input": texts, "encoding_format": "float"});
        if let Some(d) = self.cfg.dimensions {
            body["dimensions"] = json!(d);
        }
        let mut req = self.agent.post(&url);
        if let Some(k) = &self.cfg.api_key {
            req = req.header("Authorization", &format!("Bearer {k}"));
        }
        let mut resp = req
            .send_json(body)
            .map_err(|e| Failure::Retry(format!("{url}: {e}")))?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(256 << 20)
            .read_to_string()
            .map_err(|e| Failure::Retry(format!("{url}: {e}")))?;
        match status {
            200..=299 => {}
            408 | 429 | 500..=599 => return Err(Failure::Retry(format!("{url}: HTTP {status}"))),
            _ => {
                let short: String = text.chars().take(200).collect();
                return Err(Failure::Fatal(format!("{url}: HTTP {status}: {short}")));
            }
        }
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| Failure::Fatal(format!("{url}: not an embeddings response: {e}")))?;
        let data = v["data"]
            .as_array()
            .ok_or_else(|| Failure::Fatal(format!("{url}: the answer has no `data` list")))?;
        let mut out = vec![None; texts.len()];
        for (pos, item) in data.iter().enumerate() {
            let i = item["index"].as_u64().map_or(pos, |i| i as usize);
            let vector: Vec<f32> = item["embedding"]
                .as_array()
                .ok_or_else(|| Failure::Fatal(format!("{url}: item {i} has no `embedding`")))?
                .iter()
                .map(|x| x.as_f64().unwrap_or(0.0) as f32)
                .collect();
            match out.get_mut(i) {
                Some(slot) => *slot = Some(normalize(vector)),
                None => {
                    return Err(Failure::Fatal(format!(
                        "{url}: item index {i} out of range"
                    )));
                }
            }
        }
        out.into_iter()
            .enumerate()
            .map(|(i, v)| v.ok_or_else(|| Failure::Fatal(format!("{url}: no vector for text {i}"))))
            .collect()
    }

    fn call(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let mut last = String::new();
        for attempt in 0..=self.cfg.retries {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(200 << (attempt - 1).min(5)));
            }
            match self.attempt(texts) {
                Ok(v) => return Ok(v),
                Err(Failure::Fatal(m)) => return Err(self.err(m)),
                Err(Failure::Retry(m)) => {
                    tracing::debug!("embedding attempt {attempt} failed: {m}");
                    last = m;
                }
            }
        }
        Err(self.err(format!(
            "gave up after {} attempts: {last}",
            self.cfg.retries + 1
        )))
    }
}

fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

impl Embedder for RemoteEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let mut out = Vec::with_capacity(texts.len());
        for group in texts.chunks(self.cfg.batch.max(1)) {
            let vectors = self.call(group)?;
            if let Some(v) = vectors.iter().find(|v| v.len() != self.dim) {
                return Err(self.err(format!(
                    "the endpoint returned a {}-dimensional vector after a {}-dimensional one",
                    v.len(),
                    self.dim
                )));
            }
            out.extend(vectors);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    use std::net::TcpListener;

    use super::*;

    /// A one-thread HTTP double: answers each request with the next canned
    /// (status, body-from-request) response.
    /// A status and how to make the body from the request.
    type Canned = (u16, fn(&Value) -> Value);

    fn serve(responses: Vec<Canned>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for (status, make) in responses {
                let (mut s, _) = listener.accept().unwrap();
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut len = 0;
                loop {
                    let mut line = String::new();
                    r.read_line(&mut line).unwrap();
                    if line == "\r\n" || line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                let req: Value = serde_json::from_slice(&body).unwrap();
                let out = make(&req).to_string();
                write!(
                    s,
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{out}",
                    out.len()
                )
                .unwrap();
            }
        });
        format!("http://{addr}/v1")
    }

    fn vectors(req: &Value) -> Value {
        // Out of order on purpose; index says where each belongs.
        let n = req["input"].as_array().unwrap().len();
        let data: Vec<Value> = (0..n)
            .rev()
            .map(|i| json!({"index": i, "embedding": [2.0, 2.0 * i as f32, 0.0]}))
            .collect();
        json!({"data": data})
    }

    #[test]
    fn probes_the_size_retries_server_errors_and_restores_order() {
        let url = serve(vec![(200, vectors), (503, |_| json!({})), (200, vectors)]);
        let mut cfg = RemoteConfig::new(&url, "m");
        cfg.retries = 1;
        let e = RemoteEmbedder::connect(cfg).unwrap();
        assert_eq!(e.dim(), 3);
        let v = e.embed(&["a", "b"]).unwrap();
        assert_eq!(v[0], vec![1.0, 0.0, 0.0]);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!(
            (v[1][0] - h).abs() < 1e-6 && (v[1][1] - h).abs() < 1e-6,
            "{v:?}"
        );
    }

    #[test]
    fn a_client_error_is_fatal_with_a_hint() {
        let url = serve(vec![(404, |_| json!({"error": "model not found"}))]);
        let err = RemoteEmbedder::connect(RemoteConfig::new(&url, "nope")).unwrap_err();
        assert!(err.to_string().contains("404"), "{err}");
        assert!(err.hint().unwrap().contains("nope"));
    }
}
