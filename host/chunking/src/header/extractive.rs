//! The built-in header writer: the exchange's setting (platform, title,
//! date, place in the conversation, what came before), the user's request
//! in its own words, the topics, and what the reply says and brings in.

use chrono::{DateTime, Utc};

use super::terms::{Terms, join_topics, keys};
use super::text::{
    REPLY_CHARS, is_stopword, lowercase, prefix_chars, prose, sentence_end, term_text, tokens,
    upper_after_first,
};
use super::{Header, HeaderError, HeaderInput, HeaderWriter};
use crate::render::one_line;

/// Writes headers from the exchange itself: the title, the user's own
/// request (quoted), the most salient terms, and the preceding exchange's
/// topic. Deterministic, no network, no model.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractiveWriter;

impl HeaderWriter for ExtractiveWriter {
    fn write(&self, input: &HeaderInput<'_>) -> Result<Header, HeaderError> {
        // The reply is tokenized once, for the chunk's topics and its own.
        // Redaction placeholders are no one's topic.
        let reply_text = without_placeholders(input.assistant);
        let assistant = term_text(&reply_text);
        let reply = keys(prefix_chars(&assistant, REPLY_CHARS));
        let user = without_placeholders(input.user);
        let title = input.title.map(without_placeholders);
        let terms = Terms::of(title.as_deref(), &user, &reply);
        // Its own topics, else the ones it continues, else the reply's.
        let topics = terms.subject(input.common, input.previous.map(|p| p.topics.as_slice()));
        let mut sentences = vec![setting(input)];
        // The request in words; a request of code alone is quoted as it is.
        let asked = prose(input.user);
        let request = key_sentence(if asked.is_empty() { input.user } else { &asked }, 220);
        if !request.is_empty() {
            sentences.push(format!("The user asked: \"{request}\""));
        }
        if !topics.is_empty() {
            sentences.push(format!("The exchange covers {}.", join_topics(&topics)));
        }
        // What the reply says and brings that the request did not name:
        // what a later search for the answer ("what did she paint?") looks
        // for. One sentence of it, not the reply (the embedding holds the
        // header, so the whole reply would dilute it).
        let gist = key_sentence(&prose(input.assistant), 160);
        let brings: Vec<String> = terms
            .brought(input.common)
            .into_iter()
            .filter(|r| {
                !topics
                    .iter()
                    .any(|t| t.split(' ').any(|w| r.split(' ').any(|x| x == w)))
            })
            .collect();
        sentences.extend(what_the_reply_says(&gist, &brings));
        Ok(Header {
            context: sentences.join(" "),
            topics,
            backfill: false,
        })
    }
}

/// `text` with each redaction placeholder (`[REDACTED:<rule>:<8 hex>]`)
/// blanked, for term counting: a rule id or a hash is no topic.
fn without_placeholders(text: &str) -> std::borrow::Cow<'_, str> {
    const PREFIX: &str = "[REDACTED:";
    if !text.contains(PREFIX) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(PREFIX) {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        match after.find(']').filter(|&end| end <= 80) {
            Some(end) => {
                out.push(' ');
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(PREFIX);
                rest = &after[PREFIX.len()..];
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// The first sentence: where the exchange comes from (platform, title,
/// date), where it sits (exchange 2 of 5) and what it follows. The
/// previous exchange's subject joins this sentence so that four sentences
/// are never exceeded.
fn setting(input: &HeaderInput<'_>) -> String {
    let platform = platform_name(input.platform);
    let date = input
        .date
        .map(|d| format!(" on {}", long_date(d)))
        .unwrap_or_default();
    // Separate calls are requests of one file, not exchanges of one
    // conversation.
    let (what, place) = match (input.independent, input.total_pairs > 1) {
        (false, true) => (
            "conversation",
            format!(" (exchange {} of {})", input.turn_range, input.total_pairs),
        ),
        (false, false) => ("conversation", String::new()),
        (true, true) => (
            "request",
            format!(
                " ({} of {} separate requests in one file)",
                input.turn_range, input.total_pairs
            ),
        ),
        (true, false) => ("request", String::new()),
    };
    let follows = input
        .previous
        .map(|prev| {
            let about = if prev.topics.is_empty() {
                format!("\"{}\"", first_sentence(&prev.request, 120))
            } else {
                join_topics(&prev.topics)
            };
            format!(", following an exchange about {about}")
        })
        .unwrap_or_default();
    let titled = input
        .title
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| format!(" titled \"{t}\""))
        .unwrap_or_default();
    format!(
        "From {} {platform} {what}{titled}{date}{place}{follows}.",
        article(platform)
    )
}

/// The sentence on the reply: its `gist` quoted and the terms it `brings`
/// in, either, or none.
fn what_the_reply_says(gist: &str, brings: &[String]) -> Option<String> {
    let said = gist.trim_end_matches(['.', '!', '?']);
    match (gist.is_empty(), brings.is_empty()) {
        (false, false) => Some(format!(
            "The reply says \"{said}\" and brings in {}.",
            join_topics(brings)
        )),
        (false, true) => Some(format!("The reply says \"{said}\".")),
        (true, false) => Some(format!("The reply brings in {}.", join_topics(brings))),
        (true, true) => None,
    }
}

/// "a" or "an" before a platform's name, by how it is said ("an API", "a
/// ChatGPT"): an initialism read letter by letter starts with a vowel sound
/// when its first letter's name does.
fn article(name: &str) -> &'static str {
    let letters: String = name.chars().take_while(char::is_ascii_alphabetic).collect();
    let initialism = letters.len() > 1 && letters.chars().all(|c| c.is_ascii_uppercase());
    let first = letters.chars().next().map(|c| c.to_ascii_lowercase());
    let vowel = if initialism {
        matches!(
            first,
            Some('a' | 'e' | 'f' | 'h' | 'i' | 'l' | 'm' | 'n' | 'o' | 'r' | 's' | 'x')
        )
    } else {
        matches!(first, Some('a' | 'e' | 'i' | 'o' | 'u'))
    };
    if vowel { "an" } else { "a" }
}

fn platform_name(p: &str) -> &str {
    match p {
        "chatgpt" => "ChatGPT",
        "claude" => "Claude.ai",
        "gemini" => "Gemini",
        "claude-code" => "Claude Code",
        "api" => "API",
        "local" => "local session",
        other => other,
    }
}

/// The first sentence of `text`, whitespace folded, at most `max` chars.
pub fn first_sentence(text: &str, max: usize) -> String {
    clip(one_line(&text[..sentence_end(text)]), max)
}

/// `s` if it has at most `max` chars, else its words that fit and `…`.
fn clip(s: String, max: usize) -> String {
    if s.chars().count() <= max {
        return s;
    }
    let cut: String = s.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(a, _)| a);
    format!("{cut}…")
}

