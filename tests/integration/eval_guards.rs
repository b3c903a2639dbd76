//! What `eval` refuses before it runs anything, and what it must not leave out: report files
//! that would replace the evaluation's own files or a rerun's results, `--resume` over partial
//! or complete results of another command line, a runaway `--repeat`, a rerun's hand-edited
//! trace paths, outputs blocked by a folder or a file, a working-folder template holding a named
//! pipe; tasks added to a suite since the results a rerun updates; the HTML page of a single
//! trace file.

use std::path::{Path, PathBuf};
use std::process::Output;

use looptrace::eval::{LockMode, ResultsFile};
use serde_json::json;

use crate::support::{cli, stderr};

/// A suite of `ids`, each finishing with `done`; the ids in `failing` expect another answer.
pub(crate) fn suite(dir: &Path, file: &str, ids: &[&str], failing: &[&str]) -> PathBuf {
    let tasks: Vec<_> = ids
        .iter()
        .map(|id| {
            let answer = if failing.contains(id) {
                "never"
            } else {
                "done"
            };
            json!({
                "id": id,
                "prompt": "say done",
                "model": {"actions": [{"type": "finish", "answer": "done"}]},
                "expect": {"answer": answer}
            })
        })
        .collect();
    let path = dir.join(file);
    std::fs::write(&path, json!({"name": "guards", "tasks": tasks}).to_string()).unwrap();
    path
}

/// A suite of `ids` (see [`suite`]) evaluated into `DIR/OUT`: the suite and the folder.
pub(crate) fn evaluated(
    dir: &Path,
    out: &str,
    ids: &[&str],
    failing: &[&str],
) -> (PathBuf, PathBuf) {
    let suite = suite(dir, "suite.json", ids, failing);
    let out = dir.join(out);
    let expected = if failing.is_empty() { 0 } else { 1 };
    let output = cli!("eval", &suite, "--out", &out, "-q");
    assert_eq!(output.status.code(), Some(expected), "{}", stderr(&output));
    (suite, out)
}

fn results(path: &Path) -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `eval SUITE --out OUT --resume -q` with `extra`.
fn resume(suite: &Path, out: &Path, extra: &[&str]) -> Output {
    crate::support::looptrace()
        .arg("eval")
        .arg(suite)
        .arg("--out")
        .arg(out)
        .args(["--resume", "-q"])
        .args(extra)
        .output()
        .unwrap()
}

/// `eval SUITE --out OUT --jobs 1 -q` with `extra`, aborted (a real crash) before it writes its
/// second row: the partial file holds one.
fn crashed_before_the_second_row(suite: &Path, out: &Path, extra: &[&str]) {
    let crashed = crate::support::looptrace()
        .arg("eval")
        .arg(suite)
        .arg("--out")
        .arg(out)
        .args(extra)
        .args(["--jobs", "1", "-q"])
        .env("LOOPTRACE_FAULT", "abort_before_row:2")
        .output()
        .unwrap();
    assert_ne!(crashed.status.code(), Some(0), "{}", stderr(&crashed));
}

/// What resuming shard 1/2 in another shard's stead, or with no shard, is told.
const OTHER_SHARDS: [(&[&str], &str); 2] = [
    (
        &["--shard", "2/2"],
        "written with --shard 1/2, this eval has --shard 2/2",
    ),
    (&[], "written with --shard 1/2, this eval has no --shard"),
];

/// `eval SUITE --rerun-failed OUT/results.json -q`: a rerun that updates OUT in place.
pub(crate) fn rerun_in_place(suite: &Path, out: &Path) -> Output {
    cli!(
        "eval",
        suite,
        "--rerun-failed",
        out.join("results.json"),
        "-q"
    )
}

/// Exit 2, and stderr says `says`.
pub(crate) fn assert_refused(output: &Output, says: &str) {
    assert_eq!(output.status.code(), Some(2), "{}", stderr(output));
    assert!(stderr(output).contains(says), "{}", stderr(output));
}

#[test]
fn report_files_may_not_name_the_evaluations_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b"], &[]);
    let out = dir.path().join("out");
    for (flag, own, layout) in [
        ("--html", "traces.jsonl", "single"),
        ("--junit", "traces.jsonl", "single"),
        ("--junit", "results.partial.jsonl", "per-task"),
        ("--html", "results.partial.jsonl", "single"),
    ] {
        let output = cli!(
            "eval",
            &suite,
            "--out",
            &out,
            "--trace-layout",
            layout,
            flag,
            out.join(own),
            "-q"
        );
        assert_refused(&output, "is the output");
        assert!(!out.exists(), "{flag} {own}: nothing may be written");
    }
}

#[test]
fn report_files_may_not_replace_the_results_a_rerun_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, first) = evaluated(dir.path(), "first", &["a", "b"], &["b"]);
    // A copy beside the traces it names.
    let previous = first.join("previous.json");
    std::fs::copy(first.join("results.json"), &previous).unwrap();
    let before = std::fs::read(&previous).unwrap();
    for flag in ["--html", "--junit"] {
        let output = cli!(
            "eval",
            &suite,
            "--rerun-failed",
            &previous,
            "--out",
            dir.path().join("again"),
            flag,
            &previous,
            "-q"
        );
        assert_refused(&output, "would overwrite the input");
        assert_eq!(std::fs::read(&previous).unwrap(), before);
    }
}

