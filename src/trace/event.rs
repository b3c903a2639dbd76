//! One trace line as a type: an [`Event`] envelope (run, step, time) around an [`EventKind`],
//! one variant per event type of `looptrace.trace/1`, each holding the fields that type has.
//! On disk the fields stay flat, in one object per line, so `jq` and SQL engines read lines
//! directly; `wire.rs` holds that flat shape and the conversions.

use serde_json::{Map, Value};

pub use super::values::{Capture, ModelRef, ReplayOf, RunSource, Score, ToolRef};
use crate::digest::HashAlgorithm;
pub use crate::model::Usage;
use crate::run::ExitReason;

/// The format name written in every `run_started` event.
pub const SCHEMA: &str = "looptrace.trace/1";

/// One event: a complete JSON object on one line.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Keeps the events of one run together; one file may hold many runs.
    pub run_id: String,
    /// 0 for `run_started`, then the model turn the event belongs to.
    pub step: u64,
    /// RFC 3339 time the event was written or recorded (any event).
    pub ts: Option<String>,
    /// What happened, with the fields of its type.
    pub kind: EventKind,
}

/// What happened: one variant per `event_type`.
#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// `run_started`: the run began.
    RunStarted(RunStarted),
    /// `model_action`: the model proposed an action.
    ModelAction(ModelAction),
    /// `observation`: the runtime answered a tool call.
    Observation(Observation),
    /// `model_feedback`: invalid model output was turned into feedback.
    ModelFeedback(ModelFeedback),
    /// `finish_gate`: the finish gate checked a proposed answer.
    FinishGate(FinishGate),
    /// `model_retry`: a failed model call that was retried.
    ModelRetry(ModelRetry),
    /// `scorer_call`: a scorer's model call after the run (a judge grading the answer).
    ScorerCall(ScorerCall),
    /// `run_finished`: the run ended.
    RunFinished(RunFinished),
    /// `internal_error`: a crashed run's end, as writers following the write-up record it.
    InternalError(InternalError),
    /// An event type this version does not know, kept rather than rejected.
    Unknown {
        /// Its `event_type`.
        event_type: String,
        /// The fields of the format this version knows that the line has, besides `run_id`,
        /// `step`, `event_type` and `ts` (keys no version of the format defines are ignored,
        /// as on every line).
        fields: Map<String, Value>,
    },
}

/// The fields of `run_started`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunStarted {
    /// `looptrace.trace/1`.
    pub schema: Option<String>,
    /// `summary` or `full`.
    pub capture: Option<Capture>,
    /// `sha256` or `hmac-sha256`.
    pub hash: Option<HashAlgorithm>,
    /// The step budget.
    pub max_steps: Option<u32>,
    /// The suite task this run is an attempt at; the run id is unique per attempt (`eval`).
    pub task_id: Option<String>,
    /// Summary of the task text.
    pub input_summary: Option<String>,
    /// The task text, full capture only.
    pub task: Option<String>,
    /// The recorded run this one replays.
    pub replay_of: Option<ReplayOf>,
    /// The hash of the finish gate's configuration, when a gate checks finishes.
    pub finish_gate_hash: Option<String>,
    /// Where an imported run came from.
    pub source: Option<RunSource>,
    /// The agent that ran.
    pub agent: Option<String>,
    /// The model that ran.
    pub model: Option<ModelRef>,
    /// The wire format of a live model.
    pub api: Option<String>,
    /// The tools offered to the model.
    pub tools: Option<Vec<ToolRef>>,
    /// `sha256:HEX` of the working-folder template's content, when a tools file has one.
    pub workdir_hash: Option<String>,
    /// False where the source records no tool-error flag.
    pub tool_errors_recorded: Option<bool>,
}

/// What a model call left behind, on the first event of its turn (and on a scorer's call or a
/// failed call the proxy recorded).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelCall {
    /// Tokens used by the call.
    pub usage: Option<Usage>,
    /// Cost in US dollars.
    pub cost_usd: Option<f64>,
    /// Hash of the request sent to a live model.
    pub request_hash: Option<String>,
    /// The request body, in the canonical JSON its `request_hash` hashes, full capture only.
    pub request_body: Option<String>,
    /// A live model's HTTP response body, full capture only.
    pub raw_response: Option<String>,
    /// Why the provider stopped generating.
    pub finish_reason: Option<String>,
    /// A streamed response's chunking: the byte length of each piece of `raw_response` as it
    /// arrived, so a replay sends the same pieces (calls recorded by `looptrace proxy`).
    pub stream_chunks: Option<Vec<u64>>,
}

