//! One trace line. The struct is flat, with the fields of every event type optional, so `jq` and
//! SQL engines read lines directly and old or partial writers' lines still parse.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::digest::HashAlgorithm;
pub use crate::model::Usage;
use crate::run::ExitReason;

/// The format name written in every `run_started` event.
pub const SCHEMA: &str = "looptrace.trace/1";

/// One event: a complete JSON object on one line. Field order here is the order on disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    /// Keeps the events of one run together; one file may hold many runs.
    pub run_id: String,
    /// 0 for `run_started`, then the model turn the event belongs to.
    pub step: u64,
    /// What happened.
    pub event_type: EventType,
    /// `looptrace.trace/1` (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// `summary` or `full` (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<Capture>,
    /// `sha256` or `hmac-sha256` (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<HashAlgorithm>,
    /// The step budget (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// The suite task this run is an attempt at; the run id is unique per attempt (run_started
    /// written by `eval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Summary of the task text (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_summary: Option<String>,
    /// The task text, full capture only (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The recorded run this one replays (run_started of a replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<ReplayOf>,
    /// The hash of the finish gate's configuration, when a gate checks finishes (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_gate_hash: Option<String>,
    /// `tool_call` or `finish` (model_action).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_type: Option<String>,
    /// The tool called (model_action tool_call, observation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The argument names, sorted (model_action tool_call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_keys: Option<Vec<String>>,
    /// The arguments, full capture only (model_action tool_call). Arguments holding a number
    /// beyond the range of an `f64` (Python writes integers of any size) read as absent.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "arguments_if_representable"
    )]
    pub arguments: Option<Map<String, Value>>,
    /// Summary of the answer, observation content or feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The answer, full capture only (model_action finish).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Whether the finish gate accepted the answer (finish_gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<bool>,
    /// Whether an observation is an error; always true for feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// A stable kind for errors: `unknown_tool`, `invalid_json`, `tool_panic`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// Observation or feedback text, full capture only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The model's raw text, full capture only (model_action and model_feedback of raw models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<String>,
    /// How the run ended (run_finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_reason: Option<ExitReason>,
    /// Model turns used (run_finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_used: Option<u32>,
    /// Why the run did not finish: a summary unless the capture is full (run_finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the model call or tool call took, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// RFC 3339 time the event was written or recorded (any event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// Where an imported run came from (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<RunSource>,
    /// The agent that ran (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The model that ran (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// The wire format of a live model (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// The tools offered to the model (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolRef>>,
    /// `sha256:HEX` of the working-folder template's content, when a tools file has one
    /// (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir_hash: Option<String>,
    /// The exit status of a command tool that exited with one other than 0 (observation with
    /// `error_kind: exit_status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// The tool's output was not UTF-8 and was decoded with U+FFFD (observation; absent when
    /// false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lossy: Option<bool>,
    /// False where the source records no tool-error flag (run_started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_errors_recorded: Option<bool>,
    /// The model's id for a tool call (model_action).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Tokens used (model_action: the turn; run_finished: the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Cost in US dollars (model_action: the turn; run_finished: the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Hash of the request sent to a live model (model_action).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_hash: Option<String>,
    /// Which attempt failed (model_retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The HTTP status of a failed model call (model_retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// How long the loop waited before retrying (model_retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// Which budget ran out: `steps` (also when absent), `tokens`, `cost`, `time`, `context`,
    /// `other` (run_finished with max_steps_exceeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// The source's own short ending value (run_finished of an imported run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_ending: Option<String>,
    /// The source submitted on its own after an error exit (run_finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autosubmitted: Option<bool>,
    /// The source records no ending; this one was inferred (run_finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending_inferred: Option<bool>,
    /// Each scorer's verdict on the run (run_finished; imported Inspect scores too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scores: Option<Vec<Score>>,
    /// The scorer that made the call (scorer_call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorer: Option<String>,
    /// The request body sent to a live model, in the canonical JSON its `request_hash` hashes,
    /// full capture only (first event of a turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_body: Option<String>,
    /// A live model's HTTP response body, full capture only (model_action).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_response: Option<String>,
    /// Why the provider stopped generating, on the first event of its turn (model_action).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// A streamed response's chunking: the byte length of each piece of `raw_response` as it
    /// arrived, so a replay sends the same pieces (calls recorded by `looptrace proxy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_chunks: Option<Vec<u64>>,
}

impl TraceEvent {
    /// An event with only the three fields every line has.
    pub fn new(run_id: impl Into<String>, step: u64, event_type: EventType) -> Self {
        TraceEvent {
            run_id: run_id.into(),
            step,
            event_type,
            schema: None,
            capture: None,
            hash: None,
            max_steps: None,
            task_id: None,
            input_summary: None,
            task: None,
            replay_of: None,
            finish_gate_hash: None,
            action_type: None,
            tool_name: None,
            argument_keys: None,
            arguments: None,
            output: None,
            answer: None,
            accepted: None,
            is_error: None,
            error_kind: None,
            content: None,
            raw_output: None,
            exit_reason: None,
            steps_used: None,
            error: None,
            duration_ms: None,
            ts: None,
            source: None,
            agent: None,
            model: None,
            api: None,
            tools: None,
            workdir_hash: None,
            exit_status: None,
            lossy: None,
            tool_errors_recorded: None,
            call_id: None,
            usage: None,
            cost_usd: None,
            request_hash: None,
            finish_reason: None,
            attempt: None,
            http_status: None,
            wait_ms: None,
            budget: None,
            native_ending: None,
            autosubmitted: None,
            ending_inferred: None,
            scores: None,
            request_body: None,
            raw_response: None,
            stream_chunks: None,
            scorer: None,
        }
    }

