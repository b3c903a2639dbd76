//! `looptrace eval` and `looptrace merge`: suites, expectations, isolation, results files, JUnit,
//! baselines, shards and every report format.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use looptrace::eval::{
    Attempt, ReportFormat, ResultsFile, RunnerOptions, TraceFlush, Verdict, load_suite,
    load_suite_from_str, render_report, run_tasks,
};
use looptrace::run::ExitReason;
use looptrace::tools::{ToolDefinition, ToolRegistry, ToolSpec};
use looptrace::trace::{Capture, Summarizer};
use serde_json::json;

use crate::support::{fixture, looptrace, sample, stable, stderr, stdout};

fn eval(args: &[&str], out: &Path) -> std::process::Output {
    looptrace()
        .arg("eval")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

fn read_results(out: &Path) -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

/// Writes `suite` as `DIR/suite.json` and returns its path.
fn write_suite(dir: &Path, suite: &serde_json::Value) -> PathBuf {
    let path = dir.join("suite.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    path
}

#[test]
fn the_sample_suite_covers_every_exit_reason_and_meets_its_expectations() {
    let dir = tempfile::tempdir().unwrap();
    let output = eval(&[sample("suite.json").to_str().unwrap()], dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = read_results(dir.path());
    let kinds: std::collections::BTreeSet<&str> =
        results.tasks.iter().map(|t| t.model.as_str()).collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["actions", "replay", "responses"]
    );
    for reason in ExitReason::ALL {
        assert!(results.totals.exit_reasons[&reason] > 0, "{reason}");
    }
    assert_eq!(results.totals.expectations.failed, 0);
    for task in &results.tasks {
        let trace = dir.path().join(task.trace.as_ref().unwrap());
        let contents = looptrace::trace::read_trace(&trace, Default::default()).unwrap();
        assert_eq!(
            contents.runs[0].outcome(),
            looptrace::run::RunOutcome::Ended(task.exit_reason)
        );
        let replay_of = contents.runs[0].started().unwrap().replay_of.clone();
        assert_eq!(replay_of.is_some(), task.model == "replay", "{}", task.id);
    }
    let text = stdout(&output);
    assert!(
        text.contains("Shares are of all 10 tasks, internal errors included."),
        "{text}"
    );
    assert!(
        text.contains("max_steps_exceeded (budget exhausted)"),
        "{text}"
    );
}

#[test]
fn each_expectation_kind_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let output = eval(
        &[
            fixture("eval/expectations.json").to_str().unwrap(),
            "--capture",
            "full",
        ],
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let results = read_results(dir.path());
    let verdicts: Vec<(&str, Verdict, Vec<String>)> = results
        .tasks
        .iter()
        .map(|t| (t.id.as_str(), t.expectation, t.failures.clone()))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("exit-met", Verdict::Met, vec![]),
            (
                "exit-failed",
                Verdict::Failed,
                vec!["expected exit reason finished, got max_steps_exceeded (budget_exhausted: no finish within max_steps=1)".to_owned()]
            ),
            ("answer-met", Verdict::Met, vec![]),
            (
                "answer-failed",
                Verdict::Failed,
                vec!["expected answer \"84\", got \"85\"".to_owned()]
            ),
            ("contains-met", Verdict::Met, vec![]),
            (
                "contains-failed",
                Verdict::Failed,
                vec!["expected the answer to contain \"84\", got \"it is 85\"".to_owned()]
            ),
            ("steps-met", Verdict::Met, vec![]),
            (
                "steps-failed",
                Verdict::Failed,
                vec!["expected at most 1 step, used 2".to_owned()]
            ),
            ("none", Verdict::None, vec![]),
        ]
    );
    assert_eq!(
        (
            results.totals.expectations.met,
            results.totals.expectations.failed,
            results.totals.expectations.none
        ),
        (4, 4, 1)
    );
}

#[test]
fn summary_capture_keeps_answers_out_of_failure_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let output = eval(
        &[fixture("eval/expectations.json").to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(1));
    let results = read_results(dir.path());
    let failed = results
        .tasks
        .iter()
        .find(|t| t.id == "answer-failed")
        .unwrap();
    assert_eq!(
        failed.failures,
        ["expected answer chars=2;sha256=44c8031cb036…, got chars=2;sha256=b4944c6ff08d…"]
    );
    assert_eq!(
        failed.answer.as_deref(),
        Some("chars=2;sha256=b4944c6ff08dc6f43da2e9c824669b7d927dd1fa976fadc7b456881f51bf5ccc")
    );
}

