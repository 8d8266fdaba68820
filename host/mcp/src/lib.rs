//! chatmill's memory as a Model Context Protocol server (`chatmill mcp`):
//! the tools `search`, `recent`, `get_chunk`, `get_conversation`, and
//! `record_turn` when the server may write. The protocol (framing, version
//! negotiation, cancellation) is the official Rust SDK's (`rmcp`); this
//! crate is the handler: [`tools`] says what each tool takes and returns,
//! [`memory`] does it against a root. Tool calls run on tokio's blocking
//! pool (searches and chunk files are blocking work); a cancelled call's
//! answer is dropped.

mod http;
pub mod memory;
pub mod tools;

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};

pub use memory::{Entries, Entry, Memory, MemoryError};

/// Why the server stopped other than by its client closing the connection.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("the MCP session could not start: {0}")]
    Start(String),
    #[error("the MCP session ended with an error: {0}")]
    Session(String),
    #[error("refusing to listen on the non-loopback address {0}")]
    NotLoopback(SocketAddr),
    #[error("MCP over HTTP needs a token (`--token` or CHATMILL_TOKEN)")]
    NoToken,
}

impl McpError {
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Self::NotLoopback(_) => Some("chatmill mcp listens on 127.0.0.1 or ::1 only"),
            Self::NoToken => {
                Some("pass `--token SECRET`; clients send `Authorization: Bearer SECRET`")
            }
            _ => Some(
                "the MCP client closed the session or spoke something else; start `chatmill mcp` from an MCP client",
            ),
        }
    }

    /// A usage error (nothing was served), not a failed session.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::NotLoopback(_) | Self::NoToken)
    }
}

/// The handler: one per server, shared by its sessions.
#[derive(Clone)]
pub struct Server {
    memory: Arc<Memory>,
    tools: Arc<Vec<Tool>>,
    version: String,
}

impl Server {
    pub fn new(memory: Memory, version: &str) -> Self {
        let tools = tools::list(memory.writable());
        Self {
            memory: Arc::new(memory),
            tools: Arc::new(tools),
            version: version.to_owned(),
        }
    }

    /// Serves one client over stdin/stdout until it closes them, on a
    /// runtime of its own.
    pub fn run_stdio(self) -> Result<(), McpError> {
        runtime()?.block_on(self.serve_stdio())
    }

    /// Serves clients over Streamable HTTP at `http://ADDR/mcp` (loopback
    /// only, bearer `token`) until SIGINT or SIGTERM.
    pub fn run_http(self, addr: SocketAddr, token: String) -> Result<(), McpError> {
        runtime()?.block_on(http::serve(self, addr, token))
    }

    /// Serves one client over stdin/stdout until it closes them.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| McpError::Start(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Session(e.to_string()))?;
        Ok(())
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, McpError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| McpError::Start(e.to_string()))
}

const INSTRUCTIONS: &str = "chatmill holds the user's past conversations with AI assistants, \
one exchange per entry. Use `search` to find what was discussed or decided before (by meaning; \
a time phrase such as 'last spring' narrows it), `recent` for the latest exchanges, and \
`get_conversation` to read around an entry. Cite an entry by its platform and date.";

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("chatmill", self.version.clone());
        info.instructions = Some(INSTRUCTIONS.into());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let memory = Arc::clone(&self.memory);
        let name = request.name.into_owned();
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        tracing::debug!("tool call: {name}");
        let result = tokio::task::spawn_blocking(move || tools::call(&memory, &name, args))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))??;
        Ok(result.into())
    }
}
