//! The importer trait, and the reading helpers every format shares: one JSON document with a size
//! limit, or JSONL line by line, each failure naming the file and the line or JSON path.

use std::io::{BufRead, Read};

use serde_json::Value;

use super::error::ImportError;
use super::run::ImportedRun;
use crate::trace::Event;

/// The largest document (or `.eval` archive, or archive member) read into memory.
pub const MAX_DOCUMENT_BYTES: u64 = 512 * 1024 * 1024;

/// What an importer hands on, as soon as it is complete.
// Each value is moved once into the sink, never stored in bulk: the size difference is harmless.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Imported {
    /// A run read from a foreign format.
    Run(ImportedRun),
    /// A looptrace event, passed through as it is.
    Event(Box<Event>),
    /// Something the user should know that is not worth failing for (a duplicate entry).
    Warning(String),
}

/// Where each imported run or event goes.
pub type Sink<'a> = dyn FnMut(Imported) -> Result<(), ImportError> + 'a;

/// The file being imported.
#[derive(Debug, Clone)]
pub struct Context {
    /// The file as the user named it (for messages).
    pub file: String,
    /// The file name only (for run ids and `source.file`: never a path).
    pub name: String,
}

impl Context {
    /// A malformed-input error at `at`.
    pub fn malformed(&self, at: impl Into<String>, message: impl Into<String>) -> ImportError {
        ImportError::malformed(&self.file, at, message)
    }

    /// A run id unique across files: the file name, plus `suffix` when the file holds several runs.
    pub fn run_id(&self, suffix: Option<&str>) -> String {
        match suffix {
            Some(suffix) => format!("{}/{suffix}", self.name),
            None => self.name.clone(),
        }
    }
}

/// One trace format: a probe that says how sure it is a file is this format, and an importer that
/// turns the file into runs.
pub trait Importer: Sync {
    /// The `--from` name.
    fn name(&self) -> &'static str;

    /// Confidence from 0 (not this format) to 100 that a file with this name, starting with
    /// `head`, is this format.
    fn probe(&self, name: &str, head: &[u8]) -> u8;

    /// Reads the whole input, giving each run to `out` as soon as it is complete.
    fn import(
        &self,
        input: &mut dyn BufRead,
        context: &Context,
        out: &mut Sink<'_>,
    ) -> Result<(), ImportError>;
}

/// Reads at most [`MAX_DOCUMENT_BYTES`] of `input`.
pub fn read_bytes(input: &mut dyn BufRead, context: &Context) -> Result<Vec<u8>, ImportError> {
    let mut bytes = Vec::new();
    input
        .take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ImportError::Read {
            file: context.file.clone(),
            source,
        })?;
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(context.malformed(
            "the document",
            format!("larger than the limit of {MAX_DOCUMENT_BYTES} bytes"),
        ));
    }
    Ok(bytes)
}

/// Parses `bytes` as one JSON document.
pub fn parse_document(bytes: &[u8], context: &Context, what: &str) -> Result<Value, ImportError> {
    serde_json::from_slice(bytes).map_err(|err| {
        context.malformed(
            format!("{what}line {} column {}", err.line(), err.column()),
            format!("invalid JSON: {}", plain(&err)),
        )
    })
}

/// Reads the whole input as one JSON document.
pub fn read_document(input: &mut dyn BufRead, context: &Context) -> Result<Value, ImportError> {
    let bytes = read_bytes(input, context)?;
    parse_document(&bytes, context, "")
}

/// Calls `each` with every line of the input (without its `\n`) and its number.
pub fn for_each_raw_line(
    input: &mut dyn BufRead,
    context: &Context,
    mut each: impl FnMut(u64, &[u8]) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let read = input
            .read_until(b'\n', &mut line)
            .map_err(|source| ImportError::Read {
                file: context.file.clone(),
                source,
            })?;
        if read == 0 {
            return Ok(());
        }
        number += 1;
        each(number, line.strip_suffix(b"\n").unwrap_or(&line))?;
    }
}

/// Calls `each` with every non-blank line of JSONL input parsed as a JSON object, and its number.
pub fn for_each_line(
    input: &mut dyn BufRead,
    context: &Context,
    each: impl FnMut(u64, Value) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    for_each_object_line(input, context, None, each)
}

/// Like [`for_each_line`], keeping only the top-level members named in `keys`: the others are
/// checked as JSON and skipped without being built, which saves most of the work on formats
/// that repeat bulky content the importer does not read (Claude Code's `toolUseResult`).
pub fn for_each_line_keeping(
    input: &mut dyn BufRead,
    context: &Context,
    keys: &[&str],
    each: impl FnMut(u64, Value) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    for_each_object_line(input, context, Some(keys), each)
}

