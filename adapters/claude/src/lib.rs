//! chatmill adapter for claude exports. (Skeleton: parsing lands with issue #3.)

use chatmill_adapter_sdk::{Adapter, AdapterInfo, FormatInfo, Input, Options, ParseError, Session};

pub struct Claude;

impl Adapter for Claude {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "claude".into(),
            name: "claude".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![FormatInfo {
                id: "claude".into(),
                description: "claude export".into(),
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

chatmill_adapter_sdk::export_adapter!(Claude);
