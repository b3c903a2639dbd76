//! Where serde's reading of a line is looser than the trace format's one definition of a
//! well-formed line (the borrowed view's scanner, [`super::check_line`]), so that the trace reader
//! checks a line with the scanner only when serde's parse alone could have let a malformed one
//! through. serde checks the syntax of every value, the type of every field of the format and
//! duplicate fields, as the scanner does; it is looser in exactly these places
//! (`docs/report.md`, "Malformed means"):
//!
//! - a `\u` escape of a lone surrogate in a value serde skips (fields outside the format, the
//!   `arguments` it reads from their own text);
//! - nesting deeper than 128 in a value serde skips;
//! - an enum value written as an object (`"capture":{"full":null}`, and `hash`, `exit_reason`);
//! - `replay_of` or `usage` written as an array (serde reads a struct from an array too).
//!
//! [`may_be_looser`] is conservative: it answers `true` for any line where one of these could
//! be, and the reader then runs the scanner as before, so verdicts and messages are unchanged.
//! The unit tests below hold it to that on every listed case and on mutated lines.

use std::sync::LazyLock;

use memchr::memmem::Finder;

/// The deepest nesting the scanner accepts, counting the line's object.
const MAX_DEPTH: usize = 128;

/// The fields serde reads from a value of another shape than the scanner accepts, each name
/// with its quotes, and the first byte of that shape: enums from an object, structs from an
/// array.
const LOOSE_FIELDS: [(&[u8], u8); 5] = [
    (b"\"capture\"", b'{'),
    (b"\"hash\"", b'{'),
    (b"\"exit_reason\"", b'{'),
    (b"\"replay_of\"", b'['),
    (b"\"usage\"", b'['),
];

static ESCAPE_U: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));

/// Whether the scanner might refuse a line that serde read well: `false` only when it cannot.
/// One pass over the line's `{` and `[` (a few a line) and one search for `\u`.
pub(super) fn may_be_looser(line: &[u8]) -> bool {
    // A surrogate can only be written as a `\u` escape (the line is UTF-8).
    if ESCAPE_U.find(line).is_some() {
        return true;
    }
    let mut opening = 0;
    for at in memchr::memchr2_iter(b'{', b'[', line) {
        // Nesting is bounded by the number of `{` and `[` anywhere on the line.
        opening += 1;
        if opening > MAX_DEPTH || follows_loose_field(&line[..at], line[at]) {
            return true;
        }
    }
    false
}

/// Whether `before` (the bytes before a `{` or `[`) ends with the name of a field serde reads
/// loosely in that `shape`, and `:`, JSON whitespace allowed between. Without `\u` escapes a
/// field name is written as itself; a name that stands inside a string only makes this more
/// cautious.
fn follows_loose_field(before: &[u8], shape: u8) -> bool {
    let Some(before) = trim_whitespace_end(before).strip_suffix(b":") else {
        return false;
    };
    let before = trim_whitespace_end(before);
    LOOSE_FIELDS
        .iter()
        .any(|(name, loose)| *loose == shape && before.ends_with(name))
}

