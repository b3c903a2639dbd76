//! `eval --repeat N`: one row and one run per (task, repeat), distinct run ids and trace files,
//! per-task pass rates and flaky tasks in the report, and `merge` of repeated shards.

use std::path::Path;
use std::process::Output;

use looptrace::eval::ResultsFile;
use serde_json::{Value, json};

use crate::support::{cli, looptrace, read_events, stable, stderr, stdout};

/// `steady` always passes, `broken` never does, and `flaky`'s finish gate accepts on every other
/// call (counted in `counter`), so its repeats disagree when run one at a time.
fn suite(dir: &Path) -> std::path::PathBuf {
    let counter = dir.join("counter");
    let gate = format!(
        "n=$(cat '{0}' 2>/dev/null || echo 0); echo $((n+1)) > '{0}'; [ $((n % 2)) = 0 ]",
        counter.display()
    );
    let text = json!({"name": "repeat", "tasks": [
        {"id": "steady", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "84"}]},
         "expect": {"answer": "84"}},
        {"id": "broken", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "84"}]},
         "expect": {"answer": "85"}},
        {"id": "flaky", "prompt": "p", "max_steps": 1,
         "model": {"actions": [{"type": "finish", "answer": "84"}]},
         "finish_gate": {"command": ["sh", "-c", gate]},
         "expect": {"exit_reason": "finished"}}
    ]});
    let path = dir.join("suite.json");
    std::fs::write(&path, text.to_string()).unwrap();
    path
}

fn eval(suite: &Path, out: &Path, extra: &[&str]) -> Output {
    // The flaky task's gate counts from zero in every evaluation.
    let _ = std::fs::remove_file(suite.with_file_name("counter"));
    looptrace()
        .arg("eval")
        .arg(suite)
        .arg("--out")
        .arg(out)
        .args(["--jobs", "1"])
        .args(extra)
        .output()
        .unwrap()
}

fn results(path: &Path) -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn each_task_runs_once_per_repeat_with_its_own_run_and_trace() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out = dir.path().join("out");
    let output = eval(&suite, &out, &["--repeat", "3", "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let got = results(&out.join("results.json"));
    assert_eq!(got.repeats, Some(3));
    let rows: Vec<(&str, Option<u32>, bool)> = got
        .tasks
        .iter()
        .map(|t| (t.id.as_str(), t.repeat, t.fails()))
        .collect();
    assert_eq!(
        rows,
        [
            ("steady", Some(1), false),
            ("steady", Some(2), false),
            ("steady", Some(3), false),
            ("broken", Some(1), true),
            ("broken", Some(2), true),
            ("broken", Some(3), true),
            ("flaky", Some(1), false),
            ("flaky", Some(2), true),
            ("flaky", Some(3), false),
        ]
    );
    let run_ids: std::collections::HashSet<&str> = got
        .tasks
        .iter()
        .map(|t| t.run_id.as_deref().unwrap())
        .collect();
    assert_eq!(run_ids.len(), 9, "run ids are distinct");
    for task in &got.tasks {
        let trace = task.trace.as_deref().unwrap();
        assert_eq!(
            crate::support::in_run(trace),
            format!("traces/r{}/{}.jsonl", task.repeat.unwrap(), task.id)
        );
        let events = read_events(&out.join(trace));
        assert_eq!(events[0]["run_id"], task.run_id.as_deref().unwrap());
        assert_eq!(events[0]["task_id"], task.id);
    }
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/results.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert!(validator.is_valid(&written));

    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["repeats"], 3);
    assert_eq!(
        report["pass_rates"],
        json!([
            {"id": "steady", "passed": 3, "runs": 3, "pass_rate": 1.0, "flaky": false},
            {"id": "broken", "passed": 0, "runs": 3, "pass_rate": 0.0, "flaky": false},
            {"id": "flaky", "passed": 2, "runs": 3, "pass_rate": 2.0 / 3.0, "flaky": true}
        ])
    );
    assert_eq!(report["flaky_tasks"], json!(["flaky"]));
    assert_eq!(report["failed_tasks"][3]["id"], "flaky");
    assert_eq!(report["failed_tasks"][3]["repeat"], 2);

    // `report` over the traces counts every run.
    let counted = looptrace()
        .args(["report", "--format", "json"])
        .arg(&out)
        .output()
        .unwrap();
    let counted: Value = serde_json::from_str(&stdout(&counted)).unwrap();
    assert_eq!(counted["input"]["runs"], 9, "{counted}");
}

