//! Inputs and their normalization: the host hands adapters UTF-8 with `\n`
//! line endings, whatever the file was (UTF-8 with or without BOM, UTF-16
//! LE/BE, or legacy Windows-1252), so no adapter has to care.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use encoding_rs::{Decoder, Encoding, UTF_16BE, UTF_16LE, WINDOWS_1252};
use serde::Serialize;

type Opener = dyn Fn() -> io::Result<Box<dyn Read + Send>> + Send + Sync;

/// One input: something that can be opened (and re-opened) for reading.
#[derive(Clone)]
pub struct Input {
    name: String,
    display: String,
    size: Option<u64>,
    opener: Arc<Opener>,
    /// Found once (a full read for a file without a BOM), shared by clones:
    /// sniffing and parsing the same input do not read it through twice.
    encoding: Arc<OnceLock<TextEncoding>>,
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input")
            .field("display", &self.display)
            .finish()
    }
}

/// The text encoding an input was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TextEncoding {
    Utf8,
    Utf8Bom,
    Utf16Le,
    Utf16Be,
    /// Not valid UTF-8; read as Windows-1252.
    Windows1252,
}

impl Input {
    /// A file on disk.
    pub fn from_path(path: impl Into<PathBuf>) -> Self {
        let path: PathBuf = path.into();
        let size = std::fs::metadata(&path).ok().map(|m| m.len());
        let name = file_name(&path);
        let display = path.display().to_string();
        let p = path.clone();
        Self {
            name,
            display,
            size,
            opener: Arc::new(move || Ok(Box::new(fs_err::File::open(&p)?) as Box<dyn Read + Send>)),
            encoding: Arc::default(),
        }
    }

    /// Bytes in memory; `display` names it in messages.
    pub fn from_bytes(display: impl Into<String>, bytes: impl Into<Arc<[u8]>>) -> Self {
        let display = display.into();
        let bytes: Arc<[u8]> = bytes.into();
        Self {
            name: file_name(Path::new(&display)),
            size: Some(bytes.len() as u64),
            display,
            opener: Arc::new(move || {
                Ok(Box::new(io::Cursor::new(Arc::clone(&bytes))) as Box<dyn Read + Send>)
            }),
            encoding: Arc::default(),
        }
    }

