//! The chatmill adapter SDK: write an export-format adapter as a Rust trait,
//! export it as a WebAssembly component with one macro.
//!
//! An adapter is a pure, streaming parser. It reads one input through
//! [`Input`] (a `std::io::Read` over bytes the host hands over in pieces) and
//! yields normalized [`Item`]s in bounded batches. The same code compiles
//! natively, so parsing logic is unit-tested and benchmarked without wasm:
//! [`parse_all`] drives an adapter over any reader.
//!
//! ```text
//! use chatmill_adapter_sdk::*;
//!
//! struct MyFormat;
//!
//! impl Adapter for MyFormat {
//!     fn describe() -> AdapterInfo { /* id, name, version, formats */ }
//!     fn sniff(head: &[u8], file_name: &str) -> u8 { /* 0..=100 */ }
//!     fn open(input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
//!         Ok(batched(MyReader::new(input)))   // a ConversationReader
//!     }
//! }
//!
//! chatmill_adapter_sdk::export_adapter!(MyFormat);
//! ```

pub mod json;
pub mod lenient;
pub mod lines;
pub mod model;
pub mod scan;
pub mod text;

#[cfg(not(target_arch = "wasm32"))]
pub mod testkit;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod guest;

use std::collections::VecDeque;
use std::io::Read;

pub use model::*;

/// The WIT package version this SDK builds adapters for.
pub const API_VERSION: &str = "0.1.0";

/// Host-supplied options (key/value). None are defined yet; ignore unknown keys.
pub type Options = [(String, String)];

/// The input an adapter reads: normalized UTF-8 with `\n` line endings.
pub struct Input {
    name: String,
    size_hint: Option<u64>,
    reader: Box<dyn Read>,
}

impl Input {
    pub fn new(name: impl Into<String>, size_hint: Option<u64>, reader: Box<dyn Read>) -> Self {
        Self {
            name: name.into(),
            size_hint,
            reader,
        }
    }

    /// An input over bytes in memory (tests, benchmarks).
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> Self {
        let len = bytes.len() as u64;
        Self::new(name, Some(len), Box::new(std::io::Cursor::new(bytes)))
    }

    /// The file name (no directories).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn size_hint(&self) -> Option<u64> {
        self.size_hint
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.reader.read(buf)
    }
}

/// An export-format adapter.
pub trait Adapter {
    /// Who the adapter is and which formats it reads.
    fn describe() -> AdapterInfo;
    /// Confidence 0..=100 that `head` (the first bytes of the normalized
    /// input, up to 64 KiB) and `file_name` are this adapter's format.
    fn sniff(head: &[u8], file_name: &str) -> u8;
    /// Starts one parse.
    fn open(input: Input, options: &Options) -> Result<Box<dyn Session>, ParseError>;
}

/// One parse of one input.
pub trait Session {
    /// Up to `max_items` items; an empty vector means the input is exhausted.
    fn next_batch(&mut self, max_items: usize) -> Result<Vec<Item>, ParseError>;
}

/// Produces whole conversations one at a time; [`batched`] turns it into a
/// [`Session`].
pub trait ConversationReader {
    fn next_conversation(&mut self) -> Result<Option<Conversation>, ParseError>;
}

struct Batched<T> {
    reader: T,
    queue: VecDeque<Item>,
    done: bool,
}

impl<T: ConversationReader> Session for Batched<T> {
    fn next_batch(&mut self, max_items: usize) -> Result<Vec<Item>, ParseError> {
        let max_items = max_items.max(1);
        while self.queue.len() < max_items && !self.done {
            match self.reader.next_conversation()? {
                Some(c) => self.queue.extend(c.into_items()),
                None => self.done = true,
            }
        }
        let n = self.queue.len().min(max_items);
        Ok(self.queue.drain(..n).collect())
    }
}

/// A [`Session`] over a [`ConversationReader`]: batches its conversations'
/// items, reading only as many conversations as a batch needs.
pub fn batched(reader: impl ConversationReader + 'static) -> Box<dyn Session> {
    Box::new(Batched {
        reader,
        queue: VecDeque::new(),
        done: false,
    })
}

/// Runs `A` over `input` to the end, natively, asking for `max_items` per
/// batch. For tests and benchmarks; the host does the same through wasm.
pub fn parse_all<A: Adapter>(input: Input, max_items: usize) -> Result<Vec<Item>, ParseError> {
    let mut session = A::open(input, &[])?;
    let mut items = Vec::new();
    loop {
        let batch = session.next_batch(max_items)?;
        if batch.is_empty() {
            return Ok(items);
        }
        assert!(
            batch.len() <= max_items.max(1),
            "a session returned more items than asked for"
        );
        items.extend(batch);
    }
}

/// A reader that hands out at most `n` bytes per call, to test that an
/// adapter does not depend on how the host chunks its input.
pub struct Trickle<R> {
    inner: R,
    n: usize,
}

impl<R: Read> Trickle<R> {
    pub fn new(inner: R, n: usize) -> Self {
        Self { inner, n: n.max(1) }
    }
}

impl<R: Read> Read for Trickle<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.n);
        self.inner.read(&mut buf[..n])
    }
}

/// Exports an [`Adapter`] implementation as the component's `parser`
/// interface. Use once, at the crate root of a `cdylib` built for
/// `wasm32-wasip2`; natively it expands to nothing.
#[macro_export]
macro_rules! export_adapter {
    ($adapter:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            use $crate::guest::bindings::exports::chatmill::adapter::parser as __parser;

            struct __Export;
            struct __Session($crate::guest::SessionCell);

            impl __parser::Guest for __Export {
                type Session = __Session;
                fn describe() -> __parser::AdapterInfo {
                    $crate::guest::describe::<$adapter>()
                }
                fn sniff(head: ::std::vec::Vec<u8>, file_name: ::std::string::String) -> u8 {
                    <$adapter as $crate::Adapter>::sniff(&head, &file_name).min(100)
                }
            }

            impl __parser::GuestSession for __Session {
                fn open(
                    input: $crate::guest::Source,
                    options: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                ) -> ::std::result::Result<__parser::Session, __parser::ParseError> {
                    $crate::guest::open::<$adapter>(input, options)
                        .map(|cell| __parser::Session::new(__Session(cell)))
                }
                fn next(
                    &self,
                    max_items: u32,
                ) -> ::std::result::Result<::std::vec::Vec<__parser::Item>, __parser::ParseError>
                {
                    self.0.next(max_items)
                }
            }

    $crate::guest::bindings::export!(__Export with_types_in $crate::guest::bindings);
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Numbers {
        left: u32,
    }

    impl ConversationReader for Numbers {
        fn next_conversation(&mut self) -> Result<Option<Conversation>, ParseError> {
            if self.left == 0 {
                return Ok(None);
            }
            self.left -= 1;
            let mut c = Conversation::default();
            c.start.id = format!("c{}", self.left);
            c.pairs.push(TurnPair::default());
            Ok(Some(c))
        }
    }

    #[test]
    fn batches_respect_the_limit_and_cover_everything() {
        for max in [1, 2, 5, 100] {
            let mut s = batched(Numbers { left: 4 });
            let mut total = 0;
            loop {
                let b = s.next_batch(max).unwrap();
                assert!(b.len() <= max);
                if b.is_empty() {
                    break;
                }
                total += b.len();
            }
            assert_eq!(total, 12, "max {max}");
        }
    }
}
