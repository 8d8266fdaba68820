//! The chatmill adapter runtime: loads export-format adapters (WebAssembly
//! components implementing `wit/adapter.wit`) and runs them sandboxed.
//!
//! - [`Runtime`] owns the wasmtime engine, the linker and the compiled cache.
//! - [`AdapterSet`] gathers built-in, user and dev adapters and picks one per
//!   input by sniffing.
//! - [`Runtime::parse`] runs one adapter over one [`Input`] in a fresh store
//!   with the [`Limits`], yielding validated [`model::Conversation`]s.
//! - [`conformance`] checks an adapter the way its author should before
//!   shipping it (`chatmill adapters test`).
//!
//! Nothing here prints; failures are [`AdapterError`]s with hints.

mod bindings;
mod boundary;
mod cache;
pub mod conformance;
mod error;
mod input;
mod limits;
mod parse;
mod pipe;
mod registry;
mod runtime;
mod source;
mod store;
mod toolchain;

/// The normalized model adapters' output is turned into.
pub use chatmill_model as model;

pub use boundary::{Adjustments, Rule};
pub use cache::CacheOutcome;
pub use error::{AdapterError, SelectError};
pub use input::{Input, TextEncoding};
pub use limits::{Limit, Limits};
pub use parse::{Declined, ParseStream};
pub use registry::{
    AdapterSet, Builtin, Lint, MIN_CONFIDENCE, Notice, SNIFF_BYTES, Sample, user_adapter_files,
};
pub use runtime::{API_VERSION, AdapterOrigin, LoadedAdapter, Runtime};
pub use toolchain::Toolchain;
