//! The first-party chatmill adapters, built for `wasm32-wasip2` by this
//! crate's build script and embedded as component bytes.

include!(concat!(env!("OUT_DIR"), "/adapters.rs"));

/// One small sample of a first-party format, written for chatmill (not
/// copied from a real export): what `chatmill adapters add` sniffs a new
/// adapter against. Each sample is read by its own adapter (sniff ≥ 70, at
/// least one conversation with one pair) and by no other first-party
/// adapter (sniff < 50). The files are in `host/builtin/samples/`, named
/// `<format>.<ext>`; see the README there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The adapter that reads it: a crate name of [`ADAPTERS`] (its
    /// `describe().id`).
    pub adapter: &'static str,
    /// The format id it is a sample of, as the adapter's `describe()`
    /// declares it.
    pub format: &'static str,
    /// The file name to present with it (to `sniff` and `open`): the name
    /// real exports have, which some adapters weigh.
    pub file_name: &'static str,
    /// The file's bytes (UTF-8, `\n` line endings).
    pub bytes: &'static [u8],
}

macro_rules! sample {
    ($adapter:literal, $format:literal, $file_name:literal, $file:literal) => {
        Sample {
            adapter: $adapter,
            format: $format,
            file_name: $file_name,
            bytes: include_bytes!(concat!("../samples/", $file)),
        }
    };
}

/// One sample of every format the first-party adapters declare (the parity
/// test checks the list against what each adapter's `describe()` says).
pub const SAMPLES: &[Sample] = &[
    sample!(
        "chatgpt",
        "chatgpt-conversations-json",
        "conversations.json",
        "chatgpt-conversations-json.json"
    ),
    sample!(
        "claude",
        "claude-conversations-json",
        "conversations.json",
        "claude-conversations-json.json"
    ),
    sample!(
        "claude",
        "claude-web-conversation",
        "conversation.json",
        "claude-web-conversation.json"
    ),
    sample!(
        "gemini",
        "gemini-takeout-json",
        "MyActivity.json",
        "gemini-takeout-json.json"
    ),
    sample!(
        "gemini",
        "gemini-takeout-html",
        "MyActivity.html",
        "gemini-takeout-html.html"
    ),
    sample!(
        "gemini",
        "gemini-cli-session",
        "session-2026-05-12T09-41-5c1e7a2b.json",
        "gemini-cli-session.json"
    ),
    sample!(
        "claude-code",
        "claude-code-jsonl",
        "2d9f4a61-8c3e-4b07-a5d2-e1f6c0b9a734.jsonl",
        "claude-code-jsonl.jsonl"
    ),
    sample!(
        "api-log",
        "openai-batch",
        "batch_input.jsonl",
        "openai-batch.jsonl"
    ),
    sample!(
        "api-log",
        "chat-completions-log",
        "chat-completions.jsonl",
        "chat-completions-log.jsonl"
    ),
    sample!(
        "api-log",
        "litellm-payload",
        "litellm-payload.json",
        "litellm-payload.json"
    ),
    sample!(
        "api-log",
        "langfuse-ingestion",
        "langfuse-ingestion.json",
        "langfuse-ingestion.json"
    ),
    sample!("api-log", "llm-logs", "llm-logs.json", "llm-logs.json"),
    sample!(
        "markdown",
        "chatmill-raw-log",
        "2026-05-12_session-9b4e.md",
        "chatmill-raw-log.md"
    ),
    sample!(
        "markdown",
        "specstory",
        "2026-04-09_13-27-51Z-date-test-fails-on-mondays.md",
        "specstory.md"
    ),
    sample!(
        "markdown",
        "aider-chat-history",
        ".aider.chat.history.md",
        "aider-chat-history.md"
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_small_text_with_plain_names() {
        for s in SAMPLES {
            assert!(!s.bytes.is_empty(), "{}: empty", s.format);
            assert!(
                s.bytes.len() <= 4096,
                "{}: {} bytes",
                s.format,
                s.bytes.len()
            );
            let text = std::str::from_utf8(s.bytes).unwrap_or_else(|e| panic!("{}: {e}", s.format));
            assert!(!text.contains('\r'), "{}: CR in the sample", s.format);
            assert!(!text.starts_with('\u{feff}'), "{}: BOM", s.format);
            let name = s.file_name;
            assert!(
                !name.is_empty()
                    && name != "."
                    && name != ".."
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
                "{}: file name {name:?} is not plain",
                s.format
            );
        }
    }

    #[test]
    fn every_adapter_is_an_embedded_component() {
        assert!(!ADAPTERS.is_empty());
        for (name, wasm) in ADAPTERS {
            // The component-model layer header, not a core module's.
            assert_eq!(&wasm[..8], b"\0asm\x0d\0\x01\0", "{name}");
            assert!(
                SAMPLES.iter().any(|s| s.adapter == *name),
                "{name}: no sample in samples/"
            );
        }
        for s in SAMPLES {
            assert!(
                ADAPTERS.iter().any(|(name, _)| *name == s.adapter),
                "{}: sample of an adapter that is not embedded",
                s.format
            );
        }
    }
}
