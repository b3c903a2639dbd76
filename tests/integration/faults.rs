//! Process-level faults with the real binary: `LOOPTRACE_FAULT=abort_after_events:N` kills a run
//! or an eval right after its Nth trace event, for every N. What was written must stay whole and
//! readable by `show` and `report`, the run must read as `incomplete`, a later healthy run
//! appended to the same file must not be disturbed, and `results.json` must be the previous
//! complete file or absent, never partial. A malformed fault setting is a usage error.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;

use looptrace::trace::{Event, parse_line};

use crate::support::{leftovers, looptrace, stderr, stdout};

/// Feedback, a good call, an unknown tool, then a finish: every event type a run writes.
const RESPONSES: &str = "not json\n\
{\"type\":\"tool_call\",\"tool_name\":\"calculator\",\"arguments\":{\"left\":12,\"operation\":\"multiply\",\"right\":7}}\n\
{\"type\":\"tool_call\",\"tool_name\":\"search\",\"arguments\":{\"q\":\"x\"}}\n\
{\"type\":\"finish\",\"answer\":\"84\"}\n";

/// The signal `abort` raises on Linux.
const SIGABRT: i32 = 6;

/// The events of the healthy run, by type and step.
const EVENTS: [&str; 8] = [
    "0:run_started",
    "1:model_feedback",
    "2:model_action",
    "2:observation",
    "3:model_action",
    "3:observation",
    "4:model_action",
    "4:run_finished",
];

/// Runs `looptrace run` appending to `trace`, with an optional fault.
fn run_task(dir: &Path, trace: &Path, run_id: &str, fault: Option<&str>) -> Output {
    let responses = dir.join("responses.txt");
    std::fs::write(&responses, RESPONSES).unwrap();
    let mut command = looptrace();
    command.args([
        "run",
        "--task",
        "compute 12 × 7",
        "--max-steps",
        "5",
        "--run-id",
        run_id,
    ]);
    command.arg("--responses").arg(&responses);
    command.arg("--trace").arg(trace);
    command.env_remove("LOOPTRACE_FAULT");
    if let Some(fault) = fault {
        command.env("LOOPTRACE_FAULT", fault);
    }
    command.output().expect("failed to start looptrace")
}

/// Every line of the file, each of which must end with `\n` and parse.
fn whole_lines(trace: &Path) -> Vec<Event> {
    let bytes = std::fs::read(trace).unwrap();
    assert!(
        bytes.is_empty() || bytes.ends_with(b"\n"),
        "the last line is cut off"
    );
    bytes
        .split_inclusive(|b| *b == b'\n')
        .enumerate()
        .map(|(i, line)| {
            parse_line(line)
                .unwrap_or_else(|err| panic!("line {} does not parse: {err}", i + 1))
                .unwrap_or_else(|| panic!("line {} is blank", i + 1))
        })
        .collect()
}

fn shape(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| format!("{}:{}", e.step, e.event_type()))
        .collect()
}

/// An event without its timing, which differs from run to run.
fn untimed(event: &Event) -> Event {
    event.untimed()
}

/// An eval's event without what differs between evaluations: times and the eval id in the
/// run id (`<task-id>.<eval-id>`).
fn comparable(event: &Event) -> Event {
    let task = event.run_id.split_once('.').map_or("", |(task, _)| task);
    Event {
        run_id: task.to_owned(),
        ..untimed(event)
    }
}

/// `looptrace show FILE --format json`: exit 0, the parsed events.
fn show_json(trace: &Path) -> Vec<Event> {
    let output = looptrace()
        .args(["show", "--format", "json"])
        .arg(trace)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// `looptrace show FILE`: exit 0, and the outcome line of each run in order.
fn shown_outcomes(trace: &Path) -> Vec<String> {
    let output = looptrace().arg("show").arg(trace).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stderr(&output).contains("panicked"));
    stdout(&output)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("outcome: "))
        .map(|rest| rest.split_whitespace().next().unwrap_or("").to_owned())
        .collect()
}

