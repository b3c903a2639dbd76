//! Whether a trace line is already, byte for byte, what writing its event again would give:
//! the fields its event type keeps, in the order `wire.rs` writes them, no whitespace, strings
//! escaped as serde_json escapes them, numbers as serde_json prints them. `show -f json` copies
//! such a line through instead of parsing and writing it again (the lines looptrace writes all
//! are); any other line takes the serde path, so the output is the same either way.
//!
//! The order and kind of each field are read once from the writer itself (one event of every
//! kind with every field set, written through the line shape), so a field added to the format
//! needs no change here. Strings are checked with a jump to the next `"` or `\`; values other
//! than strings, booleans and small integers (objects, arrays, enum names, floats, large
//! integers) are written again on their own and compared, which is cheap for their sizes.

use std::sync::OnceLock;

use super::event::Event;
use super::wire::Wire;

/// What a field's value is, as the writer prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Any text (`Cow<str>`): kept as it is read.
    Text,
    /// A closed set of names (`capture`, `hash`, `exit_reason`): checked by writing it again.
    Name,
    /// An integer.
    Integer,
    /// A float (`duration_ms`, `cost_usd`): serde_json prints it its own way (`1500.0`).
    Float,
    /// `true` or `false`.
    Bool,
    /// An object or array: checked by writing it again.
    Nested,
}

/// The fields one event type keeps, in the order they are written.
struct KindFields {
    event_type: &'static str,
    fields: Vec<(&'static str, Shape)>,
}

/// The fields of every known event type, read from the writer once.
fn table() -> &'static [KindFields] {
    static TABLE: OnceLock<Vec<KindFields>> = OnceLock::new();
    TABLE.get_or_init(|| {
        super::event_fields::every_kind()
            .into_iter()
            .filter_map(|kind| {
                let mut event = Event::new("", 0, kind);
                event.ts = Some(String::new());
                let line = serde_json::to_vec(&event).ok()?;
                let fields = top_level(&line)?
                    .into_iter()
                    .map(|(key, value)| (leak(key), shape_of(value)))
                    .collect();
                Some(KindFields {
                    event_type: leak(event.kind.name().as_bytes()),
                    fields,
                })
            })
            .collect()
    })
}

/// Names live as long as the table, which lives as long as the process.
fn leak(bytes: &[u8]) -> &'static str {
    Box::leak(String::from_utf8_lossy(bytes).into_owned().into_boxed_str())
}

fn shape_of(value: &[u8]) -> Shape {
    match value.first() {
        Some(b'"') if value == b"\"\"" => Shape::Text,
        Some(b'"') => Shape::Name,
        Some(b't' | b'f') => Shape::Bool,
        Some(b'{' | b'[') => Shape::Nested,
        _ if value.contains(&b'.') => Shape::Float,
        _ => Shape::Integer,
    }
}

/// The top-level keys and raw values of a line written by serde_json (no whitespace), or `None`
/// if it is not that.
pub(crate) fn top_level(line: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let mut pairs = Vec::new();
    let mut at = expect(line, 0, b'{')?;
    loop {
        let key_start = expect(line, at, b'"')?;
        let key_end = key_start + memchr::memchr2(b'"', b'\\', &line[key_start..])?;
        if line[key_end] != b'"' {
            return None;
        }
        let value_start = expect(line, key_end + 1, b':')?;
        let value_end = value_end(line, value_start)?;
        pairs.push((&line[key_start..key_end], &line[value_start..value_end]));
        match line.get(value_end) {
            Some(b',') => at = value_end + 1,
            Some(b'}') if value_end + 1 == line.len() => return Some(pairs),
            _ => return None,
        }
    }
}

/// Whether `line` (a well-formed trace line, without its `\n`) is exactly what writing its event
/// gives.
pub(crate) fn is_as_written(line: &[u8]) -> bool {
    let Some(pairs) = top_level(line) else {
        return false;
    };
    // Every line starts with these three, in this order.
    let [
        (b"run_id", run_id),
        (b"step", step),
        (b"event_type", event_type),
        rest @ ..,
    ] = pairs.as_slice()
    else {
        return false;
    };
    if !text_as_written(run_id) || !value_as_written("step", Shape::Integer, step) {
        return false;
    }
    let Some(kind) = table()
        .iter()
        .find(|kind| event_type == &format_name(kind.event_type))
    else {
        return false;
    };
    // The fields after the first three, each after the one before in the writer's order.
    let mut fields = kind.fields.iter().skip(3);
    rest.iter().all(|(key, value)| {
        fields
            .find(|(name, _)| name.as_bytes() == *key)
            .is_some_and(|(name, shape)| value_as_written(name, *shape, value))
    })
}