    /// Anything that can be opened repeatedly (a zip entry, say).
    pub fn from_opener(
        name: impl Into<String>,
        display: impl Into<String>,
        size: Option<u64>,
        opener: impl Fn() -> io::Result<Box<dyn Read + Send>> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            display: display.into(),
            size,
            opener: Arc::new(opener),
            encoding: Arc::default(),
        }
    }

    /// The file name adapters see (no directories).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How messages name the input (a path, or `archive.zip!inner/path`).
    pub fn display(&self) -> &str {
        &self.display
    }

    /// Size in bytes before normalization, when known.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// Opens the raw bytes.
    pub fn open_raw(&self) -> io::Result<Box<dyn Read + Send>> {
        (self.opener)()
    }

    /// Finds the input's encoding (reads it through once when it has no BOM,
    /// to tell UTF-8 from Windows-1252; later calls, on this input or its
    /// clones, reuse the answer).
    pub fn detect_encoding(&self) -> io::Result<TextEncoding> {
        if let Some(e) = self.encoding.get() {
            return Ok(*e);
        }
        let e = self.read_encoding()?;
        Ok(*self.encoding.get_or_init(|| e))
    }

    fn read_encoding(&self) -> io::Result<TextEncoding> {
        let mut r = self.open_raw()?;
        let mut head = [0u8; 4096];
        let n = read_full(&mut r, &mut head)?;
        let head = &head[..n];
        if head.starts_with(b"\xEF\xBB\xBF") {
            return Ok(TextEncoding::Utf8Bom);
        }
        if head.starts_with(b"\xFF\xFE") {
            return Ok(TextEncoding::Utf16Le);
        }
        if head.starts_with(b"\xFE\xFF") {
            return Ok(TextEncoding::Utf16Be);
        }
        if let Some(e) = sniff_bomless_utf16(head) {
            return Ok(e);
        }
        // Validate UTF-8 across the whole input, carrying partial sequences
        // over chunk boundaries.
        let mut carry: Vec<u8> = head.to_vec();
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let valid_up_to = match std::str::from_utf8(&carry) {
                Ok(_) => carry.len(),
                Err(e) if e.error_len().is_some() => return Ok(TextEncoding::Windows1252),
                Err(e) => e.valid_up_to(),
            };
            carry.drain(..valid_up_to);
            let n = r.read(&mut buf)?;
            if n == 0 {
                return Ok(if carry.is_empty() {
                    TextEncoding::Utf8
                } else {
                    TextEncoding::Windows1252
                });
            }
            carry.extend_from_slice(&buf[..n]);
        }
    }

    /// Opens the input normalized to UTF-8 with `\n` line endings.
    pub fn open_normalized(&self) -> io::Result<(Box<dyn Read + Send>, TextEncoding)> {
        let encoding = self.detect_encoding()?;
        let raw = self.open_raw()?;
        let decoded: Box<dyn Read + Send> = match encoding {
            TextEncoding::Utf8 => raw,
            TextEncoding::Utf8Bom => {
                let mut r = raw;
                let mut bom = [0u8; 3];
                read_full(&mut r, &mut bom)?;
                r
            }
            TextEncoding::Utf16Le => Box::new(Transcode::new(raw, UTF_16LE)),
            TextEncoding::Utf16Be => Box::new(Transcode::new(raw, UTF_16BE)),
            TextEncoding::Windows1252 => Box::new(Transcode::new(raw, WINDOWS_1252)),
        };
        Ok((Box::new(LineEndings::new(decoded)), encoding))
    }

    /// The first `max` bytes of the normalized input (for sniffing).
    pub fn head(&self, max: usize) -> io::Result<Vec<u8>> {
        let (mut r, _) = self.open_normalized()?;
        let mut buf = vec![0u8; max];
        let n = read_full(&mut r, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// UTF-16 without a BOM shows as a NUL in every other byte of ASCII text.
fn sniff_bomless_utf16(head: &[u8]) -> Option<TextEncoding> {
    if head.len() < 16 {
        return None;
    }
    let pairs = head.len() / 2;
    let even_nul = head
        .chunks_exact(2)
        .filter(|c| c[0] == 0 && c[1] != 0)
        .count();
    let odd_nul = head
        .chunks_exact(2)
        .filter(|c| c[1] == 0 && c[0] != 0)
        .count();
    if odd_nul * 10 >= pairs * 9 {
        Some(TextEncoding::Utf16Le)
    } else if even_nul * 10 >= pairs * 9 {
        Some(TextEncoding::Utf16Be)
    } else {
        None
    }
}

/// Streams bytes in a legacy encoding out as UTF-8.
struct Transcode<R> {
    inner: R,
    decoder: Decoder,
    src: Vec<u8>,
    src_start: usize,
    src_end: usize,
    out: Vec<u8>,
    out_start: usize,
    eof: bool,
    finished: bool,
}

impl<R: Read> Transcode<R> {
    fn new(inner: R, encoding: &'static Encoding) -> Self {
        Self {
            inner,
            // The BOM, if any, is removed by the decoder.
            decoder: encoding.new_decoder_with_bom_removal(),
            src: vec![0; 64 * 1024],
            src_start: 0,
            src_end: 0,
            out: Vec::with_capacity(200 * 1024),
            out_start: 0,
            eof: false,
            finished: false,
        }
    }
}

impl<R: Read> Read for Transcode<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.out_start < self.out.len() {
                let n = buf.len().min(self.out.len() - self.out_start);
                buf[..n].copy_from_slice(&self.out[self.out_start..self.out_start + n]);
                self.out_start += n;
                return Ok(n);
            }
            if self.finished {
                return Ok(0);
            }
            if self.src_start == self.src_end && !self.eof {
                let n = self.inner.read(&mut self.src)?;
                self.src_start = 0;
                self.src_end = n;
                self.eof = n == 0;
            }
            self.out.clear();
            self.out_start = 0;
            let cap = self
                .decoder
                .max_utf8_buffer_length(self.src_end - self.src_start)
                .unwrap_or(256 * 1024)
                .max(16);
            self.out.resize(cap, 0);
            let (_, read, written, _) = self.decoder.decode_to_utf8(
                &self.src[self.src_start..self.src_end],
                &mut self.out,
                self.eof,
            );
            self.src_start += read;
            self.out.truncate(written);
            if self.eof && self.src_start == self.src_end {
                self.finished = true;
            }
        }
    }
}

/// Turns `\r\n` and lone `\r` into `\n`.
struct LineEndings<R> {
    inner: R,
    /// The previous chunk ended with `\r` (already emitted as `\n`).
    after_cr: bool,
}

