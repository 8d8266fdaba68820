//! chatmill's processing pipeline, shared by batch import and inline mode.
//! So far: how message parts are rendered as Markdown ([`render`]) and what
//! a chunk file looks like and how it is identified ([`chunk`]). Chunking,
//! headers, the manifest and import land with issue #4.
//!
//! Nothing here prints or touches the network.

pub mod chunk;
pub mod render;
