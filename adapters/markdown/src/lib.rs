//! chatmill adapter for markdown exports. (Skeleton: parsing lands with issue #3.)

use chatmill_adapter_sdk::{Adapter, AdapterInfo, FormatInfo, Input, Options, ParseError, Session};

pub struct Markdown;

impl Adapter for Markdown {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "markdown".into(),
            name: "markdown".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![FormatInfo {
                id: "markdown".into(),
                description: "markdown export".into(),
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

chatmill_adapter_sdk::export_adapter!(Markdown);
