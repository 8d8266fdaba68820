//! What every connection of a server shares: the way to the writer, the
//! index, the settings a request needs, and the counters `health` reports.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use chatmill_index::Index;

use crate::config::ServerConfig;
use crate::services::Services;
use crate::writer::Job;

/// The state every connection of a server holds a handle to.
pub(crate) struct Shared {
    pub(crate) writer: std::sync::mpsc::Sender<Job>,
    pub(crate) index: Option<Arc<Index>>,
    pub(crate) root: PathBuf,
    pub(crate) token: Option<String>,
    pub(crate) max_line: usize,
    pub(crate) adapters: Vec<String>,
    pub(crate) version: String,
    pub(crate) backfill_enabled: bool,
    /// Answers to `search` have their secrets replaced (chunks written
    /// before redaction may hold some).
    pub(crate) redactor: Option<Arc<chatmill_redact::Redactor>>,
    pub(crate) shutting_down: AtomicBool,
    /// Flips to true when the server stops: idle connections close.
    pub(crate) stopping: tokio::sync::watch::Sender<bool>,
    pub(crate) turns: AtomicU64,
    pub(crate) connections: AtomicU64,
}

impl Shared {
    pub(crate) fn new(
        cfg: &ServerConfig,
        services: &Services,
        writer: std::sync::mpsc::Sender<Job>,
    ) -> Self {
        Self {
            writer,
            index: services.index.clone(),
            root: cfg.root.clone(),
            token: cfg.token.clone(),
            max_line: cfg.max_line,
            adapters: services.adapters.clone(),
            version: services.version.clone(),
            backfill_enabled: services.backfill.is_some(),
            redactor: services.redactor.clone(),
            shutting_down: AtomicBool::new(false),
            stopping: tokio::sync::watch::Sender::new(false),
            turns: AtomicU64::new(0),
            connections: AtomicU64::new(0),
        }
    }
}
