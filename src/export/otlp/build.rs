//! One recorded run to its spans, following the OpenTelemetry GenAI semantic conventions: a root
//! `invoke_agent` span, a `chat` span per model turn, an `execute_tool` span per tool call and a
//! `finish_gate` span per gate check, each a child of the root. Content attributes are written
//! only when asked for and only from full-capture traces; everything else is counts, names, kinds
//! and times, which summary traces hold too.

use std::collections::HashMap;

use serde_json::{Map, Value as Json, json};

use super::ids::TraceId;
use super::resource::ResourceConfig;
use super::span::{Attributes, ExportedRun, Span, SpanEvent, SpanKind, Status, Value};
use super::timeline::{SYNTHETIC_START_NS, Timeline, ms_to_ns, parse_rfc3339};
use crate::run::ExitReason;
use crate::run::RunOutcome;
use crate::trace::{
    Capture, Event, EventKind, FinishGate, ModelAction, ModelRetry, Observation, RecordedRun,
    RunStarted,
};

/// An evaluation's verdict on one run, from a results file.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// `met` or `failed`.
    pub label: &'static str,
    /// One reason per failed expectation (summaries unless the results hold full capture).
    pub failures: Vec<String>,
}

/// How runs are exported.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Write content attributes (messages, tool arguments and results) from full-capture runs.
    pub content: bool,
    /// Verdicts by run id, written as `gen_ai.evaluation.result` events on the root span.
    pub verdicts: HashMap<String, Verdict>,
    /// The service name and resource attributes of `OTEL_SERVICE_NAME` and
    /// `OTEL_RESOURCE_ATTRIBUTES`.
    pub resource: ResourceConfig,
}

/// One model turn's events, grouped by step.
#[derive(Default)]
struct Turn<'a> {
    step: u64,
    retries: Vec<&'a ModelRetry>,
    /// The turn's `model_action` and `model_feedback` events.
    model: Vec<&'a Event>,
    calls: Vec<&'a ModelAction>,
    observations: Vec<(&'a Event, &'a Observation)>,
    gates: Vec<(&'a Event, &'a FinishGate)>,
}

fn turns(run: &RecordedRun) -> Vec<Turn<'_>> {
    let mut turns: Vec<Turn<'_>> = Vec::new();
    for (_, event) in &run.events {
        let slot = match event.kind {
            EventKind::ModelRetry(_)
            | EventKind::ModelAction(_)
            | EventKind::ModelFeedback(_)
            | EventKind::Observation(_)
            | EventKind::FinishGate(_) => event.step,
            _ => continue,
        };
        let index = match turns.iter().rposition(|t| t.step == slot) {
            Some(index) => index,
            None => {
                turns.push(Turn {
                    step: slot,
                    ..Turn::default()
                });
                turns.len() - 1
            }
        };
        let turn = &mut turns[index];
        match &event.kind {
            EventKind::ModelRetry(retry) => turn.retries.push(retry),
            EventKind::ModelAction(action) => {
                turn.model.push(event);
                if action.action_type.as_deref() == Some("tool_call") {
                    turn.calls.push(action);
                }
            }
            EventKind::ModelFeedback(_) => turn.model.push(event),
            EventKind::Observation(observation) => turn.observations.push((event, observation)),
            EventKind::FinishGate(gate) => turn.gates.push((event, gate)),
            _ => {}
        }
    }
    turns
}

/// The name the run's agent goes by: recorded, else the source format, else `looptrace`.
fn agent_name(started: Option<&RunStarted>) -> String {
    started
        .and_then(|e| e.agent.clone())
        .or_else(|| {
            started
                .and_then(|e| e.source.as_ref())
                .map(|s| s.format.clone())
        })
        .unwrap_or_else(|| "looptrace".to_owned())
}

fn ts(event: &Event) -> Option<u64> {
    event.ts.as_deref().and_then(parse_rfc3339)
}

