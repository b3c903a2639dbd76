//! Statistics of repeated runs through the CLI: intervals, pass@k and pass^k in every format, the
//! paired regression test against a baseline and its exit code (`eval` and `merge`), and the
//! combinations refused before anything runs.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::support::{looptrace, stderr, stdout};

/// A suite whose task `id` passes on its k-th run when the k-th character of its plan is `1`:
/// each task's finish gate counts its calls in a file of its own and accepts or rejects by the
/// plan, so with `--jobs 1` a task's repeats pass exactly as planned.
fn suite(dir: &Path, plans: &[(&str, &str)]) -> PathBuf {
    let tasks: Vec<Value> = plans
        .iter()
        .map(|(id, plan)| {
            let counter = dir.join(format!("{id}.count"));
            let gate = format!(
                "n=$(cat '{c}' 2>/dev/null || echo 0); echo $((n+1)) > '{c}'; [ \"$(echo {plan} | cut -c$((n+1)))\" = 1 ]",
                c = counter.display()
            );
            json!({"id": id, "prompt": "p", "max_steps": 1,
                   "model": {"actions": [{"type": "finish", "answer": "84"}]},
                   "finish_gate": {"command": ["sh", "-c", gate]},
                   "expect": {"exit_reason": "finished"}})
        })
        .collect();
    let path = dir.join("suite.json");
    std::fs::write(&path, json!({"name": "stats", "tasks": tasks}).to_string()).unwrap();
    path
}

/// Runs `eval` of a suite planned as `plans` into `dir/out`, counters reset.
fn eval(dir: &Path, out: &str, plans: &[(&str, &str)], extra: &[&str]) -> Output {
    let suite = suite(dir, plans);
    for (id, _) in plans {
        let _ = std::fs::remove_file(dir.join(format!("{id}.count")));
    }
    looptrace()
        .arg("eval")
        .arg(&suite)
        .arg("--out")
        .arg(dir.join(out))
        .args(["--jobs", "1"])
        .args(extra)
        .output()
        .unwrap()
}

fn json_of(output: &Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|e| panic!("{e}: {}", stdout(output)))
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-4)
}

