//! Every path under a chatmill root, named in one place:
//!
//! ```text
//! ROOT/
//!   <chunk files>.md               chunk files (batch: `<chunk_id>.md`; inline: dated names)
//!   raw/<session>.md               inline mode's session logs, and the default import input
//!   assets/<sha256-prefix>.<ext>   images and files of exports, linked from chunks (never an input)
//!   conversations/<date> <title>.md  one generated note per conversation (never an input, never indexed)
//!   .processing-manifest.json      the manifest
//!   .chatmill/lock                 one writer at a time
//!   .chatmill/backfill.json        chunks whose header waits for the header model
//!   .chatmill/index.sqlite3        the embedded index
//!   .chatmill/index-keywords.sqlite3  its keyword index (written beside it)
//!   .chatmill/embeddings.sqlite3   embeddings already made, by model and text
//!   .chatmill/chatmill.sock        the inline socket, when there is no runtime folder
//!   .chatmill-tmp-*                atomic writes in progress (a killed run's are swept)
//! ```

use std::path::{Path, PathBuf};

/// The manifest's name in the root.
pub const MANIFEST_FILE: &str = ".processing-manifest.json";
/// The folder of chatmill's own state in the root.
pub const STATE_DIR: &str = ".chatmill";
/// The folder of export files linked from chunks, in the root (a chunk
/// links `assets/<name>`).
pub use chatmill_chunking::asset_link::ASSETS_DIR;
/// The folder of per-conversation notes in the root ([`crate::notes`]).
pub const NOTES_DIR: &str = "conversations";
/// How every temp file of an atomic write starts.
pub use crate::atomic::TEMP_PREFIX;

/// A root folder, and the paths of everything chatmill keeps in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    path: PathBuf,
}

impl Root {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder chunk files are written to: the root itself.
    pub fn chunks(&self) -> &Path {
        &self.path
    }

    /// Inline mode's session logs; what `import` reads by default.
    pub fn raw(&self) -> PathBuf {
        self.path.join("raw")
    }

    /// The raw log of `session`, when it makes one plain file name.
    pub fn raw_log(&self, session: &str) -> std::io::Result<PathBuf> {
        crate::atomic::join_plain(&self.raw(), &format!("{session}.md"))
    }

    /// Images and files of exports, copied once each, by content.
    pub fn assets(&self) -> PathBuf {
        self.path.join(ASSETS_DIR)
    }

    /// The asset `name`, when it makes one plain file name.
    pub fn asset(&self, name: &str) -> std::io::Result<PathBuf> {
        crate::atomic::join_plain(&self.assets(), name)
    }

    /// The per-conversation notes ([`crate::notes`]).
    pub fn notes(&self) -> PathBuf {
        self.path.join(NOTES_DIR)
    }

    pub fn manifest(&self) -> PathBuf {
        self.path.join(MANIFEST_FILE)
    }

    /// chatmill's own state (`.chatmill/`).
    pub fn state(&self) -> PathBuf {
        self.path.join(STATE_DIR)
    }

    /// The file whose lock makes one writer at a time.
    pub fn lock(&self) -> PathBuf {
        self.state().join("lock")
    }

    /// What the hook entry points did (they answer their caller nothing).
    pub fn hook_log(&self) -> PathBuf {
        self.state().join("hook.log")
    }

    /// The chunks whose header waits for the header model.
    pub fn backfill_queue(&self) -> PathBuf {
        self.state().join("backfill.json")
    }

    /// The embedded index.
    pub fn index(&self) -> PathBuf {
        self.state().join("index.sqlite3")
    }

    /// Embeddings already made, by model and text.
    pub fn embedding_cache(&self) -> PathBuf {
        self.state().join("embeddings.sqlite3")
    }

    /// The random key of the root's redaction placeholders (0600): the
    /// same secret reads the same placeholder in every chunk of this root,
    /// and nothing outside the root can tell which secret it was.
    pub fn redaction_key(&self) -> PathBuf {
        self.state().join("redaction.key")
    }

    /// The inline socket when there is no runtime folder.
    pub fn socket(&self) -> PathBuf {
        self.state().join("chatmill.sock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_lives_under_the_root_and_raw_logs_are_plain_names() {
        let root = Root::new("/r");
        assert_eq!(root.manifest(), Path::new("/r/.processing-manifest.json"));
        assert_eq!(root.lock(), Path::new("/r/.chatmill/lock"));
        assert_eq!(root.index(), Path::new("/r/.chatmill/index.sqlite3"));
        assert_eq!(root.raw_log("s-1").unwrap(), Path::new("/r/raw/s-1.md"));
        assert!(root.raw_log("../x").is_err());
        assert_eq!(
            root.asset("0123456789abcdef.png").unwrap(),
            Path::new("/r/assets/0123456789abcdef.png")
        );
        assert!(root.asset("../manifest").is_err());
    }
}
