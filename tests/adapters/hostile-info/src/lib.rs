//! Describes itself with terminal escapes: a name with an ESC sequence and a
//! bidi override, a description with a newline and ESC, and a format id
//! outside the id alphabet. The host must refuse to load it, without
//! printing any of it raw.
use chatmill_adapter_sdk::*;

struct HostileInfo;

impl Adapter for HostileInfo {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "hostile-info".into(),
            name: "Evil\u{1b}[31mRED\u{202e}txt".into(),
            version: "0.1.0".into(),
            formats: vec![FormatInfo {
                id: "Bad Format!".into(),
                description: "line one\nline two\u{1b}[2J".into(),
                file_patterns: vec![],
            }],
        }
    }
    fn sniff(_head: &[u8], _file_name: &str) -> u8 {
        0
    }
    fn open(_input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Err(ParseError::not_this_format("hostile-info reads nothing"))
    }
}

export_adapter!(HostileInfo);
