//! Loops forever in `next`: contained by the per-call time limit.
use chatmill_adapter_sdk::*;

struct BadLoop;
struct S;

impl Session for S {
    fn next_batch(&mut self, _max: usize) -> Result<Vec<Item>, ParseError> {
        let mut x: u64 = 0;
        loop {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }
}

impl Adapter for BadLoop {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "bad-loop".into(),
            name: "Loops forever".into(),
            version: "0.1.0".into(),
            formats: vec![],
        }
    }
    fn sniff(_head: &[u8], file_name: &str) -> u8 {
        if file_name.ends_with(".loop") { 100 } else { 0 }
    }
    fn open(_input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Ok(Box::new(S))
    }
}

export_adapter!(BadLoop);
