//! The adapter runtime: one wasmtime engine with the component model, a
//! linker that provides WASI (granting nothing) and the `chatmill:adapter`
//! imports, an epoch ticker for wall-clock limits, and the compiled cache.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use wasmtime::component::{Component, HasSelf, Linker, types::ComponentItem};
use wasmtime::{Config, Engine, Store};

use crate::bindings::{Adapter as AdapterWorld, AdapterPre};
use crate::cache::{CacheOutcome, ComponentCache, sha256_hex};
use crate::error::AdapterError;
use crate::limits::{Limit, Limits};
use crate::model::AdapterInfo;
use crate::store::{HostState, MemoryLimitHit};
use crate::toolchain::Toolchain;

/// The adapter API this host implements (the WIT package version).
pub const API_VERSION: &str = "0.1.0";
/// The exported interface every adapter must have.
const PARSER_EXPORT: &str = "chatmill:adapter/parser";

/// The longest a `sniff` may take (less when the call limit is lower): it
/// reads at most 64 KiB, and every adapter is asked about every input.
const SNIFF_TIMEOUT: Duration = Duration::from_secs(5);

/// One epoch tick.
const TICK: Duration = Duration::from_millis(10);

/// Where an adapter came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdapterOrigin {
    /// Shipped inside the chatmill binary.
    Builtin,
    /// Installed in the user's adapters directory.
    User(PathBuf),
    /// Given with `--adapter PATH` for one run.
    Dev(PathBuf),
}

impl AdapterOrigin {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::User(_) => "user",
            Self::Dev(_) => "dev",
        }
    }

    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::Builtin => None,
            Self::User(p) | Self::Dev(p) => Some(p),
        }
    }
}

/// A compiled, linked, validated adapter, ready to instantiate per input.
pub struct LoadedAdapter {
    pub info: AdapterInfo,
    pub origin: AdapterOrigin,
    /// SHA-256 of the `.wasm` (provenance in the manifest).
    pub sha256: String,
    /// The adapter API version it was built for.
    pub api_version: String,
    pub cache: CacheOutcome,
    pub(crate) pre: AdapterPre<HostState>,
    /// Instances that sniffed and may sniff again (see [`Runtime::sniff`]).
    sniffers: Mutex<Vec<Sniffer>>,
}

/// An instance kept for sniffing: made once per thread that sniffs at the
/// same time, not once per file.
struct Sniffer {
    store: Store<HostState>,
    world: AdapterWorld,
    sniffs: u32,
}

/// Sniffs after which a kept instance is let go.
const SNIFFS_PER_INSTANCE: u32 = 1024;

impl LoadedAdapter {
    /// `` `id` version `` for messages.
    pub fn label(&self) -> String {
        format!("`{}` {}", self.info.id, self.info.version)
    }

    fn sniffers(&self) -> MutexGuard<'_, Vec<Sniffer>> {
        self.sniffers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Instances kept for sniffing (one per thread that sniffed at the
    /// same time as another).
    pub fn sniffing_instances(&self) -> usize {
        self.sniffers().len()
    }
}

impl std::fmt::Debug for LoadedAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedAdapter")
            .field("info", &self.info)
            .field("origin", &self.origin)
            .finish()
    }
}

struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Runs adapters. Cheap to share across threads (`&Runtime` is `Sync`).
pub struct Runtime {
    pub(crate) engine: Engine,
    linker: Linker<HostState>,
    pub(crate) limits: Limits,
    cache: Option<ComponentCache>,
    _ticker: Ticker,
}