#[test]
fn every_problem_in_a_suite_is_reported_together_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let suite = fixture("eval/many_errors.json");
    let output = eval(&[suite.to_str().unwrap()], &dir.path().join("out"));
    assert_eq!(output.status.code(), Some(2));
    let expected = format!(
        "error: suite `{}` has 16 problems:
  $.defaults.max_steps: must be at least 1, got 0
  $.defaults.captrue: unknown key (expected one of: agent, capture, expect, finish_gate, max_seconds, max_steps, max_total_tokens, model, scorers)
  $.tasks[2].id: \"bad id!\" does not match the pattern `^[A-Za-z0-9._-]+$`
  $.tasks[3]: missing key `prompt`
  $.tasks[4]: missing key `model` (give the task a `model`, the suite a `defaults.model`, or eval --model SPEC)
  $.tasks[5].model: give exactly one of `responses`, `actions`, `replay` or `chat`, not `responses` and `actions`
  $.tasks[6].model.actions[0]: missing key `answer`
  $.tasks[7].model.replay: cannot read \"nowhere.jsonl\": No such file or directory (os error 2)
  $.tasks[8].model.actions: expected at least 1 item, got an empty array
  $.tasks[8].expect.anwser: unknown key (expected one of: answer, answer_contains, answer_in, answer_json_schema, answer_number, answer_regex, exit_reason, ignore_case, max_cost_usd, max_duration_s, max_gate_rejections, max_steps_used, max_tool_errors, max_total_tokens, normalize_whitespace, tools_called, tools_not_called)
  $.tasks[8].expect.exit_reason: expected \"finished\", \"max_steps_exceeded\", \"invalid_model_output\" or \"internal_error\"; got \"done\"
  $.tasks[9].max_steps: expected an integer, got a string
  $.tasks[1].id: duplicate id \"ok\"
",
        suite.display()
    );
    let actual = stderr(&output);
    let mut expected_lines: Vec<&str> = expected.lines().collect();
    let mut actual_lines: Vec<&str> = actual.lines().collect();
    assert_eq!(
        actual_lines.remove(0),
        expected_lines
            .remove(0)
            .replace("16", &(actual.lines().count() - 1).to_string())
    );
    for line in &expected_lines {
        assert!(actual_lines.contains(line), "missing {line:?} in\n{actual}");
    }
    assert!(
        !dir.path().join("out").exists(),
        "nothing is written for a bad suite"
    );
}

#[test]
fn bad_json_names_the_line_and_column() {
    let err = load_suite_from_str("{\"name\": \"x\",\n \"tasks\": [}", Path::new(".")).unwrap_err();
    assert_eq!(
        err.problems,
        [(
            "$ (line 2, column 12)".to_owned(),
            "invalid JSON: expected value".to_owned()
        )]
    );
}

#[test]
fn replay_paths_may_not_leave_the_suite_folder() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("suite");
    std::fs::create_dir(&inner).unwrap();
    std::fs::copy(
        sample("finished.full.jsonl"),
        dir.path().join("outside.jsonl"),
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.jsonl"), inner.join("link.jsonl")).unwrap();
    for path in ["../outside.jsonl", "link.jsonl"] {
        let text =
            json!({"name": "s", "tasks": [{"id": "a", "model": {"replay": path}}]}).to_string();
        let err = load_suite_from_str(&text, &inner).unwrap_err();
        assert_eq!(
            err.problems,
            [(
                "$.tasks[0].model.replay".to_owned(),
                format!("{path:?} leads outside the suite's folder")
            )]
        );
    }
}

#[test]
fn a_summary_only_replay_source_is_refused_up_front() {
    let text =
        json!({"name": "s", "tasks": [{"id": "a", "model": {"replay": "finished.summary.jsonl"}}]})
            .to_string();
    let err = load_suite_from_str(&text, &sample("")).unwrap_err();
    assert_eq!(err.problems.len(), 1);
    assert!(
        err.problems[0]
            .1
            .contains("record replayable traces with `--capture full`"),
        "{:?}",
        err.problems
    );
}

fn explode_registry() -> ToolRegistry {
    let mut tools = ToolRegistry::builtin();
    let spec = ToolSpec {
        name: "explode".to_owned(),
        description: "panics".to_owned(),
        input_schema: json!({"type": "object"}),
        output_description: String::new(),
        error_description: String::new(),
    };
    tools
        .register(ToolDefinition::new(spec, |_| panic!("kaboom")))
        .unwrap();
    tools
}

