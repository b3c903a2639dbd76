//! Tasks files (`tasks.jsonl`): one task per line, referenced from a suite (`tasks_file`) or
//! given to eval directly, checked whole before any task runs and then read as the tasks run.

use std::path::PathBuf;

use looptrace::eval::{ResultsFile, load_suite};

use crate::support::{fixture, looptrace, stderr};

use crate::support::{eval_into as eval, results_in as read_results};

fn streamed(name: &str) -> PathBuf {
    fixture(&format!("eval/tasks_file/{name}"))
}

fn ids(results: &ResultsFile) -> Vec<&str> {
    results.tasks.iter().map(|t| t.id.as_str()).collect()
}

#[test]
fn a_suite_runs_its_tasks_file_in_file_order_with_its_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let suite = streamed("suite.json");
    let output = eval(&[suite.to_str().unwrap()], &out);
    // `wrong` fails its expectation.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let results = read_results(&out);
    assert_eq!(results.suite.name, "streamed");
    assert_eq!(ids(&results), ["add", "raw-finish", "wrong", "budget"]);
    let failing: Vec<&str> = results
        .tasks
        .iter()
        .filter(|t| t.fails())
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(failing, ["wrong"]);
    // `defaults.capture: full` reaches the streamed tasks: the answer is kept in full.
    let wrong = &results.tasks[2];
    assert_eq!(wrong.answer.as_deref(), Some("41"));
    // The tasks file is an input: eval may not write over it.
    let output = looptrace()
        .arg("eval")
        .arg(&suite)
        .arg("--out")
        .arg(dir.path().join("again"))
        .arg("--junit")
        .arg(streamed("tasks.jsonl"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

#[test]
fn only_and_shard_choose_among_the_streamed_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let suite = streamed("suite.json");
    let only = dir.path().join("only");
    let output = eval(&[suite.to_str().unwrap(), "--only", "raw-*"], &only);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(ids(&read_results(&only)), ["raw-finish"]);
    let shard = dir.path().join("shard");
    let output = eval(&[suite.to_str().unwrap(), "--shard", "2/2"], &shard);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(ids(&read_results(&shard)), ["raw-finish", "budget"]);
}

#[test]
fn a_tasks_file_given_directly_is_a_suite_named_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = eval(&[streamed("tasks.jsonl").to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let results = read_results(&out);
    assert_eq!(results.suite.name, "tasks");
    assert_eq!(ids(&results), ["add", "raw-finish", "wrong", "budget"]);
    // Without the suite's defaults: summary capture, so the answer is a summary.
    assert_ne!(results.tasks[2].answer.as_deref(), Some("41"));
}

#[test]
fn a_rerun_of_a_streamed_suite_runs_its_failed_task_again() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let suite = streamed("suite.json");
    eval(&[suite.to_str().unwrap()], &out);
    let output = looptrace()
        .arg("eval")
        .arg(&suite)
        .arg("--rerun-failed")
        .arg(out.join("results.json"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let results = read_results(&out);
    assert_eq!(ids(&results), ["add", "raw-finish", "wrong", "budget"]);
    let rerun: Vec<&str> = results
        .tasks
        .iter()
        .filter(|t| !t.carried_over)
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(rerun, ["wrong"]);
}

#[test]
fn every_bad_line_is_named_with_its_line_and_path_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let bad = streamed("bad_tasks.jsonl");
    let output = eval(&[bad.to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let expected = format!(
        "error: suite `{}` has 4 problems:
  line 2: $.expect.anwser: unknown key (expected one of: answer, answer_contains, answer_in, answer_json_schema, answer_number, answer_regex, exit_reason, ignore_case, max_cost_usd, max_duration_s, max_gate_rejections, max_steps_used, max_tool_errors, max_total_tokens, normalize_whitespace, tools_called, tools_not_called)
  line 3: $.model.actions: expected at least 1 item, got an empty array
  line 4: $ (column 27): invalid JSON: EOF while parsing a value
  line 5: $.id: duplicate id \"fine\"
",
        bad.display()
    );
    assert_eq!(stderr(&output), expected);
    assert!(!out.exists(), "nothing is written for a bad tasks file");
}

#[test]
fn a_tasks_file_outside_the_suite_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("suite");
    std::fs::create_dir(&inner).unwrap();
    std::fs::copy(streamed("tasks.jsonl"), dir.path().join("tasks.jsonl")).unwrap();
    let suite = inner.join("suite.json");
    std::fs::write(&suite, r#"{"name": "s", "tasks_file": "../tasks.jsonl"}"#).unwrap();
    let out = dir.path().join("out");
    let output = eval(&[suite.to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .contains("$.tasks_file: \"../tasks.jsonl\" leads outside the suite's folder"),
        "{}",
        stderr(&output)
    );
    // Both `tasks` and `tasks_file`, or neither: the schema says which.
    std::fs::write(
        &suite,
        r#"{"name": "s", "tasks_file": "t.jsonl", "tasks": [{"id": "a", "prompt": "p", "model": {"responses": ["x"]}}]}"#,
    )
    .unwrap();
    let output = eval(&[suite.to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "$: give exactly one of `tasks`, `tasks_file` or `dataset`, not `tasks` and `tasks_file`"
        ),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists());
}

#[test]
fn a_streamed_suite_holds_ids_not_tasks() {
    let suite = load_suite(&streamed("suite.json")).unwrap();
    assert!(suite.tasks.held_tasks().is_none());
    assert_eq!(
        suite.tasks.tasks_file(),
        Some(streamed("tasks.jsonl").as_path())
    );
    let task = suite.tasks.get(3).unwrap();
    assert_eq!((task.id.as_str(), task.max_steps), ("budget", 1));
    let add = suite.tasks.get(0).unwrap();
    assert_eq!(add.max_steps, 4, "defaults.max_steps applies");
}

#[test]
fn a_file_of_bad_lines_is_reported_up_to_a_hundred_problems() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    std::fs::write(&tasks, "[1]\n".repeat(5000)).unwrap();
    let output = eval(&[tasks.to_str().unwrap()], &dir.path().join("out"));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.starts_with(&format!(
            "error: suite `{}` has 101 problems:\n  line 1: $: expected an object, got an array\n",
            tasks.display()
        )),
        "{err}"
    );
    assert!(
        err.ends_with(
            "  line 100: $: expected an object, got an array\n  $: stopped after 100 problems\n"
        ),
        "{err}"
    );
}

#[test]
fn the_report_lists_every_task_of_a_suite_whose_counts_go_to_a_scratch_file() {
    // 6,000 tasks with ids of about 190 bytes: their pass counts pass the 256 KiB kept in
    // memory, so the report reads most of them back from the scratch file.
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    let id = |i: usize| format!("{}-{i:05}", "t".repeat(180));
    let lines: Vec<String> = (0..6000)
        .map(|i| {
            let expected = if i % 7 == 0 { "ho" } else { "hi" };
            format!(
                r#"{{"id": "{}", "prompt": "say hi", "model": {{"responses": ["{{\"type\":\"finish\",\"answer\":\"hi\"}}"]}}, "expect": {{"answer": "{expected}"}}}}"#,
                id(i)
            )
        })
        .collect();
    std::fs::write(&tasks, lines.join("\n") + "\n").unwrap();
    let report_in = |format: &str| {
        looptrace()
            .arg("eval")
            .arg(&tasks)
            .args(["--trace-layout", "single", "--format", format, "--out"])
            .arg(dir.path().join(format))
            .output()
            .unwrap()
    };
    let output = report_in("csv");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report = String::from_utf8(output.stdout).unwrap();
    let rows: Vec<(&str, &str)> = (report.lines())
        .filter_map(|line| line.strip_prefix("task_statistics,"))
        .map(|rest| {
            let mut fields = rest.split(',');
            (fields.next().unwrap(), fields.next().unwrap())
        })
        .collect();
    assert_eq!(rows.len(), 6000);
    for (i, (row_id, passed)) in rows.iter().enumerate() {
        assert_eq!(*row_id, id(i));
        assert_eq!(*passed, if i % 7 == 0 { "0" } else { "1" }, "task {i}");
    }
    // The JSON report's per-task statistics are written as they are read back.
    let output = report_in("json");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let listed = report["statistics"]["tasks"].as_array().unwrap();
    assert_eq!(listed.len(), 6000);
    for (i, task) in listed.iter().enumerate() {
        assert_eq!(task["id"], id(i));
        assert_eq!(task["successes"], u32::from(i % 7 != 0), "task {i}");
    }
    assert_eq!(report["statistics"]["suite"]["tasks"], 6000);
}
