//! The files of a platform's export that hold no conversations: account
//! and settings files, viewer pages, feedback, sub-agent descriptions, and
//! the images and uploads the conversations point at. An import lists them
//! as ignored with what they are, instead of offering them to every
//! adapter and reporting that none recognizes them; the images are linked
//! from the chunks that show them ([`chatmill_root::assets`]).
//!
//! Decided by name (and, for images, by the folder inside the export), so
//! it costs no read and no sandbox: a ChatGPT export holds thousands of
//! images.

/// What a known file of an export is, when `path` (a file name, a file
/// path, or a path inside an archive) names one. `path` may use `/` or
/// `\\`.
pub fn what_is(path: &str) -> Option<&'static str> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    if let Some(what) = by_name(&lower) {
        return Some(what);
    }
    if lower.starts_with("agent-") && lower.ends_with(".meta.json") {
        return Some("Claude Code sub-agent description (its type and depth), holds no turns");
    }
    let ext = lower.rsplit_once('.').map_or("", |(_, e)| e);
    if is_media(ext) || (ext == "dat" && (lower.starts_with("file-") || lower.starts_with("file_")))
    {
        return Some(
            "image or uploaded file of the export, holds no conversations (linked from the chunks that show it)",
        );
    }
    None
}

/// The files known by their whole name (lowercase).
fn by_name(lower: &str) -> Option<&'static str> {
    Some(match lower {
        "user.json" => "ChatGPT account file, holds no conversations",
        "chat.html" => {
            "ChatGPT export's viewer page, holds no conversations of its own (it shows `conversations.json`)"
        }
        "message_feedback.json" => "ChatGPT feedback on replies, holds no conversations",
        "shared_conversations.json" => {
            "ChatGPT list of shared links (titles only), holds no conversations"
        }
        "model_comparisons.json" => "ChatGPT answers compared side by side, holds no conversations",
        "group_chats.json" | "shopping.json" | "sora.json" => {
            "ChatGPT export file for another feature, holds no conversations"
        }
        "export_manifest.json" | "conversations.json.index" | "user_settings.json" => {
            "ChatGPT export's index or settings file, holds no conversations"
        }
        "users.json" => "Claude.ai account file, holds no conversations",
        "projects.json" => "Claude.ai projects file (names and documents), holds no conversations",
        "memories.json" => "Claude.ai memories file, holds no conversations",
        "archive_browser.html" => "Google Takeout's index page, holds no conversations",
        "gemini_gems_data.html" => "Gemini Gems (custom instructions), holds no conversations",
        _ => return None,
    })
}

/// File extensions of images, audio, video and documents an export holds
/// beside its conversations (lowercase).
fn is_media(ext: &str) -> bool {
    matches!(
        ext,
        "png"
            | "jpg"
            | "jpeg"
            | "gif"
            | "webp"
            | "heic"
            | "heif"
            | "bmp"
            | "tif"
            | "tiff"
            | "svg"
            | "ico"
            | "avif"
            | "mp3"
            | "m4a"
            | "wav"
            | "ogg"
            | "opus"
            | "flac"
            | "mp4"
            | "mov"
            | "webm"
            | "pdf"
            | "doc"
            | "docx"
            | "xls"
            | "xlsx"
            | "ppt"
            | "pptx"
    )
}

#[cfg(test)]
mod tests {
    use super::what_is;

    #[test]
    fn each_platforms_companion_files_are_known_and_conversations_are_not() {
        for (path, says) in [
            ("user.json", "ChatGPT account file"),
            ("C:\\exports\\chat.html", "ChatGPT export's viewer page"),
            ("x/Message_Feedback.json", "ChatGPT feedback"),
            ("shared_conversations.json", "shared links"),
            ("model_comparisons.json", "compared side by side"),
            ("users.json", "Claude.ai account file"),
            ("projects.json", "Claude.ai projects file"),
            (
                "p/0a1b/subagents/agent-a0ad4f44468bdf20d.meta.json",
                "Claude Code sub-agent description",
            ),
            (
                "Takeout/archive_browser.html",
                "Google Takeout's index page",
            ),
            ("file-Q1w2E3r4T5y6U7i8-fern.png", "image or uploaded file"),
            (
                "dalle-generations/file_00ab-1.WEBP",
                "image or uploaded file",
            ),
            ("file_00000000a1b2c3d4.dat", "image or uploaded file"),
        ] {
            let what = what_is(path).unwrap_or_else(|| panic!("{path} is not known"));
            assert!(what.contains(says), "{path}: {what}");
            assert!(what.contains("holds no"), "{path}: {what}");
        }
        for path in [
            "conversations.json",
            "conversations-000.json",
            "p/0a1b2c3d.jsonl",
            "p/0a1b/subagents/agent-a0ad4f44468bdf20d.jsonl",
            "Takeout/My Activity/Gemini Apps/MyActivity.json",
            "Takeout/My Activity/Gemini Apps/MyActivity.html",
            "notes.txt",
            "data.dat",
            "user.json.bak",
        ] {
            assert_eq!(what_is(path), None, "{path}");
        }
    }
}