#[test]
fn a_panicking_task_is_isolated() {
    let text = json!({"name": "s", "tasks": [
        {"id": "before", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "a"}]}},
        {"id": "boom", "prompt": "p", "model": {"actions": [{"type": "tool_call", "tool_name": "explode", "arguments": {}}]}},
        {"id": "after", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "b"}]}}
    ]})
    .to_string();
    let suite = load_suite_from_str(&text, Path::new(".")).unwrap();
    let stop = AtomicBool::new(false);
    let options = RunnerOptions {
        jobs: 2,
        capture: Capture::Full,
        summarizer: Summarizer::sha256(),
        eval_id: "e1".to_owned(),
        traces: None,
        trace_prefix: String::new(),
        flush: TraceFlush::Event,
        repeats: 1,
        stop: &stop,
        on_done: &|_, _| {},
        task_tools: None,
        retries: 0,
        agents: None,
        trace_tap: None,
        keep_quick_runs: false,
    };
    let attempts: Vec<Attempt> = (0..suite.tasks.len())
        .map(|task| Attempt { task, repeat: 1 })
        .collect();
    let rows = std::sync::Mutex::new(vec![None; attempts.len()]);
    run_tasks(
        &suite.tasks,
        &attempts,
        &explode_registry(),
        &options,
        &|i, row, _: &[u8]| {
            rows.lock().unwrap()[i] = Some(row);
            Ok(())
        },
    )
    .unwrap();
    let results: Vec<_> = rows.into_inner().unwrap().into_iter().flatten().collect();
    assert_eq!(results.len(), 3);
    let outcomes: Vec<(&str, ExitReason, Option<&str>)> = results
        .iter()
        .map(|t| (t.id.as_str(), t.exit_reason, t.error_kind.as_deref()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("before", ExitReason::Finished, None),
            ("boom", ExitReason::InternalError, Some("tool_panic")),
            ("after", ExitReason::Finished, None)
        ]
    );
    assert_eq!(
        results[1].error.as_deref(),
        Some("tool \"explode\" panicked: kaboom")
    );
}

#[test]
fn results_are_in_suite_order_whatever_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    let two = dir.path().join("two");
    let a = eval(
        &[sample("suite.json").to_str().unwrap(), "--jobs", "1"],
        &one,
    );
    let b = eval(
        &[sample("suite.json").to_str().unwrap(), "--jobs", "2"],
        &two,
    );
    assert_eq!(stdout(&a), stdout(&b));
    assert_eq!(
        stable(&read_results(&one).tasks),
        stable(&read_results(&two).tasks)
    );
    let suite = load_suite(&sample("suite.json")).unwrap();
    let ids: Vec<String> = read_results(&two)
        .tasks
        .iter()
        .map(|t| t.id.clone())
        .collect();
    assert_eq!(
        ids,
        suite
            .tasks
            .entries()
            .iter()
            .map(|t| t.id.to_string())
            .collect::<Vec<_>>()
    );
}

#[test]
fn junit_has_one_testcase_per_task_with_failures_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(
        &suite,
        json!({"name": "ci & <friends>", "tasks": [
            {"id": "pass", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "a"}]}, "expect": {"answer": "a"}},
            {"id": "fail", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "b"}]}, "expect": {"answer": "a"}},
            {"id": "crash", "prompt": "p", "model": {"actions": [{"type": "tool_call", "tool_name": "calculator", "arguments": {"left": 1, "operation": "add", "right": 1}}]}},
            {"id": "expected-crash", "prompt": "p", "model": {"actions": [{"type": "tool_call", "tool_name": "calculator", "arguments": {"left": 1, "operation": "add", "right": 1}}]}, "expect": {"exit_reason": "internal_error"}}
        ]})
        .to_string(),
    )
    .unwrap();
    let junit = dir.path().join("junit.xml");
    let output = eval(
        &[suite.to_str().unwrap(), "--junit", junit.to_str().unwrap()],
        &dir.path().join("out"),
    );
    assert_eq!(output.status.code(), Some(1));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suite_node = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite_node.attribute("name"), Some("ci & <friends>"));
    assert_eq!(suite_node.attribute("tests"), Some("4"));
    assert_eq!(suite_node.attribute("failures"), Some("1"));
    assert_eq!(suite_node.attribute("errors"), Some("1"));
    let cases: Vec<(String, Vec<String>)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            let children = n
                .children()
                .filter(|c| c.is_element())
                .map(|c| c.tag_name().name().to_owned())
                .collect();
            (n.attribute("name").unwrap().to_owned(), children)
        })
        .collect();
    assert_eq!(
        cases,
        [
            ("pass".to_owned(), vec![]),
            ("fail".to_owned(), vec!["failure".to_owned()]),
            ("crash".to_owned(), vec!["error".to_owned()]),
            ("expected-crash".to_owned(), vec![]),
        ]
    );
    let error = doc.descendants().find(|n| n.has_tag_name("error")).unwrap();
    assert_eq!(error.attribute("message"), Some("model_failure"));
}

