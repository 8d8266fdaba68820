//! Documents tokenized ahead, on the threads that made them.
//!
//! Tokenizing (Porter over unicode61) is a third of what the keyword index
//! costs the one thread that writes the store, and it depends on nothing
//! but the text. So the worker threads of an import tokenize each document
//! with SQLite's own tokenizer, each on a private in-memory connection, and
//! keep the tokens here, by text. The writing connection's `porter`
//! tokenizer is a thin one of ours in front of SQLite's (FTS5 finds the
//! newest tokenizer of a name first): for a document it finds here, byte
//! for byte the same, it hands FTS5 the tokens made ahead; for anything
//! else (queries, documents nobody prepared) it runs SQLite's. The index
//! on disk is the same either way, and other connections (readers, the
//! `sqlite3` shell) need nothing of ours.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::{Connection, ffi};

use crate::bm25::fts5_api;

/// The tokenizer the keyword table names, and the arguments it is made
/// with (`fts_table!`'s `tokenize`). A table made with others is tokenized
/// by SQLite alone; the tests see every prepared document taken, so the
/// two cannot drift apart unnoticed.
const NAME: &CStr = c"porter";
const ARGS: [&CStr; 3] = [c"unicode61", c"remove_diacritics", c"2"];

/// Documents kept at most; past it the store forgets them all (documents
/// prepared and never written, e.g. of a conversation that failed, must
/// not pile up). An import has a few batches in flight.
const KEPT: usize = 8192;

/// One token as the tokenizer gave it: its flags, where its bytes end in
/// [`Tokens::bytes`], and where it came from in the text.
#[derive(Clone, Copy)]
struct Token {
    flags: c_int,
    end: u32,
    start: c_int,
    stop: c_int,
}

/// One document's tokens, and the document (to be sure it is the one).
struct Tokens {
    text: Box<[u8]>,
    bytes: Vec<u8>,
    tokens: Vec<Token>,
}

/// The documents prepared whose texts have one hash, each with the writes
/// it waits for (the same text in two chunks: two).
type Same = Vec<(Arc<Tokens>, u32)>;

/// Prepared documents by their text's hash.
#[derive(Default)]
pub(crate) struct Ahead {
    docs: Mutex<HashMap<u64, Same>>,
}

fn hash(text: &[u8]) -> u64 {
    foldhash::fast::FixedState::with_seed(0).hash_one(text)
}

impl Ahead {
    /// Tokenizes `docs` on this thread and keeps their tokens for the
    /// writing connection. A document the tokenizer fails on is left to it.
    pub(crate) fn prepare(&self, docs: &[&str]) {
        let made: Vec<(u64, Tokens)> = LOCAL.with(|local| {
            let mut local = local.borrow_mut();
            if local.is_none() {
                *local = Local::new()
                    .inspect_err(|e| tracing::debug!("no tokenizing ahead: {e}"))
                    .ok();
            }
            let Some(local) = local.as_mut() else {
                return Vec::new();
            };
            // An empty document is never looked up (FTS5 has nothing to
            // tokenize), so it is not kept.
            docs.iter()
                .filter(|d| !d.is_empty())
                .filter_map(|d| local.tokenize(d.as_bytes()).map(|t| (hash(&t.text), t)))
                .collect()
        });
        let mut kept = self.docs.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() + made.len() > KEPT {
            kept.clear();
        }
        for (h, t) in made {
            let same = kept.entry(h).or_default();
            match same.iter_mut().find(|(k, _)| k.text == t.text) {
                Some((_, uses)) => *uses += 1,
                None => same.push((Arc::new(t), 1)),
            }
        }
    }

    /// The tokens prepared for `text`, now taken. Nothing prepared (the
    /// workers prepare nothing, or this is not an import): no hashing.
    fn take(&self, text: &[u8]) -> Option<Arc<Tokens>> {
        let mut kept = self.docs.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.is_empty() {
            return None;
        }
        let h = hash(text);
        let same = kept.get_mut(&h)?;
        let at = same.iter().position(|(k, _)| *k.text == *text)?;
        let tokens = Arc::clone(&same[at].0);
        same[at].1 -= 1;
        if same[at].1 == 0 {
            same.swap_remove(at);
            if same.is_empty() {
                kept.remove(&h);
            }
        }
        Some(tokens)
    }

    /// Documents prepared and not yet written.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let kept = self.docs.lock().unwrap_or_else(PoisonError::into_inner);
        kept.values()
            .map(|s| s.iter().map(|e| e.1 as usize).sum::<usize>())
            .sum()
    }
}

/// SQLite's tokenizer, found on `conn` by [`NAME`]: its functions and the
/// context they are created with.
#[derive(Clone, Copy)]
struct Builtin {
    functions: ffi::fts5_tokenizer,
    context: *mut c_void,
}

