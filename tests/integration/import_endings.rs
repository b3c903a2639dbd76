//! How each format's runs end, read from files the real programs wrote (or reduced from real
//! files where the program cannot run here; each fixture folder's README says which): the exit
//! reason, error kind, budget, steps, tool calls, tool errors and final answer of every run.

use serde_json::Value;

use crate::support::{fixture, run, stderr, stdout};

/// One imported run, as a user reads it off `report` and `show`.
#[derive(Debug, PartialEq)]
struct Outcome {
    exit_reason: String,
    error_kind: Option<String>,
    budget: Option<String>,
    steps: u64,
    tool_calls: u64,
    tool_errors: u64,
    feedback: u64,
    /// The finish's answer (full capture), if the run has a finish.
    answer: Option<String>,
}

/// `(exit reason, error kind, budget, steps, tool calls, tool errors)`: the part every item
/// asserts.
type Shape = (
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    u64,
    u64,
    u64,
);

impl Outcome {
    fn shape(&self) -> (String, Option<String>, Option<String>, u64, u64, u64) {
        (
            self.exit_reason.clone(),
            self.error_kind.clone(),
            self.budget.clone(),
            self.steps,
            self.tool_calls,
            self.tool_errors,
        )
    }
}

fn expect(shape: Shape) -> (String, Option<String>, Option<String>, u64, u64, u64) {
    let (reason, kind, budget, steps, calls, errors) = shape;
    (
        reason.to_owned(),
        kind.map(str::to_owned),
        budget.map(str::to_owned),
        steps,
        calls,
        errors,
    )
}

