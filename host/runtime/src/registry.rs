//! The set of adapters a run can use — built-ins, the user's adapters
//! directory, and `--adapter PATH` — and choosing one per input by sniffing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

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

/// A small file of a first-party format, written for chatmill: what a new
/// adapter is sniffed against before it is trusted with files ([`AdapterSet::lint`]).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// The first-party adapter that reads it.
    pub adapter: &'static str,
    /// Its format id.
    pub format: &'static str,
    pub file_name: &'static str,
    pub bytes: &'static [u8],
}

/// What [`AdapterSet::lint`] found about an adapter before it is trusted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lint {
    /// First-party formats it claims (score ≥ [`MIN_CONFIDENCE`]) without
    /// carrying their adapter's id: `(format id, score)`.
    pub claims: Vec<(String, u8)>,
    /// Format ids another adapter of the set declares too:
    /// `(format id, that adapter's id)`.
    pub shared_formats: Vec<(String, String)>,
    /// The built-in adapter whose id it carries (it replaces that one).
    pub replaces: Option<String>,
}

pub struct AdapterSet {
    adapters: Vec<LoadedAdapter>,
    /// The first-party adapters' ids: their formats stay theirs.
    builtin_ids: Vec<String>,
    /// Adapters whose `sniff` failed once in this run: asked no more.
    broken_sniffers: Mutex<BTreeSet<String>>,
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
            builtin_ids: Vec::new(),
            broken_sniffers: Mutex::new(BTreeSet::new()),
            notices: Vec::new(),
            failures: Vec::new(),
        };
        for b in builtins {
            let loaded = runtime.load(AdapterOrigin::Builtin, b.wasm)?;
            set.builtin_ids.push(loaded.info.id.clone());
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

    /// Whether `id` is a first-party adapter's id (carried by a built-in,
    /// or by a user adapter that replaces one).
    pub fn is_builtin_id(&self, id: &str) -> bool {
        self.builtin_ids.iter().any(|b| b == id)
    }

    /// Every adapter's confidence for `input`, highest first (ties by id).
    /// An adapter whose `sniff` fails (a trap, a time limit) scores 0, is
    /// reported once, and is asked no more in this run.
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
                (
                    a.info.id.clone(),
                    self.sniff(runtime, a, &head, input.name()),
                )
            })
            .collect();
        scores.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(scores)
    }

    fn sniff(&self, runtime: &Runtime, a: &LoadedAdapter, head: &[u8], name: &str) -> u8 {
        let broken = || {
            self.broken_sniffers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if broken().contains(&a.info.id) {
            return 0;
        }
        runtime.sniff(a, head, name).unwrap_or_else(|e| {
            if broken().insert(a.info.id.clone()) {
                tracing::warn!(
                    "{e}; adapter `{}` is left out of sniffing for the rest of this run",
                    a.info.id
                );
            }
            0
        })
    }

    /// The adapter for `input`: `forced` by id, else the most confident one
    /// ([`AdapterSet::candidates`]).
    pub fn select(
        &self,
        runtime: &Runtime,
        input: &Input,
        forced: Option<&str>,
    ) -> Result<&LoadedAdapter, SelectError> {
        Ok(self.candidates(runtime, input, forced)?[0])
    }

    /// The adapters that may read `input`, most confident first: `forced`
    /// alone, else every one that claims it (score ≥ [`MIN_CONFIDENCE`]).
    /// When an adapter with a first-party id claims it, only those do: a
    /// third-party adapter never takes a first-party format's files unless
    /// the user names it. A tie at the top is ambiguous. Never empty.
    pub fn candidates(
        &self,
        runtime: &Runtime,
        input: &Input,
        forced: Option<&str>,
    ) -> Result<Vec<&LoadedAdapter>, SelectError> {
        if let Some(id) = forced {
            return match self.get(id) {
                Some(a) => Ok(vec![a]),
                None => Err(SelectError::UnknownFormat {
                    id: id.to_string(),
                    available: self.ids(),
                }),
            };
        }
        let scores = self.scores(runtime, input)?;
        let mut claims: Vec<(String, u8)> = scores
            .iter()
            .filter(|s| s.1 >= MIN_CONFIDENCE)
            .cloned()
            .collect();
        if claims.iter().any(|(id, _)| self.is_builtin_id(id)) {
            claims.retain(|(id, _)| self.is_builtin_id(id));
        }
        let Some(&(_, best)) = claims.first() else {
            return Err(SelectError::Unrecognized {
                input: input.display().to_string(),
                best: scores.into_iter().filter(|s| s.1 > 0).take(3).collect(),
            });
        };
        if claims.iter().filter(|s| s.1 == best).count() > 1 {
            return Err(SelectError::Ambiguous {
                input: input.display().to_string(),
                candidates: claims.into_iter().filter(|s| s.1 == best).collect(),
            });
        }
        Ok(claims.iter().filter_map(|(id, _)| self.get(id)).collect())
    }

    /// Checks `adapter` before it is trusted with files: sniffs it against
    /// `samples` of the first-party formats (a claim on a format whose
    /// adapter id it does not carry is listed) and compares its format ids
    /// with the other adapters'. A failing sniff is an error, and the
    /// adapter is asked no more in this run.
    pub fn lint(
        &self,
        runtime: &Runtime,
        adapter: &LoadedAdapter,
        samples: &[Sample],
    ) -> Result<Lint, AdapterError> {
        let id = adapter.info.id.as_str();
        let mut lint = Lint {
            replaces: self.is_builtin_id(id).then(|| id.to_string()),
            ..Lint::default()
        };
        for s in samples.iter().filter(|s| s.adapter != id) {
            let head = &s.bytes[..s.bytes.len().min(SNIFF_BYTES)];
            let score = runtime.sniff(adapter, head, s.file_name).inspect_err(|_| {
                self.broken_sniffers
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id.to_string());
            })?;
            if score >= MIN_CONFIDENCE {
                lint.claims.push((s.format.to_string(), score));
            }
        }
        for other in self.adapters.iter().filter(|o| o.info.id != id) {
            for f in &adapter.info.formats {
                if other.info.formats.iter().any(|g| g.id == f.id) {
                    lint.shared_formats
                        .push((f.id.clone(), other.info.id.clone()));
                }
            }
        }
        Ok(lint)
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
