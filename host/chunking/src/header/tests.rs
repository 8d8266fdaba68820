//! End-to-end tests of the built-in writer: whole headers from exchanges.

use super::*;

#[test]
fn headers_are_specific_and_two_to_four_sentences() {
    let date = DateTime::parse_from_rfc3339("2025-03-02T09:14:03Z")
        .unwrap()
        .to_utc();
    let prev = Previous {
        topics: vec!["invoice totals".into()],
        request: "The totals are off by one cent.".into(),
    };
    let input = HeaderInput {
        platform: "claude-code",
        title: Some("invoice-tool"),
        date: Some(date),
        user: "Store amounts as integer cents in src/totals.rs and add a test for invoice 1042. Thanks.",
        assistant: "Done: totals are integer cents now; the sums_in_cents test reproduces invoice 1042.",
        turn_range: "2",
        total_pairs: 2,
        previous: Some(&prev),
        ..Default::default()
    };
    let h = ExtractiveWriter.write(&input).unwrap();
    assert!(h.context.starts_with("From a Claude Code conversation titled \"invoice-tool\" on March 2, 2025 (exchange 2 of 2),"), "{}", h.context);
    assert!(h.context.contains("The user asked: \"Store amounts as integer cents in src/totals.rs and add a test for invoice 1042.\""), "{}", h.context);
    assert!(
        h.context
            .contains("(exchange 2 of 2), following an exchange about invoice totals."),
        "{}",
        h.context
    );
    assert!(
        h.context
            .contains("The reply says \"Done: totals are integer cents now; the sums_in_cents test reproduces invoice 1042\""),
        "{}",
        h.context
    );
    let sentences = h.context.matches(". ").count() + 1;
    assert!((2..=4).contains(&sentences), "{}", h.context);
    assert!(
        !h.topics.is_empty() && h.topics.len() <= 3,
        "{:?}",
        h.topics
    );
    assert!(
        h.topics
            .iter()
            .any(|t| t.contains("src/totals.rs") || t.contains("cents")),
        "{:?}",
        h.topics
    );
    assert!(!h.context.to_lowercase().contains("a conversation about ai"));
}

#[test]
fn words_a_batch_repeats_name_no_topic() {
    let prompts = [
        "Describe the scene graph of this dictionary: {'tricycle_1': [1, 2], 'wheel_1': [3, 4]}",
        "Describe the scene graph of this dictionary: {'refrigerator_1': [5, 6]}",
        "Describe the scene graph of this dictionary: {'bucket_1': [7, 8], 'mop_1': [9, 9]}",
        "Something else about a kitchen",
    ];
    let common = common_terms(&prompts);
    assert_eq!(common, ["describe", "dictionary", "graph", "scene"]);
    assert!(common_terms(&prompts[..2]).is_empty(), "too few to tell");
    let input = |common| HeaderInput {
        platform: "api",
        user: prompts[0],
        assistant: "The tricycle has a wheel.",
        turn_range: "1",
        total_pairs: 4,
        common,
        independent: true,
        ..Default::default()
    };
    let alone = ExtractiveWriter.write(&input(&[])).unwrap();
    assert!(
        alone
            .topics
            .iter()
            .any(|t| t.contains("scene") || t.contains("graph")),
        "{:?}",
        alone.topics
    );
    let batch = ExtractiveWriter.write(&input(&common)).unwrap();
    assert!(!batch.topics.is_empty());
    for t in &batch.topics {
        assert!(
            !t.split(' ').any(|w| common.iter().any(|c| c == w)),
            "{:?}",
            batch.topics
        );
    }
    assert!(
        batch.topics.iter().any(|t| t.contains("tricycle_1")),
        "{:?}",
        batch.topics
    );
    // A call of a batch is a request of a file, not an exchange of a
    // conversation.
    assert!(
        batch
            .context
            .starts_with("From an API request (1 of 4 separate requests in one file)."),
        "{}",
        batch.context
    );
}

