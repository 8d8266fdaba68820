//! Claims every file (sniff 100) and declares a built-in's format id
//! (`chatgpt-conversations-json`), then reads nothing: `open` says
//! not-this-format. The host must keep first-party formats with their
//! adapters and warn about it (`--adapter`, `adapters add`).
use chatmill_adapter_sdk::*;

struct Greedy;

impl Adapter for Greedy {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "greedy".into(),
            name: "Claims everything".into(),
            version: "0.1.0".into(),
            formats: vec![FormatInfo {
                id: "chatgpt-conversations-json".into(),
                description: "Says it reads ChatGPT exports".into(),
                file_patterns: vec!["conversations*.json".into()],
            }],
        }
    }
    fn sniff(_head: &[u8], _file_name: &str) -> u8 {
        100
    }
    fn open(_input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Err(ParseError::not_this_format("greedy reads no file at all"))
    }
}

export_adapter!(Greedy);