#[test]
fn the_quiet_line_counts_the_tasks_of_a_repeated_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let output = eval(&suite, &dir.path().join("out"), &["--repeat", "3", "-q"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let line = stdout(&output);
    assert!(
        line.starts_with("Suite \"repeat\": 9 runs (3 tasks × 3 repeats)"),
        "{line}"
    );
}

#[test]
fn the_table_lists_pass_rates_below_every_repeat_and_flaky_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let output = eval(&suite, &dir.path().join("out"), &["--repeat", "3"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let table = stdout(&output);
    assert!(
        table.starts_with("Suite \"repeat\": 9 runs (3 tasks × 3 repeats)\n"),
        "{table}"
    );
    assert!(
        table.contains(
            "Repeats: 1 task passed every repeat, 1 failed every repeat, 1 flaky (flaky)\n"
        ),
        "{table}"
    );
    assert!(
        table.contains("│ flaky (repeat 2)  ┆ max_steps_exceeded"),
        "{table}"
    );
    // The pass-rate table (the statistics below it list every task again).
    let rates: Vec<&str> = table
        .split("\nStatistics:")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.contains(" 0/3 ") || l.contains(" 2/3 ") || l.contains(" 3/3 "))
        .collect();
    assert_eq!(rates.len(), 2, "{table}");
    assert!(rates[0].contains("broken") && rates[0].contains("0.0%"));
    assert!(rates[1].contains("flaky") && rates[1].contains("66.7%") && rates[1].contains("yes"));
}

/// Runs `suite` with `--repeat 3` as shards 1/2 and 2/2 into `DIR/shard1` and `DIR/shard2`.
fn repeated_shards(suite: &Path, dir: &Path) {
    for k in 1..=2 {
        let shard = format!("{k}/2");
        let out = dir.join(format!("shard{k}"));
        let output = eval(suite, &out, &["--repeat", "3", "--shard", &shard]);
        assert!(output.status.code().unwrap() <= 1, "{}", stderr(&output));
    }
}

#[test]
fn merge_of_repeated_shards_equals_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let whole = dir.path().join("whole");
    assert_eq!(
        eval(&suite, &whole, &["--repeat", "3"]).status.code(),
        Some(1)
    );
    repeated_shards(&suite, dir.path());
    let merged = dir.path().join("merged.json");
    let output = looptrace()
        .arg("merge")
        .arg(dir.path().join("shard1/results.json"))
        .arg(dir.path().join("shard2/results.json"))
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let merged = results(&merged);
    let whole = results(&whole.join("results.json"));
    assert_eq!(stable(&merged.tasks), stable(&whole.tasks));
    assert_eq!(merged.totals, whole.totals);
    assert_eq!(merged.repeats, Some(3));

    // A shard with another repeat count is not part of the same evaluation.
    let other = dir.path().join("other");
    eval(&suite, &other, &["--repeat", "2", "--shard", "2/2"]);
    let output = looptrace()
        .arg("merge")
        .arg(dir.path().join("shard1/results.json"))
        .arg(other.join("results.json"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("refusing to merge different --repeat counts"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn repeat_zero_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out = dir.path().join("out");
    let output = eval(&suite, &out, &["--repeat", "0"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stderr(&output), "error: --repeat must be at least 1\n");
    assert!(!out.exists());
}

/// The `baseline` section of a JSON report.
fn baseline_section(output: &Output) -> Value {
    let report: Value = serde_json::from_str(&stdout(output)).unwrap();
    report["baseline"].clone()
}

/// The number of tasks the transitions of a `baseline` section count.
fn transition_tasks(section: &Value) -> u64 {
    section["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tasks"].as_u64().unwrap())
        .sum()
}

#[test]
fn a_baseline_with_one_side_repeated_compares_each_task_once() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    // Run once, `flaky` passes (its gate accepts the first call).
    let once = dir.path().join("once");
    assert_eq!(eval(&suite, &once, &[]).status.code(), Some(1));
    let once = once.join("results.json");

    let repeated = dir.path().join("repeated");
    // `--regression-test none`: the every/some/no-run scale decides the exit code, as tested here
    // (the statistical tests are in `statistics.rs`).
    let flags = [
        "--format",
        "json",
        "--regression-test",
        "none",
        "--baseline",
        once.to_str().unwrap(),
    ];
    let output = eval(
        &suite,
        &repeated,
        &[&["--repeat", "3"][..], &flags].concat(),
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let section = baseline_section(&output);
    assert_eq!(
        section["regressions"],
        json!([{"id": "flaky", "why": "met its expectations in 1 of 1 run before, 2 of 3 now"}]),
        "{section}"
    );
    assert_eq!(section["improvements"], json!([]), "{section}");
    assert_eq!(section["added"], json!([]), "{section}");
    assert_eq!(section["removed"], json!([]), "{section}");
    assert_eq!(transition_tasks(&section), 3, "{section}");

    // The other way round: the repeated results are the baseline.
    let again = dir.path().join("again");
    let output = eval(
        &suite,
        &again,
        &[
            "--format",
            "json",
            "--regression-test",
            "none",
            "--baseline",
            repeated.join("results.json").to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let section = baseline_section(&output);
    assert_eq!(section["regressions"], json!([]), "{section}");
    assert_eq!(
        section["improvements"],
        json!([{"id": "flaky", "why": "met its expectations in 2 of 3 runs before, 1 of 1 now"}]),
        "{section}"
    );
    assert_eq!(transition_tasks(&section), 3, "{section}");
}

#[test]
fn a_baseline_with_both_sides_repeated_flags_a_task_that_stopped_passing_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let first = dir.path().join("first");
    assert_eq!(
        eval(&suite, &first, &["--repeat", "3"]).status.code(),
        Some(1)
    );
    // The same flaky pattern again is no regression: `flaky` passed some runs before and now.
    let second = dir.path().join("second");
    let same = first.join("results.json");
    let output = eval(
        &suite,
        &second,
        &[
            "--repeat",
            "3",
            "--format",
            "json",
            "--regression-test",
            "none",
            "--baseline",
            same.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let section = baseline_section(&output);
    assert_eq!(section["regressions"], json!([]), "{section}");
    assert_eq!(section["improvements"], json!([]), "{section}");
    assert_eq!(transition_tasks(&section), 3, "{section}");

    // A baseline in which `flaky` passed every run: now it regressed.
    let mut steady: Value = serde_json::from_str(&std::fs::read_to_string(&same).unwrap()).unwrap();
    for row in steady["tasks"].as_array_mut().unwrap() {
        if row["id"] == "flaky" {
            row["exit_reason"] = "finished".into();
            row["expectation"] = "met".into();
            for field in ["failures", "error", "error_kind"] {
                row.as_object_mut().unwrap().remove(field);
            }
        }
    }
    let baseline = dir.path().join("baseline.json");
    std::fs::write(&baseline, steady.to_string()).unwrap();
    let flags = [
        "--format",
        "json",
        "--regression-test",
        "none",
        "--baseline",
        baseline.to_str().unwrap(),
    ];
    let page = dir.path().join("page.html");
    let html = ["--repeat", "3", "--html", page.to_str().unwrap()];
    let output = eval(&suite, &second, &[&html[..], &flags].concat());
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let section = baseline_section(&output);
    assert_eq!(
        section["regressions"],
        json!([{"id": "flaky", "why": "met its expectations in 3 of 3 runs before, 2 of 3 now"}]),
        "{section}"
    );
    assert_eq!(transition_tasks(&section), 3, "{section}");
    // The page names `broken`, failing every run before and now, once.
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.contains("<h3>Still failing (1)</h3>"), "{page}");

    // Merged repeated shards say what the unsharded eval says.
    repeated_shards(&suite, dir.path());
    let merged = looptrace()
        .arg("merge")
        .arg(dir.path().join("shard1/results.json"))
        .arg(dir.path().join("shard2/results.json"))
        .args(flags)
        .output()
        .unwrap();
    assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
    assert_eq!(baseline_section(&merged), section);
}

/// The report's pass rates and failed tasks, counted while the rows stream to disk, say what
/// `results.json` says, in suite order, with several workers finishing in any order.
#[test]
fn the_report_counts_pass_rates_and_lists_failures_as_the_results_rows_do() {
    let dir = tempfile::tempdir().unwrap();
    let tasks: Vec<Value> = (0..24)
        .map(|i| {
            let expected = if i % 3 == 0 { "85" } else { "84" };
            json!({"id": format!("t{i:02}"), "prompt": "p",
                   "model": {"actions": [{"type": "finish", "answer": "84"}]},
                   "expect": {"answer": expected}})
        })
        .collect();
    let suite = dir.path().join("many.json");
    std::fs::write(&suite, json!({"name": "many", "tasks": tasks}).to_string()).unwrap();
    let out = dir.path().join("out");
    let output = cli!(
        "eval", &suite, "--out", &out, "--jobs", "4", "--repeat", "3", "--format", "json"
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let rows = results(&out.join("results.json")).tasks;

    let mut expected_rates: Vec<Value> = Vec::new();
    for row in &rows {
        let passed = u64::from(!row.fails());
        match expected_rates.last_mut() {
            Some(rate) if rate["id"] == row.id.as_str() => {
                rate["passed"] = json!(rate["passed"].as_u64().unwrap() + passed);
                rate["runs"] = json!(rate["runs"].as_u64().unwrap() + 1);
            }
            _ => expected_rates.push(json!({"id": row.id, "passed": passed, "runs": 1})),
        }
    }
    let got_rates: Vec<Value> = report["pass_rates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!({"id": r["id"], "passed": r["passed"], "runs": r["runs"]}))
        .collect();
    assert_eq!(got_rates, expected_rates);
    assert_eq!(got_rates.len(), 24);

    let failed_in_rows: Vec<(String, Option<u32>)> = rows
        .iter()
        .filter(|t| t.fails())
        .map(|t| (t.id.clone(), t.repeat))
        .collect();
    let failed_in_report: Vec<(String, Option<u32>)> = report["failed_tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["repeat"].as_u64().map(|k| k as u32),
            )
        })
        .collect();
    assert_eq!(failed_in_report, failed_in_rows);
    assert_eq!(failed_in_report.len(), 8 * 3);
}

#[test]
fn merge_of_repeated_shards_keeps_suite_order_when_a_shard_lacks_a_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let whole = dir.path().join("whole");
    eval(&suite, &whole, &["--repeat", "3"]);
    repeated_shards(&suite, dir.path());
    // As an interruption leaves it: `steady` (shard 1/2) lacks its second repeat.
    let shard1 = dir.path().join("shard1/results.json");
    let mut value: Value =
        serde_json::from_str(&std::fs::read_to_string(&shard1).unwrap()).unwrap();
    value["interrupted"] = json!(true);
    value["tasks"]
        .as_array_mut()
        .unwrap()
        .retain(|row| row["id"] != "steady" || row["repeat"] != 2);
    std::fs::write(&shard1, value.to_string()).unwrap();

    let merged = dir.path().join("merged.json");
    let output = cli!(
        "merge",
        &shard1,
        dir.path().join("shard2/results.json"),
        "--out",
        &merged,
        "--allow-partial"
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("partial: shard 1/2 (`")
            && stderr(&output)
                .contains("lacks 1 of its 6 rows (it was interrupted): steady (repeat 2)"),
        "{}",
        stderr(&output)
    );
    // Suite order, a task's repeats together in order, as the unsharded run writes them.
    let rows = |r: &ResultsFile| -> Vec<(String, Option<u32>)> {
        r.tasks.iter().map(|t| (t.id.clone(), t.repeat)).collect()
    };
    let mut expected = rows(&results(&whole.join("results.json")));
    expected.retain(|(id, repeat)| id != "steady" || *repeat != Some(2));
    let merged = results(&merged);
    assert_eq!(rows(&merged), expected);
    assert!(merged.partial && merged.interrupted);
    let title = stdout(&output);
    assert!(
        title.contains("partial: shards 1/2 (1 row) missing"),
        "{title}"
    );
    // Every task ran, one of them twice: the title counts tasks, not runs over repeats.
    let tasks = expected
        .iter()
        .map(|(id, _)| id)
        .collect::<std::collections::HashSet<_>>()
        .len();
    assert!(
        title.contains(&format!(
            "{} runs ({tasks} tasks, up to 3 repeats each)",
            expected.len()
        )),
        "{title}"
    );
}

#[test]
fn repeated_tables_count_runs_not_tasks() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["table", "markdown"] {
        let output = crate::support::looptrace()
            .args([
                "eval",
                "sample_traces/suite.json",
                "--repeat",
                "2",
                "-f",
                format,
            ])
            .arg("--out")
            .arg(dir.path().join(format))
            .output()
            .unwrap();
        let text = crate::support::stdout(&output);
        assert!(text.contains("Shares are of all 20 runs"), "{text}");
        assert!(!text.contains("20 tasks"), "{text}");
        let header = if format == "table" {
            "┆ runs ┆"
        } else {
            "| exit reason | runs |"
        };
        assert!(text.contains(header), "{format}: {text}");
    }
}
