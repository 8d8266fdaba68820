//! The MCP handler: the tools it lists and the calls it runs against the
//! memory, one handler per server, shared by its sessions.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};

use crate::error::McpError;
use crate::memory::Memory;
use crate::tools;

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
}

/// The tokio runtime a blocking `run_*` serves on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, McpError> {
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
