//! Scorers through `eval`: answer and run checks of `expect`, a command scorer run as a real
//! program after the run, and a judge that asks a real local HTTP server for a grade.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::live_model_server::{Reply, Server, openai};
use crate::support::{looptrace, read_events, stderr, trace_for};

/// A scripted model that calls the calculator once, then answers `answer`.
fn calculates_then_answers(answer: &str) -> Value {
    json!({"actions": [
        {"type": "tool_call", "tool_name": "calculator",
         "arguments": {"left": 12, "operation": "multiply", "right": 7}},
        {"type": "finish", "answer": answer}
    ]})
}

fn answers(answer: &str) -> Value {
    json!({"actions": [{"type": "finish", "answer": answer}]})
}

/// Writes `suite` into `dir` and evaluates it into `dir/out`.
fn eval(dir: &Path, suite: &Value, extra: &[&str]) -> Output {
    let path = dir.join("suite.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    looptrace()
        .arg("eval")
        .arg(&path)
        .arg("--out")
        .arg(dir.join("out"))
        .args(extra)
        .output()
        .unwrap()
}

fn results(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("out/results.json")).unwrap()).unwrap()
}

fn row<'a>(results: &'a Value, id: &str) -> &'a Value {
    results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}"))
}

#[test]
fn answer_and_run_checks_score_each_run_and_a_failing_one_fails_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let suite = json!({
        "name": "checks",
        "defaults": {"capture": "full", "expect": {"ignore_case": true, "normalize_whitespace": true}},
        "tasks": [
            {"id": "regex", "prompt": "p", "model": answers("  The answer is 84 "),
             "expect": {"answer_regex": "^the answer is \\d+$"}},
            {"id": "schema", "prompt": "p", "model": answers("{\"n\": \"84\"}"),
             "expect": {"answer_json_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}},
            {"id": "number", "prompt": "p", "model": answers("83.99"),
             "expect": {"answer_number": {"value": 84, "tolerance": 0.05}}},
            {"id": "one-of", "prompt": "p", "model": answers("Maybe"),
             "expect": {"answer_in": ["yes", "no"], "answer": "MAYBE"}},
            {"id": "tools", "prompt": "p", "model": calculates_then_answers("84"),
             "expect": {"tools_called": ["calculator", "search"], "tools_not_called": ["calculator"],
                        "max_tool_errors": 0, "max_total_tokens": 10, "max_cost_usd": 0.01,
                        "max_duration_s": 3600}}
        ]
    });
    let suite_schema =
        jsonschema::validator_for(&crate::support::schema("suite.schema.json")).unwrap();
    assert!(
        suite_schema.is_valid(&suite),
        "the suite schema holds the new keys"
    );
    let html = dir.path().join("page.html");
    let output = eval(dir.path(), &suite, &["--html", html.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let page = std::fs::read_to_string(&html).unwrap();
    let scores = &page[page
        .find("<section id=\"scores\">")
        .expect("a scores section")..];
    assert!(
        scores.contains("<tr><td>tools_called</td><td>run</td><td class=\"num\">0/1</td>"),
        "{scores}"
    );
    assert!(
        scores.contains("<tr><td>answer_number</td><td>answer</td><td class=\"num\">1/1</td><td class=\"num\">83.990</td>"),
        "{scores}"
    );
    let results = results(dir.path());
    let regex = row(&results, "regex");
    assert_eq!(regex["expectation"], "met");
    assert_eq!(
        regex["scores"],
        json!([{"name": "answer_regex", "kind": "answer", "passed": true, "value": null, "explanation": null}])
    );
    let schema = row(&results, "schema");
    assert_eq!(schema["expectation"], "failed");
    assert_eq!(
        schema["failures"][0],
        "answer_json_schema (answer): the answer does not satisfy the schema at `/n`: \"84\" is not of type \"integer\""
    );
    let number = row(&results, "number");
    assert_eq!(number["scores"][0]["value"], 83.99);
    assert_eq!(number["expectation"], "met");
    let one_of = row(&results, "one-of");
    assert_eq!(
        one_of["failures"],
        json!(["answer_in (answer): expected one of [\"yes\", \"no\"], got \"Maybe\""]),
        "the exact answer check compares without case too"
    );
    let tools = row(&results, "tools");
    let by_name: Vec<(&str, bool)> = tools["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["passed"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        by_name,
        [
            ("max_tool_errors", true),
            ("max_total_tokens", true),
            ("max_duration_s", true),
            ("max_cost_usd", true),
            ("tools_called", false),
            ("tools_not_called", false)
        ],
        "a scripted model reports no tokens and costs nothing"
    );
    assert_eq!(
        tools["failures"],
        json!([
            "tools_called (run): expected calls to search, never called",
            "tools_not_called (run): expected no calls to calculator (1 call)"
        ])
    );
    let schema_doc = crate::support::schema("results.schema.json");
    let validator = jsonschema::validator_for(&schema_doc).unwrap();
    assert!(
        validator.is_valid(&results),
        "results.json follows its schema"
    );
}

#[test]
fn bad_checks_and_scorers_are_refused_at_their_json_path_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let suite = json!({
        "name": "bad",
        "tasks": [
            {"id": "a", "prompt": "p", "model": answers("x"),
             "expect": {"answer_regex": "(", "answer_number": {"value": 1, "tol": 2}, "answer_colour": "red"},
             "scorers": [{"kind": "command", "command": []},
                         {"kind": "vibes"}]},
            {"id": "b", "prompt": "p", "model": answers("x"), "expect": {"answer_regex": "("},
             "scorers": [{"kind": "judge", "model": "nowhere", "rubric": "r"}]}
        ]
    });
    let output = eval(dir.path(), &suite, &[]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    for expected in [
        "$.tasks[0].expect.answer_colour: unknown key",
        "$.tasks[0].expect.answer_number.tol: unknown key (expected one of: tolerance, value)",
        "$.tasks[0].scorers[0].command: expected at least 1 item, got an empty array",
        "$.tasks[0].scorers[1].kind: expected \"command\" or \"judge\"; got \"vibes\"",
        "$.tasks[1].expect.answer_regex: not a regular expression: unclosed group",
        "$.tasks[1].scorers[0]: unknown model \"nowhere\"",
    ] {
        assert!(err.contains(expected), "{expected}\n{err}");
    }
    assert!(!dir.path().join("out").exists(), "nothing is written");
}

/// A scorer program: reads the run on stdin, checks a file in its working folder, prints a score.
const SCORER: &str = r#"#!/bin/sh
input=$(cat)
case "$input" in
  *'"answer":"84"'*) ;;
  *) echo "wrong answer: $input"; exit 1 ;;
esac
test -f expected.txt || { echo "no expected.txt in $(pwd)" >&2; exit 3; }
if [ -n "$SECRET_KEY" ]; then echo "the key leaked"; exit 4; fi
printf '{"score": %s, "explanation": "checked in %s"}\n' "$1" "$(basename "$(pwd)")"
"#;

#[test]
fn a_command_scorer_runs_after_the_run_in_the_suite_folder_and_its_status_or_score_decides() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("score.sh"), SCORER).unwrap();
    std::fs::write(dir.path().join("expected.txt"), "84").unwrap();
    let scorer = |score: &str, min: Option<f64>| {
        let mut spec = json!({"kind": "command", "name": format!("s{score}"),
                              "command": ["sh", "./score.sh", score]});
        if let Some(min) = min {
            spec["min_score"] = json!(min);
        }
        spec
    };
    let suite = json!({
        "name": "command",
        "defaults": {"capture": "full"},
        "tasks": [
            {"id": "right", "prompt": "p", "model": answers("84"),
             "scorers": [scorer("0.2", None), scorer("0.9", Some(0.5))]},
            {"id": "low", "prompt": "p", "model": answers("84"),
             "scorers": [scorer("0.3", Some(0.5))]},
            {"id": "wrong", "prompt": "p", "model": answers("85"),
             "scorers": [scorer("1", None)]}
        ]
    });
    let output = looptrace()
        .arg("eval")
        .arg({
            let path = dir.path().join("suite.json");
            std::fs::write(&path, suite.to_string()).unwrap();
            path
        })
        .arg("--out")
        .arg(dir.path().join("out"))
        .env("SECRET_KEY", "sk-never-shown")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let results = results(dir.path());
    let folder = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let right = row(&results, "right");
    assert_eq!(right["expectation"], "met", "{right}");
    assert_eq!(
        right["scores"],
        json!([
            {"name": "s0.2", "kind": "command", "passed": true, "value": 0.2,
             "explanation": format!("`sh` exited with status 0: checked in {folder}")},
            {"name": "s0.9", "kind": "command", "passed": true, "value": 0.9,
             "explanation": format!("score 0.9 ≥ 0.5: checked in {folder}")}
        ])
    );
    let low = row(&results, "low");
    assert_eq!(
        low["failures"],
        json!([format!(
            "s0.3 (command): score 0.3 < min_score 0.5: checked in {folder}"
        )])
    );
    let wrong = row(&results, "wrong");
    assert_eq!(
        wrong["failures"],
        json!([
            "s1 (command): `sh` exited with status 1: wrong answer: {\"answer\":\"85\",\"exit_reason\":\"finished\"}"
        ])
    );
}

