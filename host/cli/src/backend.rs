//! The index a command uses: which embedder (`[embedding]`) and which store
//! (`[index]`) the config asks for, with the zero-setup defaults — the local
//! all-MiniLM-L6-v2 model and the embedded SQLite file under the root.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chatmill_index::{
    Cached, ChromaConfig, ChromaStore, Embedder, Index, IndexError, Lexical, RemoteConfig,
    RemoteEmbedder, SqliteStore, Store,
};
use chatmill_root::root::Root;
use serde::Deserialize;

use crate::command_error::CliError;
use crate::render;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// all-MiniLM-L6-v2 run in-process (needs `scripts/setup-model.sh` or a
    /// model directory).
    #[default]
    Local,
    /// Any OpenAI-compatible `/v1/embeddings` endpoint.
    Openai,
    /// The lexical stand-in (no model; keyword-like similarity).
    Lexical,
    /// Static token vectors distilled from the local model (model2vec's
    /// method): a hundred times faster, a little less accurate.
    Static,
}

/// `[embedding]` in config.toml.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingConfig {
    pub provider: Provider,
    /// `local`: a sentence-transformers directory (else CHATMILL_MODEL_DIR,
    /// chatmill's cache, the Hugging Face cache).
    pub model_dir: Option<PathBuf>,
    /// `openai`: base URL, model, key, optional vector size.
    pub url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub dimensions: Option<usize>,
    pub timeout_ms: Option<u64>,
    pub batch: Option<usize>,
    /// Keep vectors by (model, text hash) so nothing is embedded twice.
    pub cache: bool,
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        Self {
            provider: Provider::Local,
            model_dir: None,
            url: None,
            model: None,
            api_key: None,
            dimensions: None,
            timeout_ms: None,
            batch: None,
            cache: true,
        }
    }
}

/// An index store: `[index] backend` in config.toml, `reindex --to`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The embedded SQLite file under the root.
    #[default]
    Sqlite,
    /// A ChromaDB server.
    Chroma,
}

/// `[index]` in config.toml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexConfig {
    pub backend: Backend,
    /// `chroma`: the server and where in it.
    pub chroma: Option<ChromaConfig>,
}

/// The embedding provider in use: `CHATMILL_EMBEDDING` overrides the
/// config's (tests, one-off runs).
pub fn provider(cfg: &EmbeddingConfig) -> Result<Provider, CliError> {
    Ok(match std::env::var("CHATMILL_EMBEDDING").ok().as_deref() {
        Some("local") => Provider::Local,
        Some("openai") => Provider::Openai,
        Some("lexical") => Provider::Lexical,
        Some("static") => Provider::Static,
        Some(other) if !other.is_empty() => {
            return Err(CliError::usage(anyhow::anyhow!(
                "CHATMILL_EMBEDDING=`{other}` is not a provider"
            ))
            .hint("use local, static, openai or lexical"));
        }
        _ => cfg.provider,
    })
}

/// The configured embedder; on a missing local model or an unreachable
/// endpoint, the lexical stand-in with a warning (searches say so too, and
/// `chatmill reindex` re-embeds once the model is there). The local model
/// is read at its first embedding, so weights that cannot be read are an
/// error then rather than a fallback.
pub fn embedder(root: &Path, cfg: &EmbeddingConfig) -> Result<Arc<dyn Embedder>, CliError> {
    let provider = provider(cfg)?;
    let real: Result<Box<dyn Embedder>, IndexError> = match provider {
        Provider::Lexical => return Ok(Arc::new(Lexical::default())),
        Provider::Local => local(cfg, false),
        Provider::Static => local(cfg, true),
        Provider::Openai => {
            let (Some(url), Some(model)) = (&cfg.url, &cfg.model) else {
                return Err(CliError::usage(anyhow::anyhow!(
                    "`[embedding] provider = \"openai\"` needs `url` and `model`"
                ))
                .hint("e.g. url = \"http://127.0.0.1:11434/v1\", model = \"nomic-embed-text\""));
            };
            let mut r = RemoteConfig::new(url, model);
            r.api_key.clone_from(&cfg.api_key);
            r.dimensions = cfg.dimensions;
            if let Some(t) = cfg.timeout_ms {
                r.timeout_ms = t;
            }
            if let Some(b) = cfg.batch {
                r.batch = b;
            }
            RemoteEmbedder::connect(r).map(|e| Box::new(e) as Box<dyn Embedder>)
        }
    };
    let real = match real {
        Ok(e) => e,
        Err(e) => {
            let hint = e
                .hint()
                .map(|h| format!("\n  hint: {h}"))
                .unwrap_or_default();
            render::warning(&format!(
                "{e}; using the lexical stand-in (keyword-like similarity) until the model is available, then run `chatmill reindex`{hint}"
            ));
            return Ok(Arc::new(Lexical::default()));
        }
    };
    if !cfg.cache {
        return Ok(Arc::from(real));
    }
    let cached = Cached::open(real, &Root::new(root).embedding_cache())?;
    Ok(Arc::new(cached))
}