impl<R: Read> LineEndings<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            after_cr: false,
        }
    }
}

impl<R: Read> Read for LineEndings<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.inner.read(buf)?;
            if n == 0 {
                return Ok(0);
            }
            // Fast path: nearly every input has no `\r` at all.
            let start = if self.after_cr && buf[0] == b'\n' {
                Some(0)
            } else {
                memchr::memchr(b'\r', &buf[..n])
            };
            let Some(start) = start else {
                self.after_cr = false;
                return Ok(n);
            };
            let mut w = start;
            for r in start..n {
                let b = buf[r];
                if b == b'\n' && self.after_cr {
                    self.after_cr = false;
                    continue;
                }
                self.after_cr = b == b'\r';
                buf[w] = if b == b'\r' { b'\n' } else { b };
                w += 1;
            }
            if w > 0 {
                return Ok(w);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalized(bytes: &[u8]) -> (String, TextEncoding) {
        let input = Input::from_bytes("t.txt", bytes.to_vec());
        let (mut r, enc) = input.open_normalized().unwrap();
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        (s, enc)
    }

    #[test]
    fn the_encoding_is_found_by_one_read_shared_by_clones() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let opens = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&opens);
        let input = Input::from_opener("a.json", "a.zip!a.json", None, move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(Box::new(io::Cursor::new(b"caf\xe9 \r\n".to_vec())) as Box<dyn Read + Send>)
        });
        let clone = input.clone();
        assert_eq!(input.detect_encoding().unwrap(), TextEncoding::Windows1252);
        assert_eq!(opens.load(Ordering::SeqCst), 1);
        // Sniffing and parsing a clone open the bytes, but read them through
        // for the encoding no more.
        assert_eq!(clone.head(64).unwrap(), "café \n".as_bytes());
        let (mut r, enc) = clone.open_normalized().unwrap();
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!((s.as_str(), enc), ("café \n", TextEncoding::Windows1252));
        assert_eq!(opens.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn utf8_passes_through_and_bom_is_stripped() {
        assert_eq!(
            normalized("héllo\n".as_bytes()),
            ("héllo\n".into(), TextEncoding::Utf8)
        );
        assert_eq!(
            normalized(b"\xEF\xBB\xBF[1]"),
            ("[1]".into(), TextEncoding::Utf8Bom)
        );
    }

    #[test]
    fn utf16_with_and_without_bom_is_transcoded() {
        let text = "{\"a\": \"ünïcode ✓\"}\r\nnext line";
        let mut le = vec![0xFF, 0xFE];
        le.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(
            normalized(&le),
            (
                "{\"a\": \"ünïcode ✓\"}\nnext line".into(),
                TextEncoding::Utf16Le
            )
        );
        let mut be = vec![0xFE, 0xFF];
        be.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        assert_eq!(normalized(&be).1, TextEncoding::Utf16Be);
        let bomless: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(normalized(&bomless).1, TextEncoding::Utf16Le);
    }

    #[test]
    fn invalid_utf8_falls_back_to_windows_1252() {
        // 0x93/0x94 are curly quotes in Windows-1252, invalid alone in UTF-8.
        let (s, enc) = normalized(b"say \x93hi\x94 caf\xe9");
        assert_eq!(enc, TextEncoding::Windows1252);
        assert_eq!(s, "say \u{201c}hi\u{201d} café");
    }

    #[test]
    fn a_multibyte_char_across_the_validation_chunk_is_still_utf8() {
        let mut bytes = vec![b'a'; 4095];
        bytes.extend("é".as_bytes());
        bytes.extend(vec![b'b'; 300 * 1024]);
        assert_eq!(normalized(&bytes).1, TextEncoding::Utf8);
    }

    #[test]
    fn line_endings_become_newlines_even_split_across_reads() {
        assert_eq!(normalized(b"a\r\nb\rc\n\r\n").0, "a\nb\nc\n\n");
        // A `\r\n` split across two reads of the inner reader.
        let mut r = LineEndings::new(Chunks(vec![b"a\r".to_vec(), b"\nb".to_vec()]));
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "a\nb");
    }

    pub(super) struct Chunks(pub Vec<Vec<u8>>);
    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let c = self.0.remove(0);
            buf[..c.len()].copy_from_slice(&c);
            Ok(c.len())
        }
    }
}
