//! chatmill's drivers: batch import ([`import`]), inline mode
//! ([`inline`]), header backfill ([`backfill`]) and the root's check
//! ([`verify`]). Each turns conversations into chunk files with the
//! [`processor`] (chunk-making from `chatmill-chunking`, files, manifest and
//! notes from `chatmill-root`) and commits them to the index through a
//! [`sink`].
//!
//! Every conversation and turn goes through [`redaction`] before anything
//! is made of it.
//!
//! Nothing here prints.

pub mod backfill;
pub mod import;
pub mod inline;
pub mod processor;
pub mod redaction;
pub mod sink;
pub mod verify;
