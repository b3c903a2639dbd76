//! The DuckDB queries of `docs/sql.md`, taken from the page itself so the two cannot drift, run
//! with DuckDB's Python package (`LOOPTRACE_TEST_PYTHON`, which `.ci/run` installs with `duckdb`)
//! on the sample traces and on a generated corpus whose rare fields first appear after DuckDB's
//! sample of 20,480 lines; every number must equal what `report --format json` says of the same
//! files. Without that Python the tests print one `SKIP` line, except under `CI=true`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{doc_blocks, looptrace, sample, stderr, stdout};

/// The stand-in for the user's files in the page's queries.
const FILES: &str = "'traces/*.jsonl'";

/// Runs each request block (`{"name", "sql"}`) in order on one connection and prints the rows of
/// every block that returns any, by name, as JSON objects.
const RUNNER: &str = r#"
import duckdb, json, sys
con = duckdb.connect()
results = {}
for block in json.load(sys.stdin):
    cursor = con.execute(block["sql"])
    if cursor.description:
        columns = [d[0] for d in cursor.description]
        results[block["name"]] = [dict(zip(columns, row)) for row in cursor.fetchall()]
json.dump(results, sys.stdout, default=str)
"#;

/// The ```sql blocks of `docs/sql.md`, in order, each named by its first line (`-- name: ...`).
fn sql_blocks() -> Vec<(String, String)> {
    doc_blocks("sql.md", "sql")
        .into_iter()
        .map(|sql| {
            let name = sql
                .strip_prefix("-- ")
                .and_then(|line| line.split(':').next())
                .unwrap_or_else(|| panic!("a block without a `-- name:` line: {sql}"))
                .to_owned();
            assert!(sql.contains(FILES) || !sql.contains("read_ndjson"), "{sql}");
            (name, sql)
        })
        .collect()
}

