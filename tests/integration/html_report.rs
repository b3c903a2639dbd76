//! The HTML report and the output options around it: `report -o FILE` for every format,
//! `report -f html`, `report --list SELECTOR`. The page is checked in a real headless Chromium
//! driven by selenium (`tests/html/check_report.py`); where `LOOPTRACE_TEST_PYTHON`,
//! `LOOPTRACE_TEST_CHROMIUM` or `LOOPTRACE_TEST_CHROMEDRIVER` is unset that test prints `SKIP`,
//! and under `CI=true` it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::mcp::installed;
use crate::support::{cli, fixture, looptrace, run, sample, stderr, stdout};

fn planted() -> PathBuf {
    fixture("report/html/planted.jsonl")
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// The JSON document embedded in a page for its script (zlib-compressed, in base64).
pub(crate) fn page_data(page: &str) -> Value {
    use base64::Engine as _;
    use std::io::Read as _;
    let start = page
        .find("id=\"looptrace-data\" data-encoding=\"deflate-base64\">")
        .expect("the page embeds its data");
    let rest = &page[start..];
    let open = rest.find('>').unwrap() + 1;
    let close = rest.find("</script>").unwrap();
    let packed = base64::engine::general_purpose::STANDARD
        .decode(rest[open..close].trim())
        .expect("the data is base64");
    let mut json = String::new();
    flate2::read::ZlibDecoder::new(packed.as_slice())
        .read_to_string(&mut json)
        .expect("the data is zlib-compressed text");
    // JSON safe inside <script> even before compression.
    assert!(!json.contains(['<', '>', '&', '\u{2028}']), "{json}");
    serde_json::from_str(&json).expect("the embedded data is JSON")
}

#[test]
fn every_report_format_writes_to_output_what_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["table", "json", "markdown", "csv", "html"] {
        let printed = cli!("report", &planted(), "-f", format);
        assert_eq!(
            printed.status.code(),
            Some(0),
            "{format}: {}",
            stderr(&printed)
        );
        let out = dir.path().join(format!("report.{format}"));
        let written = cli!("report", &planted(), "--format", format, "--output", &out);
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
        let output = cli!("report", &bad, "-f", format, "-o", &out);
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
    let output = cli!("report", &planted(), "-f", "html", "-o", &missing);
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
    let output = cli!("report", &trace, "-o", &trace);
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
    let output = cli!("report", &planted(), "-f", "html");
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
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let json = dir.path().join("report.json");
    for (format, out) in [("html", &page), ("json", &json)] {
        let output = cli!("report", &planted(), "-f", format, "-o", out);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    browser_check("planted", test, &page, &json);
}

/// Runs `tests/html/check_report.py MODE` on `page` against the report JSON `json`, or prints
/// `SKIP` where Python, Chromium or its driver is not named (fails under `CI=true`).
fn browser_check(mode: &str, test: &str, page: &Path, json: &Path) {
    let (Some(python), Some(chromium), Some(driver)) = (
        installed("LOOPTRACE_TEST_PYTHON", test),
        installed("LOOPTRACE_TEST_CHROMIUM", test),
        installed("LOOPTRACE_TEST_CHROMEDRIVER", test),
    ) else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/html/check_report.py");
    let output = Command::new(python)
        .arg(script)
        .arg(mode)
        .args([&chromium, &driver, page, json])
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
    let output = cli!("report", &planted(), "--list", "finished");
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
        let output = cli!("report", &planted(), "--list", selector, "-f", "json");
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
    let output = cli!("report", &trace, "--list", "finished");
    assert_eq!(output.status.code(), Some(0));
    assert!(!stdout(&output).contains('\u{1b}'), "{}", stdout(&output));
}

/// Runs `command` with `args`: exit 2, `message` on stderr, nothing on stdout.
fn refused(command: &[&str], args: &[&str], message: &str) {
    let all: Vec<&str> = command.iter().chain(args).copied().collect();
    let output = run(&all);
    assert_eq!(output.status.code(), Some(2), "{all:?}");
    let err = stderr(&output);
    assert!(err.contains(message), "{all:?}: {err}");
    assert!(output.stdout.is_empty(), "{all:?}");
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
        refused(&["report", path_str(&trace)], &args, message);
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

/// `eval` of the sample suite into `out`, with `extra` arguments.
fn eval(out: &Path, extra: &[&str]) -> std::process::Output {
    let suite = sample("suite.json");
    let mut args = vec!["eval", path_str(&suite), "--out", path_str(out)];
    args.extend(extra);
    run(&args)
}

#[test]
fn eval_html_shows_every_task_its_verdict_and_what_moved_since_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let first = eval(&dir.path().join("first"), &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    // A baseline in which the first task had failed and the second had run out of steps.
    let mut baseline: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("first/results.json")).unwrap())
            .unwrap();
    let fixed = baseline["tasks"][0]["id"].as_str().unwrap().to_owned();
    baseline["tasks"][0]["exit_reason"] = "max_steps_exceeded".into();
    baseline["tasks"][0]["expectation"] = "failed".into();
    let base = dir.path().join("base.json");
    std::fs::write(&base, baseline.to_string()).unwrap();
    let out = dir.path().join("second");
    let page_path = dir.path().join("report.html");
    let second = eval(
        &out,
        &[
            "--baseline",
            path_str(&base),
            "--html",
            path_str(&page_path),
        ],
    );
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let results: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let page = std::fs::read_to_string(&page_path).unwrap();
    let data = page_data(&page);
    let tasks = results["tasks"].as_array().unwrap();
    let rows = data["runs"].as_array().unwrap();
    assert_eq!(rows.len(), tasks.len());
    for (row, task) in rows.iter().zip(tasks) {
        assert_eq!(row[1], task["run_id"]);
        assert_eq!(row[2], task["id"]);
        assert_eq!(row[4], task["steps_used"]);
        assert_eq!(row[7], task["expectation"]);
    }
    // Every task's timeline was read from its trace.
    for timeline in data["timelines"].as_array().unwrap() {
        assert!(timeline.as_array().unwrap().len() >= 2);
    }
    assert!(page.contains("Since the baseline"));
    let fixed_bucket = &page[page.find("id=\"newly-fixed\"").unwrap()..];
    let fixed_bucket = &fixed_bucket[..fixed_bucket.find("</div>").unwrap()];
    assert!(fixed_bucket.contains("Newly fixed (1)"), "{fixed_bucket}");
    assert!(
        fixed_bucket.contains(&format!("<code>{fixed}</code>")),
        "{fixed_bucket}"
    );
    assert!(page.contains("Newly failing (0)") && page.contains("Still failing (0)"));
    // Every run is looptrace's: no source column, no source filter.
    assert!(page.contains("id=\"runs-table\" class=\"one-source\""));
    assert!(!page.contains("<th>source</th>") && !page.contains("filter-source"));
    // The page counts what `report` counts over the same traces.
    let json = dir.path().join("report.json");
    let report = cli!("report", &out, "-f", "json", "-o", &json);
    assert_eq!(report.status.code(), Some(0));
    browser_check(
        "counts",
        "eval_html_shows_every_task_its_verdict_and_what_moved_since_the_baseline",
        &page_path,
        &json,
    );
}

#[test]
fn eval_html_is_refused_before_any_task_runs_where_it_cannot_be_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (html, message) in [
        (out.join("results.json"), "--html"),
        (
            dir.path().join("missing/report.html"),
            "the folder does not exist",
        ),
        (dir.path().to_path_buf(), "--html"),
    ] {
        let output = eval(&out, &["--html", path_str(&html)]);
        assert_eq!(output.status.code(), Some(2), "{}", html.display());
        assert!(stderr(&output).contains(message), "{}", stderr(&output));
        assert!(!out.join("results.json").exists(), "a task ran");
    }
}

