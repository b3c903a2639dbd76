//! What `eval` refuses before it runs anything, and what it must not leave out: report files
//! that would replace the evaluation's own files or a rerun's results, `--resume` over partial
//! or complete results of another command line, a runaway `--repeat`, a rerun's hand-edited
//! trace paths, outputs blocked by a folder or a file, a working-folder template holding a named
//! pipe; tasks added to a suite since the results a rerun updates; the HTML page of a single
//! trace file.

use std::path::{Path, PathBuf};
use std::process::Output;

use looptrace::eval::ResultsFile;
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
fn a_long_suite_name_gives_a_default_folder_a_file_system_takes() {
    let dir = tempfile::tempdir().unwrap();
    let task = json!({"id": "a", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "x"}]}});
    let name = "n".repeat(300);
    let suite = dir.path().join("suite.json");
    std::fs::write(&suite, json!({"name": name, "tasks": [task]}).to_string()).unwrap();
    let output = crate::support::looptrace()
        .args(["eval", "suite.json", "-q"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let folder = dir.path().join("looptrace-runs").join("n".repeat(200));
    assert!(folder.join("results.json").is_file());
}

#[test]
fn refusals_name_the_flag_given_and_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a"], &[]);
    let out = dir.path().join("out");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (args, message) in [
        (
            vec!["--repeat-until-decided", "10001"],
            "--repeat-until-decided must be at most 10000",
        ),
        (
            vec!["--otlp-endpoint", "notaurl"],
            "--otlp-endpoint `notaurl` is not an http:// or https:// URL",
        ),
    ] {
        let output = cli!("eval", &suite, "--out", &out, &args[0], &args[1]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(message), "{}", stderr(&output));
        assert!(!out.exists());
    }
    let output = cli!("eval", "--rebuild-view", &empty);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("holds no runs and no results: nothing to rebuild"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

#[test]
fn report_files_may_not_name_the_evaluations_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out", &["a", "b"], &[]);
    let run = crate::support::newest_run(&out);
    let before = crate::support::files_under(&out);
    for (flag, own, says) in [
        ("--html", out.join("results.json"), "is the output"),
        ("--junit", out.join("results.json"), "is the output"),
        (
            "--junit",
            run.join("rows.jsonl"),
            "where eval writes its runs",
        ),
        (
            "--html",
            run.join("traces/a.jsonl"),
            "where eval writes its runs",
        ),
    ] {
        let output = cli!("eval", &suite, "--out", &out, flag, &own, "-q");
        assert_refused(&output, says);
        assert_eq!(
            crate::support::files_under(&out),
            before,
            "{flag} {own:?}: nothing written"
        );
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
    let carried = crate::support::traces_of(&run).join("good.jsonl");
    let before = std::fs::read(&carried).unwrap();
    let results = run.join("results.json");
    let elsewhere = dir.path().join("elsewhere");
    // In place, into another folder, and as a baseline's trace.
    let cases: [(&[&str], &str); 3] = [
        (&["--rerun-failed"], "where eval writes its runs"),
        (
            &["--out", elsewhere.to_str().unwrap(), "--rerun-failed"],
            "an input",
        ),
        (
            &["--out", elsewhere.to_str().unwrap(), "--baseline"],
            "an input",
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
            if whose == "an input" {
                let input = format!("would overwrite the input `{}`", carried.display());
                assert_refused(&output, &input);
            } else {
                assert_refused(&output, whose);
            }
            assert_eq!(std::fs::read(&carried).unwrap(), before, "{args:?} {flag}");
            assert!(
                !elsewhere.exists(),
                "{args:?} {flag}: nothing may be written"
            );
        }
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
    // Beside the template is fine.
    let output = cli!("eval", &suite, "--out", dir.path().join("beside"), "-q");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
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
fn merge_reads_a_shard_while_an_evaluation_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = evaluated(dir.path(), "out", &["a", "b"], &[]);
    let merged = dir.path().join("merged.json");
    // Merge reads the view, replaced whole, and the sealed runs it names: no lock to wait for.
    let _writing = crate::support::hold_folder_lock(&out);
    let output = cli!("merge", out.join("results.json"), "--out", &merged, "-q");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
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
    assert!(crate::support::traces_of(&out).join("new.jsonl").is_file());

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
    assert!(
        crate::support::traces_of(&out)
            .join("later.jsonl")
            .is_file()
    );
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
/// A rerun takes the rows it carries over from the runs the results name, never from the results
/// file: a trace path edited into that file leads nowhere.
fn a_rerun_never_follows_the_trace_paths_of_the_results_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out", &["a", "b"], &["b"]);
    let path = out.join("results.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let run = format!(
        "runs/{}",
        original
            .split("\"eval_id\": \"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
    );
    for (i, bad) in [
        "../elsewhere.jsonl".to_owned(),
        "/etc/hostname".to_owned(),
        "traces/b.jsonl".to_owned(),
        format!("{run}/../../../x.jsonl"),
        "runs/0abc-def/traces/b.jsonl".to_owned(),
    ]
    .into_iter()
    .enumerate()
    {
        let mut edited: serde_json::Value = serde_json::from_str(&original).unwrap();
        edited["tasks"][0]["trace"] = json!(bad);
        std::fs::write(&path, edited.to_string()).unwrap();
        let again = dir.path().join(format!("again-{i}"));
        let output = cli!(
            "eval",
            &suite,
            "--rerun-failed",
            &path,
            "--out",
            &again,
            "-q"
        );
        assert_eq!(output.status.code(), Some(1), "{bad}: {}", stderr(&output));
        let view = results(&again.join("results.json"));
        for row in &view.tasks {
            let trace = row.trace.as_deref().unwrap_or_default();
            assert!(
                trace.starts_with("runs/") && !trace.contains(".."),
                "{bad}: {trace}"
            );
            assert!(again.join(trace).is_file(), "{bad}: {trace}");
        }
    }
}

#[test]
fn resume_refuses_a_run_of_another_shard_or_selection() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b", "c", "d", "e"], &[]);
    let out = dir.path().join("out");
    crashed_before_the_second_row(&suite, &out, &["--shard", "1/2"]);
    let run = crate::support::newest_run(&out);
    let header: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("header.json")).unwrap()).unwrap();
    assert_eq!(header["shard"], json!({"index": 1, "count": 2}));
    let before = crate::support::files_under(&out);
    for (extra, says) in OTHER_SHARDS.into_iter().chain::<[(&[&str], &str); 1]>([(
        &["--shard", "1/2", "--skip", "e"],
        "written with no --only or --skip, this eval has --skip \"e\"",
    )]) {
        let output = resume(&suite, &out, extra);
        assert_refused(&output, says);
        assert_eq!(crate::support::files_under(&out), before, "nothing written");
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
    assert_refused(&output, "gather them beside the merged file first");
    assert!(!again.exists());

    // Gathered as the message says (run ids are unique, so the shards' runs sit side by side),
    // the rerun leaves a folder that stands on its own.
    std::fs::create_dir(merged.join("runs")).unwrap();
    for shard in ["shard1", "shard2"] {
        let status = std::process::Command::new("cp")
            .arg("-r")
            .args(
                std::fs::read_dir(dir.path().join(shard).join("runs"))
                    .unwrap()
                    .map(|e| e.unwrap().path()),
            )
            .arg(merged.join("runs"))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let output = rerun();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let rows = results(&again.join("results.json"));
    for row in &rows.tasks {
        assert!(
            again.join(row.trace.as_deref().unwrap()).is_file(),
            "{}",
            row.id
        );
    }
    assert_eq!(rows.tasks.len(), 3);
    // The shards' runs were copied, so `again` stands on its own: 2 shards and the rerun.
    assert_eq!(std::fs::read_dir(again.join("runs")).unwrap().count(), 3);
}

#[test]
fn outputs_blocked_by_a_folder_a_file_or_a_pipe_are_refused_before_any_task_runs() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "suite.json", &["a", "b"], &[]);
    std::fs::create_dir_all(dir.path().join("templated/tpl")).unwrap();
    let with_template = suite_with_template(&dir.path().join("templated"));
    // Where a file goes, a folder or a named pipe; where a folder goes, a file. Everything
    // under `runs/` is made new, so only the view and the `runs` folder itself can be blocked.
    let cases: [(&str, Blocker, &[&str], &Path, &str); 4] = [
        (
            "results.json",
            Blocker::Folder,
            &[],
            &suite,
            "is a folder, not a file",
        ),
        (
            "results.json",
            Blocker::Pipe,
            &[],
            &suite,
            "results.json` is a named pipe (FIFO)",
        ),
        (
            "runs",
            Blocker::File,
            &[],
            &suite,
            "runs` is not a folder, and eval writes its runs there",
        ),
        (
            "runs",
            Blocker::File,
            &[],
            &with_template,
            "runs` is not a folder, and eval writes its runs there",
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
    // The servers' logs go in the run's own new folder, unless `--log-dir` names another.
    let piped_log = dir.path().join("logs-pipe");
    std::fs::create_dir_all(piped_log.join("logs")).unwrap();
    Blocker::Pipe.make(&piped_log.join("logs/mcp-m.log"));
    let out = dir.path().join("logged");
    let log_dir = piped_log.join("logs");
    let output = within_a_minute(&[
        "eval".as_ref(),
        suite.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--log-dir".as_ref(),
        log_dir.as_os_str(),
    ]);
    assert_refused(
        &output,
        "mcp-m.log` is a named pipe (FIFO), not a regular file",
    );
    assert!(!out.exists(), "nothing made");
    let tools_file = dir.path().join("tools.json");
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
    // `DIR/runs` that is a file is named as such.
    let runs_file = dir.path().join("runs-file");
    std::fs::create_dir_all(&runs_file).unwrap();
    std::fs::write(runs_file.join("runs"), "not a folder").unwrap();
    let output = cli!("eval", &plain, "--out", &runs_file, "-q");
    assert_refused(
        &output,
        "runs` is not a folder, and eval writes its runs there",
    );
}

#[test]
fn one_evaluation_at_a_time_writes_an_output_folder() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out", &["a", "b"], &[]);
    let before = crate::support::files_under(&out);
    // Another process evaluating into the folder holds its lock.
    let held = crate::support::hold_folder_lock(&out);
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
    // A rerun into another folder reads the results' view and the sealed runs it names, which
    // an evaluation writing that folder meanwhile never changes: it takes no lock there.
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
    let writing = crate::support::hold_folder_lock(&failed);
    let output = rerun_elsewhere();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    drop(writing);
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
    let held = crate::support::hold_folder_lock(&single);
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