impl Runtime {
    /// A runtime with `limits`, caching compiled adapters under `cache_dir`
    /// (`None`: compile every time).
    pub fn new(limits: Limits, cache_dir: Option<&Path>) -> Result<Self, AdapterError> {
        let engine_err = |e: wasmtime::Error| AdapterError::Engine {
            reason: format!("{e:#}"),
        };
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.max_wasm_stack(limits.wasm_stack_bytes);
        // `CHATMILL_PERFMAP=1` writes /tmp/perf-<pid>.map so `perf report`
        // names the adapters' functions (for profiling adapters).
        if std::env::var_os("CHATMILL_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config).map_err(engine_err)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(engine_err)?;
        AdapterWorld::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s).map_err(engine_err)?;

        let stop = Arc::new(AtomicBool::new(false));
        {
            let engine = engine.clone();
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("chatmill-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(TICK);
                        engine.increment_epoch();
                    }
                })
                .map_err(|e| AdapterError::Engine {
                    reason: format!("cannot start the timer thread: {e}"),
                })?;
        }
        let cache = cache_dir.map(|d| ComponentCache::new(&engine, d));
        Ok(Self {
            engine,
            linker,
            limits,
            cache,
            _ticker: Ticker { stop },
        })
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Loads an adapter from `.wasm` bytes: checks that it is a component
    /// exporting this API version, compiles it (or loads it from the cache),
    /// links it, and asks it to `describe` itself.
    pub fn load(&self, origin: AdapterOrigin, wasm: &[u8]) -> Result<LoadedAdapter, AdapterError> {
        let path = origin
            .path()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("<built-in>"));
        check_component_header(&path, wasm)?;
        let sha256 = sha256_hex(wasm);
        let (component, cache) = match &self.cache {
            Some(c) => c.get_or_compile(&self.engine, wasm, &sha256),
            None => Component::new(&self.engine, wasm).map(|c| (c, CacheOutcome::Disabled)),
        }
        .map_err(|e| AdapterError::Compile {
            path: path.clone(),
            reason: format!("{e:#}"),
        })?;
        let api_version = self.check_api(&path, &component, Toolchain::of(wasm))?;
        let pre = self
            .linker
            .instantiate_pre(&component)
            .and_then(AdapterPre::new)
            .map_err(|e| AdapterError::Link {
                path: path.clone(),
                reason: format!("{e:#}"),
            })?;
        let mut loaded = LoadedAdapter {
            info: AdapterInfo {
                id: String::new(),
                name: String::new(),
                version: String::new(),
                formats: Vec::new(),
            },
            origin,
            sha256,
            api_version,
            cache,
            pre,
            sniffers: Mutex::default(),
        };
        loaded.info = self.describe(&loaded, &path)?;
        Ok(loaded)
    }

    /// Reads the API version from the component's exports and refuses any
    /// other before a linker message can confuse the user.
    fn check_api(
        &self,
        path: &Path,
        component: &Component,
        toolchain: Toolchain,
    ) -> Result<String, AdapterError> {
        let ty = component.component_type();
        let mut found = None;
        for (name, item) in ty.exports(&self.engine) {
            if let Some(rest) = name.strip_prefix(PARSER_EXPORT)
                && matches!(item.ty, ComponentItem::ComponentInstance(_))
            {
                found = Some(rest.strip_prefix('@').unwrap_or("").to_string());
            }
        }
        let Some(version) = found else {
            return Err(AdapterError::NotAnAdapter {
                path: path.to_path_buf(),
            });
        };
        if !api_compatible(&version) {
            return Err(AdapterError::IncompatibleApi {
                path: path.to_path_buf(),
                found: if version.is_empty() {
                    "(unversioned)".into()
                } else {
                    version
                },
                supported: API_VERSION.into(),
                toolchain,
            });
        }
        Ok(version)
    }

    pub(crate) fn new_store(&self, adapter: &str, input: &str) -> Store<HostState> {
        let state = HostState::new(
            self.limits.memory_bytes,
            self.limits.log_bytes,
            adapter.to_string(),
            input.to_string(),
        );
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_trap();
        // Bounds what the host allocates when lifting one batch, before our
        // own per-batch checks run (wasmtime counts roughly one unit a byte).
        let fuel = self.limits.bytes_per_batch.saturating_add(16 << 20);
        store.set_hostcall_fuel(usize::try_from(fuel).unwrap_or(usize::MAX));
        // Instantiation runs guest code too: arm before it.
        self.arm(&mut store, None);
        store
    }

    pub(crate) fn arm(&self, store: &mut Store<HostState>, file_deadline: Option<Instant>) {
        let mut budget = self.limits.call_timeout;
        if let Some(d) = file_deadline {
            budget = budget.min(d.saturating_duration_since(Instant::now()));
        }
        let ticks = (budget.as_millis() / TICK.as_millis()).max(1) as u64;
        store.set_epoch_deadline(ticks);
    }

    fn describe(&self, adapter: &LoadedAdapter, path: &Path) -> Result<AdapterInfo, AdapterError> {
        let label = path.display().to_string();
        let mut store = self.new_store(&label, "(describe)");
        let err = |store: &Store<HostState>, e: wasmtime::Error| {
            classify_trap(self, store, &label, "(describe)", e, false)
        };
        let world = adapter
            .pre
            .instantiate(&mut store)
            .map_err(|e| err(&store, e))?;
        self.arm(&mut store, None);
        let info = world
            .chatmill_adapter_parser()
            .call_describe(&mut store)
            .map_err(|e| err(&store, e))?;
        let info = crate::boundary::adapter_info(info).map_err(|(field, value)| {
            AdapterError::InvalidInfo {
                path: path.to_path_buf(),
                field,
                value,
            }
        })?;
        if semver::Version::parse(&info.version).is_err() {
            return Err(AdapterError::InvalidInfo {
                path: path.to_path_buf(),
                field: "version",
                value: info.version,
            });
        }
        Ok(info)
    }

    /// How sure `adapter` is that `head`/`file_name` is its format (0..=100).
    /// A trap or timeout while sniffing counts as 0 and is logged: one broken
    /// adapter must not stop others from recognizing the file.
    ///
    /// An instance that sniffed is kept to sniff the next file: every input
    /// is sniffed by every adapter, and making and unmapping an instance per
    /// sniff costs a fifth of a folder of small sessions' CPU (more with
    /// several cores: each unmapping interrupts the others to flush their
    /// TLBs). What a sniffing instance keeps can only sway its own scores;
    /// it never parses. Each file is parsed by an instance of its own.
    pub fn sniff(
        &self,
        adapter: &LoadedAdapter,
        head: &[u8],
        file_name: &str,
    ) -> Result<u8, AdapterError> {
        let budget = self.limits.call_timeout.min(SNIFF_TIMEOUT);
        let kept = adapter.sniffers().pop();
        let (mut sniffer, score) = match kept {
            Some(mut kept) => {
                kept.store.data_mut().begin_input(file_name);
                match self.sniff_with(&mut kept, head, file_name, budget) {
                    Ok(score) => (kept, score),
                    // Whatever a kept instance did before may be why it
                    // failed: a fresh one decides.
                    Err(_) => self.sniff_fresh(adapter, head, file_name, budget)?,
                }
            }
            None => self.sniff_fresh(adapter, head, file_name, budget)?,
        };
        sniffer.sniffs += 1;
        // Kept only while small and young: what a guest leaks per sniff
        // must not add up to a trap that benches the adapter.
        let limit = sniffer.store.data().limiter.limit;
        if sniffer.sniffs < SNIFFS_PER_INSTANCE && sniffer.store.data().limiter.total < limit / 4 {
            adapter.sniffers().push(sniffer);
        }
        Ok(score)
    }

    /// A new sniffing instance of `adapter`, and its score for `head`.
    fn sniff_fresh(
        &self,
        adapter: &LoadedAdapter,
        head: &[u8],
        file_name: &str,
        budget: Duration,
    ) -> Result<(Sniffer, u8), AdapterError> {
        let mut store = self.new_store(&adapter.label(), file_name);
        let world = adapter
            .pre
            .instantiate(&mut store)
            .map_err(|e| self.sniff_failed(&store, &adapter.label(), file_name, budget, e))?;
        let mut sniffer = Sniffer {
            store,
            world,
            sniffs: 0,
        };
        let score = self.sniff_with(&mut sniffer, head, file_name, budget)?;
        Ok((sniffer, score))
    }

    /// `sniffer`'s score for `head`, within `budget`.
    fn sniff_with(
        &self,
        sniffer: &mut Sniffer,
        head: &[u8],
        file_name: &str,
        budget: Duration,
    ) -> Result<u8, AdapterError> {
        self.arm(&mut sniffer.store, Some(Instant::now() + budget));
        let label = sniffer.store.data().adapter.clone();
        sniffer
            .world
            .chatmill_adapter_parser()
            .call_sniff(&mut sniffer.store, head, file_name)
            .map(|s| s.min(100))
            .map_err(|e| self.sniff_failed(&sniffer.store, &label, file_name, budget, e))
    }

    fn sniff_failed(
        &self,
        store: &Store<HostState>,
        label: &str,
        file_name: &str,
        budget: Duration,
        e: wasmtime::Error,
    ) -> AdapterError {
        let mut e = classify_trap(self, store, label, file_name, e, false);
        if let AdapterError::Limit {
            limit: Limit::CallTimeout,
            limits,
            ..
        } = &mut e
        {
            limits.call_timeout = budget;
        }
        e
    }
}

