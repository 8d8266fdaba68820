//! The host side of `wit/adapter.wit`, generated: the adapter world, its
//! types, and the `input.source` resource backed by
//! [`SourceState`](crate::source::SourceState).

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "adapter",
    with: {
        "chatmill:adapter/input.source": crate::source::SourceState,
    },
});