#[test]
fn a_baseline_shows_transitions_regressions_and_improvements() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, answer_a: &str, steps_b: u32| {
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            json!({"name": "s", "tasks": [
                {"id": "a", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": answer_a}]}, "expect": {"answer": "ok"}},
                {"id": "b", "prompt": "p", "max_steps": steps_b, "model": {"actions": [
                    {"type": "tool_call", "tool_name": "calculator", "arguments": {"left": 1, "operation": "add", "right": 1}},
                    {"type": "finish", "answer": "2"}]}},
                {"id": "c", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "same"}]}}
            ]})
            .to_string(),
        )
        .unwrap();
        path
    };
    let old = write("old.json", "wrong", 2);
    let new = write("new.json", "ok", 1);
    let out_old = dir.path().join("old");
    assert_eq!(
        eval(&[old.to_str().unwrap()], &out_old).status.code(),
        Some(1)
    );
    let baseline = out_old.join("results.json");
    let output = eval(
        &[
            new.to_str().unwrap(),
            "--baseline",
            baseline.to_str().unwrap(),
            "--format",
            "json",
        ],
        &dir.path().join("new"),
    );
    // `b` got worse and `a` better: one discordant task each way is no clear regression under
    // McNemar's test (p = 1), so the exit code is 0; `--regression-test none` keeps the rule
    // without statistics, under which `b` fails the evaluation.
    assert_eq!(output.status.code(), Some(0), "one each way is noise");
    let mut report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let paired = report["baseline"]
        .as_object_mut()
        .unwrap()
        .remove("paired")
        .unwrap();
    assert_eq!(
        (
            &paired["test"],
            &paired["worse"],
            &paired["better"],
            &paired["p_value"]
        ),
        (&json!("mcnemar"), &json!(1), &json!(1), &json!(1.0))
    );
    let none = eval(
        &[
            new.to_str().unwrap(),
            "--baseline",
            baseline.to_str().unwrap(),
            "--regression-test",
            "none",
            "-q",
        ],
        &dir.path().join("none"),
    );
    assert_eq!(none.status.code(), Some(1), "b regressed");
    assert_eq!(
        report["baseline"],
        json!({
            "transitions": [
                {"from": "finished", "to": "finished", "tasks": 2},
                {"from": "finished", "to": "max_steps_exceeded", "tasks": 1}
            ],
            "regressions": [{"id": "b", "why": "finished before, max_steps_exceeded now"}],
            "improvements": [{"id": "a", "why": "failed its expectations before, meets them now"}],
            "added": [],
            "removed": []
        })
    );
}

#[test]
fn shards_cover_the_suite_exactly_and_merge_back() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    eval(&[sample("suite.json").to_str().unwrap()], &full);
    let mut shard_files: Vec<PathBuf> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for k in 1..=3 {
        let out = dir.path().join(format!("shard{k}"));
        let output = eval(
            &[
                sample("suite.json").to_str().unwrap(),
                "--shard",
                &format!("{k}/3"),
            ],
            &out,
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        seen.extend(read_results(&out).tasks.iter().map(|t| t.id.clone()));
        shard_files.push(out.join("results.json"));
    }
    let mut all: Vec<String> = read_results(&full)
        .tasks
        .iter()
        .map(|t| t.id.clone())
        .collect();
    seen.sort();
    all.sort();
    assert_eq!(seen, all);
    let merged_path = dir.path().join("merged.json");
    let mut args = vec!["merge".to_owned()];
    args.extend(shard_files.iter().map(|p| p.display().to_string()));
    args.extend(["--out".to_owned(), merged_path.display().to_string()]);
    let output = looptrace().args(&args).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let merged: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(&merged_path).unwrap()).unwrap();
    assert_eq!(stable(&merged.tasks), stable(&read_results(&full).tasks));
    assert_eq!(merged.totals, read_results(&full).totals);

    // Overlaps and other suites are refused.
    let twice = looptrace()
        .args([
            "merge",
            shard_files[0].to_str().unwrap(),
            shard_files[0].to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(twice.status.code(), Some(2));
    assert!(
        stderr(&twice).contains("repeats shard 1/3"),
        "{}",
        stderr(&twice)
    );
    let other = dir.path().join("other");
    eval(
        &[fixture("eval/expectations.json").to_str().unwrap()],
        &other,
    );
    let mixed = looptrace()
        .args([
            "merge",
            shard_files[0].to_str().unwrap(),
            other.join("results.json").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(mixed.status.code(), Some(2));
    assert!(
        stderr(&mixed).contains("refusing to merge different suites"),
        "{}",
        stderr(&mixed)
    );
}

#[test]
fn bad_shards_and_jobs_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for shard in ["0/3", "4/3", "1/0", "x", "1-3"] {
        let output = eval(
            &[sample("suite.json").to_str().unwrap(), "--shard", shard],
            dir.path(),
        );
        assert_eq!(output.status.code(), Some(2), "{shard}");
    }
    let output = eval(
        &[sample("suite.json").to_str().unwrap(), "--jobs", "0"],
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(!dir.path().join("results.json").exists());
}

#[test]
fn the_results_file_is_replaced_whole() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let output = eval(&[sample("suite.json").to_str().unwrap()], dir.path());
        assert_eq!(output.status.code(), Some(0));
    }
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(
        names,
        ["results.json", "runs"],
        "no temporary files are left behind"
    );
    assert_eq!(read_results(dir.path()).tasks.len(), 10);
}

#[test]
fn junit_may_not_overwrite_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::copy(fixture("eval/expectations.json"), &suite).unwrap();
    let before = std::fs::read(&suite).unwrap();
    let output = eval(
        &[suite.to_str().unwrap(), "--junit", suite.to_str().unwrap()],
        &dir.path().join("out"),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--junit would overwrite the input"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read(&suite).unwrap(), before);
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_corpus_of_traces_replays_with_recorded_exit_reasons_as_expectations() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    for name in [
        "finished.full.jsonl",
        "max_steps_exceeded.full.jsonl",
        "invalid_model_output.full.jsonl",
        "internal_error.full.jsonl",
        "multi_run.jsonl",
        "incomplete.jsonl",
    ] {
        std::fs::copy(sample(name), corpus.join(name)).unwrap();
    }
    let out = dir.path().join("out");
    let output = looptrace()
        .args(["eval", "--traces"])
        .arg(&corpus)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("incomplete.jsonl#cut-off: incomplete recording"),
        "{}",
        stderr(&output)
    );
    let results = read_results(&out);
    let ids: Vec<&str> = results.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "finished.full.finished-full",
            "internal_error.full.internal_error-full",
            "invalid_model_output.full.invalid_model_output-full",
            "max_steps_exceeded.full.max_steps_exceeded-full",
            "multi_run.multi-a",
            "multi_run.multi-b",
            "multi_run.multi-c",
        ]
    );
    assert!(results.tasks.iter().all(|t| t.expectation == Verdict::Met));
    let summary_only = looptrace()
        .args(["eval", "--traces"])
        .arg(sample("finished.summary.jsonl"))
        .arg("--out")
        .arg(dir.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(summary_only.status.code(), Some(2));
    assert!(stderr(&summary_only).contains("--capture full"));
}

