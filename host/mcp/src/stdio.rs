//! `chatmill mcp`: the handler over stdin/stdout, for clients that launch
//! the server themselves.

use rmcp::ServiceExt;

use crate::error::McpError;
use crate::server::{Server, runtime};

impl Server {
    /// Serves one client over stdin/stdout until it closes them, on a
    /// runtime of its own.
    pub fn run_stdio(self) -> Result<(), McpError> {
        runtime()?.block_on(self.serve_stdio())
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
