//! The shared secret a client proves it holds: `chatmill serve`'s `auth`
//! over TCP, and `chatmill mcp --listen`'s bearer header.

/// Whether `given` equals `expected`, in a time that depends on their
/// lengths only, never on where they first differ (a token guessed byte by
/// byte learns nothing from the answer's timing).
pub fn constant_time_eq(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_only_when_every_byte_and_the_length_match() {
        assert!(constant_time_eq(b"s3cret", b"s3cret"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"s3cret", b"s3creT"));
        assert!(!constant_time_eq(b"X3cret", b"s3cret"));
        assert!(!constant_time_eq(b"s3cre", b"s3cret"));
        assert!(!constant_time_eq(b"s3crett", b"s3cret"));
    }
}
