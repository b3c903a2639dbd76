//! JSON for user-written files, read without "last key wins": a key given twice in one object is
//! a mistake the user must hear about (one of the two values would be dropped silently), so the
//! reader here builds a `serde_json::Value` and notes the JSON path of every repeated key.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A step of a JSON path.
enum Step {
    Key(String),
    Index(usize),
}

/// Where the reader is, and the repeated keys found so far.
#[derive(Default)]
struct Walk {
    root: String,
    path: Vec<Step>,
    repeated: Vec<String>,
}

impl Walk {
    /// The current path below the root, in the suite's notation: `$.tasks[0].model`.
    fn path(&self) -> String {
        let mut out = self.root.clone();
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

/// Parses `text` as one JSON value; also returns the JSON path (from `root`, such as `$` or
/// `$.tasks[3]`) of every key that repeats one before it in the same object, in file order. The
/// value keeps the last of them.
pub fn parse_noting_repeats(
    text: &str,
    root: &str,
) -> Result<(Value, Vec<String>), serde_json::Error> {
    // Keys are rarely repeated: the value is read without following its path, and only a text
    // with a repeated key is read again to say where.
    let repeated = Cell::new(false);
    let value = parse(text, None, &repeated)?;
    if !repeated.get() {
        return Ok((value, Vec::new()));
    }
    let walk = RefCell::new(Walk {
        root: root.to_owned(),
        ..Walk::default()
    });
    let value = parse(text, Some(&walk), &repeated)?;
    Ok((value, walk.into_inner().repeated))
}

fn parse(
    text: &str,
    walk: Option<&RefCell<Walk>>,
    repeated: &Cell<bool>,
) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Seed { walk, repeated }.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Reads a value, noting whether a key repeats and, when `walk` is given, where.
#[derive(Clone, Copy)]
struct Seed<'w> {
    walk: Option<&'w RefCell<Walk>>,
    repeated: &'w Cell<bool>,
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
        let Some(walk) = self.walk else {
            while let Some(item) = seq.next_element_seed(self)? {
                items.push(item);
            }
            return Ok(Value::Array(items));
        };
        loop {
            walk.borrow_mut().path.push(Step::Index(items.len()));
            let item = seq.next_element_seed(self);
            walk.borrow_mut().path.pop();
            match item? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let Some(walk) = self.walk else {
                // One look-up a key: the entry is found before its value is read.
                let entry = map.entry(key);
                let value = access.next_value_seed(self)?;
                match entry {
                    serde_json::map::Entry::Vacant(vacant) => _ = vacant.insert(value),
                    serde_json::map::Entry::Occupied(mut occupied) => {
                        self.repeated.set(true);
                        occupied.insert(value);
                    }
                }
                continue;
            };
            let repeated = map.contains_key(&key);
            let mut walk = walk.borrow_mut();
            walk.path.push(Step::Key(key));
            if repeated {
                let path = walk.path();
                walk.repeated.push(path);
            }
            drop(walk);
            let value = access.next_value_seed(self);
            let Some(Step::Key(key)) = self.walk.and_then(|w| w.borrow_mut().path.pop()) else {
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
            "$",
        )
        .unwrap();
        assert_eq!(repeated, ["$.t[0].x.y", "$.a", "$.a"]);
        assert_eq!(value["a"], 4);
        assert_eq!(value["t"][0]["x"]["y"], 2);
    }

    #[test]
    fn the_value_is_what_serde_json_reads() {
        let text = r#"{"n": [1, -2, 3.5, 18446744073709551615, "s", null, true, {}], "e": []}"#;
        let (value, repeated) = parse_noting_repeats(text, "$").unwrap();
        assert!(repeated.is_empty());
        assert_eq!(value, serde_json::from_str::<Value>(text).unwrap());
    }
}
