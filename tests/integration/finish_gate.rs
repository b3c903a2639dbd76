//! The finish gate: a finish ends the run only when the gate's program exits 0; a rejection goes
//! back to the model as feedback; a gate that cannot run or decide is an internal error.

use std::path::Path;
use std::process::Output;

use looptrace::agent::{AgentError, NoObserver, RunOptions, run_agent_with_gate};
use looptrace::gate::{CommandGate, CommandGateConfig, FinishGate};
use looptrace::model::ScriptedModel;
use looptrace::run::{
    Action, ExitReason, Finish, FinishRejection, HistoryItem, Observation, RunResult, Task,
    ToolCall,
};
use looptrace::tools::ToolRegistry;
use serde_json::{Value, json};

use crate::support::{fixture, read_events, run, stderr, stdout};

const TASK: &str = "compute 12 × 7 and say whether it exceeds 80";
const FIRST: &str = "12 * 7 = 84";
const SECOND: &str = "12 * 7 = 84, and 84 is greater than 80.";

fn gate_script(name: &str) -> String {
    fixture(&format!("gates/{name}")).display().to_string()
}

fn responses(name: &str) -> String {
    fixture(&format!("responses/{name}")).display().to_string()
}

fn sh_gate(script: &str, extra: &[&str]) -> CommandGate {
    let mut command = vec!["sh".to_owned(), gate_script(script)];
    command.extend(extra.iter().map(|s| (*s).to_owned()));
    CommandGate::new(CommandGateConfig::new(command))
}

fn multiply_12_by_7() -> ToolCall {
    let Value::Object(arguments) = json!({"left": 12, "operation": "multiply", "right": 7}) else {
        unreachable!()
    };
    ToolCall::new("calculator", arguments)
}

fn finish(answer: &str) -> Action {
    Action::Finish(Finish {
        answer: answer.to_owned(),
    })
}

/// What `says_whether_it_exceeds_80.sh` prints (stdout, then stderr) when it rejects `answer`.
fn rejection_of(answer: &str) -> String {
    format!(
        "rejected: {}\nthe answer must say whether the product exceeds 80\n",
        json!({ "answer": answer })
    )
}

fn of_type<'a>(events: &'a [Value], event_type: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["event_type"] == event_type)
        .collect()
}

/// The loop with built-in tools, `gate` and no observer.
fn run_gated(
    task: &Task,
    model: &mut ScriptedModel,
    gate: &mut dyn FinishGate,
    max_steps: u32,
) -> Result<RunResult, AgentError> {
    run_agent_with_gate(
        task,
        model,
        &ToolRegistry::builtin(),
        Some(gate),
        RunOptions { max_steps },
        &mut NoObserver,
    )
}