#[test]
fn a_command_scorer_under_summary_capture_keeps_only_a_summary_of_its_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("score.sh"), SCORER).unwrap();
    let suite = json!({
        "name": "hidden",
        "tasks": [{"id": "a", "prompt": "p", "model": answers("85"),
                   "scorers": [{"kind": "command", "command": ["sh", "./score.sh", "1"]}]}]
    });
    let output = eval(dir.path(), &suite, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = std::fs::read_to_string(dir.path().join("out/results.json")).unwrap();
    assert!(!text.contains("wrong answer"), "{text}");
    let results: Value = serde_json::from_str(&text).unwrap();
    let why = row(&results, "a")["scores"][0]["explanation"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        why.starts_with("`sh` exited with status 1: chars="),
        "{why}"
    );
}

#[test]
fn a_judge_grades_through_a_live_server_its_call_is_in_the_trace_and_bad_grades_never_pass() {
    let server = Server::start(vec![
        Reply::ok(openai::answer(
            r#"{"grade": "pass", "explanation": "names the capital", "score": 1}"#,
            "stop",
        )),
        Reply::ok(openai::answer("PASS - looks right to me", "stop")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let suite = json!({
        "name": "judged",
        "defaults": {"capture": "full"},
        "models": {"grader": {"api": "openai-chat", "base_url": format!("{}/v1", server.url),
                              "model": "grader-1", "api_key_env": "JUDGE_KEY"}},
        "tasks": [
            {"id": "good", "prompt": "What is the capital of France?", "model": answers("Paris"),
             "scorers": [{"kind": "judge", "model": "grader", "rubric": "The answer names Paris."}]},
            {"id": "bad", "prompt": "What is the capital of Spain?", "model": answers("Madrid"),
             "scorers": [{"kind": "judge", "model": "grader", "rubric": "The answer names Madrid."}]}
        ]
    });
    let suite_schema =
        jsonschema::validator_for(&crate::support::schema("suite.schema.json")).unwrap();
    assert!(
        suite_schema.is_valid(&suite),
        "the suite schema holds models and judges"
    );
    let path = dir.path().join("suite.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    let output = looptrace()
        .arg("eval")
        .arg(&path)
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["--jobs", "1"])
        .env("JUDGE_KEY", "sk-judge-secret")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let requests = server.finish();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].headers["authorization"],
        "Bearer sk-judge-secret"
    );
    assert_eq!(requests[0].body["model"], "grader-1");
    let asked = requests[0].body["messages"].to_string();
    assert!(asked.contains("The answer names Paris."), "{asked}");
    assert!(asked.contains("Paris"), "{asked}");
    let results = results(dir.path());
    assert_eq!(
        row(&results, "good")["scores"],
        json!([{"name": "judge", "kind": "judge", "passed": true, "value": 1.0,
                "explanation": "grader graded pass: names the capital"}])
    );
    let bad = row(&results, "bad");
    assert_eq!(bad["expectation"], "failed");
    assert_eq!(bad["scores"][0]["passed"], false);
    assert!(
        bad["scores"][0]["explanation"]
            .as_str()
            .unwrap()
            .starts_with("invalid grader output"),
        "{bad}"
    );
    let out = dir.path().join("out");
    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    assert!(!text.contains("sk-judge-secret"));
    let events = read_events(&trace_for(&out, "good"));
    let finished = events.last().unwrap();
    assert_eq!(finished["event_type"], "run_finished");
    assert_eq!(finished["scores"][0]["name"], "judge");
    let call = events
        .iter()
        .find(|e| e["event_type"] == "scorer_call")
        .expect("the judge's call is recorded");
    assert_eq!(call["scorer"], "judge");
    assert!(
        call["raw_response"]
            .as_str()
            .unwrap()
            .contains("names the capital")
    );
    let trace = std::fs::read_to_string(trace_for(&out, "good")).unwrap();
    assert!(!trace.contains("sk-judge-secret"));
    // `report` knows the event, and a judge's tokens are not the run's.
    let report = crate::support::run(&["report", trace_for(&out, "good").to_str().unwrap()]);
    let report = crate::support::stdout(&report);
    assert!(!report.contains("unknown_event_type"), "{report}");
    // Offline, with the server gone: the recorded response gives the same grade.
    let spec = looptrace::eval::scorers::ScorerSpec::Judge(looptrace::eval::scorers::JudgeSpec {
        name: None,
        model: "openai-chat:grader-1@http://127.0.0.1:9/v1".to_owned(),
        rubric: "The answer names Paris.".to_owned(),
        api_key_env: None,
    });
    let judge = looptrace::eval::scorers::JudgeScorer::from_spec(&spec).unwrap();
    let grade = judge
        .regrade(call["raw_response"].as_str().unwrap())
        .unwrap();
    assert_eq!(grade.explanation.as_deref(), Some("names the capital"));
    assert_eq!(grade.score, Some(1.0));
}

#[test]
fn defaults_scorers_serve_tasks_without_their_own_and_a_tasks_list_replaces_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("score.sh"), SCORER).unwrap();
    std::fs::write(dir.path().join("expected.txt"), "84").unwrap();
    let suite = json!({
        "name": "defaults",
        "defaults": {
            "scorers": [{"kind": "command", "name": "from-defaults", "command": ["sh", "./score.sh", "1"]}],
            "expect": {"answer_in": ["84", "85"]}
        },
        "tasks": [
            {"id": "inherits", "prompt": "p", "model": answers("84")},
            {"id": "own", "prompt": "p", "model": answers("85"),
             "expect": {"answer_in": ["85"]},
             "scorers": [{"kind": "command", "name": "own", "command": ["true"]}]}
        ]
    });
    let output = eval(dir.path(), &suite, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = results(dir.path());
    let names = |id: &str| -> Vec<String> {
        row(&results, id)["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("inherits"), ["answer_in", "from-defaults"]);
    assert_eq!(names("own"), ["answer_in", "own"]);
}