#[test]
fn the_header_names_what_the_reply_brings_in() {
    let input = HeaderInput {
        platform: "local",
        user: "I'm keen on counseling or working in mental health.",
        assistant: "You'd be great at it! I painted a sunrise over the lake last year; painting the sunrise calms me, and the lake at sunrise is my favourite spot.",
        turn_range: "6",
        total_pairs: 9,
        ..Default::default()
    };
    let h = ExtractiveWriter.write(&input).unwrap();
    assert!(h.context.contains("and brings in"), "{}", h.context);
    assert!(h.context.contains("sunrise"), "{}", h.context);
    // The reply's first sentence says nothing; its gist is the next one.
    assert!(
        h.context
            .contains("The reply says \"I painted a sunrise over the lake last year; painting"),
        "{}",
        h.context
    );
    let sentences = h.context.matches(". ").count() + 1;
    assert!((2..=4).contains(&sentences), "{}", h.context);
}

#[test]
fn tool_output_and_other_languages_function_words_are_not_terms() {
    let header = |user: &str, assistant: &str| {
        ExtractiveWriter
            .write(&HeaderInput {
                platform: "claude-code",
                user,
                assistant,
                turn_range: "1",
                total_pairs: 1,
                ..Default::default()
            })
            .unwrap()
    };
    // What a tool printed is not what the reply brings in; the call
    // itself is, without the renderer's "Tool" marker.
    let h = header(
        "Search the repo for TODO comments",
        "Searching.\n\n[Tool: Bash grep -rn TODO]\n[Tool result: The file /src/app.rs has been updated successfully]\n[Tool result: ^C again to exit]",
    );
    let terms = format!("{} {}", h.context, h.topics.join(" ")).to_lowercase();
    // The same after a fence the text left open.
    let open = header(
        "Search the repo for TODO comments",
        "Searching.\n```\n\n[Tool: Bash grep -rn TODO]\n[Tool result: The file /src/app.rs has been updated successfully]\n[Tool result: ^C again to exit]",
    );
    let terms = format!("{terms} {} {}", open.context, open.topics.join(" ")).to_lowercase();
    for noise in ["tool", "result", "updated", "successfully", "again", "exit"] {
        assert!(
            !terms
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w == noise),
            "{noise}: {} / {}",
            h.context,
            open.context
        );
    }
    assert!(h.context.contains("brings in bash grep"), "{}", h.context);
    // A reply of tool lines alone is about its calls, not about "tool
    // result".
    let edits =
        "[Tool: Edit]\n[Tool result: The file /a has been updated successfully]\n".repeat(4);
    assert_eq!(topics(None, "hi", &edits), ["edit"]);
    // French function words name nothing; the reply's content words do.
    let h = header(
        "hi",
        "Je comprends que vous n'avez pas encore partagé de fichiers que je peux éditer.",
    );
    let brought = h
        .context
        .split_once("brings in ")
        .map_or("", |(_, b)| b.trim_end_matches('.'));
    let words: Vec<&str> = brought
        .split([',', ' '])
        .chain(h.topics.iter().flat_map(|t| t.split(' ')))
        .filter(|w| !w.is_empty() && *w != "and")
        .collect();
    assert!(!words.is_empty(), "{}", h.context);
    for w in ["je", "que", "vous", "avez", "pas", "de", "peux"] {
        assert!(!words.contains(&w), "{w}: {}", h.context);
    }
    // An HTML artifact brings in what its page says, not its tags.
    let html = format!(
        "I'll create an HTML artifact with a pricing calculator.\n\n```html\n{}```\n",
        "<div class=\"calculator\">\n  <div class=\"input-group\">\n    <label>Input tokens</label>\n  </div>\n</div>\n"
            .repeat(3)
    );
    let h = header("Build me a pricing calculator", &html);
    assert!(!h.context.contains("div"), "{}", h.context);
    assert!(!h.context.contains("class"), "{}", h.context);
    assert!(
        !h.topics
            .iter()
            .any(|t| t.contains("div") || t.contains("class")),
        "{:?}",
        h.topics
    );
    // Spanish opening marks split as `?` and `!` do.
    let t = topics(None, "Hola, ¿cómo se configura nginx? ¡Gracias!", "");
    assert_eq!(t, ["configura nginx"]);
}

