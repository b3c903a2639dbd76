//! Evaluation under load and interruption: a 10,000-task suite at `--jobs 2`, SIGINT in the middle of
//! a run, and shard coverage for every N.

use std::path::Path;
use std::time::{Duration, Instant};

use looptrace::eval::{ResultsFile, Shard};
use looptrace::run::ExitReason;
use proptest::prelude::*;
use serde_json::json;

use crate::support::{looptrace, stderr};

/// A suite of `n` tasks cycling through four outcomes: finished, budget exhausted, invalid output
/// and internal error.
pub fn write_suite(dir: &Path, n: usize) -> std::path::PathBuf {
    let call = json!({"type": "tool_call", "tool_name": "calculator", "arguments": {"left": 6, "operation": "multiply", "right": 7}});
    let tasks: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let id = format!("t{i:05}");
            match i % 4 {
                0 => json!({"id": id, "prompt": "p", "model": {"actions": [call, {"type": "finish", "answer": "42"}]}, "expect": {"answer": "42"}}),
                1 => json!({"id": id, "prompt": "p", "max_steps": 2, "model": {"actions": [call, call]}, "expect": {"exit_reason": "max_steps_exceeded"}}),
                2 => json!({"id": id, "prompt": "p", "max_steps": 1, "model": {"responses": ["nope"]}, "expect": {"exit_reason": "invalid_model_output"}}),
                _ => json!({"id": id, "prompt": "p", "model": {"actions": [call]}, "expect": {"exit_reason": "internal_error"}}),
            }
        })
        .collect();
    let path = dir.join("suite.json");
    std::fs::write(&path, json!({"name": "load", "tasks": tasks}).to_string()).unwrap();
    path
}

#[test]
fn ten_thousand_tasks_at_two_jobs_give_a_correct_table() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path(), 10_000);
    let out = dir.path().join("out");
    let child = looptrace()
        .args([
            "eval",
            suite.to_str().unwrap(),
            "--jobs",
            "2",
            "--format",
            "json",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The kernel's high-water mark of the process's resident memory, read while it runs.
    let status = format!("/proc/{}/status", child.id());
    let peak_kib = std::thread::spawn(move || {
        let mut peak = 0u64;
        while let Ok(text) = std::fs::read_to_string(&status) {
            if let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        peak
    });
    let output = child.wait_with_output().unwrap();
    let peak_kib = peak_kib.join().unwrap();
    // The suite itself is held in memory (a few MB for 10,000 tasks); results are small per task.
    assert!(peak_kib < 200 * 1024, "peak memory {peak_kib} KiB");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows: Vec<(String, u64)> = report["exit_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["exit_reason"].as_str().unwrap().to_owned(),
                r["tasks"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        ExitReason::ALL
            .iter()
            .map(|r| (r.as_str().to_owned(), 2500))
            .collect::<Vec<_>>()
    );
    let results: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results.totals.expectations.met, 10_000);
    assert_eq!(
        std::fs::read_dir(crate::support::traces_of(&out))
            .unwrap()
            .count(),
        10_000
    );
}

#[test]
fn sigint_stops_scheduling_and_leaves_readable_traces() {
    interrupt_an_eval("-INT");
}

#[test]
fn sigterm_is_treated_like_the_first_ctrl_c() {
    interrupt_an_eval("-TERM");
}

/// Starts a long eval, sends `signal` once the first tasks ran, and checks it stopped scheduling,
/// finished what ran and wrote results marked interrupted.
fn interrupt_an_eval(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path(), 40_000);
    let out = dir.path().join("out");
    // The run's own folder, once the evaluation has made it.
    let traces = || {
        std::fs::read_dir(out.join("runs"))
            .ok()
            .and_then(|mut runs| runs.next())
            .and_then(Result::ok)
            .map(|run| run.path().join("traces"))
    };
    let child = looptrace()
        .args([
            "eval",
            suite.to_str().unwrap(),
            "--jobs",
            "2",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt as soon as the first tasks have run.
    let deadline = Instant::now() + Duration::from_secs(60);
    while traces().map_or(0, |t| std::fs::read_dir(t).map_or(0, |d| d.count())) < 10 {
        assert!(Instant::now() < deadline, "eval never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("interrupted: "),
        "{}",
        stderr(&output)
    );
    let results: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert!(results.interrupted);
    assert!(results.tasks.len() < 40_000, "it stopped early");
    assert_eq!(results.totals.tasks, results.tasks.len());
    // Every task that ran has a complete trace; no task that did not run left one half-written.
    for task in &results.tasks {
        let contents = looptrace::trace::read_trace(
            &out.join(task.trace.as_ref().unwrap()),
            Default::default(),
        )
        .unwrap();
        assert_eq!(
            contents.runs[0].outcome(),
            looptrace::run::RunOutcome::Ended(task.exit_reason)
        );
    }
    for entry in std::fs::read_dir(traces().unwrap()).unwrap() {
        looptrace::trace::read_trace(&entry.unwrap().path(), Default::default()).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn shards_cover_every_task_exactly_once(tasks in 0usize..300, count in 1usize..24) {
        let items: Vec<usize> = (0..tasks).collect();
        let mut seen = Vec::new();
        for index in 1..=count {
            let shard = Shard { index, count };
            let part = shard.select(&items);
            prop_assert!(part.len() <= tasks / count + 1);
            seen.extend(part);
        }
        seen.sort_unstable();
        prop_assert_eq!(seen, items);
    }
}
