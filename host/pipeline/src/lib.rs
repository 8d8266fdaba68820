//! chatmill's processing pipeline, shared by batch import and inline mode:
//! how a conversation's pairs become chunks ([`chunker`]), how message parts
//! are rendered as Markdown ([`render`]), how contextual headers and topics
//! are written ([`header`]), and what a chunk file looks like and how it is
//! identified ([`chunk`]). The manifest, the import run and the index land
//! with issue #4.
//!
//! Nothing here prints or touches the network.

pub mod atomic;
pub mod backfill;
pub mod chunk;
pub mod chunker;
pub mod header;
pub mod import;
pub mod inline;
pub mod inventory;
pub mod llm;
pub mod lock;
pub mod manifest;
pub mod processor;
pub mod record;
pub mod render;
pub mod verify;
