//! Loops forever in `sniff` (every adapter is asked about every input): the
//! host must stop it, warn once, and leave it out of sniffing for the rest
//! of the run.
use chatmill_adapter_sdk::*;

struct SniffLoop;
struct S;

impl Session for S {
    fn next_batch(&mut self, _max: usize) -> Result<Vec<Item>, ParseError> {
        Ok(Vec::new())
    }
}

impl Adapter for SniffLoop {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "sniff-loop".into(),
            name: "Loops in sniff".into(),
            version: "0.1.0".into(),
            formats: vec![FormatInfo {
                id: "sniff-loop-format".into(),
                description: "Never decides".into(),
                file_patterns: vec![],
            }],
        }
    }
    fn sniff(_head: &[u8], _file_name: &str) -> u8 {
        let mut x: u64 = 0;
        loop {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }
    fn open(_input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Ok(Box::new(S))
    }
}

export_adapter!(SniffLoop);
