//! Streaming over the elements of a top-level JSON array without holding the
//! whole document: each element's raw bytes are handed out one at a time, to be
//! deserialized (ideally borrowing) by the adapter. Memory is bounded by the
//! largest element, not the file.
//!
//! Also handles an object wrapper whose named key holds the array
//! (`{"conversations": [...]}`), and a top-level object that is itself the
//! single element (a one-conversation export).

use std::io::Read;

use crate::model::{ErrorKind, Location, ParseError};

const BUF_SIZE: usize = 64 * 1024;

/// One element of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    /// 0-based position in the array (0 for a single top-level object).
    pub index: u64,
    /// Byte offset of the element's first byte in the input.
    pub offset: u64,
    /// The element's raw JSON bytes.
    pub bytes: Vec<u8>,
}

impl Element {
    /// The element as text, when it is valid UTF-8 (always, behind the
    /// host's normalization). Checked once, whole and with SIMD, so that
    /// `serde_json::from_str` over it skips checking string by string —
    /// which `from_slice` does, a word at a time.
    pub fn text(&self) -> Option<&str> {
        simdutf8::basic::from_utf8(&self.bytes).ok()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    /// Inside the array; `first` until the first element was read.
    InArray {
        first: bool,
    },
    /// Inside a wrapper object, after its array ended.
    AfterWrappedArray,
    Done,
}

/// Splits a JSON document into the elements of its top-level array.
pub struct JsonStream<R> {
    reader: R,
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
    /// Input bytes consumed before `buf[0]`.
    base: u64,
    eof: bool,
    state: State,
    wrapper_keys: &'static [&'static str],
    max_element: usize,
    next_index: u64,
    /// A top-level object that turned out not to be a wrapper: the element.
    pending: Option<Element>,
    /// The array being streamed sits inside a wrapper object.
    wrapper_depth_open: bool,
}

