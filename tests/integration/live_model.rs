//! `looptrace run --api ...` against a real HTTP server on 127.0.0.1: the exact requests each wire
//! format sends, how server failures are classified and retried, multi-call turns, and that the
//! API key reaches no output.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};

use crate::live_model_server::{ConcurrencyServer, Received, Reply, Server, anthropic, openai};
use crate::support::{looptrace, stderr, stdout};
use looptrace::model::live::DEFAULT_SYSTEM;
use looptrace::tools::calculator_spec;
use looptrace::trace::Summarizer;

pub(crate) const KEY_VAR: &str = "LOOPTRACE_TEST_API_KEY";
pub(crate) const KEY: &str = "sk-test-9f8e7d6c5b4a-SECRET";
pub(crate) const MULTIPLY: &str = r#"{"left": 12, "operation": "multiply", "right": 7}"#;

/// Runs `looptrace run` against the server with a full-capture trace; returns the output and the
/// trace's events.
pub(crate) fn run_live(server: &Server, api: &str, extra: &[&str]) -> (Output, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let base_url = base_url(server, api);
    let mut args = vec![
        "run",
        "--task",
        "compute 12 × 7",
        "--api",
        api,
        "--base-url",
        &base_url,
        "--model",
        "test-model",
        "--api-key-env",
        KEY_VAR,
        "--capture",
        "full",
        "--run-id",
        "live",
        "--json",
    ];
    let trace_arg = trace.display().to_string();
    args.extend(["--trace", &trace_arg]);
    args.extend_from_slice(extra);
    let output = looptrace()
        .args(&args)
        .env(KEY_VAR, KEY)
        .env_remove("LOOPTRACE_HASH_KEY")
        .output()
        .expect("failed to start looptrace");
    let events = read_events(&trace);
    assert_no_key(&output, &trace);
    (output, events)
}

/// The trace's events, none if it was not written.
pub(crate) fn read_events(trace: &Path) -> Vec<Value> {
    if !trace.exists() {
        return Vec::new();
    }
    super::support::read_events(trace)
}

/// The key is in no output: stdout, stderr or the trace.
fn assert_no_key(output: &Output, trace: &Path) {
    let trace = std::fs::read_to_string(trace).unwrap_or_default();
    for (place, text) in [
        ("stdout", stdout(output)),
        ("stderr", stderr(output)),
        ("trace", trace),
    ] {
        assert!(
            !text.contains(KEY),
            "the API key leaked into {place}: {text}"
        );
    }
}

/// The base URL of `api` on the server: version included for the OpenAI formats.
pub(crate) fn base_url(server: &Server, api: &str) -> String {
    match api {
        "anthropic-messages" => server.url.clone(),
        _ => format!("{}/v1", server.url),
    }
}

pub(crate) fn result(output: &Output) -> Value {
    serde_json::from_str(&stdout(output))
        .unwrap_or_else(|_| panic!("stdout is not JSON: {}", stdout(output)))
}

pub(crate) fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| format!("{}@{}", e["event_type"].as_str().unwrap(), e["step"]))
        .collect()
}

fn ending(events: &[Value]) -> &Value {
    events.last().expect("a trace with events")
}

fn openai_tools() -> Value {
    let spec = calculator_spec();
    json!([{"type": "function", "function": {
        "name": spec.name, "description": spec.description, "parameters": spec.input_schema}}])
}

