//! A fast field extractor for one JSONL trace line.
//!
//! It walks the top-level object once and checks its syntax as strictly as `serde_json` does
//! (string escapes, control characters, number grammar, nesting up to 128 levels, nothing after
//! the object), but it builds nothing for the values it does not need: strings are skipped eight
//! bytes at a time (stopping only to check the UTF-8 of non-ASCII bytes), and the few string
//! fields the report reads are borrowed from the line as bytes unless they contain escapes. Every
//! byte outside strings must be ASCII JSON syntax, so a line that scans is valid UTF-8.
//!
//! The fields of the trace format are checked as the serde reader ([`super::Event`]) checks
//! them, types, enum values and duplicates included, so that `report` refuses the lines `show`
//! refuses; fields outside the format are skipped (their syntax still checked). The borrowed
//! view reads lines as writers write them (compact, plain ASCII, no escapes) through the fast
//! lane of [`super::compact_line`] first; any other line, or one the lane hands back, is read
//! here.

use std::borrow::Cow;

use super::cursor::Cursor;
use super::fields::{Check, KNOWN, known_field, known_number};
use super::json_string::{find_special, unescape, utf8_width};
use super::line_error::LineError;
use super::short_decimal::{short_decimal, short_decimal_prefix};

/// The deepest nesting of arrays and objects accepted (the limit `serde_json` uses).
pub(super) const MAX_DEPTH: usize = 128;

/// The fields of one trace line that the report reads; each is `None` when absent or null.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Fields<'a> {
    /// `run_id`.
    pub run_id: Option<Cow<'a, [u8]>>,
    /// `step`.
    pub step: Option<u64>,
    /// `event_type`.
    pub event_type: Option<Cow<'a, [u8]>>,
    /// `action_type` of a `model_action`.
    pub action_type: Option<Cow<'a, [u8]>>,
    /// `tool_name` of a tool call or an observation.
    pub tool_name: Option<Cow<'a, [u8]>>,
    /// `is_error` of an observation or feedback.
    pub is_error: Option<bool>,
    /// `error_kind` of an error observation, feedback or ending.
    pub error_kind: Option<Cow<'a, [u8]>>,
    /// `exit_reason` of `run_finished`.
    pub exit_reason: Option<Cow<'a, [u8]>>,
    /// `steps_used` of `run_finished`.
    pub steps_used: Option<u64>,
    /// `accepted` of a `finish_gate`.
    pub accepted: Option<bool>,
    /// `budget` of a `max_steps_exceeded` ending.
    pub budget: Option<Cow<'a, [u8]>>,
    /// `usage` (a turn's, or the run's on `run_finished`), when recorded.
    pub usage: Option<TokenCounts>,
    /// `cost_usd` of a turn or of the run.
    pub cost_usd: Option<f64>,
    /// `duration_ms` of a call, or of the run on `run_finished`.
    pub duration_ms: Option<f64>,
    /// `ts`, the RFC 3339 time of the event.
    pub ts: Option<Cow<'a, [u8]>>,
    /// The verdict of `scores` on `run_finished` (`trace::Score::verdict`), when it has one.
    pub verdict: Option<bool>,
}

/// The input and output tokens of a `usage` object (each 0 when not given).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TokenCounts {
    /// `input_tokens`.
    pub input: u64,
    /// `output_tokens`.
    pub output: u64,
}

/// Extracts the report's fields from one line (without its `\n`).
pub fn scan_line(line: &[u8]) -> Result<Fields<'_>, LineError> {
    let mut fields = Fields::default();
    scan_line_into(line, &mut fields)?;
    Ok(fields)
}

/// [`scan_line`] into `fields` (all `None` on entry), which the caller owns: the fields are
/// written where they are read, not built here and copied out.
pub(super) fn scan_line_into<'a>(line: &'a [u8], fields: &mut Fields<'a>) -> Result<(), LineError> {
    scan_fields(line, fields).map_err(|err| match err {
        // A syntax error on a line that is not UTF-8 is better said as that.
        LineError::Syntax { .. } if std::str::from_utf8(line).is_err() => LineError::InvalidUtf8,
        err => err,
    })
}

