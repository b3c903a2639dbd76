//! The scanner's fast lane: a line as trace writers write it (compact JSON, plain ASCII,
//! strings without escapes, short decimals), read through its quote marks
//! ([`super::quote_marks`]) so that each string ends with one bit search. It reads the same
//! fields the full scanner ([`super::scan`]) reads, by the same checks, but it only ever says
//! "these are the fields" or "not mine": anything else (whitespace between tokens, escapes,
//! non-ASCII text, a number in another form, a field the report checks through serde, a
//! duplicate, any error) is handed back, and the full scanner reads the line from the start and
//! names what is wrong. So it can only be faster, never more lenient; the tests hold it to the
//! full scanner field by field.

use std::borrow::Cow;

use super::cursor::Cursor;
use super::fields::{Check, KNOWN, known_field, known_number};
use super::line_error::LineError;
use super::quote_marks::QuoteMarks;
use super::scan::{Fields, MAX_DEPTH, TokenCounts, USAGE_COUNTS, scan_line_into};
use super::short_decimal::short_decimal_prefix;

/// `KEEP[n]` keeps the first `n` bytes of a 16-byte load (a table: a shift of a `u128` by a
/// variable amount takes a dozen instructions).
static KEEP: [u128; 16] = {
    let mut keep = [0; 16];
    let mut len = 1;
    while len < 16 {
        keep[len] = u128::MAX >> (128 - 8 * len);
        len += 1;
    }
    keep
};

/// [`scan_line_into`] through the fast lane first: lines as writers write them are read here,
/// any other line, or one handed back half read, by the full scanner from its start.
#[inline]
pub(super) fn read_fields<'a>(line: &'a [u8], fields: &mut Fields<'a>) -> Result<(), LineError> {
    if scan_compact(line, fields).is_some() {
        return Ok(());
    }
    *fields = Fields::default();
    scan_line_into(line, fields)
}

/// Reads `line` into `fields` (all `None` on entry) if the fast lane takes it; `None` leaves
/// `fields` partly written, for the full scanner to start over.
#[inline]
fn scan_compact<'a>(line: &'a [u8], fields: &mut Fields<'a>) -> Option<()> {
    if line.first() != Some(&b'{') {
        return None;
    }
    let mut marks = QuoteMarks::new();
    marks.mark(line)?;
    let mut lane = Lane {
        at: Cursor::at(line, 1),
        marks: &marks,
    };
    if lane.eat(b'}') {
        return (lane.at.pos == line.len()).then_some(());
    }
    // The known fields seen so far: a second one is the full scanner's error to name.
    let mut seen = 0u64;
    loop {
        let key = lane.string()?;
        let field = lane.known_field(key);
        lane.expect(b':')?;
        match field {
            None => lane.skip_value(1)?,
            Some(field) => {
                if seen & (1 << field) != 0 {
                    return None;
                }
                seen |= 1 << field;
                let check = KNOWN[field].1;
                match field {
                    0 => fields.run_id = lane.opt_string()?,
                    1 => fields.step = lane.opt_count(check)?,
                    2 => fields.event_type = lane.opt_string()?,
                    3 => fields.action_type = lane.opt_string()?,
                    4 => fields.tool_name = lane.opt_string()?,
                    5 => fields.is_error = lane.opt_bool()?,
                    6 => fields.error_kind = lane.opt_string()?,
                    7 => fields.exit_reason = lane.opt_string()?,
                    8 => fields.steps_used = lane.opt_count(check)?,
                    24 => fields.accepted = lane.opt_bool()?,
                    23 => fields.duration_ms = lane.opt_number()?,
                    26 => fields.budget = lane.opt_string()?,
                    27 => fields.usage = lane.opt_usage()?,
                    28 => fields.cost_usd = lane.opt_number()?,
                    29 => fields.ts = lane.opt_string()?,
                    _ => lane.check_value(check)?,
                }
            }
        }
        match lane.bump()? {
            b',' => {}
            b'}' => return (lane.at.pos == line.len()).then_some(()),
            _ => return None,
        }
    }
}

/// A position in a line whose quotes are marked.
struct Lane<'a, 'm> {
    at: Cursor<'a>,
    marks: &'m QuoteMarks,
}

