//! A [`FlatDocument`](super::FlatDocument) read as serde reads JSON, so a task the schema has
//! passed becomes its typed struct from the items already built, not from its text again.
//! Strings are handed out borrowed as they are held; numbers as `serde_json` hands them out.

use serde::de::value::{BorrowedStrDeserializer, Error};
use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::forward_to_deserialize_any;
use std::borrow::Cow;

use super::{Elements, FlatNode, Item, Members, members};

impl<'de> Deserializer<'de> for FlatNode<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.item() {
            Item::Null => visitor.visit_unit(),
            Item::Bool(boolean) => visitor.visit_bool(*boolean),
            Item::Number(number) => {
                if let Some(n) = number.as_u64() {
                    visitor.visit_u64(n)
                } else if let Some(n) = number.as_i64() {
                    visitor.visit_i64(n)
                } else {
                    visitor.visit_f64(number.as_f64().unwrap_or(f64::NAN))
                }
            }
            Item::String(Cow::Borrowed(text)) | Item::Name(Cow::Borrowed(text)) => {
                visitor.visit_borrowed_str(text)
            }
            Item::String(Cow::Owned(text)) | Item::Name(Cow::Owned(text)) => {
                visitor.visit_str(text)
            }
            Item::Array { len, .. } => {
                let mut elements = Elements {
                    node: self,
                    next: self.at + 1,
                    left: *len,
                };
                let value = visitor.visit_seq(&mut elements)?;
                match elements.left {
                    0 => Ok(value),
                    _ => Err(serde::de::Error::invalid_length(*len, &"fewer elements")),
                }
            }
            Item::Object { .. } => visitor.visit_map(MembersAccess {
                members: members(self.items, self.at),
                value: None,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.item() {
            Item::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.item() {
            Item::String(name) => visitor.visit_enum((&**name).into_deserializer()),
            Item::Object { len: 1, .. } => {
                let mut members = members(self.items, self.at);
                match members.next() {
                    Some(variant) => visitor.visit_enum(Variant(variant)),
                    None => self.deserialize_any(visitor),
                }
            }
            _ => self.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

impl<'de> SeqAccess<'de> for Elements<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.next().map(|node| seed.deserialize(node)).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// An object's members, for serde.
struct MembersAccess<'de> {
    members: Members<'de>,
    value: Option<FlatNode<'de>>,
}

impl<'de> MapAccess<'de> for MembersAccess<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((name, value)) = self.members.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(BorrowedStrDeserializer::new(name))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value),
            None => Err(serde::de::Error::custom("a value asked for before its key")),
        }
    }
}

/// A variant written as an object of one member: its name, then its content.
struct Variant<'de>((&'de str, FlatNode<'de>));

impl<'de> EnumAccess<'de> for Variant<'de> {
    type Error = Error;
    type Variant = FlatNode<'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, FlatNode<'de>), Error> {
        let (name, content) = self.0;
        let variant = seed.deserialize(BorrowedStrDeserializer::<Error>::new(name))?;
        Ok((variant, content))
    }
}

impl<'de> VariantAccess<'de> for FlatNode<'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        serde::Deserialize::deserialize(self)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::super::FlatDocument;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        name: String,
        count: Option<u32>,
        ratio: f64,
        offset: i64,
        kind: Kind,
        tagged: Tagged,
        list: Vec<Option<bool>>,
        #[serde(default)]
        missing: Option<String>,
        any: serde_json::Value,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        First,
        SecondOne,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Tagged {
        Pair(u8, u8),
        Named { x: String },
    }

    fn both<T: for<'de> Deserialize<'de> + std::fmt::Debug + PartialEq>(text: &str) -> (T, T) {
        let document = FlatDocument::parse(text).expect("a document");
        let from_document = T::deserialize(document.root()).expect("read from the document");
        let from_text = serde_json::from_str(text).expect("read from the text");
        (from_document, from_text)
    }

    #[test]
    fn a_document_reads_as_its_text_reads() {
        let text = r#"{"name": "a\"b é", "count": null, "ratio": 2, "offset": -3,
            "kind": "second_one", "tagged": {"Named": {"x": "y"}}, "list": [true, null],
            "any": {"n": [1, -1, 1.5], "s": "t"}}"#;
        let (document, text) = both::<Sample>(text);
        assert_eq!(document, text);
        assert_eq!(document.kind, Kind::SecondOne);
        let (pair, _) = both::<Tagged>(r#"{"Pair": [1, 2]}"#);
        assert_eq!(pair, Tagged::Pair(1, 2));
        assert_eq!(both::<Kind>(r#""first""#).0, Kind::First);
    }

    #[test]
    fn what_the_text_refuses_the_document_refuses() {
        for text in [
            r#"{"name": "a", "ratio": 1, "offset": 0, "kind": "first", "tagged": {"Pair": [1, 2]}, "list": [], "any": 1, "extra": 1}"#,
            r#"{"name": "a", "count": 1.5, "ratio": 1, "offset": 0, "kind": "first", "tagged": {"Pair": [1, 2]}, "list": [], "any": 1}"#,
            r#"{"name": "a", "count": -1, "ratio": 1, "offset": 0, "kind": "first", "tagged": {"Pair": [1, 2]}, "list": [], "any": 1}"#,
            r#"{"name": "a", "ratio": 1, "offset": 0, "kind": "third", "tagged": {"Pair": [1, 2]}, "list": [], "any": 1}"#,
            r#"{"name": "a", "ratio": 1, "offset": 0, "kind": "first", "tagged": {"Pair": [1, 2, 3]}, "list": [], "any": 1}"#,
        ] {
            let document = FlatDocument::parse(text).expect("a document");
            assert!(Sample::deserialize(document.root()).is_err(), "{text}");
            assert!(serde_json::from_str::<Sample>(text).is_err(), "{text}");
        }
    }
}