#[inline]
fn scan_fields<'a>(line: &'a [u8], fields: &mut Fields<'a>) -> Result<(), LineError> {
    let mut cursor = Cursor {
        bytes: line,
        pos: 0,
    };
    // The known fields seen so far: a second one is an error, as it is for the trace reader.
    let mut seen = 0u64;
    cursor.skip_ws();
    if cursor.peek() != Some(b'{') {
        return Err(cursor.syntax("expected a JSON object"));
    }
    cursor.fields(|cursor, field| {
        let Some(field) = field else {
            return cursor.skip_value(1);
        };
        let (field_name, check) = KNOWN[field];
        if seen & (1 << field) != 0 {
            return Err(LineError::DuplicateField(field_name));
        }
        seen |= 1 << field;
        match field {
            0 => fields.run_id = cursor.opt_string(field_name)?,
            1 => fields.step = cursor.opt_count(field_name, check)?,
            2 => fields.event_type = cursor.opt_string(field_name)?,
            3 => fields.action_type = cursor.opt_string(field_name)?,
            4 => fields.tool_name = cursor.opt_string(field_name)?,
            5 => fields.is_error = cursor.opt_bool(field_name)?,
            6 => fields.error_kind = cursor.opt_string(field_name)?,
            7 => fields.exit_reason = cursor.opt_string(field_name)?,
            8 => fields.steps_used = cursor.opt_count(field_name, check)?,
            24 => fields.accepted = cursor.opt_bool(field_name)?,
            23 => fields.duration_ms = cursor.opt_number(field_name)?,
            26 => fields.budget = cursor.opt_string(field_name)?,
            27 => fields.usage = cursor.opt_usage(field_name)?,
            28 => fields.cost_usd = cursor.opt_number(field_name)?,
            29 => fields.ts = cursor.opt_string(field_name)?,
            51 => fields.verdict = cursor.opt_verdict(field_name, check)?,
            _ => cursor.check_value(field_name, check)?,
        }
        Ok(())
    })?;
    cursor.skip_ws();
    if cursor.pos < line.len() {
        return Err(cursor.syntax("unexpected characters after the object"));
    }
    Ok(())
}

/// The token counts `usage` may hold (each at most once).
pub(super) const USAGE_COUNTS: [&[u8]; 5] = [
    b"input_tokens",
    b"output_tokens",
    b"cache_read_tokens",
    b"cache_write_tokens",
    b"reasoning_tokens",
];