#[test]
fn repeats_give_intervals_pass_at_k_and_pass_hat_k() {
    let dir = tempfile::tempdir().unwrap();
    let plans = [("steady", "11111"), ("flaky", "10101"), ("broken", "00000")];
    let output = eval(
        dir.path(),
        "out",
        &plans,
        &["--repeat", "5", "--pass-at", "1,3", "-f", "json"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report = json_of(&output);
    let tasks = report["statistics"]["tasks"].as_array().unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["steady", "flaky", "broken"]);
    let flaky = &tasks[1];
    assert_eq!(
        (&flaky["model"], &flaky["runs"], &flaky["successes"]),
        (&json!("actions"), &json!(5), &json!(3))
    );
    // Wilson 3/5 at 95%: 0.2307 to 0.8824; pass@3 = 1 − C(2,3)/C(5,3) = 1; pass^3 = 3·2·1/(5·4·3).
    assert!(close(&flaky["rate"], 0.6));
    assert!(close(&flaky["ci_low"], 0.2307) && close(&flaky["ci_high"], 0.8824));
    assert!(close(&flaky["pass_at"]["1"], 0.6) && close(&flaky["pass_at"]["3"], 1.0));
    assert!(close(&flaky["pass_hat"]["3"], 0.1));
    // 5/5: the interval reaches 1 and starts at 5/(5 + z²) = 0.5655.
    assert!(close(&tasks[0]["ci_high"], 1.0) && close(&tasks[0]["ci_low"], 0.5655));
    assert!(close(&tasks[2]["ci_low"], 0.0) && close(&tasks[2]["pass_at"]["3"], 0.0));
    let suite = &report["statistics"]["suite"];
    assert_eq!(
        (&suite["tasks"], &suite["runs"], &suite["successes"]),
        (&json!(3), &json!(15), &json!(8))
    );
    assert!(close(&suite["rate"]["mean"], 1.6 / 3.0));
    assert!(suite["rate"]["ci_low"].as_f64().unwrap() < 1.6 / 3.0);
    assert!(close(&suite["pass_hat"]["3"]["mean"], 1.1 / 3.0));

    // The table, Markdown and CSV carry the same numbers.
    let table = eval(
        dir.path(),
        "out",
        &plans,
        &["--repeat", "5", "--pass-at", "3"],
    );
    let text = stdout(&table);
    assert!(
        text.contains("Success rate: 53.3% (14.0% to 88.9%) (mean over 3 tasks; 8 of 15 runs passed; 95% Wilson interval)\n  pass@3 66.7% (20.8% to 93.9%); pass^3 36.7% (7.3% to 81.0%)\n"),
        "{text}"
    );
    assert!(
        text.contains("│ flaky  ┆ actions ┆    3/5 ┆  60.0% ┆  23.1% to 88.2% ┆ 100.0% ┆  10.0% │"),
        "{text}"
    );
    let markdown = stdout(&eval(
        dir.path(),
        "out",
        &plans,
        &["--repeat", "5", "--pass-at", "3", "-f", "markdown"],
    ));
    assert!(
        markdown.contains("| `flaky` | actions | 3/5 | 60.0% | 23.1% to 88.2% | 100.0% | 10.0% |"),
        "{markdown}"
    );
    let csv = stdout(&eval(
        dir.path(),
        "out",
        &plans,
        &["--repeat", "5", "--pass-at", "3", "-f", "csv"],
    ));
    assert!(
        csv.contains("task_statistics,flaky,3,0.6000,model=actions;runs=5;ci_low=0.2307;ci_high=0.8824;pass@3=1.0000;pass^3=0.1000"),
        "{csv}"
    );
    assert!(csv.contains("suite_statistics,pass^3,3,0.3667,"), "{csv}");
}

#[test]
fn noise_is_not_a_regression_under_the_sign_test_but_is_under_none() {
    let dir = tempfile::tempdir().unwrap();
    let before = [("a", "11111"), ("b", "11111"), ("c", "00000")];
    let now = [("a", "11110"), ("b", "11111"), ("c", "00000")];
    let first = eval(dir.path(), "before", &before, &["--repeat", "5"]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let baseline = dir.path().join("before/results.json");
    let baseline = baseline.to_str().unwrap();
    // `a` moved from every run to some (a regression by the old rule); `c` fails as it failed.
    let tested = eval(
        dir.path(),
        "now",
        &now,
        &["--repeat", "5", "--baseline", baseline],
    );
    let text = stdout(&tested);
    assert_eq!(tested.status.code(), Some(0), "{text}{}", stderr(&tested));
    assert!(
        text.contains("Paired test (exact sign test, over 3 tasks both ran): 1 worse, 0 better, 2 unchanged; p = 1.0000, not below 0.05: no statistically clear change."),
        "{text}"
    );
    assert!(text.contains("a: met its expectations in 5 of 5 runs before, 4 of 5 now (not significant, p = 1.0000)"), "{text}");
    assert!(
        text.contains("Success rate over those tasks: 66.7% before, 60.0% now; difference -6.7%"),
        "{text}"
    );
    let none = eval(
        dir.path(),
        "now",
        &now,
        &[
            "--repeat",
            "5",
            "--baseline",
            baseline,
            "--regression-test",
            "none",
        ],
    );
    assert_eq!(none.status.code(), Some(1), "{}", stdout(&none));
    assert!(stdout(&none).contains("Paired test: none (--regression-test none)"));
    // mcnemar counts one run a side: refused, before anything runs.
    let refused = eval(
        dir.path(),
        "refused",
        &now,
        &[
            "--repeat",
            "5",
            "--baseline",
            baseline,
            "--regression-test",
            "mcnemar",
        ],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("--regression-test mcnemar needs one run a side, but this evaluation runs each task 5 times"),
        "{}",
        stderr(&refused)
    );
    assert!(!dir.path().join("refused").exists());
    // merge refuses it too, before it writes anything.
    let merged_out = dir.path().join("merged.json");
    let merged = looptrace()
        .arg("merge")
        .arg(dir.path().join("now/results.json"))
        .args([
            "--baseline",
            baseline,
            "--regression-test",
            "mcnemar",
            "--out",
        ])
        .arg(&merged_out)
        .output()
        .unwrap();
    assert_eq!(merged.status.code(), Some(2), "{}", stderr(&merged));
    assert!(stderr(&merged).contains("--regression-test mcnemar needs one run a side"));
    assert!(!merged_out.exists());
    // A baseline with repeats refuses it as well, even when this evaluation runs once.
    let once = eval(
        dir.path(),
        "refused",
        &now,
        &["--baseline", baseline, "--regression-test", "mcnemar"],
    );
    assert_eq!(once.status.code(), Some(2));
    assert!(
        stderr(&once).contains("the baseline has repeats"),
        "{}",
        stderr(&once)
    );
}

#[test]
fn mcnemar_decides_one_run_a_side_and_merge_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ["t1", "t2", "t3", "t4", "t5", "t6", "t7"];
    let all_pass: Vec<(&str, &str)> = ids.iter().map(|id| (*id, "1")).collect();
    let first = eval(dir.path(), "before", &all_pass, &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let baseline = dir.path().join("before/results.json");
    let baseline = baseline.to_str().unwrap();
    // Five of seven fail now: 5 discordant one way, p = 2/32 = 0.0625, not below 0.05.
    let five: Vec<(&str, &str)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, if i < 5 { "0" } else { "1" }))
        .collect();
    let output = eval(
        dir.path(),
        "five",
        &five,
        &["--baseline", baseline, "-f", "json"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let paired = &json_of(&output)["baseline"]["paired"];
    assert_eq!(
        (&paired["test"], &paired["worse"], &paired["better"]),
        (&json!("mcnemar"), &json!(5), &json!(0))
    );
    assert!(close(&paired["p_value"], 0.0625));
    assert_eq!(paired["regression"], json!(false));
    // Six of seven: p = 2/64 = 0.03125, a clear regression: exit 1.
    let six: Vec<(&str, &str)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, if i < 6 { "0" } else { "1" }))
        .collect();
    let output = eval(
        dir.path(),
        "six",
        &six,
        &["--baseline", baseline, "--quiet"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stdout(&output).contains(
            "6 regressions against the baseline (statistically clear: mcnemar test p = 0.0313)"
        ),
        "{}",
        stdout(&output)
    );
    // At 99% confidence the same six are not clear (0.03125 is not below 0.01).
    let output = eval(
        dir.path(),
        "six",
        &six,
        &["--baseline", baseline, "--confidence", "0.99", "-q"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    // merge --baseline judges the merged results the same way.
    for (folder, code) in [("five", 0), ("six", 1)] {
        let merged = looptrace()
            .arg("merge")
            .arg(dir.path().join(folder).join("results.json"))
            .args(["--baseline", baseline, "-q"])
            .output()
            .unwrap();
        assert_eq!(
            merged.status.code(),
            Some(code),
            "{folder}: {}{}",
            stdout(&merged),
            stderr(&merged)
        );
    }
}

#[test]
fn the_html_page_draws_each_interval_as_an_error_bar() {
    let dir = tempfile::tempdir().unwrap();
    let plans = [("steady", "111"), ("flaky", "101"), ("broken", "000")];
    let page = dir.path().join("page.html");
    let output = eval(
        dir.path(),
        "out",
        &plans,
        &["--repeat", "3", "--html", page.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let html = std::fs::read_to_string(&page).unwrap();
    let section = html.split("<section id=\"statistics\">").nth(1).unwrap();
    let section = section.split("</section>").next().unwrap();
    // The suite's mean and one per task, each a dot between two whisker ends.
    assert_eq!(section.matches("<circle").count(), 4, "{section}");
    assert_eq!(section.matches("class=\"whisker\"").count(), 12);
    assert!(
        section.contains("<title>flaky [actions]: 66.7% (20.8% to 93.9%)</title>"),
        "{section}"
    );
}

#[test]
fn bad_statistics_options_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let plans = [("a", "111")];
    for (args, message) in [
        (
            &["--confidence", "1.5"][..],
            "--confidence must be between 0.5 and 0.999999",
        ),
        (&["--confidence", "x"][..], "\"x\" is not a number"),
        (&["--pass-at", "0"][..], "--pass-at"),
        (
            &["--repeat", "3", "--pass-at", "1,5"][..],
            "--pass-at 5 needs at least 5 runs of each task, but --repeat is 3",
        ),
        (&["--regression-test", "sign"][..], "--baseline"),
    ] {
        let output = eval(dir.path(), "out", &plans, args);
        crate::eval_guards::assert_refused(&output, message);
        assert!(!dir.path().join("out").exists(), "{args:?}");
    }
}

#[test]
fn adaptive_repeats_stop_clear_tasks_early_with_the_same_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let plans = [
        ("pass1", "1111111111"),
        ("pass2", "1111111111"),
        ("fail1", "0000000000"),
        ("fail2", "0000000000"),
    ];
    let output = eval(
        dir.path(),
        "adaptive",
        &plans,
        &["--repeat-until-decided", "10"],
    );
    assert_eq!(output.status.code(), Some(1), "two tasks decided fail");
    // At threshold 0.5 each pass or failure moves the SPRT by ln 1.5; ln 19 needs 8 in a row.
    assert!(
        stderr(&output).contains("adaptive repeats (SPRT, pass rate at least 0.5 vs below, error levels 0.05): 32 runs of at most 40 (8 saved, 20%); 2 tasks pass, 2 fail, 0 undecided"),
        "{}",
        stderr(&output)
    );
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("adaptive/results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        results["adaptive"],
        json!({"max": 10, "pass_threshold": 0.5, "test": "sprt", "alpha": 0.05, "indifference": 0.1})
    );
    assert_eq!(results["repeats"], json!(10));
    let validator = crate::support::closed_validator("results.schema.json");
    let problems = crate::support::schema_problems(&validator, &results, "adaptive results.json");
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(results["tasks"].as_array().unwrap().len(), 32);
    // Every epoch appends to the one run's rows, sealed once; its header keeps the rule, so the
    // view rebuilt from the run is the view written.
    let out = dir.path().join("adaptive");
    let runs: Vec<_> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let rows = std::fs::read_to_string(runs[0].join("rows.jsonl")).unwrap();
    let lines: Vec<&str> = rows.lines().collect();
    assert_eq!(lines.len(), 33, "32 rows and the seal");
    assert!(lines[32].contains("\"sealed\":true"), "{}", lines[32]);
    let header: Value =
        serde_json::from_str(&std::fs::read_to_string(runs[0].join("header.json")).unwrap())
            .unwrap();
    assert_eq!(header["adaptive"], results["adaptive"]);
    let run_schema = crate::support::closed_validator("run-header.schema.json");
    let problems = crate::support::schema_problems(&run_schema, &header, "adaptive header.json");
    assert!(problems.is_empty(), "{problems:?}");
    let written = std::fs::read(out.join("results.json")).unwrap();
    let rebuilt = looptrace()
        .args(["eval", "--rebuild-view"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(rebuilt.status.code(), Some(0), "{}", stderr(&rebuilt));
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), written);
    // The fixed count gives the same verdicts: the passing tasks pass every run, the others none.
    let fixed = eval(
        dir.path(),
        "fixed",
        &plans,
        &["--repeat", "10", "-f", "json"],
    );
    let stats = &json_of(&fixed)["statistics"]["tasks"];
    let rates: Vec<f64> = stats
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["rate"].as_f64().unwrap())
        .collect();
    assert_eq!(rates, [1.0, 1.0, 0.0, 0.0]);
    // merge takes 1 to MAX runs per task and judges by the same test.
    let merged = looptrace()
        .arg("merge")
        .arg(dir.path().join("adaptive/results.json"))
        .arg("-q")
        .output()
        .unwrap();
    assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
    assert!(
        stdout(&merged).contains("32 runs (4 tasks, up to 10 repeats each)"),
        "{}",
        stdout(&merged)
    );
    // Only passing tasks: every one decides pass, exit 0.
    let passing = eval(
        dir.path(),
        "passing",
        &plans[..2],
        &["--repeat-until-decided", "10", "-q"],
    );
    assert_eq!(passing.status.code(), Some(0), "{}", stderr(&passing));
    // It cannot be combined with --repeat or start below 2.
    let both = eval(
        dir.path(),
        "both",
        &plans,
        &["--repeat-until-decided", "5", "--repeat", "3"],
    );
    assert_eq!(both.status.code(), Some(2));
    let one = eval(dir.path(), "one", &plans, &["--repeat-until-decided", "1"]);
    assert_eq!(one.status.code(), Some(2));
    assert!(stderr(&one).contains("--repeat-until-decided must be at least 2"));
}

#[test]
fn flaky_tasks_among_many_are_found_in_one_trace_file_by_their_runs_alone() {
    // The report keeps only the flaky tasks' rows of the view and reads only their runs from
    // the one trace file every run went to.
    let dir = tempfile::tempdir().unwrap();
    let plans = [
        ("a-steady", "111"),
        ("b-flaky", "101"),
        ("c-broken", "000"),
        ("d-flaky", "011"),
        ("e-steady", "111"),
        ("f-flaky", "110"),
    ];
    let args = [
        "--repeat",
        "3",
        "--capture",
        "full",
        "--trace-layout",
        "single",
    ];
    let output = eval(
        dir.path(),
        "many",
        &plans,
        &[&args[..], &["-f", "json"]].concat(),
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let at_the_gate = json!({"at": "tool", "step": 1, "tool": "the finish gate"});
    assert_eq!(
        json_of(&output)["flakiness"],
        json!([
            {"id": "b-flaky", "passed": 2, "runs": 3, "divergence": at_the_gate},
            {"id": "d-flaky", "passed": 2, "runs": 3, "divergence": at_the_gate},
            {"id": "f-flaky", "passed": 2, "runs": 3, "divergence": at_the_gate}
        ])
    );
}

#[test]
fn flaky_tasks_say_where_their_runs_first_diverged_under_full_capture() {
    let dir = tempfile::tempdir().unwrap();
    let plans = [("flaky", "101"), ("steady", "111")];
    let full = eval(
        dir.path(),
        "full",
        &plans,
        &["--repeat", "3", "--capture", "full"],
    );
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    assert!(
        stdout(&full).contains("Repeats: 1 task passed every repeat, 0 failed every repeat, 1 flaky (flaky)\n  flaky: 2 of 3 runs passed; first diverged at step 1: the finish gate answered the same call differently (the environment, not the model)\n"),
        "{}",
        stdout(&full)
    );
    let summary = eval(
        dir.path(),
        "summary",
        &plans,
        &["--repeat", "3", "-f", "json"],
    );
    assert_eq!(
        json_of(&summary)["flakiness"],
        json!([{"id": "flaky", "passed": 2, "runs": 3, "divergence": {"at": "unknown", "why": "summary capture (run with --capture full to compare the runs)"}}])
    );
    // merge reads each row's trace beside its results and says the same.
    let merged = looptrace()
        .arg("merge")
        .arg(dir.path().join("full/results.json"))
        .args(["-f", "json"])
        .output()
        .unwrap();
    assert_eq!(
        json_of(&merged)["flakiness"][0]["divergence"],
        json!({"at": "tool", "step": 1, "tool": "the finish gate"})
    );
}
