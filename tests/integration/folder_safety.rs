//! What one output folder is safe from: a crashed evaluation leaves no results its traces no
//! longer match; eval never writes through a linked traces folder into another folder; a command
//! refused for a locked folder makes nothing inside it; and a results file read through a link
//! is read under the lock of the folder it lies in.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use looptrace::eval::{LockMode, ResultsFile};

use crate::eval_guards::{assert_refused, rerun_in_place};
use crate::support::{cli, files_under, stderr};

/// A suite of tasks `a`, `b` and `c` that finish with `done`; `b` expects another answer.
fn suite(dir: &Path) -> PathBuf {
    crate::eval_guards::suite(dir, "suite.json", &["a", "b", "c"], &["b"])
}

/// That suite evaluated into `DIR/NAME`: the suite and the folder.
fn evaluated(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    crate::eval_guards::evaluated(dir, name, &["a", "b", "c"], &["b"])
}

fn eval(suite: &Path, out: &Path, extra: &[&str]) -> Output {
    crate::support::looptrace()
        .arg("eval")
        .arg(suite)
        .arg("--out")
        .arg(out)
        .args(extra)
        .arg("-q")
        .output()
        .unwrap()
}

/// The run ids the traces of `folder` hold, either layout.
fn runs_in_traces(folder: &Path) -> HashSet<String> {
    files_under(folder)
        .into_iter()
        .map(|(path, _)| path)
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .filter(|path| !path.ends_with("results.partial.jsonl"))
        .flat_map(|trace| runs_in_traces_file(&trace))
        .collect()
}

/// Every run `results.json` in `folder` names is in the folder's traces.
fn assert_results_match_traces(folder: &Path) {
    let results: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(folder.join("results.json")).unwrap())
            .unwrap();
    let runs = runs_in_traces(folder);
    for row in &results.tasks {
        let run = row.run_id.as_deref().unwrap();
        assert!(runs.contains(run), "{}: {run} is not in the traces", row.id);
    }
}

#[test]
fn a_crashed_evaluation_leaves_no_results_its_traces_no_longer_match() {
    for layout in ["per-task", "single"] {
        let dir = tempfile::tempdir().unwrap();
        let suite = suite(dir.path());
        let out = dir.path().join("out");
        let layout_args = ["--trace-layout", layout, "--jobs", "1"];
        assert_eq!(eval(&suite, &out, &layout_args).status.code(), Some(1));
        // Killed after its first task, which replaced that task's run in the traces.
        let crashed = crate::support::looptrace()
            .arg("eval")
            .arg(&suite)
            .arg("--out")
            .arg(&out)
            .args(layout_args)
            .env("LOOPTRACE_FAULT", "abort_before_row:2")
            .output()
            .unwrap();
        assert_eq!(
            crashed.status.code(),
            None,
            "{layout}: {}",
            stderr(&crashed)
        );
        let results = out.join("results.json");
        assert!(!results.exists(), "{layout}: the earlier results stayed");
        assert!(out.join("results.partial.jsonl").exists(), "{layout}");
        // Nothing reads the crashed folder as complete results...
        let rerun = cli!("eval", &suite, "--rerun-failed", &results, "-q");
        assert_refused(&rerun, "the evaluation there did not finish");
        assert!(
            stderr(&rerun).contains("--resume` finishes it"),
            "{}",
            stderr(&rerun)
        );
        let merged = dir.path().join("merged.json");
        assert_refused(
            &cli!("merge", &results, "--out", &merged, "-q"),
            "the evaluation there did not finish",
        );
        assert!(!merged.exists(), "{layout}");
        // ...and `--resume` finishes it, with results its traces hold.
        let resumed = eval(&suite, &out, &["--resume", "--trace-layout", layout]);
        assert_eq!(
            resumed.status.code(),
            Some(1),
            "{layout}: {}",
            stderr(&resumed)
        );
        assert_results_match_traces(&out);
    }
}

#[test]
fn a_rerun_elsewhere_replaces_no_results_before_it_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let (source, other) = (dir.path().join("source"), dir.path().join("other"));
    assert_eq!(eval(&suite, &source, &[]).status.code(), Some(1));
    assert_eq!(eval(&suite, &other, &[]).status.code(), Some(1));
    // A rerun into `other`, killed before its row: `other`'s own results would name a run of
    // `b` its traces no longer hold.
    let crashed = crate::support::looptrace()
        .arg("eval")
        .arg(&suite)
        .arg("--rerun-failed")
        .arg(source.join("results.json"))
        .arg("--out")
        .arg(&other)
        .args(["--jobs", "1", "-q"])
        .env("LOOPTRACE_FAULT", "abort_before_row:1")
        .output()
        .unwrap();
    assert_eq!(crashed.status.code(), None, "{}", stderr(&crashed));
    assert!(!other.join("results.json").exists());
}

