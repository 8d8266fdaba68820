//! Inputs are normalized before an adapter sees them: a UTF-16 (BOM) export
//! with CRLF line endings parses exactly like the UTF-8 original.

use crate::support::*;

#[test]
fn utf16_crlf_exports_parse_like_the_utf8_original() {
    let env = Env::new();
    let original =
        corpus("claude-code/claude-code-viewer-1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl");
    let text = std::fs::read_to_string(&original).unwrap();
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(
        text.replace('\n', "\r\n")
            .encode_utf16()
            .flat_map(u16::to_le_bytes),
    );
    // The same file name: the session id comes from it.
    let copy = env.write(
        "utf16/claude-code-viewer-1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        utf16,
    );

    let a = env.run(&["parse", "--compact", original.to_str().unwrap()]);
    let b = env.run(&["parse", "--compact", copy.to_str().unwrap()]);
    assert_eq!(a.code, 0, "{a:?}");
    assert_eq!(b.code, 0, "{b:?}");
    let (a, b) = (a.json(), b.json());
    assert_eq!(b[0]["encoding"], "utf16-le");
    assert_eq!(a[0]["encoding"], "utf8");
    assert!(
        !a[0]["conversations"][0]["pairs"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(a[0]["conversations"], b[0]["conversations"]);
}
