//! `looptrace run` and `looptrace tools` through the built binary.

use crate::support::{fixture, run, stderr, stdout};

fn responses(name: &str) -> String {
    fixture(&format!("responses/{name}")).display().to_string()
}

#[test]
fn a_finished_run_prints_the_result_and_exits_0() {
    let output = run(&[
        "run",
        "--task",
        "compute 12 × 7",
        "--responses",
        &responses("finish.txt"),
        "--run-id",
        "r1",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "exit_reason: finished\nanswer:      12 * 7 = 84，84大于80。\nsteps_used:  2\nerror:       -\nrun_id:      r1\n"
    );
}

#[test]
fn json_output_is_the_run_result() {
    let output = run(&[
        "run",
        "--task",
        "t",
        "--responses",
        &responses("retry_then_finish.txt"),
        "--json",
        "--run-id",
        "x",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"exit_reason": "finished", "answer": "done", "steps_used": 2, "error": null, "run_id": "x"})
    );
}

#[test]
fn budget_exhaustion_and_invalid_output_exit_1() {
    let output = run(&[
        "run",
        "--task",
        "t",
        "--responses",
        &responses("loops.txt"),
        "--max-steps",
        "3",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["exit_reason"], "max_steps_exceeded");
    assert_eq!(value["steps_used"], 3);

    let output = run(&[
        "run",
        "--task",
        "t",
        "--responses",
        &responses("always_invalid.txt"),
        "--max-steps",
        "3",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["exit_reason"], "invalid_model_output");
    assert_eq!(value["steps_used"], 3);
}

#[test]
fn an_exhausted_script_is_an_internal_error_exit_3() {
    let output = run(&[
        "run",
        "--task",
        "t",
        "--responses",
        &responses("exhausted.txt"),
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(3));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["exit_reason"], "internal_error");
    assert_eq!(
        stderr(&output),
        "internal error: model failed: scripted model exhausted after 1 response\n"
    );
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let output = run(&["run", "--task", "t", "--responses", "no/such/file.txt"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).starts_with("error: failed to read responses file `no/such/file.txt`: "),
        "{}",
        stderr(&output)
    );
    let output = run(&[
        "run",
        "--task",
        "t",
        "--responses",
        &responses("finish.txt"),
        "--max-steps",
        "0",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stderr(&output), "error: --max-steps must be at least 1\n");
    let output = run(&["run", "--responses", &responses("finish.txt")]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn tools_prints_the_specs() {
    let output = run(&["tools"]);
    assert_eq!(output.status.code(), Some(0));
    let specs: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(specs[0]["name"], "calculator");
    assert_eq!(
        specs[0]["input_schema"]["required"],
        serde_json::json!(["left", "operation", "right"])
    );
}

#[test]
fn run_without_a_model_names_both_ways_to_give_one() {
    let output = crate::support::looptrace()
        .args(["run", "--task", "x"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let text = crate::support::stderr(&output);
    assert!(text.contains("--responses <FILE>|--api <API>"), "{text}");
    let help = crate::support::looptrace()
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = crate::support::stdout(&help);
    assert!(help.contains("or give `--api`"), "{help}");
}
