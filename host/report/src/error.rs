//! Why a report could not be made or written.

use std::path::PathBuf;

use chatmill_root::manifest::ManifestError;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("cannot list the chunk files of `{path}`: {source}")]
    List {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the page `{path}`: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
