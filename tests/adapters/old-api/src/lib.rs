//! An adapter built for another adapter API version (0.2.0, a WIT copy with
//! only the version changed): the host must refuse it with a clear message.
wit_bindgen::generate!({ path: "wit", world: "adapter" });

use exports::chatmill::adapter::parser::{
    AdapterInfo, Guest, GuestSession, Item, ParseError, Session,
};

struct Old;
struct S;

impl Guest for Old {
    type Session = S;
    fn describe() -> AdapterInfo {
        AdapterInfo {
            id: "old-api".into(),
            name: "Other API".into(),
            version: "0.1.0".into(),
            formats: vec![],
        }
    }
    fn sniff(_head: Vec<u8>, _file_name: String) -> u8 {
        100
    }
}

impl GuestSession for S {
    fn open(
        _input: chatmill::adapter::input::Source,
        _options: Vec<(String, String)>,
    ) -> Result<Session, ParseError> {
        Ok(Session::new(S))
    }
    fn next(&self, _max: u32) -> Result<Vec<Item>, ParseError> {
        Ok(Vec::new())
    }
}

export!(Old);
