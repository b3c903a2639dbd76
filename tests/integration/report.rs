//! `looptrace report`: every section on hand-made traces with known answers, the inputs it
//! accepts, its tolerance of imperfect files, its errors, and snapshots of each format.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use looptrace::report::{self, Input, Options, Report, StepStats, StepSummary};
use looptrace::run::{ExitReason, RunOutcome};
use serde_json::{Value, json};

use crate::support::{fixture, looptrace, stderr, stdout};

/// Fixtures are named relative to the crate so that the names in reports do not depend on
/// where the checkout is.
const DIR: &str = "tests/fixtures/report";

fn run_in_crate(args: &[&str]) -> Output {
    looptrace()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("failed to start looptrace")
}

fn path(name: &str) -> String {
    format!("{DIR}/{name}")
}

/// The JSON report of `args`, which must succeed.
fn report_json(args: &[&str]) -> Value {
    let mut all = vec!["report", "--format", "json"];
    all.extend_from_slice(args);
    let output = run_in_crate(&all);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    serde_json::from_str(&stdout(&output)).expect("the json format is JSON")
}

/// `[finished, max_steps_exceeded, invalid_model_output, internal_error, incomplete]` runs.
fn exit_counts(exit_reasons: &Value) -> Vec<u64> {
    let rows = exit_reasons["rows"].as_array().expect("rows");
    let names: Vec<&str> = rows
        .iter()
        .map(|row| row["exit_reason"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "finished",
            "max_steps_exceeded",
            "invalid_model_output",
            "internal_error",
            "incomplete"
        ]
    );
    rows.iter()
        .map(|row| row["runs"].as_u64().expect("runs"))
        .collect()
}

