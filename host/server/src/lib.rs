//! `chatmill serve`: inline mode behind a local socket.
//!
//! An orchestrator (a chat app, an agent loop) sends every finished
//! exchange as a `turn`; before the answer goes back, the exchange is in the
//! session's raw log, in a chunk file and in the index, so the very next
//! `search` can find it. The protocol is in `docs/protocol.md`
//! ([`protocol`]).
//!
//! Shape: connections are tokio tasks (many clients, idle ones cost little);
//! all writes go through one writer thread that owns the
//! [`InlineWriter`] (so turns of a session are logged in the order they
//! arrive). The writer takes every turn waiting in its queue, up to
//! [`ServerConfig::max_batch`], as one batch ([`InlineWriter::turns`]: one
//! embedding call, one index write, one manifest save), so that turns that
//! arrive together wait for one model call, not one each; searches run on
//! the blocking pool; a backfill thread asks the
//! slow header model for the headers that missed their deadline, without
//! holding up turns. SIGTERM/SIGINT: stop accepting, finish the turns in
//! flight, exit.

pub mod client;
pub mod protocol;
pub mod token;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use chatmill_chunking::header::HeaderWriter;
use chatmill_index::{Index, Indexer, SearchRequest};
use chatmill_pipeline::backfill;
use chatmill_pipeline::inline::{Ack, InlineError, InlineWriter, Turn};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, oneshot};

use protocol::{ErrorObject, MAX_LINE, PROTOCOL, Request, Response, code};

/// Turns written as one batch at most: one embedding call takes 64 texts
/// ([`Index`] embeds in calls of 64).
pub const MAX_BATCH: usize = 64;

/// How long a batch waits for turns it expects ([`Batcher`]): about what a
/// client on this machine takes from an answer to its next request.
pub const BATCH_WAIT: Duration = Duration::from_millis(2);

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub root: PathBuf,
    /// The Unix socket (created 0600).
    pub socket: PathBuf,
    /// Also listen on this loopback TCP address.
    pub tcp: Option<std::net::SocketAddr>,
    /// Allow a non-loopback TCP address.
    pub allow_remote: bool,
    /// Required (`auth`) on TCP connections.
    pub token: Option<String>,
    pub max_line: usize,
    /// How often the backfill thread looks at the queue.
    pub backfill_every: Duration,
    /// Connections served at once (others wait to be accepted).
    pub max_connections: usize,
    /// Turns the writer takes at once (1: one at a time). Default
    /// [`MAX_BATCH`], or `CHATMILL_SERVE_BATCH`.
    pub max_batch: usize,
    /// How long a batch waits for the next turns of the clients the last
    /// batch answered, when they were several ([`Batcher`]).
    pub batch_wait: Duration,
    /// Notified to stop (as SIGTERM would): for embedding the server.
    pub shutdown: Arc<tokio::sync::Notify>,
}

impl ServerConfig {
    pub fn new(root: &Path, socket: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            socket: socket.to_path_buf(),
            tcp: None,
            allow_remote: false,
            token: None,
            max_line: MAX_LINE,
            backfill_every: Duration::from_secs(5),
            max_connections: 4096,
            max_batch: std::env::var("CHATMILL_SERVE_BATCH")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|&n| n > 0)
                .unwrap_or(MAX_BATCH),
            batch_wait: BATCH_WAIT,
            shutdown: Arc::new(tokio::sync::Notify::new()),
        }
    }
}

/// What the server writes and searches with.
pub struct Services {
    /// `None`: chunk files and manifest only.
    pub index: Option<Arc<Index>>,
    /// Writes headers inside the turn (the built-in writer, or a model
    /// writer behind a deadline).
    pub header: Arc<dyn HeaderWriter>,
    /// The slow writer that backfills stand-in headers (`None`: no model
    /// configured, nothing is ever queued).
    pub backfill: Option<Arc<dyn HeaderWriter>>,
    /// For `health`.
    pub adapters: Vec<String>,
    pub version: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("a chatmill server is already listening on `{0}`")]
    AlreadyRunning(PathBuf),
    #[error("cannot listen on `{what}`: {source}")]
    Listen {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("refusing to listen on the non-loopback address {0}")]
    NotLoopback(std::net::SocketAddr),
    #[error("TCP needs a token (`--token` or CHATMILL_TOKEN)")]
    NoToken,
    #[error(transparent)]
    Inline(#[from] InlineError),
}

impl ServerError {
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::AlreadyRunning(_) => {
                Some("stop the other server, or give this one another `--socket`".into())
            }
            Self::NotLoopback(_) => Some(
                "chatmill listens on 127.0.0.1/::1 only; `--allow-remote` overrides (with a token)"
                    .into(),
            ),
            Self::NoToken => Some("pass `--token SECRET` (clients `auth` with it)".into()),
            _ => None,
        }
    }
}