/// The sentence of `text` that says something: the first with at least
/// three content words ("Thanks, Melanie!", "Hey Gina!" and "Wow!" carry
/// nothing), else the one with the most, the earliest on a tie; whitespace
/// folded, at most `max` chars.
pub fn key_sentence(text: &str, max: usize) -> String {
    // Six sentences fit in this much of a long text; the rest of a long
    // reply is never scanned or copied.
    let head = prefix_chars(text, REPLY_CHARS);
    let mut rest = head;
    let mut best: Option<(usize, String)> = None;
    // The first few sentences only: the request is rarely later.
    for _ in 0..6 {
        if rest.trim_start().is_empty() {
            break;
        }
        let end = sentence_end(rest);
        let s = &rest[..end];
        // A sentence running into the cut goes on past it.
        let sentence = || {
            let out = first_sentence(s, max);
            if end == rest.len() && head.len() < text.len() && !out.ends_with('…') {
                format!("{out}…")
            } else {
                out
            }
        };
        let content = tokens(s)
            .filter(|t| !is_stopword(&lowercase(t), upper_after_first(t)))
            .count();
        if content >= 3 {
            return sentence();
        }
        if best.as_ref().is_none_or(|(most, _)| content > *most) {
            best = Some((content, sentence()));
        }
        rest = &rest[end..];
    }
    best.map(|(_, s)| s).unwrap_or_default()
}

