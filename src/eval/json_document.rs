//! The JSON report as it is written: a `Value` for what is small, and the arrays with an element
//! per task made one element at a time while the document is serialized, so a report of a
//! million tasks never holds them. Keys come out sorted, as a `Value`'s do, so the document is
//! the one a `Value` holding everything would print.

use std::collections::BTreeMap;

use serde::ser::{Error, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Gives each element of an array in turn to the callback, until it returns false.
pub(super) type Elements<'r> = Box<dyn Fn(&mut dyn FnMut(Value) -> bool) + 'r>;

/// A part of the JSON report.
pub(super) enum JsonDocument<'r> {
    /// Held whole.
    Value(Value),
    /// An object of parts, written in its keys' order.
    Object(BTreeMap<String, JsonDocument<'r>>),
    /// An array made as it is written.
    Each(Elements<'r>),
}

impl<'r> JsonDocument<'r> {
    /// The parts of `value`, an object (anything else is held whole).
    pub(super) fn of(value: Value) -> JsonDocument<'r> {
        match value {
            Value::Object(map) => JsonDocument::Object(
                (map.into_iter())
                    .map(|(key, value)| (key, JsonDocument::Value(value)))
                    .collect(),
            ),
            value => JsonDocument::Value(value),
        }
    }

    /// Sets `key` of an object (nothing for anything else).
    pub(super) fn insert(&mut self, key: &str, part: JsonDocument<'r>) {
        if let JsonDocument::Object(parts) = self {
            parts.insert(key.to_owned(), part);
        }
    }
}

impl Serialize for JsonDocument<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            JsonDocument::Value(value) => value.serialize(serializer),
            JsonDocument::Object(parts) => {
                let mut map = serializer.serialize_map(Some(parts.len()))?;
                for (key, part) in parts {
                    map.serialize_entry(key, part)?;
                }
                map.end()
            }
            JsonDocument::Each(elements) => {
                let mut seq = serializer.serialize_seq(None)?;
                let mut failed = None;
                elements(&mut |element| match seq.serialize_element(&element) {
                    Ok(()) => true,
                    Err(err) => {
                        failed = Some(err.to_string());
                        false
                    }
                });
                if let Some(message) = failed {
                    return Err(S::Error::custom(message));
                }
                seq.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_document_prints_as_the_value_holding_everything() {
        let whole = json!({
            "b": [1, 2, 3],
            "a": {"tasks": [{"id": "x", "rate": 0.5}, {"id": "y", "rate": 1.0}], "suite": 3},
            "c": [],
        });
        let mut document = JsonDocument::of(json!({"b": [1, 2, 3], "c": []}));
        let tasks: Elements<'_> = Box::new(|each| {
            for (id, rate) in [("x", 0.5), ("y", 1.0)] {
                if !each(json!({"id": id, "rate": rate})) {
                    break;
                }
            }
        });
        let mut statistics = JsonDocument::of(json!({"suite": 3}));
        statistics.insert("tasks", JsonDocument::Each(tasks));
        document.insert("a", statistics);
        let empty: Elements<'_> = Box::new(|_| {});
        document.insert("c", JsonDocument::Each(empty));
        assert_eq!(
            serde_json::to_string_pretty(&document).unwrap(),
            serde_json::to_string_pretty(&whole).unwrap()
        );
    }
}
