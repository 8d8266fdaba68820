//! The protocol's methods: a request line parsed, checked and answered by
//! `auth`, `turn`, `search` or `health`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use chatmill_index::{Indexer, SearchRequest};
use chatmill_pipeline::backfill;
use chatmill_pipeline::inline::Turn;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::protocol::{ErrorObject, PROTOCOL, Request, Response, code};
use crate::shared::Shared;
use crate::token;
use crate::writer::Job;

pub(crate) async fn handle(
    line: &str,
    shared: &Arc<Shared>,
    authed: &mut bool,
) -> Option<Response> {
    let req: Request = match serde_json::from_str::<Value>(line) {
        Err(e) => {
            return Some(Response::err(
                Value::Null,
                ErrorObject::new(code::PARSE_ERROR, format!("not JSON: {e}")),
            ));
        }
        Ok(v) => match serde_json::from_value(v) {
            Ok(r) => r,
            Err(e) => {
                return Some(Response::err(
                    Value::Null,
                    ErrorObject::new(code::INVALID_REQUEST, format!("not a request: {e}"))
                        .with_hint(r#"send {"jsonrpc":"2.0","id":1,"method":"health"}"#),
                ));
            }
        },
    };
    let id = req.id.clone();
    if req.jsonrpc.as_deref().is_some_and(|v| v != "2.0") {
        return id.map(|id| {
            Response::err(
                id,
                ErrorObject::new(code::INVALID_REQUEST, "`jsonrpc` must be \"2.0\""),
            )
        });
    }
    let result = dispatch(&req, shared, authed).await;
    let id = id?; // A notification gets no answer.
    Some(match result {
        Ok(v) => Response::ok(id, v),
        Err(e) => Response::err(id, e),
    })
}

fn params<T: serde::de::DeserializeOwned>(p: &Value) -> Result<T, ErrorObject> {
    serde_json::from_value(p.clone())
        .map_err(|e| ErrorObject::new(code::INVALID_PARAMS, format!("invalid params: {e}")))
}

/// Answers `req`: `auth` at any time, the other methods once `authed`.
async fn dispatch(
    req: &Request,
    shared: &Arc<Shared>,
    authed: &mut bool,
) -> Result<Value, ErrorObject> {
    if req.method == "auth" {
        return auth(&req.params, shared, authed);
    }
    if !*authed {
        return Err(ErrorObject::new(code::UNAUTHORIZED, "authenticate first")
            .with_hint(r#"send {"method":"auth","params":{"token":"…"}} first on TCP"#));
    }
    match req.method.as_str() {
        "turn" => turn(&req.params, shared).await,
        "search" => search(&req.params, shared).await,
        "health" => health(shared).await,
        other => Err(
            ErrorObject::new(code::METHOD_NOT_FOUND, format!("unknown method `{other}`"))
                .with_hint("methods: turn, search, health, auth"),
        ),
    }
}

/// `auth`: the connection is authenticated once it gives the server's
/// token (compared in constant time); a server without one takes any.
fn auth(p: &Value, shared: &Shared, authed: &mut bool) -> Result<Value, ErrorObject> {
    #[derive(serde::Deserialize)]
    struct Auth {
        token: String,
    }
    let a: Auth = params(p)?;
    match &shared.token {
        Some(t) if token::constant_time_eq(a.token.as_bytes(), t.as_bytes()) => {
            *authed = true;
            Ok(json!({ "ok": true }))
        }
        Some(_) => Err(ErrorObject::new(code::UNAUTHORIZED, "wrong token")),
        None => Ok(json!({ "ok": true })),
    }
}

/// `turn`: the exchange goes to the writer thread, and its ack comes back
/// once it is logged, chunked and indexed.
async fn turn(p: &Value, shared: &Shared) -> Result<Value, ErrorObject> {
    if shared.shutting_down.load(Ordering::SeqCst) {
        return Err(
            ErrorObject::new(code::SHUTTING_DOWN, "the server is stopping")
                .with_hint("send the turn again once the server is back; turns are idempotent"),
        );
    }
    let turn: Turn = params(p)?;
    let (tx, rx) = oneshot::channel();
    shared
        .writer
        .send(Job::Turn(Box::new(turn), tx))
        .map_err(|_| ErrorObject::new(code::SHUTTING_DOWN, "the writer has stopped"))?;
    let ack = rx
        .await
        .map_err(|_| ErrorObject::new(code::INTERNAL, "the writer dropped the turn"))?;
    match ack {
        Ok(ack) => {
            shared.turns.fetch_add(1, Ordering::Relaxed);
            Ok(serde_json::to_value(ack).unwrap_or(Value::Null))
        }
        Err(e) if e.is_client_error() => Err(ErrorObject::new(code::INVALID_PARAMS, e.to_string())),
        Err(e) if e.is_busy() => Err(ErrorObject::new(code::BUSY, e.to_string())
            .with_hint("an import holds the root; send the turn again")),
        Err(e) => Err(ErrorObject::new(code::INTERNAL, e.to_string())),
    }
}

/// `search`: the index searched on the blocking pool.
async fn search(p: &Value, shared: &Shared) -> Result<Value, ErrorObject> {
    let req: SearchRequest = params(p)?;
    let Some(index) = shared.index.clone() else {
        return Err(ErrorObject::new(code::INTERNAL, "this server has no index"));
    };
    let redactor = shared.redactor.clone();
    let results = tokio::task::spawn_blocking(move || {
        let mut found = index.search(&req)?;
        if let Some(r) = &redactor {
            for h in &mut found.hits {
                chatmill_pipeline::redaction::hit(r, h);
            }
        }
        Ok::<_, chatmill_index::IndexError>(found)
    })
    .await
    .map_err(|e| ErrorObject::new(code::INTERNAL, e.to_string()))?;
    match results {
        Ok(r) => Ok(serde_json::to_value(r).unwrap_or(Value::Null)),
        Err(e) => {
            let mut err = ErrorObject::new(code::INTERNAL, e.to_string());
            if let Some(h) = e.hint() {
                err = err.with_hint(h);
            }
            Err(err)
        }
    }
}

/// `health`: what the server runs with and has done, gathered on the
/// blocking pool (the index count and the backfill queue read files).
async fn health(shared: &Arc<Shared>) -> Result<Value, ErrorObject> {
    let shared = Arc::clone(shared);
    tokio::task::spawn_blocking(move || health_report(&shared))
        .await
        .map_err(|e| ErrorObject::new(code::INTERNAL, e.to_string()))
}

fn health_report(shared: &Shared) -> Value {
    let index = shared.index.as_ref().map(|i| {
        json!({
            "store": i.store.name(),
            "embedder": i.embedder.id(),
            "fallback_embedder": i.embedder.is_fallback(),
            "chunks": i.count().ok(),
        })
    });
    let queue = backfill::Queue::load(&shared.root).map(|q| q.len()).ok();
    json!({
        "version": shared.version,
        "protocol": PROTOCOL,
        "root": shared.root,
        "adapters": shared.adapters,
        "index": index,
        "backfill": { "enabled": shared.backfill_enabled, "queued": queue },
        "turns_served": shared.turns.load(Ordering::Relaxed),
        "connections": shared.connections.load(Ordering::Relaxed),
    })
}
