//! The loop's behaviour: the exact history the model sees, every exit reason, internal errors.

use looptrace::agent::{AgentError, NoObserver, RunError, RunOptions, run_agent, run_agent_result};
use looptrace::model::{JsonModelAdapter, ScriptedModel, ScriptedRawModel};
use looptrace::run::{
    Action, ExitReason, Finish, HistoryItem, ModelFeedback, Observation, RunResult, Task, ToolCall,
};
use looptrace::tools::{ToolDefinition, ToolRegistry, ToolSpec};
use serde_json::{Map, Value, json};

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("arguments must be an object"),
    }
}

fn multiply_12_by_7() -> ToolCall {
    ToolCall::new(
        "calculator",
        args(json!({"left": 12, "operation": "multiply", "right": 7})),
    )
}

fn finish(answer: &str) -> Action {
    Action::Finish(Finish {
        answer: answer.to_owned(),
    })
}

fn steps(n: u32) -> RunOptions {
    RunOptions { max_steps: n }
}

#[test]
fn the_model_sees_the_call_and_its_observation_on_the_second_turn() {
    let task = Task::new("compute 12 × 7 and say whether it exceeds 80");
    let call = multiply_12_by_7();
    let mut model = ScriptedModel::new(vec![
        Action::ToolCall(call.clone()),
        finish("12 * 7 = 84，84大于80。"),
    ]);
    let tools = ToolRegistry::builtin();
    let result = run_agent_result(&task, &mut model, &tools, steps(5), &mut NoObserver).unwrap();
    assert_eq!(
        result,
        RunResult {
            exit_reason: ExitReason::Finished,
            answer: Some("12 * 7 = 84，84大于80。".to_owned()),
            steps_used: 2,
            error: None,
        }
    );
    assert_eq!(
        model.calls(),
        &[
            (task.clone(), vec![]),
            (
                task.clone(),
                vec![
                    HistoryItem::ToolCall(call),
                    HistoryItem::Observation(Observation {
                        tool_name: "calculator".to_owned(),
                        content: "84".to_owned(),
                        is_error: false,
                    }),
                ]
            ),
        ]
    );
}

