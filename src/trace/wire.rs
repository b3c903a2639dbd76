//! The flat shape of a trace line: every field of every event type optional, in the order they
//! are written. [`Event`] is read through it (then checked: a `run_finished` without
//! `exit_reason` is no event) and written through it, borrowing the event's values, so the bytes
//! on disk are those of the flat struct this replaced.

use std::borrow::{Borrow, Cow};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::event::{
    Capture, Event, EventKind, FinishGate, InternalError, ModelAction, ModelCall, ModelFeedback,
    ModelRef, ModelRetry, Observation, ReplayOf, RunFinished, RunSource, RunStarted, Score,
    ScorerCall, ToolRef, Usage,
};
use crate::digest::HashAlgorithm;
use crate::run::ExitReason;

/// Why a line that is valid JSON of the right shape is still no event.
pub(crate) const RUN_FINISHED_WITHOUT_EXIT_REASON: &str = "run_finished without `exit_reason`";

/// One line's fields, as written. Field order here is the order on disk.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Wire<'a> {
    pub(crate) run_id: Cow<'a, str>,
    pub(crate) step: u64,
    // Borrowed where the line has no escapes: it only picks the event's kind, so it is never
    // copied.
    #[serde(borrow)]
    pub(crate) event_type: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schema: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    capture: Option<Capture>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hash: Option<HashAlgorithm>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_steps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task_id: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input_summary: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replay_of: Option<Cow<'a, ReplayOf>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish_gate_hash: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    action_type: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    argument_keys: Option<Cow<'a, [String]>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "arguments_if_representable"
    )]
    arguments: Option<Cow<'a, Map<String, Value>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accepted: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error_kind: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw_output: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exit_reason: Option<ExitReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    steps_used: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duration_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ts: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<Cow<'a, RunSource>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<Cow<'a, ModelRef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tools: Option<Cow<'a, [ToolRef]>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workdir_hash: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exit_status: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lossy: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_errors_recorded: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    request_hash: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wait_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    budget: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    native_ending: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    autosubmitted: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ending_inferred: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scores: Option<Cow<'a, [Score]>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scorer: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    request_body: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw_response: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream_chunks: Option<Cow<'a, [u64]>>,
}

/// Reads `arguments` from their own text, so that their nesting is counted from the arguments
/// (not from the line) and a number too large for an `f64` leaves them absent instead of
/// making the line malformed.
fn arguments_if_representable<'de, 'a, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Cow<'a, Map<String, Value>>>, D::Error> {
    let raw = Option::<Box<serde_json::value::RawValue>>::deserialize(deserializer)?;
    let Some(raw) = raw else { return Ok(None) };
    match serde_json::from_str::<Map<String, Value>>(raw.get()) {
        Ok(arguments) => Ok(Some(Cow::Owned(arguments))),
        Err(err) if err.classify() == serde_json::error::Category::Data => {
            Err(serde::de::Error::invalid_type(
                serde::de::Unexpected::Other("a value other than an object"),
                &"an object",
            ))
        }
        Err(_) => Ok(None),
    }
}

/// A field of the event, lent to the line.
fn lend<T: ToOwned + ?Sized>(value: &Option<T::Owned>) -> Option<Cow<'_, T>> {
    value.as_ref().map(|value| Cow::Borrowed(value.borrow()))
}

/// A field of the line, given to the event.
fn own<T: ToOwned + ?Sized>(value: Option<Cow<'_, T>>) -> Option<T::Owned> {
    value.map(Cow::into_owned)
}

