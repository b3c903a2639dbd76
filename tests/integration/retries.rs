//! `eval --retries N` against a real HTTP server on 127.0.0.1: a run that ends in a provider
//! failure another attempt may not meet runs again; the row is the last attempt's and records
//! `retried`, every attempt's run stays in the task's trace; merge and --resume keep it.

use std::path::Path;
use std::process::Output;

use looptrace::eval::ResultsFile;
use serde_json::{Value, json};

use crate::live_model::{KEY, KEY_VAR};
use crate::live_model_server::{Reply, Server, openai};
use crate::support::{looptrace, read_events, stderr, trace_for};

/// A suite of one chat task against `server` whose client gives up at the first failure.
fn write_suite(dir: &Path, server: &Server) -> std::path::PathBuf {
    let chat = json!({"api": "openai-chat", "base_url": format!("{}/v1", server.url),
                      "model": "test-model", "api_key_env": KEY_VAR, "max_retries": 0});
    let suite = json!({"name": "live", "tasks": [
        {"id": "live", "prompt": "say 84", "model": {"chat": chat}, "expect": {"answer": "84"}}
    ]});
    let path = dir.join("suite.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    path
}

fn eval(suite: &Path, out: &Path, extra: &[&str]) -> Output {
    looptrace()
        .arg("eval")
        .arg(suite)
        .arg("--out")
        .arg(out)
        .args(["-q", "--jobs", "1"])
        .args(extra)
        .env(KEY_VAR, KEY)
        .output()
        .unwrap()
}

fn results(out: &Path) -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

fn unavailable() -> Reply {
    Reply::status(503, json!({"error": {"message": "overloaded"}}))
}

#[test]
fn a_provider_failure_is_retried_and_every_attempt_stays_in_the_trace() {
    let server = Server::start(vec![
        unavailable(),
        unavailable(),
        Reply::ok(openai::answer("84", "stop")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path(), &server);
    let out = dir.path().join("out");
    let output = eval(&suite, &out, &["--retries", "2"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(server.finish().len(), 3);
    let got = results(&out);
    let row = &got.tasks[0];
    assert_eq!(row.retried, Some(2));
    assert!(row.answer.is_some(), "{row:?}");
    let run_id = row.run_id.clone().unwrap();
    assert!(run_id.ends_with(".a3"), "{run_id}");
    // The trace holds the three attempts, in order, the last one the row's.
    let events = read_events(&trace_for(&out, "live"));
    let ends: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["event_type"] == "run_finished")
        .map(|e| {
            (
                e["run_id"].as_str().unwrap(),
                e["exit_reason"].as_str().unwrap(),
            )
        })
        .collect();
    let first = run_id.trim_end_matches(".a3");
    assert_eq!(
        ends,
        [
            (first, "internal_error"),
            (format!("{first}.a2").as_str(), "internal_error"),
            (run_id.as_str(), "finished")
        ]
    );
    // --resume of a complete evaluation with retried rows runs nothing, and keeps them.
    let resumed = eval(&suite, &out, &["--retries", "2", "--resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(results(&out).tasks[0].retried, Some(2));
    // Merge keeps the field: it is part of the row.
    let merged = dir.path().join("merged.json");
    let output = looptrace()
        .arg("merge")
        .arg(out.join("results.json"))
        .arg("--out")
        .arg(&merged)
        .arg("-q")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(merged["tasks"][0]["retried"], 2);
}

#[test]
fn retries_stop_at_n_and_a_failure_that_would_recur_is_not_retried() {
    let server = Server::start(vec![unavailable(), unavailable()]);
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path(), &server);
    let out = dir.path().join("out");
    let output = eval(&suite, &out, &["--retries", "1"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(server.finish().len(), 2);
    let row = &results(&out).tasks[0];
    assert_eq!(
        (row.retried, row.error_kind.as_deref()),
        (Some(1), Some("provider_unavailable"))
    );
    // A rejected key fails the same way again: one attempt only.
    let server = Server::start(vec![Reply::status(
        401,
        json!({"error": {"message": "bad key"}}),
    )]);
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path(), &server);
    let out = dir.path().join("out");
    let output = eval(&suite, &out, &["--retries", "3"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(server.finish().len(), 1);
    let row = &results(&out).tasks[0];
    assert_eq!(
        (row.retried, row.error_kind.as_deref()),
        (None, Some("auth_failed"))
    );
}
