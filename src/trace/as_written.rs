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
    let mut pairs = Pairs::new(line);
    let collected = pairs.by_ref().map(|pair| (pair.key, pair.value)).collect();
    pairs.ended_well().then_some(collected)
}

/// The top-level pairs of a line written without whitespace (as serde_json writes), found in
/// one pass; check [`Pairs::ended_well`] once they are read.
pub(crate) fn pairs(line: &[u8]) -> Pairs<'_> {
    Pairs::new(line)
}

/// One top-level `"key":value` of a line written without whitespace.
pub(crate) struct Pair<'a> {
    /// The key, as written (a key with escapes ends the pairs).
    pub(crate) key: &'a [u8],
    /// The raw value.
    pub(crate) value: &'a [u8],
    /// A string whose escapes are all ones serde_json writes (false for other values).
    serde_string: bool,
}

/// The top-level pairs of a line written without whitespace, found in one pass: strings are
/// jumped through from one `"` or `\` to the next, their escapes checked on the way.
pub(crate) struct Pairs<'a> {
    line: &'a [u8],
    at: usize,
    /// `Some(true)` once the closing brace ended the line, `Some(false)` once it was not that.
    ended: Option<bool>,
}

impl<'a> Pairs<'a> {
    fn new(line: &'a [u8]) -> Self {
        match expect(line, 0, b'{') {
            Some(at) => Pairs {
                line,
                at,
                ended: None,
            },
            None => Pairs {
                line,
                at: 0,
                ended: Some(false),
            },
        }
    }

    /// Whether every pair was read and the object closed at the end of the line.
    pub(crate) fn ended_well(&self) -> bool {
        self.ended == Some(true)
    }

    fn pair(&mut self) -> Option<Pair<'a>> {
        let line = self.line;
        let key_start = expect(line, self.at, b'"')?;
        let key_end = key_start + memchr::memchr2(b'"', b'\\', &line[key_start..])?;
        if line[key_end] != b'"' {
            return None;
        }
        let value_start = expect(line, key_end + 1, b':')?;
        let (value_end, serde_string) = match line.get(value_start) {
            Some(b'"') => string_walk(line, value_start + 1)?,
            _ => (value_end(line, value_start)?, false),
        };
        match line.get(value_end) {
            Some(b',') => self.at = value_end + 1,
            Some(b'}') if value_end + 1 == line.len() => self.ended = Some(true),
            _ => return None,
        }
        Some(Pair {
            key: &line[key_start..key_end],
            value: &line[value_start..value_end],
            serde_string,
        })
    }
}

impl<'a> Iterator for Pairs<'a> {
    type Item = Pair<'a>;

    fn next(&mut self) -> Option<Pair<'a>> {
        if self.ended.is_some() {
            return None;
        }
        let pair = self.pair();
        if pair.is_none() {
            self.ended = Some(false);
        }
        pair
    }
}

/// Whether `line` (a well-formed trace line, without its `\n`) is exactly what writing its event
/// gives.
pub(crate) fn is_as_written(line: &[u8]) -> bool {
    let mut pairs = Pairs::new(line);
    // Every line starts with these three, in this order.
    let (Some(run_id), Some(step), Some(event_type)) = (pairs.next(), pairs.next(), pairs.next())
    else {
        return false;
    };
    if (run_id.key, step.key, event_type.key) != (b"run_id", b"step", b"event_type")
        || !run_id.serde_string
        || !value_as_written("step", Shape::Integer, &step)
    {
        return false;
    }
    let [b'"', event_type @ .., b'"'] = event_type.value else {
        return false;
    };
    let Some(kind) = table()
        .iter()
        .find(|kind| kind.event_type.as_bytes() == event_type)
    else {
        return false;
    };
    // The fields after the first three, each after the one before in the writer's order.
    let mut fields = kind.fields.iter().skip(3);
    pairs.by_ref().all(|pair| {
        fields
            .find(|(name, _)| name.as_bytes() == pair.key)
            .is_some_and(|(name, shape)| value_as_written(name, *shape, &pair))
    }) && pairs.ended_well()
}

