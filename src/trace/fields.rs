//! The trace format's field table, as the fast scanner reads it: each field's check, and field
//! names as numbers so that a key is matched without comparing bytes.

/// A name of up to 15 bytes as a number, for matching names without comparing bytes. The
/// length is in the top byte, so that a name with trailing NUL bytes (`"run_id\u0000"`) is
/// another name.
pub(crate) const fn name(text: &[u8]) -> u128 {
    let mut value = (text.len() as u128) << 120;
    let mut at = 0;
    while at < text.len() {
        value |= (text[at] as u128) << (8 * at);
        at += 1;
    }
    value
}

/// How the value of a field of the trace format is checked.
#[derive(Clone, Copy)]
pub(super) enum Check {
    /// A string or null.
    Text,
    /// One of these strings, or null.
    OneOf(&'static [&'static [u8]], &'static str),
    /// A non-negative integer up to this bound, or null.
    Count(u64, &'static str),
    /// A finite number, or null.
    Number,
    /// A boolean or null.
    Bool,
    /// An array of strings, or null.
    Strings,
    /// An object, or null.
    Object,
    /// An object with string `source` and `run_id`, or null.
    ReplayOf,
    /// A value of a nested type the report never reads, checked by the trace reader's own
    /// deserializer (these appear on `run_started` lines only, so the slow path costs nothing).
    Typed(fn(&[u8]) -> bool, &'static str),
}

/// Whether `bytes` deserializes as `T`, exactly as the trace reader reads that field.
fn reads_as<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> bool {
    serde_json::from_slice::<T>(bytes).is_ok()
}

const U32: (u64, &str) = (u32::MAX as u64, "an integer from 0 to 4294967295");

/// Every field of the trace format (`trace::Event`, on disk `trace::wire`) the report reads or checks, with its
/// check. The report keeps the first nine, `accepted`, `duration_ms` and the five from `budget` to
/// `ts`; the rest are checked and dropped, so that a line the trace reader refuses is refused here too. Other fields are ignored.
pub(super) const KNOWN: [(&str, Check); 54] = [
    ("run_id", Check::Text),
    ("step", Check::Count(u64::MAX, "a non-negative integer")),
    ("event_type", Check::Text),
    ("action_type", Check::Text),
    ("tool_name", Check::Text),
    ("is_error", Check::Bool),
    ("error_kind", Check::Text),
    ("exit_reason", Check::Text),
    ("steps_used", Check::Count(U32.0, U32.1)),
    ("schema", Check::Text),
    (
        "capture",
        Check::OneOf(&[b"summary", b"full"], "`summary` or `full`"),
    ),
    (
        "hash",
        Check::OneOf(&[b"sha256", b"hmac-sha256"], "`sha256` or `hmac-sha256`"),
    ),
    ("max_steps", Check::Count(U32.0, U32.1)),
    ("input_summary", Check::Text),
    ("task", Check::Text),
    ("replay_of", Check::ReplayOf),
    ("argument_keys", Check::Strings),
    ("arguments", Check::Object),
    ("output", Check::Text),
    ("answer", Check::Text),
    ("content", Check::Text),
    ("raw_output", Check::Text),
    ("error", Check::Text),
    ("duration_ms", Check::Number),
    ("accepted", Check::Bool),
    ("finish_gate_hash", Check::Text),
    ("budget", Check::Text),
    ("usage", Check::Object),
    ("cost_usd", Check::Number),
    ("ts", Check::Text),
    ("task_id", Check::Text),
    ("agent", Check::Text),
    ("api", Check::Text),
    ("workdir_hash", Check::Text),
    ("call_id", Check::Text),
    ("request_hash", Check::Text),
    ("request_body", Check::Text),
    ("raw_response", Check::Text),
    ("finish_reason", Check::Text),
    ("native_ending", Check::Text),
    ("lossy", Check::Bool),
    ("tool_errors_recorded", Check::Bool),
    ("autosubmitted", Check::Bool),
    ("ending_inferred", Check::Bool),
    ("attempt", Check::Count(U32.0, U32.1)),
    (
        "http_status",
        Check::Count(65_535, "an integer from 0 to 65535"),
    ),
    ("wait_ms", Check::Count(u64::MAX, "a non-negative integer")),
    (
        "exit_status",
        Check::Typed(reads_as::<i32>, "an integer from -2147483648 to 2147483647"),
    ),
    (
        "source",
        Check::Typed(
            reads_as::<super::event::RunSource>,
            "an object with string `format` and `file`",
        ),
    ),
    (
        "model",
        Check::Typed(
            reads_as::<super::event::ModelRef>,
            "an object with a string `name`",
        ),
    ),
    (
        "tools",
        Check::Typed(
            reads_as::<Vec<super::event::ToolRef>>,
            "an array of objects with a string `name`",
        ),
    ),
    (
        "scores",
        Check::Typed(
            reads_as::<Vec<super::event::Score>>,
            "an array of objects with string `name` and `kind`",
        ),
    ),
    (
        "stream_chunks",
        Check::Typed(reads_as::<Vec<u64>>, "an array of non-negative integers"),
    ),
    ("scorer", Check::Text),
];

// The names of [`KNOWN`] as numbers: a `match` on them is a few comparisons, not a scan.
const RUN_ID: u128 = name(b"run_id");
const STEP: u128 = name(b"step");
const EVENT_TYPE: u128 = name(b"event_type");
const ACTION_TYPE: u128 = name(b"action_type");
const TOOL_NAME: u128 = name(b"tool_name");
const IS_ERROR: u128 = name(b"is_error");
const ERROR_KIND: u128 = name(b"error_kind");
const EXIT_REASON: u128 = name(b"exit_reason");
const STEPS_USED: u128 = name(b"steps_used");
const SCHEMA: u128 = name(b"schema");
const CAPTURE: u128 = name(b"capture");
const HASH: u128 = name(b"hash");
const MAX_STEPS: u128 = name(b"max_steps");
const INPUT_SUMMARY: u128 = name(b"input_summary");
const TASK: u128 = name(b"task");
const REPLAY_OF: u128 = name(b"replay_of");
const ARGUMENT_KEYS: u128 = name(b"argument_keys");
const ARGUMENTS: u128 = name(b"arguments");
const OUTPUT: u128 = name(b"output");
const ANSWER: u128 = name(b"answer");
const CONTENT: u128 = name(b"content");
const RAW_OUTPUT: u128 = name(b"raw_output");
const ERROR: u128 = name(b"error");
const DURATION_MS: u128 = name(b"duration_ms");
const ACCEPTED: u128 = name(b"accepted");
const BUDGET: u128 = name(b"budget");
const USAGE: u128 = name(b"usage");
const COST_USD: u128 = name(b"cost_usd");
const TS: u128 = name(b"ts");
const TASK_ID: u128 = name(b"task_id");
const AGENT: u128 = name(b"agent");
const API: u128 = name(b"api");
const WORKDIR_HASH: u128 = name(b"workdir_hash");
const CALL_ID: u128 = name(b"call_id");
const REQUEST_HASH: u128 = name(b"request_hash");
const REQUEST_BODY: u128 = name(b"request_body");
const RAW_RESPONSE: u128 = name(b"raw_response");
const FINISH_REASON: u128 = name(b"finish_reason");
const NATIVE_ENDING: u128 = name(b"native_ending");
const LOSSY: u128 = name(b"lossy");
const AUTOSUBMITTED: u128 = name(b"autosubmitted");
const ENDING_INFERRED: u128 = name(b"ending_inferred");
const ATTEMPT: u128 = name(b"attempt");
const HTTP_STATUS: u128 = name(b"http_status");
const WAIT_MS: u128 = name(b"wait_ms");
const EXIT_STATUS: u128 = name(b"exit_status");
const SOURCE: u128 = name(b"source");
const MODEL: u128 = name(b"model");
const TOOLS: u128 = name(b"tools");
const SCORES: u128 = name(b"scores");
const STREAM_CHUNKS: u128 = name(b"stream_chunks");
const SCORER: u128 = name(b"scorer");

/// The position of a field name in [`KNOWN`].
#[inline]
pub(super) fn known_field(key: &[u8]) -> Option<usize> {
    match key_number(key) {
        // Longer than the 15 bytes a key number holds, so compared as bytes.
        u128::MAX if key == b"finish_gate_hash" => Some(25),
        u128::MAX if key == b"tool_errors_recorded" => Some(41),
        number => known_number(number),
    }
}

/// The position in [`KNOWN`] of the field whose name has this [`name`] (names of up to 15
/// bytes; the two longer ones are found by [`known_field`]).
#[inline]
pub(super) fn known_number(number: u128) -> Option<usize> {
    match number {
        RUN_ID => Some(0),
        STEP => Some(1),
        EVENT_TYPE => Some(2),
        ACTION_TYPE => Some(3),
        TOOL_NAME => Some(4),
        IS_ERROR => Some(5),
        ERROR_KIND => Some(6),
        EXIT_REASON => Some(7),
        STEPS_USED => Some(8),
        SCHEMA => Some(9),
        CAPTURE => Some(10),
        HASH => Some(11),
        MAX_STEPS => Some(12),
        INPUT_SUMMARY => Some(13),
        TASK => Some(14),
        REPLAY_OF => Some(15),
        ARGUMENT_KEYS => Some(16),
        ARGUMENTS => Some(17),
        OUTPUT => Some(18),
        ANSWER => Some(19),
        CONTENT => Some(20),
        RAW_OUTPUT => Some(21),
        ERROR => Some(22),
        DURATION_MS => Some(23),
        ACCEPTED => Some(24),
        BUDGET => Some(26),
        USAGE => Some(27),
        COST_USD => Some(28),
        TS => Some(29),
        TASK_ID => Some(30),
        AGENT => Some(31),
        API => Some(32),
        WORKDIR_HASH => Some(33),
        CALL_ID => Some(34),
        REQUEST_HASH => Some(35),
        REQUEST_BODY => Some(36),
        RAW_RESPONSE => Some(37),
        FINISH_REASON => Some(38),
        NATIVE_ENDING => Some(39),
        LOSSY => Some(40),
        AUTOSUBMITTED => Some(42),
        ENDING_INFERRED => Some(43),
        ATTEMPT => Some(44),
        HTTP_STATUS => Some(45),
        WAIT_MS => Some(46),
        EXIT_STATUS => Some(47),
        SOURCE => Some(48),
        MODEL => Some(49),
        TOOLS => Some(50),
        SCORES => Some(51),
        STREAM_CHUNKS => Some(52),
        SCORER => Some(53),
        _ => None,
    }
}

/// [`name`] of a string from a line; `u128::MAX` for one longer than 15 bytes (no name the
/// report matches is that long).
#[inline]
pub(crate) fn key_number(key: &[u8]) -> u128 {
    // Two overlapping loads instead of a copy into a buffer: a copy of a variable length goes
    // through `memcpy` and stalls the load that follows it.
    let len = key.len();
    let (low, high) = match (key.first_chunk::<8>(), key.last_chunk::<8>()) {
        _ if len > 15 => return u128::MAX,
        (Some(first), Some(last)) => {
            let high = if len == 8 {
                0
            } else {
                u64::from_le_bytes(*last) >> (8 * (16 - len))
            };
            (u64::from_le_bytes(*first), high)
        }
        _ => match (key.first_chunk::<4>(), key.last_chunk::<4>()) {
            (Some(first), Some(last)) => {
                let rest = u64::from(u32::from_le_bytes(*last)) >> (8 * (8 - len));
                (u64::from(u32::from_le_bytes(*first)) | rest << 32, 0)
            }
            _ => (
                key.iter()
                    .rev()
                    .fold(0u64, |value, &byte| value << 8 | u64::from(byte)),
                0,
            ),
        },
    };
    u128::from(low) | u128::from(high) << 64 | (len as u128) << 120
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::KNOWN;
    use crate::trace::{ENVELOPE_FIELDS, fields_by_event_type};

    #[test]
    fn the_table_holds_exactly_the_fields_of_the_event_type() {
        // From the type itself (every variant of `EventKind` with every field set, as written):
        // a field added to a variant and not to the table fails here, and the other way round.
        let mut of_the_type: BTreeSet<String> = ENVELOPE_FIELDS
            .iter()
            .map(|name| (*name).to_owned())
            .collect();
        for (_, fields) in fields_by_event_type() {
            of_the_type.extend(fields);
        }
        let in_the_table: BTreeSet<String> =
            KNOWN.iter().map(|(name, _)| (*name).to_owned()).collect();
        let missing: Vec<&String> = of_the_type.difference(&in_the_table).collect();
        let extra: Vec<&String> = in_the_table.difference(&of_the_type).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "fields of the type the table lacks: {missing:?}; fields in the table no variant has: {extra:?}"
        );
        assert_eq!(
            in_the_table.len(),
            KNOWN.len(),
            "a field is in the table twice"
        );
    }
}
