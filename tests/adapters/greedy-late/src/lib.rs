//! Claims every file (sniff 100), opens it, and only at the first batch says
//! not-this-format: the host must fall back to the next adapter that claims
//! the file.
use chatmill_adapter_sdk::*;

struct GreedyLate;
struct S;

impl Session for S {
    fn next_batch(&mut self, _max: usize) -> Result<Vec<Item>, ParseError> {
        Err(ParseError::not_this_format(
            "greedy-late found out late that this is not its format",
        ))
    }
}

impl Adapter for GreedyLate {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "greedy-late".into(),
            name: "Claims everything, declines late".into(),
            version: "0.1.0".into(),
            formats: vec![FormatInfo {
                id: "greedy-late-format".into(),
                description: "Anything, until it looks".into(),
                file_patterns: vec![],
            }],
        }
    }
    fn sniff(_head: &[u8], _file_name: &str) -> u8 {
        100
    }
    fn open(_input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Ok(Box::new(S))
    }
}

export_adapter!(GreedyLate);
