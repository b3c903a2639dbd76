//! A scripted call's arguments held as compact JSON text, written as they are read from any
//! deserializer (a task's text, its flat document or a value): no map is built and written back.

use std::fmt;

use serde::Serializer as _;
use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The value `deserializer` holds as compact JSON text; `None` for `null`.
pub fn compact<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Box<RawValue>>, D::Error> {
    let mut out = Vec::with_capacity(64);
    deserializer.deserialize_any(Write(&mut out))?;
    if out == b"null" {
        return Ok(None);
    }
    let out = String::from_utf8(out).map_err(D::Error::custom)?;
    RawValue::from_string(out)
        .map(Some)
        .map_err(D::Error::custom)
}

/// Appends one value's compact text, each piece written by `serde_json`'s own serializer.
struct Write<'o>(&'o mut Vec<u8>);

impl Write<'_> {
    fn serializer(&mut self) -> serde_json::Serializer<&mut Vec<u8>> {
        serde_json::Serializer::new(&mut *self.0)
    }

    fn string(mut self, text: &str) {
        // Writing to memory cannot fail.
        let _ = self.serializer().serialize_str(text);
    }
}

impl<'de> DeserializeSeed<'de> for Write<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Write<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn visit_i64<E>(mut self, v: i64) -> Result<(), E> {
        let _ = self.serializer().serialize_i64(v);
        Ok(())
    }

    fn visit_u64<E>(mut self, v: u64) -> Result<(), E> {
        let _ = self.serializer().serialize_u64(v);
        Ok(())
    }

    fn visit_f64<E>(mut self, v: f64) -> Result<(), E> {
        // As `serde_json` writes a number it read: a float that is not finite is `null`.
        let _ = self.serializer().serialize_f64(v);
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.string(v);
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push(b'[');
        let mut first = true;
        loop {
            let mark = self.0.len();
            if !first {
                self.0.push(b',');
            }
            if seq.next_element_seed(Write(&mut *self.0))?.is_none() {
                self.0.truncate(mark);
                break;
            }
            first = false;
        }
        self.0.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.push(b'{');
        let mut first = true;
        loop {
            let mark = self.0.len();
            if !first {
                self.0.push(b',');
            }
            if map.next_key_seed(Key(&mut *self.0))?.is_none() {
                self.0.truncate(mark);
                break;
            }
            first = false;
            self.0.push(b':');
            map.next_value_seed(Write(&mut *self.0))?;
        }
        self.0.push(b'}');
        Ok(())
    }
}

/// Writes a member's name, borrowed or not, without holding it.
struct Key<'o>(&'o mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        Write(self.0).string(v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compacted(text: &str) -> Option<String> {
        let mut de = serde_json::Deserializer::from_str(text);
        compact(&mut de).unwrap().map(|raw| raw.get().to_owned())
    }

    #[test]
    fn a_value_is_written_without_whitespace_and_the_same_from_a_value() {
        let text = "{\n  \"q\": \"two  words\\\" é\",\n  \"n\": [1, -2, 2.5, {}, []],\n  \"b\": [true, null]\n}";
        let expected = r#"{"q":"two  words\" é","n":[1,-2,2.5,{},[]],"b":[true,null]}"#;
        assert_eq!(compacted(text).as_deref(), Some(expected));
        assert_eq!(compacted("null"), None);
        let value: serde_json::Value = serde_json::from_str(r#"{"a": [1, "x"]}"#).unwrap();
        let raw = compact(value).unwrap().unwrap();
        assert_eq!(raw.get(), r#"{"a":[1,"x"]}"#);
    }
}
