//! The per-input sandbox state: a WASI context that grants nothing, the
//! input resource, a store-wide memory limiter and captured diagnostics.

use wasmtime::ResourceLimiter;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::bindings::chatmill::adapter::{input, log, types};
use crate::pipe::CappedPipe;
use crate::source::SourceState;

/// Bytes the host hands over per `read`, at most.
const MAX_READ: usize = 1024 * 1024;
/// Bytes kept of one log message.
const MAX_LOG_MESSAGE: usize = 4096;

/// Caps the *sum* of all linear memories of one instance (wasmtime's
/// `StoreLimits` caps each memory on its own) and remembers the peak.
pub(crate) struct MemoryLimiter {
    pub(crate) limit: usize,
    pub(crate) total: usize,
    pub(crate) peak: usize,
    pub(crate) hit: bool,
}

/// The error a memory grow beyond the limit traps with.
#[derive(Debug)]
pub(crate) struct MemoryLimitHit;

impl std::fmt::Display for MemoryLimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("adapter memory limit reached")
    }
}

impl std::error::Error for MemoryLimitHit {}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.total - current.min(self.total) + desired;
        if total > self.limit {
            self.hit = true;
            return Err(wasmtime::Error::new(MemoryLimitHit));
        }
        self.total = total;
        self.peak = self.peak.max(total);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }

    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        32
    }
}

pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) output: CappedPipe,
    log_budget: usize,
    /// The log budget each input starts with.
    log_bytes: usize,
    pub(crate) adapter: String,
    pub(crate) input: String,
}

impl HostState {
    pub(crate) fn new(memory_limit: u64, log_bytes: usize, adapter: String, input: String) -> Self {
        let output = CappedPipe::new(log_bytes);
        // `WasiCtxBuilder::new()` already grants nothing: no preopened
        // directories, no environment, no arguments, stdin closed, every
        // socket address denied. Say so explicitly anyway.
        let wasi = WasiCtxBuilder::new()
            .stdout(output.clone())
            .stderr(output.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter {
                limit: usize::try_from(memory_limit).unwrap_or(usize::MAX),
                total: 0,
                peak: 0,
                hit: false,
            },
            output,
            log_budget: log_bytes,
            log_bytes,
            adapter,
            input,
        }
    }

    /// Starts `input` on a kept instance: its output, log budget and
    /// memory-limit mark are this input's alone.
    pub(crate) fn begin_input(&mut self, input: &str) {
        input.clone_into(&mut self.input);
        self.output.clear();
        self.log_budget = self.log_bytes;
        self.limiter.hit = false;
    }

    pub(crate) fn push_source(
        &mut self,
        s: SourceState,
    ) -> wasmtime::Result<Resource<SourceState>> {
        Ok(self.table.push(s)?)
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for HostState {}

impl input::Host for HostState {}

impl input::HostSource for HostState {
    fn name(&mut self, this: Resource<SourceState>) -> String {
        self.table
            .get(&this)
            .map(|s| s.name.clone())
            .unwrap_or_default()
    }

    fn size_hint(&mut self, this: Resource<SourceState>) -> Option<u64> {
        self.table.get(&this).ok().and_then(|s| s.size_hint)
    }

    fn read(&mut self, this: Resource<SourceState>, max: u32) -> Result<Vec<u8>, String> {
        let source = self
            .table
            .get_mut(&this)
            .map_err(|e| format!("invalid source handle: {e}"))?;
        let max = if source.consumed < source.trickle_until {
            1
        } else {
            (max as usize).min(MAX_READ)
        };
        let mut buf = vec![0; max];
        let mut filled = 0;
        // Fill as much as is cheaply available, so tiny reads from the
        // normalizer do not turn into many boundary crossings.
        while filled < max {
            match source.reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("reading `{}` failed: {e}", source.name)),
            }
        }
        buf.truncate(filled);
        source.consumed += filled as u64;
        Ok(buf)
    }

    fn drop(&mut self, this: Resource<SourceState>) -> wasmtime::Result<()> {
        self.table.delete(this)?;
        Ok(())
    }
}

impl log::Host for HostState {
    fn log(&mut self, level: log::Level, message: String) {
        if self.log_budget == 0 {
            return;
        }
        let mut end = message.len().min(MAX_LOG_MESSAGE).min(self.log_budget);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        // Shown on a terminal: controls and bidi overrides made visible.
        let message = chatmill_model::visible::visible(&message[..end]);
        self.log_budget -= end.max(1);
        let (adapter, input) = (&self.adapter, &self.input);
        match level {
            log::Level::Debug => tracing::debug!(adapter, input, "{message}"),
            log::Level::Info => tracing::info!(adapter, input, "{message}"),
            log::Level::Warn => tracing::warn!(adapter, input, "{message}"),
        }
    }
}
