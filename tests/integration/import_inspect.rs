//! Inspect logs as inspect-ai 0.3.285 writes them (`tests/fixtures/import/inspect/generated/`,
//! from `tests/fixtures/generate/gen_inspect.py`): zstd `.eval` archives read like their deflate
//! twins, each sample's ending, and archives crafted to cost without end refused by name.

use serde_json::Value;

use crate::support::{fixture, run, stderr, stdout};

/// The events `import` writes for `file` (under `tests/fixtures/`), with `args` added.
fn import(file: &str, args: &[&str]) -> Vec<Value> {
    let path = fixture(file);
    let mut all = vec!["import", path.to_str().unwrap()];
    all.extend(args);
    let output = run(&all);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// `(sample, exit reason, budget, steps)` of each run of `file`.
fn endings(file: &str) -> Vec<(String, String, Option<String>, u64)> {
    import(file, &[])
        .iter()
        .filter(|event| event["event_type"] == "run_finished")
        .map(|event| {
            let id = event["run_id"].as_str().unwrap();
            let sample = id.split('/').nth(1).unwrap().to_owned();
            (
                sample,
                event["exit_reason"].as_str().unwrap().to_owned(),
                event["budget"].as_str().map(str::to_owned),
                event["steps_used"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn ending(
    sample: &str,
    reason: &str,
    budget: Option<&str>,
    steps: u64,
) -> (String, String, Option<String>, u64) {
    (
        sample.to_owned(),
        reason.to_owned(),
        budget.map(str::to_owned),
        steps,
    )
}

const GENERATED: &str = "import/inspect/generated";

#[test]
fn a_zstd_eval_reads_like_its_deflate_twin() {
    let without_file = |mut events: Vec<Value>| {
        for event in &mut events {
            if let Some(source) = event.get_mut("source") {
                source.as_object_mut().unwrap().remove("file");
            }
        }
        events
    };
    let zstd = import(&format!("{GENERATED}/scored.eval"), &["--capture", "full"]);
    let deflate = import(
        &format!("{GENERATED}/scored-deflate.eval"),
        &["--capture", "full"],
    );
    assert_eq!(zstd.len(), deflate.len());
    assert!(zstd.len() > 6, "{zstd:?}");
    assert_eq!(without_file(zstd), without_file(deflate));
}

#[test]
fn the_json_log_of_the_same_eval_reads_alike() {
    let shape = |file: &str| {
        let mut runs = endings(file);
        runs.sort();
        runs
    };
    assert_eq!(
        shape(&format!("{GENERATED}/scored.eval")),
        shape(&format!("{GENERATED}/scored.json"))
    );
}

#[test]
fn samples_end_as_inspect_recorded_them() {
    assert_eq!(
        endings(&format!("{GENERATED}/scored.eval")),
        [
            ending("add-2-2", "finished", None, 2),
            ending("add-2-3", "finished", None, 2),
            ending("mul-3-4", "finished", None, 1),
        ]
    );
    assert_eq!(
        endings(&format!("{GENERATED}/limits.eval")),
        [
            ending("context", "max_steps_exceeded", Some("context"), 1),
            ending("messages", "max_steps_exceeded", Some("steps"), 3),
            ending("tokens", "max_steps_exceeded", Some("tokens"), 0),
        ]
    );
    assert_eq!(
        endings(&format!("{GENERATED}/error.eval")),
        [ending("add-1-1", "internal_error", None, 0)]
    );
    // Killed in its second sample: the journal holds the first, the one in flight is lost.
    assert_eq!(
        endings(&format!("{GENERATED}/killed.eval")),
        [ending("add-2-3", "finished", None, 2)]
    );
}

#[test]
fn a_failed_tool_call_is_a_tool_error() {
    let events = import(&format!("{GENERATED}/scored.eval"), &[]);
    let errors: Vec<&str> = events
        .iter()
        .filter(|e| e["event_type"] == "observation" && e["is_error"] == true)
        .map(|e| e["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(errors.len(), 1, "{events:?}");
    assert!(errors[0].contains("/add-2-2/"), "{errors:?}");
}

/// Runs `import` on a crafted archive and returns its exit code and stderr, checking that
/// nothing was written to `-o`.
fn refused(file: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let path = fixture(file);
    let output = run(&[
        "import",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!out.exists(), "nothing may be written");
    assert!(stdout(&output).is_empty());
    (output.status.code(), stderr(&output))
}

#[test]
fn archives_that_would_cost_without_end_are_refused_naming_the_limit() {
    let (code, message) = refused("archives/overlapping.eval");
    assert_eq!(code, Some(2), "{message}");
    assert!(message.contains("overlapping.eval`"), "{message}");
    assert!(message.contains("overlap"), "{message}");

    let (code, message) = refused("archives/expands.eval");
    assert_eq!(code, Some(2), "{message}");
    assert!(message.contains("expands.eval`"), "{message}");
    assert!(message.contains("expand more than 1000 times"), "{message}");
}

#[test]
fn scores_become_verdicts_with_explanations_under_the_capture_rules() {
    let finished = |capture: &str| -> Vec<Value> {
        import(&format!("{GENERATED}/scored.eval"), &["--capture", capture])
            .into_iter()
            .filter(|event| event["event_type"] == "run_finished")
            .collect()
    };
    let full = finished("full");
    assert_eq!(
        full[0]["scores"],
        serde_json::json!([{
            "name": "includes",
            "kind": "inspect",
            "passed": false,
            "value": 0.0,
            "explanation": "I could not add them. The answer is 5"
        }])
    );
    assert_eq!(full[1]["scores"][0]["passed"], true);
    let summary = finished("summary");
    let explanation = summary[0]["scores"][0]["explanation"].as_str().unwrap();
    assert!(explanation.starts_with("chars=37;sha256="), "{explanation}");
    // A finished sample ends with its final answer.
    let answers: Vec<Value> = import(&format!("{GENERATED}/scored.eval"), &["--capture", "full"])
        .into_iter()
        .filter(|event| event["action_type"] == "finish")
        .map(|event| event["answer"].clone())
        .collect();
    assert_eq!(
        answers,
        [
            "I could not add them. The answer is 5",
            "2 + 3 = 5, so the answer is 5",
            "The answer is 12"
        ]
    );
    // A sample's error message is free text: a summary, however short.
    let error = import(&format!("{GENERATED}/error.eval"), &[]);
    let native = error.last().unwrap()["native_ending"].as_str().unwrap();
    assert!(native.starts_with("chars="), "{native}");
}

#[test]
fn report_gives_the_pass_rate_of_the_runs_with_a_verdict() {
    let report = |files: &[&str]| -> Value {
        let mut args = vec![
            "report".to_owned(),
            "--format".to_owned(),
            "json".to_owned(),
        ];
        args.extend(
            files
                .iter()
                .map(|f| fixture(&format!("{GENERATED}/{f}")).display().to_string()),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = run(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        serde_json::from_str::<Value>(&stdout(&output)).unwrap()["verdicts"].clone()
    };
    assert_eq!(
        report(&["scored.eval"]),
        serde_json::json!({"runs": 3, "passed": 2, "pass_rate": 0.6667})
    );
    // The errored sample has no scores: no verdict.
    assert_eq!(
        report(&["scored.eval", "error.eval"]),
        serde_json::json!({"runs": 3, "passed": 2, "pass_rate": 0.6667})
    );
    let output = run(&[
        "report",
        fixture(&format!("{GENERATED}/scored.eval"))
            .to_str()
            .unwrap(),
    ]);
    assert!(
        stdout(&output).contains("Verdicts (share of the 3 run(s) whose scores give one)"),
        "{}",
        stdout(&output)
    );
}