#[test]
fn report_files_may_not_replace_a_carried_or_baseline_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, run) = evaluated(dir.path(), "run", &["good", "bad"], &["bad"]);
    let carried = run.join("traces/good.jsonl");
    let before = std::fs::read(&carried).unwrap();
    let results = run.join("results.json");
    let elsewhere = dir.path().join("elsewhere");
    // In place, into another folder, and as a baseline's trace.
    let cases: [(&[&str], &str); 3] = [
        (&["--rerun-failed"], "of the results"),
        (
            &["--out", elsewhere.to_str().unwrap(), "--rerun-failed"],
            "of the results",
        ),
        (
            &["--out", elsewhere.to_str().unwrap(), "--baseline"],
            "of the baseline",
        ),
    ];
    for (args, whose) in cases {
        for flag in ["--junit", "--html"] {
            let output = crate::support::looptrace()
                .arg("eval")
                .arg(&suite)
                .args(args)
                .arg(&results)
                .arg(flag)
                .arg(&carried)
                .arg("-q")
                .output()
                .unwrap();
            assert_refused(
                &output,
                &format!("is the trace `{}` {whose}", carried.display()),
            );
            assert_eq!(std::fs::read(&carried).unwrap(), before, "{args:?} {flag}");
            assert!(
                !elsewhere.exists(),
                "{args:?} {flag}: nothing may be written"
            );
        }
    }
}

/// `eval` with `args`, as given.
fn eval_args(args: &[&std::ffi::OsStr]) -> Output {
    crate::support::looptrace()
        .arg("eval")
        .args(args)
        .arg("-q")
        .output()
        .unwrap()
}

#[test]
fn a_rerun_elsewhere_never_writes_onto_the_traces_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, from) = evaluated(dir.path(), "from", &["t0", "t1", "t2"], &["t1"]);
    let results = from.join("results.json");
    let carried = from.join("traces/t0.jsonl");
    let before = std::fs::read(&carried).unwrap();
    // A traces folder linked to the results' own, and a hard link to one trace.
    let linked = dir.path().join("linked");
    std::fs::create_dir(&linked).unwrap();
    std::os::unix::fs::symlink(from.join("traces"), linked.join("traces")).unwrap();
    let hard = dir.path().join("hard");
    std::fs::create_dir_all(hard.join("traces")).unwrap();
    std::fs::hard_link(&carried, hard.join("traces/t0.jsonl")).unwrap();
    let refusals = [
        (
            &linked,
            "is a symbolic link, and eval writes its traces there",
        ),
        (&hard, "(the folders share their traces)"),
    ];
    for (out, says) in refusals {
        let output = eval_args(&[
            suite.as_os_str(),
            "--rerun-failed".as_ref(),
            results.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ]);
        assert_refused(&output, says);
        assert_eq!(std::fs::read(&carried).unwrap(), before);
        assert!(!out.join("results.json").exists());
    }
    // A report file may not be where a carried trace is copied, in a repeat's folder either.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("traces")).unwrap();
    let output = eval_args(&[
        suite.as_os_str(),
        "--rerun-failed".as_ref(),
        results.as_os_str(),
        "--out".as_ref(),
        elsewhere.as_os_str(),
        "--junit".as_ref(),
        elsewhere.join("traces/t0.jsonl").as_os_str(),
    ]);
    assert_refused(&output, "is the output");
    let repeated = dir.path().join("repeated");
    assert_eq!(
        cli!("eval", &suite, "--out", &repeated, "--repeat", "2", "-q")
            .status
            .code(),
        Some(1)
    );
    std::fs::create_dir_all(elsewhere.join("traces/r2")).unwrap();
    let output = eval_args(&[
        suite.as_os_str(),
        "--rerun-failed".as_ref(),
        repeated.join("results.json").as_os_str(),
        "--repeat".as_ref(),
        "2".as_ref(),
        "--out".as_ref(),
        elsewhere.as_os_str(),
        "--html".as_ref(),
        elsewhere.join("traces/r2/t0.jsonl").as_os_str(),
    ]);
    assert_refused(&output, "is the output");
    assert!(!elsewhere.join("results.json").exists());
    // Nor a task's trace in its folder when that task is not selected.
    let output = eval_args(&[
        suite.as_os_str(),
        "--out".as_ref(),
        elsewhere.as_os_str(),
        "--only".as_ref(),
        "t1".as_ref(),
        "--junit".as_ref(),
        elsewhere.join("traces/t0.jsonl").as_os_str(),
    ]);
    assert_refused(&output, "is the output");
}