/// A name as a JSON string, quotes included; names have nothing to escape.
fn format_name(name: &str) -> Vec<u8> {
    let mut quoted = Vec::with_capacity(name.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(name.as_bytes());
    quoted.push(b'"');
    quoted
}

fn value_as_written(name: &str, shape: Shape, value: &[u8]) -> bool {
    match shape {
        Shape::Text => text_as_written(value),
        Shape::Bool => value == b"true" || value == b"false",
        Shape::Integer if small_integer(value) => true,
        Shape::Integer | Shape::Name | Shape::Nested => written_alone(name, value),
        Shape::Float => float_as_written(value),
    }
}

/// A non-negative integer without leading zeros below 65,536: every integer field (`u16` and
/// up, `i32`) writes it back the same.
fn small_integer(value: &[u8]) -> bool {
    match value {
        [b'0'] => true,
        [b'1'..=b'9', rest @ ..] => {
            rest.len() < 5 && rest.iter().all(u8::is_ascii_digit) && {
                value.len() < 5 || value <= b"65535".as_slice()
            }
        }
        _ => false,
    }
}

fn float_as_written(value: &[u8]) -> bool {
    // Read and printed by serde_json itself, whose float reading may differ from std's.
    serde_json::from_slice::<f64>(value)
        .ok()
        .and_then(|number| serde_json::to_vec(&number).ok())
        .is_some_and(|written| written == value)
}

/// Whether a value written again alone, in a line of its own, comes out the same.
fn written_alone(name: &str, value: &[u8]) -> bool {
    let mut line = Vec::with_capacity(value.len() + 48);
    line.extend_from_slice(b"{\"run_id\":\"\",\"step\":");
    if name == "step" {
        line.extend_from_slice(value);
        line.extend_from_slice(b",\"event_type\":\"\"}");
    } else {
        line.extend_from_slice(b"0,\"event_type\":\"\",\"");
        line.extend_from_slice(name.as_bytes());
        line.extend_from_slice(b"\":");
        line.extend_from_slice(value);
        line.push(b'}');
    }
    serde_json::from_slice::<Wire>(&line)
        .ok()
        .and_then(|wire| serde_json::to_vec(&wire).ok())
        .is_some_and(|written| written == line)
}

/// Whether a JSON string (quotes included) is escaped exactly as serde_json escapes: `\"`,
/// `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00xx` (lowercase) for the other control
/// characters; nothing else escaped.
fn text_as_written(value: &[u8]) -> bool {
    let [b'"', inner @ .., b'"'] = value else {
        return false;
    };
    let mut at = 0;
    while let Some(found) = memchr::memchr2(b'\\', b'"', &inner[at..]) {
        let i = at + found;
        if inner[i] == b'"' {
            // Only the closing quote may be unescaped.
            return false;
        }
        match inner.get(i + 1) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => at = i + 2,
            Some(b'u') => {
                let Some([b'0', b'0', high, low]) = inner.get(i + 2..i + 6) else {
                    return false;
                };
                let short = matches!((high, low), (b'0', b'8' | b'9' | b'a' | b'c' | b'd'));
                if !matches!(high, b'0' | b'1') || !low.is_ascii_hexdigit() || short {
                    return false;
                }
                if low.is_ascii_uppercase() {
                    return false;
                }
                at = i + 6;
            }
            _ => return false,
        }
    }
    true
}

fn expect(line: &[u8], at: usize, byte: u8) -> Option<usize> {
    (line.get(at) == Some(&byte)).then_some(at + 1)
}

/// Where the value starting at `start` ends (exclusive), skipping strings and nesting; `None`
/// if the line ends first.
fn value_end(line: &[u8], start: usize) -> Option<usize> {
    let mut at = start;
    let mut depth = 0usize;
    loop {
        match *line.get(at)? {
            b'"' => at = string_end(line, at + 1)?,
            b'{' | b'[' => {
                depth += 1;
                at += 1;
            }
            b'}' | b']' if depth == 0 => return Some(at),
            b'}' | b']' => {
                depth -= 1;
                at += 1;
            }
            b',' if depth == 0 => return Some(at),
            _ => at += 1,
        }
    }
}

/// The position after the closing quote of a string whose contents start at `at`.
fn string_end(line: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let i = at + memchr::memchr2(b'"', b'\\', line.get(at..)?)?;
        if line[i] == b'"' {
            return Some(i + 1);
        }
        at = i + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::event_fields::every_kind;

    #[test]
    fn every_known_kind_is_in_the_table() {
        assert_eq!(table().len(), every_kind().len());
        for kind in table() {
            let first: Vec<&str> = kind.fields.iter().take(3).map(|(name, _)| *name).collect();
            assert_eq!(
                first,
                ["run_id", "step", "event_type"],
                "{}",
                kind.event_type
            );
        }
    }

    #[test]
    fn every_field_of_every_kind_as_serde_writes_it_is_as_written() {
        for kind in every_kind() {
            let mut event = Event::new("r\n\"\u{1}é😀/", 7, kind);
            event.ts = Some("2026-12-07T00:00:00.000Z".to_owned());
            let line = serde_json::to_vec(&event).unwrap();
            assert!(is_as_written(&line), "{}", String::from_utf8_lossy(&line));
        }
    }

    #[test]
    fn strings_are_as_written_only_with_serde_json_escapes() {
        for written in [
            r#""""#,
            r#""a\"b\\c\n\t\r\b\f""#,
            r#""\u0000\u001f\u000b""#,
            "\"é😀\u{7f}/\"",
        ] {
            assert!(text_as_written(written.as_bytes()), "{written}");
        }
        for other in [
            r#""\/""#,
            r#""\u00e9""#,
            r#""\u001F""#,
            r#""\u000a""#,
            r#""\u0008""#,
            r#""\ud83d\ude00""#,
            "a",
            r#""a"#,
        ] {
            assert!(!text_as_written(other.as_bytes()), "{other}");
        }
    }

    #[test]
    fn numbers_are_as_written_as_serde_json_prints_them() {
        for (value, shape, expected) in [
            ("0", Shape::Integer, true),
            ("65535", Shape::Integer, true),
            ("4294967295", Shape::Integer, true),
            ("007", Shape::Integer, false),
            ("-0", Shape::Integer, false),
            ("1.0", Shape::Integer, false),
            ("1500.0", Shape::Float, true),
            ("1500", Shape::Float, false),
            ("1.5e3", Shape::Float, false),
            ("0.1", Shape::Float, true),
        ] {
            let name = if shape == Shape::Float {
                "duration_ms"
            } else {
                "max_steps"
            };
            assert_eq!(
                value_as_written(name, shape, value.as_bytes()),
                expected,
                "{value}"
            );
        }
    }
}
