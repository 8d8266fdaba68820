//! chatmill adapter for chatgpt exports. (Skeleton: parsing lands with issue #3.)

use chatmill_adapter_sdk::{Adapter, AdapterInfo, FormatInfo, Input, Options, ParseError, Session};

pub struct ChatGpt;

impl Adapter for ChatGpt {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "chatgpt".into(),
            name: "chatgpt".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![FormatInfo {
                id: "chatgpt".into(),
                description: "chatgpt export".into(),
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

chatmill_adapter_sdk::export_adapter!(ChatGpt);
