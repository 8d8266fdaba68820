//! chatmill adapter for api-log exports. (Skeleton: parsing lands with issue #3.)

use chatmill_adapter_sdk::{Adapter, AdapterInfo, FormatInfo, Input, Options, ParseError, Session};

pub struct ApiLog;

impl Adapter for ApiLog {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "api-log".into(),
            name: "api-log".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            formats: vec![FormatInfo {
                id: "api-log".into(),
                description: "api-log export".into(),
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

chatmill_adapter_sdk::export_adapter!(ApiLog);