fn anthropic_tools() -> Value {
    let spec = calculator_spec();
    json!([{"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}])
}

pub(crate) fn hash_of(request: &Received) -> String {
    Summarizer::sha256().digest(request.raw.as_bytes())
}

#[test]
fn openai_chat_two_turn_calculator_run_sends_the_exact_requests() {
    let server = Server::start(vec![
        Reply::ok(openai::tool_calls(&[("call_1", "calculator", MULTIPLY)])),
        Reply::ok(openai::answer("12 × 7 = 84", "stop")),
    ]);
    let (output, events) = run_live(&server, "openai-chat", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        result(&output),
        json!({"exit_reason": "finished", "answer": "12 × 7 = 84", "steps_used": 2, "error": null, "run_id": "live"})
    );
    let port = server_port(&server);
    let requests = server.finish();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.headers["authorization"], format!("Bearer {KEY}"));
        assert_eq!(request.headers["content-type"], "application/json");
    }
    let system = json!({"role": "system", "content": DEFAULT_SYSTEM});
    let user = json!({"role": "user", "content": "compute 12 × 7"});
    assert_eq!(
        requests[0].body,
        json!({"model": "test-model", "messages": [system, user], "tools": openai_tools()})
    );
    let assistant = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": MULTIPLY}}]});
    let tool = json!({"role": "tool", "tool_call_id": "call_1", "content": "84"});
    assert_eq!(
        requests[1].body,
        json!({"model": "test-model", "messages": [system, user, assistant, tool], "tools": openai_tools()})
    );

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
    assert_eq!(events[0]["api"], "openai-chat");
    assert_eq!(
        events[0]["model"],
        json!({"provider": port, "name": "test-model"})
    );
    assert_eq!(events[1]["call_id"], "call_1");
    assert_eq!(
        events[1]["usage"],
        json!({"input_tokens": 120, "output_tokens": 20, "cache_read_tokens": 64})
    );
    assert_eq!(events[1]["request_hash"], hash_of(&requests[0]));
    assert_eq!(events[1]["finish_reason"], "tool_calls");
    let raw: Value = serde_json::from_str(events[1]["raw_response"].as_str().unwrap()).unwrap();
    assert_eq!(
        raw,
        openai::tool_calls(&[("call_1", "calculator", MULTIPLY)])
    );
    assert_eq!(events[2]["call_id"], "call_1");
    assert_eq!(events[2]["content"], "84");
    assert_eq!(events[3]["request_hash"], hash_of(&requests[1]));
    assert_eq!(events[3]["finish_reason"], "stop");
    assert_eq!(events[3]["answer"], "12 × 7 = 84");
    // The run's tokens: both turns summed; a count only one turn reports is its count.
    assert_eq!(
        events[4]["usage"],
        json!({"input_tokens": 280, "output_tokens": 32, "cache_read_tokens": 64})
    );
}

fn server_port(server: &Server) -> String {
    server.url.trim_start_matches("http://").to_owned()
}

#[test]
fn anthropic_messages_two_turn_calculator_run_sends_the_exact_requests() {
    let input = json!({"left": 12, "operation": "multiply", "right": 7});
    let first = anthropic::tool_use(
        "I'll multiply.",
        &[("toolu_1", "calculator", input.clone())],
    );
    let server = Server::start(vec![
        Reply::ok(first.clone()),
        Reply::ok(anthropic::answer("84, which exceeds 80.")),
    ]);
    let (output, events) = run_live(
        &server,
        "anthropic-messages",
        &["--max-output-tokens", "512"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(result(&output)["answer"], "84, which exceeds 80.");
    let requests = server.finish();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.headers["x-api-key"], KEY);
        assert_eq!(request.headers["anthropic-version"], "2023-06-01");
        assert!(!request.headers.contains_key("authorization"));
    }
    let user = json!({"role": "user", "content": "compute 12 × 7"});
    let base = |messages: Value| {
        json!({"model": "test-model", "max_tokens": 512, "system": DEFAULT_SYSTEM,
               "messages": messages, "tools": anthropic_tools()})
    };
    assert_eq!(requests[0].body, base(json!([user])));
    let assistant = json!({"role": "assistant", "content": first["content"]});
    let results = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "84"}]});
    assert_eq!(requests[1].body, base(json!([user, assistant, results])));
    assert_eq!(events[0]["api"], "anthropic-messages");
    assert_eq!(events[1]["call_id"], "toolu_1");
    assert_eq!(events[1]["finish_reason"], "tool_use");
    assert_eq!(
        events[1]["usage"],
        json!({"input_tokens": 300, "output_tokens": 40, "cache_read_tokens": 0, "cache_write_tokens": 0})
    );
    assert_eq!(events[3]["finish_reason"], "end_turn");
}