/// `looptrace run` of the calculator task's responses, checked by the `sh` gate `script`,
/// traced to `trace`.
fn gated_run(trace: &Path, script: &str, extra: &[&str]) -> Output {
    let responses = responses("gate_two_answers.txt");
    let script = gate_script(script);
    let mut args = vec![
        "run",
        "--task",
        TASK,
        "--responses",
        &responses,
        "--finish-gate",
        "sh",
        "--finish-gate-arg",
        &script,
        "--trace",
        trace.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn the_model_reads_the_gates_output_after_a_rejected_finish() {
    let task = Task::new(TASK);
    let call = multiply_12_by_7();
    let mut model = ScriptedModel::new(vec![
        Action::ToolCall(call.clone()),
        finish(FIRST),
        finish(SECOND),
    ]);
    let mut gate = sh_gate("says_whether_it_exceeds_80.sh", &[]);
    let result = run_gated(&task, &mut model, &mut gate, 5).unwrap();
    assert_eq!(result.exit_reason, ExitReason::Finished);
    assert_eq!(result.answer.as_deref(), Some(SECOND));
    assert_eq!(result.steps_used, 3);
    let observation = HistoryItem::Observation(Observation {
        tool_name: "calculator".to_owned(),
        content: "84".to_owned(),
        is_error: false,
    });
    assert_eq!(
        model.calls(),
        &[
            (task.clone(), vec![]),
            (
                task.clone(),
                vec![HistoryItem::ToolCall(call.clone()), observation.clone()]
            ),
            (
                task.clone(),
                vec![
                    HistoryItem::ToolCall(call),
                    observation,
                    HistoryItem::FinishRejected(FinishRejection {
                        answer: FIRST.to_owned(),
                        feedback: rejection_of(FIRST),
                    }),
                ]
            ),
        ]
    );
}

#[test]
fn long_gate_output_reaches_the_model_cut_to_head_and_tail() {
    let full: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    let mut config = CommandGateConfig::new(vec!["sh".to_owned(), gate_script("loud.sh")]);
    config.max_output_bytes = 100;
    let mut gate = CommandGate::new(config);
    let mut model = ScriptedModel::new(vec![finish("a"), finish("b")]);
    let result = run_gated(&Task::new("t"), &mut model, &mut gate, 2).unwrap();
    assert_eq!(result.exit_reason, ExitReason::MaxStepsExceeded);
    let expected = format!(
        "{}\n[... {} bytes elided ...]\n{}",
        &full[..50],
        full.len() - 100,
        &full[full.len() - 50..]
    );
    let history = &model.calls()[1].1;
    assert_eq!(
        history,
        &[HistoryItem::FinishRejected(FinishRejection {
            answer: "a".to_owned(),
            feedback: expected,
        })]
    );
}

#[test]
fn a_rejected_then_accepted_finish_is_recorded_with_both_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.jsonl");
    let output = gated_run(
        &trace,
        "says_whether_it_exceeds_80.sh",
        &["--capture", "full", "--run-id", "r1"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains(&format!("answer:      {SECOND}\n")));
    let events = read_events(&trace);
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "run_started",
            "model_action",
            "observation",
            "model_action",
            "finish_gate",
            "model_action",
            "finish_gate",
            "run_finished"
        ]
    );
    assert!(
        events[0]["finish_gate_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    // The argv is not recorded: it may hold paths.
    assert!(!events[0].to_string().contains("exceeds_80.sh"));
    let gates = of_type(&events, "finish_gate");
    assert_eq!(gates[0]["step"], 2);
    assert_eq!(gates[0]["accepted"], false);
    assert_eq!(gates[0]["content"], rejection_of(FIRST));
    assert_eq!(gates[1]["step"], 3);
    assert_eq!(gates[1]["accepted"], true);
    // The run's measured times: its wall time, and when each event was written.
    let mut finished = events[7].clone();
    let measured = finished.as_object_mut().unwrap();
    assert!(measured.remove("duration_ms").unwrap().as_f64().unwrap() >= 0.0);
    assert_eq!(measured.remove("ts").unwrap().as_str().unwrap().len(), 24);
    assert!(events.iter().all(|e| e["ts"].is_string()), "{events:?}");
    assert_eq!(
        finished,
        json!({"run_id": "r1", "step": 3, "event_type": "run_finished", "exit_reason": "finished", "steps_used": 3})
    );
}

#[test]
fn summary_capture_keeps_only_the_summary_of_the_gate_output() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.jsonl");
    let output = gated_run(&trace, "says_whether_it_exceeds_80.sh", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = read_events(&trace);
    let gate = of_type(&events, "finish_gate")[0];
    assert!(gate.get("content").is_none());
    assert!(gate["output"].as_str().unwrap().starts_with("chars="));
}

#[test]
fn a_gate_that_always_rejects_exhausts_the_budget_without_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.jsonl");
    let output = gated_run(&trace, "always_rejects.sh", &["--max-steps", "3", "--json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["exit_reason"], "max_steps_exceeded");
    assert_eq!(result["answer"], Value::Null);
    assert_eq!(result["steps_used"], 3);
    let events = read_events(&trace);
    let verdicts: Vec<&Value> = of_type(&events, "finish_gate")
        .iter()
        .map(|e| &e["accepted"])
        .collect();
    assert_eq!(verdicts, [&json!(false), &json!(false)]);
    let finished = of_type(&events, "run_finished")[0];
    assert_eq!(finished["exit_reason"], "max_steps_exceeded");
    assert_eq!(finished["error_kind"], "finish_rejected");
    // Rejections are not invalid model output.
    assert!(of_type(&events, "model_feedback").is_empty());
}

fn assert_gate_failure_is_an_internal_error(gate_args: &[&str], message: &str) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.jsonl");
    let responses = responses("gate_two_answers.txt");
    let mut args = vec![
        "run",
        "--task",
        TASK,
        "--responses",
        &responses,
        "--trace",
        trace.to_str().unwrap(),
    ];
    args.extend_from_slice(gate_args);
    let output = run(&args);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(stderr(&output).contains(message), "{}", stderr(&output));
    let events = read_events(&trace);
    let finished = of_type(&events, "run_finished")[0];
    assert_eq!(finished["exit_reason"], "internal_error");
    assert_eq!(finished["error_kind"], "finish_gate_failed");
    assert_eq!(finished["steps_used"], 2);
    assert!(of_type(&events, "finish_gate").is_empty());
}

#[test]
fn a_missing_gate_program_is_an_internal_error() {
    assert_gate_failure_is_an_internal_error(
        &["--finish-gate", "/nonexistent/gate"],
        "cannot run `/nonexistent/gate`",
    );
}

#[test]
fn a_gate_command_the_shell_cannot_find_is_an_internal_error() {
    assert_gate_failure_is_an_internal_error(
        &[
            "--finish-gate",
            "sh",
            "--finish-gate-arg",
            "-c",
            "--finish-gate-arg",
            "no-such-gate-command",
        ],
        "exited with status 127",
    );
}

#[test]
fn a_gate_killed_by_a_signal_is_an_internal_error() {
    assert_gate_failure_is_an_internal_error(
        &[
            "--finish-gate",
            "sh",
            "--finish-gate-arg",
            "-c",
            "--finish-gate-arg",
            "kill -9 $$",
        ],
        "killed by signal 9",
    );
}

/// Whether `pid` names a live process (a zombie waiting to be reaped is not).
fn alive(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn a_gate_past_its_timeout_fails_and_its_process_group_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let mut config = CommandGateConfig::new(vec![
        "sh".to_owned(),
        gate_script("hangs.sh"),
        pid_file.display().to_string(),
    ]);
    config.timeout_s = 1;
    let mut gate = CommandGate::new(config);
    let mut model = ScriptedModel::new(vec![finish("84")]);
    let err = run_gated(&Task::new(TASK), &mut model, &mut gate, 2).unwrap_err();
    let AgentError::Internal { result, cause } = err else {
        panic!("expected an internal error, got {err:?}");
    };
    assert_eq!(result.exit_reason, ExitReason::InternalError);
    assert_eq!(cause.kind(), "finish_gate_failed");
    assert!(cause.to_string().contains("timeout of 1 s"), "{cause}");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let pid = pid.trim();
    assert!(!pid.is_empty());
    // SIGKILL is sent before the check returns; the process goes once the kernel delivers it.
    let gone = (0..1000).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        !alive(pid)
    });
    assert!(gone, "the gate's child {pid} outlived the gate");
}