impl<'a> Lane<'a, '_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.at.peek()
    }

    #[inline]
    fn bump(&mut self) -> Option<u8> {
        self.at.bump()
    }

    #[inline]
    fn eat(&mut self, byte: u8) -> bool {
        // Without a branch: the lane eats separators it mostly finds.
        let found = self.peek() == Some(byte);
        self.at.pos += usize::from(found);
        found
    }

    #[inline]
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// A string at its opening quote: its content, up to the next quote (the line holds no
    /// escapes).
    #[inline]
    fn string(&mut self) -> Option<&'a [u8]> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let end = self.marks.next(self.at.pos + 1)?;
        let content = self.at.bytes.get(self.at.pos + 1..end)?;
        self.at.pos = end + 1;
        Some(content)
    }

    /// The position in [`KNOWN`] of `key`, the name just read. A name of up to 15 bytes is read
    /// as a number from one 16-byte load where the line has 16 bytes from its start.
    #[inline]
    fn known_field(&self, key: &'a [u8]) -> Option<usize> {
        let start = self.at.pos - key.len() - 1;
        match (self.at.bytes.get(start..)).and_then(|rest| rest.first_chunk::<16>()) {
            Some(block) if key.len() < 16 => known_number(
                (u128::from_le_bytes(*block) & KEEP[key.len()]) | (key.len() as u128) << 120,
            ),
            _ => known_field(key),
        }
    }

    #[inline]
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at.pos + word.len();
        (self.at.bytes.get(self.at.pos..end)? == word).then(|| self.at.pos = end)
    }

    /// A string or null; `None` for anything else.
    #[inline]
    fn opt_string(&mut self) -> Option<Option<Cow<'a, [u8]>>> {
        match self.peek()? {
            b'"' => self.string().map(|text| Some(Cow::Borrowed(text))),
            b'n' => self.literal(b"null").map(|()| None),
            _ => None,
        }
    }

    #[inline]
    fn opt_bool(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b't' => self.literal(b"true").map(|()| Some(true)),
            b'f' => self.literal(b"false").map(|()| Some(false)),
            b'n' => self.literal(b"null").map(|()| None),
            _ => None,
        }
    }

    /// A non-negative integer within the field's bound (at most 19 digits), or null.
    #[inline]
    fn opt_count(&mut self, check: Check) -> Option<Option<u64>> {
        let bound = match check {
            Check::Count(bound, _) => bound,
            _ => u64::MAX,
        };
        let start = self.at.pos;
        let value = match self.peek()? {
            b'n' => return self.literal(b"null").map(|()| None),
            b'0' => {
                self.at.pos += 1;
                0
            }
            b'1'..=b'9' => {
                let mut value = 0u64;
                while let Some(digit @ b'0'..=b'9') = self.peek() {
                    // Nineteen digits always fit in a `u64`; longer numbers are the full
                    // scanner's.
                    if self.at.pos - start == 19 {
                        return None;
                    }
                    value = value * 10 + u64::from(digit - b'0');
                    self.at.pos += 1;
                }
                value
            }
            _ => return None,
        };
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) || value > bound {
            return None;
        }
        Some(Some(value))
    }

    /// A short decimal or null (other numbers are the full scanner's).
    #[inline]
    fn opt_number(&mut self) -> Option<Option<f64>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b'-' | b'0'..=b'9' => {
                let (value, len) = short_decimal_prefix(&self.at.bytes[self.at.pos..])?;
                self.at.pos += len;
                Some(Some(value))
            }
            _ => None,
        }
    }

    /// `usage`: an object whose token counts are non-negative integers or null, each at most
    /// once (others skipped), or null.
    fn opt_usage(&mut self) -> Option<Option<TokenCounts>> {
        match self.bump()? {
            b'n' => {
                self.at.pos -= 1;
                return self.literal(b"null").map(|()| None);
            }
            b'{' => {}
            _ => return None,
        }
        let mut counts = TokenCounts::default();
        if self.eat(b'}') {
            return Some(Some(counts));
        }
        let mut seen = [false; 5];
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            match USAGE_COUNTS.iter().position(|name| *name == key) {
                None => self.skip_value(2)?,
                Some(at) => {
                    if std::mem::replace(&mut seen[at], true) {
                        return None;
                    }
                    let value = self.opt_count(Check::Count(u64::MAX, ""))?.unwrap_or(0);
                    match at {
                        0 => counts.input = value,
                        1 => counts.output = value,
                        _ => {}
                    }
                }
            }
            match self.bump()? {
                b',' => {}
                b'}' => return Some(Some(counts)),
                _ => return None,
            }
        }
    }

    /// Checks the value of a field the report does not keep, as the full scanner does; `None`
    /// for the checks it leaves to that scanner (those that read through serde).
    fn check_value(&mut self, check: Check) -> Option<()> {
        if self.peek()? == b'n' {
            return self.literal(b"null");
        }
        match check {
            Check::Text => self.string().map(drop),
            Check::OneOf(allowed, _) => {
                let value = self.string()?;
                allowed.contains(&value).then_some(())
            }
            Check::Count(..) => self.opt_count(check).map(drop),
            Check::Bool => self.opt_bool().map(drop),
            Check::Number => self.opt_number().map(drop),
            Check::Strings => {
                self.expect(b'[')?;
                if self.eat(b']') {
                    return Some(());
                }
                loop {
                    self.string()?;
                    match self.bump()? {
                        b',' => {}
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            Check::Object if self.peek() == Some(b'{') => self.skip_value(1),
            Check::Object | Check::ReplayOf | Check::Typed(..) => None,
        }
    }

    /// Skips one value, checking its syntax; `depth` counts the containers around it.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' if depth < MAX_DEPTH => {
                self.at.pos += 1;
                if self.eat(b'}') {
                    return Some(());
                }
                loop {
                    self.string()?;
                    self.expect(b':')?;
                    self.skip_value(depth + 1)?;
                    match self.bump()? {
                        b',' => {}
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' if depth < MAX_DEPTH => {
                self.at.pos += 1;
                if self.eat(b']') {
                    return Some(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    match self.bump()? {
                        b',' => {}
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// A number of any JSON form (its value unread).
    fn number(&mut self) -> Option<()> {
        self.eat(b'-');
        match self.bump()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat(b'.') {
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at.pos += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at.pos += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at.pos;
        self.digits();
        (self.at.pos > start).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_line;
    use super::*;
    use proptest::prelude::*;

    /// Asserts that the fast lane, where it takes `line`, reads exactly what the full scanner
    /// reads; returns whether it took it.
    fn agrees(line: &[u8]) -> bool {
        let mut fast = Fields::default();
        let taken = scan_compact(line, &mut fast).is_some();
        if taken {
            let full = scan_line(line);
            assert_eq!(
                full.as_ref().ok(),
                Some(&fast),
                "the fast lane read {:?}, the full scanner {full:?}",
                String::from_utf8_lossy(line)
            );
        }
        taken
    }

    #[test]
    fn takes_the_lines_writers_write() {
        let lines = [
            r#"{"run_id":"raw-calc-000002-c0","step":0,"event_type":"run_started","schema":"looptrace.trace/1","capture":"summary","hash":"sha256","max_steps":5,"input_summary":"chars=18;sha256=4ff2"}"#,
            r#"{"run_id":"r","step":1,"event_type":"model_action","action_type":"tool_call","tool_name":"calculator","argument_keys":["left","operation","right"],"duration_ms":0.066}"#,
            r#"{"run_id":"r","step":1,"event_type":"observation","tool_name":"calculator","output":"chars=19","is_error":false,"duration_ms":0.032}"#,
            r#"{"run_id":"r","step":2,"event_type":"run_finished","exit_reason":"finished","steps_used":2}"#,
            r#"{"run_id":"r","step":1,"event_type":"model_action","usage":{"input_tokens":12,"output_tokens":3,"x":[1,{"y":null}]},"cost_usd":0.0125,"arguments":{"a":[1,-2.5e3,true,false,null,"s"],"b":{}},"ts":"2026-12-07T06:00:00.000Z"}"#,
            r#"{"run_id":null,"step":null,"unknown":[[],{}],"event_type":"x","accepted":true,"budget":"steps","finish_gate_hash":"h","tool_errors_recorded":false}"#,
            r#"{}"#,
        ];
        for line in lines {
            assert!(agrees(line.as_bytes()), "not taken: {line}");
        }
    }

    #[test]
    fn hands_back_what_it_does_not_read_itself() {
        let lines = [
            r#" {"run_id":"r"}"#,
            r#"{"run_id": "r"}"#,
            r#"{"run_id":"r"} "#,
            r#"{"run_id":"a\"b"}"#,
            r#"{"run_id":"é"}"#,
            r#"{"run_id":"r","run_id":"s"}"#,
            r#"{"step":1e3}"#,
            r#"{"step":01}"#,
            r#"{"step":-1}"#,
            r#"{"step":1.0}"#,
            r#"{"steps_used":4294967296}"#,
            r#"{"step":12345678901234567890}"#,
            r#"{"duration_ms":1e3}"#,
            r#"{"capture":"partial"}"#,
            r#"{"model":{"name":"m"}}"#,
            r#"{"scores":[]}"#,
            r#"{"replay_of":{"source":"s","run_id":"r"}}"#,
            r#"{"usage":{"input_tokens":1,"input_tokens":2}}"#,
            r#"{"usage":[]}"#,
            r#"{"x":[1,]}"#,
            r#"{"x":tru}"#,
            r#"{"x":"open}"#,
            r#"{"run_id":"r"}}"#,
            r#"{"run_id":"r",}"#,
            r#"{"argument_keys":["a",1]}"#,
        ];
        for line in lines {
            assert!(!agrees(line.as_bytes()), "taken: {line}");
        }
        let deep = format!(r#"{{"x":{}1{}}}"#, "[".repeat(130), "]".repeat(130));
        assert!(!agrees(deep.as_bytes()));
    }

    /// Compact lines from pieces of the trace format, valid and not.
    fn compact_line() -> impl Strategy<Value = String> {
        let name = prop_oneof![
            Just("run_id"),
            Just("step"),
            Just("event_type"),
            Just("action_type"),
            Just("tool_name"),
            Just("is_error"),
            Just("error_kind"),
            Just("exit_reason"),
            Just("steps_used"),
            Just("accepted"),
            Just("duration_ms"),
            Just("budget"),
            Just("usage"),
            Just("cost_usd"),
            Just("ts"),
            Just("capture"),
            Just("max_steps"),
            Just("argument_keys"),
            Just("arguments"),
            Just("http_status"),
            Just("lossy"),
            Just("other"),
            Just("input_tokens"),
        ];
        let value = prop_oneof![
            Just("\"r1\"".to_owned()),
            Just("\"full\"".to_owned()),
            Just("\"\"".to_owned()),
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            Just("0".to_owned()),
            Just("-0".to_owned()),
            Just("007".to_owned()),
            Just("70000".to_owned()),
            Just("4294967295".to_owned()),
            Just("18446744073709551615".to_owned()),
            Just("0.066".to_owned()),
            Just("1.".to_owned()),
            Just("2e5".to_owned()),
            Just("[]".to_owned()),
            Just("[\"a\",\"b\"]".to_owned()),
            Just("[1,[2]]".to_owned()),
            Just("{}".to_owned()),
            Just("{\"input_tokens\":3,\"output_tokens\":null}".to_owned()),
            Just("{\"a\":{\"b\":[true]}}".to_owned()),
            Just("nul".to_owned()),
            Just("\"a".to_owned()),
        ];
        proptest::collection::vec((name, value), 0..8).prop_map(|members| {
            let inner: Vec<String> = members
                .iter()
                .map(|(name, value)| format!("\"{name}\":{value}"))
                .collect();
            format!("{{{}}}", inner.join(","))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn reads_what_the_full_scanner_reads(line in compact_line()) {
            agrees(line.as_bytes());
        }

        #[test]
        fn reads_what_the_full_scanner_reads_after_any_byte_changes(
            line in compact_line(),
            at in any::<prop::sample::Index>(),
            byte in prop_oneof![Just(b'"'), Just(b','), Just(b':'), Just(b'}'), Just(b'{'), Just(b'['), Just(b']'), Just(b' '), Just(b'\\'), Just(b'1'), any::<u8>()],
            cut in any::<bool>(),
        ) {
            let mut bytes = line.into_bytes();
            let at = at.index(bytes.len());
            if cut {
                bytes.truncate(at);
            } else {
                bytes[at] = byte;
            }
            agrees(&bytes);
        }
    }
}