impl ModelCall {
    /// Whether the call left nothing behind.
    pub fn is_empty(&self) -> bool {
        *self == ModelCall::default()
    }
}

/// The fields of `model_action`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelAction {
    /// `tool_call` or `finish`.
    pub action_type: Option<String>,
    /// The tool called (tool_call).
    pub tool_name: Option<String>,
    /// The argument names, sorted (tool_call).
    pub argument_keys: Option<Vec<String>>,
    /// The arguments, full capture only (tool_call). Arguments holding a number beyond the
    /// range of an `f64` (Python writes integers of any size) read as absent.
    pub arguments: Option<Map<String, Value>>,
    /// Summary of the answer (finish).
    pub output: Option<String>,
    /// The answer, full capture only (finish).
    pub answer: Option<String>,
    /// The model's raw text, full capture only (raw models).
    pub raw_output: Option<String>,
    /// How long the model call took, in milliseconds.
    pub duration_ms: Option<f64>,
    /// The model's id for a tool call.
    pub call_id: Option<String>,
    /// What the turn's model call left behind (first event of a turn).
    pub call: ModelCall,
}

/// The fields of `observation`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observation {
    /// The tool that answered.
    pub tool_name: Option<String>,
    /// Summary of the content.
    pub output: Option<String>,
    /// Whether the tool call failed.
    pub is_error: Option<bool>,
    /// A stable kind for errors: `unknown_tool`, `invalid_arguments`, `exit_status`, ...
    pub error_kind: Option<String>,
    /// The exit status of a command tool that exited with one other than 0.
    pub exit_status: Option<i32>,
    /// The tool's output was not UTF-8 and was decoded with U+FFFD (absent when false).
    pub lossy: Option<bool>,
    /// The content, full capture only.
    pub content: Option<String>,
    /// How long the tool call took, in milliseconds.
    pub duration_ms: Option<f64>,
    /// The model's id of the call answered.
    pub call_id: Option<String>,
}

impl Observation {
    /// Whether the observation is an error, by the rule of `docs/report.md`: its `is_error`,
    /// or, when that is missing (older writers), whether it has an `error_kind`.
    pub fn is_error_by_rule(&self) -> bool {
        error_by_rule(self.is_error, self.error_kind.is_some())
    }
}

/// The fields of `model_feedback`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelFeedback {
    /// Summary of the feedback.
    pub output: Option<String>,
    /// Always true.
    pub is_error: Option<bool>,
    /// Why the output was invalid: `invalid_json`, `missing_field`, ...
    pub error_kind: Option<String>,
    /// The feedback text, full capture only.
    pub content: Option<String>,
    /// The model's raw text, full capture only.
    pub raw_output: Option<String>,
    /// How long the model call took, in milliseconds.
    pub duration_ms: Option<f64>,
    /// The model's id of a tool call whose output was invalid.
    pub call_id: Option<String>,
    /// What the turn's model call left behind (first event of a turn).
    pub call: ModelCall,
}

/// The fields of `finish_gate`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FinishGate {
    /// Whether the gate accepted the answer.
    pub accepted: Option<bool>,
    /// Summary of the gate's output.
    pub output: Option<String>,
    /// The gate's output, full capture only.
    pub content: Option<String>,
    /// How long the check took, in milliseconds.
    pub duration_ms: Option<f64>,
}

/// The fields of `model_retry`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelRetry {
    /// Which attempt failed, from 1.
    pub attempt: Option<u32>,
    /// Why: `rate_limited`, `provider_unavailable`, `timeout`, `connection_failed`, ...
    pub error_kind: Option<String>,
    /// The HTTP status, when the server answered.
    pub http_status: Option<u16>,
    /// How long the loop waited before retrying.
    pub wait_ms: Option<u64>,
    /// What went wrong (calls recorded by `looptrace proxy`).
    pub error: Option<String>,
    /// How long the failed call took, in milliseconds.
    pub duration_ms: Option<f64>,
    /// What the failed call left behind (calls recorded by `looptrace proxy`).
    pub call: ModelCall,
}

/// The fields of `scorer_call`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScorerCall {
    /// The scorer that made the call.
    pub scorer: Option<String>,
    /// The model's id for the call, if any.
    pub call_id: Option<String>,
    /// What the call left behind.
    pub call: ModelCall,
}