#[test]
fn a_baseline_whose_traces_an_eval_would_replace_or_remove_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out", &["t0", "t1"], &[]);
    let baseline = out.join("old.json");
    std::fs::copy(out.join("results.json"), &baseline).unwrap();
    let before = std::fs::read(out.join("traces/t0.jsonl")).unwrap();
    for (extra, says) in [
        (&[][..], "of the baseline"),
        (
            &["--repeat", "2"],
            "whose traces every eval replaces or removes",
        ),
        (
            &["--trace-layout", "single"],
            "whose traces every eval replaces or removes",
        ),
    ] {
        let mut args = vec![
            suite.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
            "--baseline".as_ref(),
            baseline.as_os_str(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        let output = eval_args(&args);
        assert_refused(&output, says);
        assert_eq!(std::fs::read(out.join("traces/t0.jsonl")).unwrap(), before);
    }
}

#[test]
fn a_rerun_refuses_results_that_hold_a_run_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out", &["t0", "t1"], &["t1"]);
    let path = out.join("results.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let first = value["tasks"][0].clone();
    value["tasks"].as_array_mut().unwrap().push(first);
    std::fs::write(&path, value.to_string()).unwrap();
    let before = std::fs::read(&path).unwrap();
    let output = cli!("eval", &suite, "--rerun-failed", &path, "-q");
    assert_refused(&output, "holds task \"t0\" twice (again at `tasks[2]`)");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // The same run again with a `repeat` its evaluation never wrote.
    value["tasks"][2]["repeat"] = json!(1);
    std::fs::write(&path, value.to_string()).unwrap();
    let output = cli!("eval", &suite, "--rerun-failed", &path, "-q");
    assert_refused(
        &output,
        "has `tasks[2]` (\"t0\") with `repeat` 1, but its evaluation ran each task 1 time",
    );
    // A baseline holding a run twice would count it twice.
    let output = cli!(
        "eval",
        &suite,
        "--out",
        dir.path().join("new"),
        "--baseline",
        &path,
        "-q"
    );
    assert_refused(&output, "--baseline");
    assert!(
        stderr(&output).contains("with `repeat` 1"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.path().join("new").exists());
}

#[test]
fn a_rerun_elsewhere_refuses_a_carried_traces_place_blocked_or_linked() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, from) = evaluated(dir.path(), "from", &["t0", "t1"], &["t1"]);
    let results = from.join("results.json");
    let outside = dir.path().join("outside.jsonl");
    for (i, says) in ["is a folder, not a file", "is a symbolic link"]
        .into_iter()
        .enumerate()
    {
        let out = dir.path().join(format!("elsewhere{i}"));
        std::fs::create_dir_all(out.join("traces")).unwrap();
        // `t0` passed: its trace is carried over, copied to this place.
        let place = out.join("traces/t0.jsonl");
        match i {
            0 => std::fs::create_dir(&place).unwrap(),
            _ => std::os::unix::fs::symlink(&outside, &place).unwrap(),
        }
        let before = entries_under(&out);
        let output = cli!(
            "eval",
            &suite,
            "--rerun-failed",
            &results,
            "--out",
            &out,
            "-q"
        );
        assert_refused(&output, says);
        assert_eq!(entries_under(&out), before, "nothing written");
        assert!(!outside.exists());
    }
    // In place, a carried trace that is a pipe is named as one, not as missing.
    let carried = from.join("traces/t0.jsonl");
    std::fs::remove_file(&carried).unwrap();
    Blocker::Pipe.make(&carried);
    let output = within_a_minute(&[
        "eval".as_ref(),
        suite.as_os_str(),
        "--rerun-failed".as_ref(),
        results.as_os_str(),
    ]);
    assert_refused(
        &output,
        "t0.jsonl`, the trace of a row it carries over, is a named pipe",
    );
}

#[test]
fn report_files_may_not_take_a_trace_name_the_eval_would_remove() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out", &["t0", "t1"], &[]);
    // Not a task of the suite, but named as a trace is: the evaluation would remove it as stale.
    for (flag, name) in [("--junit", "junit.jsonl"), ("--html", "r1/page.jsonl")] {
        std::fs::create_dir_all(out.join("traces/r1")).unwrap();
        let output = cli!(
            "eval",
            &suite,
            "--out",
            &out,
            flag,
            out.join("traces").join(name),
            "-q"
        );
        assert_refused(&output, "a task trace's name in its traces folder");
    }
}

#[test]
fn the_suites_tools_file_is_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(&tools, r#"{"tools":[{"builtin":"bash","timeout_s":5}]}"#).unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(
        &suite,
        json!({"name": "tools", "tools": "tools.json", "tasks": [
            {"id": "a", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "x"}]}}
        ]})
        .to_string(),
    )
    .unwrap();
    let before = std::fs::read(&tools).unwrap();
    for flag in ["--junit", "--html"] {
        let output = cli!(
            "eval",
            &suite,
            "--out",
            dir.path().join("out"),
            flag,
            &tools,
            "-q"
        );
        assert_refused(&output, "would overwrite the input");
        assert_eq!(std::fs::read(&tools).unwrap(), before);
    }
}

#[test]
fn report_files_are_told_apart_however_their_paths_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b"], &["b"]);
    // A new `--out` written absolute and its report files relative (and the other way round):
    // the same folder, created first.
    let relative = crate::support::looptrace()
        .current_dir(dir.path())
        .args(["eval", "suite.json", "--out"])
        .arg(dir.path().join("new"))
        .args([
            "--junit",
            "new/junit.xml",
            "--html",
            "./new/page.html",
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(relative.status.code(), Some(1), "{}", stderr(&relative));
    assert!(dir.path().join("new/junit.xml").is_file());
    // The same file for both, written two ways.
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let output = cli!(
        "eval",
        &suite,
        "--out",
        &out,
        "--junit",
        out.join("report.xml"),
        "--html",
        out.join(".").join("report.xml"),
        "-q"
    );
    assert_refused(&output, "--html and --junit name the same file");
    assert!(!out.join("report.xml").exists());
}

#[test]
fn a_rerun_refuses_a_repeat_its_results_never_ran() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b"], &["b"]);
    let out = dir.path().join("out");
    let output = cli!(
        "eval",
        &suite,
        "--out",
        &out,
        "--repeat",
        "3",
        "--trace-layout",
        "single",
        "-q"
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let path = out.join("results.json");
    for bad in [7, 0] {
        let mut value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        value["tasks"][5]["repeat"] = json!(bad);
        std::fs::write(&path, value.to_string()).unwrap();
        let output = cli!(
            "eval",
            &suite,
            "--rerun-failed",
            &path,
            "--repeat",
            "3",
            "-q"
        );
        assert_refused(
            &output,
            &format!("with `repeat` {bad}, but its evaluation ran each task 3 times"),
        );
    }
}

#[test]
fn the_output_folder_may_not_be_inside_the_working_folder_template() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("repo")).unwrap();
    std::fs::write(dir.path().join("repo/f.txt"), "hi\n").unwrap();
    let suite = suite_with_tools(
        dir.path(),
        r#"{"tools":[{"builtin":"bash","timeout_s":5}],"workdir":{"template":"repo"}}"#,
    );
    for out in ["repo", "repo/out"] {
        let output = cli!("eval", &suite, "--out", dir.path().join(out), "-q");
        assert_refused(
            &output,
            "is inside the tools file's working-folder template",
        );
    }
    let left: Vec<_> = std::fs::read_dir(dir.path().join("repo"))
        .unwrap()
        .collect();
    assert_eq!(left.len(), 1, "the template is as it was");
    // Beside the template is fine; the template inside the folders an eval replaces is not.
    let output = cli!("eval", &suite, "--out", dir.path().join("beside"), "-q");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    std::fs::rename(dir.path().join("repo"), dir.path().join("traces")).unwrap();
    std::fs::write(
        dir.path().join("tools.json"),
        r#"{"tools":[{"builtin":"bash","timeout_s":5}],"workdir":{"template":"traces"}}"#,
    )
    .unwrap();
    let output = cli!("eval", &suite, "--out", dir.path(), "-q");
    assert_refused(
        &output,
        "whose traces and working folders every eval replaces or removes",
    );
    assert!(dir.path().join("traces/f.txt").is_file());
}

