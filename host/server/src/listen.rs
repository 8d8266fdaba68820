//! The listeners: the Unix socket and the optional TCP address, the
//! connections they accept, and the stop that closes them.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::config::ServerConfig;
use crate::connection::serve;
use crate::error::ServerError;
use crate::shared::Shared;

/// Binds the Unix socket: a stale file from a crashed server is replaced,
/// a live server is never displaced.
fn bind_unix(path: &Path) -> Result<tokio::net::UnixListener, ServerError> {
    let listen = |source| ServerError::Listen {
        what: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir).map_err(listen)?;
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(ServerError::AlreadyRunning(path.to_path_buf()));
        }
        tracing::info!("replacing the stale socket `{}`", path.display());
        fs_err::remove_file(path).map_err(listen)?;
    }
    // Created 0600: only this user may talk to the server.
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
    let bound = tokio::net::UnixListener::bind(path);
    rustix::process::umask(old);
    bound.map_err(listen)
}

/// Binds the listeners, serves connections until a stop signal, then
/// drains them.
pub(crate) async fn listen(
    cfg: &ServerConfig,
    shared: &Arc<Shared>,
    stop_backfill: &AtomicBool,
    ready: impl FnOnce(&ServerConfig),
) -> Result<(), ServerError> {
    let unix = bind_unix(&cfg.socket)?;
    let tcp = match cfg.tcp {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| ServerError::Listen {
                    what: addr.to_string(),
                    source,
                })?,
        ),
        None => None,
    };
    ready(cfg);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|source| ServerError::Listen {
            what: "SIGTERM".into(),
            source,
        })?;
    let mut tasks = tokio::task::JoinSet::new();
    accept(cfg, shared, &unix, tcp.as_ref(), &mut term, &mut tasks).await;
    // Stop accepting; let connections finish what they sent (turns
    // already queued are completed by the writer thread); idle
    // connections close; no new backfill starts.
    shared.shutting_down.store(true, Ordering::SeqCst);
    shared.stopping.send_replace(true);
    stop_backfill.store(true, Ordering::SeqCst);
    drop(unix);
    let _ = fs_err::remove_file(&cfg.socket);
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
    Ok(())
}

/// Accepts connections, at most `cfg.max_connections` served at once,
/// each on its own task in `tasks`, until SIGTERM, Ctrl-C or
/// `cfg.shutdown`.
async fn accept(
    cfg: &ServerConfig,
    shared: &Arc<Shared>,
    unix: &tokio::net::UnixListener,
    tcp: Option<&tokio::net::TcpListener>,
    term: &mut tokio::signal::unix::Signal,
    tasks: &mut tokio::task::JoinSet<()>,
) {
    let limit = Arc::new(Semaphore::new(cfg.max_connections));
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&limit).acquire_owned() => p.expect("the semaphore is never closed"),
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            _ = cfg.shutdown.notified() => break,
        };
        tokio::select! {
            accepted = unix.accept() => {
                if let Ok((stream, _)) = accepted {
                    let s = Arc::clone(shared);
                    tasks.spawn(async move { serve(stream, s, true).await; drop(permit); });
                }
            }
            accepted = async { match tcp { Some(l) => l.accept().await, None => std::future::pending().await } } => {
                if let Ok((stream, _)) = accepted {
                    let _ = stream.set_nodelay(true);
                    let s = Arc::clone(shared);
                    tasks.spawn(async move { serve(stream, s, false).await; drop(permit); });
                }
            }
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            _ = cfg.shutdown.notified() => break,
        }
        while tasks.try_join_next().is_some() {}
    }
}
