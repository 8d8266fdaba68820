//! Chunk-making: pure functions from a normalized conversation to the texts
//! of its chunks. How pairs become chunks ([`chunker`]), how message parts
//! are rendered as Markdown ([`render`], with the names of linked assets in
//! [`asset_link`]), how titles are derived ([`title`]), and how contextual
//! headers and topics are written ([`header`], and [`llm`] for a header
//! model behind an OpenAI-compatible endpoint).
//!
//! Nothing here touches the disk; only [`llm`] touches the network.

pub mod asset_link;
pub mod chunker;
pub mod header;
pub mod llm;
pub mod render;
pub mod title;
