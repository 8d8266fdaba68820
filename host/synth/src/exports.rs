//! Whole exports as people download them, companion files and images
//! included, as lists of (path inside the export, bytes) to write as a zip
//! ([`crate::files::write_zip`]) or a folder ([`crate::files::write_folder`]):
//!
//! - ChatGPT: `conversations.json` (two conversations; an uploaded image
//!   shown by a `file-service://` pointer, a `sediment://` pointer to a
//!   generated image in `dalle-generations/`, the same image uploaded again
//!   under another file id, and a PDF upload named only in the message's
//!   `attachments`), the files those point to (real PNGs, a one-page PDF),
//!   and `user.json`,
//!   `chat.html`, `message_feedback.json`, `shared_conversations.json`,
//!   `model_comparisons.json`.
//! - Claude.ai: `conversations.json` (an uploaded document with its
//!   `extracted_content`, an image named in `files`), `users.json`,
//!   `projects.json`.
//! - Gemini Takeout: `Takeout/My Activity/Gemini Apps/MyActivity.json`
//!   (a prompt with an attached image), the image beside it, and
//!   `Takeout/archive_browser.html`.

use crate::files::png;

/// A file of an export: its path inside the export, its bytes.
pub type ExportFile = (String, Vec<u8>);

/// The uploaded image of the ChatGPT export (a fern, 24×16).
pub fn fern_png() -> Vec<u8> {
    png(24, 16, |x, y| [(x * 10) as u8, 120 + (y * 8) as u8, 40])
}

/// The generated image of the ChatGPT export (a sunset, 16×16).
pub fn sunset_png() -> Vec<u8> {
    png(16, 16, |_, y| [250, (200 - y * 10) as u8, 60])
}

/// The file ids the ChatGPT export's image pointers name.
pub const FERN_ID: &str = "file-Q1w2E3r4T5y6U7i8";
pub const FERN_AGAIN_ID: &str = "file-Z9x8C7v6B5n4M3m2";
pub const SUNSET_ID: &str = "file_00000000a1b2c3d4e5f6a7b8";
/// The file id of the ChatGPT export's uploaded PDF.
pub const PLAN_ID: &str = "file-P4d5F6g7H8j9K0l1";

/// The ChatGPT export's uploaded document: a one-page PDF.
pub fn planting_plan_pdf() -> Vec<u8> {
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] >>",
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

fn node(id: &str, parent: &str, child: Option<&str>, message: &str) -> String {
    let children = child.map_or_else(String::new, |c| format!("\"{c}\""));
    format!(
        r#""{id}":{{"id":"{id}","parent":"{parent}","children":[{children}],"message":{message}}}"#
    )
}

fn message(id: &str, role: &str, t: u32, content: &str, metadata: &str) -> String {
    format!(
        r#"{{"id":"{id}","author":{{"role":"{role}","metadata":{{}}}},"create_time":{t}.5,"content":{content},"status":"finished_successfully","recipient":"all","metadata":{metadata}}}"#
    )
}

