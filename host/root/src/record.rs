//! What the index gets from a chunk: the embedding text (the contextual
//! header and the user's prompts — never the assistant's reply, which would
//! dilute the embedding), the document (see [`document`]), and the
//! frontmatter as metadata.

use chatmill_index::{ChunkMeta, ChunkRecord};
use chrono::DateTime;

use crate::chunk::{ChunkDoc, Frontmatter};

/// The text that is embedded for a chunk.
pub fn embed_text(doc: &ChunkDoc) -> String {
    let mut out = doc.context.trim().to_string();
    for e in &doc.exchanges {
        out.push_str("\n\n");
        out.push_str(e.user.trim());
    }
    out
}

/// What a chunk is indexed (and found) as: its title and topics, then the
/// sections after its frontmatter (see [`chatmill_index::document`], which
/// composes it again from the file for a hit).
pub fn document(fm: &Frontmatter, text: &str) -> String {
    chatmill_index::document::compose(fm.conversation_title.as_deref(), &fm.topics, text)
}

/// The index record for a chunk whose file text is `text`, stored at `path`
/// (relative to the root).
pub fn index_record(doc: &ChunkDoc, text: &str, path: &str) -> ChunkRecord {
    let fm = &doc.frontmatter;
    let timestamp = DateTime::parse_from_rfc3339(&fm.timestamp).map_or(0, |t| t.timestamp());
    ChunkRecord {
        chunk_id: fm.chunk_id.clone(),
        embed_text: embed_text(doc),
        document: document(fm, text),
        meta: ChunkMeta {
            timestamp,
            platform: fm.source_platform.clone(),
            agent_id: fm.agent_id.clone(),
            conversation_id: fm.conversation_id.clone(),
            project: fm.extra.get("project").cloned(),
            title: fm.conversation_title.clone(),
            topics: fm.topics.clone(),
            model: fm.model_used.clone(),
            turn_range: fm.turn_range.clone(),
            source_file: fm.source_file.clone(),
            path: path.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::Exchange;

    #[test]
    fn the_assistant_reply_is_never_embedded() {
        let doc = ChunkDoc {
            frontmatter: Frontmatter {
                source_file: "conversations.json".into(),
                source_platform: "chatgpt".into(),
                model_used: "gpt-4o".into(),
                timestamp: "2024-05-01T10:00:00Z".into(),
                conversation_title: Some("Sourdough".into()),
                title_derived: false,
                turn_range: "1".into(),
                topics: vec!["sourdough".into()],
                chunk_id: "chatgpt-abc-001-2024-05-01".into(),
                agent_id: "external".into(),
                conversation_id: "c1".into(),
                redaction: None,
                extra: Default::default(),
            },
            context: "The user asks why their starter smells.".into(),
            exchanges: vec![Exchange {
                user: "Why does my starter smell like acetone?".into(),
                assistant: "SECRET-ANSWER it is hungry".into(),
            }],
        };
        let text = doc.to_markdown().unwrap();
        let r = index_record(&doc, &text, "chatgpt-abc-001-2024-05-01.md");
        assert!(r.embed_text.contains("acetone"));
        assert!(r.embed_text.contains("starter smells"));
        assert!(!r.embed_text.contains("SECRET-ANSWER"));
        assert_eq!(r.meta.timestamp, 1_714_557_600);
        // The document: title and topics, then the file after its
        // frontmatter, reply included; none of the frontmatter's keys.
        assert!(
            r.document
                .starts_with("# Sourdough\nTopics: sourdough\n\n## Context\n\nThe user asks"),
            "{}",
            r.document
        );
        assert!(text.ends_with(r.document.split_once("\n\n").unwrap().1));
        assert!(r.document.contains("SECRET-ANSWER"));
        assert!(!r.document.contains("source_platform"));
        assert!(!r.document.contains(&doc.frontmatter.chunk_id));
        // No title, no topics, no frontmatter: the text as it is.
        let mut bare = doc.frontmatter.clone();
        bare.conversation_title = None;
        bare.topics.clear();
        assert_eq!(document(&bare, "no frontmatter"), "no frontmatter");
    }
}