/// A one-task suite in `dir` whose tools file copies the folder `dir/tpl` for every task.
fn suite_with_template(dir: &Path) -> PathBuf {
    suite_with_tools(dir, r#"{"workdir":{"template":"tpl"},"tools":[]}"#)
}

/// A one-task suite in `dir` naming `dir/tools.json`, which holds `tools`.
fn suite_with_tools(dir: &Path, tools: &str) -> PathBuf {
    std::fs::write(dir.join("tools.json"), tools).unwrap();
    let suite = dir.join("suite.json");
    std::fs::write(
        &suite,
        json!({"name": "w", "tools": "tools.json", "tasks": [
            {"id": "a", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "x"}]}}
        ]})
        .to_string(),
    )
    .unwrap();
    suite
}

#[test]
fn a_task_whose_working_folder_cannot_be_made_still_has_its_trace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tpl")).unwrap();
    std::fs::write(dir.path().join("tpl/f"), "x\n").unwrap();
    let suite = suite_with_template(dir.path());
    let out = dir.path().join("out");
    for flush in ["event", "run"] {
        assert_eq!(
            cli!("eval", &suite, "--out", &out, "-q").status.code(),
            Some(0)
        );
        // A file where the task's working folder goes: it cannot be made.
        std::fs::remove_dir_all(out.join("work/a")).unwrap();
        std::fs::write(out.join("work/a"), "blocker").unwrap();
        let output = cli!("eval", &suite, "--out", &out, "--trace-flush", flush, "-q");
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let row = &results(&out.join("results.json")).tasks[0];
        assert_eq!(row.error_kind.as_deref(), Some("workdir_failed"));
        let trace = std::fs::read_to_string(out.join("traces/a.jsonl")).unwrap();
        assert!(trace.contains(row.run_id.as_deref().unwrap()), "{trace}");
        assert!(
            trace.contains("\"error_kind\":\"workdir_failed\""),
            "{trace}"
        );
        std::fs::remove_file(out.join("work/a")).unwrap();
    }
}

#[test]
fn the_page_of_a_single_trace_file_counts_each_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b", "c"], &[]);
    let page = dir.path().join("page.html");
    let output = cli!(
        "eval",
        &suite,
        "--out",
        dir.path().join("out"),
        "--trace-layout",
        "single",
        "--repeat",
        "2",
        "--html",
        &page,
        "-q"
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Exit reasons (of 6 runs)"), "{html:.2000}");
}

#[test]
fn resume_keeps_no_row_its_evaluation_would_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["t0", "t1"], &[]);
    let out = dir.path().join("out");
    crashed_before_the_second_row(&suite, &out, &["--repeat", "2"]);
    // The partial file the crash left, its one row edited: its `repeat` gone, then given twice.
    let partial = out.join("results.partial.jsonl");
    let text = std::fs::read_to_string(&partial).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let mut row: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    let trace = std::fs::read(out.join("traces/r1/t0.jsonl")).unwrap();
    for (edit, foreign) in [(None, "1 row"), (Some(1), "1 row")] {
        // The trace of the crashed run, as the crash left it (a resume replaces it).
        std::fs::write(out.join("traces/r1/t0.jsonl"), &trace).unwrap();
        row["repeat"] = json!(edit);
        let edited = match edit {
            None => format!("{}\n{row}\n", lines[0]),
            Some(_) => format!("{}\n{row}\n{row}\n", lines[0]),
        };
        std::fs::write(&partial, edited).unwrap();
        let output = resume(&suite, &out, &["--repeat", "2"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!("holds {foreign} this evaluation never writes")),
            "{}",
            stderr(&output)
        );
        // What resume wrote keeps the rule of rows: a rerun reads it.
        let written = results(&out.join("results.json"));
        assert_eq!(written.tasks.len(), 4);
        assert!(looptrace::eval::check_rows(&written).is_ok());
        std::fs::remove_file(out.join("results.json")).unwrap();
    }
}

