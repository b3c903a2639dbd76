//! `looptrace replay --raw` of runs recorded against a real HTTP server on 127.0.0.1: the recorded
//! response bodies go through today's adapter offline (the server is gone by then), and every
//! request today's loop would send is compared with the recorded `request_hash`.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::live_model::{MULTIPLY, base_url, read_events, types};
use crate::live_model_server::{Reply, Server, anthropic, openai};
use crate::support::{looptrace, stderr, stdout};
use looptrace::model::live::{DEFAULT_SYSTEM, canonical_json};
use looptrace::trace::Summarizer;

/// Records one run against the server into `dir/trace.jsonl` and stops the server.
pub(crate) fn record(server: Server, api: &str, dir: &Path, capture: &str) -> PathBuf {
    let trace = dir.join("trace.jsonl");
    let base_url = base_url(&server, api);
    let output = looptrace()
        .args(["run", "--task", "compute 12 × 7", "--api", api])
        .args(["--base-url", &base_url, "--model", "test-model"])
        .args([
            "--capture",
            capture,
            "--run-id",
            "live",
            "--max-retries",
            "0",
        ])
        .arg("--trace")
        .arg(&trace)
        .env_remove("LOOPTRACE_HASH_KEY")
        .output()
        .expect("failed to start looptrace");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    server.finish();
    trace
}

pub(crate) fn replay(trace: &Path, extra: &[&str]) -> Output {
    looptrace()
        .arg("replay")
        .arg(trace)
        .args(["--raw", "--format", "json"])
        .args(extra)
        .env_remove("LOOPTRACE_HASH_KEY")
        .output()
        .expect("failed to start looptrace")
}

pub(crate) fn report(output: &Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|_| {
        panic!(
            "stdout is not JSON: {}\nstderr: {}",
            stdout(output),
            stderr(output)
        )
    })
}

fn events(trace: &Path) -> Vec<Value> {
    read_events(trace)
}

fn write_events(trace: &Path, events: &[Value]) {
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(trace, text).unwrap();
}

fn calculator_run() -> Server {
    Server::start(vec![
        Reply::ok(openai::tool_calls(&[("call_1", "calculator", MULTIPLY)])),
        Reply::ok(openai::answer("12 × 7 = 84", "stop")),
    ])
}

