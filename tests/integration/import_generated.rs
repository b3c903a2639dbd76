//! Fixtures written by the real programs against the scripted model server
//! (`tests/fixtures/generate/`), other than Inspect's: each run's exit reason as the program
//! recorded it. (What each format's endings should map to beyond these is issue 32's.)

use serde_json::Value;

use crate::support::{fixture, run, stderr, stdout};

/// `(exit reason, budget)` of each run `import` reads from `file`; `incomplete` for a run with
/// no ending.
fn endings(file: &str) -> Vec<(String, Option<String>)> {
    let output = run(&["import", fixture(file).to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let mut runs: Vec<(String, (String, Option<String>))> = Vec::new();
    for event in &events {
        let id = event["run_id"].as_str().unwrap().to_owned();
        if event["event_type"] == "run_started" {
            runs.push((id.clone(), ("incomplete".to_owned(), None)));
        } else if event["event_type"] == "run_finished" {
            let ending = (
                event["exit_reason"].as_str().unwrap().to_owned(),
                event["budget"].as_str().map(str::to_owned),
            );
            runs.iter_mut().find(|(run, _)| *run == id).unwrap().1 = ending;
        }
    }
    runs.into_iter().map(|(_, ending)| ending).collect()
}

fn ending(reason: &str, budget: Option<&str>) -> Vec<(String, Option<String>)> {
    vec![(reason.to_owned(), budget.map(str::to_owned))]
}

#[test]
fn mini_swe_agent_2_4_runs_end_as_it_recorded_them() {
    let dir = "import/mini-swe-agent/generated";
    assert_eq!(
        endings(&format!("{dir}/submitted.traj.json")),
        ending("finished", None)
    );
    assert_eq!(
        endings(&format!("{dir}/format_error.traj.json")),
        ending("finished", None)
    );
    assert_eq!(
        endings(&format!("{dir}/step_limit.traj.json")),
        ending("max_steps_exceeded", Some("steps"))
    );
    // Killed mid-way: the trajectory saved so far has no exit status.
    assert_eq!(
        endings(&format!("{dir}/killed.traj.json")),
        ending("incomplete", None)
    );
    // ContextWindowExceededError: one run with an ending (which one is issue 32's).
    let context = endings(&format!("{dir}/context.traj.json"));
    assert_eq!(context.len(), 1);
    assert_ne!(context[0].0, "incomplete");
}

#[test]
fn any_agent_1_18_traces_end_as_it_recorded_them() {
    let dir = "import/otel-genai/generated";
    assert_eq!(
        endings(&format!("{dir}/tool_then_answer.json")),
        ending("finished", None)
    );
    assert_eq!(
        endings(&format!("{dir}/tool_error.json")),
        ending("finished", None)
    );
    // The provider's 500: the agent run raised.
    assert_eq!(
        endings(&format!("{dir}/provider_error.json")),
        ending("internal_error", None)
    );
    let output = run(&[
        "import",
        fixture(&format!("{dir}/tool_error.json")).to_str().unwrap(),
    ]);
    let errors = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["event_type"] == "observation" && event["is_error"] == true)
        .count();
    assert_eq!(errors, 1);
}