fn text(s: &str) -> String {
    format!(r#"{{"content_type":"text","parts":["{s}"]}}"#)
}

/// A conversation whose root's child is `first` and whose current node is
/// `last`.
fn conversation(
    id: &str,
    title: &str,
    t: u32,
    nodes: &[String],
    (first, last): (&str, &str),
) -> String {
    format!(
        r#"{{"id":"{id}","conversation_id":"{id}","title":"{title}","create_time":{t},"update_time":{},"default_model_slug":"gpt-4o","current_node":"{last}","mapping":{{"root":{{"id":"root","parent":null,"children":["{first}"],"message":null}},{}}}}}"#,
        t + 600,
        nodes.join(",")
    )
}

fn image_part(pointer: &str, size: usize) -> String {
    format!(
        r#"{{"content_type":"image_asset_pointer","asset_pointer":"{pointer}","size_bytes":{size},"width":24,"height":16,"fovea":512,"metadata":null}}"#
    )
}

/// The fern conversation's nodes: an uploaded photo, then a PDF.
fn fern_nodes(t: u32, fern_len: usize) -> [String; 4] {
    let fern_upload = message(
        "u1",
        "user",
        t,
        &format!(
            r#"{{"content_type":"multimodal_text","parts":[{},"Which fern is this, and does it like a north-facing window?"]}}"#,
            image_part(&format!("file-service://{FERN_ID}"), fern_len)
        ),
        &format!(
            r#"{{"attachments":[{{"id":"{FERN_ID}","name":"fern.png","mime_type":"image/png","width":24,"height":16}}]}}"#
        ),
    );
    [
        node("u1", "root", Some("a1"), &fern_upload),
        node(
            "a1",
            "u1",
            Some("u2"),
            &message(
                "a1",
                "assistant",
                t + 5,
                &text(
                    "It looks like a Boston fern. A north-facing window suits it: bright, indirect light and evenly moist soil.",
                ),
                r#"{"model_slug":"gpt-4o"}"#,
            ),
        ),
        node(
            "u2",
            "a1",
            Some("a2"),
            &message(
                "u2",
                "user",
                t + 60,
                &text("Here is my planting plan, can you check the spacing?"),
                &format!(
                    r#"{{"attachments":[{{"id":"{PLAN_ID}","name":"planting-plan.pdf","mime_type":"application/pdf","size":2048}}]}}"#
                ),
            ),
        ),
        node(
            "a2",
            "u2",
            None,
            &message(
                "a2",
                "assistant",
                t + 65,
                &text(
                    "The plan spaces the ferns 40 cm apart, which leaves room for their fronds to spread.",
                ),
                r#"{"model_slug":"gpt-4o"}"#,
            ),
        ),
    ]
}

/// The sunset conversation's nodes: two photos in one message.
fn sunset_nodes(t: u32, sunset_len: usize, fern_len: usize) -> [String; 4] {
    let sunset_turn = message(
        "v2",
        "user",
        t + 3_660,
        &format!(
            r#"{{"content_type":"multimodal_text","parts":[{},{},"Both of these are from my balcony: which one would you print?"]}}"#,
            image_part(&format!("sediment://{SUNSET_ID}"), sunset_len),
            image_part(&format!("file-service://{FERN_AGAIN_ID}"), fern_len)
        ),
        "{}",
    );
    [
        node(
            "v1",
            "root",
            Some("w1"),
            &message(
                "v1",
                "user",
                t + 3_600,
                &text("What makes a sunset photo look warm?"),
                "{}",
            ),
        ),
        node(
            "w1",
            "v1",
            Some("v2"),
            &message(
                "w1",
                "assistant",
                t + 3_605,
                &text("Low sun, a white balance set for daylight, and orange light on clouds."),
                r#"{"model_slug":"gpt-4o"}"#,
            ),
        ),
        node("v2", "w1", Some("w2"), &sunset_turn),
        node(
            "w2",
            "v2",
            None,
            &message(
                "w2",
                "assistant",
                t + 3_665,
                &text(
                    "Print the sunset: its colours carry the picture, and the fern is the same photo you sent earlier.",
                ),
                r#"{"model_slug":"gpt-4o"}"#,
            ),
        ),
    ]
}

/// A ChatGPT export: conversations with image pointers, the images, and
/// the account and viewer files beside them.
pub fn chatgpt_export() -> Vec<ExportFile> {
    let (fern, sunset) = (fern_png(), sunset_png());
    let t = 1_717_000_000;
    let a = fern_nodes(t, fern.len());
    let b = sunset_nodes(t, sunset.len(), fern.len());
    let conversations = format!(
        "[{},{}]",
        conversation("c-fern", "Identifying a fern", t, &a, ("u1", "a2")),
        conversation(
            "c-sunset",
            "Warm sunset photos",
            t + 3_600,
            &b,
            ("v1", "w2")
        )
    );
    vec![
        ("conversations.json".into(), conversations.into_bytes()),
        (format!("{FERN_ID}-fern.png"), fern.clone()),
        (
            format!("dalle-generations/{SUNSET_ID}-8d1c6a0e-balcony.png"),
            sunset,
        ),
        (format!("user-4kQ9mZ/{FERN_AGAIN_ID}-IMG_2041.png"), fern),
        (format!("{PLAN_ID}-planting-plan.pdf"), planting_plan_pdf()),
        (
            "user.json".into(),
            br#"{"id":"user-4kQ9mZ","email":"ada@example.com","chatgpt_plus_user":true,"phone_number":null}"#.to_vec(),
        ),
        (
            "chat.html".into(),
            b"<!DOCTYPE html><html><head><title>ChatGPT Data Export</title></head><body><div id=\"root\"></div><script>var jsonData = [];</script></body></html>".to_vec(),
        ),
        (
            "message_feedback.json".into(),
            br#"[{"id":"fb-1","conversation_id":"c-fern","user_id":"user-4kQ9mZ","rating":"thumbsUp","content":"{}"}]"#.to_vec(),
        ),
        (
            "shared_conversations.json".into(),
            br#"[{"id":"share-1","conversation_id":"c-sunset","title":"Warm sunset photos","is_anonymous":true}]"#.to_vec(),
        ),
        ("model_comparisons.json".into(), b"[]".to_vec()),
    ]
}

/// The text of the Claude.ai export's uploaded document.
pub const CLAUDE_DOCUMENT: &str =
    "Greenhouse log, week 12\nTomatoes: 1.8 m, first truss set.\nBasil: bolting, pinch the tops.";

/// A Claude.ai export: one conversation with an uploaded document (its
/// text in `extracted_content`) and an image named in `files` (Claude.ai
/// does not export image binaries), and the account and project files.
pub fn claude_export() -> Vec<ExportFile> {
    let doc = CLAUDE_DOCUMENT.replace('\n', "\\n");
    let conversations = format!(
        r#"[{{"uuid":"5e1c2b7a-0d4f-4a6e-9b3c-8f7e6d5c4b3a","name":"Greenhouse notes","summary":"","created_at":"2025-03-02T09:00:00.000000Z","updated_at":"2025-03-02T09:05:00.000000Z","account":{{"uuid":"acc-1"}},"chat_messages":[
{{"uuid":"m1","text":"Summarise my greenhouse log, please.","content":[{{"type":"text","text":"Summarise my greenhouse log, please."}}],"sender":"human","created_at":"2025-03-02T09:00:01.000000Z","updated_at":"2025-03-02T09:00:01.000000Z","attachments":[{{"file_name":"greenhouse-log.txt","file_size":{},"file_type":"txt","extracted_content":"{doc}"}}],"files":[{{"file_name":"tomatoes.jpg","file_uuid":"f-7a1b"}}],"parent_message_uuid":"00000000-0000-4000-8000-000000000000"}},
{{"uuid":"m2","text":"The tomatoes are 1.8 m tall with the first truss set; the basil is bolting, so pinch its tops.","content":[{{"type":"text","text":"The tomatoes are 1.8 m tall with the first truss set; the basil is bolting, so pinch its tops."}}],"sender":"assistant","created_at":"2025-03-02T09:00:09.000000Z","updated_at":"2025-03-02T09:00:09.000000Z","attachments":[],"files":[],"parent_message_uuid":"m1"}}]}}]"#,
        CLAUDE_DOCUMENT.len()
    );
    vec![
        ("conversations.json".into(), conversations.into_bytes()),
        (
            "users.json".into(),
            br#"[{"uuid":"acc-1","full_name":"Ada","email_address":"ada@example.com","verified_phone_number":null}]"#.to_vec(),
        ),
        (
            "projects.json".into(),
            br#"[{"uuid":"p-1","name":"Garden","description":"","is_private":true,"created_at":"2025-01-01T00:00:00.000000+00:00","updated_at":"2025-01-01T00:00:00.000000+00:00","docs":[]}]"#.to_vec(),
        ),
    ]
}