#[test]
fn the_reply_gist_is_prose_not_a_tool_summary() {
    let mut input = HeaderInput {
        platform: "claude-code",
        user: "Why does the totals test fail on an empty cart?",
        assistant: "[Tool: Read src/totals.rs]\n[Tool result: pub fn total(items: &[Item]) -> u64]\n\nThe total divides by the item count, which is zero for an empty cart.",
        turn_range: "1",
        total_pairs: 1,
        ..Default::default()
    };
    let h = ExtractiveWriter.write(&input).unwrap();
    assert!(
        h.context
            .contains("The reply says \"The total divides by the item count"),
        "{}",
        h.context
    );
    // A reply of tool calls alone is summarized by them.
    input.assistant = "[Tool: Bash cargo test totals]";
    let h = ExtractiveWriter.write(&input).unwrap();
    assert!(
        h.context.contains("[Tool: Bash cargo test totals]"),
        "{}",
        h.context
    );
}

#[test]
fn a_reply_that_names_no_subject_keeps_the_one_it_continues() {
    let previous = Previous {
        topics: vec!["cloud-resume".into(), "specstory-sync".into()],
        request: "Why does cloud-resume skip the sync?".into(),
    };
    let mut input = HeaderInput {
        platform: "claude-code",
        user: "not true",
        turn_range: "9",
        total_pairs: 15,
        previous: Some(&previous),
        ..Default::default()
    };
    let h = ExtractiveWriter.write(&input).unwrap();
    assert_eq!(h.topics, previous.topics);
    // Nothing to continue and a reply that takes nothing up: no topics
    // rather than made-up ones.
    input.previous = None;
    assert!(ExtractiveWriter.write(&input).unwrap().topics.is_empty());
    // Nothing to continue, and a reply that does take something up:
    // that is what the exchange is about, said once.
    input.user = "hi";
    input.assistant = "Hello! Is there a coding task in this git repository you want help with?";
    let h = ExtractiveWriter.write(&input).unwrap();
    assert!(!h.topics.is_empty(), "{}", h.context);
    assert!(
        h.topics.iter().any(|t| t.contains("coding task")),
        "{:?}",
        h.topics
    );
    assert!(h.context.contains("The exchange covers"), "{}", h.context);
    assert!(!h.context.contains("brings in"), "{}", h.context);
    assert_eq!(topics(None, "hi", input.assistant), h.topics);
}

#[test]
fn code_is_not_quoted_as_what_was_said() {
    let mut input = HeaderInput {
        platform: "chatgpt",
        user: "```python\nimport numpy as np\nx = np.zeros(3)\n```\nWhy is the average distance always zero here?",
        assistant: "```python\n# Re-run the simulation\navg = []\n```\n\nThe distance is zero because every point starts at the origin.",
        turn_range: "1",
        total_pairs: 1,
        ..Default::default()
    };
    let context = ExtractiveWriter.write(&input).unwrap().context;
    for said in [
        "The user asked: \"Why is the average distance always zero here?\"",
        "The reply says \"The distance is zero because every point starts at the origin\"",
    ] {
        assert!(context.contains(said), "{context}");
    }
    // A reply of code alone has no sentence to quote; an unclosed fence
    // runs to the end.
    input.assistant = "~~~html\n<div class=\"calc\"><input type=\"number\"></div>";
    let h = ExtractiveWriter.write(&input).unwrap();
    assert!(!h.context.contains("The reply says"), "{}", h.context);
    assert!(!h.context.contains('='), "{}", h.context);
    // A request of code alone is quoted as it is.
    input.user = "```\nls -la /tmp\n```";
    let h = ExtractiveWriter.write(&input).unwrap();
    assert!(h.context.contains("The user asked: \"```"), "{}", h.context);
}