fn warning_messages(report: &Value) -> Vec<String> {
    let warnings = report["warnings"].as_array().expect("warnings");
    warnings
        .iter()
        .map(|warning| warning["message"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn analyze(paths: &[&Path], options: &Options) -> Report {
    let inputs: Vec<Input> = paths.iter().map(|path| Input::path(*path)).collect();
    report::analyze(&inputs, options, Vec::new()).expect("the report is produced")
}

/// The parts of a report that must not depend on how the input is split.
fn numbers(report: &Report) -> impl PartialEq + std::fmt::Debug + '_ {
    (
        report.input.lines,
        report.input.events,
        report.exit_reasons,
        report.budget,
        &report.invalid_output,
        &report.tools,
        report.steps,
        &report.internal_errors,
        report.spend,
    )
}

#[test]
fn the_write_up_lines_read_as_one_finished_run() {
    let report = report_json(&[&path("write_up.jsonl")]);
    assert_eq!(exit_counts(&report["exit_reasons"]), [1, 0, 0, 0, 0]);
    assert_eq!(
        report["tools"],
        json!([{ "tool": "calculator", "calls": 1, "errors": 0, "error_rate": 0.0, "errors_by_kind": {} }])
    );
    // No `steps_used`: the largest step of the run.
    assert_eq!(
        report["steps"][0],
        json!({ "exit_reason": "finished", "runs": 1, "min": 2, "median": 2, "p90": 2, "max": 2 })
    );
    assert_eq!(report["warnings"], json!([]));
}

#[test]
fn token_sums_stop_at_the_largest_count_instead_of_wrapping() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("huge.jsonl");
    let usage = json!({"input_tokens": u64::MAX, "output_tokens": u64::MAX});
    let mut text = String::new();
    for run in ["a", "b", "c"] {
        for line in [
            json!({"run_id": run, "step": 0, "event_type": "run_started"}),
            json!({"run_id": run, "step": 1, "event_type": "model_action", "action_type": "finish", "usage": usage}),
            json!({"run_id": run, "step": 1, "event_type": "run_finished", "exit_reason": "finished", "usage": usage}),
        ] {
            text.push_str(&format!("{line}\n"));
        }
    }
    fs::write(&trace, text).unwrap();
    let report = report_json(&[trace.to_str().unwrap()]);
    assert_eq!(report["spend"][0]["input_tokens"], u64::MAX);
    assert_eq!(report["spend"][0]["output_tokens"], u64::MAX);
}

#[test]
fn budgets_tokens_cost_and_duration_have_the_known_answers() {
    let report = report_json(&[&path("spend.jsonl")]);
    assert_eq!(exit_counts(&report["exit_reasons"]), [2, 4, 0, 0, 1]);
    let by_budget: Vec<(String, u64)> = report["budget_exhaustion"]["by_budget"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["budget"].as_str().unwrap().to_owned(),
                row["runs"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("steps", 1),
        ("tokens", 1),
        ("cost", 0),
        ("time", 0),
        ("context", 1),
        ("other", 1),
    ];
    assert_eq!(
        by_budget,
        expected.map(|(name, runs)| (name.to_owned(), runs))
    );
    let spend = &report["spend"];
    // r1's ending holds its total (not added to its turns'); r2 has turn usage only, and its
    // duration is the span of its times (2.5 s), not its one call's 7 ms.
    assert_eq!(
        spend[0],
        json!({"exit_reason": "finished", "runs": 2, "runs_with_tokens": 2, "input_tokens": 280,
               "output_tokens": 40, "runs_with_cost": 1, "cost_usd": 0.375,
               "runs_with_duration": 2, "duration_ms": 2510.0})
    );
    assert_eq!(
        spend[1],
        json!({"exit_reason": "max_steps_exceeded", "runs": 4, "runs_with_tokens": 1,
               "input_tokens": 1000, "output_tokens": 200, "runs_with_cost": 1, "cost_usd": 0.5,
               "runs_with_duration": 1, "duration_ms": 60000.0})
    );
    assert_eq!(
        spend[2],
        json!({"exit_reason": "invalid_model_output", "runs": 0, "runs_with_tokens": 0,
               "input_tokens": null, "output_tokens": null, "runs_with_cost": 0, "cost_usd": null,
               "runs_with_duration": 0, "duration_ms": null})
    );
    assert_eq!(spend[4]["input_tokens"], 7);
    assert_eq!(spend[4]["output_tokens"], 3);

    let table = stdout(&run_in_crate(&["report", &path("spend.jsonl")]));
    assert!(
        table.contains(
            "Budget exhaustion by budget (share of the 4 runs that ended max_steps_exceeded)"
        ),
        "{table}"
    );
    let csv = stdout(&run_in_crate(&[
        "report",
        "--format",
        "csv",
        &path("spend.jsonl"),
    ]));
    for row in [
        "budget_by_kind,context,,runs,1",
        "spend,finished,,input tokens,280",
        "spend,finished,,cost (USD),0.3750",
        "spend,finished,,duration (s),2.510",
        "spend,finished,,mean duration (s),1.255",
        "spend,max_steps_exceeded,,with tokens,1",
        "spend,invalid_model_output,,input tokens,",
    ] {
        assert!(csv.lines().any(|line| line == row), "{row} not in\n{csv}");
    }
    let markdown = stdout(&run_in_crate(&[
        "report",
        "--format",
        "markdown",
        &path("spend.jsonl"),
    ]));
    assert!(
        markdown.contains(
            "| max_steps_exceeded | 4 | 1 | 1000 | 200 | 1 | 0.5000 | 1 | 60.000 | 60.000 |"
        ),
        "{markdown}"
    );
}

#[test]
fn every_section_of_a_mixed_trace_has_the_known_answer() {
    let report = report_json(&[&path("mixed.jsonl")]);
    assert_eq!(
        report["input"],
        json!({ "files": 1, "lines": 35, "events": 34, "runs": 7, "skipped_lines": 0 })
    );
    let exit = &report["exit_reasons"];
    assert_eq!(exit_counts(exit), [2, 1, 1, 2, 1]);
    assert_eq!(exit["runs"], 7);
    assert_eq!(exit["rows"][0]["share"], 0.2857);
    assert_eq!(exit["rows"][4]["share"], 0.1429);
    assert_eq!(
        report["budget_exhaustion"],
        json!({
            "runs": 1,
            "tool_successes": { "total": 1, "mean_per_run": 1.0 },
            "tool_errors": { "total": 1, "mean_per_run": 1.0 },
            "model_feedback": { "total": 1, "mean_per_run": 1.0 },
            "by_budget": [
                { "budget": "steps", "runs": 1, "share": 1.0 },
                { "budget": "tokens", "runs": 0, "share": 0.0 },
                { "budget": "cost", "runs": 0, "share": 0.0 },
                { "budget": "time", "runs": 0, "share": 0.0 },
                { "budget": "context", "runs": 0, "share": 0.0 },
                { "budget": "other", "runs": 0, "share": 0.0 },
            ],
        })
    );
    assert_eq!(
        report["invalid_output"],
        json!({
            "feedback_by_kind": { "invalid_json": 2, "missing_field": 2, "unclassified": 1 },
            "endings_by_kind": { "missing_field": 1 },
            "runs_with_feedback": 4,
            "recovered": 2,
            "recovered_share": 0.5,
        })
    );
    // The observation of run `e` names no tool: it belongs to the run's latest call, `search`,
    // and has no `error_kind`.
    assert_eq!(
        report["tools"],
        json!([
            { "tool": "calculator", "calls": 4, "errors": 1, "error_rate": 0.25, "errors_by_kind": { "division_by_zero": 1 } },
            { "tool": "search", "calls": 2, "errors": 1, "error_rate": 0.5, "errors_by_kind": { "unclassified": 1 } },
            { "tool": "serach", "calls": 1, "errors": 1, "error_rate": 1.0, "errors_by_kind": { "unknown_tool": 1 } },
        ])
    );
    assert_eq!(
        report["steps"],
        json!([
            { "exit_reason": "finished", "runs": 2, "min": 2, "median": 2, "p90": 4, "max": 4 },
            { "exit_reason": "max_steps_exceeded", "runs": 1, "min": 3, "median": 3, "p90": 3, "max": 3 },
            { "exit_reason": "invalid_model_output", "runs": 1, "min": 2, "median": 2, "p90": 2, "max": 2 },
            { "exit_reason": "internal_error", "runs": 2, "min": 1, "median": 1, "p90": 2, "max": 2 },
            { "exit_reason": "incomplete", "runs": 1, "min": 1, "median": 1, "p90": 1, "max": 1 },
        ])
    );
    // The bare `internal_error` event of run `e` ends it, with no kind recorded.
    assert_eq!(
        report["internal_errors"],
        json!({ "runs": 2, "by_kind": { "model_connection": 1, "unclassified": 1 } })
    );
    assert_eq!(
        warning_messages(&report),
        ["1 event of unknown type `heartbeat` ignored"]
    );
}

#[test]
fn zero_rows_are_shown_and_an_empty_input_is_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    fs::write(&empty, "\n\n").unwrap();
    let output = looptrace().args(["report"]).arg(&empty).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(
        text.contains("Exit reasons (share of all 0 runs)"),
        "{text}"
    );
    for ending in RunOutcome::ALL {
        assert!(
            text.contains(&format!("│ {:<20} ┆    0 ┆     - │", ending.as_str())),
            "{ending}: {text}"
        );
    }
}

#[test]
fn a_cut_off_last_line_is_a_warning_and_its_run_is_incomplete() {
    let report = report_json(&[&path("cut_off.jsonl")]);
    assert_eq!(exit_counts(&report["exit_reasons"]), [1, 0, 0, 0, 1]);
    assert_eq!(report["steps"][4]["max"], 1);
    assert_eq!(
        warning_messages(&report),
        [format!(
            "{DIR}/cut_off.jsonl:6: cut-off last line (a write cut short) skipped"
        )]
    );
}

#[test]
fn a_write_cut_short_before_the_next_run_is_a_warning_and_its_run_is_incomplete() {
    let report = report_json(&[&path("cut_write.jsonl")]);
    // `a` lost its ending with the cut line; `c` lost its only line, so it is not seen.
    assert_eq!(exit_counts(&report["exit_reasons"]), [1, 1, 0, 0, 1]);
    assert_eq!(
        warning_messages(&report),
        [
            format!(
                "{DIR}/cut_write.jsonl:2: a write cut short (the next line starts a run) skipped"
            ),
            format!(
                "{DIR}/cut_write.jsonl:7: a write cut short (the next line starts a run) skipped"
            ),
        ]
    );
    let show = run_in_crate(&["show", &path("cut_write.jsonl")]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    assert!(
        stdout(&show).contains("run a (1 event)"),
        "{}",
        stdout(&show)
    );
    assert_eq!(stderr(&show).matches("a write cut short").count(), 2);
}

#[test]
fn folders_are_searched_recursively_in_sorted_order_for_jsonl_files() {
    let report = report_json(&["--by", "file", &path("split")]);
    let by_file = report["exit_reasons_by_file"].as_array().expect("by file");
    let files: Vec<&str> = by_file
        .iter()
        .map(|file| file["file"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        files,
        [
            path("split/1.jsonl"),
            path("split/2.jsonl"),
            path("split/more/3.jsonl")
        ]
    );
    // A run belongs to the file with its ending, or with its last event if incomplete.
    let counts: Vec<Vec<u64>> = by_file
        .iter()
        .map(|file| exit_counts(&file["exit_reasons"]))
        .collect();
    assert_eq!(
        counts,
        [
            vec![0, 0, 0, 0, 0],
            vec![1, 1, 1, 1, 0],
            vec![1, 0, 0, 1, 1]
        ]
    );
    assert_eq!(report["input"]["files"], 3);
}

#[test]
fn lines_split_across_files_mid_run_give_the_numbers_of_one_file() {
    let mut one = report_json(&[&path("mixed.jsonl")]);
    let mut split = report_json(&[&path("split")]);
    assert_eq!(
        warning_messages(&split)[1..],
        [
            format!("run id `b` appears in `{DIR}/split/1.jsonl`, `{DIR}/split/2.jsonl`"),
            format!("run id `a` appears in `{DIR}/split/1.jsonl`, `{DIR}/split/2.jsonl`"),
            format!("run id `e` appears in `{DIR}/split/2.jsonl`, `{DIR}/split/more/3.jsonl`"),
        ]
    );
    for report in [&mut one, &mut split] {
        report["input"]["files"] = json!(null);
        report["warnings"] = json!(null);
    }
    assert_eq!(one, split);
}

#[test]
fn a_reused_run_id_begins_a_new_run_at_each_start_and_after_each_ending() {
    let report = report_json(&[&path("reused_ids.jsonl")]);
    // The first run is cut short by the second start; the observation after the first ending
    // begins a run of its own that the third start cuts short.
    assert_eq!(exit_counts(&report["exit_reasons"]), [2, 0, 0, 0, 2]);
    assert_eq!(
        report["steps"][4],
        json!({ "exit_reason": "incomplete", "runs": 2, "min": 1, "median": 1, "p90": 3, "max": 3 })
    );
    // That observation had no tool call in its run.
    assert_eq!(report["tools"][0]["tool"], "(unknown)");
    assert_eq!(
        report["tools"][0]["errors_by_kind"],
        json!({ "timeout": 1 })
    );
}

#[test]
fn every_chunk_size_and_every_two_way_split_give_the_same_numbers() {
    for name in [
        "mixed.jsonl",
        "reused_ids.jsonl",
        "cut_write.jsonl",
        "spend.jsonl",
    ] {
        let trace = fixture(&format!("report/{name}"));
        let whole = analyze(&[&trace], &Options::default());
        for chunk_size in (1..=64).chain([100, 150, 333, 1000]) {
            for threads in [1, 2] {
                let options = Options {
                    chunk_size,
                    threads,
                    ..Options::default()
                };
                let chunked = analyze(&[&trace], &options);
                assert_eq!(
                    numbers(&chunked),
                    numbers(&whole),
                    "{name}: chunk size {chunk_size}, {threads} threads"
                );
                assert_eq!(
                    chunked.warnings, whole.warnings,
                    "{name}: chunk size {chunk_size}"
                );
            }
        }
        if name == "cut_write.jsonl" {
            // A cut line at the end of one file is not followed by the next file's first line.
            continue;
        }
        let content = fs::read(&trace).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (dir.path().join("1.jsonl"), dir.path().join("2.jsonl"));
        let line_ends = (0..content.len())
            .filter(|&at| content[at] == b'\n')
            .map(|at| at + 1);
        for cut in line_ends {
            fs::write(&first, &content[..cut]).unwrap();
            fs::write(&second, &content[cut..]).unwrap();
            let options = Options {
                chunk_size: 200,
                ..Options::default()
            };
            let split = analyze(&[&first, &second], &options);
            assert_eq!(
                numbers(&split),
                numbers(&whole),
                "{name}: split after byte {cut}"
            );
        }
    }
}

#[test]
fn standard_input_reads_like_a_file() {
    let mut child = looptrace()
        .args(["report", "--format", "json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let content = fs::read(fixture("report/mixed.jsonl")).unwrap();
    child.stdin.take().unwrap().write_all(&content).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let from_stdin: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(from_stdin, report_json(&[&path("mixed.jsonl")]));
}

#[test]
fn run_ids_in_two_files_are_a_warning_and_still_two_runs() {
    let report = report_json(&[&path("dup")]);
    assert_eq!(exit_counts(&report["exit_reasons"]), [2, 1, 0, 0, 0]);
    assert_eq!(
        warning_messages(&report),
        [format!(
            "run id `same` appears in `{DIR}/dup/one.jsonl`, `{DIR}/dup/two.jsonl`"
        )]
    );
    // The same file named twice is read once.
    let twice = report_json(&[&path("dup/one.jsonl"), &path("dup")]);
    assert_eq!(twice["input"]["files"], 2);
}

#[test]
fn a_malformed_line_is_an_error_with_its_place_unless_lenient() {
    let output = run_in_crate(&["report", &path("bad/middle.jsonl")]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: {DIR}/bad/middle.jsonl:2: expected `,` or `}}` after a value at column 52\n"
        )
    );
    assert_eq!(stdout(&output), "");

    let report = report_json(&["--lenient", &path("bad/middle.jsonl")]);
    assert_eq!(exit_counts(&report["exit_reasons"]), [1, 0, 0, 0, 0]);
    assert_eq!(report["input"]["skipped_lines"], 1);
    assert_eq!(
        warning_messages(&report),
        [format!(
            "{DIR}/bad/middle.jsonl: skipped 1 malformed line, the first at line 2: expected `,` or `}}` after a value at column 52"
        )]
    );
}

#[test]
fn bad_input_is_an_error_naming_the_file_and_line() {
    let cases = [
        ("bad/utf8.jsonl", "2: invalid UTF-8"),
        ("bad/no_run_id.jsonl", "1: missing `run_id`"),
        ("bad/exit_reason.jsonl", "2: unknown exit reason `timeout`"),
    ];
    for (name, problem) in cases {
        let output = run_in_crate(&["report", &path(name)]);
        assert_eq!(output.status.code(), Some(2), "{name}");
        assert_eq!(stderr(&output), format!("error: {DIR}/{name}:{problem}\n"));
    }
    let output = run_in_crate(&["report", &path("missing.jsonl")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).starts_with(&format!("error: failed to read `{DIR}/missing.jsonl`: ")),
        "{}",
        stderr(&output)
    );
    let output = run_in_crate(&["report", "-", "-"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "error: `-` (standard input) given more than once\n"
    );
}

#[test]
fn a_line_over_16_mib_is_an_error_not_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    let mut file = fs::File::create(&big).unwrap();
    writeln!(
        file,
        r#"{{"run_id":"r","step":0,"event_type":"run_started","input_summary":"x"}}"#
    )
    .unwrap();
    write!(
        file,
        r#"{{"run_id":"r","step":1,"event_type":"model_action","output":""#
    )
    .unwrap();
    file.write_all(&vec![b'a'; 17 << 20]).unwrap();
    writeln!(file, r#""}}"#).unwrap();
    drop(file);
    let output = looptrace().arg("report").arg(&big).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: {}:2: line is longer than 16777216 bytes\n",
            big.display()
        )
    );

    // The limit is a parameter of the library, and chunks of every size find the same line.
    for chunk_size in [64, 1000, 1 << 20] {
        let options = Options {
            max_line: 4096,
            chunk_size,
            ..Options::default()
        };
        let inputs = [Input::path(&big)];
        match report::analyze(&inputs, &options, Vec::new()) {
            Err(err) => assert_eq!(
                err.to_string(),
                format!("{}:2: line is longer than 4096 bytes", big.display())
            ),
            Ok(_) => panic!("a line over the limit must fail"),
        }
    }
}

/// Compares `actual` with the checked-in snapshot, or rewrites it with `LOOPTRACE_BLESS=1`.
fn check_snapshot(name: &str, actual: &str) {
    let file = fixture(&format!("report/snapshots/{name}"));
    if std::env::var_os("LOOPTRACE_BLESS").is_some_and(|value| value == "1") {
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, actual).unwrap();
        return;
    }
    let expected = fs::read_to_string(&file).unwrap_or_else(|err| {
        panic!(
            "missing snapshot {} ({err}); run with LOOPTRACE_BLESS=1",
            file.display()
        )
    });
    assert!(
        expected == actual,
        "{name} differs from its snapshot; rerun with LOOPTRACE_BLESS=1 to update\n{actual}"
    );
}

#[test]
fn every_format_matches_its_snapshot() {
    for (format, extension) in [
        ("table", "txt"),
        ("json", "json"),
        ("markdown", "md"),
        ("csv", "csv"),
    ] {
        let output = run_in_crate(&[
            "report",
            "--by",
            "file",
            "--format",
            format,
            &path("split"),
            &path("cut_off.jsonl"),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        check_snapshot(&format!("split.{extension}"), &stdout(&output));
    }
}

/// One generated event: run id, step, and what it is.
#[derive(Debug, Clone)]
enum Gen {
    Start,
    Call(&'static str),
    Observation(Option<&'static str>, bool),
    Feedback,
    End(RunOutcome),
    BareInternalError,
}

fn gen_line(run_id: &str, step: u64, event: &Gen) -> String {
    let head = format!(r#"{{"run_id":"{run_id}","step":{step},"event_type":"#);
    match event {
        Gen::Start => format!(r#"{head}"run_started","input_summary":"chars=1;sha256=aa"}}"#),
        Gen::Call(tool) => format!(
            r#"{head}"model_action","action_type":"tool_call","tool_name":"{tool}","argument_keys":[]}}"#
        ),
        Gen::Observation(tool, is_error) => {
            let tool = tool
                .map(|tool| format!(r#""tool_name":"{tool}","#))
                .unwrap_or_default();
            format!(
                r#"{head}"observation",{tool}"output":"chars=1;sha256=bb","is_error":{is_error}}}"#
            )
        }
        Gen::Feedback => {
            format!(r#"{head}"model_feedback","output":"chars=1;sha256=cc","is_error":true}}"#)
        }
        Gen::End(ending) => format!(r#"{head}"run_finished","exit_reason":"{ending}"}}"#),
        Gen::BareInternalError => {
            format!(r#"{head}"internal_error","error":"chars=1;sha256=dd"}}"#)
        }
    }
}

/// Exit counts, (tool, calls, errors), budget exhaustion (runs, successes, errors, feedback),
/// (runs with feedback, recovered), and the steps of each ending.
type Summary = (
    Vec<u64>,
    Vec<(String, u64, u64)>,
    (u64, u64, u64, u64),
    (u64, u64),
    Vec<StepStats>,
);

/// Nearest-rank statistics of a list of steps.
fn step_stats(mut steps: Vec<u64>) -> StepStats {
    steps.sort_unstable();
    let rank = |percent: usize| steps[(percent * steps.len()).div_ceil(100).max(1) - 1];
    let summary = (!steps.is_empty()).then(|| StepSummary {
        min: steps[0],
        median: rank(50),
        p90: rank(90),
        max: steps[steps.len() - 1],
    });
    StepStats {
        runs: steps.len() as u64,
        summary,
    }
}

/// What the report must find, computed the obvious way: one pass, one map of open runs.
fn expected(events: &[(usize, u64, Gen)]) -> Summary {
    #[derive(Default)]
    struct Run {
        successes: u64,
        errors: u64,
        feedback: u64,
        last_tool: Option<&'static str>,
        max_step: u64,
    }
    let mut exits = vec![0u64; 5];
    let mut steps: Vec<Vec<u64>> = vec![Vec::new(); 5];
    let mut tools: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut budget = (0, 0, 0, 0);
    let mut recovery = (0, 0);
    let mut open: std::collections::HashMap<usize, Run> = Default::default();
    let mut fold = |run: Run, ending: RunOutcome| {
        exits[ending.index()] += 1;
        steps[ending.index()].push(run.max_step);
        if ending == RunOutcome::Ended(ExitReason::MaxStepsExceeded) {
            budget = (
                budget.0 + 1,
                budget.1 + run.successes,
                budget.2 + run.errors,
                budget.3 + run.feedback,
            );
        }
        if run.feedback > 0 {
            recovery.0 += 1;
            recovery.1 += u64::from(ending == RunOutcome::Ended(ExitReason::Finished));
        }
    };
    for (id, step, event) in events {
        if let Gen::Start = event {
            if let Some(run) = open.remove(id) {
                fold(run, RunOutcome::Incomplete);
            }
            open.insert(*id, Run::default());
        }
        let run = open.entry(*id).or_default();
        run.max_step = run.max_step.max(*step);
        match event {
            Gen::Start => {}
            Gen::Call(tool) => {
                tools.entry(tool.to_string()).or_default().0 += 1;
                run.last_tool = Some(tool);
            }
            Gen::Observation(tool, is_error) => {
                if *is_error {
                    run.errors += 1;
                    let tool = tool.or(run.last_tool).unwrap_or("(unknown)");
                    tools.entry(tool.to_owned()).or_default().1 += 1;
                } else {
                    run.successes += 1;
                }
            }
            Gen::Feedback => run.feedback += 1,
            Gen::End(ending) => {
                if let Some(run) = open.remove(id) {
                    fold(run, *ending);
                }
            }
            Gen::BareInternalError => {
                if let Some(run) = open.remove(id) {
                    fold(run, RunOutcome::Ended(ExitReason::InternalError));
                }
            }
        }
    }
    for (_, run) in open {
        fold(run, RunOutcome::Incomplete);
    }
    let tools = tools
        .into_iter()
        .map(|(name, (calls, errors))| (name, calls, errors))
        .collect();
    let steps = steps.into_iter().map(step_stats).collect();
    (exits, tools, budget, recovery, steps)
}

fn found(report: &Report) -> Summary {
    let exits = RunOutcome::ALL
        .iter()
        .map(|&ending| report.exit_reasons.get(ending))
        .collect();
    let tools = report
        .tools
        .iter()
        .map(|tool| (tool.name.clone(), tool.calls, tool.errors))
        .collect();
    let budget = report.budget;
    let budget = (
        budget.runs,
        budget.tool_successes,
        budget.tool_errors,
        budget.feedback,
    );
    let recovery = (
        report.invalid_output.runs_with_feedback,
        report.invalid_output.recovered,
    );
    (exits, tools, budget, recovery, report.steps.to_vec())
}

fn gen_event() -> impl proptest::strategy::Strategy<Value = (usize, u64, Gen)> {
    use proptest::prelude::*;
    let tool = prop_oneof![Just("calculator"), Just("search")];
    let event = prop_oneof![
        3 => Just(Gen::Start),
        3 => tool.clone().prop_map(Gen::Call),
        4 => (proptest::option::of(tool), any::<bool>()).prop_map(|(tool, is_error)| Gen::Observation(tool, is_error)),
        1 => Just(Gen::Feedback),
        2 => proptest::sample::select(&RunOutcome::ALL[..4]).prop_map(Gen::End),
        1 => Just(Gen::BareInternalError),
    ];
    (0usize..3, 0u64..6, event)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// Any sequence of events, in any chunks and split into any files, reads as one stream.
    #[test]
    fn any_split_of_any_trace_reads_as_one_stream(
        events in proptest::collection::vec(gen_event(), 0..60),
        cuts in proptest::collection::vec(0usize..60, 0..4),
        chunk_size in 1usize..400,
    ) {
        let ids = ["a", "b", "c"];
        let lines: Vec<String> = events.iter().map(|(id, step, event)| gen_line(ids[*id], *step, event)).collect();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut.min(lines.len())).collect();
        cuts.sort_unstable();
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        let mut from = 0;
        for (at, &to) in cuts.iter().chain([lines.len()].iter()).enumerate() {
            let path = dir.path().join(format!("{at}.jsonl"));
            let text: String = lines[from..to].iter().map(|line| format!("{line}\n")).collect();
            fs::write(&path, text).unwrap();
            paths.push(path);
            from = to;
        }
        let paths: Vec<&Path> = paths.iter().map(|path| path.as_path()).collect();
        let options = Options { chunk_size, ..Options::default() };
        let report = analyze(&paths, &options);
        proptest::prop_assert_eq!(found(&report), expected(&events));
    }
}

/// One finished run of `run_id` as trace lines.
fn finished_run(run_id: &str) -> String {
    format!(
        "{{\"run_id\":\"{run_id}\",\"step\":0,\"event_type\":\"run_started\"}}\n\
         {{\"run_id\":\"{run_id}\",\"step\":1,\"event_type\":\"run_finished\",\"exit_reason\":\"finished\",\"steps_used\":1}}\n"
    )
}

#[test]
fn more_than_twenty_run_ids_in_three_files_are_listed_then_counted() {
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<String> = (0..21).map(|n| format!("task-{n:02}")).collect();
    for eval in ["a", "b", "c"] {
        let folder = dir.path().join(eval);
        fs::create_dir(&folder).unwrap();
        let lines: String = ids.iter().map(|id| finished_run(id)).collect();
        fs::write(folder.join("trace.jsonl"), lines).unwrap();
    }
    let output = looptrace()
        .args(["report", "--format", "json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(exit_counts(&report["exit_reasons"]), [63, 0, 0, 0, 0]);
    let messages = warning_messages(&report);
    let listed: Vec<&String> = messages
        .iter()
        .filter(|message| message.starts_with("run id `"))
        .collect();
    assert_eq!(listed.len(), 20, "{messages:?}");
    // Each listed id names all three files.
    assert!(
        listed
            .iter()
            .all(|message| message.matches(".jsonl`").count() == 3)
    );
    assert!(
        messages.contains(&"1 more run ids appear in more than one file".to_owned()),
        "{messages:?}"
    );
}

#[test]
fn a_hard_linked_trace_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("a.jsonl");
    fs::write(&first, finished_run("only")).unwrap();
    fs::hard_link(&first, dir.path().join("b.jsonl")).unwrap();
    for args in [
        vec![dir.path().to_path_buf()],
        vec![first.clone(), dir.path().join("b.jsonl")],
    ] {
        let output = looptrace()
            .args(["report", "--format", "json"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(report["input"]["files"], 1, "{args:?}");
        assert_eq!(exit_counts(&report["exit_reasons"]), [1, 0, 0, 0, 0]);
        assert_eq!(warning_messages(&report), Vec::<String>::new());
    }
}

#[test]
fn an_unknown_event_type_is_counted_in_every_chunk_whatever_came_before() {
    let dir = tempfile::tempdir().unwrap();
    let unknown = |run: &str, event_type: &str| {
        format!("{{\"run_id\":\"{run}\",\"step\":1,\"event_type\":\"{event_type}\"}}\n")
    };
    let first = dir.path().join("1.jsonl");
    fs::write(&first, unknown("r0", "listed")).unwrap();
    // A second input (so a second chunk) that meets 32 other types before `listed` again.
    let mut lines: String = (0..32)
        .map(|n| unknown(&format!("r{n}"), &format!("other_{n:02}")))
        .collect();
    lines.push_str(&unknown("r0", "listed"));
    let second = dir.path().join("2.jsonl");
    fs::write(&second, lines).unwrap();
    let report = analyze(&[&first, &second], &Options::default());
    let listed: Vec<(String, u64)> = report
        .warnings
        .iter()
        .filter_map(|warning| match warning {
            report::Warning::UnknownEventType { event_type, count } => {
                Some((event_type.clone(), *count))
            }
            _ => None,
        })
        .collect();
    assert!(listed.contains(&("listed".to_owned(), 2)), "{listed:?}");
    // 33 distinct types: the first 32 in input order are named, the last is `(other)`.
    assert_eq!(listed.len(), 33, "{listed:?}");
    assert!(listed.contains(&("(other)".to_owned(), 1)), "{listed:?}");
    assert!(
        !listed.iter().any(|(name, _)| name == "other_31"),
        "{listed:?}"
    );
}

#[test]
fn a_model_retry_is_a_known_event_that_changes_no_outcome() {
    let report = report_json(&[&path("model_retry.jsonl")]);
    assert_eq!(exit_counts(&report["exit_reasons"]), [1, 0, 0, 0, 0]);
    assert!(warning_messages(&report).is_empty(), "{report}");
}
