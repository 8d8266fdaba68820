//! The first-party chatmill adapters, built for `wasm32-wasip2` by this
//! crate's build script and embedded as component bytes.

include!(concat!(env!("OUT_DIR"), "/adapters.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_adapter_is_an_embedded_component() {
        assert_eq!(ADAPTERS.len(), 6);
        for (name, wasm) in ADAPTERS {
            // The component-model layer header, not a core module's.
            assert_eq!(&wasm[..8], b"\0asm\x0d\0\x01\0", "{name}");
        }
    }
}
