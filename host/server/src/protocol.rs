//! The wire protocol (documented in `docs/protocol.md`): JSON-RPC 2.0
//! objects, one per line, over a Unix socket or loopback TCP.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What `health` reports as the protocol.
pub const PROTOCOL: &str = "chatmill-inline/1";

/// Largest request line accepted by default (bytes).
pub const MAX_LINE: usize = 16 << 20;

#[derive(Debug, Deserialize)]
pub struct Request {
    #[serde(default)]
    pub jsonrpc: Option<String>,
    /// Absent for a notification (no answer is sent).
    #[serde(default)]
    pub id: Option<Value>,
    pub method: String,
    #[serde(default)]
    pub params: Value,
}

#[derive(Debug, Serialize)]
pub struct Response {
    pub jsonrpc: &'static str,
    pub id: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// JSON-RPC's codes, and ours (-32000 and below).
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    /// The request line is longer than the server accepts.
    pub const TOO_LARGE: i64 = -32001;
    /// TCP connections must `auth` first.
    pub const UNAUTHORIZED: i64 = -32002;
    /// The server is shutting down.
    pub const SHUTTING_DOWN: i64 = -32003;
    /// The root is busy (another writer held it too long); retry.
    pub const BUSY: i64 = -32004;
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.data = Some(serde_json::json!({ "hint": hint.into() }));
        self
    }
}

impl Response {
    pub fn ok(id: Value, result: Value) -> Self {
        Self {
            jsonrpc: "2.0",
            id,
            result: Some(result),
            error: None,
        }
    }

    pub fn err(id: Value, error: ErrorObject) -> Self {
        Self {
            jsonrpc: "2.0",
            id,
            result: None,
            error: Some(error),
        }
    }

    pub fn line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| {
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"unserializable response"}}"#
                .to_string()
        })
    }
}