enum Job {
    Turn(Box<Turn>, oneshot::Sender<Result<Ack, InlineError>>),
}

struct Shared {
    writer: std::sync::mpsc::Sender<Job>,
    index: Option<Arc<Index>>,
    root: PathBuf,
    token: Option<String>,
    max_line: usize,
    adapters: Vec<String>,
    version: String,
    backfill_enabled: bool,
    shutting_down: AtomicBool,
    /// Flips to true when the server stops: idle connections close.
    stopping: tokio::sync::watch::Sender<bool>,
    turns: AtomicU64,
    connections: AtomicU64,
}

impl Shared {
    fn new(cfg: &ServerConfig, services: &Services, writer: std::sync::mpsc::Sender<Job>) -> Self {
        Self {
            writer,
            index: services.index.clone(),
            root: cfg.root.clone(),
            token: cfg.token.clone(),
            max_line: cfg.max_line,
            adapters: services.adapters.clone(),
            version: services.version.clone(),
            backfill_enabled: services.backfill.is_some(),
            shutting_down: AtomicBool::new(false),
            stopping: tokio::sync::watch::Sender::new(false),
            turns: AtomicU64::new(0),
            connections: AtomicU64::new(0),
        }
    }
}

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

/// The writer thread, which owns the inline writer and runs the turns sent
/// to it in order, in batches of those waiting (at most `cfg.max_batch`);
/// it ends when every sender is gone.
fn spawn_writer(
    cfg: &ServerConfig,
    services: &Services,
) -> Result<(std::sync::mpsc::Sender<Job>, std::thread::JoinHandle<()>), ServerError> {
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    let mut writer = InlineWriter::open(
        &cfg.root,
        Arc::clone(&services.header),
        services.index.clone().map(|i| i as Arc<dyn Indexer>),
    )?;
    let mut batcher = Batcher {
        rx,
        max: cfg.max_batch.max(1),
        wait: cfg.batch_wait,
        answered: 0,
    };
    let thread = std::thread::Builder::new()
        .name("chatmill-writer".into())
        .spawn(move || {
            while let Some((turns, replies)) = batcher.next() {
                let started = std::time::Instant::now();
                let answers = writer.turns(&turns);
                tracing::debug!(turns = turns.len(), took = ?started.elapsed(), "wrote a batch");
                for (reply, answer) in replies.into_iter().zip(answers) {
                    let _ = reply.send(answer);
                }
                batcher.answered = turns.len();
            }
        })
        .map_err(|source| ServerError::Listen {
            what: "the writer thread".into(),
            source,
        })?;
    Ok((tx, thread))
}

/// Takes the writer's turns off its queue in batches: every turn waiting,
/// at most `max`. Clients that send their next turn as soon as the last is
/// answered would otherwise settle into halves that alternate (one half
/// sends while the other half's batch is written), each batch paying the
/// fixed cost of a write (its fsyncs) for half the turns; so when the last
/// batch answered several clients, the next one waits up to `wait` for as
/// many turns as were waiting plus those clients.
struct Batcher {
    rx: std::sync::mpsc::Receiver<Job>,
    max: usize,
    wait: Duration,
    /// Turns the last batch answered.
    answered: usize,
}

type Replies = Vec<oneshot::Sender<Result<Ack, InlineError>>>;