impl<'a> Wire<'a> {
    /// A line with only the fields every line has.
    fn bare(run_id: &'a str, step: u64, event_type: &'a str) -> Wire<'a> {
        Wire {
            run_id: Cow::Borrowed(run_id),
            step,
            event_type: Cow::Borrowed(event_type),
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
            attempt: None,
            http_status: None,
            wait_ms: None,
            budget: None,
            native_ending: None,
            autosubmitted: None,
            ending_inferred: None,
            scores: None,
            scorer: None,
            request_body: None,
            raw_response: None,
            finish_reason: None,
            stream_chunks: None,
        }
    }

    /// The line of `event`, borrowing its values.
    pub(crate) fn of(event: &'a Event) -> Result<Wire<'a>, serde_json::Error> {
        let mut w = Wire::bare(&event.run_id, event.step, event.kind.name());
        match &event.kind {
            EventKind::RunStarted(e) => {
                w.schema = lend(&e.schema);
                w.capture = e.capture;
                w.hash = e.hash;
                w.max_steps = e.max_steps;
                w.task_id = lend(&e.task_id);
                w.input_summary = lend(&e.input_summary);
                w.task = lend(&e.task);
                w.replay_of = lend(&e.replay_of);
                w.finish_gate_hash = lend(&e.finish_gate_hash);
                w.source = lend(&e.source);
                w.agent = lend(&e.agent);
                w.model = lend(&e.model);
                w.api = lend(&e.api);
                w.tools = lend(&e.tools);
                w.workdir_hash = lend(&e.workdir_hash);
                w.tool_errors_recorded = e.tool_errors_recorded;
            }
            EventKind::ModelAction(e) => {
                w.action_type = lend(&e.action_type);
                w.tool_name = lend(&e.tool_name);
                w.argument_keys = lend(&e.argument_keys);
                w.arguments = lend(&e.arguments);
                w.output = lend(&e.output);
                w.answer = lend(&e.answer);
                w.raw_output = lend(&e.raw_output);
                w.duration_ms = e.duration_ms;
                w.call_id = lend(&e.call_id);
                w.lend_call(&e.call);
            }
            EventKind::Observation(e) => {
                w.tool_name = lend(&e.tool_name);
                w.output = lend(&e.output);
                w.is_error = e.is_error;
                w.error_kind = lend(&e.error_kind);
                w.exit_status = e.exit_status;
                w.lossy = e.lossy;
                w.content = lend(&e.content);
                w.duration_ms = e.duration_ms;
                w.call_id = lend(&e.call_id);
            }
            EventKind::ModelFeedback(e) => {
                w.output = lend(&e.output);
                w.is_error = e.is_error;
                w.error_kind = lend(&e.error_kind);
                w.content = lend(&e.content);
                w.raw_output = lend(&e.raw_output);
                w.duration_ms = e.duration_ms;
                w.call_id = lend(&e.call_id);
                w.lend_call(&e.call);
            }
            EventKind::FinishGate(e) => {
                w.accepted = e.accepted;
                w.output = lend(&e.output);
                w.content = lend(&e.content);
                w.duration_ms = e.duration_ms;
            }
            EventKind::ModelRetry(e) => {
                w.attempt = e.attempt;
                w.error_kind = lend(&e.error_kind);
                w.http_status = e.http_status;
                w.wait_ms = e.wait_ms;
                w.error = lend(&e.error);
                w.duration_ms = e.duration_ms;
                w.lend_call(&e.call);
            }
            EventKind::ScorerCall(e) => {
                w.scorer = lend(&e.scorer);
                w.call_id = lend(&e.call_id);
                w.lend_call(&e.call);
            }
            EventKind::RunFinished(e) => {
                w.exit_reason = Some(e.exit_reason);
                w.steps_used = e.steps_used;
                w.error_kind = lend(&e.error_kind);
                w.error = lend(&e.error);
                w.budget = lend(&e.budget);
                w.native_ending = lend(&e.native_ending);
                w.autosubmitted = e.autosubmitted;
                w.ending_inferred = e.ending_inferred;
                w.scores = lend(&e.scores);
                w.usage = e.usage;
                w.cost_usd = e.cost_usd;
                w.duration_ms = e.duration_ms;
            }
            EventKind::InternalError(e) => {
                w.steps_used = e.steps_used;
                w.error_kind = lend(&e.error_kind);
                w.error = lend(&e.error);
                w.duration_ms = e.duration_ms;
            }
            EventKind::Unknown { fields, .. } => {
                // Rare (kinds from newer writers): the fields go through a value of their own.
                let mut line = fields.clone();
                line.insert("run_id".to_owned(), Value::from(""));
                line.insert("step".to_owned(), Value::from(0));
                line.insert("event_type".to_owned(), Value::from(""));
                line.remove("ts");
                let rest = Wire::deserialize(Value::Object(line))?;
                w = Wire {
                    run_id: w.run_id,
                    step: w.step,
                    event_type: w.event_type,
                    ..rest
                };
            }
        }
        w.ts = lend(&event.ts);
        Ok(w)
    }

    fn lend_call(&mut self, call: &'a ModelCall) {
        self.usage = call.usage;
        self.cost_usd = call.cost_usd;
        self.request_hash = lend(&call.request_hash);
        self.request_body = lend(&call.request_body);
        self.raw_response = lend(&call.raw_response);
        self.finish_reason = lend(&call.finish_reason);
        self.stream_chunks = lend(&call.stream_chunks);
    }

    fn take_call(&mut self) -> ModelCall {
        ModelCall {
            usage: self.usage.take(),
            cost_usd: self.cost_usd.take(),
            request_hash: own(self.request_hash.take()),
            request_body: own(self.request_body.take()),
            raw_response: own(self.raw_response.take()),
            finish_reason: own(self.finish_reason.take()),
            stream_chunks: own(self.stream_chunks.take()),
        }
    }
}

