//! A scripted call's arguments held as compact JSON text, written as they are read from any
//! deserializer (a task's text, its flat document or a value): no map is built and written back.

use std::fmt::{self, Write as _};

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The value `deserializer` holds as compact JSON text; `None` for `null`.
pub fn compact<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Box<RawValue>>, D::Error> {
    let mut out = String::new();
    deserializer.deserialize_any(Write(&mut out))?;
    if out == "null" {
        return Ok(None);
    }
    RawValue::from_string(out)
        .map(Some)
        .map_err(D::Error::custom)
}

/// Appends one value's compact text.
struct Write<'o>(&'o mut String);

impl Write<'_> {
    fn string(&mut self, text: &str) {
        if let Ok(json) = serde_json::to_string(text) {
            self.0.push_str(&json);
        }
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
        self.0.push_str(if v { "true" } else { "false" });
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        let _ = write!(self.0, "{v}");
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        let _ = write!(self.0, "{v}");
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        // As `serde_json` writes a number it read: a float that is not finite is `null`.
        match serde_json::Number::from_f64(v) {
            Some(number) => {
                let _ = write!(self.0, "{number}");
            }
            None => self.0.push_str("null"),
        }
        Ok(())
    }

    fn visit_str<E>(mut self, v: &str) -> Result<(), E> {
        self.string(v);
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.push_str("null");
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        self.0.push_str("null");
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push('[');
        let mut first = true;
        loop {
            let mark = self.0.len();
            if !first {
                self.0.push(',');
            }
            if seq.next_element_seed(Write(&mut *self.0))?.is_none() {
                self.0.truncate(mark);
                break;
            }
            first = false;
        }
        self.0.push(']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.push('{');
        let mut first = true;
        while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if !first {
                self.0.push(',');
            }
            first = false;
            Write(&mut *self.0).string(&name);
            self.0.push(':');
            map.next_value_seed(Write(&mut *self.0))?;
        }
        self.0.push('}');
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
