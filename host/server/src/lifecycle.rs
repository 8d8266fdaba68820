//! A server's life: the checks before it starts, its threads and runtime,
//! and the drain when it stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backfill::spawn_backfill;
use crate::config::ServerConfig;
use crate::error::ServerError;
use crate::listen::listen;
use crate::services::Services;
use crate::shared::Shared;
use crate::writer::spawn_writer;

/// Runs until SIGTERM/SIGINT (or `stop` resolves), then drains in-flight
/// turns. `ready` is called once listening.
pub fn run(
    cfg: ServerConfig,
    services: Services,
    ready: impl FnOnce(&ServerConfig) + Send,
) -> Result<(), ServerError> {
    check_tcp(&cfg)?;
    raise_fd_limit();
    warm_up(&services);
    let (writer, writer_thread) = spawn_writer(&cfg, &services)?;
    let shared = Arc::new(Shared::new(&cfg, &services, writer));
    let stop_backfill = Arc::new(AtomicBool::new(false));
    let backfill_thread = spawn_backfill(&cfg, &services, &stop_backfill);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| ServerError::Listen {
            what: "the async runtime".into(),
            source,
        })?;
    let result = rt.block_on(listen(&cfg, &shared, &stop_backfill, ready));
    drop(rt);
    // The writer finishes its queue when the last sender is gone.
    drop(shared);
    let _ = writer_thread.join();
    stop_backfill.store(true, Ordering::SeqCst);
    if let Some(t) = backfill_thread {
        let _ = t.join();
    }
    result
}

/// TCP only on loopback (unless `allow_remote`), and only with a token.
fn check_tcp(cfg: &ServerConfig) -> Result<(), ServerError> {
    if let Some(addr) = cfg.tcp {
        if !addr.ip().is_loopback() && !cfg.allow_remote {
            return Err(ServerError::NotLoopback(addr));
        }
        if cfg.token.is_none() {
            return Err(ServerError::NoToken);
        }
    }
    Ok(())
}

/// Readies the embedding model ([`chatmill_index::Embedder::warm_up`]:
/// weights paged in, the local model's int8 weights made) so the first
/// turns do not pay for it.
fn warm_up(services: &Services) {
    if let Some(index) = &services.index
        && let Err(e) = index.embedder.warm_up()
    {
        tracing::warn!("embedding warm-up failed: {e}");
    }
}

/// Plenty of descriptors for idle connections (the soft limit is often
/// 1024).
fn raise_fd_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut lim = getrlimit(Resource::Nofile);
    if let Some(max) = lim.maximum {
        lim.current = Some(max.min(65_536));
        let _ = setrlimit(Resource::Nofile, lim);
    }
}
