//! The HTML report and the output options around it: `report -o FILE` for every format,
//! `report -f html`, `report --list SELECTOR`. The page is checked in a real headless Chromium
//! driven by selenium (`tests/html/check_report.py`); where `LOOPTRACE_TEST_PYTHON`,
//! `LOOPTRACE_TEST_CHROMIUM` or `LOOPTRACE_TEST_CHROMEDRIVER` is unset that test prints `SKIP`,
//! and under `CI=true` it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::mcp::installed;
use crate::support::{fixture, looptrace, run, sample, stderr, stdout};

fn planted() -> PathBuf {
    fixture("report/html/planted.jsonl")
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// The JSON document embedded in a page for its script.
fn page_data(page: &str) -> Value {
    let start = page
        .find("<script type=\"application/json\" id=\"looptrace-data\">")
        .expect("the page embeds its data");
    let rest = &page[start..];
    let open = rest.find('>').unwrap() + 1;
    let close = rest.find("</script>").unwrap();
    serde_json::from_str(&rest[open..close]).expect("the embedded data is JSON")
}

#[test]
fn every_report_format_writes_to_output_what_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["table", "json", "markdown", "csv", "html"] {
        let printed = run(&["report", path_str(&planted()), "-f", format]);
        assert_eq!(
            printed.status.code(),
            Some(0),
            "{format}: {}",
            stderr(&printed)
        );
        let out = dir.path().join(format!("report.{format}"));
        let written = run(&[
            "report",
            path_str(&planted()),
            "--format",
            format,
            "--output",
            path_str(&out),
        ]);
        assert_eq!(
            written.status.code(),
            Some(0),
            "{format}: {}",
            stderr(&written)
        );
        assert!(written.stdout.is_empty(), "{format}: -o printed to stdout");
        assert_eq!(std::fs::read(&out).unwrap(), printed.stdout, "{format}");
    }
}

