//! BM25 for the keyword index with the documents' lengths held in memory.
//!
//! FTS5's own `bm25()` looks up every matching row's length in its
//! `_docsize` table with one SQL statement per row; over 100k chunks that
//! lookup is ~40 % of a keyword search (a two-word query matches ~14k
//! chunks, all scored before the best `k` are kept). `chatmill_bm25()` is
//! the same formula (k1 = 1.2, b = 0.75, FTS5's IDF, its average length)
//! registered as an FTS5 auxiliary function, reading lengths from a
//! [`Lengths`] table the store keeps current; a row it does not know (a
//! write it has not seen yet) is asked of FTS5 (`xColumnSize`). Tests
//! require its scores to equal `bm25()`'s.

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;
use rusqlite::ffi;

/// The rank expression that selects this function in a MATCH query
/// (`... AND rank MATCH ?`).
pub(crate) const RANK: &str = "chatmill_bm25()";

const K1: f64 = 1.2;
pub(crate) const B: f64 = 0.75;

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

/// Registers `chatmill_bm25()` and `chatmill_terms()` on `conn`, reading
/// lengths from `lengths`.
pub(crate) fn register(conn: &Connection, lengths: Shared) -> rusqlite::Result<()> {
    let api = fts5_api(conn)?;
    let functions: [(&std::ffi::CStr, ffi::fts5_extension_function); 2] = [
        (c"chatmill_bm25", Some(rank)),
        (c"chatmill_terms", Some(terms)),
    ];
    for (name, function) in functions {
        let user = Box::into_raw(Box::new(Arc::clone(&lengths))).cast::<c_void>();
        // SAFETY: `api` is the live fts5_api of this connection; the name is
        // a NUL-terminated literal; `user` is a leaked `Box<Shared>` that
        // `drop_shared` reclaims when FTS5 drops the function.
        let rc = unsafe {
            match (*api).xCreateFunction {
                Some(create) => create(api, name.as_ptr(), user, function, Some(drop_shared)),
                None => ffi::SQLITE_MISUSE,
            }
        };
        if rc != ffi::SQLITE_OK {
            // SAFETY: FTS5 did not take ownership of `user`.
            unsafe { drop_shared(user) };
            return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None));
        }
    }
    Ok(())
}

/// The connection's `fts5_api` (the documented `SELECT fts5(?1)` handshake).
pub(crate) fn fts5_api(conn: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
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

    /// Fills `freq` with the current row's count of each phrase and
    /// returns the row's length.
    ///
    /// # Safety
    /// As for [`Query::new`].
    unsafe fn row(
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
            Ok(match self.lengths.get(rowid) {
                Some(n) => f64::from(n),
                None => {
                    let mut n = 0;
                    ok(call!(api, xColumnSize(fts, -1, &raw mut n)))?;
                    f64::from(n)
                }
            })
        }
    }
}

/// BM25 of one row: `idf` and `freq` per phrase (only `kept` ones count),
/// with the length normalization `b` (0: none, 1: full; FTS5's is [`B`]).
pub(crate) fn score(
    b: f64,
    idf: &[f64],
    freq: &[f64],
    kept: impl Fn(usize) -> bool,
    len: f64,
    avgdl: f64,
) -> f64 {
    let norm = K1 * (1.0 - b + b * len / avgdl);
    idf.iter()
        .zip(freq)
        .enumerate()
        .filter(|(p, _)| kept(*p))
        .map(|(_, (idf, f))| idf * (f * (K1 + 1.0)) / (f + norm))
        .sum()
}

/// One row of `chatmill_terms()`: what BM25 needs to score it with any
/// subset of the query's phrases.
#[derive(Debug, PartialEq)]
pub(crate) struct Terms {
    pub(crate) avgdl: f64,
    pub(crate) len: f64,
    /// Per phrase: its IDF over the whole index, its count in this row.
    pub(crate) idf: Vec<f64>,
    pub(crate) freq: Vec<f64>,
}