impl<'a> Cursor<'a> {
    /// Scans a string whose opening quote was consumed; returns its raw content and whether
    /// that content holds escapes. Inlined: most strings are short, and a call cost half as
    /// much as the scan.
    #[inline]
    fn raw_string(&mut self) -> Result<(&'a [u8], bool), LineError> {
        let start = self.pos;
        let mut escaped = false;
        loop {
            let at = find_special(self.bytes, self.pos);
            self.pos = at;
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok((&self.bytes[start..at], escaped));
                }
                Some(b'\\') => {
                    escaped = true;
                    self.pos += 1;
                    self.skip_escape()?;
                }
                Some(0x80..) => {
                    self.pos += utf8_width(self.bytes, at).ok_or(LineError::InvalidUtf8)?
                }
                Some(_) => return Err(self.syntax("control character in a string")),
                None => return Err(self.syntax("unterminated string")),
            }
        }
    }

    /// Checks one escape after its backslash; a `\\u` surrogate must come in a pair.
    fn skip_escape(&mut self) -> Result<(), LineError> {
        match self.bump() {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(()),
            Some(b'u') => {
                let code = self.hex4()?;
                if (0xDC00..0xE000).contains(&code) {
                    return Err(self.syntax("lone surrogate in a `\\u` escape"));
                }
                if (0xD800..0xDC00).contains(&code) {
                    let low = if self.eat(b'\\') && self.eat(b'u') {
                        Some(self.hex4()?)
                    } else {
                        None
                    };
                    if !low.is_some_and(|low| (0xDC00..0xE000).contains(&low)) {
                        return Err(self.syntax("lone surrogate in a `\\u` escape"));
                    }
                }
                Ok(())
            }
            _ => Err(self.syntax_back("invalid escape in a string")),
        }
    }

    /// Four hex digits of a `\\u` escape.
    fn hex4(&mut self) -> Result<u32, LineError> {
        let mut code = 0;
        for _ in 0..4 {
            match self.peek().and_then(|byte| char::from(byte).to_digit(16)) {
                Some(digit) => {
                    code = code * 16 + digit;
                    self.pos += 1;
                }
                None => return Err(self.syntax("invalid `\\u` escape")),
            }
        }
        Ok(code)
    }

    /// A string (a field name or value) whose opening quote was consumed, as UTF-8 bytes.
    #[inline]
    fn string(&mut self) -> Result<Cow<'a, [u8]>, LineError> {
        let column = self.pos;
        let (raw, escaped) = self.raw_string()?;
        if escaped {
            Ok(Cow::Owned(unescape(raw, column)?.into_bytes()))
        } else {
            Ok(Cow::Borrowed(raw))
        }
    }

    #[inline]
    fn opt_string(&mut self, field: &'static str) -> Result<Option<Cow<'a, [u8]>>, LineError> {
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                self.string().map(Some)
            }
            Some(b'n') => self.literal(b"null").map(|()| None),
            _ => self.wrong_type(field, "a string"),
        }
    }

    fn opt_count(&mut self, field: &'static str, check: Check) -> Result<Option<u64>, LineError> {
        let (bound, expected) = match check {
            Check::Count(bound, expected) => (bound, expected),
            _ => (u64::MAX, "a non-negative integer"),
        };
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => match self.number()?.0 {
                Some(value) if value <= bound => Ok(Some(value)),
                _ => Err(LineError::WrongType { field, expected }),
            },
            Some(b'n') => self.literal(b"null").map(|()| None),
            _ => self.wrong_type(field, expected),
        }
    }

    /// Checks the value of a field the report does not keep.
    fn check_value(&mut self, field: &'static str, check: Check) -> Result<(), LineError> {
        if self.peek() == Some(b'n') {
            return self.literal(b"null");
        }
        match check {
            // Checked, not decoded: `raw_string` already checks every escape, so decoding one
            // (an allocation per escaped string) would only check it twice.
            Check::Text => match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    self.raw_string().map(drop)
                }
                _ => self.wrong_type(field, "a string"),
            },
            Check::OneOf(allowed, expected) => match self.opt_string(field)? {
                Some(value) if !allowed.contains(&&*value) => {
                    Err(LineError::WrongType { field, expected })
                }
                _ => Ok(()),
            },
            Check::Count(..) => self.opt_count(field, check).map(drop),
            Check::Bool => self.opt_bool(field).map(drop),
            Check::Number => match self.peek() {
                Some(b'-' | b'0'..=b'9') => {
                    let start = self.pos;
                    let (_, may_overflow) = self.number()?;
                    let text = std::str::from_utf8(&self.bytes[start..self.pos]).unwrap_or("");
                    if may_overflow && !text.parse::<f64>().is_ok_and(f64::is_finite) {
                        return Err(LineError::WrongType {
                            field,
                            expected: "a finite number",
                        });
                    }
                    Ok(())
                }
                _ => self.wrong_type(field, "a number"),
            },
            Check::Strings => {
                let expected = "an array of strings";
                if !self.eat(b'[') {
                    return self.wrong_type(field, expected);
                }
                self.skip_ws();
                if self.eat(b']') {
                    return Ok(());
                }
                loop {
                    if self.peek() != Some(b'"') {
                        return self.wrong_type(field, expected);
                    }
                    self.pos += 1;
                    self.raw_string()?;
                    self.skip_ws();
                    match self.bump() {
                        Some(b',') => self.skip_ws(),
                        Some(b']') => return Ok(()),
                        None => return Err(self.syntax("expected `,` or `]` after a value")),
                        _ => return Err(self.syntax_back("expected `,` or `]` after a value")),
                    }
                }
            }
            Check::Object => match self.peek() {
                Some(b'{') => self.skip_value(1),
                _ => self.wrong_type(field, "an object"),
            },
            Check::ReplayOf => self.replay_of(field),
            Check::Typed(reads, expected) => {
                let start = self.pos;
                self.skip_value(1)?;
                if reads(&self.bytes[start..self.pos]) {
                    Ok(())
                } else {
                    Err(LineError::WrongType { field, expected })
                }
            }
        }
    }

    /// `scores`, checked as the trace reader reads it, and their verdict (`run_finished` lines
    /// only carry it, so the slow path costs little).
    fn opt_verdict(
        &mut self,
        field: &'static str,
        check: Check,
    ) -> Result<Option<bool>, LineError> {
        if self.peek() == Some(b'n') {
            return self.literal(b"null").map(|()| None);
        }
        let start = self.pos;
        self.check_value(field, check)?;
        let scores: Vec<super::event::Score> =
            serde_json::from_slice(&self.bytes[start..self.pos]).unwrap_or_default();
        Ok(super::event::Score::verdict(&scores))
    }

    /// `replay_of`: an object with string `source` and `run_id` (others ignored).
    fn replay_of(&mut self, field: &'static str) -> Result<(), LineError> {
        let expected = "an object with string `source` and `run_id`";
        if self.peek() != Some(b'{') {
            return self.wrong_type(field, expected);
        }
        let mut seen = [false; 2];
        self.object(|cursor, key| match &*key {
            b"source" | b"run_id" => {
                let at = usize::from(&*key == b"run_id");
                if seen[at] || cursor.peek() != Some(b'"') {
                    return cursor.wrong_type(field, expected);
                }
                seen[at] = true;
                cursor.pos += 1;
                cursor.raw_string().map(drop)
            }
            _ => cursor.skip_value(2),
        })?;
        if seen == [true, true] {
            Ok(())
        } else {
            Err(LineError::WrongType { field, expected })
        }
    }

    /// A finite number or null, as an `f64`.
    fn opt_number(&mut self, field: &'static str) -> Result<Option<f64>, LineError> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => {
                if let Some((value, len)) = short_decimal_prefix(&self.bytes[self.pos..]) {
                    self.pos += len;
                    return Ok(Some(value));
                }
                let start = self.pos;
                self.number()?;
                let number = &self.bytes[start..self.pos];
                let value = short_decimal(number)
                    .map(Ok)
                    .unwrap_or_else(|| std::str::from_utf8(number).unwrap_or("").parse::<f64>());
                match value {
                    Ok(value) if value.is_finite() => Ok(Some(value)),
                    _ => Err(LineError::WrongType {
                        field,
                        expected: "a finite number",
                    }),
                }
            }
            Some(b'n') => self.literal(b"null").map(|()| None),
            _ => self.wrong_type(field, "a number"),
        }
    }

    /// `usage`: an object whose token counts are non-negative integers or null, each at most
    /// once (others ignored), or null.
    fn opt_usage(&mut self, field: &'static str) -> Result<Option<TokenCounts>, LineError> {
        match self.peek() {
            Some(b'n') => return self.literal(b"null").map(|()| None),
            Some(b'{') => {}
            _ => return self.wrong_type(field, "an object"),
        }
        let mut counts = TokenCounts::default();
        let mut seen = [false; 5];
        self.object(|cursor, key| {
            let Some(at) = USAGE_COUNTS.iter().position(|name| **name == *key) else {
                return cursor.skip_value(2);
            };
            if std::mem::replace(&mut seen[at], true) {
                return Err(LineError::DuplicateField(field));
            }
            let value = cursor.opt_count(
                field,
                Check::Count(u64::MAX, "token counts that are non-negative integers"),
            )?;
            match at {
                0 => counts.input = value.unwrap_or(0),
                1 => counts.output = value.unwrap_or(0),
                _ => {}
            }
            Ok(())
        })?;
        Ok(Some(counts))
    }

    fn opt_bool(&mut self, field: &'static str) -> Result<Option<bool>, LineError> {
        match self.peek() {
            Some(b't') => self.literal(b"true").map(|()| Some(true)),
            Some(b'f') => self.literal(b"false").map(|()| Some(false)),
            Some(b'n') => self.literal(b"null").map(|()| None),
            _ => self.wrong_type(field, "true or false"),
        }
    }

    /// A type error if the value is well-formed JSON, else the syntax error.
    fn wrong_type<T>(
        &mut self,
        field: &'static str,
        expected: &'static str,
    ) -> Result<T, LineError> {
        self.skip_value(1)?;
        Err(LineError::WrongType { field, expected })
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), LineError> {
        let rest = &self.bytes[self.pos..];
        // Byte by byte: a slice comparison would be a call into `memcmp` for four bytes.
        if word.iter().zip(rest).all(|(a, b)| a == b) {
            if rest.len() >= word.len() {
                self.pos += word.len();
                return Ok(());
            }
            // The line ends inside the word: it was cut short.
            self.pos = self.bytes.len();
        }
        Err(self.syntax("expected a value"))
    }

    /// Scans a number; returns its value if it is a non-negative integer that fits in `u64`, and
    /// whether it might not fit in an `f64` (it has an exponent or over 300 digits).
    fn number(&mut self) -> Result<(Option<u64>, bool), LineError> {
        let start = self.pos;
        let negative = self.eat(b'-');
        let mut value: Option<u64> = Some(0);
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                while let Some(digit @ b'0'..=b'9') = self.peek() {
                    value = value
                        .and_then(|v| v.checked_mul(10))
                        .and_then(|v| v.checked_add(u64::from(digit - b'0')));
                    self.pos += 1;
                }
            }
            _ => return Err(self.syntax("invalid number")),
        }
        let mut integer = !negative;
        if self.eat(b'.') {
            integer = false;
            self.digits()?;
        }
        let mut may_overflow = self.pos - start > 300;
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            integer = false;
            may_overflow = true;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.digits()?;
        }
        Ok((if integer { value } else { None }, may_overflow))
    }

    fn digits(&mut self) -> Result<(), LineError> {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        if self.pos == start {
            Err(self.syntax("invalid number"))
        } else {
            Ok(())
        }
    }

    /// [`Self::object`] for the line's own object, handing `field` the position in [`KNOWN`]
    /// of each field name (`None` for names outside the format) instead of the name.
    #[inline]
    fn fields(
        &mut self,
        field: impl FnMut(&mut Self, Option<usize>) -> Result<(), LineError>,
    ) -> Result<(), LineError> {
        self.members(Self::field_name, field)
    }

    /// A field name whose opening quote was consumed, as its position in [`KNOWN`].
    ///
    /// Names of up to 15 plain ASCII bytes (all the format's but two) are read from one
    /// 16-byte load: the first byte that needs a look must be the closing quote, and the bytes
    /// before it, with the length on top, are the name's [`super::fields::name`]. Any other
    /// name takes the string path, which checks and decodes it.
    #[inline]
    fn field_name(&mut self) -> Result<Option<usize>, LineError> {
        if let Some(block) = self
            .bytes
            .get(self.pos..)
            .and_then(|rest| rest.first_chunk::<16>())
        {
            let len = find_special(block, 0);
            if len < 16 && block[len] == b'"' {
                let keep = u128::MAX.checked_shr(128 - 8 * len as u32).unwrap_or(0);
                let number = (u128::from_le_bytes(*block) & keep) | (len as u128) << 120;
                self.pos += len + 1;
                return Ok(known_number(number));
            }
        }
        let key = self.string()?;
        Ok(known_field(&key))
    }

    /// Walks an object at `{`, handing each field name to `field`, which must consume the value.
    fn object(
        &mut self,
        field: impl FnMut(&mut Self, Cow<'a, [u8]>) -> Result<(), LineError>,
    ) -> Result<(), LineError> {
        self.members(Self::string, field)
    }

    /// Walks an object at `{`: `key` reads each name after its opening quote, `field` gets it and
    /// must consume the value. One loop for both kinds of name, generic so each stays inlined.
    #[inline]
    fn members<K>(
        &mut self,
        mut key: impl FnMut(&mut Self) -> Result<K, LineError>,
        mut field: impl FnMut(&mut Self, K) -> Result<(), LineError>,
    ) -> Result<(), LineError> {
        self.pos += 1;
        self.skip_ws();
        if self.eat(b'}') {
            return Ok(());
        }
        loop {
            if !self.eat(b'"') {
                return Err(self.syntax("expected a field name"));
            }
            let name = key(self)?;
            self.skip_ws();
            if !self.eat(b':') {
                return Err(self.syntax("expected `:` after a field name"));
            }
            self.skip_ws();
            field(self, name)?;
            self.skip_ws();
            match self.bump() {
                Some(b',') => self.skip_ws(),
                Some(b'}') => return Ok(()),
                None => return Err(self.syntax("expected `,` or `}` after a value")),
                _ => return Err(self.syntax_back("expected `,` or `}` after a value")),
            }
        }
    }

    /// Skips one value, checking its syntax; `depth` counts the containers around it.
    fn skip_value(&mut self, depth: usize) -> Result<(), LineError> {
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                self.raw_string().map(|_| ())
            }
            Some(b'{') => {
                if depth >= MAX_DEPTH {
                    return Err(self.syntax("nesting too deep"));
                }
                self.object(|cursor, _| cursor.skip_value(depth + 1))
            }
            Some(b'[') => {
                if depth >= MAX_DEPTH {
                    return Err(self.syntax("nesting too deep"));
                }
                self.pos += 1;
                self.skip_ws();
                if self.eat(b']') {
                    return Ok(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    self.skip_ws();
                    match self.bump() {
                        Some(b',') => self.skip_ws(),
                        Some(b']') => return Ok(()),
                        None => return Err(self.syntax("expected `,` or `]` after a value")),
                        _ => return Err(self.syntax_back("expected `,` or `]` after a value")),
                    }
                }
            }
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number().map(drop),
            _ => Err(self.syntax("expected a value")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fields::{key_number, name};
    use super::*;

    fn syntax_message(line: &str) -> String {
        match scan_line(line.as_bytes()) {
            Err(err) => err.to_string(),
            Ok(fields) => panic!("expected an error for {line}, got {fields:?}"),
        }
    }

    #[test]
    fn checks_exactly_the_fields_of_the_published_schema() {
        // The schema is held to the event type by `tests/integration/trace_schema.rs`, so this
        // holds the table to the type: a field added to one and not the other fails.
        let schema: serde_json::Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schemas/trace-event.schema.json"
        )))
        .unwrap();
        let published: std::collections::BTreeSet<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let checked: std::collections::BTreeSet<&str> =
            KNOWN.iter().map(|(name, _)| *name).collect();
        assert_eq!(checked, published);
        assert_eq!(checked.len(), KNOWN.len(), "a field is in the table twice");
    }

    #[test]
    fn reads_the_fields_and_skips_the_rest() {
        let line = br#"{"run_id":"r1","step":3,"event_type":"observation","output":"a\"b","nested":{"a":[1,2.5e3,{"b":null}]},"is_error":true,"error_kind":"division_by_zero","tool_name":"calculator"}"#;
        let fields = scan_line(line).unwrap();
        assert_eq!(fields.run_id.as_deref(), Some(&b"r1"[..]));
        assert_eq!(fields.step, Some(3));
        assert_eq!(fields.event_type.as_deref(), Some(&b"observation"[..]));
        assert_eq!(fields.is_error, Some(true));
        assert_eq!(fields.error_kind.as_deref(), Some(&b"division_by_zero"[..]));
        assert_eq!(fields.tool_name.as_deref(), Some(&b"calculator"[..]));
        assert!(matches!(fields.run_id, Some(Cow::Borrowed(_))));
    }

    #[test]
    fn decodes_escapes_in_kept_strings_and_keys() {
        let line = br#"{"run\u005fid":"a\u00e9\ud83d\ude00\n","event_type":"x"}"#;
        let fields = scan_line(line).unwrap();
        assert_eq!(
            fields.run_id.as_deref(),
            Some("a\u{e9}\u{1F600}\n".as_bytes())
        );
    }

    #[test]
    fn rejects_malformed_json_with_a_column() {
        assert_eq!(
            syntax_message(r#"{"run_id":"r1" "step":1}"#),
            "expected `,` or `}` after a value at column 16"
        );
        assert_eq!(
            syntax_message(r#"{"run_id":"r1","#),
            "unexpected end of line at column 16"
        );
        assert_eq!(
            syntax_message(r#"{"a":01}"#),
            "expected `,` or `}` after a value at column 7"
        );
        assert_eq!(
            syntax_message(r#"{"a":"x	y"}"#),
            "control character in a string at column 8"
        );
        assert_eq!(
            syntax_message(r#"{"a":"\x"}"#),
            "invalid escape in a string at column 8"
        );
        assert_eq!(syntax_message(r#"{"a":1.}"#), "invalid number at column 8");
        assert_eq!(
            syntax_message(r#"{"a":tru}"#),
            "expected a value at column 6"
        );
        assert_eq!(
            syntax_message(r#"{"a":1} x"#),
            "unexpected characters after the object at column 9"
        );
        assert_eq!(
            syntax_message(r#"[1]"#),
            "expected a JSON object at column 1"
        );
        assert_eq!(
            syntax_message(r#"{"run_id":"\ud800"}"#),
            "lone surrogate in a `\\u` escape at column 18"
        );
        assert_eq!(
            syntax_message(r#"{"step":-1}"#),
            "`step` must be a non-negative integer"
        );
        assert_eq!(
            syntax_message(r#"{"step":"1"}"#),
            "`step` must be a non-negative integer"
        );
        assert_eq!(
            syntax_message(r#"{"is_error":1}"#),
            "`is_error` must be true or false"
        );
        assert_eq!(
            syntax_message(r#"{"run_id":7}"#),
            "`run_id` must be a string"
        );
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(200), "]".repeat(200));
        assert_eq!(syntax_message(&deep), "nesting too deep at column 133");
    }

    #[test]
    fn checks_utf8_inside_strings() {
        let fields =
            scan_line("{\"run_id\":\"h\u{e9}llo \u{1F600}\",\"event_type\":\"x\"}".as_bytes())
                .unwrap();
        assert_eq!(
            fields.run_id.as_deref(),
            Some("h\u{e9}llo \u{1F600}".as_bytes())
        );
        for bad in [
            &b"{\"a\":\"\xff\"}"[..],
            b"{\"a\":\"\xc3\"}",
            b"{\"a\":\"\xed\xa0\x80\"}",
            b"{\"a\":\"\xc0\xaf\"}",
            b"{\xff:1}",
        ] {
            assert_eq!(scan_line(bad), Err(LineError::InvalidUtf8), "{bad:?}");
        }
    }

    #[test]
    fn field_names_read_from_one_load_match_the_string_path() {
        let mut names: Vec<Vec<u8>> = KNOWN
            .iter()
            .map(|(name, _)| name.as_bytes().to_vec())
            .collect();
        names.extend(
            [
                &b"run_ids"[..],
                b"",
                b"r",
                b"run\\u005fid",
                b"run_id\\u0000",
                b"caf\\u00e9",
                b"ts\xc3\xa9",
            ]
            .iter()
            .map(|name| name.to_vec()),
        );
        names.extend((0..=17).map(|len| b"abcdefghijklmnopq"[..len].to_vec()));
        for name in &names {
            // Followed by enough bytes for one 16-byte load, and by the bare end of the line.
            for tail in [&b":1,\"padding_padding\":2}"[..], b":"] {
                let mut line = vec![b'"'];
                line.extend_from_slice(name);
                line.push(b'"');
                line.extend_from_slice(tail);
                let mut cursor = Cursor {
                    bytes: &line,
                    pos: 1,
                };
                let fast = cursor.field_name();
                let fast_end = cursor.pos;
                let mut cursor = Cursor {
                    bytes: &line,
                    pos: 1,
                };
                let slow = cursor.string().map(|key| known_field(&key));
                assert_eq!(fast, slow, "{}", String::from_utf8_lossy(name));
                assert_eq!(fast_end, cursor.pos, "{}", String::from_utf8_lossy(name));
            }
        }
    }

    #[test]
    fn key_numbers_match_names_of_every_length() {
        let text = b"abcdefghijklmnopq";
        for len in 0..=15 {
            assert_eq!(key_number(&text[..len]), name(&text[..len]), "length {len}");
        }
        assert_eq!(key_number(&text[..16]), u128::MAX);
    }

    #[test]
    fn checks_the_other_fields_of_the_format_as_the_trace_reader_does() {
        let cases = [
            (
                r#"{"argument_keys":"left"}"#,
                "`argument_keys` must be an array of strings",
            ),
            (
                r#"{"argument_keys":["a",1]}"#,
                "`argument_keys` must be an array of strings",
            ),
            (r#"{"arguments":[1]}"#, "`arguments` must be an object"),
            (
                r#"{"capture":"everything"}"#,
                "`capture` must be `summary` or `full`",
            ),
            (
                r#"{"hash":"md5"}"#,
                "`hash` must be `sha256` or `hmac-sha256`",
            ),
            (
                r#"{"max_steps":4294967296}"#,
                "`max_steps` must be an integer from 0 to 4294967295",
            ),
            (
                r#"{"steps_used":"5"}"#,
                "`steps_used` must be an integer from 0 to 4294967295",
            ),
            (
                r#"{"duration_ms":1e400}"#,
                "`duration_ms` must be a finite number",
            ),
            (r#"{"duration_ms":"5"}"#, "`duration_ms` must be a number"),
            (
                r#"{"replay_of":"x.jsonl"}"#,
                "`replay_of` must be an object with string `source` and `run_id`",
            ),
            (
                r#"{"replay_of":{"source":"x.jsonl"}}"#,
                "`replay_of` must be an object with string `source` and `run_id`",
            ),
            (r#"{"output":5}"#, "`output` must be a string"),
            (r#"{"accepted":"yes"}"#, "`accepted` must be true or false"),
            (
                r#"{"finish_gate_hash":5}"#,
                "`finish_gate_hash` must be a string",
            ),
            (r#"{"run_id":"r","run_id":"s"}"#, "duplicate field `run_id`"),
            (
                r#"{"content":"\udc00"}"#,
                "lone surrogate in a `\\u` escape at column 19",
            ),
        ];
        for (line, message) in cases {
            assert_eq!(syntax_message(line), message, "{line}");
        }
        let fine = r#"{"capture":"full","hash":null,"max_steps":4294967295,"duration_ms":-1.5e3,"argument_keys":[],"arguments":{"a":[1]},"replay_of":{"source":"a","run_id":"b","x":1},"unknown":{"u":1},"unknown":2,"content":"\ud83d\ude00"}"#;
        assert_eq!(
            scan_line(fine.as_bytes()),
            Ok(Fields {
                duration_ms: Some(-1500.0),
                ..Fields::default()
            })
        );
    }

    #[test]
    fn reads_and_checks_budget_usage_cost_and_time() {
        let line = r#"{"budget":"tokens","usage":{"input_tokens":12,"output_tokens":null,"reasoning_tokens":3,"x":[1]},"cost_usd":0.25,"ts":"2025-06-01T12:00:00Z"}"#;
        let fields = scan_line(line.as_bytes()).unwrap();
        assert_eq!(fields.budget.as_deref(), Some(&b"tokens"[..]));
        assert_eq!(
            fields.usage,
            Some(TokenCounts {
                input: 12,
                output: 0
            })
        );
        assert_eq!(fields.cost_usd, Some(0.25));
        assert_eq!(fields.ts.as_deref(), Some(&b"2025-06-01T12:00:00Z"[..]));
        let cases = [
            (r#"{"usage":5}"#, "`usage` must be an object"),
            (
                r#"{"usage":{"input_tokens":-1}}"#,
                "`usage` must be token counts that are non-negative integers",
            ),
            (
                r#"{"usage":{"output_tokens":1,"output_tokens":2}}"#,
                "duplicate field `usage`",
            ),
            (r#"{"cost_usd":"1"}"#, "`cost_usd` must be a number"),
            (r#"{"budget":1}"#, "`budget` must be a string"),
            (r#"{"ts":1}"#, "`ts` must be a string"),
        ];
        for (line, message) in cases {
            assert_eq!(syntax_message(line), message, "{line}");
        }
    }

    #[test]
    fn a_name_with_trailing_nul_bytes_is_another_name() {
        assert_ne!(key_number(b"run_id\0"), name(b"run_id"));
        assert_ne!(key_number(b"step\0\0\0\0\0\0\0\0"), name(b"step"));
        let fields =
            scan_line(br#"{"run_id":"r","step\u0000":1,"event_type":"run_finished\u0000"}"#)
                .unwrap();
        assert_eq!(fields.step, None);
        assert_eq!(fields.event_type.as_deref(), Some(&b"run_finished\0"[..]));
    }

    #[test]
    fn null_reads_as_absent() {
        let fields = scan_line(br#"{"run_id":null,"error_kind":null,"step":null}"#).unwrap();
        assert_eq!(fields, Fields::default());
    }
}
