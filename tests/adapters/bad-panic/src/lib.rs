//! Panics (index out of bounds) in `next`: a trap with the message captured.
use chatmill_adapter_sdk::*;

struct BadPanic;
struct S(Vec<u32>);

impl Session for S {
    fn next_batch(&mut self, max: usize) -> Result<Vec<Item>, ParseError> {
        let i = std::hint::black_box(max + 3);
        let _ = self.0[i];
        Ok(Vec::new())
    }
}

impl Adapter for BadPanic {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "bad-panic".into(),
            name: "Panics".into(),
            version: "0.1.0".into(),
            formats: vec![],
        }
    }
    fn sniff(_head: &[u8], file_name: &str) -> u8 {
        if file_name.ends_with(".panic") {
            100
        } else {
            0
        }
    }
    fn open(_input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Ok(Box::new(S(Vec::new())))
    }
}

export_adapter!(BadPanic);