impl<R: Read> JsonStream<R> {
    /// A stream over `reader`. `wrapper_keys` names object keys whose array
    /// value is the stream when the document is an object (e.g.
    /// `&["conversations"]`); an object without such a key is one element.
    pub fn new(reader: R, wrapper_keys: &'static [&'static str]) -> Self {
        Self {
            reader,
            buf: vec![0; BUF_SIZE].into_boxed_slice(),
            pos: 0,
            len: 0,
            base: 0,
            eof: false,
            state: State::Start,
            wrapper_keys,
            max_element: 512 * 1024 * 1024,
            next_index: 0,
            pending: None,
            wrapper_depth_open: false,
        }
    }

    /// Caps the size of one element (default 512 MiB); larger ones are a
    /// `too-large` error.
    pub fn with_max_element(mut self, bytes: usize) -> Self {
        self.max_element = bytes;
        self
    }

    /// Byte offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn err(&self, message: impl Into<String>) -> ParseError {
        ParseError::malformed(message).at(Location::byte(self.offset()))
    }

    fn fill(&mut self) -> Result<bool, ParseError> {
        if self.pos < self.len {
            return Ok(true);
        }
        if self.eof {
            return Ok(false);
        }
        self.base += self.len as u64;
        self.pos = 0;
        self.len = 0;
        loop {
            match self.reader.read(&mut self.buf) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.len = n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(ParseError::new(
                        ErrorKind::Internal,
                        format!("reading input failed: {e}"),
                    )
                    .at(Location::byte(self.offset())));
                }
            }
        }
    }

    /// The next non-whitespace byte, not consumed.
    fn peek(&mut self) -> Result<Option<u8>, ParseError> {
        loop {
            if !self.fill()? {
                return Ok(None);
            }
            while self.pos < self.len {
                let b = self.buf[self.pos];
                if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                    self.pos += 1;
                } else {
                    return Ok(Some(b));
                }
            }
        }
    }

    fn expect(&mut self, want: u8) -> Result<(), ParseError> {
        match self.peek()? {
            Some(b) if b == want => {
                self.pos += 1;
                Ok(())
            }
            Some(b) => Err(self.err(format!(
                "expected `{}` but found `{}`",
                want as char,
                (b as char).escape_default()
            ))),
            None => Err(self.err(format!(
                "unexpected end of input, expected `{}`",
                want as char
            ))),
        }
    }

    /// Reads one complete JSON value, copying its bytes into `out` when given.
    fn value(&mut self, mut out: Option<&mut Vec<u8>>) -> Result<(), ParseError> {
        let Some(first) = self.peek()? else {
            return Err(self.err("unexpected end of input, expected a value"));
        };
        let start = self.offset();
        let mut depth: usize = 0;
        let mut in_string = false;
        let mut escaped = false;
        let scalar = !matches!(first, b'{' | b'[' | b'"');
        let mut copied = 0usize;
        loop {
            if !self.fill()? {
                if scalar && depth == 0 {
                    return Ok(());
                }
                return Err(ParseError::malformed(
                    "unexpected end of input inside a value (truncated file?)",
                )
                .at(Location::byte(start)));
            }
            let chunk = &self.buf[self.pos..self.len];
            let mut end = None;
            let mut i = 0;
            while i < chunk.len() {
                let b = chunk[i];
                if scalar {
                    if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                        end = Some(i);
                        break;
                    }
                    i += 1;
                    continue;
                }
                if in_string {
                    if escaped {
                        escaped = false;
                        i += 1;
                        continue;
                    }
                    // Most of a document is string content: jump to the
                    // next quote or backslash instead of stepping the state
                    // machine byte by byte.
                    match memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                        None => {
                            i = chunk.len();
                            continue;
                        }
                        Some(k) => i += k,
                    }
                    if chunk[i] == b'\\' {
                        escaped = true;
                    } else {
                        in_string = false;
                        if depth == 0 {
                            end = Some(i + 1);
                            break;
                        }
                    }
                    i += 1;
                    continue;
                }
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        if depth == 0 {
                            return Err(self.err("unbalanced bracket"));
                        }
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i + 1);
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            let take = end.unwrap_or(chunk.len());
            copied += take;
            if copied > self.max_element {
                return Err(ParseError::new(
                    ErrorKind::TooLarge,
                    format!("one JSON value is larger than {} bytes", self.max_element),
                )
                .at(Location::byte(start)));
            }
            if let Some(out) = out.as_deref_mut() {
                out.extend_from_slice(&chunk[..take]);
            }
            self.pos += take;
            if end.is_some() {
                return Ok(());
            }
        }
    }

    /// Reads a JSON string at the cursor, returning its raw (still escaped)
    /// contents.
    fn key(&mut self) -> Result<Vec<u8>, ParseError> {
        let mut raw = Vec::new();
        if self.peek()? != Some(b'"') {
            return Err(self.err("expected an object key"));
        }
        self.value(Some(&mut raw))?;
        Ok(raw[1..raw.len() - 1].to_vec())
    }

    /// The next element, or `None` at the end of the array.
    pub fn next_element(&mut self) -> Result<Option<Element>, ParseError> {
        if let Some(p) = self.pending.take() {
            self.state = State::Done;
            return Ok(Some(p));
        }
        loop {
            match self.state {
                State::Done => return Ok(None),
                State::Start => match self.peek()? {
                    None => return Err(self.err("empty input, expected a JSON array or object")),
                    Some(b'[') => {
                        self.pos += 1;
                        self.state = State::InArray { first: true };
                    }
                    Some(b'{') => return self.open_object(),
                    Some(b) => {
                        return Err(ParseError::not_this_format(format!(
                            "expected a JSON array or object, found `{}`",
                            (b as char).escape_default()
                        ))
                        .at(Location::byte(self.offset())));
                    }
                },
                State::InArray { first } => {
                    match self.peek()? {
                        Some(b']') => {
                            self.pos += 1;
                            self.state = if self.wrapper_depth_open {
                                State::AfterWrappedArray
                            } else {
                                State::Done
                            };
                            continue;
                        }
                        Some(b',') if !first => self.pos += 1,
                        Some(_) if first => {}
                        Some(b) => {
                            return Err(self.err(format!(
                                "expected `,` or `]` between array elements, found `{}`",
                                (b as char).escape_default()
                            )));
                        }
                        None => {
                            return Err(self.err(
                                "unexpected end of input inside the top-level array (truncated file?)",
                            ));
                        }
                    }
                    self.state = State::InArray { first: false };
                    let offset = self.offset();
                    let mut bytes = Vec::new();
                    self.value(Some(&mut bytes)).map_err(|e| {
                        let loc = e.location.clone().unwrap_or_default();
                        ParseError {
                            location: Some(Location {
                                record: Some(self.next_index),
                                ..loc
                            }),
                            ..e
                        }
                    })?;
                    let index = self.next_index;
                    self.next_index += 1;
                    return Ok(Some(Element {
                        index,
                        offset,
                        bytes,
                    }));
                }
                State::AfterWrappedArray => {
                    // Skip the wrapper's remaining keys.
                    loop {
                        match self.peek()? {
                            Some(b',') => {
                                self.pos += 1;
                                self.key()?;
                                self.expect(b':')?;
                                self.value(None)?;
                            }
                            Some(b'}') => {
                                self.pos += 1;
                                self.state = State::Done;
                                break;
                            }
                            _ => return Err(self.err("malformed wrapper object")),
                        }
                    }
                }
            }
        }
    }
}