impl Builtin {
    fn find(conn: &Connection) -> rusqlite::Result<Self> {
        let api = fts5_api(conn)?;
        let mut functions = ffi::fts5_tokenizer {
            xCreate: None,
            xDelete: None,
            xTokenize: None,
        };
        let mut context = std::ptr::null_mut();
        // SAFETY: `api` is the live fts5_api of `conn`; the out-pointers are
        // valid locals.
        let rc = unsafe {
            match (*api).xFindTokenizer {
                Some(find) => find(api, NAME.as_ptr(), &raw mut context, &raw mut functions),
                None => ffi::SQLITE_MISUSE,
            }
        };
        if rc != ffi::SQLITE_OK || functions.xTokenize.is_none() {
            return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None));
        }
        Ok(Self { functions, context })
    }

    /// An instance made with `args`.
    ///
    /// # Safety
    /// `args` points at `n` NUL-terminated strings; the connection this
    /// tokenizer was found on is open.
    unsafe fn create(
        &self,
        args: *mut *const c_char,
        n: c_int,
    ) -> Result<*mut ffi::Fts5Tokenizer, c_int> {
        let Some(create) = self.functions.xCreate else {
            return Err(ffi::SQLITE_MISUSE);
        };
        let mut out = std::ptr::null_mut();
        // SAFETY: per this function's contract.
        let rc = unsafe { create(self.context, args, n, &raw mut out) };
        if rc == ffi::SQLITE_OK {
            Ok(out)
        } else {
            Err(rc)
        }
    }

    /// # Safety
    /// `instance` came from [`Builtin::create`] and is not used again.
    unsafe fn delete(&self, instance: *mut ffi::Fts5Tokenizer) {
        if let Some(delete) = self.functions.xDelete {
            // SAFETY: per this function's contract.
            unsafe { delete(instance) };
        }
    }
}

type TokenCallback =
    unsafe extern "C" fn(*mut c_void, c_int, *const c_char, c_int, c_int, c_int) -> c_int;

/// A worker thread's own tokenizer: an in-memory connection and SQLite's
/// tokenizer made on it with [`ARGS`].
struct Local {
    builtin: Builtin,
    instance: *mut ffi::Fts5Tokenizer,
    // Dropped after the instance (see `Drop`).
    _conn: Connection,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

impl Local {
    fn new() -> rusqlite::Result<Self> {
        let conn = Connection::open_in_memory()?;
        let builtin = Builtin::find(&conn)?;
        let mut args: Vec<*const c_char> = ARGS.iter().map(|a| a.as_ptr()).collect();
        // SAFETY: `args` are NUL-terminated literals; `conn` is open.
        let instance = unsafe { builtin.create(args.as_mut_ptr(), args.len() as c_int) }
            .map_err(|rc| rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None))?;
        Ok(Self {
            builtin,
            instance,
            _conn: conn,
        })
    }

    /// `text`'s tokens, or `None` if the tokenizer failed.
    fn tokenize(&mut self, text: &[u8]) -> Option<Tokens> {
        let n = c_int::try_from(text.len()).ok()?;
        let mut out = Tokens {
            text: text.into(),
            bytes: Vec::with_capacity(text.len()),
            tokens: Vec::with_capacity(text.len() / 5),
        };
        let tokenize = self.builtin.functions.xTokenize?;
        // SAFETY: `instance` is live; `out` outlives the call, and `keep`
        // reads it as the `Tokens` it is; the text pointer and length agree.
        let rc = unsafe {
            tokenize(
                self.instance,
                (&raw mut out).cast::<c_void>(),
                ffi::FTS5_TOKENIZE_DOCUMENT,
                text.as_ptr().cast::<c_char>(),
                n,
                Some(keep as TokenCallback),
            )
        };
        (rc == ffi::SQLITE_OK).then_some(out)
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        // SAFETY: made by `builtin.create`, not used after this.
        unsafe { self.builtin.delete(self.instance) };
    }
}

/// Keeps one token (the callback [`Local::tokenize`] hands SQLite).
unsafe extern "C" fn keep(
    ctx: *mut c_void,
    flags: c_int,
    token: *const c_char,
    n: c_int,
    start: c_int,
    stop: c_int,
) -> c_int {
    // SAFETY: `ctx` is the `Tokens` `tokenize` passed; `token` holds `n`
    // bytes for the length of this call.
    let (out, token) = unsafe {
        (
            &mut *ctx.cast::<Tokens>(),
            std::slice::from_raw_parts(token.cast::<u8>(), n.max(0) as usize),
        )
    };
    out.bytes.extend_from_slice(token);
    let Ok(end) = u32::try_from(out.bytes.len()) else {
        return ffi::SQLITE_TOOBIG;
    };
    out.tokens.push(Token {
        flags,
        end,
        start,
        stop,
    });
    ffi::SQLITE_OK
}