#[test]
fn resume_refuses_complete_results_of_another_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b", "c"], &[]);
    let out = dir.path().join("out");
    let first = cli!("eval", &suite, "--out", &out, "--shard", "1/2", "-q");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let before = std::fs::read(out.join("results.json")).unwrap();
    for (extra, says) in OTHER_SHARDS.into_iter().chain::<[(&[&str], &str); 4]>([
        (
            &["--shard", "1/2", "--repeat", "2"],
            "--repeat 1, this eval has --repeat 2",
        ),
        (
            &["--shard", "1/2", "--trace-layout", "single"],
            "--trace-layout per-task, this eval has --trace-layout single",
        ),
        (
            &["--shard", "1/2", "--capture", "full"],
            "summary capture, this eval uses full",
        ),
        (
            &["--shard", "1/2", "--only", "a"],
            "not the tasks this eval selects",
        ),
    ]) {
        let output = resume(&suite, &out, extra);
        assert_refused(&output, says);
        assert_eq!(std::fs::read(out.join("results.json")).unwrap(), before);
    }
    // Results of another suite (or of this one since edited) are nothing to resume: a Job
    // passing `--resume` on every attempt runs every task in a folder an earlier Job left.
    let other = self::suite(dir.path(), "other.json", &["a", "b", "c", "d"], &[]);
    let output = resume(&other, &out, &["--shard", "1/2"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("nothing of it to resume"),
        "{}",
        stderr(&output)
    );
    assert_eq!(results(&out.join("results.json")).tasks.len(), 2);
    let first = cli!("eval", &suite, "--out", &out, "--shard", "1/2", "-q");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let same = cli!(
        "eval", &suite, "--out", &out, "--shard", "1/2", "--resume", "-q"
    );
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert!(stderr(&same).contains("nothing to resume"));
}

#[test]
fn merge_reads_no_shard_while_an_evaluation_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = evaluated(dir.path(), "out", &["a", "b"], &[]);
    let merged = dir.path().join("merged.json");
    let merge = || cli!("merge", out.join("results.json"), "--out", &merged, "-q");
    let writing = crate::support::hold_folder_lock(&out, LockMode::Write);
    let output = merge();
    assert_refused(&output, "is being written by another looptrace eval");
    assert!(!merged.exists());
    drop(writing);
    // Readers share the folder: a rerun into another folder reading it, say.
    let _reading = crate::support::hold_folder_lock(&out, LockMode::Read);
    let output = merge();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_plain_eval_removes_what_a_crash_while_replacing_the_results_left() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b"], &[]);
    let out = dir.path().join("out");
    let crashed = crate::support::looptrace()
        .arg("eval")
        .arg(&suite)
        .arg("--out")
        .arg(&out)
        .arg("-q")
        .env("LOOPTRACE_FAULT", "abort_in_results_write")
        .output()
        .unwrap();
    assert_ne!(crashed.status.code(), Some(0), "{}", stderr(&crashed));
    assert!(
        !crate::support::leftovers(&out).is_empty(),
        "the crash left a temporary file"
    );
    let output = cli!("eval", &suite, "--out", &out, "-q");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(crate::support::leftovers(&out), Vec::<String>::new());
}

#[test]
fn nothing_to_rerun_removes_the_partial_file_a_crashed_rerun_left() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b"], &[]);
    let out = dir.path().join("out");
    // A partial file's header, as a rerun that crashed after replacing the results leaves it.
    crashed_before_the_second_row(&suite, &out, &[]);
    let partial = out.join("results.partial.jsonl");
    let text = std::fs::read_to_string(&partial).unwrap();
    let mut header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let output = cli!("eval", &suite, "--out", &out, "-q");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for (rerun_failed, removed) in [(json!(null), false), (json!("out/results.json"), true)] {
        header["rerun_failed"] = rerun_failed;
        std::fs::write(&partial, format!("{header}\n")).unwrap();
        let output = rerun_in_place(&suite, &out);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert!(
            stderr(&output).contains("nothing to rerun"),
            "{}",
            stderr(&output)
        );
        // A plain evaluation's partial file is `--resume`'s to use; a rerun's is no one's.
        assert_eq!(!partial.exists(), removed, "{}", stderr(&output));
    }
}

#[test]
fn a_runaway_repeat_count_is_refused_before_anything_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a"], &[]);
    let out = dir.path().join("out");
    let output = cli!("eval", &suite, "--out", &out, "--repeat", "3000000", "-q");
    assert_refused(&output, "--repeat must be at most 10000");
    assert!(!out.exists());
}

#[test]
fn a_rerun_runs_the_tasks_added_to_the_suite_since() {
    let dir = tempfile::tempdir().unwrap();
    let before = suite(dir.path(), "before.json", &["a", "b"], &[]);
    let out = dir.path().join("out");
    assert_eq!(
        cli!("eval", &before, "--out", &out, "-q").status.code(),
        Some(0)
    );
    let after = suite(dir.path(), "after.json", &["a", "new", "b"], &[]);
    let output = rerun_in_place(&after, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let updated = results(&out.join("results.json"));
    let rows: Vec<(&str, bool)> = updated
        .tasks
        .iter()
        .map(|row| (row.id.as_str(), row.carried_over))
        .collect();
    assert_eq!(rows, [("a", true), ("new", false), ("b", true)]);
    assert_eq!(updated.suite.tasks, 3);
    assert!(out.join("traces/new.jsonl").is_file());

    // A rerun narrowed by `--only` still leaves whole results: a task added after it runs.
    let narrowed = cli!(
        "eval",
        &after,
        "--rerun-failed",
        out.join("results.json"),
        "--only",
        "a",
        "-q"
    );
    assert_eq!(narrowed.status.code(), Some(0), "{}", stderr(&narrowed));
    let later = suite(dir.path(), "later.json", &["a", "new", "b", "later"], &[]);
    let output = rerun_in_place(&later, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(out.join("traces/later.jsonl").is_file());
    assert_eq!(results(&out.join("results.json")).tasks.len(), 4);

    // Results of a selection speak only for it: a task outside it is not theirs to run.
    let chosen = dir.path().join("chosen");
    assert_eq!(
        cli!("eval", &before, "--out", &chosen, "--only", "a", "-q")
            .status
            .code(),
        Some(0)
    );
    let output = rerun_in_place(&after, &chosen);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("nothing to rerun"));
}

#[test]
fn a_rerun_refuses_trace_paths_eval_does_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out", &["a", "b"], &["b"]);
    let path = out.join("results.json");
    let original = std::fs::read_to_string(&path).unwrap();
    for bad in ["../elsewhere.jsonl", "/etc/hostname", "traces/b.jsonl"] {
        let mut edited: serde_json::Value = serde_json::from_str(&original).unwrap();
        edited["tasks"][0]["trace"] = json!(bad);
        std::fs::write(&path, edited.to_string()).unwrap();
        let again = dir.path().join("again");
        let output = cli!(
            "eval",
            &suite,
            "--rerun-failed",
            &path,
            "--out",
            &again,
            "-q"
        );
        assert_refused(&output, "`tasks[0].trace`");
        assert!(!again.exists(), "{bad}: nothing may be written");
    }
}

