//! The Claude.ai export as serde sees it: only the fields the adapter reads,
//! all of them lenient (see [`crate::lenient`]).

use std::borrow::Cow;

use serde::Deserialize;

use crate::lenient::{LBool, LObj, LStr, LTime, LVec};

/// One conversation: an element of the bulk `conversations.json` array, or
/// the single object the claude.ai web API returns (browser extensions).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct RawConv<'a> {
    #[serde(borrow)]
    pub uuid: LStr<'a>,
    #[serde(borrow)]
    pub name: LStr<'a>,
    #[serde(borrow)]
    pub summary: LStr<'a>,
    pub created_at: LTime,
    pub updated_at: LTime,
    #[serde(borrow)]
    pub model: LStr<'a>,
    #[serde(borrow)]
    pub current_leaf_message_uuid: LStr<'a>,
    #[serde(borrow)]
    pub chat_messages: Option<LVec<LObj<RawMessage<'a>>>>,
    #[serde(borrow)]
    pub project_uuid: LStr<'a>,
    #[serde(borrow)]
    pub project: LObj<Project<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Project<'a> {
    #[serde(borrow)]
    pub name: LStr<'a>,
    #[serde(borrow)]
    pub uuid: LStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct RawMessage<'a> {
    #[serde(borrow)]
    pub uuid: LStr<'a>,
    #[serde(borrow)]
    pub text: LStr<'a>,
    #[serde(borrow)]
    pub content: LVec<LObj<Block<'a>>>,
    #[serde(borrow)]
    pub sender: LStr<'a>,
    pub created_at: LTime,
    pub updated_at: LTime,
    #[serde(borrow)]
    pub parent_message_uuid: LStr<'a>,
    #[serde(borrow)]
    pub attachments: LVec<LObj<Attachment<'a>>>,
    #[serde(borrow)]
    pub files: LVec<LObj<File<'a>>>,
    #[serde(borrow)]
    pub files_v2: LVec<LObj<File<'a>>>,
}

/// An uploaded document, with its text inline in `extracted_content`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Attachment<'a> {
    #[serde(borrow)]
    pub file_name: LStr<'a>,
    #[serde(borrow)]
    pub file_type: LStr<'a>,
    #[serde(borrow)]
    pub extracted_content: LStr<'a>,
}

/// An uploaded file or image, referenced by name (binaries are not exported).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct File<'a> {
    #[serde(borrow)]
    pub file_name: LStr<'a>,
    #[serde(borrow)]
    pub file_kind: LStr<'a>,
    #[serde(borrow)]
    pub file_uuid: LStr<'a>,
    #[serde(borrow)]
    pub preview_url: LStr<'a>,
}

/// One `content[]` block: the union of the fields the adapter reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Block<'a> {
    #[serde(borrow, rename = "type")]
    pub kind: LStr<'a>,
    #[serde(borrow)]
    pub text: LStr<'a>,
    #[serde(borrow)]
    pub thinking: LStr<'a>,
    #[serde(borrow)]
    pub summaries: LVec<LObj<Summary<'a>>>,
    #[serde(borrow)]
    pub name: LStr<'a>,
    #[serde(borrow)]
    pub input: LObj<ToolInput<'a>>,
    #[serde(borrow)]
    pub content: ResultContent<'a>,
    pub is_error: LBool,
    #[serde(borrow)]
    pub title: LStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Summary<'a> {
    #[serde(borrow)]
    pub summary: LStr<'a>,
}

/// The `tool_use.input` keys that make a useful one-line summary.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ToolInput<'a> {
    #[serde(borrow)]
    pub command: LStr<'a>,
    #[serde(borrow)]
    pub title: LStr<'a>,
    #[serde(borrow)]
    pub id: LStr<'a>,
    #[serde(borrow, rename = "type")]
    pub kind: LStr<'a>,
    #[serde(borrow)]
    pub content: LStr<'a>,
    #[serde(borrow)]
    pub language: LStr<'a>,
    #[serde(borrow)]
    pub query: LStr<'a>,
    #[serde(borrow)]
    pub q: LStr<'a>,
    #[serde(borrow)]
    pub url: LStr<'a>,
    #[serde(borrow)]
    pub path: LStr<'a>,
    #[serde(borrow)]
    pub file_path: LStr<'a>,
    #[serde(borrow)]
    pub pattern: LStr<'a>,
    #[serde(borrow)]
    pub description: LStr<'a>,
    #[serde(borrow)]
    pub prompt: LStr<'a>,
    #[serde(borrow)]
    pub code: LStr<'a>,
}

/// `tool_result.content`: a string or a list of items.
#[derive(Debug, Default)]
pub enum ResultContent<'a> {
    #[default]
    None,
    Text(Cow<'a, str>),
    Items(Vec<LObj<ResultItem<'a>>>),
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ResultItem<'a> {
    #[serde(borrow, rename = "type")]
    pub kind: LStr<'a>,
    #[serde(borrow)]
    pub text: LStr<'a>,
    #[serde(borrow)]
    pub title: LStr<'a>,
    #[serde(borrow)]
    pub url: LStr<'a>,
}

mod result_de {
    use std::borrow::Cow;
    use std::fmt;

    use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

    use super::{ResultContent, ResultItem};
    use crate::lenient::LObj;

    struct V;

    impl<'de> Visitor<'de> for V {
        type Value = ResultContent<'de>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string or a list")
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(ResultContent::Text(Cow::Borrowed(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(ResultContent::Text(Cow::Owned(v.to_owned())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(ResultContent::Text(Cow::Owned(v)))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut items = Vec::new();
            while let Some(x) = seq.next_element::<LObj<ResultItem<'de>>>()? {
                items.push(x);
            }
            Ok(ResultContent::Items(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(ResultContent::None)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(ResultContent::None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(ResultContent::None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(ResultContent::None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(ResultContent::None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(ResultContent::None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(ResultContent::None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de: 'a, 'a> Deserialize<'de> for ResultContent<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(V)
        }
    }
}
