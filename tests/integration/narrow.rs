//! `--limit N` and `--sample N [--seed S]`: smoke runs of a few of the selected tasks, recorded
//! in the selection so that shards merge and a crashed run resumes onto the same tasks.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use looptrace::eval::ResultsFile;
use serde_json::json;

use crate::support::{looptrace, stderr};

/// Ten tasks `t0`..`t9` that finish, in order.
fn write_suite(dir: &Path) -> PathBuf {
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            json!({"id": format!("t{i}"), "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "a"}]}, "expect": {"answer": "a"}})
        })
        .collect();
    let path = dir.join("suite.json");
    std::fs::write(&path, json!({"name": "ten", "tasks": tasks}).to_string()).unwrap();
    path
}

fn eval(suite: &Path, out: &Path, extra: &[&str], fault: Option<&str>) -> Output {
    let mut command = looptrace();
    command
        .arg("eval")
        .arg(suite)
        .arg("--out")
        .arg(out)
        .args(["--jobs", "1", "-q"])
        .args(extra);
    command.env_remove("LOOPTRACE_FAULT");
    if let Some(fault) = fault {
        command.env("LOOPTRACE_FAULT", fault);
    }
    command.output().unwrap()
}

fn results(out: &Path) -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

fn ids(results: &ResultsFile) -> Vec<String> {
    results.tasks.iter().map(|t| t.id.clone()).collect()
}

#[test]
fn limit_runs_the_first_tasks_the_patterns_chose() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path());
    let out = dir.path().join("out");
    let output = eval(&suite, &out, &["--skip", "t0", "--limit", "3"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let got = results(&out);
    assert_eq!(ids(&got), ["t1", "t2", "t3"]);
    let selection = got.selection.expect("recorded");
    assert_eq!((selection.limit, selection.sample), (Some(3), None));
    assert_eq!(selection.tasks, ["t1", "t2", "t3"]);
}

#[test]
fn the_same_seed_samples_the_same_tasks_in_suite_order() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path());
    let run = |name: &str, seed: &str| {
        let out = dir.path().join(name);
        let output = eval(&suite, &out, &["--sample", "4", "--seed", seed], None);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        results(&out)
    };
    let first = run("a", "7");
    let again = run("b", "7");
    assert_eq!(ids(&first), ids(&again));
    assert_eq!(ids(&first).len(), 4);
    let mut sorted = ids(&first);
    sorted.sort_by_key(|id| id[1..].parse::<u32>().unwrap());
    assert_eq!(ids(&first), sorted, "suite order");
    let selection = first.selection.clone().unwrap();
    assert_eq!((selection.sample, selection.seed), (Some(4), Some(7)));
    // Other seeds choose other tasks (three tries, so a chance collision cannot fail the test).
    let others: Vec<Vec<String>> = ["1", "2", "3"].iter().map(|s| ids(&run(s, s))).collect();
    assert!(others.iter().any(|o| *o != ids(&first)), "{others:?}");
}

#[test]
fn shards_of_a_sample_merge_into_the_sample() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path());
    let whole = dir.path().join("whole");
    eval(&suite, &whole, &["--sample", "5", "--seed", "3"], None);
    let mut shards = Vec::new();
    for k in 1..=2 {
        let out = dir.path().join(format!("shard{k}"));
        let shard = format!("{k}/2");
        let output = eval(
            &suite,
            &out,
            &["--sample", "5", "--seed", "3", "--shard", &shard],
            None,
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        shards.push(out.join("results.json"));
    }
    let merged = dir.path().join("merged.json");
    let output = looptrace()
        .arg("merge")
        .args(&shards)
        .arg("--out")
        .arg(&merged)
        .arg("-q")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let merged: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(ids(&merged), ids(&results(&whole)));
}

#[test]
fn a_crashed_sample_resumes_onto_the_same_tasks_and_not_onto_another_sample() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path());
    let flags = ["--sample", "4", "--seed", "11"];
    let healthy = dir.path().join("healthy");
    eval(&suite, &healthy, &flags, None);
    let out = dir.path().join("crashed");
    let crashed = eval(&suite, &out, &flags, Some("abort_before_row:3"));
    assert_eq!(crashed.status.signal(), Some(6), "{}", stderr(&crashed));
    // Another seed would mix two samples: refused, naming both.
    let other = eval(
        &suite,
        &out,
        &["--sample", "4", "--seed", "12", "--resume"],
        None,
    );
    assert_eq!(other.status.code(), Some(2), "{}", stderr(&other));
    assert!(
        stderr(&other)
            .contains("was written with --sample 4 --seed 11, this eval has --sample 4 --seed 12"),
        "{}",
        stderr(&other)
    );
    let resumed = eval(&suite, &out, &[&flags[..], &["--resume"]].concat(), None);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let got = results(&out);
    assert_eq!(ids(&got), ids(&results(&healthy)));
    assert_eq!(got.runs.len(), 2, "the crashed run and the resumed one");
}
