//! OpenHands: trajectory exports (a JSON array of events), evaluation output (`output.jsonl`, one
//! instance per line with `history`, `metrics` and `error`) and the older resolver output
//! (`issue`, `history` without ids). Histories are V0 events (`action`/`observation` names) or
//! V1 SDK events (`kind`: `ActionEvent`, `ObservationEvent`, `ConversationErrorEvent`, ...).

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::{Map, Value};

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, first_byte, for_each_line, head_text, peek_first_byte,
    read_document, str_at, text_of,
};
use super::run::{Ending, ImportedRun, Item};
use crate::run::ExitReason;

/// Actions that are not model turns.
const NOT_TURNS: [&str; 3] = ["system", "recall", "change_agent_state"];

/// `--from openhands`.
pub struct OpenHands;

impl Importer for OpenHands {
    fn name(&self) -> &'static str {
        "openhands"
    }

    fn probe(&self, _name: &str, head: &[u8]) -> u8 {
        let text = head_text(head);
        let start = text.trim_start();
        match first_byte(head) {
            Some(b'[')
                if start[1..].trim_start().starts_with('{')
                    && text.contains("\"source\"")
                    && (text.contains("\"action\"") || text.contains("\"observation\"")) =>
            {
                80
            }
            Some(b'{')
                if start.starts_with("{\"instance_id\"") && text.contains("\"instruction\"")
                    || start.starts_with("{\"issue\"") && text.contains("\"history\"")
                    || text.contains("\"history\"")
                        && text.contains("\"metrics\"")
                        && (text.contains("\"instance_id\"") || text.contains("\"issue\"")) =>
            {
                80
            }
            _ => 0,
        }
    }

    fn import(
        &self,
        input: &mut dyn BufRead,
        context: &Context,
        out: &mut Sink<'_>,
    ) -> Result<(), ImportError> {
        if peek_first_byte(input, context)? == Some(b'[') {
            let document = read_document(input, context)?;
            let events = document.as_array().map(Vec::as_slice).unwrap_or_default();
            let mut run = ImportedRun::new(context.run_id(None));
            run.native_id = Some(native_of(&context.name));
            run.ending = if events.iter().any(is_v1) {
                read_v1_events(&mut run, events)
            } else {
                read_events(&mut run, events);
                stream_ending(events)
            };
            return out(Imported::Run(run));
        }
        for_each_line(input, context, |line, record| {
            let (native, history) = match (record.get("instance_id"), record.get("issue")) {
                (Some(id), _) => (text_of(Some(id)), record.get("history")),
                (None, Some(issue)) => (
                    format!("issue-{}", text_of(issue.get("number"))),
                    record.get("history"),
                ),
                _ => {
                    return Err(context
                        .malformed(format!("line {line}"), "expected `instance_id` or `issue`"));
                }
            };
            let events = match history {
                Some(Value::Array(events)) => events.as_slice(),
                None | Some(Value::Null) => &[],
                Some(_) => {
                    return Err(
                        context.malformed(format!("line {line}: $.history"), "expected an array")
                    );
                }
            };
            let mut run = ImportedRun::new(context.run_id(Some(&native)));
            run.native_id = Some(native);
            if let Some(instruction) = str_at(&record, "instruction") {
                run.task = Some(instruction.to_owned());
            }
            let v1_ending = if events.iter().any(is_v1) {
                read_v1_events(&mut run, events)
            } else {
                read_events(&mut run, events);
                stream_ending(events)
            };
            let metrics = record.get("metrics").unwrap_or(&Value::Null);
            let calls = metrics
                .get("response_latencies")
                .or_else(|| metrics.get("costs"))
                .and_then(Value::as_array);
            if let Some(calls) = calls {
                run.steps = calls.len() as u64;
            }
            run.cost_usd = metrics.get("accumulated_cost").and_then(Value::as_f64);
            run.model = record
                .pointer("/metadata/llm_config/model")
                .or_else(|| record.pointer("/metadata/llm/model"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            run.agent = record
                .pointer("/metadata/agent_class")
                .and_then(Value::as_str)
                .map(str::to_owned);
            run.ending = match (str_at(&record, "error"), v1_ending) {
                // The SDK's own error event names the failure more precisely than the
                // harness's text does.
                (Some(_), Some(ending)) if ending.exit_reason != ExitReason::Finished => {
                    Some(ending)
                }
                (Some(error), _) => Some(error_ending(error)),
                (None, ending) => ending,
            };
            out(Imported::Run(run))
        })
    }
}

fn native_of(name: &str) -> String {
    name.strip_suffix(".json").unwrap_or(name).to_owned()
}

/// Turns, tool calls and results from an event list.
fn read_events(run: &mut ImportedRun, events: &[Value]) {
    let mut names: HashMap<i64, String> = HashMap::new();
    for event in events {
        let action = str_at(event, "action");
        let observation = str_at(event, "observation");
        // The resolver's older layout has no `source`: its first message is the user's.
        let source = str_at(event, "source").unwrap_or(match action {
            Some("message") if run.task.is_none() && run.steps == 0 => "user",
            _ => "agent",
        });
        if let Some(action) = action {
            if source == "user" {
                if action == "message" && run.task.is_none() {
                    run.task = Some(message_of(event));
                }
                continue;
            }
            if source != "agent" || NOT_TURNS.contains(&action) {
                continue;
            }
            run.turn();
            match action {
                "message" => {}
                "finish" => {
                    let answer = event
                        .pointer("/args/final_thought")
                        .and_then(Value::as_str)
                        .map_or_else(|| message_of(event), str::to_owned);
                    run.push(Item::Finish { answer });
                }
                "reject" => {}
                tool => {
                    let arguments = match event.get("args") {
                        Some(Value::Object(args)) => args.clone(),
                        _ => Map::new(),
                    };
                    let id = event.get("id").and_then(Value::as_i64);
                    if let Some(id) = id {
                        names.insert(id, tool.to_owned());
                    }
                    let call_id = event
                        .pointer("/tool_call_metadata/tool_call_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    run.call(tool, arguments, call_id);
                }
            }
        } else if let Some(kind) = observation {
            let cause = event.get("cause").and_then(Value::as_i64);
            let content = text_of(event.get("content"));
            match kind {
                "error" if cause.is_none() => {
                    // The model called a tool with invalid arguments: no action was created.
                    run.turn();
                    run.call("invalid_call", Map::new(), None);
                    run.result("invalid_call", content, Some(true));
                }
                "null" | "agent_state_changed" | "recall" | "message" => {}
                _ => {
                    let name = cause
                        .and_then(|id| names.get(&id).cloned())
                        .unwrap_or_else(|| kind.to_owned());
                    let is_error = observation_failed(kind, event, &content);
                    run.result(&name, content, Some(is_error));
                }
            }
        }
    }
}

fn message_of(event: &Value) -> String {
    str_at(event, "message")
        .or_else(|| event.pointer("/args/content").and_then(Value::as_str))
        .or_else(|| str_at(event, "content"))
        .unwrap_or("")
        .to_owned()
}

/// Whether an observation is a failed tool call.
fn observation_failed(kind: &str, event: &Value, content: &str) -> bool {
    match kind {
        "error" => true,
        "run" | "run_ipython" => {
            let failed = event.pointer("/success").and_then(Value::as_bool) == Some(false)
                || event.pointer("/extras/success").and_then(Value::as_bool) == Some(false);
            let code = event
                .pointer("/extras/metadata/exit_code")
                .or_else(|| event.pointer("/extras/exit_code"))
                .or_else(|| event.get("exit_code"));
            let code = match code {
                Some(Value::Number(n)) => n.as_i64(),
                Some(Value::String(text)) => text.parse().ok(),
                _ => None,
            };
            failed || code.is_some_and(|code| code != 0)
        }
        _ => content.starts_with("ERROR:"),
    }
}

/// The ending of an event stream: a `finish` action, or the last agent state.
fn stream_ending(events: &[Value]) -> Option<Ending> {
    let mut ending = None;
    for event in events {
        match (str_at(event, "action"), str_at(event, "observation")) {
            (Some("finish"), _) => {
                ending = Some(Ending::new(ExitReason::Finished).native("finish"));
            }
            (Some("reject"), _) => {
                ending = Some(Ending::new(ExitReason::Finished).native("reject"));
            }
            (_, Some("agent_state_changed")) => {
                let state = event
                    .pointer("/extras/agent_state")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match state {
                    "finished" | "awaiting_user_input" | "rejected" => {
                        ending = Some(Ending::new(ExitReason::Finished).native(state));
                    }
                    "error" | "rate_limited" => {
                        ending = Some(Ending::internal(state).native(state));
                    }
                    "stopped" | "paused" | "running" => ending = None,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    ending
}

/// An evaluation's `error` text mapped onto an exit reason.
fn error_ending(error: &str) -> Ending {
    let lower = error.to_ascii_lowercase();
    let ending = if lower.contains("maximum iteration") {
        Ending::budget("steps")
    } else if lower.contains("maximum budget") {
        Ending::budget("cost")
    } else if lower.contains("context window") || lower.contains("contextwindowexceeded") {
        Ending::budget("context")
    } else if error.contains("AgentStuckInLoopError") {
        Ending::internal("stuck_in_loop")
    } else {
        Ending::internal("agent_error")
    };
    ending.native(error)
}

/// Whether an event is a V1 SDK event (`kind` names its class).
fn is_v1(event: &Value) -> bool {
    str_at(event, "kind")
        .is_some_and(|kind| kind.ends_with("Event") || kind.ends_with("Observation"))
}

/// Turns, tool calls and results from V1 SDK events; returns the ending they record. Steps are
/// model responses (`llm_response_id`; parallel calls share one); `FinishAction` is the finish
/// with its message; an observation's `is_error` or non-zero `exit_code`, an `AgentErrorEvent`
/// and a user's rejection are tool errors; `ConversationErrorEvent` ends the run by its `code`.
fn read_v1_events(run: &mut ImportedRun, events: &[Value]) -> Option<Ending> {
    let mut response: Option<String> = None;
    let mut calls: HashMap<String, String> = HashMap::new();
    let mut ending = None;
    let mut answer: Option<String> = None;
    for event in events {
        let kind = str_at(event, "kind").unwrap_or("");
        let source = str_at(event, "source").unwrap_or("");
        let mut turn = |run: &mut ImportedRun, id: Option<&str>| {
            if id.is_none() || id != response.as_deref() {
                run.turn();
                response = id.map(str::to_owned);
            }
        };
        match kind {
            "MessageEvent" => {
                let text = text_of(event.pointer("/llm_message/content"));
                if source == "user" {
                    run.task.get_or_insert(text);
                } else if source == "agent" {
                    // A reply without a tool call hands the turn back: the agent is done.
                    turn(run, str_at(event, "llm_response_id"));
                    answer = Some(text);
                }
            }
            "ActionEvent" => {
                turn(run, str_at(event, "llm_response_id"));
                answer = None;
                let action = event.get("action").unwrap_or(&Value::Null);
                let tool = str_at(event, "tool_name").unwrap_or("unknown");
                if str_at(action, "kind") == Some("FinishAction") {
                    let message = str_at(action, "message").unwrap_or("").to_owned();
                    run.push(Item::Finish { answer: message });
                    ending = Some(Ending::new(ExitReason::Finished).native("FinishAction"));
                    continue;
                }
                let mut arguments = match action {
                    Value::Object(map) => map.clone(),
                    _ => Map::new(),
                };
                arguments.remove("kind");
                let call_id = str_at(event, "tool_call_id").map(str::to_owned);
                if let Some(id) = &call_id {
                    calls.insert(id.clone(), tool.to_owned());
                }
                run.call(tool, arguments, call_id);
            }
            "ObservationEvent" => {
                let observation = event.get("observation").unwrap_or(&Value::Null);
                if str_at(observation, "kind") == Some("FinishObservation") {
                    continue;
                }
                let tool = str_at(event, "tool_name").unwrap_or("unknown");
                let failed = observation.get("is_error").and_then(Value::as_bool) == Some(true)
                    || observation
                        .get("exit_code")
                        .and_then(Value::as_i64)
                        .is_some_and(|code| code != 0);
                let timeout = observation.get("timeout").and_then(Value::as_bool) == Some(true);
                run.push(Item::Observation {
                    tool_name: tool.to_owned(),
                    content: text_of(observation.get("content")),
                    is_error: Some(failed || timeout),
                    error_kind: timeout.then(|| "timeout".to_owned()),
                });
            }
            "AgentErrorEvent" | "UserRejectObservation" => {
                let tool = str_at(event, "tool_name").unwrap_or("invalid_call");
                let call_id = str_at(event, "tool_call_id");
                if call_id.is_none_or(|id| !calls.contains_key(id)) {
                    // The model called a tool the agent could not run: no action was created.
                    turn(run, str_at(event, "llm_response_id"));
                    run.call(tool, Map::new(), call_id.map(str::to_owned));
                }
                let (content, kind) = match kind {
                    "AgentErrorEvent" => (str_at(event, "error"), None),
                    _ => (str_at(event, "rejection_reason"), Some("rejected")),
                };
                run.push(Item::Observation {
                    tool_name: tool.to_owned(),
                    content: content.unwrap_or("").to_owned(),
                    is_error: Some(true),
                    error_kind: kind.map(str::to_owned),
                });
            }
            "ConversationErrorEvent" => {
                let code = str_at(event, "code").unwrap_or("");
                ending = Some(conversation_error(code));
            }
            _ => {}
        }
    }
    if ending.is_none()
        && let Some(answer) = answer
    {
        run.push(Item::Finish { answer });
        ending = Some(Ending::new(ExitReason::Finished).native("MessageEvent"));
    }
    ending
}

/// A `ConversationErrorEvent`'s `code` mapped onto an exit reason.
fn conversation_error(code: &str) -> Ending {
    let ending = if code == "MaxIterationsReached" {
        Ending::budget("steps")
    } else if code.contains("ContextWindow") {
        Ending::budget("context")
    } else if code.contains("Budget") {
        Ending::budget("cost")
    } else if code.starts_with("LLM") {
        Ending::internal("model_failure")
    } else {
        Ending::internal("conversation_error")
    };
    ending.native(code)
}
