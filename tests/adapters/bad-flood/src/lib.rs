//! Floods the host: a 100 MB string (`.flood`) or 200,000 items in one
//! batch (`.items`). Contained by the per-batch limits.
use chatmill_adapter_sdk::*;

struct BadFlood;
struct S {
    items: bool,
}

fn pair(text: String) -> Item {
    Item::Pair(TurnPair {
        index: 1,
        user: vec![Part::Text(text)],
        ..TurnPair::default()
    })
}

impl Session for S {
    fn next_batch(&mut self, _max: usize) -> Result<Vec<Item>, ParseError> {
        let start = Item::ConversationStart(ConversationStart {
            id: "flood".into(),
            platform: "test".into(),
            ..ConversationStart::default()
        });
        if self.items {
            let mut v = vec![start];
            v.extend((0..200_000).map(|_| pair(String::new())));
            Ok(v)
        } else {
            Ok(vec![start, pair("x".repeat(100 << 20))])
        }
    }
}

impl Adapter for BadFlood {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "bad-flood".into(),
            name: "Floods the host".into(),
            version: "0.1.0".into(),
            formats: vec![],
        }
    }
    fn sniff(_head: &[u8], file_name: &str) -> u8 {
        if file_name.ends_with(".flood") || file_name.ends_with(".items") {
            100
        } else {
            0
        }
    }
    fn open(input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        Ok(Box::new(S {
            items: input.name().ends_with(".items"),
        }))
    }
}

export_adapter!(BadFlood);
