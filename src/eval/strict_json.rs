//! JSON for user-written files, read without "last key wins": a key given twice in one object is
//! a mistake the user must hear about (one of the two values would be dropped silently), so the
//! reader here builds a `serde_json::Value` and notes the JSON path of every repeated key, and
//! the typed fast path's [`UniqueKeysText`] refuses an object with one without building it.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A step of a JSON path.
enum Step {
    Key(String),
    Index(usize),
}

/// Where the reader is, and the repeated keys found so far.
#[derive(Default)]
struct Walk {
    path: Vec<Step>,
    repeated: Vec<String>,
}

impl Walk {
    /// The current path below `root`, in the suite checker's notation: `$.tasks[0].model`.
    fn path(&self, root: &str) -> String {
        let mut out = root.to_owned();
        for step in &self.path {
            match step {
                Step::Key(key) => {
                    out.push('.');
                    out.push_str(key);
                }
                Step::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }
}

/// Parses `text` as one JSON value; also returns the JSON path (from `$`) of every key that
/// repeats one before it in the same object, in file order. The value keeps the last of them.
pub fn parse_noting_repeats(text: &str) -> Result<(Value, Vec<String>), serde_json::Error> {
    let walk = RefCell::new(Walk::default());
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Seed { walk: &walk }.deserialize(&mut de)?;
    de.end()?;
    Ok((value, walk.into_inner().repeated))
}

/// A JSON object kept as its text, for typed reading: walked once as [`parse_noting_repeats`]
/// reads a value (the same numbers, strings and escapes refused) without building it, and refused
/// when a key is given twice at any depth (the error only has to say that something is wrong; the
/// full checker then says where). Gives the text and how deep it nests (1 for an object of
/// scalars).
pub struct UniqueKeysText {
    pub text: Box<RawValue>,
    pub depth: usize,
}

impl<'de> serde::Deserialize<'de> for UniqueKeysText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Box::<RawValue>::deserialize(deserializer)?;
        if !text.get().starts_with('{') {
            return Err(de::Error::invalid_type(
                de::Unexpected::Other("not an object"),
                &"an object",
            ));
        }
        let Depth(depth) = serde_json::from_str(text.get()).map_err(de::Error::custom)?;
        Ok(UniqueKeysText { text, depth })
    }
}

/// How deep a walked JSON value nests: 0 for a scalar.
struct Depth(usize);

impl<'de> serde::Deserialize<'de> for Depth {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DepthWalk)
    }
}

struct DepthWalk;

impl<'de> Visitor<'de> for DepthWalk {
    type Value = Depth;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Depth, E> {
        Ok(Depth(0))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Depth, E> {
        Ok(Depth(0))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Depth, E> {
        Ok(Depth(0))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Depth, E> {
        Ok(Depth(0))
    }

    fn visit_str<E>(self, _: &str) -> Result<Depth, E> {
        Ok(Depth(0))
    }

    fn visit_unit<E>(self) -> Result<Depth, E> {
        Ok(Depth(0))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Depth, A::Error> {
        let mut deepest = 0;
        while let Some(Depth(depth)) = seq.next_element()? {
            deepest = deepest.max(depth);
        }
        Ok(Depth(deepest + 1))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Depth, A::Error> {
        // Objects are small: a list finds a repeat faster than a set, up to a few dozen keys.
        const LISTED: usize = 32;
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        let mut many: HashSet<Cow<'de, str>> = HashSet::new();
        let mut deepest = 0;
        while let Some(Key(key)) = access.next_key()? {
            let repeated = if many.is_empty() && keys.len() < LISTED {
                let repeated = keys.contains(&key);
                keys.push(key);
                repeated
            } else {
                many.extend(keys.drain(..));
                !many.insert(key)
            };
            if repeated {
                return Err(de::Error::custom("a key is given twice"));
            }
            let Depth(depth) = access.next_value()?;
            deepest = deepest.max(depth);
        }
        Ok(Depth(deepest + 1))
    }
}

/// An object key as the text holds it: borrowed unless it had escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyText;
        impl<'de> Visitor<'de> for KeyText {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyText)
    }
}

#[derive(Clone, Copy)]
struct Seed<'w> {
    walk: &'w RefCell<Walk>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.walk.borrow_mut().path.push(Step::Index(items.len()));
            let item = seq.next_element_seed(self);
            self.walk.borrow_mut().path.pop();
            match item? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let repeated = map.contains_key(&key);
            let mut walk = self.walk.borrow_mut();
            walk.path.push(Step::Key(key));
            if repeated {
                let path = walk.path("$");
                walk.repeated.push(path);
            }
            drop(walk);
            let value = access.next_value_seed(self);
            let Some(Step::Key(key)) = self.walk.borrow_mut().path.pop() else {
                return Err(de::Error::custom("the JSON path lost its step"));
            };
            map.insert(key, value?);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_noted_with_their_paths_at_any_depth() {
        let (value, repeated) = parse_noting_repeats(
            r#"{"a": 1, "t": [{"x": {"y": 1, "y": 2}}, {"b": 0}], "a": 3, "a": 4}"#,
        )
        .unwrap();
        assert_eq!(repeated, ["$.t[0].x.y", "$.a", "$.a"]);
        assert_eq!(value["a"], 4);
        assert_eq!(value["t"][0]["x"]["y"], 2);
    }

    #[test]
    fn the_value_is_what_serde_json_reads() {
        let text = r#"{"n": [1, -2, 3.5, 18446744073709551615, "s", null, true, {}], "e": []}"#;
        let (value, repeated) = parse_noting_repeats(text).unwrap();
        assert!(repeated.is_empty());
        assert_eq!(value, serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn typed_objects_refuse_a_repeated_key() {
        let read = |text: &str| serde_json::from_str::<UniqueKeysText>(text);
        assert!(read(r#"{"a": {"b": 1, "b": 1}}"#).is_err());
        assert!(read(r#"{"a": [{"b": 1, "\u0062": 1}]}"#).is_err());
        let many: Vec<String> = (0..100).map(|i| format!("\"k{i}\": {i}")).collect();
        assert!(read(&format!("{{{}}}", many.join(","))).is_ok());
        assert!(read(&format!("{{{}, \"k7\": 0}}", many.join(","))).is_err());
        assert!(read(&format!("{{{}, \"k70\": 0}}", many.join(","))).is_err());
        assert!(read("[1]").is_err());
        assert!(read(r#""{}""#).is_err());
        let read = read(r#"{"a": {"b": 1, "c": [[]]}, "d": 2}"#).unwrap();
        assert_eq!(
            (read.text.get(), read.depth),
            (r#"{"a": {"b": 1, "c": [[]]}, "d": 2}"#, 4)
        );
    }

    #[test]
    fn what_typed_objects_refuse_is_what_the_checker_refuses() {
        for text in [
            r#"{"n": 1e400}"#,
            r#"{"s": "\ud800"}"#,
            r#"{"s": "\x"}"#,
            r#"{"n": 01}"#,
            r#"{"a": 1,}"#,
        ] {
            assert!(parse_noting_repeats(text).is_err(), "{text}");
            assert!(
                serde_json::from_str::<UniqueKeysText>(text).is_err(),
                "{text}"
            );
        }
    }
}
