//! Why a conversation could not be turned into chunk files.

use chatmill_chunking::chunker::CoverageError;
use chatmill_chunking::header::HeaderError;
use chatmill_root::chunk::ChunkError;

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error(transparent)]
    Coverage(#[from] CoverageError),
    #[error("cannot write chunk `{chunk_id}`: {source}")]
    Write {
        chunk_id: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot render chunk `{chunk_id}`: {source}")]
    Render {
        chunk_id: String,
        #[source]
        source: ChunkError,
    },
    #[error("header writer failed for chunk `{chunk_id}`: {source}")]
    Header {
        chunk_id: String,
        #[source]
        source: HeaderError,
    },
}
