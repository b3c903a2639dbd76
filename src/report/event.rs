//! One trace event as the report sees it: the scanned fields sorted into the event kinds of the
//! trace format, with the fallbacks for older writers.

use std::borrow::Cow;

use super::error::LineError;
use super::model::Ending;
use super::scan::{TokenCounts, key_number, name, scan_line};

const RUN_STARTED: u128 = name(b"run_started");
const MODEL_ACTION: u128 = name(b"model_action");
const TOOL_CALL: u128 = name(b"tool_call");
const OBSERVATION: u128 = name(b"observation");
const MODEL_FEEDBACK: u128 = name(b"model_feedback");
const RUN_FINISHED: u128 = name(b"run_finished");
const FINISH_GATE: u128 = name(b"finish_gate");
const MODEL_RETRY: u128 = name(b"model_retry");
const INTERNAL_ERROR: u128 = name(b"internal_error");

/// An event of one run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event<'a> {
    /// The run it belongs to.
    pub run_id: Cow<'a, [u8]>,
    /// Its step.
    pub step: u64,
    /// What happened.
    pub kind: EventKind<'a>,
    /// The tokens, cost and time it records.
    pub spend: EventSpend,
}

/// The tokens, cost and time one event records: a turn's or a call's, or the whole run's on its
/// ending.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct EventSpend {
    /// `usage`.
    pub tokens: Option<TokenCounts>,
    /// `cost_usd`.
    pub cost_usd: Option<f64>,
    /// `duration_ms`.
    pub duration_ms: Option<f64>,
    /// `ts`, as milliseconds since 1970, when it reads as RFC 3339.
    pub ts_ms: Option<i64>,
}

/// What an event records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EventKind<'a> {
    /// `run_started`.
    RunStarted,
    /// A `model_action` calling a tool.
    ToolCall {
        /// The tool, if named.
        tool_name: Option<Cow<'a, [u8]>>,
    },
    /// Any other `model_action` (`finish`).
    OtherAction,
    /// An `observation`.
    Observation {
        /// The tool, if named (older writers leave it out).
        tool_name: Option<Cow<'a, [u8]>>,
        /// Whether the tool call failed (missing: whether there is an `error_kind`).
        is_error: bool,
        /// Whether the writer recorded the outcome at all (`is_error` or `error_kind` present);
        /// imports of sources without an error flag leave both out.
        recorded: bool,
        /// Why, if it did.
        error_kind: Option<Cow<'a, [u8]>>,
    },
    /// A `model_feedback` on invalid model output.
    Feedback {
        /// The adapter's kind, if recorded.
        error_kind: Option<Cow<'a, [u8]>>,
    },
    /// A `finish_gate` verdict on a proposed answer.
    GateVerdict {
        /// Whether the gate accepted it (missing: not accepted).
        accepted: bool,
    },
    /// A `model_retry`: a failed model call that was tried again; it changes no outcome.
    Retry,
    /// `run_finished`, or a bare `internal_error` event of writers following the write-up.
    Ended {
        /// How the run ended.
        ending: Ending,
        /// Why, if recorded.
        error_kind: Option<Cow<'a, [u8]>>,
        /// `steps_used`, if recorded.
        steps_used: Option<u64>,
        /// Which budget ran out, if recorded.
        budget: Option<Cow<'a, [u8]>>,
        /// Whether its scores passed (`None`: no scores with a verdict).
        verdict: Option<bool>,
    },
    /// An event type this version does not know.
    Unknown {
        /// Its `event_type`.
        event_type: Cow<'a, [u8]>,
    },
}

/// Checks one non-blank line (without its `\n`) by the rules of a well-formed trace line that
/// every reader follows (`docs/report.md`, "Malformed means").
pub fn check_line(line: &[u8]) -> Result<(), LineError> {
    parse_event(line).map(drop)
}

/// Whether a line is a well-formed `run_started` event.
pub fn is_run_started(line: &[u8]) -> bool {
    parse_event(line).is_ok_and(|event| event.kind == EventKind::RunStarted)
}

