//! [`ChromaStore`]'s connection: connecting (the tenant, database and
//! collection created when missing), its requests, and their errors.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

use super::config::ChromaConfig;
use super::hnsw::{candidates, hnsw};
use crate::{IndexError, StoredModel};

#[derive(Debug)]
pub struct ChromaStore {
    pub(super) cfg: ChromaConfig,
    agent: ureq::Agent,
    /// `…/collections/<uuid>`
    pub(super) base: String,
    pub(super) max_batch: usize,
    /// The model and width of the stored vectors, once known.
    held: Mutex<Option<StoredModel>>,
    /// Whether the collection's records carry every metadata key this
    /// chatmill writes (its `chatmill_metadata` is [`METADATA`]).
    pub(super) metadata_current: std::sync::atomic::AtomicBool,
    /// Candidates per vector search (see [`ChromaConfig::candidates`]).
    pub(super) candidates: usize,
}

/// The metadata keys' version: 2 added `project`.
pub(super) const METADATA: i64 = 2;

pub(super) struct Http {
    status: u16,
    body: String,
}

impl ChromaStore {
    /// Connects, creating the tenant, database and collection when missing.
    pub fn connect(cfg: ChromaConfig) -> Result<Self, IndexError> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_millis(cfg.timeout_ms)))
            .http_status_as_error(false)
            .build()
            .into();
        let mut me = Self {
            base: String::new(),
            max_batch: 1000,
            held: Mutex::new(None),
            metadata_current: std::sync::atomic::AtomicBool::new(false),
            candidates: 0,
            cfg,
            agent,
        };
        me.handshake()?;
        me.create_tenant_and_database()?;
        let collection = me.get_or_create_collection()?;
        me.use_collection(&collection)?;
        Ok(me)
    }

    /// Checks that the server answers, and takes its batch size.
    fn handshake(&mut self) -> Result<(), IndexError> {
        let api = self.api();
        self.ok(
            self.request("GET", &format!("{api}/heartbeat"), None)?,
            "heartbeat",
        )?;
        if let Ok(v) = self.json(self.request("GET", &format!("{api}/pre-flight-checks"), None)?)
            && let Some(n) = v["max_batch_size"].as_u64()
        {
            self.max_batch = (n as usize).clamp(1, 5000);
        }
        Ok(())
    }

    /// Creates the configured tenant and database where missing.
    fn create_tenant_and_database(&self) -> Result<(), IndexError> {
        let api = self.api();
        let (t, d) = (&self.cfg.tenant, &self.cfg.database);
        if self
            .request("GET", &format!("{api}/tenants/{t}"), None)?
            .status
            == 404
        {
            self.ok(
                self.request("POST", &format!("{api}/tenants"), Some(json!({"name": t})))?,
                "create tenant",
            )?;
        }
        if self
            .request("GET", &format!("{api}/tenants/{t}/databases/{d}"), None)?
            .status
            == 404
        {
            self.ok(
                self.request(
                    "POST",
                    &format!("{api}/tenants/{t}/databases"),
                    Some(json!({"name": d})),
                )?,
                "create database",
            )?;
        }
        Ok(())
    }

    /// The collection, as the server describes it, created with chatmill's
    /// graph (see [`hnsw`]) when missing.
    fn get_or_create_collection(&self) -> Result<Value, IndexError> {
        let api = self.api();
        let (t, d) = (&self.cfg.tenant, &self.cfg.database);
        self.json(self.request(
            "POST",
            &format!("{api}/tenants/{t}/databases/{d}/collections"),
            Some(json!({
                "name": self.cfg.collection,
                "get_or_create": true,
                "metadata": {"created_by": "chatmill", "chatmill_metadata": METADATA},
                "configuration": {"hnsw": hnsw()},
            })),
        )?)
    }

    /// Addresses the records of `collection` (the server's description of
    /// it) from now on, and notes whether its metadata is current and how
    /// wide its searches go.
    fn use_collection(&mut self, collection: &Value) -> Result<(), IndexError> {
        let v = collection;
        let id = v["id"]
            .as_str()
            .ok_or_else(|| self.fail(format!("the collection answer has no id: {v}"), false))?;
        let (api, t, d) = (self.api(), &self.cfg.tenant, &self.cfg.database);
        self.base = format!("{api}/tenants/{t}/databases/{d}/collections/{id}");
        let current = v["metadata"]["chatmill_metadata"].as_i64() >= Some(METADATA);
        self.metadata_current
            .store(current, std::sync::atomic::Ordering::Relaxed);
        self.candidates = self
            .cfg
            .candidates
            .unwrap_or_else(|| candidates(&v["configuration_json"]["hnsw"]));
        if self.candidates > 0 {
            tracing::debug!(
                collection = %self.cfg.collection,
                graph = %v["configuration_json"]["hnsw"],
                candidates = self.candidates,
                "vector searches ask for more candidates than they keep"
            );
        }
        Ok(())
    }

    fn api(&self) -> String {
        format!("{}/api/v2", self.cfg.url.trim_end_matches('/'))
    }

    pub(super) fn fail(&self, message: String, retryable: bool) -> IndexError {
        IndexError::Store {
            store: format!("chroma {}", self.cfg.url),
            message,
            hint: Some(if retryable {
                format!(
                    "is the Chroma server running? start it with `chroma run --host 127.0.0.1 --port PORT --path DIR` and check `[index] url` ({})",
                    self.cfg.url
                )
            } else {
                "check the Chroma server's log; `chatmill reindex` rebuilds the collection from the chunk files".into()
            }),
            retryable,
        }
    }

    pub(super) fn request(
        &self,
        method: &str,
        url: &str,
        body: Option<Value>,
    ) -> Result<Http, IndexError> {
        let auth = |mut r: ureq::RequestBuilder<ureq::typestate::WithBody>| {
            if let Some(t) = &self.cfg.token {
                r = r
                    .header("x-chroma-token", t)
                    .header("Authorization", &format!("Bearer {t}"));
            }
            r
        };
        let result = match (method, body) {
            ("GET", _) => {
                let mut r = self.agent.get(url);
                if let Some(t) = &self.cfg.token {
                    r = r
                        .header("x-chroma-token", t)
                        .header("Authorization", &format!("Bearer {t}"));
                }
                r.call()
            }
            ("PUT", body) => auth(self.agent.put(url)).send_json(body.unwrap_or(json!({}))),
            (_, body) => auth(self.agent.post(url)).send_json(body.unwrap_or(json!({}))),
        };
        let mut resp = result.map_err(|e| self.fail(format!("{url}: {e}"), true))?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()
            .map_err(|e| self.fail(format!("{url}: {e}"), true))?;
        Ok(Http { status, body })
    }

    pub(super) fn ok(&self, r: Http, what: &str) -> Result<String, IndexError> {
        match r.status {
            200..=299 => Ok(r.body),
            s => {
                let short: String = r.body.chars().take(300).collect();
                Err(self.fail(format!("{what}: HTTP {s}: {short}"), s == 429 || s >= 500))
            }
        }
    }

    fn json(&self, r: Http) -> Result<Value, IndexError> {
        let text = self.ok(r, "request")?;
        serde_json::from_str(&text).map_err(|e| self.fail(format!("not JSON: {e}"), false))
    }

    pub(super) fn post(&self, op: &str, body: Value) -> Result<Value, IndexError> {
        let r = self.request("POST", &format!("{}/{op}", self.base), Some(body))?;
        if r.status == 400 && r.body.contains("dimension") {
            return Err(self.fail(
                format!("{op}: {}", r.body.chars().take(300).collect::<String>()),
                false,
            ));
        }
        let text = self.ok(r, op)?;
        serde_json::from_str(&text).map_err(|e| self.fail(format!("{op}: not JSON: {e}"), false))
    }

    pub(super) fn held(&self) -> std::sync::MutexGuard<'_, Option<StoredModel>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}
