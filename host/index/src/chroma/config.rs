//! `[index]` with `backend = "chroma"`: the server, the collection, and how
//! searches ask it.

use serde::Deserialize;

/// `[index]` with `backend = "chroma"` in config.toml.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChromaConfig {
    /// e.g. `http://127.0.0.1:8000`
    pub url: String,
    #[serde(default = "tenant")]
    pub tenant: String,
    #[serde(default = "database")]
    pub database: String,
    #[serde(default = "collection")]
    pub collection: String,
    /// Sent as `x-chroma-token` and `Authorization: Bearer` when set.
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default = "timeout_ms")]
    pub timeout_ms: u64,
    /// Rows per `get` page (listing ids, recency windows).
    #[serde(default = "page_size")]
    pub page_size: usize,
    /// How many candidates a vector search asks Chroma's HNSW for before
    /// keeping the best `k` (its search width). Unset: `k` on a collection
    /// with chatmill's graph, [`WIDE`](super::hnsw::WIDE) on one built sparser (an older
    /// chatmill's, or another client's), where the best matches hide.
    #[serde(default)]
    pub candidates: Option<usize>,
}

fn page_size() -> usize {
    1000
}

fn tenant() -> String {
    "default_tenant".into()
}
fn database() -> String {
    "default_database".into()
}
fn collection() -> String {
    "conversations".into()
}
fn timeout_ms() -> u64 {
    30_000
}

impl ChromaConfig {
    pub fn new(url: &str) -> Self {
        Self {
            url: url.into(),
            tenant: tenant(),
            database: database(),
            collection: collection(),
            token: None,
            timeout_ms: timeout_ms(),
            page_size: page_size(),
            candidates: None,
        }
    }
}