impl TryFrom<Wire<'_>> for Event {
    type Error = &'static str;

    /// The event of a line; fields its type does not have are dropped.
    fn try_from(mut w: Wire<'_>) -> Result<Event, &'static str> {
        let kind = match &*w.event_type {
            "run_started" => EventKind::RunStarted(RunStarted {
                schema: own(w.schema.take()),
                capture: w.capture,
                hash: w.hash,
                max_steps: w.max_steps,
                task_id: own(w.task_id.take()),
                input_summary: own(w.input_summary.take()),
                task: own(w.task.take()),
                replay_of: own(w.replay_of.take()),
                finish_gate_hash: own(w.finish_gate_hash.take()),
                source: own(w.source.take()),
                agent: own(w.agent.take()),
                model: own(w.model.take()),
                api: own(w.api.take()),
                tools: own(w.tools.take()),
                workdir_hash: own(w.workdir_hash.take()),
                tool_errors_recorded: w.tool_errors_recorded,
            }),
            "model_action" => EventKind::ModelAction(ModelAction {
                action_type: own(w.action_type.take()),
                tool_name: own(w.tool_name.take()),
                argument_keys: own(w.argument_keys.take()),
                arguments: own(w.arguments.take()),
                output: own(w.output.take()),
                answer: own(w.answer.take()),
                raw_output: own(w.raw_output.take()),
                duration_ms: w.duration_ms,
                call_id: own(w.call_id.take()),
                call: w.take_call(),
            }),
            "observation" => EventKind::Observation(Observation {
                tool_name: own(w.tool_name.take()),
                output: own(w.output.take()),
                is_error: w.is_error,
                error_kind: own(w.error_kind.take()),
                exit_status: w.exit_status,
                lossy: w.lossy,
                content: own(w.content.take()),
                duration_ms: w.duration_ms,
                call_id: own(w.call_id.take()),
            }),
            "model_feedback" => EventKind::ModelFeedback(ModelFeedback {
                output: own(w.output.take()),
                is_error: w.is_error,
                error_kind: own(w.error_kind.take()),
                content: own(w.content.take()),
                raw_output: own(w.raw_output.take()),
                duration_ms: w.duration_ms,
                call_id: own(w.call_id.take()),
                call: w.take_call(),
            }),
            "finish_gate" => EventKind::FinishGate(FinishGate {
                accepted: w.accepted,
                output: own(w.output.take()),
                content: own(w.content.take()),
                duration_ms: w.duration_ms,
            }),
            "model_retry" => EventKind::ModelRetry(ModelRetry {
                attempt: w.attempt,
                error_kind: own(w.error_kind.take()),
                http_status: w.http_status,
                wait_ms: w.wait_ms,
                error: own(w.error.take()),
                duration_ms: w.duration_ms,
                call: w.take_call(),
            }),
            "scorer_call" => EventKind::ScorerCall(ScorerCall {
                scorer: own(w.scorer.take()),
                call_id: own(w.call_id.take()),
                call: w.take_call(),
            }),
            "run_finished" => EventKind::RunFinished(RunFinished {
                exit_reason: w.exit_reason.ok_or(RUN_FINISHED_WITHOUT_EXIT_REASON)?,
                steps_used: w.steps_used,
                error_kind: own(w.error_kind.take()),
                error: own(w.error.take()),
                budget: own(w.budget.take()),
                native_ending: own(w.native_ending.take()),
                autosubmitted: w.autosubmitted,
                ending_inferred: w.ending_inferred,
                scores: own(w.scores.take()),
                usage: w.usage,
                cost_usd: w.cost_usd,
                duration_ms: w.duration_ms,
            }),
            "internal_error" => EventKind::InternalError(InternalError {
                steps_used: w.steps_used,
                error_kind: own(w.error_kind.take()),
                error: own(w.error.take()),
                duration_ms: w.duration_ms,
            }),
            other => {
                let event_type = other.to_owned();
                let fields = match serde_json::to_value(&w) {
                    Ok(Value::Object(mut fields)) => {
                        for key in ["run_id", "step", "event_type", "ts"] {
                            fields.remove(key);
                        }
                        fields
                    }
                    _ => Map::new(),
                };
                EventKind::Unknown { event_type, fields }
            }
        };
        Ok(Event {
            run_id: w.run_id.into_owned(),
            step: w.step,
            ts: own(w.ts),
            kind,
        })
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire::of(self)
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Event::try_from(Wire::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}
