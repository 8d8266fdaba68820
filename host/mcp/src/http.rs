//! `chatmill mcp --listen 127.0.0.1:PORT`: the same handler over
//! Streamable HTTP at `/mcp`, on loopback only, for clients that do not
//! launch servers. Every request carries `Authorization: Bearer TOKEN`
//! (the serve token); rmcp's service checks `Host` against loopback names,
//! against DNS rebinding.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chatmill_server::token::constant_time_eq;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::error::McpError;
use crate::server::{Server, runtime};

impl Server {
    /// Serves clients over Streamable HTTP at `http://ADDR/mcp` (loopback
    /// only, bearer `token`) until SIGINT or SIGTERM.
    pub fn run_http(self, addr: SocketAddr, token: String) -> Result<(), McpError> {
        runtime()?.block_on(serve(self, addr, token))
    }
}

/// Serves `server` at `http://ADDR/mcp` until SIGINT or SIGTERM.
async fn serve(server: Server, addr: SocketAddr, token: String) -> Result<(), McpError> {
    if !addr.ip().is_loopback() {
        return Err(McpError::NotLoopback(addr));
    }
    if token.is_empty() {
        return Err(McpError::NoToken);
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| McpError::Start(format!("cannot listen on {addr}: {e}")))?;
    let config = StreamableHttpServerConfig::default();
    let stop = config.cancellation_token.clone();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let expected = Arc::new(format!("Bearer {token}"));
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(expected, authorized));
    tracing::info!("MCP over HTTP at http://{addr}/mcp");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            stopped().await;
            stop.cancel();
        })
        .await
        .map_err(|e| McpError::Session(e.to_string()))
}

/// Lets a request through only with the token.
async fn authorized(State(expected): State<Arc<String>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if constant_time_eq(given, expected.as_bytes()) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            "a bearer token is required (`Authorization: Bearer TOKEN`)",
        )
            .into_response()
    }
}

/// SIGINT or SIGTERM.
async fn stopped() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}
