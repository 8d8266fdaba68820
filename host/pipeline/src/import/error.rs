//! Why an import could not run at all (an input's own failure is a
//! [`super::summary::FileProblem`] in the summary instead).

use std::path::PathBuf;

use chatmill_root::manifest::ManifestError;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("cannot read input `{path}`: {source}")]
    Inventory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Lock(#[from] chatmill_root::lock::LockError),
    #[error("cannot create the root `{path}`: {source}")]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