/// Records the calculator run checked by `says_whether_it_exceeds_80.sh`, with full capture.
fn recorded_gated_run(dir: &Path) -> String {
    let trace = dir.join("recorded.jsonl");
    let output = gated_run(
        &trace,
        "says_whether_it_exceeds_80.sh",
        &["--capture", "full", "--run-id", "r1"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    trace.display().to_string()
}

#[test]
fn replay_with_recorded_tools_serves_the_recorded_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let trace = recorded_gated_run(dir.path());
    let output = run(&["replay", &trace, "--tools", "recorded"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("r1: faithful (finished in 3 steps)"),
        "{}",
        stdout(&output)
    );
    assert!(!stderr(&output).contains("note:"), "{}", stderr(&output));
}

/// `looptrace replay --tools live` of `trace`, rerunning the `sh` gate `script`.
fn live_replay(trace: &str, script: &str, extra: &[&str]) -> Output {
    let script = gate_script(script);
    let mut args = vec![
        "replay",
        trace,
        "--tools",
        "live",
        "--finish-gate",
        "sh",
        "--finish-gate-arg",
        &script,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn live_replay_reruns_the_given_gate_and_a_different_verdict_diverges() {
    let dir = tempfile::tempdir().unwrap();
    let trace = recorded_gated_run(dir.path());
    let output = live_replay(&trace, "says_whether_it_exceeds_80.sh", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("r1: faithful"),
        "{}",
        stdout(&output)
    );

    let output = live_replay(&trace, "always_rejects.sh", &["--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let divergence = &report["runs"][0]["divergences"][0];
    assert_eq!(divergence["what"], "gate_verdict", "{report}");
    assert_eq!(divergence["step"], 3);
    assert_eq!(divergence["recorded"], "accepted");
    assert_eq!(divergence["actual"], "rejected");
}

#[test]
fn live_replay_without_a_gate_says_it_serves_the_recorded_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let trace = recorded_gated_run(dir.path());
    let output = run(&["replay", &trace, "--tools", "live"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("r1: faithful"),
        "{}",
        stdout(&output)
    );
    assert!(
        stderr(&output).contains("serving the recorded finish gate verdicts"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn eval_counts_rejections_runs_gates_in_the_suite_folder_and_kills_timed_out_groups() {
    let dir = tempfile::tempdir().unwrap();
    let suite_dir = dir.path().join("suite");
    std::fs::create_dir_all(suite_dir.join("gates")).unwrap();
    for name in ["says_whether_it_exceeds_80.sh", "hangs.sh"] {
        std::fs::copy(gate_script(name), suite_dir.join(name)).unwrap();
    }
    let accept = suite_dir.join("gates/accept");
    std::fs::write(&accept, "#!/bin/sh\ncat > /dev/null\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&accept, std::fs::Permissions::from_mode(0o755)).unwrap();
    let responses: Vec<String> = std::fs::read_to_string(responses("gate_two_answers.txt"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let suite = json!({
        "name": "gates",
        "defaults": {"finish_gate": {"command": ["sh", "says_whether_it_exceeds_80.sh"]}},
        "tasks": [
            {"id": "two-tries", "prompt": TASK, "model": {"responses": responses},
             "expect": {"exit_reason": "finished", "max_gate_rejections": 0}},
            {"id": "own-program", "prompt": TASK, "model": {"responses": responses},
             "finish_gate": {"command": ["gates/accept"]},
             "expect": {"exit_reason": "finished", "max_steps_used": 2}},
            {"id": "hangs", "prompt": TASK, "model": {"responses": responses},
             "finish_gate": {"command": ["sh", "hangs.sh", "child.pid"], "timeout_s": 1},
             "expect": {"exit_reason": "internal_error"}},
            {"id": "default-gate", "prompt": TASK, "model": {"actions": [{"type": "finish", "answer": SECOND}]}}
        ]
    });
    let suite_file = suite_dir.join("suite.json");
    std::fs::write(&suite_file, suite.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = run(&[
        "eval",
        suite_file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let tasks = results["tasks"].as_array().unwrap();
    assert_eq!(tasks[0]["gate_rejections"], 1);
    assert_eq!(tasks[0]["exit_reason"], "finished");
    assert_eq!(tasks[0]["expectation"], "failed");
    assert_eq!(
        tasks[0]["failures"],
        json!(["expected at most 0 gate rejections, got 1"])
    );
    assert_eq!(tasks[1]["gate_rejections"], 0);
    assert_eq!(tasks[1]["expectation"], "met");
    assert_eq!(tasks[2]["exit_reason"], "internal_error");
    assert_eq!(tasks[2]["error_kind"], "finish_gate_failed");
    assert_eq!(
        tasks[3]["gate_rejections"], 0,
        "the defaults' gate checks it"
    );
    assert_eq!(tasks[3]["exit_reason"], "finished");
    // The gate ran in the suite's folder, so its child's pid file is there.
    let pid = std::fs::read_to_string(suite_dir.join("child.pid")).unwrap();
    let gone = (0..1000).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        !alive(pid.trim())
    });
    assert!(gone, "the gate's child {pid} outlived the gate");
}

#[test]
fn report_counts_rejections_in_their_own_section_never_as_invalid_output() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("runs.jsonl");
    let output = gated_run(&trace, "says_whether_it_exceeds_80.sh", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = gated_run(&trace, "always_rejects.sh", &["--max-steps", "3"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let output = run(&["report", trace.to_str().unwrap(), "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let gate = &report["finish_gate"];
    assert_eq!(gate["runs"], 2, "{gate}");
    assert_eq!(gate["rejections"], 3, "{gate}");
    assert_eq!(
        gate["by_exit_reason"][0],
        json!({"exit_reason": "finished", "runs": 1, "rejections": 1})
    );
    assert_eq!(
        gate["by_exit_reason"][1],
        json!({"exit_reason": "max_steps_exceeded", "runs": 1, "rejections": 2})
    );
    assert_eq!(gate["runs_by_attempts"], json!({"2": 2}));
    assert_eq!(report["invalid_output"]["feedback_by_kind"], json!({}));
    assert_eq!(report["invalid_output"]["runs_with_feedback"], 0);
    assert!(
        report["warnings"].as_array().unwrap().is_empty(),
        "{report}"
    );

    let output = run(&["report", trace.to_str().unwrap()]);
    let text = stdout(&output);
    assert!(
        text.contains("Finish gate rejections per exit reason (2 runs with a gate)"),
        "{text}"
    );
    assert!(text.contains("Gated runs by finish attempts"), "{text}");
}

#[test]
fn eval_replays_a_gated_recording_with_its_recorded_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        crate::support::sample("finish_gate.full.jsonl"),
        dir.path().join("gated.jsonl"),
    )
    .unwrap();
    let suite = json!({
        "name": "replays",
        "tasks": [{"id": "gated", "model": {"replay": "gated.jsonl"},
                   "expect": {"exit_reason": "finished", "answer_contains": "greater than 80",
                              "max_gate_rejections": 1}}]
    });
    std::fs::write(dir.path().join("suite.json"), suite.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = run(&[
        "eval",
        dir.path().join("suite.json").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["tasks"][0]["steps_used"], 3);
    assert_eq!(results["tasks"][0]["gate_rejections"], 1);
}

#[test]
fn eval_traces_replays_a_gated_recording_with_its_recorded_verdicts_beside_ungated_runs() {
    // A corpus's runs are read again without their observations, unless the run shows a gate:
    // its recorded verdicts are arranged with every step.
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    for name in ["finish_gate.full.jsonl", "finished.full.jsonl"] {
        std::fs::copy(crate::support::sample(name), corpus.join(name)).unwrap();
    }
    let out = dir.path().join("out");
    let output = crate::support::eval_into(&["--traces", corpus.to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = crate::support::results_in(&out);
    let gated = &results.tasks[0];
    assert_eq!(gated.id, "finish_gate.full.finish-gate-full");
    assert_eq!((gated.steps_used, gated.gate_rejections), (3, Some(1)));
    let plain = &results.tasks[1];
    assert_eq!(plain.expectation, looptrace::eval::Verdict::Met);
    assert_eq!(plain.tool_calls, 1);
}

#[test]
fn a_gate_to_rerun_with_recorded_tools_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let trace = recorded_gated_run(dir.path());
    let out = dir.path().join("rerun.jsonl");
    let output = run(&[
        "replay",
        &trace,
        "--tools",
        "recorded",
        "--finish-gate",
        "true",
        "--trace",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(!out.exists(), "nothing is written for a usage error");
    assert!(
        stderr(&output).contains("needs --tools live"),
        "{}",
        stderr(&output)
    );
    assert!(stdout(&output).is_empty());
}

/// Whether process `pid` still runs (a zombie waiting to be reaped does not).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

#[test]
fn a_second_interrupt_ends_eval_and_the_gates_it_was_running() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("gate-pids");
    let gate = format!("echo $$ >> '{}'; exec sleep 30", pids.display());
    let tasks: Vec<Value> = (0..4)
        .map(|i| {
            json!({"id": format!("t{i}"), "prompt": "p",
                   "model": {"actions": [{"type": "finish", "answer": "done"}]}})
        })
        .collect();
    let suite = dir.path().join("suite.json");
    std::fs::write(
        &suite,
        json!({"name": "gates", "defaults": {"finish_gate": {"command": ["sh", "-c", gate]}},
               "tasks": tasks})
        .to_string(),
    )
    .unwrap();
    let mut eval = crate::support::looptrace()
        .arg("eval")
        .arg(&suite)
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["--jobs", "2", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let gate_pids = || -> Vec<i32> {
        std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect()
    };
    while gate_pids().len() < 2 && started.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let gates = gate_pids();
    assert_eq!(gates.len(), 2, "two gates should be running");
    let pid = i32::try_from(eval.id()).unwrap();
    // SAFETY: `kill` only sends a signal to the child this test started.
    unsafe { libc::kill(pid, libc::SIGINT) };
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        gates.iter().all(|&g| running(g)),
        "the first interrupt lets running gates finish"
    );
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let status = eval.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let ended = std::time::Instant::now();
    while gates.iter().any(|&g| running(g)) && ended.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        gates.iter().all(|&g| !running(g)),
        "gates {gates:?} outlived eval"
    );
}