/// What the writing connection's tokenizer module holds: SQLite's own, and
/// the documents prepared for it.
struct Module {
    builtin: Builtin,
    ahead: Arc<Ahead>,
}

/// One instance of the writing connection's tokenizer: SQLite's made with
/// the same arguments, and whether they are [`ARGS`] (only then do the
/// prepared tokens fit).
struct Instance {
    module: *const Module,
    real: *mut ffi::Fts5Tokenizer,
    fits: bool,
}

/// Puts our tokenizer in front of SQLite's [`NAME`] on `conn` (the
/// connection that writes the store), taking documents from `ahead`.
pub(crate) fn register(conn: &Connection, ahead: Arc<Ahead>) -> rusqlite::Result<()> {
    let builtin = Builtin::find(conn)?;
    let api = fts5_api(conn)?;
    let module = Box::into_raw(Box::new(Module { builtin, ahead })).cast::<c_void>();
    let mut functions = ffi::fts5_tokenizer {
        xCreate: Some(create),
        xDelete: Some(delete),
        xTokenize: Some(tokenize),
    };
    // SAFETY: `api` is the live fts5_api of `conn`; FTS5 copies
    // `functions` and owns `module` from here, dropping it with
    // `drop_module` when the connection closes.
    let rc = unsafe {
        match (*api).xCreateTokenizer {
            Some(add) => add(
                api,
                NAME.as_ptr(),
                module,
                &raw mut functions,
                Some(drop_module),
            ),
            None => ffi::SQLITE_MISUSE,
        }
    };
    if rc != ffi::SQLITE_OK {
        // SAFETY: FTS5 did not take `module`.
        unsafe { drop_module(module) };
        return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None));
    }
    Ok(())
}

unsafe extern "C" fn drop_module(p: *mut c_void) {
    // SAFETY: `p` is the `Box<Module>` `register` leaked, dropped once.
    drop(unsafe { Box::from_raw(p.cast::<Module>()) });
}

unsafe extern "C" fn create(
    module: *mut c_void,
    args: *mut *const c_char,
    n: c_int,
    out: *mut *mut ffi::Fts5Tokenizer,
) -> c_int {
    // SAFETY: FTS5 passes the module `register` gave it, live until
    // `drop_module`; `args` holds `n` NUL-terminated strings.
    let m = unsafe { &*module.cast::<Module>() };
    let real = match unsafe { m.builtin.create(args, n) } {
        Ok(real) => real,
        Err(rc) => return rc,
    };
    let given: Vec<&CStr> = (0..n.max(0) as usize)
        // SAFETY: as above.
        .map(|i| unsafe { CStr::from_ptr(*args.add(i)) })
        .collect();
    let instance = Instance {
        module: module.cast::<Module>(),
        real,
        fits: given == ARGS,
    };
    // SAFETY: `out` is FTS5's out-pointer.
    unsafe { *out = Box::into_raw(Box::new(instance)).cast::<ffi::Fts5Tokenizer>() };
    ffi::SQLITE_OK
}

