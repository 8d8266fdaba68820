//! The set of adapters a run can use — built-ins, the user's adapters
//! directory, and `--adapter PATH` — and choosing one per input by sniffing.

use std::path::{Path, PathBuf};

use crate::error::{AdapterError, SelectError};
use crate::input::Input;
use crate::runtime::{AdapterOrigin, LoadedAdapter, Runtime};

/// Bytes of normalized input adapters see when sniffing.
pub const SNIFF_BYTES: usize = 64 * 1024;
/// The lowest confidence that counts as "this is mine".
pub const MIN_CONFIDENCE: u8 = 50;

/// Something the user should know about how the set was put together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice(pub String);

/// A first-party adapter embedded in the binary.
pub struct Builtin {
    pub name: &'static str,
    pub wasm: &'static [u8],
}

pub struct AdapterSet {
    adapters: Vec<LoadedAdapter>,
    /// Shadowing and ignored adapters, for the user.
    pub notices: Vec<Notice>,
    /// User-directory adapters that failed to load (the rest still work).
    pub failures: Vec<AdapterError>,
}

/// Every `*.wasm` file directly in `dir`, sorted (a missing dir is empty).
pub fn user_adapter_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn newer(a: &str, b: &str) -> bool {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(a), Ok(b)) => a > b,
        _ => false,
    }
}

impl AdapterSet {
    /// Loads the built-ins, then the user's adapters in `user_dir`, then
    /// `dev` paths. A user adapter with the same id as a built-in replaces it
    /// only when its version is higher; a dev adapter always replaces.
    pub fn load(
        runtime: &Runtime,
        builtins: &[Builtin],
        user_dir: Option<&Path>,
        dev: &[PathBuf],
    ) -> Result<Self, AdapterError> {
        let mut set = Self {
            adapters: Vec::new(),
            notices: Vec::new(),
            failures: Vec::new(),
        };
        for b in builtins {
            let loaded = runtime.load(AdapterOrigin::Builtin, b.wasm)?;
            set.adapters.push(loaded);
        }
        if let Some(dir) = user_dir {
            for path in user_adapter_files(dir) {
                let loaded = std::fs::read(&path)
                    .map_err(|source| AdapterError::Input {
                        input: path.display().to_string(),
                        source,
                    })
                    .and_then(|bytes| runtime.load(AdapterOrigin::User(path.clone()), &bytes));
                match loaded {
                    Ok(a) => set.add_user(a),
                    Err(e) => set.failures.push(e),
                }
            }
        }
        for path in dev {
            let bytes = std::fs::read(path).map_err(|source| AdapterError::Input {
                input: path.display().to_string(),
                source,
            })?;
            let loaded = runtime.load(AdapterOrigin::Dev(path.clone()), &bytes)?;
            if let Some(i) = set.position(&loaded.info.id) {
                let old = set.adapters.remove(i);
                set.notices.push(Notice(format!(
                    "adapter `{}` {} from `{}` replaces {} {} for this run",
                    loaded.info.id,
                    loaded.info.version,
                    path.display(),
                    old.origin.kind(),
                    old.info.version
                )));
            }
            set.adapters.push(loaded);
        }
        Ok(set)
    }

    fn position(&self, id: &str) -> Option<usize> {
        self.adapters.iter().position(|a| a.info.id == id)
    }

    fn add_user(&mut self, a: LoadedAdapter) {
        let Some(i) = self.position(&a.info.id) else {
            self.adapters.push(a);
            return;
        };
        let existing = &self.adapters[i];
        let path = a
            .origin
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        if newer(&a.info.version, &existing.info.version) {
            self.notices.push(Notice(format!(
                "user adapter `{}` {} (`{path}`) shadows the {} one ({})",
                a.info.id,
                a.info.version,
                existing.origin.kind(),
                existing.info.version
            )));
            self.adapters[i] = a;
        } else {
            self.notices.push(Notice(format!(
                "user adapter `{}` {} (`{path}`) is ignored: the {} one is {}",
                a.info.id,
                a.info.version,
                existing.origin.kind(),
                existing.info.version
            )));
        }
    }

    pub fn adapters(&self) -> &[LoadedAdapter] {
        &self.adapters
    }

    pub fn get(&self, id: &str) -> Option<&LoadedAdapter> {
        self.adapters.iter().find(|a| a.info.id == id)
    }

    pub fn ids(&self) -> Vec<String> {
        self.adapters.iter().map(|a| a.info.id.clone()).collect()
    }

    /// Every adapter's confidence for `input`, highest first (ties by id).
    pub fn scores(
        &self,
        runtime: &Runtime,
        input: &Input,
    ) -> Result<Vec<(String, u8)>, AdapterError> {
        let head = input
            .head(SNIFF_BYTES)
            .map_err(|source| AdapterError::Input {
                input: input.display().to_string(),
                source,
            })?;
        let mut scores: Vec<(String, u8)> = self
            .adapters
            .iter()
            .map(|a| {
                let s = runtime.sniff(a, &head, input.name()).unwrap_or_else(|e| {
                    tracing::warn!("sniff failed: {e}");
                    0
                });
                (a.info.id.clone(), s)
            })
            .collect();
        scores.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(scores)
    }

    /// The adapter for `input`: `forced` by id, else the most confident one.
    pub fn select(
        &self,
        runtime: &Runtime,
        input: &Input,
        forced: Option<&str>,
    ) -> Result<&LoadedAdapter, SelectError> {
        if let Some(id) = forced {
            return self.get(id).ok_or_else(|| SelectError::UnknownFormat {
                id: id.to_string(),
                available: self.ids(),
            });
        }
        let scores = self.scores(runtime, input)?;
        let best = scores.first().map_or(0, |s| s.1);
        if best < MIN_CONFIDENCE {
            return Err(SelectError::Unrecognized {
                input: input.display().to_string(),
                best: scores.into_iter().filter(|s| s.1 > 0).take(3).collect(),
            });
        }
        let top: Vec<_> = scores.iter().filter(|s| s.1 == best).cloned().collect();
        if top.len() > 1 {
            return Err(SelectError::Ambiguous {
                input: input.display().to_string(),
                candidates: top,
            });
        }
        Ok(self.get(&top[0].0).expect("scored adapters are in the set"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_strictly_newer_version_shadows() {
        assert!(newer("0.2.0", "0.1.0"));
        assert!(newer("1.0.0", "0.9.9"));
        assert!(!newer("0.1.0", "0.1.0"));
        assert!(!newer("0.0.9", "0.1.0"));
        assert!(!newer("garbage", "0.1.0"));
    }

    #[test]
    fn only_wasm_files_are_user_adapters() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.wasm"), b"").unwrap();
        std::fs::write(dir.path().join("a.wasm"), b"").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"").unwrap();
        let files = user_adapter_files(dir.path());
        let names: Vec<_> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["a.wasm", "b.wasm"]);
        assert!(user_adapter_files(&dir.path().join("missing")).is_empty());
    }
}