fn for_each_object_line(
    input: &mut dyn BufRead,
    context: &Context,
    keys: Option<&[&str]>,
    mut each: impl FnMut(u64, Value) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    for_each_raw_line(input, context, |number, line| {
        let text = line.trim_ascii();
        if text.is_empty() {
            return Ok(());
        }
        let invalid = |err: serde_json::Error| {
            context.malformed(
                format!("line {number}"),
                format!("invalid JSON: {}", plain(&err)),
            )
        };
        let value = match keys {
            None => serde_json::from_slice(text).map_err(invalid)?,
            Some(keys) => {
                let mut de = serde_json::Deserializer::from_slice(text);
                let kept = serde::de::DeserializeSeed::deserialize(KeptMembers(keys), &mut de)
                    .and_then(|kept| de.end().map(|()| kept))
                    .map_err(invalid)?;
                kept.map_or(Value::Null, Value::Object)
            }
        };
        if !value.is_object() {
            return Err(context.malformed(format!("line {number}"), "expected a JSON object"));
        }
        each(number, value)
    })
}

/// Reads a JSON value: an object with only the members named in `.0` (the others are read and
/// dropped), or `None` for any other value.
struct KeptMembers<'k>(&'k [&'k str]);

impl<'de> serde::de::DeserializeSeed<'de> for KeptMembers<'_> {
    type Value = Option<serde_json::Map<String, Value>>;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeptMembers<'_> {
    type Value = Option<serde_json::Map<String, Value>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = serde_json::Map::new();
        while let Some(key) = map.next_key_seed(KeyIfKept(self.0))? {
            match key {
                Some(key) => {
                    kept.insert(key, map.next_value()?);
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(Some(kept))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A member name: `Some` if it is one of the kept names.
struct KeyIfKept<'k>(&'k [&'k str]);

impl<'de> serde::de::DeserializeSeed<'de> for KeyIfKept<'_> {
    type Value = Option<String>;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeyIfKept<'_> {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.contains(&key).then(|| key.to_owned()))
    }
}

/// The first non-whitespace byte of the input, without consuming anything.
pub fn peek_first_byte(
    input: &mut dyn BufRead,
    context: &Context,
) -> Result<Option<u8>, ImportError> {
    let head = input.fill_buf().map_err(|source| ImportError::Read {
        file: context.file.clone(),
        source,
    })?;
    Ok(first_byte(head))
}

/// A serde_json error without its position (the caller names the place).
fn plain(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// The string at `key`, if it is one.
pub fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// Message content as text: a string, or the text of a list of blocks, or the JSON itself.
pub fn text_of(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|block| match block {
                Value::String(text) => Some(text.as_str()),
                other => str_at(other, "text"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
    }
}

/// The head as text, for probes (invalid UTF-8 is replaced).
pub fn head_text(head: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(head)
}

/// The first non-whitespace byte of the head.
pub fn first_byte(head: &[u8]) -> Option<u8> {
    head.iter().copied().find(|b| !b.is_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(input: &str) -> Result<Vec<(u64, Value)>, String> {
        let context = Context {
            file: "s.jsonl".to_owned(),
            name: "s.jsonl".to_owned(),
        };
        let mut lines = Vec::new();
        for_each_line_keeping(
            &mut input.as_bytes(),
            &context,
            &["type", "message"],
            |n, v| {
                lines.push((n, v));
                Ok(())
            },
        )
        .map_err(|err| err.to_string())?;
        Ok(lines)
    }

    #[test]
    fn keeping_reads_only_the_named_members() {
        let lines = kept(concat!(
            "{\"type\":\"user\",\"toolUseResult\":{\"stdout\":\"x\\ny\",\"n\":[1,2e400]},",
            "\"message\":{\"content\":\"hi\"},\"uuid\":\"u\"}\n",
            "\n",
            "{\"type\":\"a\",\"type\":\"b\"}\n",
        ))
        .unwrap();
        assert_eq!(
            lines,
            [
                (
                    1,
                    serde_json::json!({"type": "user", "message": {"content": "hi"}})
                ),
                (3, serde_json::json!({"type": "b"})),
            ]
        );
    }

    #[test]
    fn keeping_still_rejects_what_is_not_a_json_object() {
        let bad_member = kept("{\"type\":\"user\",\"toolUseResult\":{\"a\":tru}}\n").unwrap_err();
        assert!(bad_member.contains("line 1"), "{bad_member}");
        assert!(bad_member.contains("invalid JSON"), "{bad_member}");
        let trailing = kept("{\"type\":\"user\"} x\n").unwrap_err();
        assert!(trailing.contains("invalid JSON"), "{trailing}");
        for not_object in ["[1,2]", "\"text\"", "3", "null", "true"] {
            let err = kept(not_object).unwrap_err();
            assert!(
                err.contains("expected a JSON object"),
                "{not_object}: {err}"
            );
        }
    }
}
