//! BM25 for the keyword index with the documents' lengths held in memory.
//!
//! FTS5's own `bm25()` looks up every matching row's length in its
//! `_docsize` table with one SQL statement per row; over 100k chunks that
//! lookup was ~40 % of a keyword search (a two-word query matches ~14k
//! chunks, all scored before the best `k` are kept). `chatmill_bm25()` is
//! the same formula (k1 = 1.2, b = 0.75, FTS5's IDF, its average length)
//! registered as an FTS5 auxiliary function, reading lengths from a
//! [`Lengths`] table the store keeps current; a row it does not know (a
//! write it has not seen yet) is asked of FTS5 as before. Tests require its
//! scores to equal `bm25()`'s.

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;
use rusqlite::ffi;

/// The rank expression that selects this function in a MATCH query
/// (`... AND rank MATCH ?`).
pub(crate) const RANK: &str = "chatmill_bm25()";

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Token counts of the keyword index's documents by rowid (0: unknown), as
/// of the store's `generation`.
#[derive(Clone, Default)]
pub(crate) struct Lengths {
    pub(crate) generation: i64,
    pub(crate) by_rowid: Vec<u32>,
}

impl Lengths {
    /// Every document's length, from FTS5's `_docsize` table.
    pub(crate) fn load(conn: &Connection, generation: i64) -> rusqlite::Result<Self> {
        let mut lengths = Self {
            generation,
            by_rowid: Vec::new(),
        };
        let mut stmt = conn.prepare("SELECT id, sz FROM chunks_fts_docsize")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            if let rusqlite::types::ValueRef::Blob(sz) = r.get_ref(1)? {
                lengths.set(id, sz);
            }
        }
        Ok(lengths)
    }

    /// Records the `_docsize` entry `sz` of `rowid`.
    pub(crate) fn set(&mut self, rowid: i64, sz: &[u8]) {
        let (Ok(i), Some(n)) = (usize::try_from(rowid), varint(sz)) else {
            return;
        };
        // Rowids are dense from 1; a wild one is left to FTS5.
        if i > self.by_rowid.len() + (1 << 20) {
            return;
        }
        if i >= self.by_rowid.len() {
            self.by_rowid.resize(i + 1, 0);
        }
        self.by_rowid[i] = u32::try_from(n).unwrap_or(u32::MAX);
    }

    fn get(&self, rowid: i64) -> Option<u32> {
        let n = *self.by_rowid.get(usize::try_from(rowid).ok()?)?;
        (n > 0).then_some(n)
    }
}

/// The lengths a connection's `chatmill_bm25()` reads; the store swaps in
/// new ones.
pub(crate) type Shared = Arc<Mutex<Arc<Lengths>>>;

/// The first value of a `_docsize` blob: SQLite's varint (big-endian groups
/// of seven bits, the ninth byte whole).
fn varint(b: &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(9) {
        if i == 8 {
            return Some((v << 8) | u64::from(byte));
        }
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Registers `chatmill_bm25()` on `conn`, reading lengths from `lengths`.
pub(crate) fn register(conn: &Connection, lengths: Shared) -> rusqlite::Result<()> {
    let api = fts5_api(conn)?;
    let user = Box::into_raw(Box::new(lengths)).cast::<c_void>();
    // SAFETY: `api` is the live fts5_api of this connection; the name is a
    // NUL-terminated literal; `user` is a leaked `Box<Shared>` that
    // `drop_shared` reclaims when FTS5 drops the function.
    let rc = unsafe {
        match (*api).xCreateFunction {
            Some(create) => create(
                api,
                c"chatmill_bm25".as_ptr(),
                user,
                Some(rank),
                Some(drop_shared),
            ),
            None => ffi::SQLITE_MISUSE,
        }
    };
    if rc != ffi::SQLITE_OK {
        // SAFETY: FTS5 did not take ownership of `user`.
        unsafe { drop_shared(user) };
        return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None));
    }
    Ok(())
}