#[test]
fn a_failed_report_leaves_the_output_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    std::fs::write(&out, "old\n").unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"run_id\":\"r\",\"step\":0,\"event_type\":\"run_started\"}\nnot json\n{}\n",
    )
    .unwrap();
    for format in ["html", "json"] {
        let output = run(&["report", path_str(&bad), "-f", format, "-o", path_str(&out)]);
        assert_eq!(output.status.code(), Some(2), "{format}");
        assert!(
            stderr(&output).contains("bad.jsonl:2"),
            "{}",
            stderr(&output)
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old\n");
    }
    // No temporary file is left beside it either.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    let missing = dir.path().join("no/such/folder/report.html");
    let output = run(&[
        "report",
        path_str(&planted()),
        "-f",
        "html",
        "-o",
        path_str(&missing),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("report.html"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_output_may_not_be_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::copy(planted(), &trace).unwrap();
    let before = std::fs::read(&trace).unwrap();
    let output = run(&["report", path_str(&trace), "-o", path_str(&trace)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("would overwrite the input"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read(&trace).unwrap(), before);
}

#[test]
fn the_page_is_self_contained_and_holds_trace_text_only_escaped() {
    let output = run(&["report", path_str(&planted()), "-f", "html"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(page.starts_with("<!DOCTYPE html>"));
    // Nothing is loaded from anywhere.
    for outside in ["src=\"", "href=", "url(", "@import", "http://", "https://"] {
        let found = page
            .replace("http://www.w3.org/2000/svg", "")
            .contains(outside);
        assert!(!found, "the page refers to something outside: {outside}");
    }
    // The planted markup never appears as markup: in HTML it is escaped, in the data it is JSON
    // with `<`, `>` and `&` escaped.
    assert!(
        !page.contains("<script>window"),
        "a planted script is markup"
    );
    assert!(!page.contains("<img"), "a planted image is markup");
    assert!(!page.contains("<b>"), "a planted error kind is markup");
    assert!(page.contains("&lt;img src=x onerror=&quot;window.pwned=&#39;tool&#39;"));
    assert_eq!(page.matches("<script").count(), 2);
    let data = page_data(&page);
    let ids: Vec<&str> = data["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "ok-1",
            "ok-2",
            "<script>window.pwned='run id'</script>",
            "bad-json",
            "crash",
            "gated",
            "died"
        ]
    );
    // Every run has its timeline: the planted run's six events, text read back exactly.
    let timeline = &data["timelines"][2];
    assert_eq!(timeline.as_array().unwrap().len(), 6);
    assert_eq!(
        timeline[2][4],
        "no tool \u{2028} named <script>window.pwned='content'</script>"
    );
    // Summary capture shows the summary, not text the trace does not hold.
    assert_eq!(data["timelines"][1][1][4], "chars=1;sha256=4b227777d4dd…");
    // The gate's verdicts.
    assert_eq!(data["runs"][5][7], "accepted");
}

#[test]
fn the_page_shows_the_runs_and_their_counts_in_a_real_browser() {
    let test = "the_page_shows_the_runs_and_their_counts_in_a_real_browser";
    let (Some(python), Some(chromium), Some(driver)) = (
        installed("LOOPTRACE_TEST_PYTHON", test),
        installed("LOOPTRACE_TEST_CHROMIUM", test),
        installed("LOOPTRACE_TEST_CHROMEDRIVER", test),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let json = dir.path().join("report.json");
    for (format, out) in [("html", &page), ("json", &json)] {
        let output = run(&[
            "report",
            path_str(&planted()),
            "-f",
            format,
            "-o",
            path_str(out),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    browser_check(&python, &chromium, &driver, &page, &json);
}

/// Runs `tests/html/check_report.py` on `page` against the report JSON `json`.
fn browser_check(python: &Path, chromium: &Path, driver: &Path, page: &Path, json: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/html/check_report.py");
    let output = Command::new(python)
        .arg(script)
        .args([chromium, driver, page, json])
        .output()
        .expect("failed to start Python");
    assert!(
        output.status.success() && stdout(&output).trim_end().ends_with("ok"),
        "the browser check failed:\n{}\n{}",
        stdout(&output),
        stderr(&output)
    );
}

#[test]
fn list_prints_one_row_per_matching_run() {
    let output = run(&["report", path_str(&planted()), "--list", "finished"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with("file") && lines[0].contains("run id"));
    for (line, id) in lines[1..4].iter().zip(["ok-1", "ok-2", "gated"]) {
        assert!(line.contains(id) && line.contains("finished"), "{line}");
    }
    assert_eq!(lines[4], "3 runs of 7");

    let json = |selector: &str| -> Vec<Value> {
        let output = run(&[
            "report",
            path_str(&planted()),
            "--list",
            selector,
            "-f",
            "json",
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let value: Value = serde_json::from_slice(&output.stdout).unwrap();
        value["runs"].as_array().unwrap().clone()
    };
    let ids = |runs: &[Value]| -> Vec<String> {
        runs.iter()
            .map(|r| r["run_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        ids(&json("tool=calculator")),
        ["ok-1", "<script>window.pwned='run id'</script>", "died"]
    );
    assert_eq!(
        ids(&json("error_kind=division_by_zero")),
        ["<script>window.pwned='run id'</script>"]
    );
    assert_eq!(ids(&json("incomplete")), ["died"]);
    assert_eq!(json("source=codex"), Vec::<Value>::new());
    let crash = &json("internal_error")[0];
    assert_eq!(crash["file"], path_str(&planted()));
    assert_eq!(crash["exit_reason"], "internal_error");
    assert_eq!(crash["steps"], 1);
    assert_eq!(crash["error_kind"], "model_failure");
    assert_eq!(ids(&json("source=looptrace")).len(), 7);
}

#[test]
fn list_escapes_trace_text_in_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(
        &trace,
        "{\"run_id\":\"a\\u001b[31mred\",\"step\":1,\"event_type\":\"run_finished\",\"exit_reason\":\"finished\"}\n",
    )
    .unwrap();
    let output = run(&["report", path_str(&trace), "--list", "finished"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(!stdout(&output).contains('\u{1b}'), "{}", stdout(&output));
}

#[test]
fn list_refuses_bad_selectors_and_formats() {
    for (args, message) in [
        (
            vec!["--list", "finish"],
            "expected an exit reason (finished",
        ),
        (vec!["--list", "colour=red"], "unknown key `colour`"),
        (vec!["--list", "tool="], "the value after `=` is empty"),
        (
            vec!["--list", "finished", "-f", "csv"],
            "--list prints a table or JSON",
        ),
    ] {
        let trace = sample("finished.full.jsonl");
        let mut all = vec!["report", path_str(&trace)];
        all.extend(args);
        let output = run(&all);
        assert_eq!(output.status.code(), Some(2), "{all:?}");
        assert!(
            stderr(&output).contains(message),
            "{all:?}: {}",
            stderr(&output)
        );
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn standard_input_makes_the_same_page_as_the_file() {
    use std::io::Write;
    let mut child = looptrace()
        .args(["report", "-", "-f", "html"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(planted()).unwrap())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let data = page_data(&stdout(&output));
    assert_eq!(data["files"], serde_json::json!(["<stdin>"]));
    assert_eq!(data["runs"].as_array().unwrap().len(), 7);
    assert_eq!(data["timelines"][2].as_array().unwrap().len(), 6);
}