/// A major-version-like match: within 0.x the minor must match (0.1 ↔ 0.1.*),
/// from 1.0 on the major must match and the adapter's minor must not be newer
/// than ours.
pub(crate) fn api_compatible(found: &str) -> bool {
    let (Ok(found), Ok(ours)) = (
        semver::Version::parse(found),
        semver::Version::parse(API_VERSION),
    ) else {
        return false;
    };
    if ours.major == 0 {
        found.major == 0 && found.minor == ours.minor
    } else {
        found.major == ours.major && found.minor <= ours.minor
    }
}

fn check_component_header(path: &Path, wasm: &[u8]) -> Result<(), AdapterError> {
    let reason = if wasm.len() < 8 || &wasm[..4] != b"\0asm" {
        "it does not start with the WebAssembly magic bytes"
    } else if wasm[4..8] == [1, 0, 0, 0] {
        "it is a core WebAssembly module, not a component"
    } else if wasm[6..8] != [1, 0] {
        "it has an unknown WebAssembly layer/version header"
    } else {
        return Ok(());
    };
    Err(AdapterError::NotAComponent {
        path: path.to_path_buf(),
        reason: reason.into(),
    })
}

/// Turns a wasmtime error from a guest call into the error the user sees.
pub(crate) fn classify_trap(
    runtime: &Runtime,
    store: &Store<HostState>,
    adapter: &str,
    input: &str,
    e: wasmtime::Error,
    file_deadline_passed: bool,
) -> AdapterError {
    let stderr_tail = tail(
        &without_sandbox_notes(&store.data().output.contents()),
        2000,
    );
    let limits = Box::new(runtime.limits.clone());
    let limit = |limit: Limit, stderr_tail: String| AdapterError::Limit {
        adapter: adapter.to_string(),
        input: input.to_string(),
        limit,
        limits: limits.clone(),
        stderr_tail,
    };
    if store.data().limiter.hit || e.downcast_ref::<MemoryLimitHit>().is_some() {
        return limit(Limit::Memory, stderr_tail);
    }
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => {
            let which = if file_deadline_passed {
                Limit::FileTimeout
            } else {
                Limit::CallTimeout
            };
            limit(which, stderr_tail)
        }
        Some(wasmtime::Trap::StackOverflow) => limit(Limit::Stack, stderr_tail),
        Some(trap) => {
            // componentize-py turns an uncaught exception into a panic of
            // its own runtime: the traceback says more.
            if let Some(message) = python_exception(&stderr_tail) {
                AdapterError::Exception {
                    adapter: adapter.to_string(),
                    input: input.to_string(),
                    message,
                    stderr_tail,
                }
            } else if let Some(message) = panic_message(&stderr_tail) {
                AdapterError::Panic {
                    adapter: adapter.to_string(),
                    input: input.to_string(),
                    message,
                    stderr_tail,
                }
            } else if stderr_tail.contains("memory allocation of") {
                limit(Limit::Memory, stderr_tail)
            } else {
                AdapterError::Trap {
                    adapter: adapter.to_string(),
                    input: input.to_string(),
                    reason: trap.to_string(),
                    stderr_tail,
                }
            }
        }
        None => {
            let reason = format!("{e:#}");
            // wasmtime's hostcall fuel: the batch was too big to even lift.
            if reason.contains("fuel allocated for hostcalls") {
                return limit(Limit::BytesPerBatch, stderr_tail);
            }
            AdapterError::Trap {
                adapter: adapter.to_string(),
                input: input.to_string(),
                reason,
                stderr_tail,
            }
        }
    }
}

