//! The fast path: a line's `type` and `subtype`, read without building its JSON tree.

use std::borrow::Cow;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

/// The two fields every line is routed by. Parsing only these (the rest is skipped, though
/// still checked to be valid JSON) spares the hot path, `stream_event` and `assistant` lines,
/// from building a whole JSON tree per line.
///
/// Deserialized by hand from a JSON object only: a derived struct would also accept a JSON
/// array by position (`["assistant","x"]` would become type `assistant`, `[]` type `unknown`),
/// and a line that is not an object must be `invalid`.
pub(super) struct Header<'a> {
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) subtype: Option<Cow<'a, str>>,
}

impl<'de> Deserialize<'de> for Header<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectOnly;
        impl<'de> Visitor<'de> for ObjectOnly {
            type Value = Header<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header<'de>, A::Error> {
                let mut header = Header { kind: None, subtype: None };
                // Keys are read as text (borrowed when they hold no escape); a repeated key
                // keeps its last value, as the full parse does.
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match key.0.as_ref() {
                        "type" => header.kind = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0),
                        "subtype" => header.subtype = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(header)
            }
        }
        deserializer.deserialize_map(ObjectOnly)
    }
}

/// A JSON string, borrowed from the line when it holds no escape.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}
