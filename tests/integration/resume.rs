//! `eval --resume` after a crash at every point of an evaluation: mid-trace, between a task's
//! trace and its row, halfway through a row, and while `results.json` is written. Each crash is
//! a real abort of the binary (`LOOPTRACE_FAULT`); the resumed evaluation must write the results
//! an uninterrupted one writes, timings and run ids aside, with one complete run per row.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;

use looptrace::eval::{ResultsFile, TaskResult};
use looptrace::trace::{EventKind, parse_line};

use crate::support::{files_under, leftovers, looptrace, newest_run, stable, stderr};

/// Three tasks of 3, 5 and 4 events; one fails its expectation, so rows differ.
const SUITE: &str = r#"{"name": "resume", "tasks": [
  {"id": "a-finish", "prompt": "say 84",
   "model": {"responses": ["{\"type\":\"finish\",\"answer\":\"84\"}"]}, "expect": {"answer": "84"}},
  {"id": "b-tool", "prompt": "compute 12 × 7",
   "model": {"actions": [
     {"type": "tool_call", "tool_name": "calculator", "arguments": {"left": 12, "operation": "multiply", "right": 7}},
     {"type": "finish", "answer": "84"}]}},
  {"id": "c-feedback", "prompt": "say 84",
   "model": {"responses": ["not json", "{\"type\":\"finish\",\"answer\":\"85\"}"]}, "expect": {"answer": "84"}}
]}"#;

/// The last event of each task, counted over the suite (tasks run one at a time, in order).
const TASK_ENDS: [usize; 3] = [3, 8, 12];

/// The signal `abort` raises on Linux.
const SIGABRT: i32 = 6;

fn eval(suite: &Path, out: &Path, extra: &[&str], fault: Option<&str>) -> Output {
    let mut command = looptrace();
    command.arg("eval").arg(suite).arg("--out").arg(out);
    command
        .args(["--jobs", "1", "--format", "json"])
        .args(extra);
    command.env_remove("LOOPTRACE_FAULT");
    if let Some(fault) = fault {
        command.env("LOOPTRACE_FAULT", fault);
    }
    command.output().expect("failed to start looptrace")
}

fn results(out: &Path) -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

/// What must not differ between an uninterrupted and a resumed evaluation: everything but
/// timings, run ids and the evaluation's own id and start.
fn comparable(results: &ResultsFile) -> (ResultsFile, Vec<TaskResult>) {
    let mut rest = results.clone();
    rest.tasks.clear();
    rest.eval_id = None;
    rest.created_at.clear();
    rest.runs.clear();
    (rest, stable(&results.tasks))
}

/// Every row's run is in its trace, complete (its `run_finished` is there) and whole. (A
/// crashed run's `traces.jsonl` also holds the run the crash cut short, which no row names.)
fn assert_one_complete_run_per_row(out: &Path, results: &ResultsFile, context: &str) {
    let mut runs_seen = std::collections::BTreeMap::new();
    let mut files: Vec<String> = results
        .tasks
        .iter()
        .filter_map(|t| t.trace.clone())
        .collect();
    files.sort();
    files.dedup();
    for file in &files {
        let bytes = std::fs::read(out.join(file)).unwrap();
        assert!(
            bytes.ends_with(b"\n"),
            "{context}: `{file}` ends inside a line"
        );
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let event = parse_line(line).unwrap().unwrap();
            let finished = runs_seen.entry(event.run_id.clone()).or_insert(false);
            *finished |= matches!(event.kind, EventKind::RunFinished(_));
        }
    }
    let rows: std::collections::BTreeMap<String, bool> = results
        .tasks
        .iter()
        .map(|t| (t.run_id.clone().unwrap(), true))
        .collect();
    runs_seen.retain(|run, _| rows.contains_key(run));
    assert_eq!(runs_seen, rows, "{context}: runs in the traces");
}

/// Every crash point of the suite run one task at a time, with the rows the partial file then
/// holds whole.
fn crash_points() -> Vec<(String, usize)> {
    let mut points = Vec::new();
    for n in 1..=TASK_ENDS[2] {
        // A task's row follows its last event: a crash right after that event precedes the row.
        let kept = TASK_ENDS.iter().filter(|end| **end < n).count();
        points.push((format!("abort_after_events:{n}"), kept));
    }
    for k in 1..=3 {
        points.push((format!("abort_before_row:{k}"), k - 1));
        points.push((format!("abort_mid_row:{k}"), k - 1));
    }
    points.push(("abort_in_results_write".to_owned(), 3));
    points
}

