//! `looptrace import`: each format's fixture becomes the runs, exit reasons, steps and tool calls
//! it records; bad input is exit 2 naming the file and place, with nothing written.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::support::{fixture, run, stderr, stdout};

/// One imported run as the test reads it back.
#[derive(Debug, PartialEq)]
struct Run {
    ending: String,
    steps: u64,
    tool_calls: u64,
}

/// Imports `file` (under `tests/fixtures/import/`) and returns its runs in order, with the lines.
fn import(file: &str) -> (Vec<(String, Run)>, Vec<Value>) {
    let path = fixture(&format!("import/{file}"));
    let output = run(&["import", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let mut runs: Vec<(String, Run)> = Vec::new();
    for line in &lines {
        let id = line["run_id"].as_str().unwrap().to_owned();
        if line["event_type"] == "run_started" {
            runs.push((
                id.clone(),
                Run {
                    ending: "incomplete".to_owned(),
                    steps: 0,
                    tool_calls: 0,
                },
            ));
        }
        let (_, current) = runs.iter_mut().find(|(run_id, _)| *run_id == id).unwrap();
        current.steps = current.steps.max(line["step"].as_u64().unwrap());
        if line["action_type"] == "tool_call" {
            current.tool_calls += 1;
        }
        if line["event_type"] == "run_finished" {
            current.ending = line["exit_reason"].as_str().unwrap().to_owned();
            current.steps = line["steps_used"].as_u64().unwrap();
        }
    }
    (runs, lines)
}

/// `(ending, steps, tool calls)` of each run.
fn shape(file: &str) -> Vec<(String, u64, u64)> {
    import(file)
        .0
        .into_iter()
        .map(|(_, r)| (r.ending, r.steps, r.tool_calls))
        .collect()
}

fn expect(list: &[(&str, u64, u64)]) -> Vec<(String, u64, u64)> {
    list.iter()
        .map(|(ending, steps, calls)| ((*ending).to_owned(), *steps, *calls))
        .collect()
}

/// The `run_finished` line of the only (or first) run.
fn finished(file: &str) -> Value {
    let (_, lines) = import(file);
    lines
        .into_iter()
        .find(|line| line["event_type"] == "run_finished")
        .expect("a run_finished line")
}

#[test]
fn code_agent_budget_abort_and_cut_off_runs() {
    assert_eq!(
        shape("code-agent/budget_stopped.jsonl"),
        expect(&[("max_steps_exceeded", 2, 1)])
    );
    let end = finished("code-agent/budget_stopped.jsonl");
    assert_eq!(end["budget"], "tokens");
    assert_eq!(end["native_ending"], "budget_stopped/tokens_exhausted");
    assert_eq!(
        shape("code-agent/run_aborted.jsonl"),
        expect(&[("internal_error", 1, 1)])
    );
    assert_eq!(
        shape("code-agent/no_ending.jsonl"),
        expect(&[("incomplete", 1, 1)])
    );
}

#[test]
fn swe_agent_error_exits_map_to_their_budgets_and_kinds() {
    let cases = [
        ("exit_cost", "max_steps_exceeded", Some("cost"), 2),
        ("exit_context", "max_steps_exceeded", Some("context"), 3),
        ("exit_format", "invalid_model_output", None, 1),
        ("exit_api", "internal_error", None, 1),
    ];
    for (status, ending, budget, calls) in cases {
        let file = format!("swe-agent/{status}.traj");
        assert_eq!(shape(&file), expect(&[(ending, calls, calls)]), "{status}");
        let end = finished(&file);
        assert_eq!(end["budget"].as_str(), budget, "{status}");
        assert_eq!(end["native_ending"], status);
    }
    let end = finished("swe-agent/autosubmitted.traj");
    assert_eq!(end["exit_reason"], "max_steps_exceeded");
    assert_eq!(end["autosubmitted"], true);
    assert_eq!(
        shape("swe-agent/autosubmitted.traj"),
        expect(&[("max_steps_exceeded", 3, 2)])
    );
}

#[test]
fn swe_agent_records_no_tool_errors_and_splits_attempts() {
    let (runs, lines) = import("swe-agent/retry.traj");
    let ids: Vec<&str> = runs.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["retry.traj/attempt-1", "retry.traj/attempt-2"]);
    assert_eq!(
        shape("swe-agent/retry.traj"),
        expect(&[("finished", 1, 1), ("finished", 2, 1)])
    );
    let started = &lines[0];
    assert_eq!(started["tool_errors_recorded"], false);
    assert_eq!(started["source"]["format"], "swe-agent");
    assert_eq!(started["source"]["file"], "retry.traj");
    for line in lines.iter().filter(|l| l["event_type"] == "observation") {
        assert!(line.get("is_error").is_none(), "{line}");
    }
}

#[test]
fn mini_swe_agent_endings_format_errors_and_timeouts() {
    assert_eq!(
        shape("mini-swe-agent/limits_exceeded.traj.json"),
        expect(&[("max_steps_exceeded", 3, 2)])
    );
    assert_eq!(
        finished("mini-swe-agent/limits_exceeded.traj.json")["budget"],
        "steps"
    );
    assert_eq!(
        shape("mini-swe-agent/time_exceeded.traj.json"),
        expect(&[("max_steps_exceeded", 3, 3)])
    );
    assert_eq!(
        finished("mini-swe-agent/time_exceeded.traj.json")["budget"],
        "time"
    );
    assert_eq!(
        shape("mini-swe-agent/repeated_format_error.traj.json"),
        expect(&[("invalid_model_output", 4, 2)])
    );
    let (_, lines) = import("mini-swe-agent/repeated_format_error.traj.json");
    let feedback = lines
        .iter()
        .filter(|l| l["event_type"] == "model_feedback")
        .count();
    assert_eq!(feedback, 2);
    assert_eq!(
        shape("mini-swe-agent/exception.traj.json"),
        expect(&[("internal_error", 2, 2)])
    );
    // An exception's name is not a status value docs/import.md lists: a summary.
    assert!(
        finished("mini-swe-agent/exception.traj.json")["native_ending"]
            .as_str()
            .unwrap()
            .starts_with("chars=12;")
    );
    assert_eq!(
        shape("mini-swe-agent/legacy.traj.json"),
        expect(&[("finished", 2, 1)])
    );
    assert_eq!(
        finished("mini-swe-agent/legacy.traj.json")["ending_inferred"],
        true
    );
}

#[test]
fn mini_swe_agent_batch_summaries_are_runs_without_steps() {
    assert_eq!(
        shape("mini-swe-agent/exit_statuses_1700000000.0.yaml"),
        expect(&[
            ("finished", 0, 0),
            ("finished", 0, 0),
            ("max_steps_exceeded", 0, 0),
            ("internal_error", 0, 0),
        ])
    );
}

#[test]
fn openhands_exports_and_evaluation_output() {
    assert_eq!(
        shape("openhands/export.json"),
        expect(&[("finished", 3, 2)])
    );
    let (_, lines) = import("openhands/export.json");
    let errors: Vec<bool> = lines
        .iter()
        .filter(|l| l["event_type"] == "observation")
        .map(|l| l["is_error"].as_bool().unwrap())
        .collect();
    assert_eq!(errors, [false, true]);
    assert_eq!(
        shape("openhands/output.jsonl"),
        expect(&[("max_steps_exceeded", 3, 2)])
    );
    assert_eq!(finished("openhands/output.jsonl")["budget"], "steps");
}

#[test]
fn codex_turns_complete_abort_and_run_out_of_budget() {
    let (runs, _) =
        import("codex/rollout-2026-01-01T00-00-00-11111111-2222-3333-4444-555555555555.jsonl");
    let ids: Vec<&str> = runs.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "11111111-2222-3333-4444-555555555555/turn-a",
            "11111111-2222-3333-4444-555555555555/turn-b",
            "11111111-2222-3333-4444-555555555555/turn-c",
        ]
    );
    assert_eq!(
        shape("codex/rollout-2026-01-01T00-00-00-11111111-2222-3333-4444-555555555555.jsonl"),
        expect(&[
            ("finished", 2, 1),
            // An incomplete run has no `steps_used`: its steps are those that left events.
            ("incomplete", 1, 1),
            ("max_steps_exceeded", 2, 1),
        ])
    );
}

