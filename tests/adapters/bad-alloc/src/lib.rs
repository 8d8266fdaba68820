//! Allocates without bound: contained by the memory limit.
use chatmill_adapter_sdk::*;

struct BadAlloc;
struct S(Vec<Vec<u8>>);

impl Session for S {
    fn next_batch(&mut self, _max: usize) -> Result<Vec<Item>, ParseError> {
        loop {
            self.0.push(std::hint::black_box(vec![1u8; 1 << 20]));
        }
    }
}

impl Adapter for BadAlloc {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "bad-alloc".into(),
            name: "Allocates forever".into(),
            version: "0.1.0".into(),
            formats: vec![],
        }
    }
    fn sniff(_head: &[u8], file_name: &str) -> u8 {
        if file_name.ends_with(".alloc") {
            100
        } else {
            0
        }
    }
    fn open(_input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Ok(Box::new(S(Vec::new())))
    }
}

export_adapter!(BadAlloc);