fn resume_after_every_crash(layout: &str, flush: &str) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(&suite, SUITE).unwrap();
    let flags = ["--trace-layout", layout, "--trace-flush", flush];
    let healthy = dir.path().join("healthy");
    let output = eval(&suite, &healthy, &flags, None);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let expected = results(&healthy);
    assert_eq!(expected.tasks.len(), 3);
    assert!(
        sealed(&newest_run(&healthy)),
        "a complete evaluation seals its run"
    );

    for (fault, kept) in crash_points() {
        // With `--trace-flush run` a run's events reach the file together at its end.
        if flush == "run" && fault.starts_with("abort_after_events") {
            let n: usize = fault.rsplit(':').next().unwrap().parse().unwrap();
            if !TASK_ENDS.contains(&n) {
                continue;
            }
        }
        let context = format!("{layout}/{flush} {fault}");
        let out = dir.path().join(fault.replace(':', "-"));
        let crashed = eval(&suite, &out, &flags, Some(&fault));
        assert_eq!(crashed.status.signal(), Some(SIGABRT), "{context}");
        assert!(!out.join("results.json").exists(), "{context}");
        let crashed_run = newest_run(&out);
        // Only a crash while the view was written comes after the run's seal.
        let whole = fault == "abort_in_results_write";
        assert_eq!(sealed(&crashed_run), whole, "{context}");
        let left_by_crash = files_under(&crashed_run);

        let resumed = eval(&suite, &out, &[&flags[..], &["--resume"]].concat(), None);
        assert_eq!(
            resumed.status.code(),
            Some(1),
            "{context}: {}",
            stderr(&resumed)
        );
        let text = stderr(&resumed);
        if whole {
            assert!(text.contains("nothing to resume"), "{context}: {text}");
        } else if kept > 0 {
            assert!(
                text.contains(&format!(
                    "resumed: kept {kept} row{} from",
                    if kept == 1 { "" } else { "s" }
                )),
                "{context}: {text}"
            );
        }
        assert_eq!(
            text.contains("warning: ignored the torn last line"),
            fault.starts_with("abort_mid_row"),
            "{context}: {text}"
        );
        let got = results(&out);
        assert_eq!(comparable(&got), comparable(&expected), "{context}");
        assert_one_complete_run_per_row(&out, &got, &context);
        // The resume is a new run beside the crashed one, which stays as the crash left it.
        assert_eq!(newest_run(&out) == crashed_run, whole, "{context}");
        assert!(sealed(&newest_run(&out)), "{context}");
        assert_eq!(files_under(&crashed_run), left_by_crash, "{context}");
        // A crash while the view was written leaves its temporary file; `gc` removes it.
        let gc = looptrace().arg("gc").arg(&out).output().unwrap();
        assert_eq!(gc.status.code(), Some(0), "{context}: {}", stderr(&gc));
        let left = leftovers(&out);
        assert!(left.is_empty(), "{context}: {left:?}");
    }
}

#[test]
fn resume_after_a_crash_anywhere_equals_an_uninterrupted_run_per_task() {
    resume_after_every_crash("per-task", "event");
}

#[test]
fn resume_after_a_crash_anywhere_equals_an_uninterrupted_run_single_file() {
    resume_after_every_crash("single", "event");
}

#[test]
fn resume_after_a_crash_anywhere_equals_an_uninterrupted_run_flushing_per_run() {
    resume_after_every_crash("single", "run");
}

/// Whether the run folder `run` ends with its `sealed` line.
fn sealed(run: &Path) -> bool {
    std::fs::read_to_string(run.join("rows.jsonl"))
        .unwrap()
        .lines()
        .last()
        .is_some_and(|line| line.starts_with("{\"sealed\":true"))
}