#[test]
fn resume_refuses_a_partial_file_of_another_shard_or_selection() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b", "c", "d", "e"], &[]);
    let out = dir.path().join("out");
    crashed_before_the_second_row(&suite, &out, &["--shard", "1/2"]);
    let partial = out.join("results.partial.jsonl");
    let before = std::fs::read(&partial).unwrap();
    let header: serde_json::Value = serde_json::from_str(
        std::str::from_utf8(&before)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["shard"], json!({"index": 1, "count": 2}));
    for (extra, says) in OTHER_SHARDS.into_iter().chain::<[(&[&str], &str); 1]>([(
        &["--shard", "1/2", "--skip", "e"],
        "written with no --only or --skip, this eval has --skip \"e\"",
    )]) {
        let output = resume(&suite, &out, extra);
        assert_refused(&output, says);
        assert_eq!(std::fs::read(&partial).unwrap(), before);
        assert!(out.join("traces/a.jsonl").is_file());
    }
    let resumed = cli!(
        "eval", &suite, "--out", &out, "--shard", "1/2", "--resume", "-q"
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(results(&out.join("results.json")).tasks.len(), 3);
}

#[test]
fn a_rerun_from_merged_results_needs_the_shards_traces_beside_them() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b", "c"], &["a"]);
    for k in ["1/2", "2/2"] {
        let shard = dir.path().join(format!("shard{}", &k[..1]));
        let output = cli!("eval", &suite, "--shard", k, "--out", &shard, "-q");
        assert!(
            output.status.code().is_some_and(|c| c <= 1),
            "{}",
            stderr(&output)
        );
    }
    let merged = dir.path().join("merged");
    std::fs::create_dir(&merged).unwrap();
    let output = cli!(
        "merge",
        dir.path().join("shard1/results.json"),
        dir.path().join("shard2/results.json"),
        "--out",
        merged.join("results.json"),
        "-q"
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let fixed = suite_fixed(dir.path());
    let again = dir.path().join("again");
    let rerun = || {
        cli!(
            "eval",
            &fixed,
            "--rerun-failed",
            merged.join("results.json"),
            "--out",
            &again,
            "-q"
        )
    };
    let output = rerun();
    assert_refused(
        &output,
        "2 traces of the rows it carries over are not beside it",
    );
    assert!(!again.exists());

    // Gathered as the message says, the rerun leaves a folder that stands on its own.
    std::fs::create_dir(merged.join("traces")).unwrap();
    for shard in ["shard1", "shard2"] {
        for entry in std::fs::read_dir(dir.path().join(shard).join("traces")).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), merged.join("traces").join(entry.file_name())).unwrap();
        }
    }
    let output = rerun();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for id in ["a", "b", "c"] {
        assert!(again.join(format!("traces/{id}.jsonl")).is_file(), "{id}");
    }
}