/// A results file with fixed numbers, for the snapshot tests.
fn snapshot_results() -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(fixture("eval/snapshot_results.json")).unwrap())
        .unwrap()
}

#[test]
fn every_report_format_matches_its_snapshot() {
    let results = snapshot_results();
    let mut baseline = results.clone();
    baseline.tasks[0].exit_reason = ExitReason::MaxStepsExceeded;
    baseline.tasks[1].exit_reason = ExitReason::Finished;
    let mut comparison = looptrace::eval::compare(&baseline, &results);
    comparison.judge(None, 0.95).unwrap();
    let bless = std::env::var_os("LOOPTRACE_BLESS").is_some();
    for (format, name) in [
        (ReportFormat::Table, "report.txt"),
        (ReportFormat::Json, "report.json"),
        (ReportFormat::Markdown, "report.md"),
        (ReportFormat::Csv, "report.csv"),
    ] {
        let rendered = render_report(&results, Some(&comparison), format);
        let path = fixture(&format!("eval/{name}"));
        if bless {
            std::fs::write(&path, &rendered).unwrap();
        }
        assert_eq!(
            rendered,
            std::fs::read_to_string(&path).unwrap(),
            "{name}: run LOOPTRACE_BLESS=1 cargo test snapshot"
        );
    }
}

#[test]
fn the_sample_suite_matches_the_suite_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("schemas/suite.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for suite in [sample("suite.json"), fixture("eval/expectations.json")] {
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&suite).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", suite.display());
    }
    let broken: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("eval/many_errors.json")).unwrap())
            .unwrap();
    assert!(!validator.is_valid(&broken));
}

#[test]
fn the_readme_shows_what_the_main_command_prints() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("```\nSuite \"sample\"")
        .expect("the README shows the sample report")
        + 4;
    let end = start + readme[start..].find("```").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = eval(&[sample("suite.json").to_str().unwrap()], dir.path());
    assert_eq!(stdout(&output), &readme[start..end]);
}

#[test]
fn a_junit_path_in_a_missing_folder_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let junit = dir.path().join("no/such/dir/junit.xml");
    let output = eval(
        &[
            sample("suite.json").to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
        &out,
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("the folder does not exist"),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists());
}

