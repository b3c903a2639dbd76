//! `looptrace report`'s duration percentiles per exit reason, in every format.

use std::io::Write;

use serde_json::{Value, json};

use crate::support::{fixture, looptrace, stderr, stdout};

fn report(args: &[&str], trace: &std::path::Path) -> String {
    let output = looptrace()
        .arg("report")
        .arg(trace)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    stdout(&output)
}

fn close(got: &Value, want: f64) {
    let got = got.as_f64().unwrap_or_else(|| panic!("{got} is no number"));
    assert!(
        (got - want).abs() <= want * 0.016,
        "{got} is not within 1.6% of {want}"
    );
}

#[test]
fn percentiles_per_exit_reason_from_the_ending_or_the_times() {
    let trace = fixture("report/spend.jsonl");
    let json: Value = serde_json::from_str(&report(&["-f", "json"], &trace)).unwrap();
    let durations = &json["durations"];
    // finished: r1 sums its calls (10 ms), r2 spans its `ts` (2.5 s).
    let finished = &durations[0];
    assert_eq!(finished["exit_reason"], "finished");
    assert_eq!(finished["runs_with_duration"], 2);
    close(&finished["p50_ms"], 10.0);
    for key in ["p90_ms", "p99_ms", "max_ms"] {
        assert_eq!(finished[key], 2500.0, "{key}");
    }
    // max_steps_exceeded: r3's `run_finished.duration_ms`; the other three record none.
    assert_eq!(
        durations[1],
        json!({"exit_reason": "max_steps_exceeded", "runs_with_duration": 1,
               "p50_ms": 60000.0, "p90_ms": 60000.0, "p99_ms": 60000.0, "max_ms": 60000.0})
    );
    assert_eq!(
        durations[2],
        json!({"exit_reason": "invalid_model_output", "runs_with_duration": 0,
               "p50_ms": null, "p90_ms": null, "p99_ms": null, "max_ms": null})
    );

    let table = report(&[], &trace);
    assert!(
        table.contains("Duration per exit reason in seconds"),
        "{table}"
    );
    assert!(
        table.contains(
            "│ max_steps_exceeded   ┆             1 ┆ 60.000 ┆ 60.000 ┆ 60.000 ┆ 60.000 │"
        ),
        "{table}"
    );
    let markdown = report(&["-f", "markdown"], &trace);
    assert!(
        markdown.contains("| max_steps_exceeded | 1 | 60.000 | 60.000 | 60.000 | 60.000 |"),
        "{markdown}"
    );
    let csv = report(&["-f", "csv"], &trace);
    for row in [
        "duration,finished,,with duration,2",
        "duration,finished,,max,2.500",
        "duration,invalid_model_output,,p50,",
    ] {
        assert!(csv.lines().any(|line| line == row), "{row} not in\n{csv}");
    }
}

#[test]
fn percentiles_over_many_runs_are_within_the_sketch_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.jsonl");
    let mut file = std::fs::File::create(&path).unwrap();
    // Runs of 100 ms, 200 ms, ... 100 s, written out of order.
    for i in (1..=1000u64).rev() {
        writeln!(
            file,
            r#"{{"run_id":"r{i}","step":0,"event_type":"run_started"}}
{{"run_id":"r{i}","step":1,"event_type":"run_finished","exit_reason":"finished","steps_used":1,"duration_ms":{}}}"#,
            i * 100
        )
        .unwrap();
    }
    drop(file);
    let json: Value = serde_json::from_str(&report(&["-f", "json"], &path)).unwrap();
    let finished = &json["durations"][0];
    assert_eq!(finished["runs_with_duration"], 1000);
    close(&finished["p50_ms"], 50_000.0);
    close(&finished["p90_ms"], 90_000.0);
    close(&finished["p99_ms"], 99_000.0);
    assert_eq!(finished["max_ms"], 100_000.0);
    // No section when no run records a duration.
    let quiet = report(&[], &crate::support::sample("multi_run.jsonl"));
    assert!(!quiet.contains("Duration per exit reason"));
}
