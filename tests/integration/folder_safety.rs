//! What one output folder is safe from: no command rewrites a file an earlier one wrote below it
//! (runs are written once, the view is rebuilt from them); a crash leaves results whose runs its
//! traces hold; eval never writes through a linked `runs` folder into another folder; a command
//! refused for a locked folder makes nothing inside it; and a results file read through a link
//! is read under the lock of the folder it lies in.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use looptrace::eval::ResultsFile;

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
        .filter(|path| !path.ends_with("rows.jsonl"))
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
    // `other`'s view is as it was, and every run it names is still there.
    assert_results_match_traces(&other);
}

#[test]
fn eval_never_writes_through_a_linked_runs_folder() {
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
    let out = dir.path().join("linked");
    std::fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(other.join("plain/runs"), out.join("runs")).unwrap();
    let output = eval(&suite, &out, &[]);
    assert_refused(
        &output,
        "is a symbolic link, and eval writes its runs there",
    );
    assert_eq!(files_under(&other), before, "the other folder changed");
}

#[test]
fn an_eval_refused_for_a_locked_folder_makes_nothing_inside() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // Another command writing the folder.
    let _writing = crate::support::hold_folder_lock(&out);
    let output = eval(&suite, &out, &[]);
    assert_refused(&output, "an eval, a rerun or gc writing it");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

#[test]
fn a_results_file_is_read_without_a_lock_while_its_folder_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, shard) = evaluated(dir.path(), "shard");
    let links = dir.path().join("links");
    std::fs::create_dir(&links).unwrap();
    let link = links.join("shard.json");
    std::os::unix::fs::symlink(shard.join("results.json"), &link).unwrap();
    let merged = dir.path().join("merged.json");
    let elsewhere = dir.path().join("elsewhere");
    // Readers read the view, replaced whole, and the sealed runs it names: an evaluation
    // writing the folder meanwhile changes neither.
    let _writing = crate::support::hold_folder_lock(&shard);
    let merge = cli!("merge", &link, "--out", &merged, "-q");
    assert_eq!(merge.status.code(), Some(1), "{}", stderr(&merge));
    let rerun = cli!(
        "eval",
        &suite,
        "--rerun-failed",
        shard.join("results.json"),
        "--out",
        &elsewhere,
        "-q"
    );
    assert!(
        matches!(rerun.status.code(), Some(0 | 1)),
        "{}",
        stderr(&rerun)
    );
    assert!(elsewhere.join("results.json").is_file());
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
        // Nothing written aside: no hidden file under `runs`.
        let asides: Vec<_> = files_under(&folder.join("runs"))
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
            // The same rerun again finishes; what the crash left stays as it was.
            let again = rerun(None);
            assert_eq!(
                again.status.code(),
                Some(1),
                "{context}: {}",
                stderr(&again)
            );
            assert_rows_in_their_traces(&out, true, &context);
        }
        // Every fault point was reached but the events past the last ones: a run here has
        // three events, and the rerun runs `b` once per repeat.
        let reached = if repeats == "1" { 6 } else { 7 };
        assert_eq!(crashes, reached, "--repeat {repeats}");
    }
}

/// Each file below `folder` but the root-level view, with its inode and bytes.
fn written_below(folder: &Path) -> Vec<(PathBuf, u64, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    files_under(&folder.join("runs"))
        .into_iter()
        .map(|(path, bytes)| {
            let inode = std::fs::metadata(&path).unwrap().ino();
            (path, inode, bytes)
        })
        .collect()
}

/// Fails unless every file of `before` is still there, the same inode with the same bytes.
fn assert_kept(before: &[(PathBuf, u64, Vec<u8>)], folder: &Path, context: &str) {
    let now = written_below(folder);
    for file in before {
        assert!(
            now.contains(file),
            "{context}: `{}` changed or went",
            file.0.display()
        );
    }
}

/// Fails unless `results.json` in `folder` is the view `eval --rebuild-view` writes.
fn assert_view_rebuilds(folder: &Path, context: &str) {
    let view = std::fs::read(folder.join("results.json")).unwrap();
    let output = cli!("eval", "--rebuild-view", folder);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{context}: {}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read(folder.join("results.json")).unwrap(),
        view,
        "{context}: the view differs from the one rebuilt from runs/"
    );
}

#[test]
fn no_command_rewrites_what_an_earlier_one_wrote_and_the_view_rebuilds_from_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let out = dir.path().join("out");
    for layout in ["per-task", "single"] {
        let out = out.join(layout);
        let flags = ["--trace-layout", layout, "--jobs", "1"];
        assert_eq!(eval(&suite, &out, &flags).status.code(), Some(1));
        assert_view_rebuilds(&out, "eval");
        let after_eval = written_below(&out);

        let rerun = rerun_in_place(&suite, &out);
        assert_eq!(rerun.status.code(), Some(1), "{}", stderr(&rerun));
        assert_kept(&after_eval, &out, "--rerun-failed");
        assert_view_rebuilds(&out, "--rerun-failed");
        let after_rerun = written_below(&out);

        // An evaluation killed (a real crash) before its second row, then resumed.
        let killed = crate::support::looptrace()
            .arg("eval")
            .arg(&suite)
            .arg("--out")
            .arg(&out)
            .args(flags)
            .arg("-q")
            .env("LOOPTRACE_FAULT", "abort_before_row:2")
            .output()
            .unwrap();
        assert_eq!(killed.status.code(), None, "{}", stderr(&killed));
        assert_kept(&after_rerun, &out, "a killed eval");
        // The view is still the rerun's, every run it names whole in its trace.
        let one_run_per_file = layout == "per-task";
        assert_rows_in_their_traces(&out, one_run_per_file, "a killed eval");
        let after_kill = written_below(&out);
        let resumed = eval(&suite, &out, &[&flags[..], &["--resume"]].concat());
        assert_eq!(resumed.status.code(), Some(1), "{}", stderr(&resumed));
        assert_kept(&after_kill, &out, "--resume");
        assert_view_rebuilds(&out, "--resume");
        assert_rows_in_their_traces(&out, one_run_per_file, "--resume");
        // eval, rerun, the killed eval and its resume: four runs, none rewritten.
        assert_eq!(std::fs::read_dir(out.join("runs")).unwrap().count(), 4);
    }
}

#[test]
fn a_rerun_from_an_older_copy_of_the_results_builds_on_the_runs_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out");
    // A copy of the results, kept while the folder was evaluated again: its runs are still
    // there, since no evaluation rewrites or removes one.
    let copy = out.join("copy.json");
    std::fs::copy(out.join("results.json"), &copy).unwrap();
    assert_eq!(eval(&suite, &out, &[]).status.code(), Some(1));
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
    assert_eq!(
        into_elsewhere.status.code(),
        Some(1),
        "{}",
        stderr(&into_elsewhere)
    );
    assert_rows_in_their_traces(&elsewhere, true, "into another folder");
    let copied: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(&copy).unwrap()).unwrap();
    let rerun: ResultsFile =
        serde_json::from_str(&std::fs::read_to_string(elsewhere.join("results.json")).unwrap())
            .unwrap();
    // The carried rows are the copy's, not those of the evaluation since.
    assert_eq!(rerun.tasks[0].run_id, copied.tasks[0].run_id);
    assert!(rerun.tasks[0].carried_over);
}
