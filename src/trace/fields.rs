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

/// The multiplier of the perfect hash of [`KNOWN`]'s names (found by search): each of them gets
/// a slot of its own among [`SLOT_COUNT`], so a name is matched with one multiply, one load and
/// one comparison. [`SLOTS`] fails to compile if a name added to the table shares a slot; then
/// search another multiplier.
const MULTIPLIER: u64 = 0xa5cc_0a63_d59f_efcd;

/// Slots of the perfect hash: a few more than twice the names, so a multiplier is easy to find.
const SLOT_COUNT: usize = 128;

/// The slot of a [`name`].
#[inline]
const fn slot(number: u128) -> usize {
    let low = number as u64;
    let high = (number >> 64) as u64;
    ((low ^ high.rotate_left(29)).wrapping_mul(MULTIPLIER) >> (64 - SLOT_COUNT.trailing_zeros()))
        as usize
}

/// Each slot's name and its position in [`KNOWN`] (`u8::MAX` for a slot no name has).
static SLOTS: ([u128; SLOT_COUNT], [u8; SLOT_COUNT]) = slots();

const fn slots() -> ([u128; SLOT_COUNT], [u8; SLOT_COUNT]) {
    let mut names = [0; SLOT_COUNT];
    let mut positions = [u8::MAX; SLOT_COUNT];
    let mut at = 0;
    while at < KNOWN.len() {
        let text = KNOWN[at].0.as_bytes();
        // The two longer names are compared as bytes by `known_field`.
        if text.len() <= 15 {
            let number = name(text);
            let slot = slot(number);
            assert!(
                positions[slot] == u8::MAX,
                "two field names share a slot: search another MULTIPLIER"
            );
            names[slot] = number;
            positions[slot] = at as u8;
        }
        at += 1;
    }
    (names, positions)
}

/// The position in [`KNOWN`] of the field whose name has this [`name`] (names of up to 15
/// bytes; the two longer ones are found by [`known_field`]).
#[inline]
pub(super) fn known_number(number: u128) -> Option<usize> {
    let slot = slot(number);
    let position = SLOTS.1[slot];
    (SLOTS.0[slot] == number && position != u8::MAX).then_some(usize::from(position))
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

    use super::{KNOWN, known_field};
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

    #[test]
    fn known_fields_are_found_by_name() {
        for (at, (name, _)) in KNOWN.iter().enumerate() {
            assert_eq!(known_field(name.as_bytes()), Some(at), "{name}");
        }
        assert_eq!(known_field(b"run_ids"), None);
        // Names one byte away from a known one, or a prefix of it, land in its slot or another
        // one and must still be told apart.
        let position = |other: &[u8]| KNOWN.iter().position(|(name, _)| name.as_bytes() == other);
        for (name, _) in KNOWN {
            let name = name.as_bytes();
            for at in 0..name.len() {
                let mut other = name.to_vec();
                other[at] ^= 0x20;
                let prefix = &name[..at];
                assert_eq!(known_field(&other), position(&other), "{other:?}");
                assert_eq!(known_field(prefix), position(prefix), "{prefix:?}");
            }
        }
        assert_eq!(known_field(b""), None);
    }
}
