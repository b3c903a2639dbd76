//! A borrowed view of one trace line, for readers that need speed (`report`, the reader's own
//! line check): the scanned fields sorted into the event kinds of the trace format, with the
//! fallbacks for older writers, borrowing strings from the line. The serde reader
//! ([`super::Event`]) and this view refuse the same lines: the reader runs [`check_line`]
//! on every line serde alone could have let through (`serde_gaps.rs`), and the differential
//! tests and fuzz target hold the two together.

use std::borrow::Cow;

use super::compact_line::read_fields;
use super::event::error_by_rule;
use super::fields::{key_number, name};
use super::line_error::LineError;
use super::scan::{Fields, TokenCounts};
use crate::run::ExitReason;
use crate::time::unix_ms_from_rfc3339;

const RUN_STARTED: u128 = name(b"run_started");
const MODEL_ACTION: u128 = name(b"model_action");
const TOOL_CALL: u128 = name(b"tool_call");
const OBSERVATION: u128 = name(b"observation");
const MODEL_FEEDBACK: u128 = name(b"model_feedback");
const RUN_FINISHED: u128 = name(b"run_finished");
const FINISH_GATE: u128 = name(b"finish_gate");
const MODEL_RETRY: u128 = name(b"model_retry");
const SCORER_CALL: u128 = name(b"scorer_call");
const INTERNAL_ERROR: u128 = name(b"internal_error");

/// One trace line seen through the fields every reader needs, strings borrowed from the line
/// unless they hold escapes.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRef<'a> {
    /// The run it belongs to.
    pub run_id: Cow<'a, [u8]>,
    /// Its step.
    pub step: u64,
    /// What happened.
    pub kind: EventRefKind<'a>,
    /// The tokens, cost and time it records.
    pub spend: EventSpend,
}

/// The tokens, cost and time one event records: a turn's or a call's, or the whole run's on its
/// ending.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct EventSpend {
    /// `usage`.
    pub tokens: Option<TokenCounts>,
    /// `cost_usd`.
    pub cost_usd: Option<f64>,
    /// `duration_ms`.
    pub duration_ms: Option<f64>,
    /// `ts`, as milliseconds since 1970, when it reads as RFC 3339.
    pub ts_ms: Option<i64>,
}

/// What an event records: the event types of the trace format, with a `model_action` split by
/// its `action_type` and the two endings (`run_finished`, the bare `internal_error`) as one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventRefKind<'a> {
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
    ModelFeedback {
        /// The adapter's kind, if recorded.
        error_kind: Option<Cow<'a, [u8]>>,
    },
    /// A `finish_gate` verdict on a proposed answer.
    FinishGate {
        /// Whether the gate accepted it (missing: not accepted).
        accepted: bool,
    },
    /// A `model_retry`: a failed model call that was tried again; it changes no outcome.
    ModelRetry,
    /// A `scorer_call`: a scorer's model call after the run (a judge); not the run's own spend.
    ScorerCall,
    /// `run_finished`, or a bare `internal_error` event of writers following the write-up.
    Ended {
        /// How the run ended (`internal_error` for the bare event).
        exit_reason: ExitReason,
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
    parse_event(line).is_ok_and(|event| event.kind == EventRefKind::RunStarted)
}

/// Reads one non-blank line (without its `\n`) as an event.
pub fn parse_event(line: &[u8]) -> Result<EventRef<'_>, LineError> {
    let mut fields = Fields::default();
    read_fields(line, &mut fields)?;
    let run_id = fields.run_id.ok_or(LineError::MissingField("run_id"))?;
    let event_type = fields
        .event_type
        .ok_or(LineError::MissingField("event_type"))?;
    let step = fields.step.ok_or(LineError::MissingField("step"))?;
    let ending = match fields.exit_reason {
        // Compared as bytes: the scanner has checked the string's UTF-8 already.
        Some(name) => Some(
            ExitReason::ALL
                .into_iter()
                .find(|reason| reason.as_str().as_bytes() == name.as_ref())
                .ok_or_else(|| {
                    LineError::UnknownExitReason(String::from_utf8_lossy(&name).into_owned())
                })?,
        ),
        None => None,
    };
    let kind = match key_number(&event_type) {
        RUN_STARTED => EventRefKind::RunStarted,
        MODEL_ACTION => match fields.action_type.as_deref().map(key_number) {
            Some(TOOL_CALL) => EventRefKind::ToolCall {
                tool_name: fields.tool_name,
            },
            _ => EventRefKind::OtherAction,
        },
        OBSERVATION => EventRefKind::Observation {
            tool_name: fields.tool_name,
            is_error: error_by_rule(fields.is_error, fields.error_kind.is_some()),
            recorded: fields.is_error.is_some() || fields.error_kind.is_some(),
            error_kind: fields.error_kind,
        },
        MODEL_FEEDBACK => EventRefKind::ModelFeedback {
            error_kind: fields.error_kind,
        },
        FINISH_GATE => EventRefKind::FinishGate {
            accepted: fields.accepted.unwrap_or(false),
        },
        MODEL_RETRY => EventRefKind::ModelRetry,
        SCORER_CALL => EventRefKind::ScorerCall,
        RUN_FINISHED => EventRefKind::Ended {
            exit_reason: ending.ok_or(LineError::MissingField("exit_reason"))?,
            error_kind: fields.error_kind,
            steps_used: fields.steps_used,
            budget: fields.budget,
            verdict: fields.verdict,
        },
        INTERNAL_ERROR => EventRefKind::Ended {
            exit_reason: ExitReason::InternalError,
            error_kind: fields.error_kind,
            steps_used: fields.steps_used,
            budget: None,
            verdict: None,
        },
        _ => EventRefKind::Unknown { event_type },
    };
    let spend = EventSpend {
        tokens: fields.usage,
        cost_usd: fields.cost_usd,
        duration_ms: fields.duration_ms,
        ts_ms: fields.ts.as_deref().and_then(unix_ms_from_rfc3339),
    };
    Ok(EventRef {
        run_id,
        step,
        kind,
        spend,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_write_up_lines() {
        let event = parse_event(br#"{"run_id":"r1","step":1,"event_type":"observation","output":"chars=2;sha256=...","is_error":false}"#).unwrap();
        assert_eq!(
            event.kind,
            EventRefKind::Observation {
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
            EventRefKind::Ended {
                exit_reason: ExitReason::Finished,
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