#[test]
fn a_run_of_another_suite_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(&suite, SUITE).unwrap();
    let out = dir.path().join("out");
    let crashed = eval(&suite, &out, &[], Some("abort_before_row:2"));
    assert_eq!(crashed.status.signal(), Some(SIGABRT));
    let before = files_under(&out);

    let other = dir.path().join("other.json");
    std::fs::write(&other, SUITE.replace("\"resume\"", "\"other\"")).unwrap();
    let output = eval(&other, &out, &["--resume"], None);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.starts_with(&format!(
            "error: --resume: the run `{}` is from suite \"resume\" (fingerprint ",
            newest_run(&out).display()
        )),
        "{text}"
    );
    assert_eq!(files_under(&out), before, "nothing written");

    // A fingerprint edited into characters of more than one byte is named, not a panic.
    let header_path = newest_run(&out).join("header.json");
    let mut header: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&header_path).unwrap()).unwrap();
    header["suite"]["fingerprint"] = "aééééééééééééé".into();
    std::fs::write(&header_path, header.to_string()).unwrap();
    let output = eval(&suite, &out, &["--resume"], None);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("(fingerprint aééééééééééé)"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn resume_of_a_complete_evaluation_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(&suite, SUITE).unwrap();
    let out = dir.path().join("out");
    assert_eq!(eval(&suite, &out, &[], None).status.code(), Some(1));
    let before = std::fs::read(out.join("results.json")).unwrap();
    let output = eval(&suite, &out, &["--resume"], None);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).starts_with("nothing to resume"));
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), before);
}

#[test]
fn a_crashed_run_follows_its_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(&suite, SUITE).unwrap();
    let out = dir.path().join("out");
    let crashed = eval(&suite, &out, &[], Some("abort_in_results_write"));
    assert_eq!(crashed.status.signal(), Some(SIGABRT));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(root.join(name)).unwrap()).unwrap()
    };
    let run_schema = read("run-header.schema.json");
    let header = jsonschema::validator_for(&run_schema).unwrap();
    let seal = jsonschema::validator_for(
        &serde_json::json!({"$defs": run_schema["$defs"], "$ref": "#/$defs/seal"}),
    )
    .unwrap();
    let results = read("results.schema.json");
    let row = jsonschema::validator_for(
        &serde_json::json!({"$defs": results["$defs"], "$ref": "#/$defs/task"}),
    )
    .unwrap();
    let run = newest_run(&out);
    let head: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("header.json")).unwrap()).unwrap();
    assert!(header.is_valid(&head), "{head}");
    let text = std::fs::read_to_string(run.join("rows.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // The crash came after the seal, while the view was written.
    assert_eq!(lines.len(), 4);
    for line in &lines[..3] {
        assert!(row.is_valid(line), "{line}");
        assert!(!seal.is_valid(line));
    }
    assert!(seal.is_valid(&lines[3]), "{}", lines[3]);
    assert!(!row.is_valid(&lines[3]));
}

#[test]
fn resume_with_repeats_equals_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(&suite, SUITE).unwrap();
    let flags = ["--repeat", "2"];
    let healthy = dir.path().join("healthy");
    assert_eq!(eval(&suite, &healthy, &flags, None).status.code(), Some(1));
    let expected = results(&healthy);
    assert_eq!(expected.tasks.len(), 6);
    // Epochs run in order: the second epoch's first task ends at event 15.
    for fault in [
        "abort_after_events:14",
        "abort_before_row:5",
        "abort_mid_row:2",
    ] {
        let out = dir.path().join(fault.replace(':', "-"));
        let crashed = eval(&suite, &out, &flags, Some(fault));
        assert_eq!(crashed.status.signal(), Some(SIGABRT), "{fault}");
        let resumed = eval(&suite, &out, &[&flags[..], &["--resume"]].concat(), None);
        assert_eq!(
            resumed.status.code(),
            Some(1),
            "{fault}: {}",
            stderr(&resumed)
        );
        let got = results(&out);
        assert_eq!(comparable(&got), comparable(&expected), "{fault}");
        assert_one_complete_run_per_row(&out, &got, fault);
    }
    // Resuming with another repeat count would mix evaluations.
    let out = dir.path().join("other-count");
    assert_eq!(
        eval(&suite, &out, &flags, Some("abort_before_row:2"))
            .status
            .signal(),
        Some(SIGABRT)
    );
    let output = eval(&suite, &out, &["--resume"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("was written with --repeat 2, this eval has --repeat 1"),
        "{}",
        stderr(&output)
    );
}
