//! chatmill's processing pipeline, shared by batch import ([`import`]) and
//! inline mode ([`inline`]): how a conversation's pairs become chunks
//! ([`chunker`]), how message parts are rendered as Markdown ([`render`]),
//! how contextual headers and topics are written ([`header`], [`llm`]), what
//! a chunk file looks like and how it is identified ([`chunk`]), and how
//! files, manifest and index are kept in step ([`processor`], [`manifest`],
//! [`verify`], [`backfill`], [`lock`]).
//!
//! Nothing here prints. Only [`llm`] touches the network (the configured
//! header model).

pub mod assets;
pub mod atomic;
pub mod backfill;
pub mod chunk;
pub mod chunk_store;
pub mod chunker;
pub mod header;
pub mod import;
pub mod inline;
pub mod inventory;
pub mod known_files;
pub mod llm;
pub mod lock;
pub mod manifest;
pub mod notes;
pub mod processor;
pub mod record;
pub mod render;
pub mod root;
pub mod sink;
pub mod title;
pub mod verify;