#[test]
fn eval_never_writes_through_a_linked_traces_folder() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let other = dir.path().join("other");
    assert_eq!(
        eval(&suite, &other, &["--repeat", "2"]).status.code(),
        Some(1)
    );
    assert_eq!(
        eval(&suite, &other.join("plain"), &[]).status.code(),
        Some(1)
    );
    let before = files_under(&other);
    let cases: [(&str, PathBuf, &[&str]); 2] = [
        ("traces", other.join("plain/traces"), &[]),
        ("traces/r1", other.join("traces/r1"), &["--repeat", "2"]),
    ];
    for (place, target, extra) in cases {
        let out = dir
            .path()
            .join(format!("linked-{}", place.replace('/', "-")));
        let link = out.join(place);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let output = eval(&suite, &out, extra);
        assert_refused(&output, "is a symbolic link, and eval writes");
        assert!(stderr(&output).contains(place), "{}", stderr(&output));
        assert_eq!(
            files_under(&other),
            before,
            "{place}: the other folder changed"
        );
        assert!(!out.join("results.partial.jsonl").exists(), "{place}");
    }
}

#[test]
fn an_eval_refused_for_a_locked_folder_makes_nothing_inside() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // A merge or a rerun elsewhere reading the folder.
    let _reading = crate::support::hold_folder_lock(&out, LockMode::Read);
    let output = eval(&suite, &out, &[]);
    assert_refused(
        &output,
        "an eval writing it, or a rerun or merge reading it",
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

#[test]
fn a_results_file_read_through_a_link_is_read_under_its_own_folders_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, shard) = evaluated(dir.path(), "shard");
    let links = dir.path().join("links");
    std::fs::create_dir(&links).unwrap();
    let link = links.join("shard.json");
    std::os::unix::fs::symlink(shard.join("results.json"), &link).unwrap();
    let merged = dir.path().join("merged.json");
    let elsewhere = dir.path().join("elsewhere");
    let writing = crate::support::hold_folder_lock(&shard, LockMode::Write);
    let merge = || cli!("merge", &link, "--out", &merged, "-q");
    assert_refused(&merge(), "is being written by another looptrace eval");
    assert!(!merged.exists());
    let rerun = cli!(
        "eval",
        &suite,
        "--rerun-failed",
        &link,
        "--out",
        &elsewhere,
        "-q"
    );
    assert_refused(&rerun, "is being written by another looptrace eval");
    assert!(!elsewhere.exists());
    drop(writing);
    assert_eq!(merge().status.code(), Some(1), "{}", stderr(&merge()));
}

/// A copy of the folder `from` at `to`, file by file.
fn copy_folder(from: &Path, to: &Path) {
    for (path, bytes) in files_under(from) {
        let target = to.join(path.strip_prefix(from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, bytes).unwrap();
    }
}

/// Each row of `folder`'s results names a run its trace holds; with `exactly`, the trace holds
/// that run alone and nothing a rerun wrote aside is left.
fn assert_rows_in_their_traces(folder: &Path, exactly: bool, context: &str) {
    let results: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(folder.join("results.json")).unwrap())
            .unwrap();
    for row in &results.tasks {
        let trace = folder.join(row.trace.as_deref().unwrap());
        let runs = runs_in_traces_file(&trace);
        let run = row.run_id.as_deref().unwrap();
        assert!(
            runs.contains(run),
            "{context}: {run} not in {}",
            trace.display()
        );
        if exactly {
            assert_eq!(runs.len(), 1, "{context}: {}", trace.display());
        }
    }
    if exactly {
        // Nothing written aside or half joined: no hidden file under `traces`.
        let asides: Vec<_> = files_under(&folder.join("traces"))
            .into_iter()
            .filter(|(path, _)| path.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect();
        assert!(asides.is_empty(), "{context}: {asides:?}");
    }
}

/// The runs of a trace's whole lines (a crash may leave its last line cut short).
fn runs_in_traces_file(trace: &Path) -> HashSet<String> {
    std::fs::read_to_string(trace)
        .unwrap()
        .split_inclusive('\n')
        .filter(|line| line.ends_with('\n'))
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["run_id"].to_string())
        .map(|quoted| quoted.trim_matches('"').to_owned())
        .collect()
}