/// The fields of `run_finished`. The exit reason is not optional: a `run_finished` line
/// without one does not read as an event.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFinished {
    /// How the run ended.
    pub exit_reason: ExitReason,
    /// Model turns used.
    pub steps_used: Option<u32>,
    /// Why the run did not finish: a stable kind.
    pub error_kind: Option<String>,
    /// Why the run did not finish: a summary unless the capture is full.
    pub error: Option<String>,
    /// Which budget ran out: `steps` (also when absent), `tokens`, `cost`, `time`, `context`,
    /// `other` (with max_steps_exceeded).
    pub budget: Option<String>,
    /// The source's own short ending value (imported runs).
    pub native_ending: Option<String>,
    /// The source submitted on its own after an error exit.
    pub autosubmitted: Option<bool>,
    /// The source records no ending; this one was inferred.
    pub ending_inferred: Option<bool>,
    /// Each scorer's verdict on the run (imported Inspect scores too).
    pub scores: Option<Vec<Score>>,
    /// Tokens used by the whole run.
    pub usage: Option<Usage>,
    /// Cost of the whole run in US dollars.
    pub cost_usd: Option<f64>,
    /// The run's wall time in milliseconds, from `run_started`.
    pub duration_ms: Option<f64>,
}

impl RunFinished {
    /// An ending with this exit reason and nothing else.
    pub fn new(exit_reason: ExitReason) -> Self {
        RunFinished {
            exit_reason,
            steps_used: None,
            error_kind: None,
            error: None,
            budget: None,
            native_ending: None,
            autosubmitted: None,
            ending_inferred: None,
            scores: None,
            usage: None,
            cost_usd: None,
            duration_ms: None,
        }
    }
}

/// The fields of a bare `internal_error` event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InternalError {
    /// Model turns used, if recorded.
    pub steps_used: Option<u32>,
    /// A stable kind, if recorded.
    pub error_kind: Option<String>,
    /// What went wrong: a summary unless the capture is full.
    pub error: Option<String>,
    /// How long the run took, in milliseconds.
    pub duration_ms: Option<f64>,
}

impl Event {
    /// An event of `kind` without a time.
    pub fn new(run_id: impl Into<String>, step: u64, kind: impl Into<EventKind>) -> Self {
        Event {
            run_id: run_id.into(),
            step,
            ts: None,
            kind: kind.into(),
        }
    }

    /// The `event_type` on disk.
    pub fn event_type(&self) -> &str {
        self.kind.name()
    }

    /// Whether the event begins a run.
    pub fn is_run_started(&self) -> bool {
        matches!(self.kind, EventKind::RunStarted(_))
    }

    /// The exit reason if this event ends its run: `run_finished`, or the bare `internal_error`
    /// event that writers following the write-up emit when a run crashes.
    pub fn ending(&self) -> Option<ExitReason> {
        match &self.kind {
            EventKind::RunFinished(finished) => Some(finished.exit_reason),
            EventKind::InternalError(_) => Some(ExitReason::InternalError),
            _ => None,
        }
    }

    /// The fields of a `run_finished` event.
    pub fn run_finished(&self) -> Option<&RunFinished> {
        match &self.kind {
            EventKind::RunFinished(finished) => Some(finished),
            _ => None,
        }
    }

    /// What a model call left behind, for the events that record one.
    pub fn model_call(&self) -> Option<&ModelCall> {
        match &self.kind {
            EventKind::ModelAction(action) => Some(&action.call),
            EventKind::ModelFeedback(feedback) => Some(&feedback.call),
            EventKind::ModelRetry(retry) => Some(&retry.call),
            EventKind::ScorerCall(scorer) => Some(&scorer.call),
            _ => None,
        }
    }

    /// The tokens the event records: a call's, or the whole run's on `run_finished`.
    pub fn usage(&self) -> Option<&Usage> {
        match &self.kind {
            EventKind::RunFinished(finished) => finished.usage.as_ref(),
            _ => self.model_call().and_then(|call| call.usage.as_ref()),
        }
    }

    /// The cost the event records: a call's, or the whole run's on `run_finished`.
    pub fn cost_usd(&self) -> Option<f64> {
        match &self.kind {
            EventKind::RunFinished(finished) => finished.cost_usd,
            _ => self.model_call().and_then(|call| call.cost_usd),
        }
    }

