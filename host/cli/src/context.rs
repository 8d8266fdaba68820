//! What every command needs: the config file, the directories, the adapter
//! runtime and the adapter set, built from global arguments.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use chatmill_runtime::{AdapterOrigin, AdapterSet, Builtin, Limits, Runtime};
use serde::Deserialize;

use crate::cli::Global;
use crate::command_error::CliError;
use crate::render;

/// The config file (`config.toml`). Every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Sandbox limits for adapters.
    pub limits: Limits,
    /// Installed adapters directory.
    pub adapters_dir: Option<PathBuf>,
    /// Compiled-adapter cache directory.
    pub cache_dir: Option<PathBuf>,
    /// The root folder (chunks, manifest, `raw/`).
    pub root: Option<PathBuf>,
    /// A header model (any OpenAI-compatible endpoint); absent: the
    /// built-in extractive writer.
    pub header: Option<chatmill_chunking::llm::LlmConfig>,
    /// The embedding model (default: the local all-MiniLM-L6-v2).
    pub embedding: crate::backend::EmbeddingConfig,
    /// The index store (default: the embedded SQLite file).
    pub index: crate::backend::IndexConfig,
    /// Secret redaction (default: on).
    pub redact: crate::redact_config::RedactConfig,
}

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "chatmill")
}

impl Config {
    pub fn load(explicit: Option<&Path>) -> Result<Self, CliError> {
        let path = match explicit {
            Some(p) => p.to_path_buf(),
            None => match project_dirs() {
                Some(d) => d.config_dir().join("config.toml"),
                None => return Ok(Self::default()),
            },
        };
        let text = match fs_err::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && explicit.is_none() => {
                return Ok(Self::default());
            }
            Err(e) => return Err(CliError::usage(e).hint("check the `--config` path")),
        };
        toml::from_str(&text)
            .with_context(|| format!("invalid config file `{}`", path.display()))
            .map_err(|e| CliError::usage(e).hint("see README.md, \"Configuration\""))
    }
}

pub struct Context {
    pub root: PathBuf,
    pub header: Option<chatmill_chunking::llm::LlmConfig>,
    pub embedding: crate::backend::EmbeddingConfig,
    pub index: crate::backend::IndexConfig,
    pub adapters_dir: PathBuf,
    pub runtime: Runtime,
    pub dev_adapters: Vec<PathBuf>,
    pub redact: crate::redact_config::RedactConfig,
    /// `--no-redact`: redaction off for this run.
    pub no_redact: bool,
}

impl Context {
    pub fn new(global: &Global) -> Result<Self, CliError> {
        let config = Config::load(global.config.as_deref())?;
        let mut limits = config.limits.clone();
        let l = &global.limits;
        if let Some(mb) = l.adapter_memory_mb {
            limits.memory_bytes = mb << 20;
        }
        if let Some(ms) = l.adapter_timeout_ms {
            limits.call_timeout = Duration::from_millis(ms);
        }
        if let Some(s) = l.adapter_file_timeout_s {
            limits.file_timeout = Duration::from_secs(s);
        }
        if let Some(kb) = l.adapter_stack_kb {
            limits.wasm_stack_bytes = kb << 10;
        }
        if let Some(n) = l.adapter_batch_items {
            limits.items_per_batch = n.max(1);
        }
        if let Some(mb) = l.adapter_batch_mb {
            limits.bytes_per_batch = mb << 20;
        }
        let dirs = project_dirs();
        let adapters_dir = global
            .adapters_dir
            .clone()
            .or_else(|| config.adapters_dir.clone())
            .or_else(|| dirs.as_ref().map(|d| d.data_dir().join("adapters")))
            .unwrap_or_else(|| PathBuf::from(".chatmill/adapters"));
        let cache_dir = if global.no_cache {
            None
        } else {
            global
                .cache_dir
                .clone()
                .or_else(|| config.cache_dir.clone())
                .or_else(|| dirs.as_ref().map(|d| d.cache_dir().to_path_buf()))
        };
        let runtime = Runtime::new(limits, cache_dir.as_deref())?;
        let root = global
            .root
            .clone()
            .or_else(|| config.root.clone())
            .or_else(|| {
                directories::UserDirs::new().map(|u| {
                    u.document_dir()
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|| u.home_dir().join("Documents"))
                        .join("conversations")
                })
            })
            .unwrap_or_else(|| PathBuf::from("conversations"));
        Ok(Self {
            root,
            header: config.header.clone(),
            embedding: config.embedding.clone(),
            index: config.index.clone(),
            adapters_dir,
            runtime,
            dev_adapters: global.adapters.clone(),
            redact: config.redact.clone(),
            no_redact: global.no_redact,
        })
    }

    /// Built-ins, installed and `--adapter` ones; prints notices and warns
    /// about installed adapters that fail to load.
    pub fn adapter_set(&self) -> Result<AdapterSet, CliError> {
        let builtins: Vec<Builtin> = chatmill_builtin::ADAPTERS
            .iter()
            .map(|(name, wasm)| Builtin { name, wasm })
            .collect();
        let set = AdapterSet::load(
            &self.runtime,
            &builtins,
            Some(&self.adapters_dir),
            &self.dev_adapters,
        )?;
        for n in &set.notices {
            render::notice(&n.0);
        }
        for f in &set.failures {
            let hint = f
                .hint()
                .map(|h| format!("\n  hint: {h}"))
                .unwrap_or_default();
            render::warning(&format!("skipping an installed adapter: {f}{hint}"));
        }
        // `--adapter PATH` gets `adapters add`'s lint, as warnings.
        let samples = crate::adapter_lint::samples();
        for a in set.adapters() {
            if !matches!(a.origin, AdapterOrigin::Dev(_)) {
                continue;
            }
            let lint = match set.lint(&self.runtime, a, &samples) {
                Ok(lint) => lint,
                Err(e) => {
                    render::warning(&format!(
                        "{e}; adapter `{}` is left out of sniffing for the rest of this run",
                        a.info.id
                    ));
                    continue;
                }
            };
            let claims = crate::adapter_lint::report_lint(a, &lint);
            if !claims.is_empty() {
                render::warning(&format!(
                    "adapter `{}` claims files of other formats: {claims}; they stay with their built-in adapters unless `--adapter-id {}` names it",
                    a.info.id, a.info.id
                ));
            }
        }
        Ok(set)
    }
}

impl Context {
    /// The index the config asks for (default: the embedded store under the
    /// root with the local embedding model).
    pub fn index(&self) -> Result<chatmill_index::Index, CliError> {
        crate::backend::open(&self.root, &self.index, &self.embedding)
    }
}
