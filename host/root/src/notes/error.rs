//! What goes wrong writing or rendering a note.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum NoteError {
    #[error("cannot write the conversation note `{path}`: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot render the note of conversation `{key}`: {message}")]
    Render { key: String, message: String },
}
