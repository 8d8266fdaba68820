//! The root on disk: every path under it ([`root`]), atomic writes
//! ([`atomic`]), the one-writer lock ([`lock`]), the manifest
//! ([`manifest`]), the chunk file format ([`chunk`]) and the chunk files as
//! a store ([`chunk_store`], with what the index gets from one in
//! [`record`]), assets copied from exports ([`assets`]), the generated
//! per-conversation notes ([`notes`]), what an import may read as input
//! ([`inventory`]), and the problems a check of the root finds
//! ([`problem`]).
//!
//! Nothing here prints.

pub mod assets;
pub mod atomic;
pub mod chunk;
pub mod chunk_store;
pub mod inventory;
pub mod lock;
pub mod manifest;
pub mod notes;
pub mod problem;
pub mod record;
pub mod root;