#[test]
fn claude_code_infers_endings_only_from_answers() {
    assert_eq!(
        shape("claude-code/session.jsonl"),
        expect(&[
            ("finished", 2, 1),
            ("incomplete", 1, 1),
            ("incomplete", 1, 1)
        ])
    );
    assert_eq!(
        finished("claude-code/session.jsonl")["ending_inferred"],
        true
    );
}

#[test]
fn gemini_cli_runs_per_prompt() {
    assert_eq!(
        shape("gemini-cli/chat.json"),
        expect(&[("finished", 2, 1), ("incomplete", 1, 1)])
    );
}

#[test]
fn inspect_sample_limits_and_errors() {
    assert_eq!(
        shape("inspect/limits.json"),
        expect(&[
            ("finished", 2, 1),
            ("max_steps_exceeded", 2, 1),
            ("max_steps_exceeded", 2, 1),
            ("internal_error", 2, 1),
        ])
    );
    let (_, lines) = import("inspect/limits.json");
    let budgets: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.get("budget").and_then(Value::as_str))
        .collect();
    assert_eq!(budgets, ["tokens", "steps"]);
}

#[test]
fn otel_genai_keeps_the_128_bit_trace_id() {
    let (runs, lines) = import("otel-genai/trace.json");
    assert_eq!(runs[0].0, "123456789012345678901234567890");
    assert_eq!(
        shape("otel-genai/trace.json"),
        expect(&[("finished", 2, 1)])
    );
    let failed = lines
        .iter()
        .find(|l| l["event_type"] == "observation")
        .unwrap();
    assert_eq!(failed["is_error"], true);
}