/// Three faithful runs and two that diverge: at step 1 (an edited observation) and at step 2 (a
/// renamed tool).
fn replay_trace(dir: &Path) -> PathBuf {
    let mut lines = Vec::new();
    for file in [
        sample("multi_run.jsonl"),
        fixture("replay/edited_observation.jsonl"),
        fixture("replay/renamed_tool.jsonl"),
    ] {
        lines.extend(std::fs::read(file).unwrap());
    }
    let trace = dir.join("recorded.jsonl");
    std::fs::write(&trace, lines).unwrap();
    trace
}

#[test]
fn replay_html_marks_each_runs_first_divergence() {
    let dir = tempfile::tempdir().unwrap();
    let trace = replay_trace(dir.path());
    let page_path = dir.path().join("replay.html");
    let output = cli!("replay", &trace, "-f", "html", "-o", &page_path);
    // Runs diverged: exit 1, as with the other formats; the page is written all the same.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    let data = page_data(&std::fs::read_to_string(&page_path).unwrap());
    let rows = data["runs"].as_array().unwrap();
    let seen: Vec<(&str, &str, Value)> = rows
        .iter()
        .map(|r| {
            (
                r[1].as_str().unwrap(),
                r[7].as_str().unwrap(),
                r[10].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("multi-a", "faithful", Value::Null),
            ("multi-b", "faithful", Value::Null),
            ("multi-c", "faithful", Value::Null),
            ("edited-observation", "diverged", 1.into()),
            ("renamed-tool", "diverged", 2.into()),
        ]
    );
    let note = rows[4][11].as_str().unwrap();
    assert!(
        note.contains("tool_name") && note.contains("web_search"),
        "{note}"
    );
    let json = dir.path().join("report.json");
    let report = cli!("report", &trace, "-f", "json", "-o", &json);
    assert_eq!(report.status.code(), Some(0));
    browser_check(
        "replay",
        "replay_html_marks_each_runs_first_divergence",
        &page_path,
        &json,
    );
}

#[test]
fn replay_of_one_run_shows_that_run_only() {
    let dir = tempfile::tempdir().unwrap();
    let trace = replay_trace(dir.path());
    let output = cli!("replay", &trace, "--run", "multi-b", "-f", "html");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(
        page.contains("Exit reasons (of 1 run)"),
        "the totals are not of the one run"
    );
    let data = page_data(&page);
    assert_eq!(data["runs"].as_array().unwrap().len(), 1);
    assert_eq!(data["runs"][0][1], "multi-b");
}

#[test]
fn replay_writes_every_format_to_output_and_refuses_clashes() {
    let dir = tempfile::tempdir().unwrap();
    let trace = replay_trace(dir.path());
    for format in ["text", "json"] {
        let printed = cli!("replay", &trace, "-f", format);
        let out = dir.path().join(format!("replay.{format}"));
        let written = cli!("replay", &trace, "-f", format, "--output", &out);
        assert_eq!(written.status.code(), printed.status.code());
        assert!(written.stdout.is_empty());
        // The same report, but for the paths of the reruns' working folders, none here.
        assert_eq!(std::fs::read(&out).unwrap(), printed.stdout, "{format}");
    }
    let before = std::fs::read(&trace).unwrap();
    for (args, message) in [
        (vec!["-o", path_str(&trace)], "would overwrite the input"),
        (vec!["--check", "-f", "html"], "--check prints text or JSON"),
        (
            vec![
                "-o",
                path_str(&dir.path().join("same.jsonl")),
                "--trace",
                path_str(&dir.path().join("same.jsonl")),
            ],
            "is the --trace output too",
        ),
    ] {
        refused(&["replay", path_str(&trace)], &args, message);
    }
    assert_eq!(std::fs::read(&trace).unwrap(), before);
}

#[test]
fn merge_html_reads_each_tasks_trace_beside_its_shard() {
    let dir = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    for shard in ["1/2", "2/2"] {
        let out = dir.path().join(format!("shard{}", &shard[..1]));
        let output = eval(&out, &["--shard", shard]);
        assert!(
            output.status.code().is_some_and(|c| c < 2),
            "{}",
            stderr(&output)
        );
        results.push(out.join("results.json"));
    }
    let page_path = dir.path().join("merged.html");
    let output = cli!("merge", &results[0], &results[1], "--html", &page_path);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let data = page_data(&std::fs::read_to_string(&page_path).unwrap());
    let suite: Value =
        serde_json::from_slice(&std::fs::read(sample("suite.json")).unwrap()).unwrap();
    let mut ids: Vec<&str> = data["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[2].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    let mut expected: Vec<&str> = suite["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    expected.sort_unstable();
    assert_eq!(ids, expected);
    for timeline in data["timelines"].as_array().unwrap() {
        assert!(
            timeline.as_array().unwrap().len() >= 2,
            "a task's trace was not read"
        );
    }
    let merged = [path_str(&results[0]), path_str(&results[1])];
    refused(
        &["merge", merged[0], merged[1]],
        &["--html", merged[0]],
        "--html would overwrite the input",
    );
    let out = dir.path().join("all.json");
    refused(
        &["merge", merged[0], merged[1]],
        &["--out", path_str(&out), "--html", path_str(&out)],
        "is the --out file too",
    );
}

// With `--trace-layout single` every row of a shard names its `traces.jsonl`: the page reads
// each file once, or its runs would be counted once per row.
#[test]
fn merge_html_of_single_file_shards_counts_each_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    for shard in ["1/2", "2/2"] {
        let out = dir.path().join(format!("shard{}", &shard[..1]));
        let output = eval(&out, &["--shard", shard, "--trace-layout", "single"]);
        assert!(
            output.status.code().is_some_and(|c| c < 2),
            "{}",
            stderr(&output)
        );
        results.push(out.join("results.json"));
    }
    let page_path = dir.path().join("merged.html");
    let output = cli!("merge", &results[0], &results[1], "--html", &page_path);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert!(page.contains("Exit reasons (of 10 runs)"), "over-counted");
    assert_eq!(page_data(&page)["runs"].as_array().unwrap().len(), 10);
}

#[test]
fn mixed_sources_keep_the_source_column_and_the_figures_table_names_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let page_path = dir.path().join("mixed.html");
    let spend = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/spend.jsonl");
    let claude = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import/claude-code/session.jsonl");
    let output = cli!("report", &spend, &claude, "-f", "html", "-o", &page_path);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert!(page.contains("<th>source</th>") && page.contains("filter-source"));
    assert!(
        page.contains("Steps, tokens, duration and cost per exit reason"),
        "{}",
        &page[page.find("per-exit-reason").unwrap_or(0)..][..300]
    );
}
