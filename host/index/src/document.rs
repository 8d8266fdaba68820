//! What a chunk is indexed (and found) as: its title and topics, then the
//! sections after its frontmatter (`## Context`, `## Exchange`) as the chunk
//! file has them.
//!
//! The rest of the frontmatter is left out: the metadata carries it, and its
//! keys and ids, ~45 words every chunk shares (`source_platform`,
//! `external`, a chunk id), are keyword-index noise that would make every
//! document longer to tokenize and to rank. The title and topics stay
//! because a header written by a model need not repeat them.
//!
//! The embedded store keeps no copy of it (its keyword index is
//! contentless): a hit's text is composed again from the chunk file, which
//! is the source of truth (see [`crate::Index::with_documents`]).

/// The document of a chunk titled `title` with `topics`, whose file text
/// is `file_text`.
pub fn compose(title: Option<&str>, topics: &[String], file_text: &str) -> String {
    let body = body(file_text);
    let title = title.map_or("", str::trim);
    let mut out = String::with_capacity(title.len() + body.len() + 64);
    if !title.is_empty() {
        out.push_str("# ");
        out.push_str(title);
        out.push('\n');
    }
    if !topics.is_empty() {
        out.push_str("Topics: ");
        out.push_str(&topics.join(", "));
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(body);
    out
}

/// A chunk file's text as its frontmatter's YAML (with its last newline)
/// and what follows the closing `---` line, unparsed; `None` when the text
/// does not open a frontmatter and close it.
pub fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some((&rest[..end + 1], &rest[end + 5..]))
}

/// What follows a chunk file's frontmatter, its leading blank lines left
/// out; the whole text if it has none.
fn body(text: &str) -> &str {
    split_frontmatter(text).map_or(text, |(_, b)| b.trim_start_matches('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_title_topics_and_the_sections_after_the_frontmatter() {
        let file = "---\nchunk_id: a-001\ntopics:\n- nginx\n---\n\n## Context\n\nAbout nginx.\n\n## Exchange\n\n**User:**\n\nhi\n";
        let doc = compose(
            Some(" Proxy: 504s "),
            &["nginx".into(), "timeouts".into()],
            file,
        );
        assert_eq!(
            doc,
            "# Proxy: 504s\nTopics: nginx, timeouts\n\n## Context\n\nAbout nginx.\n\n## Exchange\n\n**User:**\n\nhi\n"
        );
        assert_eq!(
            compose(None, &[], file),
            &file[file.find("## Context").unwrap()..]
        );
        // Text without frontmatter is the body whole.
        assert_eq!(compose(None, &[], "plain\n"), "plain\n");
    }
}
