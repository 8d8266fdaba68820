//! The key file: created once (random, 0600, atomically), reloaded as the
//! same key, and never overwritten when it holds something else.

use chatmill_redact::{Error, Key};

#[test]
fn a_new_key_file_is_created_private_and_reloads_as_the_same_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("redact.key");
    let first = Key::load_or_create(&path).expect("created");
    let text = std::fs::read_to_string(&path).expect("written");
    assert_eq!(text.len(), 65, "{text:?}");
    assert!(text.ends_with('\n') && text[..64].bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(hex::encode(first.as_bytes()), text[..64]);
    let again = Key::load_or_create(&path).expect("reloaded");
    assert_eq!(first, again);
    // Only the key file is left: the temporary name is gone.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["redact.key"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn two_new_keys_differ() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = Key::load_or_create(&dir.path().join("a")).expect("a");
    let b = Key::load_or_create(&dir.path().join("b")).expect("b");
    assert_ne!(a, b);
    assert_eq!(format!("{a:?}"), "Key(..)", "Debug hides the bytes");
}

#[test]
fn a_file_with_other_contents_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("redact.key");
    std::fs::write(&path, "not a key\n").expect("write");
    let err = Key::load_or_create(&path).expect_err("bad contents");
    assert!(
        matches!(&err, Error::KeyFormat { path: p, .. } if *p == path),
        "{err}"
    );
    assert!(err.to_string().contains(&path.display().to_string()));
    assert_eq!(std::fs::read_to_string(&path).expect("kept"), "not a key\n");
}

#[test]
fn racing_creators_agree_on_one_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("redact.key");
    let keys: Vec<Key> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| s.spawn(|| Key::load_or_create(&path)))
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("no panic").expect("key"))
            .collect()
    });
    assert!(keys.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(keys[0], Key::load_or_create(&path).expect("reload"));
}

#[test]
fn a_key_file_in_a_missing_folder_is_an_io_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("missing").join("redact.key");
    let err = Key::load_or_create(&path).expect_err("no folder");
    assert!(matches!(err, Error::KeyIo { .. }), "{err}");
}