/// Builds the spans of `run`, whose trace id is `trace_id`; `file` is the source file's name.
pub fn build_run(
    run: &RecordedRun,
    trace_id: TraceId,
    file: &str,
    options: &BuildOptions,
) -> ExportedRun {
    let started = run.started();
    let ending = run.finished();
    let outcome = run.outcome();
    let content = options.content && started.and_then(|e| e.capture) == Some(Capture::Full);
    let agent = agent_name(started);
    let model = started.and_then(|e| e.model.as_ref());
    let root_start = run
        .events
        .iter()
        .find_map(|(_, e)| ts(e))
        .unwrap_or(SYNTHETIC_START_NS);
    let mut timeline = Timeline::new(root_start);
    let root_id = trace_id.span(0);
    let mut spans = vec![];
    let mut next_index = 1u32;
    let mut child = |name: String, kind: SpanKind, (start, end): (u64, u64)| {
        let span = Span {
            span_id: trace_id.span(next_index),
            parent: Some(root_id),
            name,
            kind,
            start,
            end,
            attributes: Attributes::default(),
            events: Vec::new(),
            status: Status::Unset,
        };
        next_index += 1;
        span
    };
    let turns = turns(run);
    for turn in &turns {
        if !turn.retries.is_empty() || !turn.model.is_empty() {
            spans.push(chat_span(turn, model, content, &mut timeline, &mut child));
        }
        for (call, observation) in pair_calls(turn) {
            let end = observation.and_then(|(event, _)| ts(event));
            let duration = observation.and_then(|(_, o)| ms_to_ns(o.duration_ms));
            let name = match (call, observation) {
                (Some(call), _) => call.tool_name.clone(),
                (None, Some((_, observation))) => observation.tool_name.clone(),
                (None, None) => None,
            }
            .unwrap_or_default();
            let mut span = child(
                format!("execute_tool {name}"),
                SpanKind::Internal,
                timeline.place(end, duration),
            );
            let observation = observation.map(|(_, o)| o);
            tool_attributes(&mut span, turn.step, &name, call, observation, content);
            spans.push(span);
        }
        for (event, gate) in &turn.gates {
            let mut span = child(
                "finish_gate".to_owned(),
                SpanKind::Internal,
                timeline.place(ts(event), ms_to_ns(gate.duration_ms)),
            );
            let attributes = &mut span.attributes;
            attributes.opt_int("looptrace.step", i64::try_from(turn.step).ok());
            attributes.opt_bool("looptrace.finish_gate.accepted", gate.accepted);
            if content {
                attributes.opt_str("looptrace.finish_gate.output", gate.content.as_deref());
            }
            spans.push(span);
        }
    }
    let last_ts = ending
        .and_then(ts)
        .or_else(|| run.events.iter().rev().find_map(|(_, e)| ts(e)));
    let root_end = timeline.root_end(last_ts);
    let mut root = Span {
        span_id: root_id,
        parent: None,
        name: format!("invoke_agent {agent}"),
        kind: SpanKind::Internal,
        start: root_start,
        end: root_end,
        attributes: Attributes::default(),
        events: Vec::new(),
        status: Status::Unset,
    };
    root_attributes(&mut root, run, (&agent, file), outcome, &turns, content);
    if let Some(verdict) = options.verdicts.get(&run.run_id) {
        let mut attributes = Attributes::default();
        attributes.str("gen_ai.evaluation.name", "looptrace.expectations");
        attributes.str("gen_ai.evaluation.score.label", verdict.label);
        attributes.opt_double(
            "gen_ai.evaluation.score.value",
            Some(if verdict.label == "met" { 1.0 } else { 0.0 }),
        );
        if content && !verdict.failures.is_empty() {
            attributes.str("gen_ai.evaluation.explanation", verdict.failures.join("; "));
        }
        root.events.push(SpanEvent {
            name: "gen_ai.evaluation.result",
            time: root_end,
            attributes,
        });
    }
    spans.insert(0, root);
    ExportedRun {
        trace_id,
        service: options.resource.service_name.clone().unwrap_or(agent),
        resource: options.resource.attributes.clone(),
        spans,
    }
}

