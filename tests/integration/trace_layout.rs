//! `eval --trace-layout single` and `--trace-flush run`: every run of an evaluation in one
//! `traces.jsonl` whose lines stay whole with parallel workers, read back by `report`, `replay`,
//! and `eval --traces`; and the folder holds only the layout last written.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use looptrace::eval::ResultsFile;
use looptrace::trace::{Event, parse_line};
use serde_json::{Value, json};

use crate::support::{looptrace, stderr, stdout};

const TASKS: usize = 24;

/// Tasks with a tool call, feedback or a plain finish, so runs differ in length.
fn suite(dir: &Path) -> std::path::PathBuf {
    let tasks: Vec<Value> = (0..TASKS)
        .map(|i| {
            let actions = match i % 3 {
                0 => json!([{"type": "finish", "answer": "84"}]),
                1 => json!([
                    {"type": "tool_call", "tool_name": "calculator",
                     "arguments": {"left": i, "operation": "multiply", "right": 7}},
                    {"type": "finish", "answer": "84"}]),
                _ => json!([
                    {"type": "tool_call", "tool_name": "nope", "arguments": {}},
                    {"type": "tool_call", "tool_name": "calculator",
                     "arguments": {"left": 12, "operation": "multiply", "right": 7}},
                    {"type": "finish", "answer": "84"}]),
            };
            json!({"id": format!("t{i:02}"), "prompt": format!("task {i}"), "model": {"actions": actions}})
        })
        .collect();
    let path = dir.join("suite.json");
    std::fs::write(&path, json!({"name": "layout", "tasks": tasks}).to_string()).unwrap();
    path
}

fn eval(suite: &Path, out: &Path, extra: &[&str]) -> Output {
    looptrace()
        .arg("eval")
        .arg(suite)
        .arg("--out")
        .arg(out)
        .args(["--jobs", "4", "--format", "json", "--capture", "full"])
        .args(extra)
        .output()
        .unwrap()
}

/// The events of `traces.jsonl` by run, every line whole.
fn runs(path: &Path) -> BTreeMap<String, Vec<Event>> {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.ends_with(b"\n"));
    let mut runs: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let event = parse_line(line).unwrap().unwrap();
        runs.entry(event.run_id.clone()).or_default().push(event);
    }
    runs
}

fn check_single(flush: &str) {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out = dir.path().join("out");
    let output = eval(
        &suite,
        &out,
        &["--trace-layout", "single", "--trace-flush", flush],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("(traces in "),
        "{}",
        stderr(&output)
    );
    let results: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let single = crate::support::single_trace_of(&out);
    let runs = runs(&single);
    assert_eq!(runs.len(), TASKS);
    for task in &results.tasks {
        assert_eq!(
            crate::support::in_run(task.trace.as_deref().unwrap()),
            "traces.jsonl"
        );
        let events = &runs[task.run_id.as_deref().unwrap()];
        assert_eq!(events[0].event_type(), "run_started");
        assert_eq!(events.last().unwrap().event_type(), "run_finished");
        let steps: Vec<u64> = events.iter().map(|e| e.step).collect();
        assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");
    }
    if flush == "run" {
        // Each run was written in one piece: its lines are consecutive.
        let bytes = std::fs::read_to_string(&single).unwrap();
        let order: Vec<String> = bytes
            .lines()
            .map(|l| parse_line(l.as_bytes()).unwrap().unwrap().run_id)
            .collect();
        let mut changes = order.windows(2).filter(|w| w[0] != w[1]).count();
        changes += 1;
        assert_eq!(changes, TASKS);
    }
    // Nothing but `traces.jsonl`: no folder for per-task traces.
    assert!(!crate::support::traces_of(&out).exists());

    // `report` counts every run, `replay` replays them, `eval --traces` evaluates them.
    let report = looptrace()
        .args(["report", "--format", "json"])
        .arg(&single)
        .output()
        .unwrap();
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let report: Value = serde_json::from_str(&stdout(&report)).unwrap();
    assert_eq!(report["input"]["runs"], TASKS);
    let replay = looptrace().arg("replay").arg(&single).output().unwrap();
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    // `eval --traces` writes one trace file unless `--trace-layout per-task` asks for a file
    // per run.
    for layout in [None, Some("per-task")] {
        let again = dir
            .path()
            .join(format!("again-{}", layout.unwrap_or("default")));
        let output = looptrace()
            .args(["eval", "--format", "json", "--traces"])
            .arg(&single)
            .arg("--out")
            .arg(&again)
            .args(
                layout
                    .map(|layout| ["--trace-layout", layout])
                    .iter()
                    .flatten(),
            )
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let replayed: ResultsFile =
            serde_json::from_str(&std::fs::read_to_string(again.join("results.json")).unwrap())
                .unwrap();
        assert_eq!(replayed.totals.tasks, TASKS);
        let per_task = crate::support::traces_of(&again);
        match layout {
            None => {
                let replayed_runs = self::runs(&crate::support::single_trace_of(&again));
                assert_eq!(replayed_runs.len(), TASKS);
                // Each replayed run's events are there once, as many as the run it replays has
                // (runs written in batches share their worker's buffer).
                let lengths = |runs: &BTreeMap<String, Vec<Event>>| {
                    let mut lengths: Vec<usize> = runs.values().map(Vec::len).collect();
                    lengths.sort_unstable();
                    lengths
                };
                assert_eq!(lengths(&replayed_runs), lengths(&self::runs(&single)));
                assert!(!per_task.exists());
            }
            Some(_) => {
                assert_eq!(std::fs::read_dir(&per_task).unwrap().count(), TASKS);
                assert!(!crate::support::single_trace_of(&again).exists());
            }
        }
    }
}

#[test]
fn single_layout_flushing_each_event() {
    check_single("event");
}

#[test]
fn single_layout_flushing_each_run() {
    check_single("run");
}
