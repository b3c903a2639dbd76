//! `eval --progress`: what a CI log (stderr not a terminal) shows while an evaluation runs.

use crate::support::{looptrace, stderr};

fn eval_sample(extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let output = looptrace()
        .args(["eval", "sample_traces/suite.json", "--out"])
        .arg(dir.path().join("out"))
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    stderr(&output)
}

#[test]
fn a_log_gets_one_line_per_finished_run_by_default() {
    let log = eval_sample(&[]);
    let lines: Vec<&str> = log.lines().filter(|l| !l.starts_with("results:")).collect();
    assert_eq!(lines.len(), 10, "{log}");
    let budget = lines
        .iter()
        .find(|l| l.starts_with("budget-exhausted  "))
        .unwrap_or_else(|| panic!("{log}"));
    let fields: Vec<&str> = budget.split("  ").collect();
    assert_eq!(
        &fields[..4],
        [
            "budget-exhausted",
            "actions",
            "max_steps_exceeded",
            "passed"
        ]
    );
    assert!(fields[4].ends_with('s'), "{budget}");
    assert_eq!(fields[5], "(budget_exhausted)");
}

#[test]
fn repeats_are_counted_as_runs_and_none_or_quiet_print_no_progress() {
    let log = eval_sample(&["--repeat", "2", "--progress", "summary=3600"]);
    assert!(log.contains("20/20 runs done after"), "{log}");
    assert!(log.contains(" runs/s)"), "{log}");
    let log = eval_sample(&["--progress", "lines", "--repeat", "2"]);
    assert!(
        log.contains("multiply-raw r2  responses  finished"),
        "{log}"
    );
    for quiet in [&["--progress", "none"][..], &["-q"]] {
        let log = eval_sample(quiet);
        assert!(!log.contains("multiply-raw"), "{quiet:?}: {log}");
    }
}

#[test]
fn a_bad_progress_mode_is_a_usage_error() {
    let output = looptrace()
        .args([
            "eval",
            "sample_traces/suite.json",
            "--progress",
            "summary=0",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("summary=SECONDS"),
        "{}",
        stderr(&output)
    );
}