#[test]
fn a_recorded_live_run_replays_raw_faithfully_offline() {
    let dir = tempfile::tempdir().unwrap();
    let trace = record(calculator_run(), "openai-chat", dir.path(), "full");
    let recorded = events(&trace);
    // Full capture keeps the request as sent, in the canonical form its hash covers.
    let body = recorded[1]["request_body"].as_str().unwrap();
    assert_eq!(
        recorded[1]["request_hash"],
        Summarizer::sha256().digest(body.as_bytes())
    );
    let parsed: Value = serde_json::from_str(body).unwrap();
    assert_eq!(canonical_json(&parsed), body);
    assert_eq!(parsed["messages"][0]["content"], DEFAULT_SYSTEM);

    let output = replay(&trace, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let report = report(&output);
    assert_eq!(report["model"], "raw");
    assert_eq!(report["runs"][0]["verdict"], "faithful");
    assert_eq!(
        report["runs"][0]["actual"],
        json!({"outcome": "finished", "steps_used": 2})
    );
}

#[test]
fn another_system_prompt_is_a_request_divergence_at_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let trace = record(calculator_run(), "openai-chat", dir.path(), "full");
    let output = replay(&trace, &["--system", "Answer in French."]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report = report(&output);
    let divergence = &report["runs"][0]["divergences"][0];
    assert_eq!(divergence["step"], 1);
    assert_eq!(divergence["what"], "request");
    assert_eq!(divergence["path"], "$.messages[0].content");
    assert_eq!(
        divergence["recorded_text"],
        json!(DEFAULT_SYSTEM).to_string()
    );
    assert_eq!(divergence["actual_text"], "\"Answer in French.\"");
    assert_eq!(divergence["recorded"], events(&trace)[1]["request_hash"]);

    let text = looptrace()
        .arg("replay")
        .arg(&trace)
        .args(["--raw", "--system", "Answer in French."])
        .output()
        .unwrap();
    assert!(
        stdout(&text).contains(
            "step 1  the request to the model differs (request) at $.messages[0].content"
        ),
        "{}",
        stdout(&text)
    );
}

#[test]
fn tools_offered_differently_at_recording_are_a_request_divergence_naming_the_tool_field() {
    let dir = tempfile::tempdir().unwrap();
    let trace = record(calculator_run(), "openai-chat", dir.path(), "full");
    // As if the calculator's description was another one when the run was recorded.
    let mut recorded = events(&trace);
    for event in recorded
        .iter_mut()
        .filter(|e| e.get("request_body").is_some())
    {
        let mut body: Value =
            serde_json::from_str(event["request_body"].as_str().unwrap()).unwrap();
        body["tools"][0]["function"]["description"] = json!("an older description");
        let canonical = canonical_json(&body);
        event["request_hash"] = json!(Summarizer::sha256().digest(canonical.as_bytes()));
        event["request_body"] = json!(canonical);
    }
    write_events(&trace, &recorded);
    let output = replay(&trace, &["--on-divergence", "continue"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let run = &report(&output)["runs"][0];
    let found: Vec<(Value, Value, Value)> = run["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["step"].clone(), d["what"].clone(), d["path"].clone()))
        .collect();
    let path = json!("$.tools[0].function.description");
    assert_eq!(
        found,
        [
            (json!(1), json!("request"), path.clone()),
            (json!(2), json!("request"), path)
        ]
    );
    // Only the requests differ: the run still comes out the same.
    assert_eq!(
        run["actual"],
        json!({"outcome": "finished", "steps_used": 2})
    );
}

#[test]
fn a_recorded_response_read_differently_today_is_a_model_turn_divergence() {
    let dir = tempfile::tempdir().unwrap();
    let trace = record(calculator_run(), "openai-chat", dir.path(), "full");
    let mut recorded = events(&trace);
    let changed = recorded[1]["raw_response"]
        .as_str()
        .unwrap()
        .replace(r#"\"right\": 7"#, r#"\"right\": 8"#);
    assert_ne!(changed, recorded[1]["raw_response"].as_str().unwrap());
    recorded[1]["raw_response"] = json!(changed);
    write_events(&trace, &recorded);
    let output = replay(&trace, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let divergence = &report(&output)["runs"][0]["divergences"][0];
    assert_eq!(divergence["step"], 1);
    assert_eq!(divergence["what"], "model_turn");
    assert!(
        divergence["actual"]
            .as_str()
            .unwrap()
            .contains("\"right\":8"),
        "{divergence}"
    );
}

#[test]
fn a_multi_call_turn_replays_raw_and_parsed_faithfully() {
    let two = openai::tool_calls(&[
        ("call_a", "calculator", MULTIPLY),
        (
            "call_b",
            "calculator",
            r#"{"left": 84, "operation": "subtract", "right": 80}"#,
        ),
    ]);
    let server = Server::start(vec![
        Reply::ok(two),
        Reply::ok(openai::answer("84; 4 more than 80", "stop")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let trace = record(server, "openai-chat", dir.path(), "full");
    assert_eq!(
        types(&events(&trace)),
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
    let check = looptrace()
        .arg("replay")
        .arg(&trace)
        .arg("--check")
        .output()
        .unwrap();
    assert!(
        stdout(&check).contains(
            "live: replayable (2 model turns, 2 observations, max_steps 5, recorded finished in 2 steps)"
        ),
        "{}",
        stdout(&check)
    );
    for extra in [&["--raw"][..], &[]] {
        let output = looptrace()
            .arg("replay")
            .arg(&trace)
            .args(["--format", "json"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{extra:?}: {}",
            stdout(&output)
        );
        let run = &report(&output)["runs"][0];
        assert_eq!(run["verdict"], "faithful", "{extra:?}");
        assert_eq!(
            run["actual"],
            json!({"outcome": "finished", "steps_used": 2})
        );
    }
}

#[test]
fn an_anthropic_run_replays_raw_faithfully() {
    let input = json!({"left": 12, "operation": "multiply", "right": 7});
    let server = Server::start(vec![
        Reply::ok(anthropic::tool_use(
            "I'll multiply.",
            &[("toolu_1", "calculator", input)],
        )),
        Reply::ok(anthropic::answer("84")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let trace = record(server, "anthropic-messages", dir.path(), "full");
    let output = replay(&trace, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(report(&output)["runs"][0]["verdict"], "faithful");
    let output = replay(&trace, &["--max-output-tokens", "99"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        report(&output)["runs"][0]["divergences"][0]["path"],
        "$.max_tokens"
    );
}

#[test]
fn a_run_that_ran_out_of_context_replays_its_ending() {
    let server = Server::start(vec![
        Reply::ok(openai::tool_calls(&[("call_1", "calculator", MULTIPLY)])),
        Reply::status(
            400,
            openai::error(
                "context_length_exceeded",
                "maximum context length is 8192 tokens",
            ),
        ),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let trace = record(server, "openai-chat", dir.path(), "full");
    assert_eq!(events(&trace).last().unwrap()["budget"], "context");
    let output = replay(&trace, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let run = &report(&output)["runs"][0];
    assert_eq!(run["verdict"], "faithful");
    assert_eq!(
        run["actual"],
        json!({"outcome": "max_steps_exceeded", "steps_used": 2})
    );
}

#[test]
fn a_summary_capture_live_trace_is_refused_for_raw_replay() {
    let dir = tempfile::tempdir().unwrap();
    let trace = record(calculator_run(), "openai-chat", dir.path(), "summary");
    let out = dir.path().join("rerun.jsonl");
    let output = looptrace()
        .arg("replay")
        .arg(&trace)
        .arg("--raw")
        .arg("--trace")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains(
            "line 2 (model_action at step 1) has no `raw_response`; record replayable traces with `--capture full`"
        ),
        "{message}"
    );
    assert_eq!(stdout(&output), "");
    assert!(!out.exists(), "nothing is written");
}