#[test]
fn a_rerun_in_place_killed_anywhere_leaves_results_whose_runs_its_traces_hold() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    for repeats in ["1", "2"] {
        let reference = dir.path().join(format!("reference-{repeats}"));
        let first = eval(&suite, &reference, &["--repeat", repeats, "--jobs", "1"]);
        assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
        let mut faults: Vec<String> = (1..=4).map(|n| format!("abort_after_events:{n}")).collect();
        faults.extend((1..=4).map(|n| format!("abort_in_traces_write:{n}")));
        faults.extend(
            [
                "abort_before_row:1",
                "abort_mid_row:1",
                "abort_in_results_write",
            ]
            .map(String::from),
        );
        let mut crashes = 0;
        for fault in faults {
            let out = dir
                .path()
                .join(format!("{repeats}-{}", fault.replace(':', "-")));
            copy_folder(&reference, &out);
            let rerun = |fault: Option<&str>| {
                let mut command = crate::support::looptrace();
                command
                    .arg("eval")
                    .arg(&suite)
                    .arg("--rerun-failed")
                    .arg(out.join("results.json"))
                    .args(["--jobs", "1", "-q", "--repeat", repeats]);
                if let Some(fault) = fault {
                    command.env("LOOPTRACE_FAULT", fault);
                }
                command.output().unwrap()
            };
            let crashed = rerun(Some(&fault));
            let context = format!("--repeat {repeats}, {fault}");
            if crashed.status.code().is_none() {
                crashes += 1;
                assert_rows_in_their_traces(&out, false, &context);
            }
            // The same rerun again finishes, and tidies what the crash left.
            let again = rerun(None);
            assert_eq!(
                again.status.code(),
                Some(1),
                "{context}: {}",
                stderr(&again)
            );
            assert_rows_in_their_traces(&out, true, &context);
        }
        // Every fault point was reached but the events and rewrites past the last ones: a run
        // here has three events, and each rerun run's trace is rewritten twice (joined, swapped).
        let reached = if repeats == "1" { 8 } else { 11 };
        assert_eq!(crashes, reached, "--repeat {repeats}");
    }
}

/// A per-task folder where `a` and `b` failed, whose rerun in place of `a` alone (with the suite
/// fixed, so `a` passes) was killed after its results were replaced and before `a`'s trace became
/// its new run alone: `traces/a.jsonl` holds both runs, and `b` still fails. With `snapshot`, the
/// folder was first hard-linked elsewhere (`cp -al`), so the trace is joined into a new file,
/// whose temporary file the kill leaves. Returns the fixed suite and the folder.
fn killed_between_results_and_swap(dir: &Path, snapshot: bool) -> (PathBuf, PathBuf) {
    let ids = ["a", "b", "c"];
    let failing = crate::eval_guards::suite(dir, "failing.json", &ids, &["a", "b"]);
    let fixed = crate::eval_guards::suite(dir, "fixed.json", &ids, &[]);
    let out = dir.join("out");
    assert_eq!(
        eval(&failing, &out, &["--jobs", "1"]).status.code(),
        Some(1)
    );
    if snapshot {
        for (path, _) in files_under(&out) {
            let linked = dir.join("snapshot").join(path.strip_prefix(&out).unwrap());
            std::fs::create_dir_all(linked.parent().unwrap()).unwrap();
            std::fs::hard_link(&path, linked).unwrap();
        }
    }
    // The join is the first rewrite of a trace, the swap the second.
    let fault = if snapshot {
        "abort_in_traces_write:1"
    } else {
        "abort_in_traces_write:2"
    };
    let crashed = crate::support::looptrace()
        .arg("eval")
        .arg(&fixed)
        .arg("--rerun-failed")
        .arg(out.join("results.json"))
        .args(["--only", "a", "--jobs", "1", "-q"])
        .env("LOOPTRACE_FAULT", fault)
        .output()
        .unwrap();
    assert_eq!(crashed.status.code(), None, "{}", stderr(&crashed));
    (fixed, out)
}