#[test]
fn summary_capture_keeps_no_text_and_full_keeps_it() {
    let path = fixture("import/claude-code/session.jsonl");
    let summary = stdout(&run(&["import", path.to_str().unwrap()]));
    assert!(!summary.contains("pytest"), "{summary}");
    let full = stdout(&run(&[
        "import",
        "--capture",
        "full",
        path.to_str().unwrap(),
    ]));
    assert!(full.contains("pytest"));
}

#[test]
fn output_file_is_replaced_and_imports_read_back_as_traces() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    std::fs::write(&out, "old content\n").unwrap();
    let folder = fixture("import/swe-agent");
    let output = run(&[
        "import",
        folder.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("old content"));
    let report = run(&["report", "--format", "json", out.to_str().unwrap()]);
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let mut ids: BTreeMap<String, ()> = BTreeMap::new();
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        ids.insert(value["run_id"].as_str().unwrap().to_owned(), ());
    }
    assert_eq!(ids.len(), 7);
}

#[test]
fn malformed_input_is_exit_2_naming_the_place_and_writing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.traj");
    std::fs::write(&bad, "{\n  \"trajectory\": [\n    {\"action\": \n").unwrap();
    let out = dir.path().join("out.jsonl");
    let output = run(&["import", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("bad.traj") && message.contains("line 4"),
        "{message}"
    );
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let jsonl = dir.path().join("session.jsonl");
    let good = std::fs::read_to_string(fixture("import/claude-code/session.jsonl")).unwrap();
    std::fs::write(&jsonl, format!("{good}{{not json\n")).unwrap();
    let output = run(&["import", "--from", "claude-code", jsonl.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("line 12"), "{}", stderr(&output));

    let unknown = dir.path().join("suite.json");
    std::fs::write(&unknown, "{\"tasks\": []}\n").unwrap();
    let output = run(&["import", unknown.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("not a trace of any known format"));

    let output = run(&["import", "--from", "nope", unknown.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn no_runs_is_a_warning_with_an_empty_output() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jsonl");
    let out = dir.path().join("out.jsonl");
    // An empty file is no runs of any format: detected, or read as a line format or a JSON one.
    for (text, from) in [("", None), ("", Some("codex")), ("\n \n", Some("inspect"))] {
        std::fs::write(&empty, text).unwrap();
        let mut args = vec![
            "import",
            empty.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend(from.map(|from| ["--from", from]).into_iter().flatten());
        let output = run(&args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{from:?}: {}",
            stderr(&output)
        );
        assert!(stderr(&output).contains("warning: no runs"), "{from:?}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "");
    }
}

#[test]
fn report_reads_foreign_files_and_folders_by_source() {
    let folder = fixture("import");
    let codex = fixture(
        "import/codex/rollout-2026-01-01T00-00-00-11111111-2222-3333-4444-555555555555.jsonl",
    );
    let output = run(&[
        "report",
        "--format",
        "json",
        "--by",
        "source",
        folder.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let by_source = report["exit_reasons_by_source"].as_array().unwrap();
    let sources: Vec<&str> = by_source
        .iter()
        .map(|s| s["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        [
            "claude-code",
            "code-agent",
            "codex",
            "gemini-cli",
            "inspect",
            "mini-swe-agent",
            "openhands",
            "otel-genai",
            "swe-agent"
        ]
    );
    let codex_runs: Vec<(&str, u64)> = by_source[2]["exit_reasons"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["exit_reason"].as_str().unwrap(),
                row["runs"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        codex_runs,
        [
            ("finished", 3),
            ("max_steps_exceeded", 2),
            ("invalid_model_output", 0),
            ("internal_error", 2),
            ("incomplete", 2)
        ]
    );
    // A named foreign file mixes with looptrace files in one report.
    let sample = crate::support::sample("finished.summary.jsonl");
    let output = run(&[
        "report",
        "--format",
        "json",
        codex.to_str().unwrap(),
        sample.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["input"]["files"], 2);
}

#[test]
fn report_imports_a_folder_with_the_run_ids_of_one_import_in_order() {
    // Five copies of one session share its run ids; `report` imports the files in parallel and
    // must still tell the copies apart exactly as `import` of the folder does.
    let dir = tempfile::tempdir().unwrap();
    for copy in ["a", "b", "c", "d", "e"] {
        let folder = dir.path().join(copy);
        std::fs::create_dir(&folder).unwrap();
        std::fs::copy(
            fixture("import/claude-code/session.jsonl"),
            folder.join("session.jsonl"),
        )
        .unwrap();
    }
    let folder = dir.path().to_str().unwrap();
    let output = run(&["report", "--format", "json", folder]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["input"]["files"], 5);
    assert_eq!(
        report["warnings"],
        serde_json::json!([]),
        "no run id shared"
    );
    let imported = dir.path().join("all.trace");
    let output = run(&["import", folder, "-o", imported.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = std::fs::read_to_string(&imported).unwrap();
    let ids: Vec<String> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["event_type"] == "run_started")
        .map(|event| event["run_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 5 * 3, "three prompts per copy");
    assert!(ids.iter().any(|id| id.ends_with("~5")), "{ids:?}");
    let again = run(&["report", "--format", "json", imported.to_str().unwrap()]);
    let again: Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(report["exit_reasons"], again["exit_reasons"]);
}

#[test]
fn report_skips_unknown_json_in_folders_but_not_named_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("suite.json"), "{\"tasks\": []}\n").unwrap();
    std::fs::copy(
        fixture("import/gemini-cli/chat.json"),
        dir.path().join("chat.json"),
    )
    .unwrap();
    let output = run(&["report", "--format", "json", dir.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("skipped 1 file(s)"));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["input"]["files"], 1);
    let named = dir.path().join("suite.json");
    let output = run(&["report", named.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn show_displays_a_foreign_file_as_imported() {
    let path = fixture("import/openhands/export.json");
    let output = run(&["show", "--format", "json", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("\"run_finished\""));
    assert!(!text.contains("touch a.txt"));
    let output = run(&[
        "show",
        "--capture",
        "full",
        "--format",
        "json",
        path.to_str().unwrap(),
    ]);
    assert!(stdout(&output).contains("touch a.txt"));
}

#[test]
fn report_says_not_recorded_for_sources_without_an_error_flag() {
    let path = fixture("import/swe-agent/exit_context.traj");
    let output = run(&["report", "--format", "json", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let ls = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["tool"] == "ls")
        .unwrap();
    assert_eq!(ls["calls"], 3);
    assert!(ls["errors"].is_null() && ls["error_rate"].is_null(), "{ls}");
    let table = stdout(&run(&["report", path.to_str().unwrap()]));
    assert!(table.contains("not recorded"), "{table}");
    // A source with an error flag keeps its counts.
    let path = fixture("import/openhands/export.json");
    let report: Value = serde_json::from_str(&stdout(&run(&[
        "report",
        "--format",
        "json",
        path.to_str().unwrap(),
    ])))
    .unwrap();
    let read = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["tool"] == "read")
        .unwrap();
    assert_eq!(read["errors"], 1);
}

/// Feeds `bytes` to detection and to every importer: each may refuse, none may panic.
fn import_everything(name: &str, bytes: &[u8]) {
    use looptrace::import::{Context, IMPORTERS, detect};
    let _ = detect(name, bytes);
    let context = Context {
        file: name.to_owned(),
        name: name.to_owned(),
    };
    for importer in IMPORTERS {
        let mut input = bytes;
        let _ = importer.import(&mut input, &context, &mut |_| Ok(()));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn importers_never_panic_on_arbitrary_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
        import_everything("input.jsonl", &bytes);
    }

    #[test]
    fn importers_never_panic_on_cut_or_damaged_fixtures(
        file in 0usize..256,
        cut in 0.0f64..1.0,
        flip in proptest::prelude::any::<u8>(),
    ) {
        let mut files: Vec<_> = crate::support::files_under(&fixture("import"))
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        files.sort();
        let path = &files[file % files.len()];
        let mut bytes = std::fs::read(path).unwrap();
        let at = (bytes.len() as f64 * cut) as usize;
        bytes.truncate(at.max(1));
        if let Some(last) = bytes.last_mut() {
            *last ^= flip;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        import_everything(&name, &bytes);
    }
}