fn trim_whitespace_end(bytes: &[u8]) -> &[u8] {
    let kept = bytes
        .iter()
        .rposition(|byte| !matches!(byte, b' ' | b'\t' | b'\r' | b'\n'))
        .map_or(0, |at| at + 1);
    &bytes[..kept]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::check_line;
    use crate::trace::wire::Wire;
    use proptest::prelude::*;

    /// serde's verdict alone, as the reader reads a line.
    fn serde_reads(line: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(line) else {
            return false;
        };
        serde_json::from_str::<Wire>(text.trim_matches([' ', '\t', '\r', '\n']))
            .ok()
            .and_then(|wire| crate::trace::Event::try_from(wire).ok())
            .is_some()
    }

    /// The property: a line serde reads and this calls safe is a line the scanner accepts.
    fn holds(line: &[u8]) {
        if serde_reads(line) && !may_be_looser(line) {
            assert!(
                check_line(line).is_ok(),
                "the scanner refuses a line passed as safe: {}",
                String::from_utf8_lossy(line)
            );
        }
    }

    const START: &str = r#"{"run_id":"r","step":0,"event_type":"run_started","capture":"full","hash":"sha256","max_steps":5,"task":"t"}"#;
    const ACTION: &str = r#"{"run_id":"r","step":1,"event_type":"model_action","action_type":"tool_call","tool_name":"calculator","argument_keys":["a"],"arguments":{"a":1},"raw_output":"{\"a\":[1]}","usage":{"input_tokens":3},"duration_ms":0.5}"#;
    const END: &str = r#"{"run_id":"r","step":1,"event_type":"run_finished","exit_reason":"finished","steps_used":1}"#;

    #[test]
    fn every_listed_gap_is_caught() {
        let deep = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let gaps = [
            END.replace('}', r#","x":"\udc00"}"#),
            END.replace('}', r#","x":"\ud800"}"#),
            END.replace('}', r#","arguments":{"a":"\ud800"}}"#),
            END.replace('}', &format!(",\"x\":{}}}", deep(128))),
            END.replace('}', &format!(",\"arguments\":{{\"a\":{}}}}}", deep(127))),
            START.replace(r#""full""#, r#"{"full":null}"#),
            START.replace(r#""sha256""#, r#" { "sha256" : null }"#),
            END.replace(r#""finished""#, r#"{"finished":null}"#),
            START.replace('}', r#","replay_of":["a","b"]}"#),
            ACTION.replace(r#"{"input_tokens":3}"#, "[3,4]"),
            ACTION.replace(r#""usage":{"input_tokens":3}"#, "\"usage\"\t:\n[3]"),
        ];
        for line in &gaps {
            assert!(serde_reads(line.as_bytes()), "serde refuses {line}");
            assert!(
                check_line(line.as_bytes()).is_err(),
                "the scanner reads {line}"
            );
            assert!(may_be_looser(line.as_bytes()), "not caught: {line}");
        }
    }

    #[test]
    fn lines_as_written_take_serde_alone() {
        for line in [START, ACTION, END] {
            assert!(!may_be_looser(line.as_bytes()), "{line}");
            holds(line.as_bytes());
        }
    }

    /// Every field of the format (from the event types themselves, so a field added later is
    /// covered) given values of every shape, on every kind of line: serde and the scanner agree
    /// wherever this passes a line as safe.
    #[test]
    fn every_field_in_every_shape() {
        let shapes = [
            r#"{"full":null}"#,
            r#"{"summary":null}"#,
            r#"{"sha256":null}"#,
            r#"{"finished":null}"#,
            r#"{"source":"a","run_id":"b"}"#,
            r#"{"name":"n","kind":"k"}"#,
            r#"{"input_tokens":1}"#,
            "{}",
            "[]",
            r#"["a","b"]"#,
            "[1,2]",
            r#"[{"name":"n","kind":"k","passed":true}]"#,
            r#""full""#,
            r#""finished""#,
            "1",
            "-1",
            "1.5",
            "true",
            "null",
        ];
        let mut names: Vec<String> = crate::trace::fields_by_event_type()
            .into_iter()
            .flat_map(|(_, fields)| fields)
            .collect();
        names.sort();
        names.dedup();
        for base in [START, ACTION, END] {
            for name in &names {
                for shape in shapes {
                    let line = format!("{},\"{name}\":{shape}}}", &base[..base.len() - 1]);
                    holds(line.as_bytes());
                }
            }
        }
    }

    /// Pieces that make a line fall into or near a gap.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(r#""\ud800""#.to_owned()),
            Just(r#""\udc00\u0041""#.to_owned()),
            Just(r#""\u0041""#.to_owned()),
            Just(r#"{"full":null}"#.to_owned()),
            Just(r#"{"sha256":null}"#.to_owned()),
            Just(r#"{"finished":null}"#.to_owned()),
            Just(r#"["a","b"]"#.to_owned()),
            Just("[1,2,3]".to_owned()),
            Just(r#"{"input_tokens":1}"#.to_owned()),
            Just("null".to_owned()),
            Just(r#""full""#.to_owned()),
            (1usize..140).prop_map(|depth| format!("{}1{}", "[".repeat(depth), "]".repeat(depth))),
            (1usize..140).prop_map(|depth| format!(
                "{}{}",
                "{\"k\":".repeat(depth),
                "}".repeat(depth)
            )),
        ]
    }

    fn field() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("capture"),
            Just("hash"),
            Just("exit_reason"),
            Just("replay_of"),
            Just("usage"),
            Just("arguments"),
            Just("model"),
            Just("tools"),
            Just("source"),
            Just("x"),
            Just("c\\u0061pture"),
        ]
        .prop_map(str::to_owned)
    }

    proptest! {
        #[test]
        fn a_line_passed_as_safe_is_one_the_scanner_accepts(
            base in prop_oneof![Just(START), Just(ACTION), Just(END)],
            added in proptest::collection::vec((field(), piece(), 0usize..3), 0..4),
        ) {
            let mut line = base[..base.len() - 1].to_owned();
            for (name, value, space) in added {
                let gap = [" ", "", "\t"][space];
                line.push_str(&format!(",\"{name}\"{gap}:{gap}{value}"));
            }
            line.push('}');
            holds(line.as_bytes());
        }
    }
}