fn root_attributes(
    root: &mut Span,
    run: &RecordedRun,
    (agent, file): (&str, &str),
    outcome: RunOutcome,
    turns: &[Turn<'_>],
    content: bool,
) {
    let started = run.started();
    let ending = run.finished();
    let finished = ending.and_then(Event::run_finished);
    let model = started.and_then(|e| e.model.as_ref());
    let a = &mut root.attributes;
    a.str("gen_ai.operation.name", "invoke_agent");
    a.str("gen_ai.agent.name", agent);
    model_attributes(a, model, ending.and_then(Event::usage).copied());
    a.str("looptrace.run_id", run.run_id.as_str());
    a.opt_str(
        "looptrace.task_id",
        started.and_then(|e| e.task_id.as_deref()),
    );
    a.str("looptrace.exit_reason", outcome.as_str());
    let error_kind = ending.and_then(Event::error_kind);
    a.opt_str("looptrace.error_kind", error_kind);
    let steps = ending
        .and_then(|e| e.steps_used().map(u64::from))
        .unwrap_or_else(|| turns.iter().map(|t| t.step).max().unwrap_or(0));
    a.opt_int("looptrace.steps_used", i64::try_from(steps).ok());
    let budget = finished
        .and_then(|e| e.budget.as_deref())
        .or((outcome == RunOutcome::Ended(ExitReason::MaxStepsExceeded)).then_some("steps"));
    a.opt_str("looptrace.budget", budget);
    a.opt_int(
        "looptrace.max_steps",
        started.and_then(|e| e.max_steps).map(i64::from),
    );
    a.opt_double("looptrace.cost_usd", ending.and_then(Event::cost_usd));
    a.opt_str(
        "looptrace.capture",
        started.and_then(|e| e.capture).map(Capture::as_str),
    );
    match started.and_then(|e| e.source.as_ref()) {
        Some(source) => {
            a.str("looptrace.source.format", source.format.as_str());
            a.str("looptrace.source.file", source.file.as_str());
        }
        None => a.str("looptrace.source.file", file),
    }
    a.opt_bool(
        "looptrace.tool_errors_recorded",
        started.and_then(|e| e.tool_errors_recorded),
    );
    a.opt_bool(
        "looptrace.ending_inferred",
        finished.and_then(|e| e.ending_inferred),
    );
    a.opt_bool(
        "looptrace.autosubmitted",
        finished.and_then(|e| e.autosubmitted),
    );
    if content && let Some(task) = started.and_then(|e| e.task.as_deref()) {
        let messages = json!([{"role": "user", "parts": [{"type": "text", "content": task}]}]);
        a.str("gen_ai.input.messages", messages.to_string());
    }
    if outcome != RunOutcome::Ended(ExitReason::Finished) {
        a.str("error.type", outcome.as_str());
        root.status = Status::Error(match error_kind {
            Some(kind) => format!("{}: {kind}", outcome.as_str()),
            None => outcome.as_str().to_owned(),
        });
    }
}

/// The model and the tokens it used, on the root (the run's) and on chat spans (the turn's).
fn model_attributes(
    a: &mut Attributes,
    model: Option<&crate::trace::ModelRef>,
    usage: Option<crate::trace::Usage>,
) {
    a.opt_str(
        "gen_ai.provider.name",
        model.and_then(|m| m.provider.as_deref()),
    );
    a.opt_str("gen_ai.request.model", model.map(|m| m.name.as_str()));
    if let Some(usage) = usage {
        let tokens = |n: Option<u64>| n.and_then(|n| i64::try_from(n).ok());
        a.opt_int("gen_ai.usage.input_tokens", tokens(usage.input_tokens));
        a.opt_int("gen_ai.usage.output_tokens", tokens(usage.output_tokens));
    }
}

fn chat_span(
    turn: &Turn<'_>,
    model: Option<&crate::trace::ModelRef>,
    content: bool,
    timeline: &mut Timeline,
    child: &mut impl FnMut(String, SpanKind, (u64, u64)) -> Span,
) -> Span {
    let waits: u64 = turn
        .retries
        .iter()
        .filter_map(|r| r.wait_ms)
        .map(|ms| ms.saturating_mul(1_000_000))
        .sum();
    let call = turn
        .model
        .iter()
        .filter_map(|e| ms_to_ns(e.duration_ms()))
        .max();
    let duration = match (waits, call) {
        (0, None) => None,
        (waits, call) => Some(waits.saturating_add(call.unwrap_or(0))),
    };
    let end = turn.model.iter().rev().find_map(|e| ts(e));
    let name = match model {
        Some(model) => format!("chat {}", model.name),
        None => "chat".to_owned(),
    };
    let (start, finish) = timeline.place(end, duration);
    let mut span = child(name, SpanKind::Client, (start, finish));
    let a = &mut span.attributes;
    a.str("gen_ai.operation.name", "chat");
    model_attributes(a, model, turn.model.iter().find_map(|e| e.usage().copied()));
    let reasons: Vec<String> = turn
        .model
        .iter()
        .filter_map(|e| e.model_call().and_then(|c| c.finish_reason.clone()))
        .collect();
    if !reasons.is_empty() {
        a.str_array("gen_ai.response.finish_reasons", reasons);
    }
    a.opt_int("looptrace.step", i64::try_from(turn.step).ok());
    let actions: Vec<String> = turn
        .model
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelAction(action) => action.action_type.clone(),
            _ => Some("invalid_output".to_owned()),
        })
        .collect();
    if !actions.is_empty() {
        a.str_array("looptrace.actions", actions);
    }
    a.opt_double(
        "looptrace.cost_usd",
        turn.model.iter().find_map(|e| e.cost_usd()),
    );
    if content && let Some(messages) = output_messages(turn) {
        a.str("gen_ai.output.messages", messages);
    }
    if let Some(feedback) = turn
        .model
        .iter()
        .find(|e| matches!(e.kind, EventKind::ModelFeedback(_)))
    {
        let kind = feedback.error_kind().unwrap_or("invalid_output");
        a.str("error.type", kind);
        span.status = Status::Error(format!("invalid model output: {kind}"));
    }
    let mut at = start;
    for retry in &turn.retries {
        let mut attributes = Attributes::default();
        attributes.opt_int("looptrace.retry.attempt", retry.attempt.map(i64::from));
        attributes.opt_str("error.type", retry.error_kind.as_deref());
        attributes.opt_int(
            "http.response.status_code",
            retry.http_status.map(i64::from),
        );
        attributes.opt_int(
            "looptrace.retry.wait_ms",
            retry.wait_ms.and_then(|ms| i64::try_from(ms).ok()),
        );
        span.events.push(SpanEvent {
            name: "looptrace.model_retry",
            time: at,
            attributes,
        });
        at = at
            .saturating_add(retry.wait_ms.unwrap_or(0).saturating_mul(1_000_000))
            .min(finish);
    }
    span
}