impl<R: Read> JsonStream<R> {
    /// At a top-level `{`: either a wrapper whose key holds the array, or a
    /// single element. Keys before the array key are kept so the object can
    /// still be returned whole when it is not a wrapper.
    fn open_object(&mut self) -> Result<Option<Element>, ParseError> {
        let offset = self.offset();
        let mut whole = Vec::new();
        self.pos += 1;
        whole.push(b'{');
        let mut first = true;
        loop {
            match self.peek()? {
                Some(b'}') => {
                    self.pos += 1;
                    whole.push(b'}');
                    self.state = State::Done;
                    return Ok(Some(Element {
                        index: 0,
                        offset,
                        bytes: whole,
                    }));
                }
                Some(b',') if !first => {
                    self.pos += 1;
                    whole.push(b',');
                }
                Some(_) if first => {}
                Some(_) => return Err(self.err("expected `,` or `}` in the top-level object")),
                None => {
                    return Err(self.err(
                        "unexpected end of input inside the top-level object (truncated file?)",
                    ));
                }
            }
            first = false;
            let key = self.key()?;
            self.expect(b':')?;
            let is_wrapper = self
                .wrapper_keys
                .iter()
                .any(|k| k.as_bytes() == key.as_slice());
            if is_wrapper && self.peek()? == Some(b'[') {
                self.pos += 1;
                self.wrapper_depth_open = true;
                self.state = State::InArray { first: true };
                return self.next_element();
            }
            whole.push(b'"');
            whole.extend_from_slice(&key);
            whole.extend_from_slice(b"\":");
            self.value(Some(&mut whole))?;
            if whole.len() > self.max_element {
                return Err(ParseError::new(
                    ErrorKind::TooLarge,
                    format!(
                        "the top-level object is larger than {} bytes",
                        self.max_element
                    ),
                )
                .at(Location::byte(offset)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], keys: &'static [&'static str]) -> Result<Vec<String>, ParseError> {
        let mut s = JsonStream::new(input, keys);
        let mut out = Vec::new();
        while let Some(e) = s.next_element()? {
            out.push(String::from_utf8(e.bytes).unwrap());
        }
        Ok(out)
    }

    /// A reader that hands out one byte per call, to flush out buffering bugs.
    struct OneByte<'a>(&'a [u8]);
    impl Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }

    #[test]
    fn splits_array_elements_with_tricky_strings() {
        let doc = br#" [ {"a": "x]}\"{["}, [1, [2]], "s,]", 42 , true, null ] "#;
        let got = all(doc, &[]).unwrap();
        assert_eq!(
            got,
            [
                r#"{"a": "x]}\"{["}"#,
                "[1, [2]]",
                r#""s,]""#,
                "42",
                "true",
                "null"
            ]
        );
        // Same result one byte at a time.
        let mut s = JsonStream::new(OneByte(doc), &[]);
        let mut n = 0;
        while let Some(e) = s.next_element().unwrap() {
            assert_eq!(String::from_utf8(e.bytes).unwrap(), got[n]);
            n += 1;
        }
        assert_eq!(n, got.len());
    }

    #[test]
    fn element_text_is_the_bytes_when_they_are_utf8() {
        let mut s = JsonStream::new(
            &b"[\"caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80\", \"\xe9t\xe9\"]"[..],
            &[],
        );
        let ok = s.next_element().unwrap().unwrap();
        assert_eq!(ok.text(), Some("\"café — 😀\""));
        // Latin-1 bytes are not UTF-8: no text (the caller reads the bytes).
        let bad = s.next_element().unwrap().unwrap();
        assert_eq!(bad.text(), None);
    }

    #[test]
    fn streams_a_wrapped_array_and_skips_other_keys() {
        let doc =
            br#"{"version": {"x": [1]}, "conversations": [{"id": 1}, {"id": 2}], "tail": "}"}"#;
        assert_eq!(
            all(doc, &["conversations"]).unwrap(),
            [r#"{"id": 1}"#, r#"{"id": 2}"#]
        );
    }

    #[test]
    fn an_object_without_wrapper_key_is_one_element() {
        let doc = br#"{"uuid": "u", "chat_messages": [1, 2]}"#;
        assert_eq!(
            all(doc, &["conversations"]).unwrap(),
            [r#"{"uuid":"u","chat_messages":[1, 2]}"#]
        );
        assert_eq!(all(b"{}", &[]).unwrap(), ["{}"]);
    }

    #[test]
    fn truncation_and_garbage_are_errors_with_locations() {
        let e = all(br#"[{"a": 1}, {"b": "#, &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert_eq!(e.location.unwrap().record, Some(1));
        let e = all(b"[1 2]", &[]).unwrap_err();
        assert!(e.message.contains("expected `,`"), "{e}");
        assert_eq!(
            all(b"hello", &[]).unwrap_err().kind,
            ErrorKind::NotThisFormat
        );
        assert_eq!(all(b"", &[]).unwrap_err().kind, ErrorKind::Malformed);
        assert_eq!(all(b"[]", &[]).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn oversized_elements_are_too_large() {
        let mut s = JsonStream::new(&br#"[{"a": "0123456789"}]"#[..], &[]).with_max_element(8);
        assert_eq!(s.next_element().unwrap_err().kind, ErrorKind::TooLarge);
    }
}