/// `looptrace report FILE --format json`: exit 0, and the run count of each outcome row.
fn reported_outcomes(trace: &Path) -> Vec<(String, u64)> {
    let output = looptrace()
        .args(["report", "--format", "json"])
        .arg(trace)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    report["exit_reasons"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["runs"].as_u64() != Some(0))
        .map(|row| {
            (
                row["exit_reason"].as_str().unwrap().to_owned(),
                row["runs"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn assert_aborted(output: &Output) {
    assert_eq!(output.status.code(), None, "{}", stderr(output));
    assert_eq!(output.status.signal(), Some(SIGABRT));
    assert!(!stderr(output).contains("panicked"), "{}", stderr(output));
}

#[test]
fn the_healthy_run_writes_every_event_type() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let output = run_task(dir.path(), &trace, "healthy", None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(shape(&whole_lines(&trace)), EVENTS);
}

#[test]
fn a_run_killed_after_any_event_leaves_whole_readable_lines() {
    let dir = tempfile::tempdir().unwrap();
    let healthy_trace = dir.path().join("healthy.jsonl");
    assert_eq!(
        run_task(dir.path(), &healthy_trace, "r", None)
            .status
            .code(),
        Some(0)
    );
    let healthy: Vec<Event> = whole_lines(&healthy_trace).iter().map(untimed).collect();

    for n in 1..=EVENTS.len() {
        let trace = dir.path().join(format!("killed-{n}.jsonl"));
        let output = run_task(
            dir.path(),
            &trace,
            "r",
            Some(&format!("abort_after_events:{n}")),
        );
        assert_aborted(&output);
        let written: Vec<Event> = whole_lines(&trace).iter().map(untimed).collect();
        assert_eq!(written, healthy[..n], "after {n} events");

        let shown: Vec<Event> = show_json(&trace).iter().map(untimed).collect();
        assert_eq!(shown, written, "after {n} events");
        let expected = if n == EVENTS.len() {
            // The abort came after `run_finished` reached the file: the evidence is complete.
            "finished"
        } else {
            "incomplete"
        };
        assert_eq!(shown_outcomes(&trace), [expected], "after {n} events");
        assert_eq!(
            reported_outcomes(&trace),
            [(expected.to_owned(), 1)],
            "after {n} events"
        );
    }
}

#[test]
fn a_healthy_run_appended_after_a_killed_one_leaves_both_readable() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    assert_aborted(&run_task(
        dir.path(),
        &trace,
        "killed",
        Some("abort_after_events:3"),
    ));
    let output = run_task(dir.path(), &trace, "healthy", None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let events = whole_lines(&trace);
    assert_eq!(events.len(), 3 + EVENTS.len());
    assert!(events[..3].iter().all(|e| e.run_id == "killed"));
    assert!(events[3..].iter().all(|e| e.run_id == "healthy"));
    assert_eq!(shape(&events[3..]), EVENTS);
    // `show` prints runs as they end; a run that never ends comes last.
    assert_eq!(shown_outcomes(&trace), ["finished", "incomplete"]);
    assert_eq!(
        reported_outcomes(&trace),
        [("finished".to_owned(), 1), ("incomplete".to_owned(), 1)]
    );
}

#[test]
fn a_malformed_fault_setting_is_a_usage_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    for value in [
        "abort_after_events:",
        "abort_after_events:x",
        "explode",
        "abort_after_events:-1",
        "abort_after_events:0",
    ] {
        let output = run_task(dir.path(), &trace, "r", Some(value));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{value}: {}",
            stderr(&output)
        );
        assert_eq!(
            stderr(&output),
            format!(
                "error: LOOPTRACE_FAULT={value:?} is not understood: expected abort_after_events:N, abort_before_row:N or abort_mid_row:N with N >= 1, or abort_in_results_write\n"
            )
        );
        assert!(stdout(&output).is_empty());
        assert!(!trace.exists(), "{value}: a trace was written");
    }
    // Commands that write no trace check the setting too.
    let output = looptrace()
        .arg("tools")
        .env("LOOPTRACE_FAULT", "explode")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stdout(&output).is_empty());
}

/// Three tasks of 3, 5 and 4 events, run one at a time so the order of events is fixed.
const SUITE: &str = r#"{"name": "faults", "tasks": [
  {"id": "a-finish", "prompt": "say 84",
   "model": {"responses": ["{\"type\":\"finish\",\"answer\":\"84\"}"]}},
  {"id": "b-tool", "prompt": "compute 12 × 7",
   "model": {"actions": [
     {"type": "tool_call", "tool_name": "calculator", "arguments": {"left": 12, "operation": "multiply", "right": 7}},
     {"type": "finish", "answer": "84"}]}},
  {"id": "c-feedback", "prompt": "say 84",
   "model": {"responses": ["not json", "{\"type\":\"finish\",\"answer\":\"84\"}"]}}
]}"#;

/// The suite's event count.
const SUITE_EVENTS: usize = 3 + 5 + 4;