#[test]
fn run_agent_returns_the_answer_on_finish() {
    let mut model = ScriptedModel::new(vec![finish("42")]);
    let answer = run_agent(
        &Task::new("t"),
        &mut model,
        &ToolRegistry::builtin(),
        steps(1),
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(answer, "42");
}

#[test]
fn budget_exhaustion_uses_every_step() {
    let call = Action::ToolCall(multiply_12_by_7());
    let mut model = ScriptedModel::new(vec![call.clone(), call.clone(), call]);
    let result = run_agent_result(
        &Task::new("t"),
        &mut model,
        &ToolRegistry::builtin(),
        steps(3),
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(result.exit_reason, ExitReason::MaxStepsExceeded);
    assert_eq!(result.steps_used, 3);
    assert_eq!(result.answer, None);
    assert_eq!(model.calls().len(), 3);

    let mut model = ScriptedModel::new(vec![Action::ToolCall(multiply_12_by_7())]);
    let err = run_agent(
        &Task::new("t"),
        &mut model,
        &ToolRegistry::builtin(),
        steps(1),
        &mut NoObserver,
    )
    .unwrap_err();
    assert!(matches!(err, RunError::MaxStepsExceeded { steps_used: 1 }));
}

#[test]
fn one_invalid_output_becomes_feedback_and_the_model_retries() {
    let raw = ScriptedRawModel::new(vec![
        "not json".to_owned(),
        r#"{"type":"finish","answer":"ok"}"#.to_owned(),
    ]);
    let mut model = JsonModelAdapter::new(raw);
    let task = Task::new("t");
    let result = run_agent_result(
        &task,
        &mut model,
        &ToolRegistry::builtin(),
        steps(2),
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(result.exit_reason, ExitReason::Finished);
    assert_eq!(result.steps_used, 2);
    let calls = model.inner().calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].1, vec![]);
    match calls[1].1.as_slice() {
        [HistoryItem::ModelFeedback(ModelFeedback { content, is_error })] => {
            assert!(is_error);
            assert!(
                content.starts_with("model output is not valid JSON"),
                "{content}"
            );
        }
        other => panic!("unexpected history {other:?}"),
    }
}

#[test]
fn invalid_output_on_the_last_step_ends_the_run() {
    let raw = ScriptedRawModel::new(vec!["[]".to_owned(), "{\"type\":\"dance\"}".to_owned()]);
    let mut model = JsonModelAdapter::new(raw);
    let result = run_agent_result(
        &Task::new("t"),
        &mut model,
        &ToolRegistry::builtin(),
        steps(2),
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(result.exit_reason, ExitReason::InvalidModelOutput);
    assert_eq!(result.steps_used, 2);
    assert_eq!(
        result.error.as_deref(),
        Some("unknown action type \"dance\": expected \"tool_call\" or \"finish\"")
    );
}

#[test]
fn tool_failures_are_observations_and_the_run_goes_on() {
    let calls = [
        ToolCall::new("search", args(json!({"q": "x"}))),
        ToolCall::new(
            "calculator",
            args(json!({"left": 1, "operation": "divide", "right": 0})),
        ),
    ];
    let mut actions: Vec<Action> = calls.iter().cloned().map(Action::ToolCall).collect();
    actions.push(finish("done"));
    let mut model = ScriptedModel::new(actions);
    let result = run_agent_result(
        &Task::new("t"),
        &mut model,
        &ToolRegistry::builtin(),
        steps(5),
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(result.exit_reason, ExitReason::Finished);
    let history = &model.calls()[2].1;
    assert_eq!(
        history[1],
        HistoryItem::Observation(Observation {
            tool_name: "search".to_owned(),
            content: "unknown tool: search".to_owned(),
            is_error: true,
        })
    );
    assert_eq!(
        history[3],
        HistoryItem::Observation(Observation {
            tool_name: "calculator".to_owned(),
            content: "division by zero".to_owned(),
            is_error: true,
        })
    );
}

fn panicking_registry() -> ToolRegistry {
    let mut tools = ToolRegistry::builtin();
    let spec = ToolSpec {
        name: "explode".to_owned(),
        description: "always panics".to_owned(),
        input_schema: json!({"type": "object"}),
        output_description: "nothing".to_owned(),
        error_description: "none".to_owned(),
    };
    tools
        .register(ToolDefinition::new(spec, |_| panic!("boom in handler")))
        .unwrap();
    tools
}

#[test]
fn a_panicking_handler_is_an_internal_error_not_an_observation() {
    let mut model = ScriptedModel::new(vec![
        Action::ToolCall(ToolCall::new("explode", Map::new())),
        finish("never reached"),
    ]);
    let mut events = Vec::new();
    let mut recorder = looptrace::trace::TraceRecorder::new(
        "r",
        looptrace::trace::RecorderOptions {
            durations: false,
            ..Default::default()
        },
        &mut events,
    );
    let err = run_agent_result(
        &Task::new("t"),
        &mut model,
        &panicking_registry(),
        steps(5),
        &mut recorder,
    )
    .unwrap_err();
    match err {
        AgentError::Internal { result, cause } => {
            assert_eq!(result.exit_reason, ExitReason::InternalError);
            assert_eq!(result.steps_used, 1);
            assert_eq!(cause.kind(), "tool_panic");
            assert_eq!(
                cause.to_string(),
                "tool \"explode\" panicked: boom in handler"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(model.calls().len(), 1);
    let last = events.last().unwrap();
    assert_eq!(last.ending(), Some(ExitReason::InternalError));
    assert_eq!(last.error_kind(), Some("tool_panic"));
}

#[test]
fn an_exhausted_script_is_an_internal_error_with_a_clear_message() {
    let mut model = ScriptedModel::new(vec![Action::ToolCall(multiply_12_by_7())]);
    let err = run_agent_result(
        &Task::new("t"),
        &mut model,
        &ToolRegistry::builtin(),
        steps(5),
        &mut NoObserver,
    )
    .unwrap_err();
    let AgentError::Internal { result, cause } = err else {
        panic!("expected an internal error");
    };
    assert_eq!(result.steps_used, 2);
    assert_eq!(
        cause.to_string(),
        "model failed: scripted model exhausted after 1 action"
    );

    let mut raw = JsonModelAdapter::new(ScriptedRawModel::new(vec![]));
    let err = run_agent(
        &Task::new("t"),
        &mut raw,
        &ToolRegistry::builtin(),
        steps(5),
        &mut NoObserver,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "model failed: scripted model exhausted after 0 responses"
    );
}

#[test]
fn a_zero_budget_is_refused() {
    let mut model = ScriptedModel::new(vec![finish("x")]);
    let err = run_agent_result(
        &Task::new("t"),
        &mut model,
        &ToolRegistry::builtin(),
        steps(0),
        &mut NoObserver,
    )
    .unwrap_err();
    assert!(matches!(err, AgentError::InvalidMaxSteps));
    assert!(model.calls().is_empty());
}