#[test]
fn a_trace_a_crashed_rerun_left_holding_two_runs_is_never_carried_so() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = killed_between_results_and_swap(dir.path(), false);
    assert_eq!(runs_in_traces_file(&out.join("traces/a.jsonl")).len(), 2);
    // Into another folder, rerunning `b` and carrying `a`: only the run each row names is copied.
    let elsewhere = dir.path().join("elsewhere");
    let rerun = cli!(
        "eval",
        &suite,
        "--rerun-failed",
        out.join("results.json"),
        "--out",
        &elsewhere,
        "-q"
    );
    assert_eq!(rerun.status.code(), Some(0), "{}", stderr(&rerun));
    assert_rows_in_their_traces(&elsewhere, true, "rerun elsewhere");
    // From a copy of the results in the same folder: the copy's runs are kept.
    let copy = out.join("copy.json");
    std::fs::copy(out.join("results.json"), &copy).unwrap();
    let rerun = cli!("eval", &suite, "--rerun-failed", &copy, "-q");
    assert_eq!(rerun.status.code(), Some(0), "{}", stderr(&rerun));
    assert_rows_in_their_traces(&out, true, "rerun from a copy");
}

#[test]
fn what_a_join_a_crash_cut_short_left_is_removed_and_the_snapshot_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = killed_between_results_and_swap(dir.path(), true);
    let snapshot = files_under(&dir.path().join("snapshot"));
    assert_rows_in_their_traces(&out, false, "after the crash");
    let again = rerun_in_place(&suite, &out);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_rows_in_their_traces(&out, true, "the same rerun again");
    assert_eq!(files_under(&dir.path().join("snapshot")), snapshot);
}

#[test]
fn a_rerun_in_place_refuses_what_blocks_a_run_written_aside() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out");
    let results = std::fs::read(out.join("results.json")).unwrap();
    let aside = out.join("traces/.b.jsonl.rerun");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "kept").unwrap();
    let blockers: [(&str, &dyn Fn()); 3] = [
        ("folder", &|| std::fs::create_dir(&aside).unwrap()),
        ("named pipe", &|| {
            let made = std::process::Command::new("mkfifo").arg(&aside).status();
            assert!(made.unwrap().success());
        }),
        ("link", &|| {
            std::os::unix::fs::symlink(&victim, &aside).unwrap()
        }),
    ];
    for (what, place) in blockers {
        place();
        let rerun = rerun_in_place(&suite, &out);
        assert_refused(
            &rerun,
            "is not a regular file, where eval writes a rerun's run aside",
        );
        assert_eq!(
            std::fs::read(out.join("results.json")).unwrap(),
            results,
            "{what}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "kept", "{what}");
        match std::fs::symlink_metadata(&aside).unwrap().is_dir() {
            true => std::fs::remove_dir(&aside).unwrap(),
            false => std::fs::remove_file(&aside).unwrap(),
        }
    }
}

#[test]
fn nothing_to_rerun_never_tidies_through_a_linked_traces_folder() {
    let dir = tempfile::tempdir().unwrap();
    let suite = crate::eval_guards::suite(dir.path(), "suite.json", &["a", "b"], &[]);
    let out = dir.path().join("out");
    assert_eq!(eval(&suite, &out, &[]).status.code(), Some(0));
    let elsewhere = dir.path().join("elsewhere");
    std::fs::rename(out.join("traces"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("traces")).unwrap();
    std::fs::write(elsewhere.join(".a.jsonl.rerun"), "").unwrap();
    let before = files_under(&elsewhere);
    let rerun = rerun_in_place(&suite, &out);
    assert_refused(&rerun, "is a symbolic link");
    assert_eq!(files_under(&elsewhere), before);
}

#[test]
fn a_rerun_refuses_results_whose_carried_runs_their_traces_no_longer_hold() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out");
    // A copy of the results, kept while the folder was evaluated again.
    let copy = out.join("copy.json");
    std::fs::copy(out.join("results.json"), &copy).unwrap();
    assert_eq!(eval(&suite, &out, &[]).status.code(), Some(1));
    let results = std::fs::read(out.join("results.json")).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    let into_elsewhere = cli!(
        "eval",
        &suite,
        "--rerun-failed",
        &copy,
        "--out",
        &elsewhere,
        "-q"
    );
    let in_place = cli!("eval", &suite, "--rerun-failed", &copy, "-q");
    for rerun in [into_elsewhere, in_place] {
        assert_refused(&rerun, "which its trace");
        assert!(
            stderr(&rerun).contains("`tasks[0]` (\"a\")"),
            "{}",
            stderr(&rerun)
        );
    }
    assert!(!elsewhere.exists());
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), results);
}