#[test]
fn outputs_blocked_by_a_folder_a_file_or_a_pipe_are_refused_before_any_task_runs() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b"], &[]);
    std::fs::create_dir_all(dir.path().join("templated/tpl")).unwrap();
    let with_template = suite_with_template(&dir.path().join("templated"));
    let single: &[&str] = &["--trace-layout", "single"];
    // Where a file goes, a folder or a named pipe; where a folder goes, a file.
    let cases: [(&str, Blocker, &[&str], &Path, &str); 8] = [
        (
            "traces/b.jsonl",
            Blocker::Folder,
            &[],
            &suite,
            "traces/b.jsonl` is a folder, not a file",
        ),
        (
            "traces.jsonl",
            Blocker::Folder,
            single,
            &suite,
            "traces.jsonl` is a folder, not a file",
        ),
        (
            "results.partial.jsonl",
            Blocker::Folder,
            &[],
            &suite,
            "is a folder, not a file",
        ),
        (
            "traces/r2",
            Blocker::File,
            &["--repeat", "2"],
            &suite,
            "traces/r2` is not a folder, and eval writes a repeat's traces there",
        ),
        (
            "traces/b.jsonl",
            Blocker::Pipe,
            &[],
            &suite,
            "b.jsonl` is a named pipe (FIFO), not a regular file",
        ),
        (
            "traces.jsonl",
            Blocker::Pipe,
            single,
            &suite,
            "traces.jsonl` is a named pipe (FIFO)",
        ),
        (
            "results.json",
            Blocker::Pipe,
            &[],
            &suite,
            "results.json` is a named pipe (FIFO)",
        ),
        (
            "work",
            Blocker::File,
            &[],
            &with_template,
            "work` is not a folder, and eval makes each task's working folder there",
        ),
    ];
    for (i, (blocked, blocker, extra, suite, says)) in cases.into_iter().enumerate() {
        let out = dir.path().join(format!("out{i}"));
        let path = out.join(blocked);
        std::fs::create_dir_all(folder_of(&path)).unwrap();
        blocker.make(&path);
        let before = entries_under(&out);
        let mut args = vec![
            "eval".as_ref(),
            suite.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
            "-q".as_ref(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        let output = within_a_minute(&args);
        assert_refused(&output, says);
        assert_eq!(entries_under(&out), before, "{blocked}: nothing made");
    }
}

/// What stands where eval writes: a folder, a regular file or a named pipe.
#[derive(Clone, Copy)]
enum Blocker {
    Folder,
    File,
    Pipe,
}

impl Blocker {
    fn make(self, path: &Path) {
        match self {
            Blocker::Folder => std::fs::create_dir(path).unwrap(),
            Blocker::File => std::fs::write(path, "not a folder").unwrap(),
            Blocker::Pipe => {
                let made = std::process::Command::new("mkfifo")
                    .arg(path)
                    .status()
                    .unwrap();
                assert!(made.success());
            }
        }
    }
}

/// Every path under `dir`, without reading any file (a named pipe would wait for a writer).
fn entries_under(dir: &Path) -> Vec<PathBuf> {
    let mut entries = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            }
            entries.push(entry.path());
        }
    }
    entries.sort();
    entries
}

fn folder_of(path: &Path) -> &Path {
    path.parent().unwrap()
}

#[test]
fn a_working_folder_template_holding_a_named_pipe_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tpl")).unwrap();
    Blocker::Pipe.make(&dir.path().join("tpl/pipe"));
    let suite = suite_with_template(dir.path());
    let out = dir.path().join("out");
    let eval = [
        "eval".as_ref(),
        suite.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ];
    let tools_file = dir.path().join("tools.json");
    let tools = [
        "tools".as_ref(),
        "--tools-file".as_ref(),
        tools_file.as_os_str(),
    ];
    for args in [&eval[..], &tools[..]] {
        let output = within_a_minute(args);
        assert_refused(&output, "is a named pipe (FIFO)");
        assert!(stderr(&output).contains("tpl/pipe"), "{}", stderr(&output));
    }
    assert!(!out.exists());
}

/// Runs looptrace with `args`, killing it if it has not ended within a minute (a hang is the
/// defect the caller checks for).
fn within_a_minute(args: &[&std::ffi::OsStr]) -> Output {
    let mut child = crate::support::looptrace()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("looptrace {args:?} did not end within a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn an_eval_into_a_hard_linked_copy_leaves_the_original_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    for layout in ["per-task", "single"] {
        let original = dir.path().join(format!("original-{layout}"));
        let suite = suite(dir.path(), "suite.json", &["a", "b"], &["b"]);
        let first = cli!(
            "eval",
            &suite,
            "--out",
            &original,
            "--trace-layout",
            layout,
            "-q"
        );
        assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
        let before = crate::support::files_under(&original);
        // A snapshot that shares every file's content with the original.
        let copy = dir.path().join(format!("copy-{layout}"));
        let linked = std::process::Command::new("cp")
            .arg("-al")
            .arg(&original)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(linked.success());
        // Another evaluation's rerun into the copy copies its carried traces over the linked ones.
        let other = dir.path().join(format!("other-{layout}"));
        let layout_args = ["--trace-layout", layout];
        let output = cli!(
            "eval",
            &suite,
            "--out",
            &other,
            layout_args[0],
            layout_args[1],
            "-q"
        );
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let output = cli!(
            "eval",
            &suite,
            "--rerun-failed",
            other.join("results.json"),
            "--out",
            &copy,
            "-q"
        );
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        assert_eq!(crate::support::files_under(&original), before, "{layout}");
        let fixed = suite_fixed(dir.path());
        let rerun = rerun_in_place(&fixed, &copy);
        assert_eq!(rerun.status.code(), Some(0), "{}", stderr(&rerun));
        let again = cli!(
            "eval",
            &fixed,
            "--out",
            &copy,
            "--trace-layout",
            layout,
            "-q"
        );
        assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
        assert_eq!(crate::support::files_under(&original), before, "{layout}");
    }
}