impl Batcher {
    /// The next batch; `None` once every sender is gone and the queue is
    /// empty.
    fn next(&mut self) -> Option<(Vec<Turn>, Replies)> {
        let mut jobs: Vec<Job> = self.rx.try_iter().take(self.max).collect();
        let waiting = jobs.len();
        let mut fresh = true;
        if jobs.is_empty() {
            let idle = std::time::Instant::now();
            jobs.push(self.rx.recv().ok()?);
            // After a pause, the last batch's clients are not coming back
            // at once.
            fresh = idle.elapsed() <= self.wait;
        }
        let expected = if self.answered > 1 && fresh {
            (waiting + self.answered).min(self.max)
        } else {
            0
        };
        let until = std::time::Instant::now() + self.wait;
        while jobs.len() < expected {
            let left = until.saturating_duration_since(std::time::Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        Some(
            jobs.into_iter()
                .map(|Job::Turn(turn, reply)| (*turn, reply))
                .unzip(),
        )
    }
}

/// The backfill thread, when a slow header model is configured; it ends
/// once `stop` is set.
fn spawn_backfill(
    cfg: &ServerConfig,
    services: &Services,
    stop: &Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    services.backfill.clone().map(|w| {
        let root = cfg.root.clone();
        let index = services.index.clone();
        let stop = Arc::clone(stop);
        let every = cfg.backfill_every;
        std::thread::spawn(move || backfill_loop(&root, w.as_ref(), index.as_deref(), &stop, every))
    })
}

/// Binds the listeners, serves connections until a stop signal, then
/// drains them.
async fn listen(
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

fn backfill_loop(
    root: &Path,
    writer: &dyn HeaderWriter,
    index: Option<&Index>,
    stop: &AtomicBool,
    every: Duration,
) {
    let mut failed = std::collections::HashSet::new();
    while !stop.load(Ordering::SeqCst) {
        match backfill::step(
            root,
            writer,
            index.map(|i| i as &dyn Indexer),
            Duration::from_secs(5),
            &failed,
        ) {
            Ok(Some((_, true))) => continue,
            Ok(Some((id, false))) => {
                // Try it again next round, not in a tight loop.
                failed.insert(id);
                continue;
            }
            Ok(None) => failed.clear(),
            Err(e) => tracing::warn!("backfill: {e}"),
        }
        let until = std::time::Instant::now() + every;
        while std::time::Instant::now() < until && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One line read from a client.
enum Line {
    Text(Vec<u8>),
    /// Longer than the limit: read up to its newline and thrown away.
    TooLong,
}

/// Reads the next `\n`-terminated line, keeping at most `max` bytes: an
/// oversized line is discarded up to its newline and reported, and the
/// connection carries on. `None` at end of stream.
async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<Line>> {
    use tokio::io::AsyncBufReadExt;
    buf.clear();
    let mut discarding = false;
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            // End of stream: a half-written last request is dropped.
            return Ok(None);
        }
        match avail.iter().position(|&b| b == b'\n') {
            Some(i) => {
                let too_long = discarding || buf.len() + i > max;
                if !too_long {
                    buf.extend_from_slice(&avail[..i]);
                }
                r.consume(i + 1);
                return Ok(Some(if too_long {
                    Line::TooLong
                } else {
                    Line::Text(std::mem::take(buf))
                }));
            }
            None => {
                let n = avail.len();
                if !discarding && buf.len() + n > max {
                    discarding = true;
                    buf.clear();
                    buf.shrink_to(64 << 10);
                }
                if !discarding {
                    buf.extend_from_slice(avail);
                }
                r.consume(n);
            }
        }
    }
}

async fn serve<S>(stream: S, shared: Arc<Shared>, trusted: bool)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    use tokio::io::AsyncWriteExt;
    shared.connections.fetch_add(1, Ordering::Relaxed);
    let mut authed = trusted || shared.token.is_none();
    let (read, mut write) = tokio::io::split(stream);
    let mut read = tokio::io::BufReader::with_capacity(64 << 10, read);
    let mut buf = Vec::new();
    let mut stopping = shared.stopping.subscribe();
    loop {
        let line = tokio::select! {
            l = next_line(&mut read, &mut buf, shared.max_line) => l,
            // Waiting for a request while the server stops: close.
            _ = stopping.wait_for(|s| *s) => break,
        };
        let Ok(Some(line)) = line else { break };
        let response = match line {
            // Bytes, not text: invalid UTF-8 is an error for that line, not
            // for the connection.
            Line::Text(bytes) => match std::str::from_utf8(&bytes) {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => handle(line, &shared, &mut authed).await,
                Err(e) => Some(Response::err(
                    Value::Null,
                    ErrorObject::new(code::PARSE_ERROR, format!("not UTF-8: {e}")),
                )),
            },
            Line::TooLong => Some(Response::err(
                Value::Null,
                ErrorObject::new(
                    code::TOO_LARGE,
                    format!("request line over {} bytes", shared.max_line),
                )
                .with_hint("send large texts in several turns, or raise the server's `--max-line`"),
            )),
        };
        if let Some(r) = response {
            let mut out = r.line();
            out.push('\n');
            if write.write_all(out.as_bytes()).await.is_err() {
                break;
            }
        }
    }
    shared.connections.fetch_sub(1, Ordering::Relaxed);
}

async fn handle(line: &str, shared: &Arc<Shared>, authed: &mut bool) -> Option<Response> {
    let req: Request = match serde_json::from_str::<Value>(line) {
        Err(e) => {
            return Some(Response::err(
                Value::Null,
                ErrorObject::new(code::PARSE_ERROR, format!("not JSON: {e}")),
            ));
        }
        Ok(v) => match serde_json::from_value(v) {
            Ok(r) => r,
            Err(e) => {
                return Some(Response::err(
                    Value::Null,
                    ErrorObject::new(code::INVALID_REQUEST, format!("not a request: {e}"))
                        .with_hint(r#"send {"jsonrpc":"2.0","id":1,"method":"health"}"#),
                ));
            }
        },
    };
    let id = req.id.clone();
    if req.jsonrpc.as_deref().is_some_and(|v| v != "2.0") {
        return id.map(|id| {
            Response::err(
                id,
                ErrorObject::new(code::INVALID_REQUEST, "`jsonrpc` must be \"2.0\""),
            )
        });
    }
    let result = dispatch(&req, shared, authed).await;
    let id = id?; // A notification gets no answer.
    Some(match result {
        Ok(v) => Response::ok(id, v),
        Err(e) => Response::err(id, e),
    })
}

fn params<T: serde::de::DeserializeOwned>(p: &Value) -> Result<T, ErrorObject> {
    serde_json::from_value(p.clone())
        .map_err(|e| ErrorObject::new(code::INVALID_PARAMS, format!("invalid params: {e}")))
}

async fn dispatch(
    req: &Request,
    shared: &Arc<Shared>,
    authed: &mut bool,
) -> Result<Value, ErrorObject> {
    if req.method == "auth" {
        #[derive(serde::Deserialize)]
        struct Auth {
            token: String,
        }
        let a: Auth = params(&req.params)?;
        return match &shared.token {
            Some(t) if token::constant_time_eq(a.token.as_bytes(), t.as_bytes()) => {
                *authed = true;
                Ok(json!({ "ok": true }))
            }
            Some(_) => Err(ErrorObject::new(code::UNAUTHORIZED, "wrong token")),
            None => Ok(json!({ "ok": true })),
        };
    }
    if !*authed {
        return Err(ErrorObject::new(code::UNAUTHORIZED, "authenticate first")
            .with_hint(r#"send {"method":"auth","params":{"token":"…"}} first on TCP"#));
    }
    match req.method.as_str() {
        "turn" => {
            if shared.shutting_down.load(Ordering::SeqCst) {
                return Err(
                    ErrorObject::new(code::SHUTTING_DOWN, "the server is stopping").with_hint(
                        "send the turn again once the server is back; turns are idempotent",
                    ),
                );
            }
            let turn: Turn = params(&req.params)?;
            let (tx, rx) = oneshot::channel();
            shared
                .writer
                .send(Job::Turn(Box::new(turn), tx))
                .map_err(|_| ErrorObject::new(code::SHUTTING_DOWN, "the writer has stopped"))?;
            let ack = rx
                .await
                .map_err(|_| ErrorObject::new(code::INTERNAL, "the writer dropped the turn"))?;
            match ack {
                Ok(ack) => {
                    shared.turns.fetch_add(1, Ordering::Relaxed);
                    Ok(serde_json::to_value(ack).unwrap_or(Value::Null))
                }
                Err(e) if e.is_client_error() => {
                    Err(ErrorObject::new(code::INVALID_PARAMS, e.to_string()))
                }
                Err(e) if e.is_busy() => Err(ErrorObject::new(code::BUSY, e.to_string())
                    .with_hint("an import holds the root; send the turn again")),
                Err(e) => Err(ErrorObject::new(code::INTERNAL, e.to_string())),
            }
        }
        "search" => {
            let req: SearchRequest = params(&req.params)?;
            let Some(index) = shared.index.clone() else {
                return Err(ErrorObject::new(code::INTERNAL, "this server has no index"));
            };
            let results = tokio::task::spawn_blocking(move || index.search(&req))
                .await
                .map_err(|e| ErrorObject::new(code::INTERNAL, e.to_string()))?;
            match results {
                Ok(r) => Ok(serde_json::to_value(r).unwrap_or(Value::Null)),
                Err(e) => {
                    let mut err = ErrorObject::new(code::INTERNAL, e.to_string());
                    if let Some(h) = e.hint() {
                        err = err.with_hint(h);
                    }
                    Err(err)
                }
            }
        }
        "health" => {
            let shared = Arc::clone(shared);
            let health = tokio::task::spawn_blocking(move || {
                let index = shared.index.as_ref().map(|i| {
                    json!({
                        "store": i.store.name(),
                        "embedder": i.embedder.id(),
                        "fallback_embedder": i.embedder.is_fallback(),
                        "chunks": i.count().ok(),
                    })
                });
                let queue = backfill::Queue::load(&shared.root).map(|q| q.len()).ok();
                json!({
                    "version": shared.version,
                    "protocol": PROTOCOL,
                    "root": shared.root,
                    "adapters": shared.adapters,
                    "index": index,
                    "backfill": { "enabled": shared.backfill_enabled, "queued": queue },
                    "turns_served": shared.turns.load(Ordering::Relaxed),
                    "connections": shared.connections.load(Ordering::Relaxed),
                })
            })
            .await
            .map_err(|e| ErrorObject::new(code::INTERNAL, e.to_string()))?;
            Ok(health)
        }
        other => Err(
            ErrorObject::new(code::METHOD_NOT_FOUND, format!("unknown method `{other}`"))
                .with_hint("methods: turn, search, health, auth"),
        ),
    }
}
