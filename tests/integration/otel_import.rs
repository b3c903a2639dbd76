//! `import --from otlp` on spans that real instrumentations wrote (tests/fixtures/otel-import/,
//! made by tests/fixtures/generate/otel/ against a scripted server): each writer's success, turn
//! or usage limit, provider error, raising tool and killed process read as what happened, with
//! steps, tool calls, tool errors and tokens; span times kept as `ts`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::support::{fixture, run, stderr, stdout};

/// One imported run as the test reads it back.
#[derive(Debug, PartialEq)]
struct Outcome {
    exit_reason: String,
    error_kind: Option<String>,
    budget: Option<String>,
    steps: u64,
    tool_calls: u64,
    tool_errors: u64,
    /// Input and output tokens (only a run with an ending records them).
    tokens: Option<(u64, u64)>,
}

fn outcome(
    exit_reason: &'static str,
    error_kind: Option<&'static str>,
    budget: Option<&'static str>,
    (steps, tool_calls, tool_errors): (u64, u64, u64),
    tokens: Option<(u64, u64)>,
) -> Outcome {
    Outcome {
        exit_reason: exit_reason.to_owned(),
        error_kind: error_kind.map(str::to_owned),
        budget: budget.map(str::to_owned),
        steps,
        tool_calls,
        tool_errors,
        tokens,
    }
}