/// The local model, or (`distilled`) the static embedder made from it,
/// found now and loaded when something first embeds with it.
#[cfg(feature = "local-model")]
fn local(cfg: &EmbeddingConfig, distilled: bool) -> Result<Box<dyn Embedder>, IndexError> {
    use chatmill_index::minilm;
    let Some(dir) = minilm::resolve(cfg.model_dir.as_deref()) else {
        let looked: Vec<String> = minilm::candidates(cfg.model_dir.as_deref())
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        return Err(IndexError::Embed {
            model: minilm::DEFAULT_MODEL.into(),
            message: format!("no model directory found (looked in {})", looked.join(", ")),
            hint: Some(
                "run `scripts/setup-model.sh` (downloads all-MiniLM-L6-v2 once), or set `[embedding] model_dir`".into(),
            ),
        });
    };
    // Loaded at the first embedding: the hook, which defers its vectors,
    // never reads the weights; a store's model check needs only the id.
    let (id, dim) = if distilled {
        chatmill_index::StaticModel::identity(&dir)?
    } else {
        minilm::identity(&dir)?
    };
    let load: chatmill_index::lazy::Loader = Box::new(move || {
        Ok(if distilled {
            Box::new(chatmill_index::StaticModel::load(&dir)?)
        } else {
            Box::new(chatmill_index::MiniLm::load(&dir)?)
        })
    });
    Ok(Box::new(chatmill_index::Lazy::new(id, dim, load)))
}

#[cfg(not(feature = "local-model"))]
fn local(_cfg: &EmbeddingConfig, _distilled: bool) -> Result<Box<dyn Embedder>, IndexError> {
    Err(IndexError::Embed {
        model: "all-MiniLM-L6-v2".into(),
        message: "this build of chatmill has no local model support".into(),
        hint: Some(
            "rebuild with the default `local-model` feature, or use `[embedding] provider = \"openai\"`"
                .into(),
        ),
    })
}

/// The configured store (or the one `--to` names).
pub fn store(root: &Path, cfg: &IndexConfig, backend: Backend) -> Result<Arc<dyn Store>, CliError> {
    match backend {
        Backend::Sqlite => Ok(Arc::new(SqliteStore::open(&Root::new(root).index())?)),
        Backend::Chroma => {
            let Some(c) = cfg.chroma.clone() else {
                return Err(CliError::usage(anyhow::anyhow!(
                    "the chroma backend needs `[index.chroma] url`"
                ))
                .hint("add `[index.chroma]` with `url = \"http://127.0.0.1:8000\"` to config.toml, or pass `--chroma-url`"));
            };
            Ok(Arc::new(ChromaStore::connect(c)?))
        }
    }
}

pub fn open(
    root: &Path,
    index: &IndexConfig,
    embedding: &EmbeddingConfig,
) -> Result<Index, CliError> {
    let store = store(root, index, index.backend)?;
    // Hits' text comes from their chunk files (the embedded store keeps no
    // copy of it).
    Ok(Index::new(store, embedder(root, embedding)?).with_documents(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[embedding] provider = "static"` reads, and with the model
    /// installed gives the distilled embedder (its id says so).
    #[test]
    fn the_static_provider_gives_the_distilled_embedder() {
        let cfg: EmbeddingConfig = toml::from_str("provider = \"static\"").unwrap();
        assert_eq!(cfg.provider, Provider::Static);
        #[cfg(feature = "local-model")]
        if chatmill_index::minilm::resolve(None).is_some()
            && std::env::var_os("CHATMILL_EMBEDDING").is_none()
        {
            let root = tempfile::tempdir().unwrap();
            let e = embedder(root.path(), &cfg).unwrap();
            assert!(e.id().starts_with("static:"), "{}", e.id());
            assert_eq!(e.embed(&["nginx upload timeout"]).unwrap()[0].len(), 384);
        }
    }
}