fn value_as_written(name: &'static str, shape: Shape, pair: &Pair<'_>) -> bool {
    let value = pair.value;
    match shape {
        Shape::Text => pair.serde_string,
        Shape::Bool => value == b"true" || value == b"false",
        Shape::Integer if small_integer(value) => true,
        Shape::Nested if name == MAP_FIELD => is_canonical_map(value),
        Shape::Integer | Shape::Name | Shape::Nested => seen_written_alone(name, value),
        Shape::Float => float_as_written(value),
    }
}

/// Whether `value` is a JSON object exactly as serde_json writes the `serde_json::Map` it reads
/// from it (so writing it again gives the same bytes).
pub(crate) fn is_canonical_map(value: &[u8]) -> bool {
    value.first() == Some(&b'{')
        && map_written_sorted()
        && canonical_value(value, 0) == Some(value.len())
}

/// The field whose value is a `serde_json::Map` of any JSON: as written when it is JSON in the
/// canonical form that [`canonical_value`] checks (a test holds the two together).
const MAP_FIELD: &str = "arguments";

/// Whether serde_json writes a map's keys sorted (its `BTreeMap`), read from the writer once:
/// with the `preserve_order` feature it keeps the order read, which [`canonical_value`] cannot
/// check (it would have to know a key repeated).
fn map_written_sorted() -> bool {
    static SORTED: OnceLock<bool> = OnceLock::new();
    *SORTED.get_or_init(|| {
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(r#"{"b":1,"a":2}"#)
            .ok()
            .and_then(|map| serde_json::to_string(&map).ok())
            .is_some_and(|written| written == r#"{"a":2,"b":1}"#)
    })
}

/// Nesting beyond which [`canonical_value`] leaves the verdict to serde (whose own limit then
/// decides how such arguments read).
const CANONICAL_DEPTH: usize = 64;

/// Where the JSON value at the start of `bytes` ends, if it is exactly as serde_json writes
/// a `serde_json::Value` it read: no whitespace, object keys without escapes in strictly rising
/// order, strings escaped as serde_json escapes, integers without a sign or zeros it would drop
/// and within its integer types, floats as it prints them.
fn canonical_value(bytes: &[u8], depth: usize) -> Option<usize> {
    if depth > CANONICAL_DEPTH {
        return None;
    }
    match *bytes.first()? {
        b'"' => match string_walk(bytes, 1)? {
            (end, true) => Some(end),
            _ => None,
        },
        b'{' if bytes.get(1) == Some(&b'}') => Some(2),
        b'{' => {
            let mut at = 1;
            let mut last: Option<&[u8]> = None;
            loop {
                let key_start = expect(bytes, at, b'"')?;
                let key_end = key_start + memchr::memchr2(b'"', b'\\', &bytes[key_start..])?;
                let key = &bytes[key_start..key_end];
                if bytes[key_end] != b'"' || last.is_some_and(|last| last >= key) {
                    return None;
                }
                last = Some(key);
                let value_start = expect(bytes, key_end + 1, b':')?;
                let value_end = value_start + canonical_value(&bytes[value_start..], depth + 1)?;
                match bytes.get(value_end)? {
                    b',' => at = value_end + 1,
                    b'}' => return Some(value_end + 1),
                    _ => return None,
                }
            }
        }
        b'[' if bytes.get(1) == Some(&b']') => Some(2),
        b'[' => {
            let mut at = 1;
            loop {
                at += canonical_value(&bytes[at..], depth + 1)?;
                match bytes.get(at)? {
                    b',' => at += 1,
                    b']' => return Some(at + 1),
                    _ => return None,
                }
            }
        }
        b't' if bytes.starts_with(b"true") => Some(4),
        b'f' if bytes.starts_with(b"false") => Some(5),
        b'n' if bytes.starts_with(b"null") => Some(4),
        _ => {
            let len = bytes
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .unwrap_or(bytes.len());
            let number = &bytes[..len];
            let canonical = if number.iter().any(|b| matches!(b, b'.' | b'e' | b'E')) {
                float_as_written(number)
            } else {
                integer_as_written(number)
            };
            canonical.then_some(len)
        }
    }
}

/// An integer serde_json reads as one (within `u64`, or `i64` when negative) and writes back
/// the same: no leading zeros, no `-0`.
fn integer_as_written(number: &[u8]) -> bool {
    let digits = number.strip_prefix(b"-").unwrap_or(number);
    let plain = match digits {
        [b'0'] => number.len() == 1,
        [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    plain
        && std::str::from_utf8(number).is_ok_and(|text| {
            if number[0] == b'-' {
                text.parse::<i64>().is_ok()
            } else {
                text.parse::<u64>().is_ok()
            }
        })
}

/// A field's name and a value of it found to be written back the same.
type SeenValue = (&'static str, Box<[u8]>);

/// Values already found to be written back the same, by field: names and key lists repeat from
/// line to line, so serde is asked once for each. A few short values only, so memory stays flat.
fn seen_written_alone(name: &'static str, value: &[u8]) -> bool {
    const KEPT: usize = 64;
    const KEPT_LEN: usize = 128;
    thread_local! {
        static SEEN: std::cell::RefCell<Vec<SeenValue>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let short = value.len() <= KEPT_LEN;
    if short
        && SEEN.with_borrow(|seen| {
            seen.iter()
                .any(|(field, kept)| **kept == *value && *field == name)
        })
    {
        return true;
    }
    let written = written_alone(name, value);
    if written && short {
        SEEN.with_borrow_mut(|seen| {
            if seen.len() < KEPT {
                seen.push((name, value.into()));
            }
        });
    }
    written
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

/// Whether a JSON string (quotes included) is escaped exactly as serde_json escapes.
#[cfg(test)]
fn text_as_written(value: &[u8]) -> bool {
    value.first() == Some(&b'"') && string_walk(value, 1) == Some((value.len(), true))
}

/// From inside a string (just after its opening quote): the position after its closing quote,
/// and whether every escape on the way is one serde_json writes: `\"`, `\\`, `\b`, `\f`, `\n`,
/// `\r`, `\t`, and `\u00xx` (lowercase) for the other control characters.
fn string_walk(line: &[u8], mut at: usize) -> Option<(usize, bool)> {
    let mut serde = true;
    loop {
        let i = at + memchr::memchr2(b'"', b'\\', line.get(at..)?)?;
        if line[i] == b'"' {
            return Some((i + 1, serde));
        }
        match *line.get(i + 1)? {
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => {}
            b'u' => serde &= serde_unicode_escape(line.get(i + 2..i + 6)),
            _ => serde = false,
        }
        at = i + 2;
    }
}

/// Whether the four hex digits of a `\u` escape are one serde_json writes: a control character
/// without a short escape, in lower case.
fn serde_unicode_escape(hex: Option<&[u8]>) -> bool {
    let Some([b'0', b'0', high, low]) = hex else {
        return false;
    };
    let short = matches!((high, low), (b'0', b'8' | b'9' | b'a' | b'c' | b'd'));
    matches!(high, b'0' | b'1') && (low.is_ascii_digit() || matches!(low, b'a'..=b'f')) && !short
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
    fn arguments_are_as_written_exactly_when_serde_writes_them_back_the_same() {
        assert!(map_written_sorted());
        for value in [
            r#"{}"#,
            r#"{"a":1,"b":"x"}"#,
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":[],"b":[1,-2,3.5,true,false,null,{"c":{}}]}"#,
            r#"{"a":1.0,"b":1e5,"c":0.1,"d":-0.0,"e":1E2}"#,
            r#"{"a":-0,"b":007,"c":18446744073709551615,"d":18446744073709551616}"#,
            r#"{"a":-9223372036854775808,"b":-9223372036854775809}"#,
            r#"{"a":"\/","b":"é","c":"","d":"
"\"}"#,
            r#"{"ab":1}"#,
            r#"{"é":1,"z":2}"#,
            r#"{"z":1,"é":2}"#,
            r#"{"a": 1}"#,
            r#"{"a":[1 ,2]}"#,
            r#"{"n":1e999}"#,
        ] {
            let pair = Pair {
                key: b"arguments",
                value: value.as_bytes(),
                serde_string: false,
            };
            assert_eq!(
                value_as_written(MAP_FIELD, Shape::Nested, &pair),
                written_alone(MAP_FIELD, value.as_bytes()),
                "{value}"
            );
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
            let pair = Pair {
                key: name.as_bytes(),
                value: value.as_bytes(),
                serde_string: false,
            };
            assert_eq!(value_as_written(name, shape, &pair), expected, "{value}");
        }
    }
}
