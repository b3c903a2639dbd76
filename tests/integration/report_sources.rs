//! Every source of events goes through the report's one fold: trace files (in chunks, on
//! several threads), standard input, a foreign file's imported events and a run store's named
//! runs. None of them is copied to a temporary file, and the runs the HTML page and `--list`
//! show are the runs the fold counts, row for row what the trace reader makes of each run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use looptrace::report::{Input, Options, RowMode, RunRow, analyze_runs};
use looptrace::trace::{ReadOptions, RunStream};

use super::support::{fixture, looptrace, sample, stderr, stdout};

/// Runs the binary with `args` and the temporary folder `tmp`, feeding `input` to its standard
/// input when given.
fn run_with_tmp(tmp: &Path, args: &[&str], input: Option<&[u8]>) -> Output {
    let mut command = looptrace();
    command
        .args(args)
        .env("TMPDIR", tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    if let Some(input) = input {
        stdin.write_all(input).unwrap();
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// Runs `args`, which must succeed and leave the temporary folder `tmp` empty.
fn succeeds_leaving_tmp_empty(tmp: &Path, args: &[&str]) {
    let output = run_with_tmp(tmp, args, None);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{args:?}: {}",
        stderr(&output)
    );
    assert_still_empty(tmp, &args.join(" "));
}

fn assert_still_empty(tmp: &Path, what: &str) {
    let left: Vec<PathBuf> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert!(
        left.is_empty(),
        "{what} left {left:?} in the temporary folder"
    );
}

fn codex_rollout() -> PathBuf {
    fixture("import/codex/rollout-2026-01-01T00-00-00-11111111-2222-3333-4444-555555555555.jsonl")
}

#[test]
fn foreign_files_are_read_without_a_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let outputs = tempfile::tempdir().unwrap();
    let rollout = codex_rollout();
    let rollout = rollout.to_str().unwrap();
    let page = outputs.path().join("page.html");
    let commands: Vec<Vec<&str>> = vec![
        vec!["report", rollout, "--format", "json"],
        vec!["report", rollout, "--list", "finished"],
        vec![
            "report",
            rollout,
            "-f",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
        vec!["show", rollout],
        vec!["export", "--otlp", rollout],
    ];
    for args in commands {
        succeeds_leaving_tmp_empty(tmp.path(), &args);
    }
    let report = run_with_tmp(tmp.path(), &["report", rollout, "--format", "json"], None);
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["input"]["runs"], 3);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("codex"), "the page names the source format");
}

#[test]
fn standard_input_makes_a_page_and_a_list_without_a_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = std::fs::read(fixture("report/html/planted.jsonl")).unwrap();
    let page = run_with_tmp(tmp.path(), &["report", "-", "-f", "html"], Some(&trace));
    assert_eq!(page.status.code(), Some(0), "{}", stderr(&page));
    assert!(stdout(&page).contains("<html"));
    let list = run_with_tmp(
        tmp.path(),
        &["report", "-", "--list", "incomplete"],
        Some(&trace),
    );
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    assert_still_empty(tmp.path(), "report - -f html / --list");
}

#[test]
fn a_run_store_with_one_trace_file_is_read_without_a_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let suite = sample("suite.json");
    let eval = looptrace()
        .args(["eval", suite.to_str().unwrap(), "--trace-layout", "single"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        matches!(eval.status.code(), Some(0 | 1)),
        "{}",
        stderr(&eval)
    );
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let rows = results["tasks"].as_array().unwrap().len() as u64;
    let out_arg = out.to_str().unwrap();
    for args in [
        vec!["report", out_arg, "--format", "json"],
        vec!["report", out_arg, "--list", "finished"],
        vec!["report", out_arg, "-f", "html"],
        vec!["show", out_arg],
        vec!["export", "--otlp", out_arg],
    ] {
        succeeds_leaving_tmp_empty(tmp.path(), &args);
    }
    let report = run_with_tmp(tmp.path(), &["report", out_arg, "--format", "json"], None);
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["input"]["runs"].as_u64(), Some(rows));
}

/// The rows of `path` as the trace reader groups its runs, one file at a time.
fn rows_by_the_trace_reader(path: &Path, file: u32) -> Vec<RunRow> {
    let stream = RunStream::open(path, ReadOptions::default()).unwrap();
    let mut runs: Vec<(u64, RunRow)> = stream
        .map(|run| {
            let run = run.unwrap();
            (run.index, RunRow::of(&run.run, file, "looptrace", true))
        })
        .collect();
    runs.sort_by_key(|(index, _)| *index);
    runs.into_iter().map(|(_, row)| row).collect()
}

#[test]
fn the_runs_table_is_the_folds_runs_however_the_input_is_split() {
    let mut traces: Vec<PathBuf> = std::fs::read_dir(sample(""))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    traces.sort();
    traces.extend(
        [
            "html/planted.jsonl",
            "mixed.jsonl",
            "reused_ids.jsonl",
            "spend.jsonl",
        ]
        .map(|name| fixture(&format!("report/{name}"))),
    );
    for trace in &traces {
        let by_reader = rows_by_the_trace_reader(trace, 0);
        // Chunks of a few bytes on three threads: runs are cut into pieces and joined again.
        for (chunk_size, threads) in [(8 << 20, 1), (97, 3), (1, 2)] {
            let options = Options {
                chunk_size,
                threads,
                rows: RowMode::Timelines,
                ..Options::default()
            };
            let (report, table) = analyze_runs(&[Input::path(trace)], &options, Vec::new())
                .unwrap_or_else(|err| panic!("{}: {err}", trace.display()));
            assert_eq!(
                table.rows,
                by_reader,
                "{} in chunks of {chunk_size}",
                trace.display()
            );
            assert_eq!(
                table.counts(),
                looptrace::run::RunOutcome::ALL.map(|e| report.exit_reasons.get(e)),
                "{}: the table counts the runs the report counts",
                trace.display()
            );
        }
    }
}

#[test]
fn the_list_is_the_page_without_timelines() {
    let trace = fixture("report/html/planted.jsonl");
    let fold = |rows| {
        let options = Options {
            rows,
            ..Options::default()
        };
        analyze_runs(&[Input::path(&trace)], &options, Vec::new())
            .unwrap()
            .1
    };
    let mut page = fold(RowMode::Timelines);
    assert!(page.rows.iter().any(|row| !row.timeline.is_empty()));
    for row in &mut page.rows {
        row.timeline.clear();
    }
    assert_eq!(fold(RowMode::Rows), page);
    assert!(fold(RowMode::Off).rows.is_empty());
}

#[test]
fn a_run_whose_events_span_two_files_is_listed_once_as_the_report_counts_it() {
    // Runs `a` and `b` begin in `1.jsonl` and end in `2.jsonl`: one run each, as the totals say.
    let split = fixture("report/split");
    let split = split.to_str().unwrap();
    let report = super::support::run(&["report", split, "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let list = super::support::run(&["report", split, "--list", "incomplete", "--format", "json"]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let incomplete = list["runs"].as_array().unwrap();
    let counted = report["exit_reasons"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["exit_reason"] == "incomplete")
        .unwrap()["runs"]
        .as_u64();
    assert_eq!(Some(incomplete.len() as u64), counted);
    assert_eq!(incomplete[0]["run_id"], "f");
    let finished = super::support::run(&["report", split, "--list", "finished"]);
    let finished = stdout(&finished);
    assert!(
        finished.contains(
            "split/1.jsonl       a       finished         4  division_by_zero,invalid_json"
        ),
        "the run is listed in the file it began in, with the error kinds of both parts:\n{finished}"
    );
}