/// Imports `paths` (under `tests/fixtures/import/`) with full capture and returns each run's
/// id and outcome, in order.
fn outcomes(paths: &[&str]) -> Vec<(String, Outcome)> {
    let paths: Vec<String> = paths
        .iter()
        .map(|p| fixture(&format!("import/{p}")).display().to_string())
        .collect();
    let mut args = vec!["import", "--capture", "full"];
    args.extend(paths.iter().map(String::as_str));
    let output = run(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    outcomes_of(&stdout(&output))
}

/// The outcomes of the runs in trace v1 text.
fn outcomes_of(trace: &str) -> Vec<(String, Outcome)> {
    let mut runs: Vec<(String, Outcome)> = Vec::new();
    for line in trace.lines() {
        let event: Value = serde_json::from_str(line).unwrap();
        let id = event["run_id"].as_str().unwrap().to_owned();
        let text = |key: &str| event[key].as_str().map(str::to_owned);
        if event["event_type"] == "run_started" {
            runs.push((
                id.clone(),
                Outcome {
                    exit_reason: "incomplete".to_owned(),
                    error_kind: None,
                    budget: None,
                    steps: 0,
                    tool_calls: 0,
                    tool_errors: 0,
                    feedback: 0,
                    answer: None,
                },
            ));
        }
        let (_, current) = runs.iter_mut().rev().find(|(run, _)| *run == id).unwrap();
        current.steps = current.steps.max(event["step"].as_u64().unwrap());
        match (event["event_type"].as_str(), event["action_type"].as_str()) {
            (Some("model_action"), Some("tool_call")) => current.tool_calls += 1,
            (Some("model_action"), Some("finish")) => current.answer = text("answer"),
            (Some("observation"), _) if event["is_error"] == true => current.tool_errors += 1,
            (Some("model_feedback"), _) => current.feedback += 1,
            (Some("run_finished"), _) => {
                current.exit_reason = text("exit_reason").unwrap();
                current.error_kind = text("error_kind");
                current.budget = text("budget");
                current.steps = event["steps_used"].as_u64().unwrap();
                if current.exit_reason == "max_steps_exceeded" {
                    assert!(current.budget.is_some(), "no budget: {line}");
                }
            }
            _ => {}
        }
    }
    runs
}

/// The one run of `path`.
fn only(path: &str) -> Outcome {
    let mut runs = outcomes(&[path]);
    assert_eq!(runs.len(), 1, "{path}: {runs:?}");
    runs.remove(0).1
}

#[test]
fn mini_swe_agent_2_reads_tool_calls_format_errors_and_timeouts() {
    let run = only("mini-swe-agent/endings/submitted.traj.json");
    // ls, cat (exit 1), sleep (timed out), the reply without a tool call, a command that printed
    // the submit marker second (the run went on), then the submit: the finish.
    assert_eq!(run.shape(), expect(("finished", None, None, 6, 4, 2)));
    assert_eq!(run.feedback, 1);
    assert_eq!(run.answer.as_deref(), Some(""));
    let trace = stdout(&run_full("mini-swe-agent/endings/submitted.traj.json"));
    assert!(trace.contains(r#""error_kind":"timeout""#), "{trace}");
}

#[test]
fn mini_swe_agent_2_endings() {
    let cases: [(&str, Shape); 5] = [
        (
            "rate_limited",
            ("internal_error", Some("model_failure"), None, 2, 1, 0),
        ),
        (
            "server_error",
            ("internal_error", Some("model_failure"), None, 1, 0, 0),
        ),
        (
            "context_window",
            (
                "max_steps_exceeded",
                Some("budget_exhausted"),
                Some("context"),
                2,
                1,
                0,
            ),
        ),
        (
            "step_limit",
            (
                "max_steps_exceeded",
                Some("budget_exhausted"),
                Some("steps"),
                2,
                2,
                0,
            ),
        ),
        (
            "repeated_format_error",
            ("invalid_model_output", Some("format_error"), None, 4, 1, 0),
        ),
    ];
    for (name, shape) in cases {
        let run = only(&format!("mini-swe-agent/endings/{name}.traj.json"));
        assert_eq!(run.shape(), expect(shape), "{name}");
    }
    assert_eq!(
        only("mini-swe-agent/endings/repeated_format_error.traj.json").feedback,
        3
    );
}

/// `import --capture full` of one fixture.
fn run_full(path: &str) -> std::process::Output {
    let path = fixture(&format!("import/{path}"));
    run(&["import", "--capture", "full", path.to_str().unwrap()])
}

#[test]
fn codex_0_171_failed_turns_and_answers() {
    let cases: [(&str, Shape); 6] = [
        // Killed while its second request was in flight: no end.
        ("killed", ("incomplete", None, None, 1, 1, 0)),
        // ls, cat (exit 1), the answer: three responses.
        ("finished", ("finished", None, None, 3, 2, 1)),
        // `touch` refused by the read-only sandbox.
        ("sandbox_denied", ("finished", None, None, 2, 1, 1)),
        (
            "server_error",
            ("internal_error", Some("model_failure"), None, 1, 1, 0),
        ),
        (
            "rate_limited",
            ("internal_error", Some("rate_limited"), None, 1, 1, 0),
        ),
        (
            "context_window",
            (
                "max_steps_exceeded",
                Some("budget_exhausted"),
                Some("context"),
                1,
                1,
                0,
            ),
        ),
    ];
    for (name, shape) in cases {
        let run = only(&format!("codex/endings/{name}.jsonl"));
        assert_eq!(run.shape(), expect(shape), "{name}");
        let answer = match name {
            "finished" => Some("The file is missing."),
            "sandbox_denied" => Some("The sandbox refused the write."),
            _ => None,
        };
        assert_eq!(run.answer.as_deref(), answer, "{name}");
    }
}

#[test]
fn claude_code_2_1_endings() {
    let cases: [(&str, Shape); 8] = [
        // Killed while its second request was in flight: no answer.
        ("killed", ("incomplete", None, None, 1, 1, 0)),
        // ls, cat (exit 1), the answer.
        ("finished", ("finished", None, None, 3, 2, 1)),
        // The same session without the second call's result: the answer still ends it.
        ("unanswered_call", ("finished", None, None, 3, 2, 0)),
        // A custom slash command's expanded text is the prompt.
        ("slash_command", ("finished", None, None, 2, 1, 0)),
        (
            "max_turns",
            (
                "max_steps_exceeded",
                Some("budget_exhausted"),
                Some("steps"),
                1,
                1,
                0,
            ),
        ),
        (
            "prompt_too_long",
            (
                "max_steps_exceeded",
                Some("budget_exhausted"),
                Some("context"),
                2,
                1,
                0,
            ),
        ),
        (
            "server_error",
            ("internal_error", Some("model_failure"), None, 1, 0, 0),
        ),
        (
            "gateway_error_payload",
            ("internal_error", Some("model_failure"), None, 2, 1, 0),
        ),
    ];
    for (name, shape) in cases {
        let run = only(&format!("claude-code/endings/{name}.jsonl"));
        assert_eq!(run.shape(), expect(shape), "{name}");
        let answer = match name {
            "finished" | "unanswered_call" => Some("The file is missing."),
            "slash_command" => Some("Listed."),
            _ => None,
        };
        assert_eq!(run.answer.as_deref(), answer, "{name}");
    }
}

#[test]
fn gemini_cli_jsonl_sessions_are_read_as_gemini_cli_resumes_them() {
    let runs = outcomes(&["gemini-cli/endings/session-2026-11-20T10-00-5b1e3c2a.jsonl"]);
    let ids: Vec<&str> = runs.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "5b1e3c2a-0d4f-4e8b-9a61-7c2f0e9d4a10/prompt-1",
            "5b1e3c2a-0d4f-4e8b-9a61-7c2f0e9d4a10/prompt-2",
            "5b1e3c2a-0d4f-4e8b-9a61-7c2f0e9d4a10/prompt-3",
        ]
    );
    let shapes: Vec<_> = runs.iter().map(|(_, run)| run.shape()).collect();
    assert_eq!(
        shapes,
        [
            // Each message counted once although written twice; the shell's exit code 1 is a
            // tool error.
            expect(("finished", None, None, 3, 2, 1)),
            // "Request cancelled.": no ending.
            expect(("incomplete", None, None, 1, 1, 1)),
            // The rewound prompt is gone; the read_file call failed.
            expect(("finished", None, None, 2, 1, 1)),
        ]
    );
    assert_eq!(
        runs[0].1.answer.as_deref(),
        Some("The test expects 2 but the script prints 3.")
    );
    // Observations are the tool's output text, not the functionResponse wrapper.
    let trace = stdout(&run_full(
        "gemini-cli/endings/session-2026-11-20T10-00-5b1e3c2a.jsonl",
    ));
    assert!(
        trace.contains(r#""content":"File not found: /work/fixture/NOTES.md""#),
        "{trace}"
    );
    assert!(!trace.contains("functionResponse"), "{trace}");
}

#[test]
fn a_batch_folder_counts_each_instance_once() {
    let folder = fixture("import/mini-swe-agent/batch");
    let output = run(&["import", folder.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let runs = outcomes_of(&stdout(&output));
    let ids: Vec<&str> = runs.iter().map(|(id, _)| id.as_str()).collect();
    // The trajectories of a-1 and b-2 win over their summary lines; c-3 (listed twice) and
    // d-4 come from the summary alone.
    assert_eq!(
        ids,
        [
            "exit_statuses_1700000001.0.yaml/inst__c-3",
            "exit_statuses_1700000001.0.yaml/inst__d-4",
            "inst__a-1.traj.json",
            "inst__b-2.traj.json",
        ]
    );
    let shapes: Vec<_> = runs.iter().map(|(_, run)| run.shape()).collect();
    assert_eq!(
        shapes,
        [
            expect(("finished", None, None, 0, 0, 0)),
            expect(("internal_error", Some("model_failure"), None, 0, 0, 0)),
            expect(("finished", None, None, 6, 4, 2)),
            expect(("internal_error", Some("model_failure"), None, 2, 1, 0)),
        ]
    );
    let warnings = stderr(&output);
    assert!(
        warnings.contains(
            "line 8: instance `inst__c-3` is listed again (under `RateLimitError`, first under \
             `Submitted`); it counts once"
        ),
        "{warnings}"
    );
    // Named alone, the summary gives every instance it lists, once each.
    let alone = outcomes(&["mini-swe-agent/batch/exit_statuses_1700000001.0.yaml"]);
    assert_eq!(alone.len(), 4);
}

/// Every file under `folder`, in order.
fn files_under(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// `(file, run id without its ~N, exit reason, error kind, steps)` of a run.
type Listed = (String, String, String, Option<String>, u64);

#[test]
fn report_on_the_fixture_folder_gives_the_outcomes_import_gives_file_by_file() {
    let root = fixture("import");
    let mut by_file: Vec<Listed> = Vec::new();
    let batch = fixture("import/mini-swe-agent/batch");
    let summary = batch.join("exit_statuses_1700000001.0.yaml");
    for file in files_under(&root) {
        let output = run(&["import", file.to_str().unwrap()]);
        if output.status.code() == Some(2) && stderr(&output).contains("not a trace of any known") {
            continue;
        }
        assert_eq!(
            output.status.code(),
            Some(0),
            "{file:?}: {}",
            stderr(&output)
        );
        for (id, run) in outcomes_of(&stdout(&output)) {
            // The one batch rule: read with its folder, a summary leaves out the instances
            // whose trajectory is beside it.
            if file == summary && (id.ends_with("/inst__a-1") || id.ends_with("/inst__b-2")) {
                continue;
            }
            by_file.push((
                file.display().to_string(),
                id,
                run.exit_reason,
                run.error_kind,
                run.steps,
            ));
        }
    }
    let mut reported: Vec<Listed> = Vec::new();
    for reason in [
        "finished",
        "max_steps_exceeded",
        "invalid_model_output",
        "internal_error",
        "incomplete",
    ] {
        let output = run(&[
            "report",
            "--format",
            "json",
            "--list",
            reason,
            root.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let listing: Value = serde_json::from_str(&stdout(&output)).unwrap();
        for row in listing["runs"].as_array().unwrap() {
            let id = row["run_id"].as_str().unwrap();
            let id = id.split('~').next().unwrap().to_owned();
            reported.push((
                row["file"].as_str().unwrap().to_owned(),
                id,
                row["exit_reason"].as_str().unwrap().to_owned(),
                // The listing shows a finished run's tool-error kind; the ending has none.
                row["error_kind"]
                    .as_str()
                    .filter(|_| row["exit_reason"] != "finished")
                    .map(str::to_owned),
                row["steps"].as_u64().unwrap(),
            ));
        }
    }
    by_file.sort();
    reported.sort();
    assert!(by_file.len() > 50, "{}", by_file.len());
    assert_eq!(reported, by_file);
}

#[test]
fn openhands_v1_sdk_evaluation_output() {
    let runs = outcomes(&["openhands/v1/output.jsonl"]);
    let got: Vec<_> = runs
        .iter()
        .map(|(id, run)| (id.as_str(), run.shape()))
        .collect();
    assert_eq!(
        got,
        [
            // ls, cat (exit 1), the FinishAction with its message.
            (
                "output.jsonl/demo__finished-1",
                expect(("finished", None, None, 3, 2, 1))
            ),
            // The SDK's MaxIterationsReached error event.
            (
                "output.jsonl/demo__no-finish-2",
                expect((
                    "max_steps_exceeded",
                    Some("budget_exhausted"),
                    Some("steps"),
                    2,
                    2,
                    0
                ))
            ),
            // Every request failed: the harness's error and the SDK's error event.
            (
                "output.jsonl/demo__server-error-3",
                expect(("internal_error", Some("model_failure"), None, 0, 0, 0))
            ),
            // No finish, no error: cut short.
            (
                "output.jsonl/demo__cut-4",
                expect(("incomplete", None, None, 2, 2, 1))
            ),
        ]
    );
    assert_eq!(runs[0].1.answer.as_deref(), Some("The file is missing."));
}
