//! The `openai-responses` wire format against a real HTTP server on 127.0.0.1: the exact requests
//! (instructions, input items, `function_call_output` answers by `call_id`), usage and endings in
//! the trace, strict `arguments`, several calls in one response, and offline raw replay.

use serde_json::{Value, json};

use crate::live_model::{KEY, MULTIPLY, hash_of, result, run_live, types};
use crate::live_model_server::{Reply, Server, responses};
use crate::live_replay::{record, replay, report};
use crate::support::stderr;
use looptrace::model::live::DEFAULT_SYSTEM;
use looptrace::tools::calculator_spec;

fn tools() -> Value {
    let spec = calculator_spec();
    json!([{"type": "function", "name": spec.name, "description": spec.description,
            "parameters": spec.input_schema}])
}

#[test]
fn a_two_turn_calculator_run_sends_the_exact_requests() {
    let first = responses::function_calls(&[("call_1", "calculator", MULTIPLY)]);
    let server = Server::start(vec![
        Reply::ok(first.clone()),
        Reply::ok(responses::answer("12 × 7 = 84")),
    ]);
    let (output, events) = run_live(&server, "openai-responses", &["--max-output-tokens", "300"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(result(&output)["answer"], "12 × 7 = 84");
    let requests = server.finish();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/responses");
        assert_eq!(request.headers["authorization"], format!("Bearer {KEY}"));
    }
    let user = json!({"role": "user", "content": "compute 12 × 7"});
    let body = |input: Value| {
        json!({"model": "test-model", "instructions": DEFAULT_SYSTEM, "input": input,
               "tools": tools(), "max_output_tokens": 300})
    };
    assert_eq!(requests[0].body, body(json!([user])));
    // The output items go back as they came, then the call's output by its call id.
    let mut input = vec![user];
    input.extend(first["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "84"}));
    assert_eq!(requests[1].body, body(Value::Array(input)));

    assert_eq!(
        types(&events),
        [
            "run_started@0",
            "model_action@1",
            "observation@1",
            "model_action@2",
            "run_finished@2"
        ]
    );
    assert_eq!(events[0]["api"], "openai-responses");
    assert_eq!(events[1]["call_id"], "call_1");
    assert_eq!(
        events[1]["usage"],
        json!({"input_tokens": 150, "output_tokens": 25, "cache_read_tokens": 32, "reasoning_tokens": 8})
    );
    assert_eq!(events[1]["request_hash"], hash_of(&requests[0]));
    assert_eq!(events[1]["finish_reason"], "completed");
    assert_eq!(events[2]["call_id"], "call_1");
    assert_eq!(events[3]["request_hash"], hash_of(&requests[1]));
    assert_eq!(
        events[4]["usage"],
        json!({"input_tokens": 350, "output_tokens": 35, "cache_read_tokens": 32, "reasoning_tokens": 8})
    );
}

#[test]
fn malformed_arguments_get_an_error_output_and_the_model_recovers() {
    let server = Server::start(vec![
        Reply::ok(responses::function_calls(&[(
            "call_1",
            "calculator",
            r#"{"left": 12, "#,
        )])),
        Reply::ok(responses::function_calls(&[(
            "call_2",
            "calculator",
            MULTIPLY,
        )])),
        Reply::ok(responses::answer("84")),
    ]);
    let (output, events) = run_live(&server, "openai-responses", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(result(&output)["steps_used"], 3);
    let requests = server.finish();
    let last = requests[1].body["input"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["type"], "function_call_output");
    assert_eq!(last["call_id"], "call_1");
    assert!(
        last["output"].as_str().unwrap().contains("not valid JSON"),
        "{last}"
    );
    assert_eq!(events[1]["event_type"], "model_feedback");
    assert_eq!(events[1]["call_id"], "call_1");
    assert_eq!(events[1]["error_kind"], "invalid_json");
}

#[test]
fn two_function_calls_in_one_response_run_within_one_step() {
    let server = Server::start(vec![
        Reply::ok(responses::function_calls(&[
            ("call_a", "calculator", MULTIPLY),
            (
                "call_b",
                "calculator",
                r#"{"left": 1, "operation": "divide", "right": 0}"#,
            ),
        ])),
        Reply::ok(responses::answer("84")),
    ]);
    let (output, events) = run_live(&server, "openai-responses", &["--max-steps", "2"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        types(&events),
        [
            "run_started@0",
            "model_action@1",
            "observation@1",
            "model_action@1",
            "observation@1",
            "model_action@2",
            "run_finished@2"
        ]
    );
    let requests = server.finish();
    let outputs: Vec<(Value, bool)> = requests[1].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| (item["call_id"].clone(), item["output"] == "84"))
        .collect();
    assert_eq!(outputs, [(json!("call_a"), true), (json!("call_b"), false)]);
}

#[test]
fn a_text_answer_cut_by_the_output_limit_is_finished_with_its_reason() {
    let mut cut = responses::answer("12 × 7 is");
    cut["status"] = json!("incomplete");
    cut["incomplete_details"] = json!({"reason": "max_output_tokens"});
    let server = Server::start(vec![Reply::ok(cut)]);
    let (output, events) = run_live(&server, "openai-responses", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(result(&output)["answer"], "12 × 7 is");
    assert_eq!(events[1]["finish_reason"], "max_output_tokens");
}

#[test]
fn a_recorded_responses_run_replays_raw_faithfully_and_names_a_changed_instruction() {
    let server = Server::start(vec![
        Reply::ok(responses::function_calls(&[(
            "call_1",
            "calculator",
            MULTIPLY,
        )])),
        Reply::ok(responses::answer("84")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let trace = record(server, "openai-responses", dir.path(), "full");
    let output = replay(&trace, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(report(&output)["runs"][0]["verdict"], "faithful");
    let output = replay(&trace, &["--system", "Be brief."]);
    assert_eq!(output.status.code(), Some(1));
    let divergence = &report(&output)["runs"][0]["divergences"][0];
    assert_eq!(
        (&divergence["step"], &divergence["path"]),
        (&json!(1), &json!("$.instructions"))
    );
}
