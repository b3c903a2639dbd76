//! A trace line kept as `show -f json` writes it: the line itself when it is already exactly
//! what writing its event gives ([`super::as_written`]: every line looptrace writes), else its
//! event written again. Grouping lines into runs needs only the run id and whether the line
//! starts or ends its run, which the borrowed view ([`super::view::parse_event`]) reads without
//! building the event; the output is byte-identical to parsing and writing every event.

use std::borrow::Cow;

use super::as_written::is_as_written;
use super::reader::{LineItem, parse_line};
use super::view::{EventRefKind, parse_event};

/// One event's line as `show -f json` writes it (without the `\n`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonLine {
    run_id: RunId,
    starts: bool,
    ends: bool,
    /// Its `event_type`, when this version does not know it.
    unknown: Option<String>,
    /// The line and its `\n`, ready to be written as it is.
    bytes: Box<[u8]>,
}

/// Where the run id is: in the line (no escapes, the usual case: no copy) or decoded apart.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RunId {
    InLine(std::ops::Range<usize>),
    Decoded(String),
}

impl JsonLine {
    /// The line to write, without its `\n`.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.bytes.len() - 1]
    }

    /// The line to write with its `\n`: runs are written a line per slice, without a copy.
    pub fn bytes_with_newline(&self) -> &[u8] {
        &self.bytes
    }

    /// The line itself, when it is exactly what writing its event gives and well-formed by the
    /// rules every reader follows.
    fn as_written(bytes: &[u8]) -> Option<JsonLine> {
        // A line the view reads is UTF-8 (the scanner checks every byte), so no second pass.
        let view = parse_event(bytes).ok()?;
        let (starts, ends) = match view.kind {
            EventRefKind::Unknown { .. } => return None,
            EventRefKind::RunStarted => (true, false),
            EventRefKind::Ended { .. } => (false, true),
            _ => (false, false),
        };
        if !is_as_written(bytes) {
            return None;
        }
        let run_id = match view.run_id {
            Cow::Borrowed(id) => {
                // A slice of `bytes` (the view borrows from the line): its place in the line.
                let start = (id.as_ptr() as usize).checked_sub(bytes.as_ptr() as usize)?;
                let range = start..start + id.len();
                if bytes.get(range.clone()) != Some(id) {
                    return None;
                }
                RunId::InLine(range)
            }
            Cow::Owned(id) => RunId::Decoded(String::from_utf8(id).ok()?),
        };
        Some(JsonLine {
            run_id,
            starts,
            ends,
            unknown: None,
            bytes: with_newline(bytes),
        })
    }
}

impl LineItem for JsonLine {
    fn from_line(bytes: &[u8]) -> Result<Option<Self>, String> {
        if let Some(line) = JsonLine::as_written(bytes) {
            return Ok(Some(line));
        }
        let Some(event) = parse_line(bytes)? else {
            return Ok(None);
        };
        let mut written = serde_json::to_vec(&event)
            .map_err(|err| format!("failed to write the event again: {err}"))?;
        written.push(b'\n');
        Ok(Some(JsonLine {
            starts: event.starts_run(),
            ends: event.ends_run(),
            unknown: event.unknown_event_type().map(str::to_owned),
            run_id: RunId::Decoded(event.run_id),
            bytes: written.into(),
        }))
    }

    fn run_id(&self) -> &str {
        match &self.run_id {
            // Checked to be UTF-8 when the line was read.
            RunId::InLine(range) => std::str::from_utf8(&self.bytes[range.clone()]).unwrap_or(""),
            RunId::Decoded(id) => id,
        }
    }

    fn starts_run(&self) -> bool {
        self.starts
    }

    fn ends_run(&self) -> bool {
        self.ends
    }

    fn unknown_event_type(&self) -> Option<&str> {
        self.unknown.as_deref()
    }
}

/// `line` and a `\n`, in one allocation of the exact size.
fn with_newline(line: &[u8]) -> Box<[u8]> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line);
    bytes.push(b'\n');
    bytes.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_looptrace_wrote_are_copied_through() {
        let trace = include_str!("../../sample_traces/finished.full.jsonl");
        for line in trace.lines() {
            let copied = JsonLine::as_written(line.as_bytes());
            assert_eq!(
                copied.map(|l| l.bytes().to_vec()),
                Some(line.as_bytes().to_vec()),
                "{line}"
            );
        }
    }
}