#[test]
fn merge_refuses_impossible_shards_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    eval(
        &[sample("suite.json").to_str().unwrap(), "--shard", "1/2"],
        &out,
    );
    let mut results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    for shard in [
        json!({"index": 5, "count": 2}),
        json!({"index": 0, "count": 2}),
        json!({"index": 1, "count": 1_000_000_000_000u64}),
    ] {
        results["shard"] = shard.clone();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, results.to_string()).unwrap();
        let output = looptrace()
            .args(["merge", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{shard}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("is not a valid shard"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn results_files_match_the_results_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("schemas/results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let dir = tempfile::tempdir().unwrap();
    eval(
        &[sample("suite.json").to_str().unwrap(), "--shard", "2/3"],
        dir.path(),
    );
    for path in [
        dir.path().join("results.json"),
        fixture("eval/snapshot_results.json"),
    ] {
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
}

#[test]
fn evals_of_one_suite_never_share_a_run_id() {
    let dir = tempfile::tempdir().unwrap();
    let suite = crate::eval_load::write_suite(dir.path(), 21);
    let runs = dir.path().join("runs");
    let mut run_ids = std::collections::HashSet::new();
    let mut eval_ids = std::collections::HashSet::new();
    for name in ["a", "b", "c"] {
        let out = runs.join(name);
        let output = eval(&[suite.to_str().unwrap()], &out);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let results = read_results(&out);
        let eval_id = results.eval_id.clone().expect("eval_id");
        assert!(eval_ids.insert(eval_id.clone()));
        for task in &results.tasks {
            let run_id = task.run_id.clone().expect("run_id");
            assert_eq!(run_id, format!("{}.{eval_id}", task.id));
            assert!(run_ids.insert(run_id.clone()), "{run_id} reused");
            let trace = out.join(task.trace.as_ref().unwrap());
            let contents = looptrace::trace::read_trace(&trace, Default::default()).unwrap();
            assert_eq!(contents.runs[0].started_event().unwrap().run_id, run_id);
            let started = contents.runs[0].started().unwrap();
            assert_eq!(started.task_id.as_deref(), Some(task.id.as_str()));
        }
    }
    let output = looptrace()
        .args(["report", "--format", "json"])
        .arg(&runs)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["input"]["runs"], 63);
    assert_eq!(report["warnings"], json!([]), "{}", stderr(&output));
}

/// Runs `looptrace merge ARGS`.
fn merge(args: &[&Path]) -> std::process::Output {
    looptrace().arg("merge").args(args).output().unwrap()
}

#[test]
fn merge_refuses_missing_shards_unless_told_and_marks_the_file_partial() {
    let dir = tempfile::tempdir().unwrap();
    let suite = sample("suite.json");
    let shard = |k: usize, capture: &str| {
        let out = dir.path().join(format!("shard{k}-{capture}"));
        let output = eval(
            &[
                suite.to_str().unwrap(),
                "--shard",
                &format!("{k}/3"),
                "--capture",
                capture,
            ],
            &out,
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        out.join("results.json")
    };
    let (one, two, three) = (
        shard(1, "summary"),
        shard(2, "summary"),
        shard(3, "summary"),
    );
    let merged = dir.path().join("merged.json");
    let out = Path::new("--out");

    for (inputs, missing) in [
        (vec![one.as_path()], "shards 2 and 3 of 3 are missing"),
        (
            vec![one.as_path(), three.as_path()],
            "shard 2 of 3 is missing",
        ),
    ] {
        let mut args = inputs.clone();
        args.extend([out, merged.as_path()]);
        let output = merge(&args);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(missing), "{}", stderr(&output));
        assert!(!merged.exists());
    }

    let output = merge(&[&one, &three, out, &merged, Path::new("--allow-partial")]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let partial: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(partial["partial"], true);
    assert_eq!(partial["missing_shards"], json!([{"index": 2, "count": 3}]));
    let validator = jsonschema::validator_for(
        &serde_json::from_str(
            &std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/results.schema.json"),
            )
            .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(validator.is_valid(&partial));

    // A partial file is no baseline.
    let output = eval(
        &[
            suite.to_str().unwrap(),
            "--baseline",
            merged.to_str().unwrap(),
        ],
        &dir.path().join("against-partial"),
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("partial merge"),
        "{}",
        stderr(&output)
    );

    // Every shard: a complete file, exit 0.
    let complete = dir.path().join("complete.json");
    let output = merge(&[&one, &two, &three, out, &complete]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        !std::fs::read_to_string(&complete)
            .unwrap()
            .contains("partial")
    );

    // Shards recorded with different capture modes are refused.
    let two_full = shard(2, "full");
    let output = merge(&[&one, &two_full, &three, out, &complete]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("different capture modes"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_internal_error_fails_the_eval_unless_the_task_expects_it() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    let crash = json!({"actions": [{"type": "tool_call", "tool_name": "calculator", "arguments": {"left": 1, "operation": "add", "right": 1}}]});
    std::fs::write(
        &suite,
        json!({"name": "crashes", "tasks": [
            {"id": "crashes-silently", "prompt": "p", "model": crash},
            {"id": "crashes-within-budget", "prompt": "p", "model": crash, "expect": {"max_steps_used": 5}},
            {"id": "crashes-as-expected", "prompt": "p", "model": crash, "expect": {"exit_reason": "internal_error"}}
        ]})
        .to_string(),
    )
    .unwrap();
    let output = eval(&[suite.to_str().unwrap()], &dir.path().join("out"));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("crashes-silently"), "{text}");
    assert!(
        text.contains("internal error (model_failure) in a task without expectations"),
        "{text}"
    );
    assert!(text.contains("crashes-within-budget"), "{text}");
    assert!(
        text.contains("an internal error (model_failure) was not expected"),
        "{text}"
    );
    assert!(!text.contains("crashes-as-expected"), "{text}");

    // Expected, it passes.
    std::fs::write(
        &suite,
        json!({"name": "crashes", "tasks": [
            {"id": "crashes-as-expected", "prompt": "p", "model": crash, "expect": {"exit_reason": "internal_error"}}
        ]})
        .to_string(),
    )
    .unwrap();
    let output = eval(&[suite.to_str().unwrap()], &dir.path().join("out"));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn counts_of_one_are_singular() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(
        dir.path(),
        &json!({"name": "one", "tasks": [
            {"id": "short", "prompt": "p", "model": {"actions": [{"type": "tool_call", "tool_name": "calculator", "arguments": {"left": 1, "operation": "add", "right": 1}}]}, "expect": {"exit_reason": "internal_error"}}
        ]}),
    );
    let out = dir.path().join("out");
    let output = eval(&[suite.to_str().unwrap(), "--capture", "full"], &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("Suite \"one\": 1 task\n"), "{text}");
    assert!(
        text.contains("Shares are of all 1 task, internal"),
        "{text}"
    );
    let error = read_results(&out).tasks[0].error.clone().unwrap();
    assert!(error.ends_with("exhausted after 1 action"), "{error}");
    std::fs::write(
        &suite,
        r#"{"name": "one", "tasks": [{"id": "x", "max_steps": 0}]}"#,
    )
    .unwrap();
    let output = eval(&[suite.to_str().unwrap()], &out);
    assert!(
        stderr(&output).contains("has 2 problems:"),
        "{}",
        stderr(&output)
    );
    std::fs::write(
        &suite,
        r#"{"name": "one", "tasks": [{"id": "x", "prompt": "p"}]}"#,
    )
    .unwrap();
    let output = eval(&[suite.to_str().unwrap()], &out);
    assert!(
        stderr(&output).contains("has 1 problem:"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_calculator_reads_a_json_minus_zero_as_python_does() {
    let dir = tempfile::tempdir().unwrap();
    // Python: json.loads("-0") is the integer 0, json.loads("-0.0") the float -0.0.
    let cases = [
        (r#"{"left":-0,"operation":"add","right":5}"#, "5"),
        (r#"{"left":-0,"operation":"multiply","right":1}"#, "0"),
        (r#"{"left":-0.0,"operation":"add","right":5}"#, "5.0"),
        (r#"{"left":-0.0,"operation":"multiply","right":1}"#, "-0.0"),
    ];
    // Each case twice: raw model text through the adapter, and a scripted action in the suite,
    // written by hand so that the literals stay as they are.
    let finish = r#"{"type":"finish","answer":"done"}"#;
    let mut tasks = Vec::new();
    for (i, (arguments, _)) in cases.iter().enumerate() {
        let call =
            format!(r#"{{"type":"tool_call","tool_name":"calculator","arguments":{arguments}}}"#);
        let raw = json!([call, finish]);
        tasks.push(format!(
            r#"{{"id":"raw{i}","prompt":"p","model":{{"responses":{raw}}}}}"#
        ));
        tasks.push(format!(
            r#"{{"id":"scripted{i}","prompt":"p","model":{{"actions":[{call},{finish}]}}}}"#
        ));
    }
    let suite = dir.path().join("suite.json");
    std::fs::write(
        &suite,
        format!(r#"{{"name":"zero","tasks":[{}]}}"#, tasks.join(",")),
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = eval(&[suite.to_str().unwrap(), "--capture", "full"], &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = read_results(&out);
    assert_eq!(results.tasks.len(), 8);
    for task in results.tasks {
        let trace = out.join(task.trace.unwrap());
        let contents = looptrace::trace::read_trace(&trace, Default::default()).unwrap();
        let observation = contents.runs[0]
            .events
            .iter()
            .find_map(|(_, e)| match &e.kind {
                looptrace::trace::EventKind::Observation(observation) => Some(observation),
                _ => None,
            })
            .and_then(|observation| observation.content.clone())
            .unwrap();
        let i: usize = task
            .id
            .trim_start_matches(char::is_alphabetic)
            .parse()
            .unwrap();
        assert_eq!(observation, cases[i].1, "{}", task.id);
    }
}

/// A folder nothing can be written in: a read-only tmpfs when it can be mounted (root ignores
/// permission bits), else a folder without write permission. Unmounted on drop.
struct ReadOnlyFolder {
    path: PathBuf,
    mounted: bool,
}

impl ReadOnlyFolder {
    /// Makes `path` (with `inside` as empty sub-folders) read-only; `None` when this machine
    /// allows neither (root without mount rights), which fails under `CI=true`.
    fn new(path: &Path, inside: &[&str]) -> Option<ReadOnlyFolder> {
        std::fs::create_dir_all(path).unwrap();
        let mount = |options: &str| {
            std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", options, "tmpfs"])
                .arg(path)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let mounted = mount("size=1m");
        for name in inside {
            std::fs::create_dir_all(path.join(name)).unwrap();
        }
        let folder = ReadOnlyFolder {
            path: path.to_owned(),
            mounted,
        };
        if mounted {
            assert!(
                std::process::Command::new("mount")
                    .args(["-o", "remount,ro"])
                    .arg(path)
                    .status()
                    .unwrap()
                    .success()
            );
        } else {
            use std::os::unix::fs::PermissionsExt;
            for name in inside.iter().chain([&""]) {
                let dir = path.join(name);
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
            }
        }
        if std::fs::write(path.join("probe"), "x").is_ok() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "cannot make a read-only folder on this machine"
            );
            return None;
        }
        Some(folder)
    }
}

impl Drop for ReadOnlyFolder {
    fn drop(&mut self) {
        if self.mounted {
            let _ = std::process::Command::new("umount")
                .arg(&self.path)
                .status();
        } else {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o755));
        }
    }
}

#[test]
fn unwritable_outputs_are_found_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let suite = sample("suite.json");
    let suite = suite.to_str().unwrap();
    let refused = |output: &std::process::Output, says: &str| {
        assert_eq!(output.status.code(), Some(2), "{}", stderr(output));
        assert!(stderr(output).contains(says), "{}", stderr(output));
        assert!(!stderr(output).contains("results: "), "{}", stderr(output));
        assert!(output.stdout.is_empty());
    };

    // A folder where results.json or the JUnit file belongs.
    let out = dir.path().join("folder-results");
    std::fs::create_dir_all(out.join("results.json")).unwrap();
    refused(&eval(&[suite], &out), "is a folder, not a file");
    let out = dir.path().join("folder-junit");
    let junit = dir.path().join("a-folder");
    std::fs::create_dir(&junit).unwrap();
    refused(
        &eval(&[suite, "--junit", junit.to_str().unwrap()], &out),
        "is a folder, not a file",
    );
    assert!(!out.join("results.json").exists());

    // Read-only: the output folder (with its traces folder already there), or the JUnit folder.
    if let Some(read_only) = ReadOnlyFolder::new(&dir.path().join("ro-out"), &["traces"]) {
        refused(&eval(&[suite], &read_only.path), "--out: cannot write in");
    }
    if let Some(read_only) = ReadOnlyFolder::new(&dir.path().join("ro-junit"), &[]) {
        let junit = read_only.path.join("junit.xml");
        let out = dir.path().join("ro-junit-out");
        refused(
            &eval(&[suite, "--junit", junit.to_str().unwrap()], &out),
            "--junit: cannot write in",
        );
        assert!(!out.join("results.json").exists());
    }
}

#[test]
fn junit_may_go_in_the_output_folder_before_it_exists() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let junit = out.join("junit.xml");
    let output = eval(
        &[
            sample("suite.json").to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
        &out,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        std::fs::read_to_string(&junit)
            .unwrap()
            .contains("<testsuite ")
    );
}

#[test]
fn a_shard_compares_only_its_own_tasks_with_a_full_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let suite = sample("suite.json");
    let suite = suite.to_str().unwrap();
    let full = dir.path().join("full");
    assert_eq!(eval(&[suite], &full).status.code(), Some(0));
    let baseline = full.join("results.json");
    let output = eval(
        &[
            suite,
            "--shard",
            "1/3",
            "--baseline",
            baseline.to_str().unwrap(),
            "--format",
            "json",
        ],
        &dir.path().join("shard"),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["baseline"]["removed"], json!([]), "{report}");
    assert_eq!(report["baseline"]["added"], json!([]), "{report}");
    let compared: u64 = report["baseline"]["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tasks"].as_u64().unwrap())
        .sum();
    assert_eq!(report["tasks"], compared, "{report}");
    assert!(compared < read_results(&full).tasks.len() as u64);
}

#[test]
fn a_baseline_of_another_suite_is_refused_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other");
    eval(
        &[fixture("eval/expectations.json").to_str().unwrap()],
        &other,
    );
    let baseline = other.join("results.json");
    let out = dir.path().join("out");
    let suite = sample("suite.json");
    let args = [
        suite.to_str().unwrap(),
        "--baseline",
        baseline.to_str().unwrap(),
    ];
    let output = eval(&args, &out);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--baseline-any-suite"),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists());
    let mut args = args.to_vec();
    args.push("--baseline-any-suite");
    let output = eval(&args, &out);
    assert_ne!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(out.join("results.json").exists());
}
