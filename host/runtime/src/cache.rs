//! The on-disk cache of compiled adapters, so start-up deserializes (about a
//! millisecond) instead of compiling (a tenth of a second for a Rust adapter,
//! many seconds for a Python or JS one).
//!
//! Layout: `<dir>/adapters-v1/<wasmtime version>-<engine hash>/<sha256>.cwasm`.
//! The engine hash covers everything that makes compiled code incompatible
//! (`Engine::precompile_compatibility_hash`), and the file name is the
//! content hash of the `.wasm`, so an entry can never be used for other code
//! or by another engine. A stale or corrupt entry is rebuilt silently.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Bump when the layout changes.
const BUCKET: &str = "adapters-v1";

pub(crate) struct ComponentCache {
    dir: PathBuf,
}

/// How a component was obtained, for benchmarks and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    Hit,
    Miss,
    /// An entry existed but could not be loaded; it was rebuilt.
    Rebuilt,
    Disabled,
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl ComponentCache {
    pub(crate) fn new(engine: &Engine, root: &Path) -> Self {
        let mut h = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        let dir = root
            .join(BUCKET)
            .join(format!("{}-{:016x}", wasmtime_version(), h.finish()));
        Self { dir }
    }

    fn entry(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.cwasm"))
    }

    /// The compiled component for `wasm`, from the cache or compiled now.
    pub(crate) fn get_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        sha256: &str,
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let path = self.entry(sha256);
        let mut outcome = CacheOutcome::Miss;
        if path.exists() {
            match Engine::detect_precompiled_file(&path) {
                Ok(Some(wasmtime::Precompiled::Component)) => {
                    // SAFETY: the cache directory belongs to the user, the
                    // entry is named by the content hash of the wasm it was
                    // compiled from and lives in a bucket keyed by this
                    // engine's compatibility hash; `detect_precompiled_file`
                    // checked its header. Entries are written atomically.
                    match unsafe { Component::deserialize_file(engine, &path) } {
                        Ok(c) => return Ok((c, CacheOutcome::Hit)),
                        Err(e) => tracing::debug!("cache entry {} unusable: {e}", path.display()),
                    }
                }
                other => {
                    tracing::debug!("cache entry {} not a component: {other:?}", path.display())
                }
            }
            let _ = std::fs::remove_file(&path);
            outcome = CacheOutcome::Rebuilt;
        }
        let compiled = engine.precompile_component(wasm)?;
        if let Err(e) = self.store(&path, &compiled) {
            tracing::debug!("cannot write cache entry {}: {e}", path.display());
        }
        // SAFETY: `compiled` was produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &compiled)? };
        Ok((component, outcome))
    }

    fn store(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        fs_err::create_dir_all(&self.dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        std::io::Write::write_all(&mut tmp, bytes)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

pub(crate) fn wasmtime_version() -> &'static str {
    // Kept in step with the exact pin in the workspace Cargo.toml.
    "wasmtime-48.0.8"
}