/// The `panicked at …` message from a Rust guest's stderr.
fn panic_message(stderr: &str) -> Option<String> {
    let at = stderr.find("panicked at ")?;
    let rest = &stderr[at + "panicked at ".len()..];
    // `panicked at src/lib.rs:1:2:\nmessage` (newer) or `… at 'msg', src/…`.
    let mut lines = rest.lines();
    let location = lines.next()?.trim_end_matches(':').to_string();
    let message = lines.next().unwrap_or("").trim();
    Some(if message.is_empty() {
        location
    } else {
        format!("{message} (at {location})")
    })
}

/// A Python traceback's exception, with the last frame in the author's own
/// code: `ValueError: bad date (at parser.py:41, in open)`. componentize-py
/// puts the application's files under `/0/`; without such a frame the last
/// frame outside componentize-py's runtime is named.
fn python_exception(stderr: &str) -> Option<String> {
    let at = stderr.rfind("Traceback (most recent call last):")?;
    let lines: Vec<&str> = stderr[at..].lines().skip(1).collect();
    let frames: Vec<(&str, &str, &str)> = lines
        .iter()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("File \"")?;
            let (file, rest) = rest.split_once("\", line ")?;
            let (line, func) = rest.split_once(", in ").unwrap_or((rest, "?"));
            Some((file, line, func))
        })
        .collect();
    // The exception is the first line after the frames (a Rust panic
    // message from componentize-py's runtime may follow it).
    let exception = lines
        .iter()
        .find(|l| !l.starts_with(' ') && !l.trim().is_empty())?
        .trim();
    let author = |f: &&(&str, &str, &str)| f.0.starts_with("/0/");
    let runtime = |f: &&(&str, &str, &str)| f.0.contains("componentize_py") || f.0.starts_with('<');
    let frame = frames
        .iter()
        .rev()
        .find(author)
        .or_else(|| frames.iter().rev().find(|f| !runtime(f)));
    Some(match frame {
        Some((file, line, func)) => {
            let file = file.strip_prefix("/0/").unwrap_or(file);
            format!("{exception} (at {file}:{line}, in {func})")
        }
        None => exception.to_string(),
    })
}

