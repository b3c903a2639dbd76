//! `eval --html` builds its page from the runs as they were written (the eval observer's fold),
//! not from the trace files read again. The page must be the one the files give, byte for byte,
//! whatever the layout, flush, capture, jobs and repeats, with agent tasks (their runs are the
//! proxy's events) and with rows a resumed evaluation keeps from its parent run; and an
//! evaluation that ran every row needs no trace file to write it.

use std::path::{Path, PathBuf};
use std::process::Output;

use looptrace::eval::{ResultsFile, TaskResult};
use looptrace::html::{PageRuns, ResultsPage};
use serde_json::json;

use crate::html_report::page_data;
use crate::support::{looptrace, results_in, stderr};

const KEY_VAR: &str = "LOOPTRACE_PAGE_TEST_KEY";

/// A suite of a finishing task, a tool call, one that needs feedback and fails its expectation,
/// and an agent task, captured as `capture` says.
fn suite_text(capture: &str, agent_command: &[&str]) -> String {
    let chat = json!({"chat": {"api": "openai-chat", "base_url": "http://127.0.0.1:9/v1",
        "model": "m", "api_key_env": KEY_VAR}});
    json!({"name": "page", "defaults": {"capture": capture}, "tasks": [
        {"id": "a-finish", "prompt": "say 84",
         "model": {"responses": ["{\"type\":\"finish\",\"answer\":\"84\"}"]}, "expect": {"answer": "84"}},
        {"id": "b-tool", "prompt": "compute 12 × 7",
         "model": {"actions": [
           {"type": "tool_call", "tool_name": "calculator", "arguments": {"left": 12, "operation": "multiply", "right": 7}},
           {"type": "finish", "answer": "84"}]}},
        {"id": "c-feedback", "prompt": "say <84>",
         "model": {"responses": ["not json", "{\"type\":\"finish\",\"answer\":\"85\"}"]}, "expect": {"answer": "84"}},
        {"id": "d-agent", "prompt": "p", "model": chat, "agent": {"command": agent_command}}
    ]})
    .to_string()
}

fn write_suite(dir: &Path, capture: &str, agent_command: &[&str]) -> PathBuf {
    let path = dir.join(format!("suite-{capture}.json"));
    std::fs::write(&path, suite_text(capture, agent_command)).unwrap();
    path
}

fn eval(suite: &Path, out: &Path, extra: &[&str], fault: Option<&str>) -> Output {
    let mut command = looptrace();
    command
        .arg("eval")
        .arg(suite)
        .arg("--out")
        .arg(out)
        .arg("-q")
        .args(extra)
        .env(KEY_VAR, "k")
        .env_remove("LOOPTRACE_FAULT");
    if let Some(fault) = fault {
        command.env("LOOPTRACE_FAULT", fault);
    }
    command.output().expect("failed to start looptrace")
}

/// The page of `out`'s results rebuilt from the trace files its rows name (what `eval --html`
/// wrote before it folded the runs it saw).
fn page_from_files(out: &Path, results: &ResultsFile) -> Vec<u8> {
    let title = format!("looptrace eval: {}", results.suite.name);
    let stats = looptrace::stats::StatsOptions::default();
    let page = ResultsPage {
        title: &title,
        results,
        baseline: None,
        stats: &stats,
        paired: None,
    };
    let folder = |_: &TaskResult| out.to_path_buf();
    looptrace::html::render_results(&page, &folder, PageRuns::Files).unwrap()
}

