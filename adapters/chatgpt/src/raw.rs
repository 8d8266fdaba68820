//! The ChatGPT export as serde sees it: only the fields the adapter reads,
//! all of them lenient (see [`crate::lenient`]), strings borrowed where the
//! JSON has no escapes.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::lenient::{CowStr, LBool, LObj, LStr, LTime, LVec};

/// One conversation (one element of the top-level array).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct RawConv<'a> {
    #[serde(borrow)]
    pub id: LStr<'a>,
    #[serde(borrow)]
    pub conversation_id: LStr<'a>,
    #[serde(borrow)]
    pub title: LStr<'a>,
    pub create_time: LTime,
    pub update_time: LTime,
    #[serde(borrow)]
    pub mapping: LObj<BTreeMap<CowStr<'a>, LObj<RawNode<'a>>>>,
    #[serde(borrow)]
    pub current_node: LStr<'a>,
    #[serde(borrow)]
    pub default_model_slug: LStr<'a>,
    #[serde(borrow)]
    pub gizmo_id: LStr<'a>,
    pub is_archived: LBool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct RawNode<'a> {
    #[serde(borrow)]
    pub message: LObj<RawMessage<'a>>,
    #[serde(borrow)]
    pub parent: LStr<'a>,
    #[serde(borrow)]
    pub children: LVec<LStr<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct RawMessage<'a> {
    #[serde(borrow)]
    pub id: LStr<'a>,
    #[serde(borrow)]
    pub author: LObj<Author<'a>>,
    pub create_time: LTime,
    pub update_time: LTime,
    #[serde(borrow)]
    pub content: LObj<RawContent<'a>>,
    #[serde(borrow)]
    pub status: LStr<'a>,
    #[serde(borrow)]
    pub recipient: LStr<'a>,
    #[serde(borrow)]
    pub channel: LStr<'a>,
    #[serde(borrow)]
    pub metadata: LObj<MessageMeta<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Author<'a> {
    #[serde(borrow)]
    pub role: LStr<'a>,
    #[serde(borrow)]
    pub name: LStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct MessageMeta<'a> {
    #[serde(borrow)]
    pub model_slug: LStr<'a>,
    pub is_visually_hidden_from_conversation: LBool,
    pub is_user_system_message: LBool,
    pub is_contextual_answers_system_message: LBool,
    #[serde(borrow)]
    pub citations: LVec<LObj<Citation<'a>>>,
    #[serde(borrow)]
    pub attachments: LVec<LObj<MetaAttachment<'a>>>,
    #[serde(borrow)]
    pub finish_details: LObj<FinishDetails<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct FinishDetails<'a> {
    #[serde(borrow, rename = "type")]
    pub kind: LStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Citation<'a> {
    #[serde(borrow)]
    pub metadata: LObj<CitationMeta<'a>>,
    /// Where its marker starts in the text, in characters (any JSON: read
    /// with `as_u64`, so a hostile value is no index, not a failed file).
    pub start_ix: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CitationMeta<'a> {
    #[serde(borrow)]
    pub title: LStr<'a>,
    #[serde(borrow)]
    pub url: LStr<'a>,
}

/// An uploaded file listed in `metadata.attachments`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct MetaAttachment<'a> {
    #[serde(borrow)]
    pub id: LStr<'a>,
    #[serde(borrow)]
    pub name: LStr<'a>,
    #[serde(borrow)]
    pub mime_type: LStr<'a>,
}

/// `message.content`, polymorphic on `content_type`: the union of the
/// fields the adapter reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct RawContent<'a> {
    #[serde(borrow)]
    pub content_type: LStr<'a>,
    #[serde(borrow)]
    pub parts: LVec<ContentPart<'a>>,
    #[serde(borrow)]
    pub text: LStr<'a>,
    #[serde(borrow)]
    pub language: LStr<'a>,
    #[serde(borrow)]
    pub result: LStr<'a>,
    #[serde(borrow)]
    pub summary: LStr<'a>,
    #[serde(borrow)]
    pub url: LStr<'a>,
    #[serde(borrow)]
    pub domain: LStr<'a>,
    #[serde(borrow)]
    pub title: LStr<'a>,
    #[serde(borrow)]
    pub thoughts: LVec<LObj<Thought<'a>>>,
    /// `reasoning_recap` text ("Thought for 12s").
    #[serde(borrow)]
    pub content: LStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Thought<'a> {
    #[serde(borrow)]
    pub summary: LStr<'a>,
    #[serde(borrow)]
    pub content: LStr<'a>,
}

/// One element of `content.parts`: a string, or an object (image / audio
/// pointer, audio transcription), or something unexpected.
#[derive(Debug)]
pub enum ContentPart<'a> {
    Text(CowStr<'a>),
    Object(MediaPart<'a>),
    Other,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct MediaPart<'a> {
    #[serde(borrow)]
    pub content_type: LStr<'a>,
    #[serde(borrow)]
    pub asset_pointer: LStr<'a>,
    #[serde(borrow)]
    pub text: LStr<'a>,
    #[serde(borrow)]
    pub name: LStr<'a>,
    #[serde(borrow)]
    pub mime_type: LStr<'a>,
}

mod part_de {
    use std::borrow::Cow;
    use std::fmt;

    use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

    use super::{ContentPart, MediaPart};
    use crate::lenient::CowStr;

    struct V;

    impl<'de> Visitor<'de> for V {
        type Value = ContentPart<'de>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string or an object")
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(ContentPart::Text(CowStr(Cow::Borrowed(v))))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(ContentPart::Text(CowStr(Cow::Owned(v.to_owned()))))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(ContentPart::Text(CowStr(Cow::Owned(v))))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            MediaPart::deserialize(de::value::MapAccessDeserializer::new(map))
                .map(ContentPart::Object)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(ContentPart::Other)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(ContentPart::Other)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(ContentPart::Other)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(ContentPart::Other)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(ContentPart::Other)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(ContentPart::Other)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(ContentPart::Other)
        }
    }

    impl<'de: 'a, 'a> Deserialize<'de> for ContentPart<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(V)
        }
    }
}