    /// The exit reason if this event ends its run: `run_finished`, or the bare `internal_error`
    /// event that writers following the write-up emit when a run crashes.
    pub fn ending(&self) -> Option<ExitReason> {
        match self.event_type {
            EventType::RunFinished => self.exit_reason,
            EventType::InternalError => Some(ExitReason::InternalError),
            _ => None,
        }
    }

    /// Whether an observation is an error, by the rule of `docs/report.md`: its `is_error`, or,
    /// when that is missing (older writers), whether it has an `error_kind`.
    pub fn is_error_by_rule(&self) -> bool {
        error_by_rule(self.is_error, self.error_kind.is_some())
    }
}

/// The rule of `docs/report.md` for whether an observation is an error, written once for both
/// readers: its `is_error`, or, when that is missing (older writers), whether it has an
/// `error_kind`.
pub(crate) fn error_by_rule(is_error: Option<bool>, has_error_kind: bool) -> bool {
    is_error.unwrap_or(has_error_kind)
}

/// Reads `arguments` from their own text, so that their nesting is counted from the arguments
/// (not from the line) and a number too large for an `f64` leaves them absent instead of
/// making the line malformed.
fn arguments_if_representable<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Map<String, Value>>, D::Error> {
    let raw = Option::<Box<serde_json::value::RawValue>>::deserialize(deserializer)?;
    let Some(raw) = raw else { return Ok(None) };
    match serde_json::from_str::<Map<String, Value>>(raw.get()) {
        Ok(arguments) => Ok(Some(arguments)),
        Err(err) if err.classify() == serde_json::error::Category::Data => {
            Err(serde::de::Error::invalid_type(
                serde::de::Unexpected::Other("a value other than an object"),
                &"an object",
            ))
        }
        Err(_) => Ok(None),
    }
}

/// The kinds of event. Unknown kinds from newer writers are kept, not rejected.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    /// The run began.
    RunStarted,
    /// The model proposed an action.
    ModelAction,
    /// The runtime answered a tool call.
    Observation,
    /// Invalid model output was turned into feedback.
    ModelFeedback,
    /// The finish gate checked a proposed answer.
    FinishGate,
    /// The run ended.
    RunFinished,
    /// A crashed run's end, as writers following the write-up record it.
    InternalError,
    /// A failed model call that was retried.
    ModelRetry,
    /// A scorer's model call after the run (a judge grading the answer), before `run_finished`.
    ScorerCall,
    /// A type this version does not know.
    Other(String),
}

impl EventType {
    /// The name on disk.
    pub fn as_str(&self) -> &str {
        match self {
            EventType::RunStarted => "run_started",
            EventType::ModelAction => "model_action",
            EventType::Observation => "observation",
            EventType::ModelFeedback => "model_feedback",
            EventType::FinishGate => "finish_gate",
            EventType::RunFinished => "run_finished",
            EventType::InternalError => "internal_error",
            EventType::ModelRetry => "model_retry",
            EventType::ScorerCall => "scorer_call",
            EventType::Other(name) => name,
        }
    }

    /// Reads a name; unknown names become `Other`.
    pub fn from_name(name: &str) -> EventType {
        match name {
            "run_started" => EventType::RunStarted,
            "model_action" => EventType::ModelAction,
            "observation" => EventType::Observation,
            "model_feedback" => EventType::ModelFeedback,
            "finish_gate" => EventType::FinishGate,
            "run_finished" => EventType::RunFinished,
            "internal_error" => EventType::InternalError,
            "model_retry" => EventType::ModelRetry,
            "scorer_call" => EventType::ScorerCall,
            other => EventType::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(EventType::from_name(&name))
    }
}

/// How much of a run's content a trace keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capture {
    /// Character counts and hashes only (the default).
    #[default]
    Summary,
    /// The text itself as well: needed for replay.
    Full,
}

impl Capture {
    /// The name on disk.
    pub fn as_str(self) -> &'static str {
        match self {
            Capture::Summary => "summary",
            Capture::Full => "full",
        }
    }
}

/// One scorer's verdict on a run: `../shared` RULES' `{name, kind, passed, value, explanation}`,
/// every key written (null when unknown) so that readers see one shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The scorer's name.
    pub name: String,
    /// What kind of scorer gave it (`inspect` for a score imported from an Inspect log).
    pub kind: String,
    /// Whether the run passed this scorer; null when the score carries no verdict.
    #[serde(default)]
    pub passed: Option<bool>,
    /// The score as a number, when it has one.
    #[serde(default)]
    pub value: Option<f64>,
    /// Why, under the capture rules: a summary unless full capture.
    #[serde(default)]
    pub explanation: Option<String>,
}

impl Score {
    /// The verdict of a list of scores by the pass rule: `Some(true)` when every score with a
    /// verdict passed, `Some(false)` when one failed, `None` when none has a verdict.
    pub fn verdict(scores: &[Score]) -> Option<bool> {
        scores
            .iter()
            .filter_map(|score| score.passed)
            .reduce(|all, passed| all && passed)
    }
}

/// Which recorded run a replay reran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayOf {
    /// The recording's file name (no folders: paths are not recorded).
    pub source: String,
    /// The recorded run id.
    pub run_id: String,
}

/// Where an imported run came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSource {
    /// The `--from` format name.
    pub format: String,
    /// The file name (never a path).
    pub file: String,
    /// The source's own id of the run, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_id: Option<String>,
}

/// A model by provider and name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    /// Who serves it, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Its name.
    pub name: String,
}

/// A tool offered to the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRef {
    /// The registered name.
    pub name: String,
    /// Hash of its spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
}
