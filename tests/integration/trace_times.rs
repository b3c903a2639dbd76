//! Times in looptrace's own traces: `ts` on every event the loop, `run`, `eval` and `replay`
//! write, `duration_ms` on `run_finished`, and the clock a caller passes in.

use std::sync::Arc;

use looptrace::agent::{RunOptions, run_agent_result};
use looptrace::model::{JsonModelAdapter, ScriptedRawModel};
use looptrace::run::Task;
use looptrace::tools::ToolRegistry;
use looptrace::trace::{Capture, Event, RecorderOptions, SteppingClock, Summarizer, TraceRecorder};
use serde_json::Value;

use crate::support::{fixture, read_events, run, sample, stderr};

/// The trace form: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn assert_ts_form(ts: &str) {
    let b = ts.as_bytes();
    assert_eq!(b.len(), 24, "{ts}");
    assert!(
        b[4] == b'-' && b[10] == b'T' && b[19] == b'.' && b[23] == b'Z',
        "{ts}"
    );
}

/// Every event has a `ts` of the trace form, never earlier than the one before it, and each
/// `run_finished` a `duration_ms`.
fn assert_timed(events: &[Value]) {
    assert!(!events.is_empty());
    let mut last = String::new();
    for event in events {
        let ts = event["ts"]
            .as_str()
            .unwrap_or_else(|| panic!("no ts: {event}"));
        assert_ts_form(ts);
        if event["run_id"] == events[0]["run_id"] {
            assert!(ts >= last.as_str(), "{ts} before {last}");
            last = ts.to_owned();
        }
        if event["event_type"] == "run_finished" {
            assert!(event["duration_ms"].as_f64().unwrap() >= 0.0, "{event}");
        }
    }
}

#[test]
fn a_recorder_stamps_every_event_from_the_clock_it_is_given() {
    let mut events: Vec<Event> = Vec::new();
    let options = RecorderOptions {
        capture: Capture::Summary,
        summarizer: Summarizer::sha256(),
        durations: true,
        replay_of: None,
    };
    // 2026-01-01T00:00:00.000Z, then 250 ms later at each event.
    let clock = Arc::new(SteppingClock::new(1_767_225_600_000, 250));
    let mut recorder = TraceRecorder::new("r", options, &mut events).with_clock(clock);
    let responses = vec![
        r#"{"type":"tool_call","tool_name":"calculator","arguments":{"left":2,"operation":"add","right":2}}"#.to_owned(),
        r#"{"type":"finish","answer":"4"}"#.to_owned(),
    ];
    let mut model = JsonModelAdapter::new(ScriptedRawModel::new(responses));
    let result = run_agent_result(
        &Task::new("add 2 and 2"),
        &mut model,
        &ToolRegistry::builtin(),
        RunOptions { max_steps: 3 },
        &mut recorder,
    );
    assert!(result.is_ok());
    let stamped: Vec<(&str, Option<&str>)> = events
        .iter()
        .map(|e| (e.event_type(), e.ts.as_deref()))
        .collect();
    assert_eq!(
        stamped,
        [
            ("run_started", Some("2026-01-01T00:00:00.000Z")),
            ("model_action", Some("2026-01-01T00:00:00.250Z")),
            ("observation", Some("2026-01-01T00:00:00.500Z")),
            ("model_action", Some("2026-01-01T00:00:00.750Z")),
            ("run_finished", Some("2026-01-01T00:00:01.000Z")),
        ]
    );
    let finished = events.last().unwrap();
    assert!(finished.duration_ms().is_some_and(|ms| ms >= 0.0));
    assert!(
        events[..4]
            .iter()
            .all(|e| e.event_type() == "run_started" || e.duration_ms().is_some())
    );
}

/// `looptrace run` of a scripted finish with full capture, traced to `trace`.
fn run_traced(trace: &std::path::Path) {
    let output = run(&[
        "run",
        "--task",
        "compute 12 × 7",
        "--responses",
        fixture("responses/finish.txt").to_str().unwrap(),
        "--capture",
        "full",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn run_eval_and_replay_write_ts_on_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.jsonl");
    run_traced(&trace);
    assert_timed(&read_events(&trace));

    let replayed = dir.path().join("replayed.jsonl");
    let output = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--trace",
        replayed.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_timed(&read_events(&replayed));

    let out = dir.path().join("eval");
    let output = run(&[
        "eval",
        sample("suite.json").to_str().unwrap(),
        "-q",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    let mut traces = 0;
    for entry in walk(&crate::otlp_push::eval_traces(&out)) {
        assert_timed(&read_events(&entry));
        traces += 1;
    }
    assert!(traces > 0);
}

#[test]
fn report_reads_run_durations_from_run_finished() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.jsonl");
    run_traced(&trace);
    let events = read_events(&trace);
    let recorded = events.last().unwrap()["duration_ms"].as_f64().unwrap();
    let output = run(&["report", trace.to_str().unwrap(), "-f", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let finished = &report["durations"][0];
    assert_eq!(finished["runs_with_duration"], 1);
    // The sketch keeps 32 buckets per power of two: within 2.2% of the recorded duration.
    let max = finished["max_ms"].as_f64().unwrap();
    assert!(
        (max - recorded).abs() <= recorded * 0.022 + 0.001,
        "{max} vs {recorded}"
    );
}

/// Every `.jsonl` file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            found.push(path);
        }
    }
    found
}

#[test]
fn times_survive_an_otlp_export_and_its_import() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.jsonl");
    run_traced(&trace);
    let exported = dir.path().join("run.otlp.jsonl");
    let imported = dir.path().join("imported.jsonl");
    let round_trip = |source: &std::path::Path| {
        let output = run(&[
            "export",
            "--otlp",
            source.to_str().unwrap(),
            "-o",
            exported.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let output = run(&[
            "import",
            "--from",
            "otlp",
            exported.to_str().unwrap(),
            "-o",
            imported.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        read_events(&imported)
    };
    let times = |events: &[Value]| -> Vec<(String, String)> {
        events
            .iter()
            .map(|e| (e["event_type"].to_string(), e["ts"].to_string()))
            .collect()
    };
    assert_eq!(times(&round_trip(&trace)), times(&read_events(&trace)));
}