/// A Python with `duckdb`, or `None` after a `SKIP` line (a failure under `CI=true`).
fn duckdb_python(test: &str) -> Option<PathBuf> {
    let python = crate::mcp::python(test)?;
    let has_duckdb = Command::new(&python)
        .args(["-c", "import duckdb"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if has_duckdb {
        return Some(python);
    }
    if std::env::var("CI").is_ok_and(|ci| ci == "true") {
        panic!(
            "{} has no duckdb under CI=true: .ci/run installs it",
            python.display()
        );
    }
    println!("SKIP {test}: {} has no duckdb package", python.display());
    None
}

/// Every block of the page run on `files`, with the test's own count of the events read.
fn run_queries(python: &Path, files: &[PathBuf]) -> serde_json::Map<String, Value> {
    let list: Vec<String> = files
        .iter()
        .map(|f| format!("'{}'", f.display().to_string().replace('\'', "''")))
        .collect();
    let list = format!("[{}]", list.join(", "));
    let mut request: Vec<Value> = sql_blocks()
        .into_iter()
        .map(|(name, sql)| json!({"name": name, "sql": sql.replace(FILES, &list)}))
        .collect();
    request.push(json!({"name": "count", "sql": "SELECT count(*) AS events FROM events"}));
    let mut child = Command::new(python)
        .args(["-c", RUNNER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    serde_json::to_writer(child.stdin.take().unwrap(), &request).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap()
}

fn report(files: &[PathBuf]) -> Value {
    let output = looptrace()
        .args(["report", "--format", "json"])
        .args(files)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap()
}

/// Asserts that `sql[key]` equals `report[key]` for each key, numbers to 1e-9.
fn assert_same(what: &str, sql: &Value, report: &Value, keys: &[&str]) {
    for key in keys {
        let (a, b) = (&sql[key], &report[key]);
        let same = match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() < 1e-9,
            _ => a == b,
        };
        assert!(same, "{what}: {key} is {a} in SQL, {b} in report");
    }
}

/// Compares every number the page's queries give with the report of the same files; returns
/// the SQL results for further checks.
fn assert_queries_match_report(python: &Path, files: &[PathBuf]) -> serde_json::Map<String, Value> {
    let sql = run_queries(python, files);
    let report = report(files);
    assert_eq!(sql["count"][0]["events"], report["input"]["events"]);

    let rows = |name: &str| sql[name].as_array().unwrap().clone();
    let exit_reasons = rows("exit_reasons");
    let expected = report["exit_reasons"]["rows"].as_array().unwrap();
    assert_eq!(exit_reasons.len(), expected.len());
    for (got, want) in exit_reasons.iter().zip(expected) {
        assert_same("exit_reasons", got, want, &["exit_reason", "runs", "share"]);
    }
    let runs: u64 = exit_reasons
        .iter()
        .map(|r| r["runs"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(runs), report["exit_reasons"]["runs"].as_u64());

    let steps = rows("steps");
    let expected = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), expected.len());
    for (got, want) in steps.iter().zip(expected) {
        let keys = ["exit_reason", "runs", "min", "median", "p90", "max"];
        assert_same("steps", got, want, &keys);
    }

    let budgets = rows("budgets");
    let expected = report["budget_exhaustion"]["by_budget"].as_array().unwrap();
    assert_eq!(budgets.len(), expected.len());
    for (got, want) in budgets.iter().zip(expected) {
        assert_same("budgets", got, want, &["budget", "runs", "share"]);
    }
    let exhausted: u64 = budgets.iter().map(|r| r["runs"].as_u64().unwrap()).sum();
    assert_eq!(
        Some(exhausted),
        report["budget_exhaustion"]["runs"].as_u64()
    );

    let mut tools = rows("tools");
    let mut expected = report["tools"].as_array().unwrap().clone();
    let by_name = |row: &Value| row["tool"].as_str().unwrap().to_owned();
    tools.sort_by_key(by_name);
    expected.sort_by_key(by_name);
    let names: Vec<String> = tools.iter().map(by_name).collect();
    let want: Vec<String> = expected.iter().map(by_name).collect();
    assert_eq!(names, want, "tools");
    for (got, want) in tools.iter().zip(&expected) {
        assert_same(
            "tools",
            got,
            want,
            &["tool", "calls", "errors", "error_rate"],
        );
        let kinds: serde_json::Map<String, Value> = rows("tool_errors_by_kind")
            .iter()
            .filter(|row| row["tool"] == got["tool"])
            .map(|row| {
                (
                    row["error_kind"].as_str().unwrap().to_owned(),
                    row["errors"].clone(),
                )
            })
            .collect();
        assert_eq!(
            Value::Object(kinds),
            want["errors_by_kind"],
            "{}",
            got["tool"]
        );
    }
    sql
}

#[test]
fn the_documented_queries_count_the_sample_traces_as_report_does() {
    let Some(python) =
        duckdb_python("the_documented_queries_count_the_sample_traces_as_report_does")
    else {
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(sample(""))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let sql = assert_queries_match_report(&python, &files);
    // The cut-off run of `incomplete.jsonl` is there, and is neither finished nor dropped.
    assert_eq!(sql["exit_reasons"][4]["runs"], 1);
}

/// One JSON line.
fn push(out: &mut String, event: Value) {
    out.push_str(&event.to_string());
    out.push('\n');
}

/// A corpus in two files. Past DuckDB's sample of 20,480 lines come the first `budget` fields
/// and every case the run rules exist for: a turn of several calls, observations without a tool
/// name or an error flag, a call without a tool name, a reused run id, events before
/// `run_started`, a run cut off by a new `run_started`, a bare `internal_error`, an ending
/// without `steps_used`, a run continued in the second file, and a cut-off last line.
fn generated_corpus(dir: &Path) -> Vec<PathBuf> {
    const SAMPLE: usize = 20_480;
    let mut first = String::new();
    let mut n = 0;
    while first.lines().count() < SAMPLE {
        let id = format!("early-{n}");
        push(
            &mut first,
            json!({"run_id": id, "step": 0, "event_type": "run_started", "max_steps": 4}),
        );
        let calls = n % 3;
        for step in 1..=calls {
            let tool = if (n + step) % 2 == 0 {
                "calculator"
            } else {
                "search"
            };
            push(
                &mut first,
                json!({"run_id": id, "step": step, "event_type": "model_action", "action_type": "tool_call", "tool_name": tool}),
            );
            let mut observation = json!({"run_id": id, "step": step, "event_type": "observation", "tool_name": tool, "is_error": (n + step) % 5 == 0});
            if (n + step) % 5 == 0 {
                observation["error_kind"] = json!(if tool == "search" {
                    "unknown_tool"
                } else {
                    "division_by_zero"
                });
            }
            push(&mut first, observation);
        }
        let step = calls + 1;
        let ending = match n % 4 {
            0 => json!({"exit_reason": "finished"}),
            1 => json!({"exit_reason": "max_steps_exceeded", "error_kind": "budget_exhausted"}),
            2 => json!({"exit_reason": "invalid_model_output", "error_kind": "missing_field"}),
            _ => json!({"exit_reason": "internal_error", "error_kind": "model_failure"}),
        };
        let mut finished =
            json!({"run_id": id, "step": step, "event_type": "run_finished", "steps_used": step});
        finished
            .as_object_mut()
            .unwrap()
            .extend(ending.as_object().unwrap().clone());
        push(&mut first, finished);
        n += 1;
    }
    let event = |id: &str, step: u64, event_type: &str, extra: Value| {
        let mut event = json!({"run_id": id, "step": step, "event_type": event_type});
        event
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        event
    };
    let call = |id: &str, step: u64, tool: &str| {
        event(
            id,
            step,
            "model_action",
            json!({"action_type": "tool_call", "tool_name": tool}),
        )
    };
    let started = |id: &str| event(id, 0, "run_started", json!({}));
    let finished = |id: &str, step: u64| {
        event(
            id,
            step,
            "run_finished",
            json!({"exit_reason": "finished", "steps_used": step}),
        )
    };
    let mut late = Vec::new();
    for budget in [
        "tokens",
        "time",
        "cost",
        "context",
        "wallclock",
        "steps",
        "tokens",
    ] {
        let id = format!("late-budget-{}", late.len());
        late.push(started(&id));
        late.push(call(&id, 1, "fetch"));
        late.push(event(
            &id,
            1,
            "observation",
            json!({"tool_name": "fetch", "is_error": false}),
        ));
        late.push(event(&id, 2, "run_finished", json!({"exit_reason": "max_steps_exceeded", "steps_used": 2, "error_kind": "token_budget_exhausted", "budget": budget})));
    }
    // Several calls in one turn.
    late.extend([
        started("late-multi"),
        call("late-multi", 1, "calculator"),
        call("late-multi", 1, "search"),
        event(
            "late-multi",
            1,
            "observation",
            json!({"tool_name": "calculator", "is_error": false}),
        ),
        event(
            "late-multi",
            1,
            "observation",
            json!({"tool_name": "search", "is_error": true, "error_kind": "rate_limited"}),
        ),
        finished("late-multi", 2),
    ]);
    // Older writers: no tool name on observations, no error flag, a call without a tool name,
    // no `steps_used`.
    late.extend([
        started("late-old"),
        call("late-old", 1, "calculator"),
        event(
            "late-old",
            1,
            "observation",
            json!({"error_kind": "division_by_zero"}),
        ),
        event(
            "late-old",
            2,
            "model_action",
            json!({"action_type": "tool_call"}),
        ),
        event("late-old", 2, "observation", json!({"output": "no flag"})),
        event(
            "late-old",
            3,
            "run_finished",
            json!({"exit_reason": "finished"}),
        ),
    ]);
    // A reused run id, events before `run_started`, a run cut off by a new `run_started`, a
    // bare `internal_error`, an event type no reader knows.
    late.extend([
        started("late-again"),
        finished("late-again", 1),
        started("late-again"),
        call("late-again", 1, "calculator"),
        event(
            "late-again",
            1,
            "observation",
            json!({"tool_name": "calculator", "is_error": true}),
        ),
        finished("late-again", 2),
        event(
            "late-before",
            1,
            "observation",
            json!({"tool_name": "calculator", "is_error": true, "error_kind": "timeout"}),
        ),
        started("late-before"),
        finished("late-before", 1),
        started("late-cut"),
        call("late-cut", 1, "search"),
        event("late-cut", 2, "custom_event", json!({})),
        started("late-cut"),
        finished("late-cut", 1),
        started("late-bare"),
        event("late-bare", 1, "internal_error", json!({})),
        started("late-split"),
        call("late-split", 1, "search"),
    ]);
    for event in late {
        push(&mut first, event);
    }
    let mut second = String::new();
    push(
        &mut second,
        event(
            "late-split",
            1,
            "observation",
            json!({"is_error": true, "error_kind": "unknown_tool"}),
        ),
    );
    push(&mut second, finished("late-split", 2));
    push(&mut second, started("late-tail"));
    second.push_str(r#"{"run_id":"late-tail","step":1,"event_type":"model_act"#);
    let files = [dir.join("a.jsonl"), dir.join("b.jsonl")];
    std::fs::write(&files[0], first).unwrap();
    std::fs::write(&files[1], second).unwrap();
    files.to_vec()
}

#[test]
fn the_documented_queries_count_rare_late_fields_as_report_does() {
    let Some(python) =
        duckdb_python("the_documented_queries_count_rare_late_fields_as_report_does")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let files = generated_corpus(dir.path());
    let first_budget = std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .position(|line| line.contains("\"budget\""))
        .unwrap();
    assert!(first_budget >= 20_480, "line {}", first_budget + 1);
    let sql = assert_queries_match_report(&python, &files);

    // Every budget and every special run counted, and the sampled schema lacks `budget`: the
    // page's note is true of this corpus.
    let budgets: Vec<u64> = sql["budgets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["runs"].as_u64().unwrap())
        .collect();
    assert_eq!(
        budgets[1..],
        [2, 1, 1, 1, 1],
        "tokens, cost, time, context, other"
    );
    let sampled: Vec<&str> = sql["sampled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["column_name"].as_str().unwrap())
        .collect();
    assert!(sampled.contains(&"steps_used"), "{sampled:?}");
    assert!(!sampled.contains(&"budget"), "{sampled:?}");
    let unknown = sql["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["tool"] == "(unknown)")
        .expect("the call without a tool name");
    assert_eq!(unknown["errors"], Value::Null, "not recorded, never 0");
}