#[test]
fn a_429_with_retry_after_is_retried_after_the_wait_it_asks_for() {
    let server = Server::start(vec![
        Reply::status(
            429,
            openai::error("rate_limit_exceeded", "Rate limit reached"),
        )
        .header("retry-after", "1"),
        Reply::ok(openai::answer("84", "stop")),
    ]);
    let (output, events) = run_live(&server, "openai-chat", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.finish();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].raw, requests[1].raw,
        "a retry resends the same request"
    );
    assert_eq!(
        types(&events),
        [
            "run_started@0",
            "model_retry@1",
            "model_action@1",
            "run_finished@1"
        ]
    );
    assert_eq!(
        (
            &events[1]["attempt"],
            &events[1]["error_kind"],
            &events[1]["http_status"],
            &events[1]["wait_ms"]
        ),
        (&json!(1), &json!("rate_limited"), &json!(429), &json!(1000))
    );
}

#[test]
fn a_persistent_500_ends_as_provider_unavailable_after_the_retries() {
    let replies = vec![Reply::status(500, json!({"error": {"message": "boom"}})); 3];
    let server = Server::start(replies);
    let (output, events) = run_live(&server, "openai-chat", &["--max-retries", "2"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_eq!(server.finish().len(), 3);
    assert_eq!(
        types(&events),
        [
            "run_started@0",
            "model_retry@1",
            "model_retry@1",
            "run_finished@1"
        ]
    );
    assert_eq!(events[1]["http_status"], 500);
    assert_eq!(events[2]["attempt"], 2);
    let end = ending(&events);
    assert_eq!(end["exit_reason"], "internal_error");
    assert_eq!(end["error_kind"], "provider_unavailable");
    assert!(stderr(&output).contains("HTTP 500"), "{}", stderr(&output));
}

#[test]
fn waits_too_long_to_measure_are_no_limit_and_a_temperature_must_be_a_number() {
    // 10^20 s is past what a deadline can hold: taken as no limit, as a suite's `timeout_s` is.
    let server = Server::start(vec![Reply::ok(openai::answer("84", "stop"))]);
    let long = ["--timeout-s", "1e20", "--retry-budget-s", "1e20"];
    let (output, _) = run_live(&server, "openai-chat", &long);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(result(&output)["answer"], "84");
    let server = Server::start(Vec::new());
    let (output, _) = run_live(&server, "openai-chat", &["--temperature", "nan"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--temperature must be a number"));
    assert!(server.finish().is_empty());
}

#[test]
fn a_server_that_never_answers_times_out_as_provider_unavailable() {
    let server = Server::start(vec![Reply::Silence(Duration::from_secs(5))]);
    let (output, events) = run_live(
        &server,
        "openai-chat",
        &["--timeout-s", "0.5", "--max-retries", "0"],
    );
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let end = ending(&events);
    assert_eq!(end["exit_reason"], "internal_error");
    assert_eq!(end["error_kind"], "provider_unavailable");
    assert!(
        result(&output)["error"]
            .as_str()
            .unwrap()
            .contains("no answer in time")
    );
}

#[test]
fn a_refused_connection_is_retried_then_provider_unavailable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let trace_arg = trace.display().to_string();
    let output = run_plain(&url, &["--max-retries", "1", "--trace", &trace_arg], None);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let events = read_events(&trace);
    assert_eq!(events[1]["event_type"], "model_retry");
    assert_eq!(events[1]["error_kind"], "connection_failed");
    assert_eq!(ending(&events)["error_kind"], "provider_unavailable");
    // The message names the URL that was requested.
    let wanted = format!("POST {url}/chat/completions: ");
    assert!(stderr(&output).contains(&wanted), "{}", stderr(&output));
}

#[test]
fn an_http_error_names_the_url_that_was_requested() {
    // A base URL with the version twice: the 404 says where the request went.
    let server = Server::start(vec![Reply::status(404, json!({"error": "not found"}))]);
    let doubled = format!("{}/v1/v1", server.url);
    let output = run_plain(&doubled, &[], None);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let wanted = format!("POST {}/v1/v1/chat/completions: HTTP 404", server.url);
    assert!(stderr(&output).contains(&wanted), "{}", stderr(&output));
}

#[test]
fn a_401_is_auth_failed_without_retry_and_the_echoed_key_is_redacted() {
    let message = format!("Incorrect API key provided: {KEY}.");
    let server = Server::start(vec![Reply::status(
        401,
        openai::error("invalid_api_key", &message),
    )]);
    let (output, events) = run_live(&server, "openai-chat", &[]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_eq!(server.finish().len(), 1);
    assert_eq!(types(&events), ["run_started@0", "run_finished@1"]);
    assert_eq!(ending(&events)["error_kind"], "auth_failed");
    assert!(
        stderr(&output).contains("[redacted]"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn exhausted_quota_is_not_retried() {
    let server = Server::start(vec![Reply::status(
        429,
        openai::error("insufficient_quota", "You exceeded your current quota."),
    )]);
    let (output, events) = run_live(&server, "openai-chat", &[]);
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(server.finish().len(), 1);
    assert_eq!(ending(&events)["error_kind"], "quota_exceeded");
}

#[test]
fn context_length_exceeded_is_a_context_budget_not_an_error() {
    for (api, body) in [
        (
            "openai-chat",
            openai::error(
                "context_length_exceeded",
                "This model's maximum context length is 8192 tokens.",
            ),
        ),
        (
            "anthropic-messages",
            anthropic::error(
                "invalid_request_error",
                "prompt is too long: 210000 tokens > 200000 maximum",
            ),
        ),
    ] {
        let server = Server::start(vec![Reply::status(400, body)]);
        let (output, events) = run_live(&server, api, &[]);
        assert_eq!(output.status.code(), Some(1), "{api}: {}", stderr(&output));
        let end = ending(&events);
        assert_eq!(end["exit_reason"], "max_steps_exceeded", "{api}");
        assert_eq!(end["budget"], "context", "{api}");
        assert_eq!(end["error_kind"], "context_length_exceeded", "{api}");
    }
}

#[test]
fn malformed_arguments_get_an_error_tool_result_and_the_model_recovers() {
    let server = Server::start(vec![
        Reply::ok(openai::tool_calls(&[(
            "call_1",
            "calculator",
            r#"{"left": 12, "#,
        )])),
        Reply::ok(openai::tool_calls(&[("call_2", "calculator", MULTIPLY)])),
        Reply::ok(openai::answer("84", "stop")),
    ]);
    let (output, events) = run_live(&server, "openai-chat", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(result(&output)["steps_used"], 3);
    let requests = server.finish();
    let messages = requests[1].body["messages"].as_array().unwrap();
    let answer = messages.last().unwrap();
    assert_eq!(answer["role"], "tool");
    assert_eq!(answer["tool_call_id"], "call_1");
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{answer}"
    );
    assert_eq!(events[1]["event_type"], "model_feedback");
    assert_eq!(events[1]["call_id"], "call_1");
    assert_eq!(events[1]["error_kind"], "invalid_json");
}

#[test]
fn two_tool_calls_in_one_response_run_in_order_within_one_step() {
    let server = Server::start(vec![
        Reply::ok(anthropic::tool_use(
            "Two sums.",
            &[
                (
                    "toolu_a",
                    "calculator",
                    json!({"left": 12, "operation": "multiply", "right": 7}),
                ),
                (
                    "toolu_b",
                    "calculator",
                    json!({"left": 1, "operation": "divide", "right": 0}),
                ),
            ],
        )),
        Reply::ok(anthropic::answer("84")),
    ]);
    let (output, events) = run_live(&server, "anthropic-messages", &["--max-steps", "2"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(result(&output)["steps_used"], 2);
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
    let ids: Vec<&Value> = events[1..5].iter().map(|e| &e["call_id"]).collect();
    assert_eq!(
        ids,
        [&json!("toolu_a"); 2]
            .into_iter()
            .chain([&json!("toolu_b"); 2])
            .collect::<Vec<_>>()
    );
    assert!(events[1].get("usage").is_some() && events[3].get("usage").is_none());
    let requests = server.finish();
    let last = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    let blocks = last["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        blocks[0],
        json!({"type": "tool_result", "tool_use_id": "toolu_a", "content": "84"})
    );
    assert_eq!(blocks[1]["tool_use_id"], "toolu_b");
    assert_eq!(blocks[1]["is_error"], true);
}

#[test]
fn an_empty_response_gets_feedback_as_a_user_message() {
    let server = Server::start(vec![
        Reply::ok(openai::answer("", "stop")),
        Reply::ok(openai::answer("84", "stop")),
    ]);
    let (output, events) = run_live(&server, "openai-chat", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(events[1]["event_type"], "model_feedback");
    assert_eq!(events[1]["error_kind"], "missing_field");
    let requests = server.finish();
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "system, task, feedback: {messages:?}");
    assert_eq!(messages[2]["role"], "user");
}

#[test]
fn a_text_answer_cut_by_the_output_limit_is_finished_with_its_finish_reason() {
    let server = Server::start(vec![Reply::ok(openai::answer("84 is gre", "length"))]);
    let (output, events) = run_live(&server, "openai-chat", &[]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(events[1]["finish_reason"], "length");
    assert_eq!(ending(&events)["exit_reason"], "finished");
}

#[test]
fn the_token_budget_ends_the_run_with_budget_tokens() {
    let server = Server::start(vec![Reply::ok(openai::tool_calls(&[(
        "call_1",
        "calculator",
        MULTIPLY,
    )]))]);
    let (output, events) = run_live(&server, "openai-chat", &["--max-total-tokens", "100"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let end = ending(&events);
    assert_eq!(end["exit_reason"], "max_steps_exceeded");
    assert_eq!(end["budget"], "tokens");
    assert_eq!(end["steps_used"], 1);
}

/// `looptrace run` with no trace and no key, with `unset` removed from the environment.
fn run_plain(base_url: &str, extra: &[&str], unset: Option<&str>) -> Output {
    let mut command = looptrace();
    command
        .args([
            "run",
            "--task",
            "t",
            "--api",
            "openai-chat",
            "--base-url",
            base_url,
        ])
        .args(["--model", "m"])
        .args(extra);
    if let Some(var) = unset {
        command.env_remove(var);
    }
    command.output().unwrap()
}

#[test]
fn an_unset_key_variable_is_a_usage_error_before_any_request() {
    let server = Server::start(vec![Reply::ok(openai::answer("84", "stop"))]);
    let output = run_plain(
        &server.url,
        &["--api-key-env", "LOOPTRACE_TEST_UNSET_KEY"],
        Some("LOOPTRACE_TEST_UNSET_KEY"),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("`LOOPTRACE_TEST_UNSET_KEY` is not set"),
        "{}",
        stderr(&output)
    );
    assert!(server.received().is_empty());
}

#[test]
fn without_a_key_variable_no_auth_header_is_sent() {
    let server = Server::start(vec![Reply::ok(openai::answer("84", "stop"))]);
    let output = run_plain(&server.url, &[], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.finish();
    assert!(!requests[0].headers.contains_key("authorization"));
}

#[test]
fn live_traces_follow_the_trace_schema() {
    let server = Server::start(vec![
        Reply::status(429, json!({})).header("retry-after", "0"),
        Reply::ok(openai::tool_calls(&[("call_1", "calculator", MULTIPLY)])),
        Reply::ok(openai::answer("84", "stop")),
    ]);
    let (_, events) = run_live(&server, "openai-chat", &[]);
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/trace-event.schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert_eq!(events.len(), 6);
    for event in &events {
        let errors: Vec<String> = validator
            .iter_errors(event)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{event}: {errors:?}");
    }
}

/// Writes a suite with one chat task against `base_url` and evaluates it.
fn eval_chat_suite(dir: &Path, chat: Value, task_extra: Value) -> Output {
    let mut task = json!({"id": "live", "prompt": "compute 12 × 7", "model": {"chat": chat}});
    for (key, value) in task_extra.as_object().unwrap() {
        task[key] = value.clone();
    }
    let suite = json!({"name": "live", "tasks": [task]});
    let path = dir.join("suite.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    looptrace()
        .arg("eval")
        .arg(&path)
        .arg("--out")
        .arg(dir.join("out"))
        .env(KEY_VAR, KEY)
        .env_remove("LOOPTRACE_TEST_UNSET_KEY")
        .output()
        .unwrap()
}

#[test]
fn a_suite_chat_task_runs_against_the_server_and_results_name_its_model() {
    let server = Server::start(vec![
        Reply::ok(openai::tool_calls(&[("call_1", "calculator", MULTIPLY)])),
        Reply::ok(openai::answer("84", "stop")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let server_url = server.url.clone();
    let chat = json!({"api": "openai-chat", "base_url": format!("{}/v1", server.url),
                      "model": "test-model", "api_key_env": KEY_VAR, "temperature": 0});
    let output = eval_chat_suite(dir.path(), chat, json!({"expect": {"answer": "84"}}));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.finish();
    assert_eq!(
        requests[0].headers["authorization"],
        format!("Bearer {KEY}")
    );
    assert_eq!(requests[0].body["temperature"], 0.0);
    let results = std::fs::read_to_string(dir.path().join("out/results.json")).unwrap();
    assert!(!results.contains(KEY));
    let results: Value = serde_json::from_str(&results).unwrap();
    let task = &results["tasks"][0];
    assert_eq!(task["model"], "chat");
    let provider = server_url.trim_start_matches("http://");
    assert_eq!(
        task["chat"],
        json!({"api": "openai-chat", "model": "test-model", "provider": provider})
    );
    assert_eq!(task["model_kind"], "chat");
    assert_eq!(task["tool_calls"], 1);
}

#[test]
fn a_suite_token_budget_ends_a_chat_task_with_budget_tokens() {
    let server = Server::start(vec![Reply::ok(openai::tool_calls(&[(
        "call_1",
        "calculator",
        MULTIPLY,
    )]))]);
    let dir = tempfile::tempdir().unwrap();
    let chat = json!({"api": "openai-chat", "base_url": server.url, "model": "m"});
    let extra = json!({"max_total_tokens": 50, "expect": {"exit_reason": "max_steps_exceeded"}});
    let output = eval_chat_suite(dir.path(), chat, extra);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(results["tasks"][0]["exit_reason"], "max_steps_exceeded");
    assert_eq!(results["tasks"][0]["error_kind"], "token_budget_exhausted");
}

#[test]
fn a_suite_naming_an_unset_key_variable_is_rejected_before_any_request() {
    let server = Server::start(vec![Reply::ok(openai::answer("84", "stop"))]);
    let dir = tempfile::tempdir().unwrap();
    let chat = json!({"api": "openai-chat", "base_url": server.url, "model": "m",
                      "api_key_env": "LOOPTRACE_TEST_UNSET_KEY"});
    let output = eval_chat_suite(dir.path(), chat, json!({}));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("$.tasks[0].model.chat.api_key_env"),
        "{}",
        stderr(&output)
    );
    assert!(server.received().is_empty());
    assert!(!dir.path().join("out/results.json").exists());
}

/// Evaluates `tasks` chat tasks at `--jobs jobs` against a server that holds each request until
/// `jobs` are in flight at once; returns the peak the server saw and how many it served.
fn peak_in_flight(tasks: usize, jobs: usize) -> (usize, usize) {
    let server = ConcurrencyServer::start(
        Reply::ok(openai::answer("84", "stop")),
        tasks,
        jobs,
        Duration::from_secs(30),
    );
    let chat =
        json!({"api": "openai-chat", "base_url": format!("{}/v1", server.url), "model": "m"});
    let tasks: Vec<Value> = (0..tasks)
        .map(|i| {
            json!({"id": format!("t{i}"), "prompt": "compute 12 × 7", "model": {"chat": chat},
                        "expect": {"answer": "84"}})
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(&suite, json!({"name": "live", "tasks": tasks}).to_string()).unwrap();
    let output = looptrace()
        .arg("eval")
        .arg(&suite)
        .args(["--jobs", &jobs.to_string(), "--out"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    server.peak_and_served()
}

#[test]
fn eval_jobs_8_keeps_8_requests_in_flight() {
    assert_eq!(peak_in_flight(12, 8), (8, 12));
}

#[test]
fn eval_jobs_64_keeps_64_requests_in_flight() {
    assert_eq!(peak_in_flight(80, 64), (64, 80));
}
