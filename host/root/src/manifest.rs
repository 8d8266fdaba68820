//! The processing manifest (`ROOT/.processing-manifest.json`): which inputs
//! were processed, with which adapter, into which chunks — and, per
//! conversation, how far it has been chunked, so a grown conversation adds
//! only its new pairs. Versioned; written atomically; it never claims a
//! chunk that is not on disk (it is saved after the chunks are written).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The manifest format this chatmill writes. 2: inputs record the chunk
/// format they were written in; `assets` and `stale` may be there. 3: an
/// input records its pairs per conversation and the pairs left out
/// (`pairs`), and which of its chunks its latest run added (`run`,
/// `run_chunks`); older records have none, read as empty (the migration
/// is a default: such inputs are reported as not counted).
pub const MANIFEST_VERSION: u32 = 3;
/// The file name under the root.
pub use crate::root::MANIFEST_FILE;

/// When the file at `path` last changed, as its modification time and
/// size: how a writer notices that another one saved the manifest.
pub fn stamp(path: &Path) -> Option<(std::time::SystemTime, u64)> {
    let m = fs_err::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub version: u32,
    /// By input key (the path as given, or `archive.zip!inner/path`).
    pub files: BTreeMap<String, FileRecord>,
    /// By conversation key (`platform:conversation-id`).
    pub conversations: BTreeMap<String, ConversationRecord>,
    /// Chunk ids a reprocess replaced: removed from the index and the chunk
    /// folder once a manifest that no longer claims them is durable (see
    /// `import::reprocess`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale: Vec<String>,
    /// The export files copied to `ROOT/assets/`, by their name there.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub assets: BTreeMap<String, AssetRecord>,
}

/// An image or file of an export, copied once to `ROOT/assets/` and linked
/// from the chunks that show it; named by its content
/// (`<first 16 hex digits of its SHA-256>.<extension>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssetRecord {
    pub sha256: String,
    pub size: u64,
    /// Where it was first copied from (an input key: a path, or
    /// `archive.zip!inner/path`).
    pub source: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileStatus {
    Processed,
    /// Not a chat export (no adapter recognized it), or empty.
    Skipped,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterRef {
    pub id: String,
    pub version: String,
    pub sha256: String,
    /// The chunk format the input's chunks were written in
    /// ([`crate::chunk::CHUNK_FORMAT`]; 1 in manifests that predate it).
    #[serde(default = "first_chunk_format")]
    pub chunk_format: u32,
    /// The redaction rule-set version the chunks were redacted with
    /// (`chatmill_redact::RULESET_VERSION`); absent: not redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction: Option<u32>,
}

fn first_chunk_format() -> u32 {
    1
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRecord {
    pub sha256: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<AdapterRef>,
    pub processed_at: DateTime<Utc>,
    pub status: FileStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Chunks this file produced (in this or an earlier run).
    #[serde(default)]
    pub chunk_ids: Vec<String>,
    /// The other file of a batch this one was parsed together with (the
    /// results file on the requests file's record, and the other way round;
    /// the chunks are listed on the requests file's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined: Option<String>,
    /// Per conversation (`platform:id`): the pairs the input holds and the
    /// ones left out of the chunks (v3; empty in older records). What
    /// `chatmill report` checks preservation against, without the source.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pairs: BTreeMap<String, InputPairs>,
    /// When the import that last read it started (v3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<DateTime<Utc>>,
    /// How many of `chunk_ids` (the last ones) that import added.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub run_chunks: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One conversation of an input: how many pairs the source holds, and the
/// pairs not written to any chunk, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputPairs {
    pub parsed: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<Excluded>,
}

/// A pair left out of the chunks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Excluded {
    /// Its pair index in the conversation.
    pub pair: u32,
    /// Why (`mechanical`: a greeting, thanks or acknowledgement).
    pub reason: String,
    /// The start of its request (at most 80 characters), so a person can
    /// check it; the source's text, untrusted.
    pub request: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationRecord {
    /// The highest pair index already chunked (or excluded).
    pub last_pair: u32,
    /// Where its chunks live.
    pub chunk_ids: Vec<String>,
    /// The file name of its note under `ROOT/conversations/`, chosen once
    /// (from its first date and title) and kept when the title changes, so
    /// links to the note keep working.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read the manifest `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the manifest `{path}` is not valid: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error(
        "the manifest `{path}` has format version {found}; this chatmill reads up to {supported}"
    )]
    TooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("cannot write the manifest `{path}`: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ManifestError {
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Self::Invalid { .. } => Some(
                "the chunk files are the source of truth: `chatmill verify --repair` rebuilds the manifest from them",
            ),
            Self::TooNew { .. } => Some("upgrade chatmill, or point `--root` at another folder"),
            _ => None,
        }
    }
}

/// The key a conversation is tracked under.
pub fn conversation_key(platform: &str, id: &str) -> String {
    format!("{platform}:{id}")
}

impl Manifest {
    pub fn new() -> Self {
        Self {
            version: MANIFEST_VERSION,
            ..Self::default()
        }
    }

