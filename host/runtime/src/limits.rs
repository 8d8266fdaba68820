//! Resource limits for one adapter run, with defaults and overrides.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What one adapter may use while parsing one input. Every limit, when hit,
/// becomes an [`AdapterError`](crate::AdapterError) naming the limit and how
/// to raise it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Total linear memory of the adapter instance (all its memories), bytes.
    pub memory_bytes: u64,
    /// Wall-clock time one call into the adapter (`sniff`, `open`, one
    /// `next` batch) may take.
    #[serde(with = "millis")]
    pub call_timeout: Duration,
    /// Wall-clock time the whole parse of one input may take.
    #[serde(with = "millis")]
    pub file_timeout: Duration,
    /// Maximum wasm stack, bytes.
    pub wasm_stack_bytes: usize,
    /// Items asked for per `next` call; returning more is a violation.
    pub items_per_batch: u32,
    /// Text bytes one batch may carry.
    pub bytes_per_batch: u64,
    /// Bytes of the adapter's stderr/stdout and log messages kept per input.
    pub log_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 512 * 1024 * 1024,
            call_timeout: Duration::from_secs(30),
            file_timeout: Duration::from_secs(30 * 60),
            wasm_stack_bytes: 1024 * 1024,
            items_per_batch: 256,
            bytes_per_batch: 64 * 1024 * 1024,
            log_bytes: 64 * 1024,
        }
    }
}

/// The limit a violation hit, for error messages and hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Memory,
    CallTimeout,
    FileTimeout,
    Stack,
    ItemsPerBatch,
    BytesPerBatch,
}

impl Limit {
    /// The config key and CLI flag that raise this limit.
    pub fn knob(self) -> (&'static str, &'static str) {
        match self {
            Self::Memory => ("limits.memory_bytes", "--adapter-memory-mb"),
            Self::CallTimeout => ("limits.call_timeout", "--adapter-timeout-ms"),
            Self::FileTimeout => ("limits.file_timeout", "--adapter-file-timeout-s"),
            Self::Stack => ("limits.wasm_stack_bytes", "--adapter-stack-kb"),
            Self::ItemsPerBatch => ("limits.items_per_batch", "--adapter-batch-items"),
            Self::BytesPerBatch => ("limits.bytes_per_batch", "--adapter-batch-mb"),
        }
    }

    pub fn describe(self, limits: &Limits) -> String {
        match self {
            Self::Memory => format!("memory limit of {} MiB", limits.memory_bytes >> 20),
            Self::CallTimeout => format!(
                "time limit of {} ms per call",
                limits.call_timeout.as_millis()
            ),
            Self::FileTimeout => format!(
                "time limit of {} s per input",
                limits.file_timeout.as_secs()
            ),
            Self::Stack => format!("wasm stack limit of {} KiB", limits.wasm_stack_bytes >> 10),
            Self::ItemsPerBatch => format!("limit of {} items per batch", limits.items_per_batch),
            Self::BytesPerBatch => format!(
                "limit of {} MiB of text per batch",
                limits.bytes_per_batch >> 20
            ),
        }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