/// The events of `file` (under tests/fixtures/otel-import/) imported with `--from FORMAT`.
fn import(file: &str, format: &str) -> Vec<Value> {
    let path = fixture(&format!("otel-import/{file}"));
    let output = run(&[
        "import",
        "--from",
        format,
        "--capture",
        "full",
        path.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{file}: {}", stderr(&output));
    stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The one run of `events`.
fn only_run(file: &str, events: &[Value]) -> Outcome {
    let runs: Vec<&str> = events
        .iter()
        .filter(|e| e["event_type"] == "run_started")
        .map(|e| e["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(runs.len(), 1, "{file}: one run, not {runs:?}");
    let count = |test: &dyn Fn(&Value) -> bool| events.iter().filter(|e| test(e)).count() as u64;
    let tool_calls = count(&|e| e["action_type"] == "tool_call");
    let tool_errors = count(&|e| e["event_type"] == "observation" && e["is_error"] == true);
    let steps = events
        .iter()
        .filter_map(|e| e["step"].as_u64())
        .max()
        .unwrap_or(0);
    let text = |value: &Value| value.as_str().map(str::to_owned);
    match events.iter().find(|e| e["event_type"] == "run_finished") {
        None => outcome(
            "incomplete",
            None,
            None,
            (steps, tool_calls, tool_errors),
            None,
        ),
        Some(end) => Outcome {
            exit_reason: text(&end["exit_reason"]).unwrap(),
            error_kind: text(&end["error_kind"]),
            budget: text(&end["budget"]),
            steps: end["steps_used"].as_u64().unwrap(),
            tool_calls,
            tool_errors,
            tokens: end["usage"]["input_tokens"]
                .as_u64()
                .zip(end["usage"]["output_tokens"].as_u64()),
        },
    }
}

/// What each writer's five runs must read as. The scripted server reports 10 input tokens per
/// request so far and 5 output tokens, so two requests make (30, 10) and one (10, 5).
fn expected(writer: &str, scenario: &str) -> Outcome {
    let mut want = expected_with_content(writer, scenario);
    if writer == "openai-v2-defaults" {
        // Without content the client's spans say that tools were asked for, not which; and an
        // incomplete run shows steps only through its events, of which it then has none.
        want.tool_calls = 0;
        if want.exit_reason == "incomplete" {
            want.steps = 0;
        }
    }
    want
}

fn expected_with_content(writer: &str, scenario: &str) -> Outcome {
    let client_only = matches!(
        writer,
        "openai-v2" | "openai-v2-defaults" | "openinference-openai"
    );
    match scenario {
        "success" => outcome("finished", None, None, (2, 1, 0), Some((30, 10))),
        // The client sees no limit: the conversation stops after a request for tools.
        "limit" if client_only => outcome("incomplete", None, None, (2, 2, 0), None),
        "limit" => outcome(
            "max_steps_exceeded",
            Some("budget_exhausted"),
            Some("steps"),
            (2, 2, 0),
            Some((30, 10)),
        ),
        // any-agent writes no span for the failed request.
        "provider_error" => outcome(
            "internal_error",
            Some("model_failure"),
            None,
            (if writer == "any-agent" { 1 } else { 2 }, 1, 0),
            Some((10, 5)),
        ),
        // pydantic-ai lets a tool's exception end the run.
        "tool_raises" if writer == "pydantic-ai" => outcome(
            "internal_error",
            Some("agent_error"),
            None,
            (1, 1, 1),
            Some((10, 5)),
        ),
        // The client does not see tool results' errors (no flag is written).
        "tool_raises" if client_only => outcome("finished", None, None, (2, 1, 0), Some((30, 10))),
        "tool_raises" => outcome("finished", None, None, (2, 1, 1), Some((30, 10))),
        "killed" => outcome("incomplete", None, None, (1, 1, 0), None),
        other => panic!("no scenario {other}"),
    }
}

const WRITERS: [&str; 8] = [
    "agents-traceloop",
    "agents-contrib",
    "agents-openinference",
    "pydantic-ai",
    "openai-v2",
    "openai-v2-defaults",
    "openinference-openai",
    "any-agent",
];
const SCENARIOS: [&str; 5] = [
    "success",
    "limit",
    "provider_error",
    "tool_raises",
    "killed",
];

#[test]
fn every_writers_runs_end_as_they_did() {
    let mut wrong = Vec::new();
    for writer in WRITERS {
        for scenario in SCENARIOS {
            let file = format!("{writer}/{scenario}.jsonl");
            let got = only_run(&file, &import(&file, "otlp"));
            let want = expected(writer, scenario);
            if got != want {
                wrong.push(format!("{file}:\n  got  {got:?}\n  want {want:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn any_agent_trace_json_reads_a_step_limit_callback_as_max_steps() {
    // any-agent's own AgentTrace JSON of the same runs (`--from otel-genai`): it has no token
    // counts on its spans' run, and no file for the killed run (nothing was written).
    let cases = [
        ("success", outcome("finished", None, None, (2, 1, 0), None)),
        (
            "limit",
            outcome(
                "max_steps_exceeded",
                Some("budget_exhausted"),
                Some("steps"),
                (2, 2, 0),
                None,
            ),
        ),
        (
            "provider_error",
            outcome(
                "internal_error",
                Some("model_failure"),
                None,
                (1, 1, 0),
                None,
            ),
        ),
        (
            "tool_raises",
            outcome("finished", None, None, (2, 1, 1), None),
        ),
    ];
    for (scenario, want) in cases {
        let file = format!("any-agent-trace/{scenario}.json");
        let events = import(&file, "otel-genai");
        assert_eq!(only_run(&file, &events), want, "{file}");
        let end = events.last().unwrap();
        if scenario == "limit" {
            assert_eq!(end["native_ending"], "StepLimitReached");
        }
    }
}

#[test]
fn the_agent_span_decides_not_the_always_ok_workflow_span() {
    // The Agents SDK instrumentations end the workflow root OK above the failing agent span.
    for writer in ["agents-traceloop", "agents-contrib", "agents-openinference"] {
        let events = import(&format!("{writer}/limit.jsonl"), "otlp");
        let end = events.last().unwrap();
        assert_eq!(end["exit_reason"], "max_steps_exceeded", "{writer}");
        let started = &events[0];
        assert_eq!(started["agent"], "Calculator", "{writer}");
        assert_eq!(
            started["task"], "What is 2 + 3? Use the add tool.",
            "{writer}"
        );
        assert_eq!(started["model"]["name"], "scripted-model", "{writer}");
    }
    let events = import("pydantic-ai/limit.jsonl", "otlp");
    assert_eq!(
        events.last().unwrap()["native_ending"],
        "UsageLimitExceeded"
    );
}

#[test]
fn a_failed_model_request_is_a_model_failure_not_invalid_output() {
    for writer in WRITERS {
        let events = import(&format!("{writer}/provider_error.jsonl"), "otlp");
        assert!(
            events.iter().all(|e| e["event_type"] != "model_feedback"),
            "{writer}: {events:#?}"
        );
    }
}

#[test]
fn a_killed_run_is_incomplete_and_no_span_stands_in_for_its_root() {
    for writer in WRITERS {
        let file = format!("{writer}/killed.jsonl");
        let events = import(&file, "otlp");
        assert!(
            events.iter().all(|e| e["event_type"] != "run_finished"),
            "{file}"
        );
        assert_eq!(
            events[0]["agent"],
            Value::Null,
            "{file}: no agent span ended"
        );
    }
}

#[test]
fn client_only_requests_of_one_conversation_are_one_run() {
    for writer in ["openai-v2", "openinference-openai"] {
        let file = format!("{writer}/success.jsonl");
        let events = import(&file, "otlp");
        let kinds: Vec<(&str, u64, &str)> = events
            .iter()
            .map(|e| {
                (
                    e["event_type"].as_str().unwrap(),
                    e["step"].as_u64().unwrap(),
                    e["action_type"]
                        .as_str()
                        .or(e["tool_name"].as_str())
                        .unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("run_started", 0, ""),
                ("model_action", 1, "tool_call"),
                ("observation", 1, "add"),
                ("model_action", 2, "finish"),
                ("run_finished", 2, ""),
            ],
            "{file}"
        );
        assert_eq!(events[1]["arguments"], serde_json::json!({"a": 2, "b": 3}));
        assert_eq!(events[2]["content"], "5");
        assert_eq!(events[3]["answer"], "5");
        assert_eq!(events[4]["ending_inferred"], true);
        assert_eq!(events[0]["tool_errors_recorded"], false);
    }
}

/// A span's time in OTLP/JSON as a trace `ts`.
fn ts_of(nanos: &Value) -> String {
    let nanos: i64 = nanos.as_str().unwrap().parse().unwrap();
    looptrace::time::ts_from_unix_ms(nanos / 1_000_000)
}

#[test]
fn span_times_are_kept_as_ts() {
    let path = fixture("otel-import/pydantic-ai/success.jsonl");
    let spans: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .flat_map(|line| {
            let data: Value = serde_json::from_str(line).unwrap();
            data["resourceSpans"][0]["scopeSpans"][0]["spans"]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect();
    let root = spans
        .iter()
        .find(|s| s.get("parentSpanId").is_none())
        .unwrap();
    let tool = spans
        .iter()
        .find(|s| s["name"] == "execute_tool add")
        .unwrap();
    let events = import("pydantic-ai/success.jsonl", "otlp");
    let ts = |kind: &str| {
        events.iter().find(|e| e["event_type"] == kind).unwrap()["ts"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(ts("run_started"), ts_of(&root["startTimeUnixNano"]));
    assert_eq!(ts("run_finished"), ts_of(&root["endTimeUnixNano"]));
    // The tool call was proposed when the model request that asked for it ended.
    let nanos = |span: &Value, key: &str| -> u64 { span[key].as_str().unwrap().parse().unwrap() };
    let asked = spans
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("chat "))
        .filter(|s| nanos(s, "endTimeUnixNano") <= nanos(tool, "startTimeUnixNano"))
        .max_by_key(|s| nanos(s, "endTimeUnixNano"))
        .unwrap();
    assert_eq!(ts("model_action"), ts_of(&asked["endTimeUnixNano"]));
    assert_eq!(ts("observation"), ts_of(&tool["endTimeUnixNano"]));
    let times: Vec<&str> = events.iter().map(|e| e["ts"].as_str().unwrap()).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times[1..times.len() - 1], sorted[1..sorted.len() - 1]);
}

#[test]
fn report_on_the_folder_counts_what_import_reads_file_by_file() {
    let mut by_file: BTreeMap<String, u64> = BTreeMap::new();
    for writer in WRITERS {
        for scenario in SCENARIOS {
            let file = format!("{writer}/{scenario}.jsonl");
            let got = only_run(&file, &import(&file, "otlp"));
            *by_file.entry(got.exit_reason).or_default() += 1;
        }
    }
    for scenario in ["success", "limit", "provider_error", "tool_raises"] {
        let file = format!("any-agent-trace/{scenario}.json");
        let got = only_run(&file, &import(&file, "otel-genai"));
        *by_file.entry(got.exit_reason).or_default() += 1;
    }
    let folder = fixture("otel-import");
    let output = run(&["report", "--format", "json", folder.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let from_report: BTreeMap<String, u64> = report["exit_reasons"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["runs"] != 0)
        .map(|row| {
            (
                row["exit_reason"].as_str().unwrap().to_owned(),
                row["runs"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(from_report, by_file);
}

#[test]
fn cut_or_damaged_span_files_never_panic() {
    use looptrace::import::{Context, IMPORTERS};
    for writer in WRITERS {
        for scenario in SCENARIOS {
            let path = fixture(&format!("otel-import/{writer}/{scenario}.jsonl"));
            let bytes = std::fs::read(&path).unwrap();
            for tenth in 1..10 {
                let mut cut = bytes[..bytes.len() * tenth / 10].to_vec();
                if let Some(last) = cut.last_mut() {
                    *last ^= 0x5a;
                }
                let context = Context {
                    file: "cut.jsonl".to_owned(),
                    name: "cut.jsonl".to_owned(),
                };
                for importer in IMPORTERS {
                    let _ = importer.import(&mut cut.as_slice(), &context, &mut |_| Ok(()));
                }
            }
        }
    }
}