    /// How long the call, check or run the event records took, in milliseconds.
    pub fn duration_ms(&self) -> Option<f64> {
        match &self.kind {
            EventKind::ModelAction(e) => e.duration_ms,
            EventKind::Observation(e) => e.duration_ms,
            EventKind::ModelFeedback(e) => e.duration_ms,
            EventKind::FinishGate(e) => e.duration_ms,
            EventKind::ModelRetry(e) => e.duration_ms,
            EventKind::RunFinished(e) => e.duration_ms,
            EventKind::InternalError(e) => e.duration_ms,
            EventKind::RunStarted(_) | EventKind::ScorerCall(_) | EventKind::Unknown { .. } => None,
        }
    }

    /// The event without its times (`ts`, `duration_ms`): what differs between two
    /// recordings of the same run.
    pub fn untimed(&self) -> Event {
        let mut event = self.clone();
        event.ts = None;
        let duration_ms = match &mut event.kind {
            EventKind::ModelAction(e) => &mut e.duration_ms,
            EventKind::Observation(e) => &mut e.duration_ms,
            EventKind::ModelFeedback(e) => &mut e.duration_ms,
            EventKind::FinishGate(e) => &mut e.duration_ms,
            EventKind::ModelRetry(e) => &mut e.duration_ms,
            EventKind::RunFinished(e) => &mut e.duration_ms,
            EventKind::InternalError(e) => &mut e.duration_ms,
            EventKind::RunStarted(_) | EventKind::ScorerCall(_) => return event,
            EventKind::Unknown { fields, .. } => {
                fields.remove("duration_ms");
                return event;
            }
        };
        *duration_ms = None;
        event
    }

    /// The stable kind of an error the event records.
    pub fn error_kind(&self) -> Option<&str> {
        match &self.kind {
            EventKind::Observation(e) => e.error_kind.as_deref(),
            EventKind::ModelFeedback(e) => e.error_kind.as_deref(),
            EventKind::ModelRetry(e) => e.error_kind.as_deref(),
            EventKind::RunFinished(e) => e.error_kind.as_deref(),
            EventKind::InternalError(e) => e.error_kind.as_deref(),
            _ => None,
        }
    }

    /// The model turns a run's ending records.
    pub fn steps_used(&self) -> Option<u32> {
        match &self.kind {
            EventKind::RunFinished(e) => e.steps_used,
            EventKind::InternalError(e) => e.steps_used,
            _ => None,
        }
    }

    /// The tool an action calls or an observation answers for.
    pub fn tool_name(&self) -> Option<&str> {
        match &self.kind {
            EventKind::ModelAction(e) => e.tool_name.as_deref(),
            EventKind::Observation(e) => e.tool_name.as_deref(),
            _ => None,
        }
    }

    /// The model's id of the tool call the event belongs to.
    pub fn call_id(&self) -> Option<&str> {
        match &self.kind {
            EventKind::ModelAction(e) => e.call_id.as_deref(),
            EventKind::Observation(e) => e.call_id.as_deref(),
            EventKind::ModelFeedback(e) => e.call_id.as_deref(),
            EventKind::ScorerCall(e) => e.call_id.as_deref(),
            _ => None,
        }
    }
}

impl EventKind {
    /// The `event_type` on disk.
    pub fn name(&self) -> &str {
        match self {
            EventKind::RunStarted(_) => "run_started",
            EventKind::ModelAction(_) => "model_action",
            EventKind::Observation(_) => "observation",
            EventKind::ModelFeedback(_) => "model_feedback",
            EventKind::FinishGate(_) => "finish_gate",
            EventKind::ModelRetry(_) => "model_retry",
            EventKind::ScorerCall(_) => "scorer_call",
            EventKind::RunFinished(_) => "run_finished",
            EventKind::InternalError(_) => "internal_error",
            EventKind::Unknown { event_type, .. } => event_type,
        }
    }
}

macro_rules! kind_from {
    ($($variant:ident),*) => {$(
        impl From<$variant> for EventKind {
            fn from(fields: $variant) -> Self {
                EventKind::$variant(fields)
            }
        }
    )*};
}

kind_from!(
    RunStarted,
    ModelAction,
    Observation,
    ModelFeedback,
    FinishGate,
    ModelRetry,
    ScorerCall,
    RunFinished,
    InternalError
);

/// The rule of `docs/report.md` for whether an observation is an error, written once for both
/// readers: its `is_error`, or, when that is missing (older writers), whether it has an
/// `error_kind`.
pub(crate) fn error_by_rule(is_error: Option<bool>, has_error_kind: bool) -> bool {
    is_error.unwrap_or(has_error_kind)
}