/// The model's output in a turn as `gen_ai.output.messages` (full capture only).
fn output_messages(turn: &Turn<'_>) -> Option<String> {
    let mut parts = Vec::new();
    for event in &turn.model {
        match &event.kind {
            EventKind::ModelAction(action)
                if action.action_type.as_deref() == Some("tool_call") =>
            {
                let mut part = Map::new();
                part.insert("type".into(), "tool_call".into());
                if let Some(id) = &action.call_id {
                    part.insert("id".into(), id.clone().into());
                }
                part.insert(
                    "name".into(),
                    action.tool_name.clone().unwrap_or_default().into(),
                );
                if let Some(arguments) = &action.arguments {
                    part.insert("arguments".into(), Json::Object(arguments.clone()));
                }
                parts.push(Json::Object(part));
            }
            EventKind::ModelAction(action) => {
                if let Some(answer) = &action.answer {
                    parts.push(json!({"type": "text", "content": answer}));
                }
            }
            EventKind::ModelFeedback(feedback) => {
                if let Some(raw) = &feedback.raw_output {
                    parts.push(json!({"type": "text", "content": raw}));
                }
            }
            _ => {}
        }
    }
    if parts.is_empty() {
        return None;
    }
    let reason = turn
        .model
        .iter()
        .find_map(|e| e.model_call().and_then(|c| c.finish_reason.clone()))
        .unwrap_or_else(|| {
            if turn.calls.is_empty() {
                "stop".to_owned()
            } else {
                "tool_call".to_owned()
            }
        });
    Some(json!([{"role": "assistant", "parts": parts, "finish_reason": reason}]).to_string())
}

