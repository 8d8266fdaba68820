//! Tries to reach the host: a file, a directory listing, the environment and
//! the network. Reports what happened as the text of one pair, so the test
//! can check that every attempt failed inside the sandbox.
use chatmill_adapter_sdk::*;

struct BadFile;

fn attempts() -> String {
    let file = match std::fs::read_to_string("/etc/passwd") {
        Ok(s) => format!("file=READ:{s}"),
        Err(e) => format!("file=denied({:?})", e.kind()),
    };
    let dir = match std::fs::read_dir("/") {
        Ok(rd) => format!("dir=LISTED:{}", rd.count()),
        Err(e) => format!("dir=denied({:?})", e.kind()),
    };
    let env = match std::env::var("HOME") {
        Ok(v) => format!("env=READ:{v}"),
        Err(_) => "env=denied".to_string(),
    };
    let net = match std::net::TcpStream::connect("127.0.0.1:22") {
        Ok(_) => "net=CONNECTED".to_string(),
        Err(e) => format!("net=denied({:?})", e.kind()),
    };
    format!("{file} {dir} {env} {net}")
}

impl Adapter for BadFile {
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "bad-file".into(),
            name: "Reaches for the host".into(),
            version: "0.1.0".into(),
            formats: vec![],
        }
    }
    fn sniff(_head: &[u8], file_name: &str) -> u8 {
        if file_name.ends_with(".file") { 100 } else { 0 }
    }
    fn open(_input: Input, _options: &Options) -> Result<Box<dyn Session>, ParseError> {
        let mut c = Conversation::default();
        c.start.id = "probe".into();
        c.start.platform = "test".into();
        c.pairs.push(TurnPair {
            user: vec![Part::Text("what can you reach?".into())],
            assistant: vec![Part::Text(attempts())],
            ..TurnPair::default()
        });
        Ok(Box::new(Once(Some(c.into_items().collect()))))
    }
}

struct Once(Option<Vec<Item>>);

impl Session for Once {
    fn next_batch(&mut self, _max: usize) -> Result<Vec<Item>, ParseError> {
        Ok(self.0.take().unwrap_or_default())
    }
}

export_adapter!(BadFile);