unsafe extern "C" fn delete(p: *mut ffi::Fts5Tokenizer) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` is a `Box<Instance>` from `create`, dropped once; its
    // module outlives it.
    let instance = unsafe { Box::from_raw(p.cast::<Instance>()) };
    unsafe { (*instance.module).builtin.delete(instance.real) };
}

unsafe extern "C" fn tokenize(
    p: *mut ffi::Fts5Tokenizer,
    ctx: *mut c_void,
    flags: c_int,
    text: *const c_char,
    n: c_int,
    token: Option<TokenCallback>,
) -> c_int {
    // SAFETY: `p` is an `Instance` from `create`; its module is live.
    let instance = unsafe { &*p.cast::<Instance>() };
    let module = unsafe { &*instance.module };
    if instance.fits
        && flags == ffi::FTS5_TOKENIZE_DOCUMENT
        && n > 0
        && let Some(emit) = token
        // SAFETY: `text` holds `n` bytes for this call.
        && let Some(tokens) = module
            .ahead
            .take(unsafe { std::slice::from_raw_parts(text.cast::<u8>(), n as usize) })
    {
        return replay(&tokens, ctx, emit);
    }
    match module.builtin.functions.xTokenize {
        // SAFETY: FTS5's own arguments, handed on.
        Some(real) => unsafe { real(instance.real, ctx, flags, text, n, token) },
        None => ffi::SQLITE_MISUSE,
    }
}

/// Hands FTS5 the tokens made ahead, as SQLite's tokenizer would have.
fn replay(tokens: &Tokens, ctx: *mut c_void, emit: TokenCallback) -> c_int {
    let mut from = 0usize;
    for t in &tokens.tokens {
        let bytes = &tokens.bytes[from..t.end as usize];
        from = t.end as usize;
        // SAFETY: FTS5's callback and context for this call; `bytes` lives
        // through it.
        let rc = unsafe {
            emit(
                ctx,
                t.flags,
                bytes.as_ptr().cast::<c_char>(),
                bytes.len() as c_int,
                t.start,
                t.stop,
            )
        };
        if rc != ffi::SQLITE_OK {
            // SQLite's tokenizers end early on SQLITE_DONE and succeed.
            return if rc == ffi::SQLITE_DONE {
                ffi::SQLITE_OK
            } else {
                rc
            };
        }
    }
    ffi::SQLITE_OK
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use crate::embedded::SqliteStore;
    use crate::embedded::tests::rec;
    use crate::{ChunkRecord, Filter, Store};

    /// Every token of the keyword index of the store at `path`, with its
    /// document and position, read on a plain connection (nothing of ours
    /// registered).
    fn instances(path: &std::path::Path) -> Vec<(String, i64, i64)> {
        let conn = Connection::open(crate::embedded::keyword_file::path_for(path)).unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, instance);",
        )
        .unwrap();
        let mut stmt = conn
            .prepare("SELECT term, doc, offset FROM temp.v ORDER BY 1, 2, 3")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn write(store: &SqliteStore, records: &[ChunkRecord]) {
        let vectors = vec![vec![1.0, 0.0]; records.len()];
        store.upsert(records, &vectors, "m").unwrap();
    }

    #[test]
    fn documents_tokenized_ahead_make_the_index_sqlite_makes() {
        let dir = tempfile::tempdir().unwrap();
        let texts = [
            "She painted the fence; painting fences is what she does.",
            "Crème brûlée at the CAFÉ, naïve façade — Ångström über alles",
            "東京で寿司を食べた 🍣 and then ramen",
            "x = f(y_2) + 3.14e-2; // snake_case and CamelCase",
            "She painted the fence; painting fences is what she does.",
            "",
        ];
        let records: Vec<ChunkRecord> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| rec(&format!("c{i}"), i as i64, "local", "a", t))
            .collect();
        let (pa, pb) = (dir.path().join("a.sqlite3"), dir.path().join("b.sqlite3"));
        let (a, b) = (
            SqliteStore::open(&pa).unwrap(),
            SqliteStore::open(&pb).unwrap(),
        );
        let ahead = a
            .ahead
            .as_ref()
            .expect("our tokenizer is in front of SQLite's");
        let docs: Vec<&str> = records.iter().map(|r| r.document.as_str()).collect();
        // On another thread, as an import's workers do.
        std::thread::scope(|s| s.spawn(|| a.prepare_documents(&docs)).join().unwrap());
        assert_eq!(ahead.len(), records.len());
        write(&a, &records);
        write(&b, &records);
        assert_eq!(ahead.len(), 0, "every prepared document was taken");
        let (ia, ib) = (instances(&pa), instances(&pb));
        assert!(ia.iter().any(|t| t.0 == "paint"), "stemmed: {ia:?}");
        assert!(ia.iter().any(|t| t.0 == "creme"), "folded: {ia:?}");
        assert_eq!(ia, ib);
        for q in ["painting", "creme brulee", "ramen", "snake_case"] {
            let f = Filter::default();
            let (ha, hb) = (a.keyword(q, 10, &f).unwrap(), b.keyword(q, 10, &f).unwrap());
            assert!(!ha.is_empty(), "{q}");
            let key = |h: &Vec<crate::Hit>| -> Vec<(String, String)> {
                h.iter()
                    .map(|h| (h.chunk_id.clone(), format!("{:.6}", h.score)))
                    .collect()
            };
            assert_eq!(key(&ha), key(&hb), "{q}");
        }
    }

    #[test]
    fn a_document_other_than_the_one_prepared_is_tokenized_by_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("i.sqlite3")).unwrap();
        let prepared = rec("x", 1, "local", "a", "alpha beta");
        store.prepare_documents(&[prepared.document.as_str()]);
        write(&store, &[rec("x", 1, "local", "a", "alpha gamma")]);
        let f = Filter::default();
        assert_eq!(store.keyword("gamma", 5, &f).unwrap().len(), 1);
        assert!(store.keyword("beta", 5, &f).unwrap().is_empty());
        assert_eq!(store.ahead.as_ref().unwrap().len(), 1, "still waiting");
    }
}