/// The Gemini Takeout export's attached image's name, as Takeout names it.
pub const GEMINI_IMAGE: &str = "1741234567890-3fa9c1d2.png";

/// A Gemini Takeout export: the Gemini Apps activity in JSON with a prompt
/// that attached an image, the image beside it, and Takeout's own index
/// page.
pub fn gemini_takeout() -> Vec<ExportFile> {
    let dir = "Takeout/My Activity/Gemini Apps";
    let activity = format!(
        r#"[{{"header":"Gemini Apps","title":"Prompted What bird is on this feeder?","time":"2025-03-06T04:16:07.890Z","products":["Gemini Apps"],"activityControls":["Gemini Apps Activity"],"attachedFiles":["{GEMINI_IMAGE}"],"details":[{{"name":"https://gemini.google.com/app/9b2e4c6a8d0f1357"}}],"safeHtmlItem":[{{"html":"<p>A blue tit: the blue cap and yellow breast give it away.</p>"}}]}}]"#
    );
    vec![
        (format!("{dir}/MyActivity.json"), activity.into_bytes()),
        (
            format!("{dir}/{GEMINI_IMAGE}"),
            png(8, 8, |x, y| [20, 60 + (x * y) as u8, 200]),
        ),
        (
            "Takeout/archive_browser.html".into(),
            b"<!DOCTYPE html><html><head><title>Archive Overview</title></head><body>Your Google data</body></html>".to_vec(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_name_their_files_and_point_at_the_images_they_hold() {
        let gpt = chatgpt_export();
        let names: Vec<&str> = gpt.iter().map(|(n, _)| n.as_str()).collect();
        let conversations = String::from_utf8(gpt[0].1.clone()).unwrap();
        for id in [FERN_ID, SUNSET_ID, FERN_AGAIN_ID] {
            assert!(conversations.contains(id));
            assert_eq!(names.iter().filter(|n| n.contains(id)).count(), 1, "{id}");
        }
        assert!(names.contains(&"user.json") && names.contains(&"chat.html"));
        let images: Vec<&Vec<u8>> = gpt
            .iter()
            .filter(|(n, _)| n.ends_with(".png"))
            .map(|(_, b)| b)
            .collect();
        assert_eq!(images.len(), 3);
        assert!(
            names
                .iter()
                .any(|n| n.starts_with(PLAN_ID) && n.ends_with(".pdf"))
        );
        assert_eq!(images[0], images[2], "the fern is uploaded twice");
        assert_ne!(images[0], images[1]);
        let claude = String::from_utf8(claude_export()[0].1.clone()).unwrap();
        assert!(claude.contains("extracted_content\":\"Greenhouse log, week 12\\n"));
        let gemini = gemini_takeout();
        assert!(gemini[1].0.ends_with(GEMINI_IMAGE));
    }
}
