//! Which toolchain built an adapter, told from the names its producers
//! left in the component, so that what an author is told fits the language
//! they wrote it in (a Python author has no SDK to "rebuild with").

use memchr::memmem;

/// The toolchain an adapter was built with, as far as its bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolchain {
    /// Rust (the chatmill adapter SDK or `wit-bindgen`).
    Rust,
    /// Python, with componentize-py.
    Python,
    /// JavaScript, with componentize-js (StarlingMonkey).
    JavaScript,
    /// Anything else.
    Other,
}

impl Toolchain {
    /// Reads the producers' names: componentize-py and componentize-js
    /// components embed their own name (and also contain Rust code, so
    /// they are asked first).
    pub fn of(wasm: &[u8]) -> Self {
        let has = |needle: &[u8]| memmem::find(wasm, needle).is_some();
        if has(b"componentize-py") {
            Self::Python
        } else if has(b"componentize-js") || has(b"StarlingMonkey") {
            Self::JavaScript
        } else if has(b"rustc") {
            Self::Rust
        } else {
            Self::Other
        }
    }

    /// How to rebuild an adapter for the adapter API `api`.
    pub fn rebuild_hint(self, api: &str) -> String {
        match self {
            Self::Rust => format!(
                "rebuild the adapter with the SDK for API {api} (`chatmill-adapter-sdk`; `chatmill adapters new \
                 --lang rust` writes a project with it)"
            ),
            Self::Python => format!(
                "regenerate the component with componentize-py against the `wit/adapter.wit` of API {api} \
                 (`chatmill adapters new --lang python` writes it)"
            ),
            Self::JavaScript => format!(
                "rebuild the component with componentize-js against the `wit/adapter.wit` of API {api} \
                 (`chatmill adapters new --lang js` writes it)"
            ),
            Self::Other => {
                format!("rebuild the adapter against the `wit/adapter.wit` of API {api}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producers_name_the_toolchain() {
        assert_eq!(
            Toolchain::of(b"..processed-by.componentize-py.0.25.1 rustc"),
            Toolchain::Python
        );
        assert_eq!(
            Toolchain::of(b"..StarlingMonkey..rustc"),
            Toolchain::JavaScript
        );
        assert_eq!(
            Toolchain::of(b"..language.Rust.processed-by.rustc.1.95"),
            Toolchain::Rust
        );
        assert_eq!(Toolchain::of(b"\0asm"), Toolchain::Other);
        assert!(!Toolchain::Python.rebuild_hint("0.1.0").contains("SDK"));
        assert!(
            Toolchain::Python
                .rebuild_hint("0.1.0")
                .contains("componentize-py")
        );
    }
}