    /// Reads `path`; a missing file is an empty manifest.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let text = match fs_err::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::new()),
            Err(source) => {
                return Err(ManifestError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        #[derive(Deserialize)]
        struct Probe {
            version: u32,
        }
        let invalid = |e: serde_json::Error| ManifestError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let probe: Probe = serde_json::from_str(&text).map_err(invalid)?;
        if probe.version > MANIFEST_VERSION {
            return Err(ManifestError::TooNew {
                path: path.to_path_buf(),
                found: probe.version,
                supported: MANIFEST_VERSION,
            });
        }
        let mut manifest: Self = serde_json::from_str(&text).map_err(invalid)?;
        // Older versions read as this one: what they lack is empty.
        manifest.version = MANIFEST_VERSION;
        Ok(manifest)
    }

    /// Writes atomically: a temp file in the same folder, then a rename.
    /// Everything written before on the same file system (the chunk files it
    /// lists) is made durable first.
    pub fn save(&self, path: &Path) -> Result<(), ManifestError> {
        let write = |source| ManifestError::Write {
            path: path.to_path_buf(),
            source,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        fs_err::create_dir_all(dir).map_err(write)?;
        crate::atomic::sync(dir).map_err(write)?;
        // Written as it is serialized: a 100k-chunk manifest (10 MB) made
        // whole in memory first was most of an import's last tenth of a
        // second, on one core.
        crate::atomic::write_durable_with(path, |out| {
            serde_json::to_writer_pretty(out, self).map_err(std::io::Error::from)
        })
        .map_err(write)
    }

    /// How many distinct chunk ids the manifest knows (without ordering
    /// them: a count of 100k ids was a tree of them).
    pub fn chunk_count(&self) -> usize {
        let ids = self.each_chunk_id();
        let mut seen = rustc_hash::FxHashSet::default();
        seen.reserve(ids.clone().count());
        ids.filter(|id| seen.insert(*id)).count()
    }

    /// Every chunk id the manifest knows, sorted and once each.
    pub fn chunk_ids(&self) -> std::collections::BTreeSet<&str> {
        self.each_chunk_id().collect()
    }

    /// Every chunk id the manifest knows, as its conversations list them
    /// (unsorted; an id listed twice comes twice).
    pub fn each_chunk_id(&self) -> impl Iterator<Item = &str> + Clone {
        self.conversations
            .values()
            .flat_map(|c| c.chunk_ids.iter().map(String::as_str))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_manifest_is_empty_and_a_saved_one_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_FILE);
        let mut m = Manifest::load(&path).unwrap();
        assert_eq!(m, Manifest::new());
        m.conversations.insert(
            conversation_key("chatgpt", "c1"),
            ConversationRecord {
                last_pair: 3,
                chunk_ids: vec!["chatgpt-abc-001-2024-05-01".into()],
                note: None,
            },
        );
        m.files.insert(
            "raw/conversations.json".into(),
            FileRecord {
                sha256: "00".repeat(32),
                size: 10,
                adapter: Some(AdapterRef {
                    id: "chatgpt".into(),
                    version: "0.1.0".into(),
                    sha256: "11".repeat(32),
                    chunk_format: crate::chunk::CHUNK_FORMAT,
                    redaction: Some(1),
                }),
                processed_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
                status: FileStatus::Processed,
                reason: None,
                chunk_ids: vec!["chatgpt-abc-001-2024-05-01".into()],
                joined: None,
                pairs: BTreeMap::from([(
                    "chatgpt:c1".into(),
                    InputPairs {
                        parsed: 3,
                        excluded: vec![Excluded {
                            pair: 2,
                            reason: "mechanical".into(),
                            request: "thanks!".into(),
                        }],
                    },
                )]),
                run: DateTime::from_timestamp(1_700_000_000, 0),
                run_chunks: 1,
            },
        );
        m.save(&path).unwrap();
        assert_eq!(Manifest::load(&path).unwrap(), m);
        assert!(m.chunk_ids().contains("chatgpt-abc-001-2024-05-01"));
        assert_eq!(m.chunk_count(), 1);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp files left behind");
    }

    #[test]
    fn a_version_2_manifest_reads_as_version_3_without_counts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_FILE);
        let v2 = r#"{"version": 2, "files": {"a.json": {"sha256": "00", "size": 1,
            "processed_at": "2024-01-01T00:00:00Z", "status": "processed",
            "chunk_ids": ["x"]}}, "conversations": {}}"#;
        std::fs::write(&path, v2).unwrap();
        let m = Manifest::load(&path).unwrap();
        assert_eq!(m.version, 3);
        let f = &m.files["a.json"];
        assert!(f.pairs.is_empty() && f.run.is_none() && f.run_chunks == 0);
        m.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"version\": 3"), "{text}");
    }

    #[test]
    fn newer_or_broken_manifests_are_refused_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_FILE);
        std::fs::write(
            &path,
            r#"{"version": 99, "files": {}, "conversations": {}}"#,
        )
        .unwrap();
        let e = Manifest::load(&path).unwrap_err();
        assert!(matches!(e, ManifestError::TooNew { found: 99, .. }), "{e}");
        std::fs::write(&path, "{ not json").unwrap();
        let e = Manifest::load(&path).unwrap_err();
        assert!(e.hint().unwrap().contains("verify --repair"));
    }
}