/// Each observation with the call it answers, in the order the tools ran: by call id where both
/// have one, else the first unanswered call of the same tool; calls never answered come last.
type CallPair<'a> = (
    Option<&'a ModelAction>,
    Option<(&'a Event, &'a Observation)>,
);

fn pair_calls<'a>(turn: &Turn<'a>) -> Vec<CallPair<'a>> {
    let mut answered = vec![false; turn.calls.len()];
    let mut pairs = Vec::with_capacity(turn.calls.len().max(turn.observations.len()));
    for &(event, observation) in &turn.observations {
        let by_id = observation.call_id.as_ref().and_then(|id| {
            (0..turn.calls.len())
                .find(|&i| !answered[i] && turn.calls[i].call_id.as_ref() == Some(id))
        });
        let found = by_id.or_else(|| {
            (0..turn.calls.len()).find(|&i| {
                !answered[i]
                    && turn.calls[i].tool_name == observation.tool_name
                    && (turn.calls[i].call_id.is_none() || observation.call_id.is_none())
            })
        });
        if let Some(i) = found {
            answered[i] = true;
        }
        pairs.push((found.map(|i| turn.calls[i]), Some((event, observation))));
    }
    for (i, call) in turn.calls.iter().enumerate() {
        if !answered[i] {
            pairs.push((Some(*call), None));
        }
    }
    pairs
}

fn tool_attributes(
    span: &mut Span,
    step: u64,
    name: &str,
    call: Option<&ModelAction>,
    observation: Option<&Observation>,
    content: bool,
) {
    let a = &mut span.attributes;
    a.str("gen_ai.operation.name", "execute_tool");
    a.str("gen_ai.tool.name", name);
    a.opt_str(
        "gen_ai.tool.call.id",
        match (call, observation) {
            (Some(call), _) => call.call_id.as_deref(),
            (None, Some(observation)) => observation.call_id.as_deref(),
            (None, None) => None,
        },
    );
    a.opt_int("looptrace.step", i64::try_from(step).ok());
    if let Some(keys) = call.and_then(|c| c.argument_keys.clone()) {
        a.0.push(super::span::Attribute {
            key: "looptrace.tool.argument_keys",
            value: Value::StrArray(keys),
        });
    }
    if observation.is_none() {
        a.opt_bool("looptrace.tool.answered", Some(false));
    }
    if content {
        if let Some(arguments) = call.and_then(|c| c.arguments.as_ref()) {
            a.str(
                "gen_ai.tool.call.arguments",
                Json::Object(arguments.clone()).to_string(),
            );
        }
        a.opt_str(
            "gen_ai.tool.call.result",
            observation.and_then(|o| o.content.as_deref()),
        );
    }
    if let Some(observation) = observation
        && observation.is_error_by_rule()
    {
        let kind = observation.error_kind.as_deref().unwrap_or("tool_error");
        a.str("error.type", kind);
        span.status = Status::Error(format!("tool error: {kind}"));
    }
}