/// The connection's `fts5_api` (the documented `SELECT fts5(?1)` handshake).
fn fts5_api(conn: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = std::ptr::null_mut();
    let failed = |rc| rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None);
    // SAFETY: the handle is valid for `conn`'s lifetime and used on this
    // thread only; the statement is finalized before returning; the bound
    // pointer outlives the step that writes through it.
    unsafe {
        let db = conn.handle();
        let mut stmt = std::ptr::null_mut();
        let rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &raw mut stmt,
            std::ptr::null_mut(),
        );
        if rc != ffi::SQLITE_OK {
            return Err(failed(rc));
        }
        ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&raw mut api).cast::<c_void>(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        ffi::sqlite3_step(stmt);
        let rc = ffi::sqlite3_finalize(stmt);
        if rc != ffi::SQLITE_OK {
            return Err(failed(rc));
        }
    }
    if api.is_null() {
        return Err(failed(ffi::SQLITE_ERROR));
    }
    Ok(api)
}

unsafe extern "C" fn drop_shared(p: *mut c_void) {
    // SAFETY: `p` came from `Box::into_raw(Box<Shared>)` in `register`.
    drop(unsafe { Box::from_raw(p.cast::<Shared>()) });
}

/// What one query computes once: the lengths it reads, the average length,
/// each phrase's IDF, and a scratch row of frequencies.
struct Query {
    lengths: Arc<Lengths>,
    avgdl: f64,
    idf: Vec<f64>,
    freq: Vec<f64>,
}

unsafe extern "C" fn drop_query(p: *mut c_void) {
    // SAFETY: `p` came from `Box::into_raw(Box<Query>)` in `rank`.
    drop(unsafe { Box::from_raw(p.cast::<Query>()) });
}

unsafe extern "C" fn count_row(
    _api: *const ffi::Fts5ExtensionApi,
    _fts: *mut ffi::Fts5Context,
    user: *mut c_void,
) -> c_int {
    // SAFETY: `user` is the `i64` counter `Query::new` passes.
    unsafe { *user.cast::<i64>() += 1 };
    ffi::SQLITE_OK
}

/// Calls an FTS5 extension-API function pointer (always set by FTS5).
macro_rules! call {
    ($api:expr, $f:ident ( $($arg:expr),* )) => {
        match $api.$f {
            Some(f) => f($($arg),*),
            None => return Err(ffi::SQLITE_MISUSE),
        }
    };
}

impl Query {
    /// # Safety
    /// `api` and `fts` are what FTS5 passed to the running function.
    unsafe fn new(api: &ffi::Fts5ExtensionApi, fts: *mut ffi::Fts5Context) -> Result<Self, c_int> {
        // SAFETY: the caller's contract; out-pointers are locals.
        unsafe {
            let user = call!(api, xUserData(fts)).cast::<Shared>();
            let lengths = Arc::clone(&(*user).lock().unwrap_or_else(PoisonError::into_inner));
            let (mut rows, mut tokens) = (0i64, 0i64);
            ok(call!(api, xRowCount(fts, &raw mut rows)))?;
            ok(call!(api, xColumnTotalSize(fts, -1, &raw mut tokens)))?;
            let avgdl = tokens as f64 / rows as f64;
            let phrases = usize::try_from(call!(api, xPhraseCount(fts))).unwrap_or(0);
            let mut idf = Vec::with_capacity(phrases);
            for p in 0..phrases {
                let mut hits = 0i64;
                ok(call!(
                    api,
                    xQueryPhrase(
                        fts,
                        p as c_int,
                        (&raw mut hits).cast::<c_void>(),
                        Some(count_row)
                    )
                ))?;
                let v = ((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5);
                let v = v.ln();
                idf.push(if v <= 0.0 { 1e-6 } else { v });
            }
            Ok(Self {
                lengths,
                avgdl,
                freq: vec![0.0; phrases],
                idf,
            })
        }
    }

    /// # Safety
    /// As for [`Query::new`].
    unsafe fn score(
        &mut self,
        api: &ffi::Fts5ExtensionApi,
        fts: *mut ffi::Fts5Context,
    ) -> Result<f64, c_int> {
        // SAFETY: the caller's contract; out-pointers are locals.
        unsafe {
            self.freq.fill(0.0);
            let mut n = 0;
            ok(call!(api, xInstCount(fts, &raw mut n)))?;
            for i in 0..n {
                let (mut phrase, mut col, mut off) = (0, 0, 0);
                ok(call!(
                    api,
                    xInst(fts, i, &raw mut phrase, &raw mut col, &raw mut off)
                ))?;
                if let Some(f) = usize::try_from(phrase)
                    .ok()
                    .and_then(|p| self.freq.get_mut(p))
                {
                    *f += 1.0;
                }
            }
            let rowid = call!(api, xRowid(fts));
            let len = match self.lengths.get(rowid) {
                Some(n) => f64::from(n),
                None => {
                    let mut n = 0;
                    ok(call!(api, xColumnSize(fts, -1, &raw mut n)))?;
                    f64::from(n)
                }
            };
            let norm = K1 * (1.0 - B + B * len / self.avgdl);
            Ok(self
                .idf
                .iter()
                .zip(&self.freq)
                .map(|(idf, f)| idf * (f * (K1 + 1.0)) / (f + norm))
                .sum())
        }
    }
}

fn ok(rc: c_int) -> Result<(), c_int> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rc)
    }
}