impl Terms {
    /// Decodes the blob `chatmill_terms()` returns (little-endian f64s:
    /// avgdl, length, then IDF and count per phrase).
    pub(crate) fn decode(blob: &[u8]) -> Option<Self> {
        let mut v = blob
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap_or_default()));
        let (avgdl, len) = (v.next()?, v.next()?);
        let rest: Vec<f64> = v.collect();
        if !rest.len().is_multiple_of(2) {
            return None;
        }
        Some(Self {
            avgdl,
            len,
            idf: rest.iter().step_by(2).copied().collect(),
            freq: rest.iter().skip(1).step_by(2).copied().collect(),
        })
    }
}

fn ok(rc: c_int) -> Result<(), c_int> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rc)
    }
}

/// The query's `Query`, made on its first row.
///
/// # Safety
/// `api` and `fts` are what FTS5 passed to the running function.
unsafe fn query<'a>(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
) -> Result<&'a mut Query, c_int> {
    // SAFETY: the caller's contract; the auxdata pointer is only ever a
    // `Box<Query>` set here, owned by FTS5 until the query ends.
    unsafe {
        let mut query = call!(api, xGetAuxdata(fts, 0)).cast::<Query>();
        if query.is_null() {
            let q = Box::into_raw(Box::new(Query::new(api, fts)?));
            ok(call!(
                api,
                xSetAuxdata(fts, q.cast::<c_void>(), Some(drop_query))
            ))?;
            query = q;
        }
        Ok(&mut *query)
    }
}

/// `chatmill_bm25()`: `-score`, as `bm25()` (lower ranks first).
unsafe extern "C" fn rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    _n: c_int,
    _values: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 passes a valid API table, context and result context.
    unsafe {
        let api = &*api;
        let result = (|| -> Result<f64, c_int> {
            let q = query(api, fts)?;
            let len = q.row(api, fts)?;
            Ok(score(B, &q.idf, &q.freq, |_| true, len, q.avgdl))
        })();
        match result {
            Ok(score) => ffi::sqlite3_result_double(ctx, -score),
            Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
        }
    }
}

/// `chatmill_terms()`: the row's [`Terms`], for a caller that chooses the
/// phrases after seeing which rows have them.
unsafe extern "C" fn terms(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    _n: c_int,
    _values: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 passes a valid API table, context and result context;
    // SQLite copies the blob (SQLITE_TRANSIENT) before `out` is dropped.
    unsafe {
        let api = &*api;
        let result = (|| -> Result<Vec<u8>, c_int> {
            let q = query(api, fts)?;
            let len = q.row(api, fts)?;
            let mut out = Vec::with_capacity(16 + 16 * q.idf.len());
            out.extend_from_slice(&q.avgdl.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
            for (idf, f) in q.idf.iter().zip(&q.freq) {
                out.extend_from_slice(&idf.to_le_bytes());
                out.extend_from_slice(&f.to_le_bytes());
            }
            Ok(out)
        })();
        match result {
            Ok(out) => ffi::sqlite3_result_blob(
                ctx,
                out.as_ptr().cast::<c_void>(),
                c_int::try_from(out.len()).unwrap_or(0),
                ffi::SQLITE_TRANSIENT(),
            ),
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
                        "SELECT rowid, bm25(chunks_fts), chatmill_bm25(chunks_fts), chatmill_terms(chunks_fts)
                         FROM chunks_fts WHERE chunks_fts MATCH ?1",
                    )
                    .unwrap();
                let rows: Vec<(i64, f64, f64, Vec<u8>)> = st
                    .query_map([q], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                assert!(!rows.is_empty(), "{q}");
                for (id, theirs, ours, terms) in rows {
                    let t = Terms::decode(&terms).unwrap();
                    let from_terms = -score(B, &t.idf, &t.freq, |_| true, t.len, t.avgdl);
                    for ours in [ours, from_terms] {
                        assert!(
                            (theirs - ours).abs() <= 1e-12 * theirs.abs().max(1.0),
                            "{q} row {id}: bm25 {theirs}, ours {ours}"
                        );
                    }
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
