//! The layout of `results.json`: pretty JSON, except that each element of a top-level array (a
//! task's row, a missing shard) is written compact on one line. A results file of many thousand
//! tasks then reads and greps a row at a time, and rows read back from the partial file, already
//! compact, are copied into it as they are instead of being parsed and printed again.

use std::io::{self, Write};

use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// Pretty JSON with one line per element of each top-level array.
pub struct RowsPerLine {
    pretty: PrettyFormatter<'static>,
    /// Whether each open container is an array, outermost first.
    open: Vec<bool>,
    /// How many containers were open when the compact element began.
    compact_from: Option<usize>,
}

impl RowsPerLine {
    pub fn new() -> RowsPerLine {
        RowsPerLine {
            pretty: PrettyFormatter::new(),
            open: Vec::new(),
            compact_from: None,
        }
    }

    /// Opens a container: compact if it is an element of an array that is a member of the
    /// top-level object, or lies inside one.
    fn begin(&mut self, is_array: bool) -> bool {
        if self.compact_from.is_none() && self.open == [false, true] {
            self.compact_from = Some(self.open.len());
        }
        self.open.push(is_array);
        self.compact_from.is_some()
    }

    /// Closes a container; says whether it was written compact.
    fn end(&mut self) -> bool {
        self.open.pop();
        let compact = self.compact_from.is_some();
        if self.compact_from == Some(self.open.len()) {
            self.compact_from = None;
        }
        compact
    }

    fn compact(&self) -> bool {
        self.compact_from.is_some()
    }
}

impl Default for RowsPerLine {
    fn default() -> Self {
        RowsPerLine::new()
    }
}

/// Calls the compact formatter's method when `$compact` holds, the pretty one's otherwise.
macro_rules! either {
    ($self:ident, $compact:expr, $method:ident($($arg:expr),*)) => {
        if $compact {
            CompactFormatter.$method($($arg),*)
        } else {
            $self.pretty.$method($($arg),*)
        }
    };
}

impl Formatter for RowsPerLine {
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        either!(self, self.begin(true), begin_array(writer))
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        either!(self, self.end(), end_array(writer))
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        either!(self, self.compact(), begin_array_value(writer, first))
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        either!(self, self.compact(), end_array_value(writer))
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        either!(self, self.begin(false), begin_object(writer))
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        either!(self, self.end(), end_object(writer))
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        either!(self, self.compact(), begin_object_key(writer, first))
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        either!(self, self.compact(), begin_object_value(writer))
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        either!(self, self.compact(), end_object_value(writer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(value: &serde_json::Value) -> String {
        let mut out = Vec::new();
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, RowsPerLine::new());
        serde::Serialize::serialize(value, &mut serializer).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn elements_of_top_level_arrays_take_one_line_each() {
        let value = json!({
            "a": {"b": [1, 2]},
            "tasks": [{"id": "x", "n": [1, {"k": null}]}, {"id": "y"}],
            "empty": [],
            "strings": ["s"]
        });
        assert_eq!(
            write(&value),
            "{\n  \"a\": {\n    \"b\": [\n      1,\n      2\n    ]\n  },\n  \"empty\": [],\n  \
             \"strings\": [\n    \"s\"\n  ],\n  \
             \"tasks\": [\n    {\"id\":\"x\",\"n\":[1,{\"k\":null}]},\n    {\"id\":\"y\"}\n  ]\n}"
        );
        let back: serde_json::Value = serde_json::from_str(&write(&value)).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn raw_rows_are_copied_as_they_are() {
        #[derive(serde::Serialize)]
        struct File {
            tasks: Vec<Box<serde_json::value::RawValue>>,
        }
        let row = "{\"id\":\"x\",  \"n\": 1}";
        let file = File {
            tasks: vec![serde_json::value::RawValue::from_string(row.to_owned()).unwrap()],
        };
        let mut out = Vec::new();
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, RowsPerLine::new());
        serde::Serialize::serialize(&file, &mut serializer).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{{\n  \"tasks\": [\n    {row}\n  ]\n}}")
        );
    }
}