/// `date` as `%B %-d, %Y` ("May 1, 2024"), without chrono reading that
/// pattern anew for every header.
fn long_date(date: DateTime<Utc>) -> String {
    use chrono::Datelike;
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    if (0..=9999).contains(&date.year()) {
        format!(
            "{} {}, {:04}",
            MONTHS[date.month0() as usize],
            date.day(),
            date.year()
        )
    } else {
        date.format("%B %-d, %Y").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_the_first_sentence_that_says_something() {
        assert_eq!(
            key_sentence(
                "Thanks, Melanie! That's really sweet. Is this your own painting of a sunrise?",
                200
            ),
            "Is this your own painting of a sunrise?"
        );
        assert_eq!(key_sentence("Wow!", 200), "Wow!");
        // Greetings and a name say nothing either: the request is the
        // sentence with the news in it.
        assert_eq!(
            key_sentence(
                "Hey Gina! Good to see you too. Lost my job as a banker yesterday, so I'm gonna start my own business.",
                200
            ),
            "Lost my job as a banker yesterday, so I'm gonna start my own business."
        );
        // With no sentence of three content words, the one with the most.
        assert_eq!(
            key_sentence("Yep, Melanie! Exciting but kinda nerve-wracking.", 200),
            "Exciting but kinda nerve-wracking."
        );
        assert_eq!(
            key_sentence("Fix the flaky test in src/a.rs today. Thanks.", 200),
            "Fix the flaky test in src/a.rs today."
        );
        assert_eq!(key_sentence("", 200), "");
        // A long run-on text: the sentence is cut at the scanned prefix and
        // says so.
        let long = "word ".repeat(2000);
        let got = key_sentence(&long, 200);
        assert!(got.ends_with('…') && got.chars().count() <= 201, "{got}");
        let fits = format!("{}end", "x ".repeat(1999));
        assert!(key_sentence(&fits, 5000).ends_with('…'));
    }

    #[test]
    fn placeholders_are_no_topic_but_the_request_keeps_them() {
        assert_eq!(
            without_placeholders("use [REDACTED:github-token:3f9a1c2e] to push"),
            "use   to push"
        );
        assert_eq!(
            without_placeholders("a [REDACTED: open"),
            "a [REDACTED: open"
        );
        let user = "Why does psql reject postgres://app:[REDACTED:url-password:0b7d4e11]@db/prod for the migration?";
        let h = ExtractiveWriter
            .write(&HeaderInput {
                platform: "claude-code",
                title: None,
                date: None,
                user,
                assistant: "The password [REDACTED:url-password:0b7d4e11] expired; rotate it and rerun the migration.",
                turn_range: "1",
                total_pairs: 1,
                previous: None,
                common: &[],
                independent: false,
            })
            .unwrap();
        for t in &h.topics {
            assert!(!t.contains("redacted") && !t.contains("0b7d4e11"), "{t}");
        }
        assert!(
            h.context.contains("[REDACTED:url-password:0b7d4e11]"),
            "{}",
            h.context
        );
    }

    #[test]
    fn the_platform_takes_the_article_it_is_said_with() {
        for (platform, article) in [
            ("api", "an"),
            ("chatgpt", "a"),
            ("claude", "a"),
            ("gemini", "a"),
            ("claude-code", "a"),
            ("local", "a"),
            ("openrouter", "an"),
            ("LLM proxy", "an"),
            ("HTTP log", "an"),
            ("GPT store", "a"),
        ] {
            let input = HeaderInput {
                platform,
                user: "Summarize the meeting notes about the Q3 roadmap.",
                assistant: "The roadmap moves the billing rewrite to Q4.",
                turn_range: "1",
                total_pairs: 1,
                ..Default::default()
            };
            let h = ExtractiveWriter.write(&input).unwrap();
            let want = format!("From {article} {} conversation", platform_name(platform));
            assert!(h.context.starts_with(&want), "{}", h.context);
        }
    }

    #[test]
    fn sentences_are_found_in_the_text_as_in_its_folded_form() {
        // The reference: fold the whitespace of the whole text, then look
        // for a `.`, `?` or `!` followed by a space.
        let folded_first = |text: &str, max: usize| -> String {
            let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let end = folded
                .char_indices()
                .find(|&(i, c)| matches!(c, '.' | '?' | '!') && folded[i + 1..].starts_with(' '))
                .map_or(folded.len(), |(i, c)| i + c.len_utf8());
            clip(folded[..end].to_string(), max)
        };
        for text in [
            "",
            "   ",
            "How are you?\n\nFine.",
            "v1.2 is out. Really!",
            "  leading space. then\tmore",
            "ends with a dot.",
            "ends with a dot and space. ",
            "Wait...what? Yes!!  Ok",
            "Ünïcödé… ça va?\u{a0}Oui.",
            "no-break\u{a0}space. After\u{2003}em space! x",
            "a.b.c d",
            "!",
            ". leading",
        ] {
            for max in [3, 10, 200] {
                assert_eq!(
                    first_sentence(text, max),
                    folded_first(text, max),
                    "{text:?} {max}"
                );
            }
        }
    }

    #[test]
    fn dates_are_written_as_chronos_pattern_writes_them() {
        for t in [
            0,
            1_714_557_600,
            1_709_251_199,
            -62_135_596_800,
            253_402_300_800,
        ] {
            let d = DateTime::from_timestamp(t, 0).unwrap();
            assert_eq!(long_date(d), d.format("%B %-d, %Y").to_string(), "{t}");
        }
        // Every month's name.
        for m in 1..=12 {
            let d = chrono::NaiveDate::from_ymd_opt(2024, m, 9)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap()
                .and_utc();
            assert_eq!(long_date(d), d.format("%B %-d, %Y").to_string());
        }
    }

    #[test]
    fn first_sentences_are_cut_on_words() {
        assert_eq!(first_sentence("How are you? Fine.", 50), "How are you?");
        assert_eq!(first_sentence("v1.2 is out", 50), "v1.2 is out");
        assert_eq!(first_sentence("one two three four", 9), "one two…");
    }
}