/// Reads one non-blank line (without its `\n`) as an event.
pub(crate) fn parse_event(line: &[u8]) -> Result<Event<'_>, LineError> {
    let fields = scan_line(line)?;
    let run_id = fields.run_id.ok_or(LineError::MissingField("run_id"))?;
    let event_type = fields
        .event_type
        .ok_or(LineError::MissingField("event_type"))?;
    let step = fields.step.ok_or(LineError::MissingField("step"))?;
    let ending = match fields.exit_reason {
        Some(name) => {
            let name = String::from_utf8_lossy(&name);
            let ending = Ending::from_exit_reason(&name);
            Some(ending.ok_or_else(|| LineError::UnknownExitReason(name.into_owned()))?)
        }
        None => None,
    };
    let kind = match key_number(&event_type) {
        RUN_STARTED => EventKind::RunStarted,
        MODEL_ACTION => match fields.action_type.as_deref().map(key_number) {
            Some(TOOL_CALL) => EventKind::ToolCall {
                tool_name: fields.tool_name,
            },
            _ => EventKind::OtherAction,
        },
        OBSERVATION => EventKind::Observation {
            tool_name: fields.tool_name,
            is_error: fields.is_error.unwrap_or(fields.error_kind.is_some()),
            recorded: fields.is_error.is_some() || fields.error_kind.is_some(),
            error_kind: fields.error_kind,
        },
        MODEL_FEEDBACK => EventKind::Feedback {
            error_kind: fields.error_kind,
        },
        FINISH_GATE => EventKind::GateVerdict {
            accepted: fields.accepted.unwrap_or(false),
        },
        MODEL_RETRY => EventKind::Retry,
        RUN_FINISHED => EventKind::Ended {
            ending: ending.ok_or(LineError::MissingField("exit_reason"))?,
            error_kind: fields.error_kind,
            steps_used: fields.steps_used,
            budget: fields.budget,
            verdict: fields.verdict,
        },
        INTERNAL_ERROR => EventKind::Ended {
            ending: Ending::InternalError,
            error_kind: fields.error_kind,
            steps_used: fields.steps_used,
            budget: None,
            verdict: None,
        },
        _ => EventKind::Unknown { event_type },
    };
    let spend = EventSpend {
        tokens: fields.usage,
        cost_usd: fields.cost_usd,
        duration_ms: fields.duration_ms,
        ts_ms: fields.ts.as_deref().and_then(rfc3339_ms),
    };
    Ok(Event {
        run_id,
        step,
        kind,
        spend,
    })
}

/// Milliseconds since 1970 of an RFC 3339 time (`2025-06-01T12:00:00.250Z`, `...+02:00`); `None`
/// for anything else. Fractions past milliseconds are cut.
pub(crate) fn rfc3339_ms(text: &[u8]) -> Option<i64> {
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.iter().try_fold(0i64, |value, &byte| {
            byte.is_ascii_digit()
                .then(|| value * 10 + i64::from(byte - b'0'))
        })
    };
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators
        .iter()
        .any(|&(at, byte)| text.get(at) != Some(&byte))
        || !matches!(text.get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    let mut millis = 0;
    if text.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while text.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == start {
            return None;
        }
        let kept = (at - start).min(3);
        millis = digits(start..start + kept)? * 10i64.pow(3 - kept as u32);
    }
    let offset_minutes = match text.get(at..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), ..] if text.len() == at + 6 && text[at + 3] == b':' => {
            let minutes = digits(at + 1..at + 3)? * 60 + digits(at + 4..at + 6)?;
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };
    // Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1_000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rfc3339_times_as_milliseconds_since_1970() {
        assert_eq!(rfc3339_ms(b"1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339_ms(b"2000-03-01T00:00:01.5Z"), Some(951_868_801_500));
        assert_eq!(
            rfc3339_ms(b"2025-06-01T14:00:00.123456+02:00"),
            rfc3339_ms(b"2025-06-01T12:00:00.123Z")
        );
        for bad in [
            &b"2025-06-01"[..],
            b"2025-13-01T00:00:00Z",
            b"2025-06-01T00:00:00",
            b"x",
        ] {
            assert_eq!(rfc3339_ms(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn reads_the_write_up_lines() {
        let event = parse_event(br#"{"run_id":"r1","step":1,"event_type":"observation","output":"chars=2;sha256=...","is_error":false}"#).unwrap();
        assert_eq!(
            event.kind,
            EventKind::Observation {
                tool_name: None,
                is_error: false,
                recorded: true,
                error_kind: None
            }
        );
        let event = parse_event(
            br#"{"run_id":"r1","step":2,"event_type":"run_finished","exit_reason":"finished"}"#,
        )
        .unwrap();
        assert_eq!(
            event.kind,
            EventKind::Ended {
                ending: Ending::Finished,
                error_kind: None,
                steps_used: None,
                budget: None,
                verdict: None,
            }
        );
    }

    #[test]
    fn rejects_events_without_their_required_fields() {
        assert_eq!(
            parse_event(br#"{"step":0,"event_type":"run_started"}"#),
            Err(LineError::MissingField("run_id"))
        );
        assert_eq!(
            parse_event(br#"{"run_id":"r","step":0}"#),
            Err(LineError::MissingField("event_type"))
        );
        assert_eq!(
            parse_event(br#"{"run_id":"r","event_type":"x"}"#),
            Err(LineError::MissingField("step"))
        );
        assert_eq!(
            parse_event(br#"{"run_id":"r","step":1,"event_type":"run_finished"}"#),
            Err(LineError::MissingField("exit_reason"))
        );
        assert_eq!(
            parse_event(
                br#"{"run_id":"r","step":1,"event_type":"run_finished","exit_reason":"timeout"}"#
            ),
            Err(LineError::UnknownExitReason("timeout".to_owned()))
        );
    }
}