fn eval(suite: &Path, out: &Path, fault: Option<&str>) -> Output {
    let mut command = looptrace();
    command.arg("eval").arg(suite).arg("--out").arg(out);
    command.args(["--jobs", "1", "--format", "json"]);
    command.env_remove("LOOPTRACE_FAULT");
    if let Some(fault) = fault {
        command.env("LOOPTRACE_FAULT", fault);
    }
    command.output().expect("failed to start looptrace")
}

/// The task traces in `out/traces`, by file name, each checked whole and readable by `show`.
fn task_traces(out: &Path) -> Vec<(String, Vec<Event>)> {
    let mut traces: Vec<_> = std::fs::read_dir(crate::support::traces_of(out))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    traces.sort();
    traces
        .iter()
        .map(|path| {
            let events = whole_lines(path);
            assert_eq!(show_json(path).len(), events.len());
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, events)
        })
        .collect()
}

#[test]
fn an_eval_killed_after_any_event_leaves_no_partial_results() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(&suite, SUITE).unwrap();
    let healthy = dir.path().join("healthy");
    let output = eval(&suite, &healthy, None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let traces = task_traces(&healthy);
    let names: Vec<&str> = traces.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["a-finish.jsonl", "b-tool.jsonl", "c-feedback.jsonl"]
    );
    let all: Vec<Event> = traces.into_iter().flat_map(|(_, e)| e).collect();
    assert_eq!(all.len(), SUITE_EVENTS);

    for n in 1..=SUITE_EVENTS {
        let fault = format!("abort_after_events:{n}");

        // A first eval killed: no results file at all, and exactly the events written so far.
        let fresh = dir.path().join(format!("fresh-{n}"));
        assert_aborted(&eval(&suite, &fresh, Some(&fault)));
        assert!(!fresh.join("results.json").exists(), "after {n} events");
        assert!(leftovers(&fresh).is_empty(), "after {n} events");
        let written: Vec<Event> = task_traces(&fresh)
            .into_iter()
            .flat_map(|(_, events)| events)
            .map(|e| comparable(&e))
            .collect();
        let expected: Vec<Event> = all[..n].iter().map(comparable).collect();
        assert_eq!(written, expected, "after {n} events");

        // An eval killed over a complete one: the earlier results stay as they were, naming
        // the earlier run, which no later run touches; `--resume` finishes the killed one.
        let rerun = dir.path().join(format!("rerun-{n}"));
        let output = eval(&suite, &rerun, None);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let earlier = std::fs::read(rerun.join("results.json")).unwrap();
        let earlier_traces = task_traces(&rerun);
        let earlier_run = crate::support::newest_run(&rerun);
        assert_aborted(&eval(&suite, &rerun, Some(&fault)));
        assert_eq!(
            std::fs::read(rerun.join("results.json")).unwrap(),
            earlier,
            "after {n} events"
        );
        assert!(leftovers(&rerun).is_empty(), "after {n} events");
        let kept: Vec<_> = std::fs::read_dir(earlier_run.join("traces"))
            .unwrap()
            .collect();
        assert_eq!(kept.len(), earlier_traces.len(), "after {n} events");
        let resumed = crate::support::looptrace()
            .arg("eval")
            .arg(&suite)
            .arg("--out")
            .arg(&rerun)
            .args(["--resume", "-q"])
            .output()
            .unwrap();
        assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
        assert!(rerun.join("results.json").exists(), "after {n} events");
    }
}

/// Runs `looptrace ARGS` with its standard output a pipe whose reading end is already closed,
/// as `looptrace ... | head -0` leaves it: every write to stdout fails with a broken pipe.
fn with_closed_stdout(args: &[&std::ffi::OsStr]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    looptrace()
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_never_changes_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(
        &suite,
        r#"{"name": "s", "tasks": [{"id": "wrong", "prompt": "p",
            "model": {"actions": [{"type": "finish", "answer": "a"}]}, "expect": {"answer": "b"}}]}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = with_closed_stdout(&[
        "eval".as_ref(),
        suite.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("results: "), "{}", stderr(&output));
    assert!(out.join("results.json").exists());

    let diverging = crate::support::fixture("replay/edited_observation.jsonl");
    let output = with_closed_stdout(&["replay".as_ref(), diverging.as_os_str()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));

    let responses = dir.path().join("responses.txt");
    std::fs::write(&responses, "not json\n").unwrap();
    let output = with_closed_stdout(&[
        "run".as_ref(),
        "--task".as_ref(),
        "t".as_ref(),
        "--max-steps".as_ref(),
        "1".as_ref(),
        "--responses".as_ref(),
        responses.as_os_str(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
}