/// A guest's stderr without the notes that mean nothing in the sandbox
/// (Rust's "run with `RUST_BACKTRACE=1`": the sandbox has no environment).
fn without_sandbox_notes(s: &str) -> String {
    s.lines()
        .filter(|l| !l.contains("RUST_BACKTRACE"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn tail(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &s[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_follow_the_policy() {
        assert!(api_compatible("0.1.0"));
        assert!(api_compatible("0.1.7"));
        assert!(!api_compatible("0.2.0"));
        assert!(!api_compatible("1.0.0"));
        assert!(!api_compatible(""));
    }

    #[test]
    fn panic_messages_are_extracted() {
        let s = "thread '<unnamed>' panicked at src/lib.rs:24:37:\nindex out of bounds: the len is 0\nnote: …";
        assert_eq!(
            panic_message(s).unwrap(),
            "index out of bounds: the len is 0 (at src/lib.rs:24:37)"
        );
        assert!(panic_message("all fine").is_none());
    }

    #[test]
    fn python_exceptions_name_the_authors_frame() {
        // As componentize-py 0.25.1 prints it: frames without source lines,
        // then its runtime's panic.
        let s = "Traceback (most recent call last):\n  \
                 File \"/0/sillytavern.py\", line 67, in seconds\n\
                 ValueError: Invalid isoformat string: 'x'\n\n\
                 During handling of the above exception, another exception occurred:\n\n\
                 Traceback (most recent call last):\n  \
                 File \"/0/parser.py\", line 30, in open\n  \
                 File \"/0/sillytavern.py\", line 72, in seconds\n  \
                 File \"/python/lib/_strptime.py\", line 5, in parse\n\
                 ModuleNotFoundError: No module named '_x'\n\n\
                 thread '<unnamed>' (1) panicked at runtime/src/lib.rs:1293:29:\n\
                 Python function threw an unexpected exception\n";
        assert_eq!(
            python_exception(s).unwrap(),
            "ModuleNotFoundError: No module named '_x' (at sillytavern.py:72, in seconds)"
        );
        assert!(python_exception("thread panicked at x").is_none());
    }

    #[test]
    fn the_backtrace_note_is_left_out() {
        let s = "thread '<unnamed>' panicked at src/lib.rs:1:2:\nboom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace";
        assert_eq!(
            without_sandbox_notes(s),
            "thread '<unnamed>' panicked at src/lib.rs:1:2:\nboom"
        );
    }

    #[test]
    fn headers_are_checked_before_compiling() {
        let p = Path::new("x.wasm");
        assert!(check_component_header(p, b"\0asm\x0d\0\x01\0rest").is_ok());
        let core = check_component_header(p, b"\0asm\x01\0\0\0").unwrap_err();
        assert!(
            core.to_string().contains("core WebAssembly module"),
            "{core}"
        );
        let junk = check_component_header(p, b"PK\x03\x04zip").unwrap_err();
        assert!(junk.to_string().contains("magic bytes"), "{junk}");
    }
}