#[test]
fn logs_and_report_files_blocked_by_the_wrong_kind_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    // An MCP server is never started here: every case is refused first.
    let suite = suite_with_tools(
        dir.path(),
        r#"{"mcp_servers":[{"name":"m","command":["sh"]}]}"#,
    );
    let blocked_logs = dir.path().join("logs-file");
    std::fs::create_dir_all(&blocked_logs).unwrap();
    std::fs::write(blocked_logs.join("logs"), "not a folder").unwrap();
    let piped_log = dir.path().join("logs-pipe");
    std::fs::create_dir_all(piped_log.join("logs")).unwrap();
    Blocker::Pipe.make(&piped_log.join("logs/mcp-m.log"));
    for (out, says) in [
        (
            &blocked_logs,
            "logs` is not a folder, and the MCP servers' logs are written there",
        ),
        (
            &piped_log,
            "mcp-m.log` is a named pipe (FIFO), not a regular file",
        ),
    ] {
        let before = entries_under(out);
        let output = within_a_minute(&[
            "eval".as_ref(),
            suite.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ]);
        assert_refused(&output, says);
        assert_eq!(entries_under(out), before, "nothing made");
    }
    let tools_file = dir.path().join("tools.json");
    let log_dir = piped_log.join("logs");
    let output = within_a_minute(&[
        "tools".as_ref(),
        "--tools-file".as_ref(),
        tools_file.as_os_str(),
        "--log-dir".as_ref(),
        log_dir.as_os_str(),
    ]);
    assert_refused(&output, "--log-dir: ");

    // A socket is no report file; a pipe or a device is, and a device takes both.
    let plain = suite_fixed(dir.path());
    let socket = dir.path().join("report.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let out = dir.path().join("out");
    for flag in ["--junit", "--html"] {
        let output = cli!("eval", &plain, "--out", &out, flag, &socket, "-q");
        assert_refused(&output, &format!("{flag}: `"));
        assert!(
            stderr(&output).contains("is a socket, not a file"),
            "{}",
            stderr(&output)
        );
        assert!(!out.exists(), "nothing written");
    }
    let output = cli!(
        "eval",
        &plain,
        "--out",
        &out,
        "--junit",
        "/dev/null",
        "--html",
        "/dev/null",
        "-q"
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Merged results are a file to keep: a pipe is refused, not waited on.
    let merged_pipe = dir.path().join("merged.pipe");
    Blocker::Pipe.make(&merged_pipe);
    let results = out.join("results.json");
    let output = within_a_minute(&[
        "merge".as_ref(),
        results.as_os_str(),
        "--out".as_ref(),
        merged_pipe.as_os_str(),
    ]);
    assert_refused(&output, "is a named pipe (FIFO), not a regular file");
    let merged = dir.path().join("merged.json");
    let output = cli!("merge", &results, "--out", &merged, "--junit", &socket);
    assert_refused(&output, "--junit: ");
    assert!(!merged.exists());
    let output = cli!(
        "merge",
        &results,
        "--out",
        &merged,
        "--junit",
        "/dev/null",
        "--html",
        "/dev/null"
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // `DIR/traces` that is a file is named as such.
    let traces_file = dir.path().join("traces-file");
    std::fs::create_dir_all(&traces_file).unwrap();
    std::fs::write(traces_file.join("traces"), "not a folder").unwrap();
    let output = cli!("eval", &plain, "--out", &traces_file, "-q");
    assert_refused(
        &output,
        "traces` is not a folder, and eval writes its traces there",
    );
}

#[test]
fn one_evaluation_at_a_time_writes_an_output_folder() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out", &["a", "b"], &[]);
    let before = crate::support::files_under(&out);
    // Another process evaluating into the folder holds its lock.
    let held = crate::support::hold_folder_lock(&out, LockMode::Write);
    for extra in [&[][..], &["--resume"]] {
        let output = crate::support::looptrace()
            .arg("eval")
            .arg(&suite)
            .arg("--out")
            .arg(&out)
            .args(extra)
            .arg("-q")
            .output()
            .unwrap();
        assert_refused(&output, "is in use by another looptrace command");
        assert_eq!(crate::support::files_under(&out), before, "{extra:?}");
    }
    // A rerun reads the results only once it holds the lock: not while they are rewritten.
    let output = rerun_in_place(&suite, &out);
    assert_refused(&output, "--rerun-failed `");
    assert!(
        stderr(&output).contains("is in use by another looptrace command"),
        "{}",
        stderr(&output)
    );
    assert!(
        !stderr(&output).contains("nothing to rerun"),
        "{}",
        stderr(&output)
    );
    drop(held);
    // A rerun into another folder reads the results' folder to its end: not while it is
    // written, and no eval writes it meanwhile.
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let (failing, failed) = evaluated(&sub, "failed", &["a", "b"], &["b"]);
    let results = failed.join("results.json");
    let elsewhere = dir.path().join("elsewhere");
    let rerun_elsewhere = || {
        cli!(
            "eval",
            &failing,
            "--rerun-failed",
            &results,
            "--out",
            &elsewhere,
            "-q"
        )
    };
    let writing = crate::support::hold_folder_lock(&failed, LockMode::Write);
    assert_refused(
        &rerun_elsewhere(),
        "is being written by another looptrace eval",
    );
    assert!(!elsewhere.exists(), "nothing made");
    drop(writing);
    let reading = crate::support::hold_folder_lock(&failed, LockMode::Read);
    let output = cli!("eval", &failing, "--out", &failed, "-q");
    assert_refused(&output, "is in use by another looptrace command");
    let output = rerun_elsewhere();
    assert_eq!(
        output.status.code(),
        Some(1),
        "two readers: {}",
        stderr(&output)
    );
    drop(reading);
    // With one trace file, "nothing to rerun" still tidies what a crashed rerun left: it waits
    // its turn too.
    let single = dir.path().join("single");
    let output = cli!(
        "eval",
        &suite,
        "--out",
        &single,
        "--trace-layout",
        "single",
        "-q"
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let before = crate::support::files_under(&single);
    let held = crate::support::hold_folder_lock(&single, LockMode::Write);
    let output = rerun_in_place(&suite, &single);
    assert_refused(&output, "is in use by another looptrace command");
    assert_eq!(crate::support::files_under(&single), before);
    drop(held);
    let output = cli!("eval", &suite, "--out", &out, "-q");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// The suite of [`a_rerun_from_merged_results_needs_the_shards_traces_beside_them`] with every
/// expectation met.
fn suite_fixed(dir: &Path) -> PathBuf {
    suite(dir, "fixed.json", &["a", "b", "c"], &[])
}