/// The auxiliary function: `-score`, as `bm25()` (lower ranks first).
unsafe extern "C" fn rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    _n: c_int,
    _values: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 passes a valid API table, context and result context;
    // the auxdata pointer is only ever a `Box<Query>` set here.
    unsafe {
        let api = &*api;
        let result = (|| -> Result<f64, c_int> {
            let mut query = call!(api, xGetAuxdata(fts, 0)).cast::<Query>();
            if query.is_null() {
                let q = Box::into_raw(Box::new(Query::new(api, fts)?));
                ok(call!(
                    api,
                    xSetAuxdata(fts, q.cast::<c_void>(), Some(drop_query))
                ))?;
                query = q;
            }
            (*query).score(api, fts)
        })();
        match result {
            Ok(score) => ffi::sqlite3_result_double(ctx, -score),
            Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_decode_as_sqlite_writes_them() {
        assert_eq!(varint(&[0x05]), Some(5));
        assert_eq!(varint(&[0x81, 0x00]), Some(128));
        assert_eq!(
            varint(&[0x82, 0xac, 0x1f]),
            Some((2 << 14) | (0x2c << 7) | 0x1f)
        );
        assert_eq!(varint(&[0x81]), None);
        assert_eq!(varint(&[]), None);
    }

    #[test]
    fn scores_equal_fts5s_bm25() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE chunks (id INTEGER PRIMARY KEY, document TEXT);
             CREATE VIRTUAL TABLE chunks_fts USING fts5(document, content='chunks', content_rowid='id', tokenize='porter unicode61');",
        )
        .unwrap();
        let docs = [
            "nginx returns 504 on long uploads behind the proxy",
            "the proxy timeout for nginx websockets, nginx again and nginx",
            "sourdough starter smells like acetone after a week",
            "a long and winding note about bread, starter, flour, water, salt, and time spent waiting",
            "kubernetes liveness probe flaps under load",
        ];
        for (i, d) in docs.iter().enumerate() {
            conn.execute(
                "INSERT INTO chunks (id, document) VALUES (?1, ?2)",
                rusqlite::params![i as i64 + 1, d],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO chunks_fts (rowid, document) VALUES (?1, ?2)",
                rusqlite::params![i as i64 + 1, d],
            )
            .unwrap();
        }
        let lengths = Lengths::load(&conn, 0).unwrap();
        // Forget one row: its length comes from FTS5.
        let mut partial = lengths.clone();
        partial.by_rowid[2] = 0;
        for known in [lengths, partial] {
            let shared: Shared = Arc::new(Mutex::new(Arc::new(known)));
            register(&conn, shared).unwrap();
            for q in [
                "nginx",
                "nginx OR proxy",
                "starter OR long OR probe",
                "\"long uploads\"",
            ] {
                let mut st = conn
                    .prepare(
                        "SELECT rowid, bm25(chunks_fts), chatmill_bm25(chunks_fts) FROM chunks_fts
                         WHERE chunks_fts MATCH ?1",
                    )
                    .unwrap();
                let rows: Vec<(i64, f64, f64)> = st
                    .query_map([q], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                assert!(!rows.is_empty(), "{q}");
                for (id, theirs, ours) in rows {
                    assert!(
                        (theirs - ours).abs() <= 1e-12 * theirs.abs().max(1.0),
                        "{q} row {id}: bm25 {theirs}, ours {ours}"
                    );
                }
                // And as the rank of a sorted query.
                let best: i64 = conn
                    .query_row(
                        "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?1 AND rank MATCH ?2 ORDER BY rank LIMIT 1",
                        [q, RANK],
                        |r| r.get(0),
                    )
                    .unwrap();
                let theirs: i64 = conn
                    .query_row(
                        "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?1 ORDER BY rank LIMIT 1",
                        [q],
                        |r| r.get(0),
                    )
                    .unwrap();
                assert_eq!(best, theirs, "{q}");
            }
        }
    }
}