#[test]
fn the_page_from_what_the_eval_saw_is_the_page_its_files_give() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for capture in ["summary", "full"] {
        let suite = write_suite(dir.path(), capture, &["true"]);
        for layout in ["per-task", "single"] {
            for flush in ["event", "run"] {
                for (jobs, repeat) in [("1", "1"), ("2", "2")] {
                    let context =
                        format!("{capture} {layout} {flush} --jobs {jobs} --repeat {repeat}");
                    let out = dir.path().join(context.replace([' ', '-'], "_"));
                    let page = dir.path().join(format!("{}.html", cases));
                    cases += 1;
                    let flags = [
                        "--trace-layout",
                        layout,
                        "--trace-flush",
                        flush,
                        "--jobs",
                        jobs,
                        "--repeat",
                        repeat,
                        "--html",
                        page.to_str().unwrap(),
                    ];
                    let output = eval(&suite, &out, &flags, None);
                    assert_eq!(
                        output.status.code(),
                        Some(1),
                        "{context}: {}",
                        stderr(&output)
                    );
                    let written = std::fs::read(&page).unwrap();
                    let results = results_in(&out);
                    let expected = page_from_files(&out, &results);
                    assert!(written == expected, "{context}: the pages differ");
                    // Every row's run is on the page with its events, the agent's too.
                    let data = page_data(std::str::from_utf8(&written).unwrap());
                    let rows = data["runs"].as_array().unwrap();
                    assert_eq!(rows.len(), results.tasks.len(), "{context}");
                    for (at, timeline) in data["timelines"].as_array().unwrap().iter().enumerate() {
                        assert!(
                            timeline.as_array().unwrap().len() >= 2,
                            "{context}: row {at}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_baseline_page_shows_the_runs_the_files_give() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path(), "summary", &["true"]);
    let first = dir.path().join("first");
    assert_eq!(eval(&suite, &first, &[], None).status.code(), Some(1));
    let out = dir.path().join("second");
    let page = dir.path().join("page.html");
    let base = first.join("results.json");
    let output = eval(
        &suite,
        &out,
        &[
            "--baseline",
            base.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let written = std::fs::read(&page).unwrap();
    let expected = page_from_files(&out, &results_in(&out));
    let text = String::from_utf8(written.clone()).unwrap();
    assert!(text.contains("Since the baseline"));
    // The baseline's view aside, the same sections and the same runs.
    let sections = |page: &[u8]| {
        let page = String::from_utf8(page.to_vec()).unwrap();
        page[page.find("<section id=\"exit-reasons\"").unwrap()..].to_owned()
    };
    assert_eq!(sections(&written), sections(&expected));
    assert_eq!(
        page_data(std::str::from_utf8(&written).unwrap()),
        page_data(std::str::from_utf8(&expected).unwrap())
    );
}

#[test]
fn a_resumed_evaluations_page_holds_the_rows_it_kept_from_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path(), "summary", &["true"]);
    for layout in ["per-task", "single"] {
        let out = dir.path().join(layout);
        let flags = ["--trace-layout", layout, "--jobs", "1"];
        // Crashes before the second row is written: the first row is kept.
        let crashed = eval(&suite, &out, &flags, Some("abort_before_row:2"));
        assert_eq!(
            crashed.status.code(),
            None,
            "{layout}: {}",
            stderr(&crashed)
        );
        let page = dir.path().join(format!("{layout}.html"));
        let resumed = eval(
            &suite,
            &out,
            &[&flags[..], &["--resume", "--html", page.to_str().unwrap()]].concat(),
            None,
        );
        assert_eq!(
            resumed.status.code(),
            Some(1),
            "{layout}: {}",
            stderr(&resumed)
        );
        let results = results_in(&out);
        let written = std::fs::read(&page).unwrap();
        assert!(
            written == page_from_files(&out, &results),
            "{layout}: the pages differ"
        );
        let data = page_data(std::str::from_utf8(&written).unwrap());
        let kept = &results.tasks[0];
        assert_eq!(kept.id, "a-finish");
        let trace = kept.trace.as_deref().unwrap();
        assert!(!trace.starts_with(&format!("runs/{}/", results.eval_id.clone().unwrap())));
        let rows = data["runs"].as_array().unwrap();
        assert_eq!(rows[0][1].as_str(), kept.run_id.as_deref(), "{layout}");
        // Its events were read from the parent's trace.
        assert_eq!(
            data["timelines"][0].as_array().unwrap().len(),
            3,
            "{layout}"
        );
        let files = data["files"].as_array().unwrap();
        assert!(
            files.iter().any(|f| f.as_str().unwrap().ends_with(trace)),
            "{layout}: {files:?}"
        );
    }
}

#[test]
fn an_evaluation_that_ran_every_row_writes_its_page_without_its_trace_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // The agent task runs last and deletes the one trace file; the runs still being written go
    // on to the deleted file through their open handles, and the page must show every run.
    let command = format!("rm {}/runs/*/traces.jsonl", out.display());
    let suite = write_suite(dir.path(), "summary", &["sh", "-c", &command]);
    let page = dir.path().join("page.html");
    let flags = [
        "--trace-layout",
        "single",
        "--jobs",
        "1",
        "--html",
        page.to_str().unwrap(),
    ];
    let output = eval(&suite, &out, &flags, None);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let results = results_in(&out);
    let trace = out.join(results.tasks[0].trace.as_deref().unwrap());
    assert!(!trace.exists(), "the agent deleted `{}`", trace.display());
    let written = String::from_utf8(std::fs::read(&page).unwrap()).unwrap();
    let data = page_data(&written);
    assert_eq!(data["files"], json!([trace.display().to_string()]));
    let rows = data["runs"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    // 3 + 5 + 4 events of looptrace's loop, and the agent's run_started and run_finished.
    let lengths: Vec<usize> = data["timelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_array().unwrap().len())
        .collect();
    assert_eq!(lengths, [3, 5, 4, 2]);
    assert!(written.contains("1 file, 14 events of input"), "{written}");
    // Read from the files, the page would have no run of any row.
    let from_files = String::from_utf8(page_from_files(&out, &results)).unwrap();
    assert!(from_files.contains("0 files, 0 events of input"));
}
