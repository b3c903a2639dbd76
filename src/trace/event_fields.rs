//! The fields each event type has on disk, derived from the type: one event of every kind with
//! every field set, written through the line shape, and its keys read back. The schema test and
//! the scanner's field table are held to this list, so a field added to a variant and missing
//! from either fails a test.

use serde_json::{Map, Value};

use super::event::{
    Capture, Event, EventKind, FinishGate, InternalError, ModelAction, ModelCall, ModelFeedback,
    ModelRef, ModelRetry, Observation, ReplayOf, RunFinished, RunSource, RunStarted, Score,
    ScorerCall, ToolRef, Usage,
};
use crate::digest::HashAlgorithm;
use crate::run::ExitReason;

/// The fields every line has, whatever its type.
pub const ENVELOPE_FIELDS: [&str; 4] = ["run_id", "step", "event_type", "ts"];

/// Each known event type with the fields it has on disk besides [`ENVELOPE_FIELDS`], by name.
pub fn fields_by_event_type() -> Vec<(String, Vec<String>)> {
    every_kind()
        .into_iter()
        .map(|kind| {
            let name = kind.name().to_owned();
            let line = match serde_json::to_value(Event::new("r", 0, kind)) {
                Ok(Value::Object(line)) => line,
                _ => Map::new(),
            };
            let fields = line
                .keys()
                .filter(|key| !ENVELOPE_FIELDS.contains(&key.as_str()))
                .cloned()
                .collect();
            (name, fields)
        })
        .collect()
}

fn text() -> Option<String> {
    Some(String::new())
}

/// Every field set. Struct literals without `..` make the compiler point here when a variant
/// gains a field.
fn every_call() -> ModelCall {
    ModelCall {
        usage: Some(Usage::default()),
        cost_usd: Some(0.0),
        request_hash: text(),
        request_body: text(),
        raw_response: text(),
        finish_reason: text(),
        stream_chunks: Some(Vec::new()),
    }
}

/// One event of every known kind, every field set.
pub(crate) fn every_kind() -> Vec<EventKind> {
    vec![
        EventKind::RunStarted(RunStarted {
            schema: text(),
            capture: Some(Capture::Summary),
            hash: Some(HashAlgorithm::Sha256),
            max_steps: Some(0),
            task_id: text(),
            input_summary: text(),
            task: text(),
            replay_of: Some(ReplayOf {
                source: String::new(),
                run_id: String::new(),
            }),
            finish_gate_hash: text(),
            source: Some(RunSource {
                format: String::new(),
                file: String::new(),
                native_id: None,
            }),
            agent: text(),
            model: Some(ModelRef {
                provider: None,
                name: String::new(),
            }),
            api: text(),
            tools: Some(Vec::<ToolRef>::new()),
            workdir_hash: text(),
            tool_errors_recorded: Some(true),
        }),
        EventKind::ModelAction(ModelAction {
            action_type: text(),
            tool_name: text(),
            argument_keys: Some(Vec::new()),
            arguments: Some(Map::new()),
            output: text(),
            answer: text(),
            raw_output: text(),
            duration_ms: Some(0.0),
            call_id: text(),
            call: every_call(),
        }),
        EventKind::Observation(Observation {
            tool_name: text(),
            output: text(),
            is_error: Some(false),
            error_kind: text(),
            exit_status: Some(0),
            lossy: Some(true),
            content: text(),
            duration_ms: Some(0.0),
            call_id: text(),
        }),
        EventKind::ModelFeedback(ModelFeedback {
            output: text(),
            is_error: Some(true),
            error_kind: text(),
            content: text(),
            raw_output: text(),
            duration_ms: Some(0.0),
            call_id: text(),
            call: every_call(),
        }),
        EventKind::FinishGate(FinishGate {
            accepted: Some(true),
            output: text(),
            content: text(),
            duration_ms: Some(0.0),
        }),
        EventKind::ModelRetry(ModelRetry {
            attempt: Some(1),
            error_kind: text(),
            http_status: Some(429),
            wait_ms: Some(0),
            error: text(),
            duration_ms: Some(0.0),
            call: every_call(),
        }),
        EventKind::ScorerCall(ScorerCall {
            scorer: text(),
            call_id: text(),
            call: every_call(),
        }),
        EventKind::RunFinished(RunFinished {
            exit_reason: ExitReason::Finished,
            steps_used: Some(0),
            error_kind: text(),
            error: text(),
            budget: text(),
            native_ending: text(),
            autosubmitted: Some(true),
            ending_inferred: Some(true),
            scores: Some(Vec::<Score>::new()),
            usage: Some(Usage::default()),
            cost_usd: Some(0.0),
            duration_ms: Some(0.0),
        }),
        EventKind::InternalError(InternalError {
            steps_used: Some(0),
            error_kind: text(),
            error: text(),
            duration_ms: Some(0.0),
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_event_type_is_listed_once_with_its_fields() {
        let listed = fields_by_event_type();
        let names: Vec<&str> = listed.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "run_started",
                "model_action",
                "observation",
                "model_feedback",
                "finish_gate",
                "model_retry",
                "scorer_call",
                "run_finished",
                "internal_error"
            ]
        );
        let finished = &listed[7].1;
        assert!(finished.iter().any(|field| field == "exit_reason"));
        assert!(!listed[0].1.iter().any(|field| field == "exit_reason"));
        assert!(listed.iter().all(|(_, fields)| !fields.is_empty()));
    }
}
