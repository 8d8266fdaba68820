//! chatmill adapter for claude-code exports. (Skeleton: parsing lands with issue #3.)

use chatmill_adapter_sdk::{Adapter, AdapterInfo, FormatInfo, Input, Options, ParseError, Session};

pub struct ClaudeCode;

impl Adapter for ClaudeCode {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "claude-code".into(),
            name: "claude-code".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![FormatInfo {
                id: "claude-code".into(),
                description: "claude-code export".into(),
                file_patterns: vec![],
            }],
        }
    }

    fn sniff(_head: &[u8], _file_name: &str) -> u8 {
        0
    }

    fn open(_input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Err(ParseError::not_this_format("not implemented yet"))
    }
}

chatmill_adapter_sdk::export_adapter!(ClaudeCode);
