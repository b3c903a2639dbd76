//! Replay: recorded runs rerun through the loop and compared with their recordings, through the
//! library and the built binary.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};

use looptrace::agent::{NoObserver, RunOptions, run_agent_result};
use looptrace::model::ScriptedModel;
use looptrace::replay::{
    DivergenceKind, OnDivergence, ReplayOptions, ToolSource, Verdict, replay_run,
};
use looptrace::run::{Action, ExitReason, Finish, Task, ToolCall};
use looptrace::tools::{ToolDefinition, ToolError, ToolRegistry, ToolSpec};
use looptrace::trace::{
    Capture, Event, RecordedRun, RecorderOptions, Summarizer, TraceRecorder, read_trace,
};

use crate::support::{fixture, looptrace, run, sample, stderr, stdout};

const FULL_SAMPLES: [&str; 5] = [
    "finished.full.jsonl",
    "max_steps_exceeded.full.jsonl",
    "invalid_model_output.full.jsonl",
    "internal_error.full.jsonl",
    "multi_run.jsonl",
];

fn replay_fixture(name: &str) -> String {
    fixture(&format!("replay/{name}")).display().to_string()
}

fn sample_path(name: &str) -> String {
    sample(name).display().to_string()
}

fn json_of(output: &Output) -> Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|err| {
        panic!("stdout is not JSON ({err}):\n{}", stdout(output));
    })
}

#[test]
fn every_full_capture_sample_replays_faithfully_in_both_tool_modes() {
    for name in FULL_SAMPLES {
        for tools in ["live", "recorded"] {
            for raw in [false, true] {
                let path = sample_path(name);
                let mut args = vec!["replay", &path, "--tools", tools, "--format", "json"];
                if raw {
                    args.push("--raw");
                }
                let output = run(&args);
                let context = format!("{name} --tools {tools} raw={raw}");
                assert_eq!(
                    output.status.code(),
                    Some(0),
                    "{context}: {}",
                    stderr(&output)
                );
                let report = json_of(&output);
                assert_eq!(report["tools"], tools, "{context}");
                assert_eq!(report["model"], if raw { "raw" } else { "parsed" });
                assert_eq!(report["diverged"], 0, "{context}");
                for replayed in report["runs"].as_array().unwrap() {
                    assert_eq!(replayed["verdict"], "faithful", "{context}: {replayed}");
                    assert_eq!(replayed["divergences"], json!([]), "{context}");
                    assert_eq!(replayed["actual"], replayed["recorded"], "{context}");
                }
            }
        }
    }
}

#[test]
fn a_faithful_replay_prints_one_line_per_run_and_exits_0() {
    let output = run(&["replay", &sample_path("multi_run.jsonl")]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        "multi-a: faithful (finished in 2 steps)\n\
         multi-b: faithful (max_steps_exceeded in 3 steps)\n\
         multi-c: faithful (invalid_model_output in 2 steps)\n\
         3 runs of multi_run.jsonl replayed with live tools: 3 faithful, 0 diverged\n"
    );
    assert_eq!(stderr(&output), "");
}

#[test]
fn run_selects_one_run_and_an_unknown_one_is_bad_input() {
    let path = sample_path("multi_run.jsonl");
    let output = run(&["replay", &path, "--run", "multi-b", "--tools", "recorded"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        "multi-b: faithful (max_steps_exceeded in 3 steps)\n\
         1 run of multi_run.jsonl replayed with recorded tools: 1 faithful, 0 diverged\n"
    );
    let output = run(&["replay", &path, "--run", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: no run \"nope\" in `{path}` (it has \"multi-a\", \"multi-b\", \"multi-c\")\n"
        )
    );
}

#[test]
fn the_cut_off_sample_diverges_where_the_recording_ends() {
    for tools in ["live", "recorded"] {
        let output = run(&["replay", &sample_path("incomplete.jsonl"), "--tools", tools]);
        assert_eq!(output.status.code(), Some(1), "{tools}");
        assert_eq!(
            stdout(&output),
            format!(
                "cut-off: diverged (recorded incomplete, rerun internal_error in 2 steps)\n  \
                 step 2  the recording ended (recording_ended)\n    \
                 recorded: recording ends at step 1\n    \
                 actual:   a model turn at step 2\n  \
                 (stopped at the first divergence)\n\
                 1 run of incomplete.jsonl replayed with {tools} tools: 0 faithful, 1 diverged\n"
            )
        );
    }
}

#[test]
fn summary_only_traces_fail_naming_the_event_and_the_capture_flag() {
    for (name, run_id) in [
        ("finished.summary.jsonl", "finished-summary"),
        (
            "max_steps_exceeded.summary.jsonl",
            "max_steps_exceeded-summary",
        ),
        (
            "invalid_model_output.summary.jsonl",
            "invalid_model_output-summary",
        ),
        ("internal_error.summary.jsonl", "internal_error-summary"),
        ("writeup.jsonl", "r1"),
    ] {
        for check in [false, true] {
            let path = sample_path(name);
            let mut args = vec!["replay", path.as_str()];
            if check {
                args.push("--check");
            }
            let output = run(&args);
            assert_eq!(output.status.code(), Some(2), "{name}");
            assert_eq!(stdout(&output), "", "{name}");
            assert_eq!(
                stderr(&output),
                format!(
                    "error: {path}: run \"{run_id}\" cannot be replayed: line 1 (run_started at step 0) \
                     has no `task`; record replayable traces with `--capture full`\n"
                ),
                "{name}"
            );
        }
    }
}

#[test]
fn an_edited_observation_diverges_at_exactly_that_step_with_both_values() {
    let path = replay_fixture("edited_observation.jsonl");
    let output = run(&["replay", &path]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stdout(&output),
        "edited-observation: diverged (recorded finished in 2 steps, rerun stopped before step 2)\n  \
         step 1  the observation differs (observation)\n    \
         recorded: chars=2;sha256=b4944c6ff08dc6f43da2e9c824669b7d927dd1fa976fadc7b456881f51bf5ccc  \"85\"\n    \
         actual:   chars=2;sha256=44c8031cb036a7350d8b9b8603af662a4b9cdbd2f96e8d5de5af435c9c35da69  \"84\"\n  \
         (stopped at the first divergence)\n\
         1 run of edited_observation.jsonl replayed with live tools: 0 faithful, 1 diverged\n"
    );
    // Served from the recording, the edited observation is what the model sees again.
    let output = run(&["replay", &path, "--tools", "recorded"]);
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn a_shortened_recording_diverges_with_recording_ends_at_step_n() {
    let output = run(&[
        "replay",
        &replay_fixture("shortened.jsonl"),
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let report = json_of(&output);
    assert_eq!(
        report["runs"][0]["divergences"],
        json!([{
            "step": 3,
            "what": "recording_ended",
            "recorded": "recording ends at step 2",
            "actual": "a model turn at step 3",
        }])
    );
}

#[test]
fn a_larger_budget_diverges_with_recording_ends_at_step_n() {
    let path = sample_path("max_steps_exceeded.full.jsonl");
    let output = run(&["replay", &path, "--max-steps", "5"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stdout(&output),
        "max_steps_exceeded-full: diverged (recorded max_steps_exceeded in 3 steps, rerun internal_error in 4 steps)\n  \
         step 4  the recording ended (recording_ended)\n    \
         recorded: recording ends at step 3\n    \
         actual:   a model turn at step 4\n  \
         (stopped at the first divergence)\n\
         1 run of max_steps_exceeded.full.jsonl replayed with live tools: 0 faithful, 1 diverged\n"
    );
}

#[test]
fn a_smaller_budget_changes_the_exit_reason() {
    let path = sample_path("finished.full.jsonl");
    let output = run(&["replay", &path, "--max-steps", "1"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stdout(&output),
        "finished-full: diverged (recorded finished in 2 steps, rerun max_steps_exceeded in 1 step)\n  \
         step 1  the exit reason differs (exit_reason)\n    \
         recorded: finished\n    \
         actual:   max_steps_exceeded  \"no finish within max_steps=1\"\n  \
         (stopped at the first divergence)\n\
         1 run of finished.full.jsonl replayed with live tools: 0 faithful, 1 diverged\n"
    );
}

#[test]
fn continue_reports_every_divergence_and_stop_only_the_first() {
    let path = sample_path("finished.full.jsonl");
    let args = [
        "replay",
        &path,
        "--max-steps",
        "1",
        "--on-divergence",
        "continue",
        "--format",
        "json",
    ];
    let output = run(&args);
    assert_eq!(output.status.code(), Some(1));
    let report = json_of(&output);
    let replayed = &report["runs"][0];
    assert_eq!(replayed["stopped"], false);
    assert_eq!(
        replayed["divergences"],
        json!([
            {
                "step": 1,
                "what": "exit_reason",
                "recorded": "finished",
                "actual": "max_steps_exceeded",
                "actual_text": "no finish within max_steps=1",
            },
            {"step": 1, "what": "steps_used", "recorded": "2", "actual": "1"},
            {
                "step": 2,
                "what": "not_reached",
                "recorded": "finish \"12 * 7 = 84，84大于80。\"",
                "actual": "not reached",
            },
        ])
    );

    let path = replay_fixture("two_edits.jsonl");
    let output = run(&[
        "replay",
        &path,
        "--on-divergence",
        "continue",
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let report = json_of(&output);
    let replayed = &report["runs"][0];
    let steps: Vec<(u64, &str)> = replayed["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["step"].as_u64().unwrap(), d["what"].as_str().unwrap()))
        .collect();
    assert_eq!(steps, [(1, "observation"), (3, "observation")]);
    assert_eq!(
        replayed["actual"],
        json!({"outcome": "max_steps_exceeded", "steps_used": 3})
    );

    let output = run(&["replay", &path, "--format", "json"]);
    let report = json_of(&output);
    let replayed = &report["runs"][0];
    assert_eq!(replayed["divergences"].as_array().unwrap().len(), 1);
    assert_eq!(replayed["divergences"][0]["step"], 1);
    assert_eq!(replayed["stopped"], true);
    // The rerun ended before its next model turn.
    assert_eq!(
        replayed["actual"],
        json!({"outcome": "stopped", "steps_used": 2})
    );
}

#[test]
fn invalid_output_runs_replay_to_the_same_invalid_model_output() {
    let extras: [&[&str]; 3] = [&[], &["--raw"], &["--tools", "recorded"]];
    for extra in extras {
        let path = sample_path("invalid_model_output.full.jsonl");
        let mut args = vec!["replay", path.as_str(), "--format", "json"];
        args.extend_from_slice(extra);
        let output = run(&args);
        assert_eq!(output.status.code(), Some(0), "{extra:?}");
        let report = json_of(&output);
        let replayed = &report["runs"][0];
        assert_eq!(replayed["verdict"], "faithful");
        assert_eq!(
            replayed["actual"],
            json!({"outcome": "invalid_model_output", "steps_used": 2})
        );
    }
}

#[test]
fn another_tool_name_than_the_recorded_one_diverges_in_both_modes() {
    let path = replay_fixture("renamed_tool.jsonl");
    for tools in ["live", "recorded"] {
        let output = run(&["replay", &path, "--tools", tools, "--format", "json"]);
        assert_eq!(output.status.code(), Some(1), "{tools}");
        let report = json_of(&output);
        assert_eq!(
            report["runs"][0]["divergences"],
            json!([{"step": 2, "what": "tool_name", "recorded": "web_search", "actual": "search"}]),
            "{tools}"
        );
    }
}

#[test]
fn raw_replay_parses_the_recorded_text_with_todays_adapter() {
    let path = replay_fixture("raw_changed.jsonl");
    let output = run(&["replay", &path]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let output = run(&["replay", &path, "--raw", "--format", "json"]);
    assert_eq!(output.status.code(), Some(1));
    let report = json_of(&output);
    assert_eq!(report["model"], "raw");
    assert_eq!(
        report["runs"][0]["divergences"],
        json!([{
            "step": 2,
            "what": "model_turn",
            "recorded": "finish \"12 * 7 = 84，84大于80。\"",
            "actual": "invalid output (unexpected_field): unexpected field \"confidence\" in a finish action",
        }])
    );
}

#[test]
fn check_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let out_arg = out.display().to_string();
    let output = run(&[
        "replay",
        &sample_path("multi_run.jsonl"),
        "--check",
        "--trace",
        &out_arg,
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        "multi-a: replayable (2 model turns, 1 observation, max_steps 5, recorded finished in 2 steps)\n\
         multi-b: replayable (3 model turns, 3 observations, max_steps 3, recorded max_steps_exceeded in 3 steps)\n\
         multi-c: replayable (2 model turns, 0 observations, max_steps 2, recorded invalid_model_output in 2 steps)\n\
         3 runs of multi_run.jsonl can be replayed\n"
    );
    assert!(!out.exists(), "--check wrote {}", out.display());

    // A run that would diverge is still replayable; the edited observation is not even run.
    let output = run(&[
        "replay",
        &replay_fixture("edited_observation.jsonl"),
        "--check",
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        json_of(&output),
        json!({
            "source": "edited_observation.jsonl",
            "runs": [{
                "run_id": "edited-observation",
                "replayable": true,
                "model_turns": 2,
                "observations": 1,
                "max_steps": 5,
                "recorded": {"outcome": "finished", "steps_used": 2},
            }],
        })
    );

    let output = run(&[
        "replay",
        &sample_path("finished.summary.jsonl"),
        "--check",
        "--trace",
        &out_arg,
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(!out.exists());
}

/// A copy of a sample in a fresh directory, with an old modification time to compare against.
fn copied_sample(dir: &Path, name: &str) -> (Vec<u8>, SystemTime) {
    let path = dir.join("trace.jsonl");
    std::fs::copy(sample(name), &path).unwrap();
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_500_000_000);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(old)
        .unwrap();
    (std::fs::read(&path).unwrap(), old)
}

fn assert_unchanged(path: &Path, bytes: &[u8], mtime: SystemTime) {
    assert_eq!(
        std::fs::read(path).unwrap(),
        bytes,
        "{} changed",
        path.display()
    );
    assert_eq!(
        std::fs::metadata(path).unwrap().modified().unwrap(),
        mtime,
        "{} was touched",
        path.display()
    );
}

#[test]
fn the_output_must_not_be_the_input_however_it_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, mtime) = copied_sample(dir.path(), "finished.full.jsonl");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("trace.jsonl", dir.path().join("link.jsonl")).unwrap();
    std::fs::hard_link(
        dir.path().join("trace.jsonl"),
        dir.path().join("hard.jsonl"),
    )
    .unwrap();
    let absolute = dir.path().join("trace.jsonl").display().to_string();
    for (input, out) in [
        ("trace.jsonl", "trace.jsonl"),
        ("trace.jsonl", "./trace.jsonl"),
        ("trace.jsonl", "sub/../trace.jsonl"),
        ("trace.jsonl", absolute.as_str()),
        ("trace.jsonl", "link.jsonl"),
        ("link.jsonl", "trace.jsonl"),
        ("trace.jsonl", "hard.jsonl"),
    ] {
        let output = looptrace()
            .current_dir(dir.path())
            .args(["replay", input, "--trace", out])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{input} -> {out}");
        assert_eq!(stdout(&output), "");
        assert_eq!(
            stderr(&output),
            format!(
                "error: --trace `{out}` is the input trace `{input}`: replay never writes to its \
                 input; choose another file\n"
            )
        );
        assert_unchanged(&dir.path().join("trace.jsonl"), &bytes, mtime);
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["hard.jsonl", "link.jsonl", "sub", "trace.jsonl"]);
}

#[test]
fn the_rerun_is_recorded_with_replay_of_and_the_input_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, mtime) = copied_sample(dir.path(), "max_steps_exceeded.full.jsonl");
    let input = dir.path().join("trace.jsonl");
    let out = dir.path().join("rerun.jsonl");
    let output = run(&[
        "replay",
        &input.display().to_string(),
        "--trace",
        &out.display().to_string(),
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_unchanged(&input, &bytes, mtime);
    let replay_run_id = json_of(&output)["runs"][0]["replay_run_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let contents = read_trace(&out, Default::default()).unwrap();
    assert_eq!(contents.runs.len(), 1);
    let rerun = &contents.runs[0];
    assert_eq!(rerun.run_id, replay_run_id);
    let started = rerun.started().unwrap();
    let replay_of = started.replay_of.as_ref().unwrap();
    assert_eq!(replay_of.source, "trace.jsonl");
    assert_eq!(replay_of.run_id, "max_steps_exceeded-full");
    assert_eq!(started.capture, Some(Capture::Full));
    let recorded = read_trace(&input, Default::default()).unwrap();
    let kinds = |run: &RecordedRun| -> Vec<(u64, String)> {
        run.events
            .iter()
            .map(|(_, e)| (e.step, e.event_type().to_owned()))
            .collect()
    };
    assert_eq!(kinds(rerun), kinds(&recorded.runs[0]));

    // The rerun is itself a replayable recording, but has no raw model text to parse again.
    let out_arg = out.display().to_string();
    let output = run(&["replay", &out_arg]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let output = run(&["replay", &out_arg, "--raw"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: {out_arg}: run \"{replay_run_id}\" cannot be replayed: line 2 (model_action at step 1) \
             has no `raw_output`; record replayable traces with `--capture full`\n"
        )
    );
}

#[test]
fn hmac_summaries_are_compared_with_the_key_they_were_recorded_with() {
    let path = replay_fixture("hmac.jsonl");
    let with_key = |key: Option<&str>| {
        let mut command = looptrace();
        command.args(["replay", &path]);
        match key {
            Some(key) => command.env("LOOPTRACE_HASH_KEY", key),
            None => command.env_remove("LOOPTRACE_HASH_KEY"),
        };
        command.output().unwrap()
    };
    let output = with_key(None);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: {path}: run \"hmac-full\" was recorded with hmac-sha256 summaries: set \
             LOOPTRACE_HASH_KEY to the key it was recorded with\n"
        )
    );
    let output = with_key(Some("another key"));
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: {path}: run \"hmac-full\" was recorded with another LOOPTRACE_HASH_KEY: line \
             1: the summary of the task does not match\n"
        )
    );
    let output = with_key(Some("replay-fixture-key"));
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(
        stdout(&output),
        "hmac-full: faithful (finished in 4 steps)\n\
         1 run of hmac.jsonl replayed with live tools: 1 faithful, 0 diverged\n"
    );
}

#[test]
fn bad_budgets_and_missing_files_are_bad_input() {
    let output = run(&[
        "replay",
        &sample_path("finished.full.jsonl"),
        "--max-steps",
        "0",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stderr(&output), "error: --max-steps must be at least 1\n");
    let output = run(&["replay", "no/such/trace.jsonl"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).starts_with("error: failed to read `no/such/trace.jsonl`: "),
        "{}",
        stderr(&output)
    );
}

// The library, as a user's regression test would use it.

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: "a test tool".to_owned(),
        input_schema: json!({"type": "object"}),
        output_description: "text".to_owned(),
        error_description: "none".to_owned(),
    }
}

fn registry(lookup_answer: &'static str) -> ToolRegistry {
    let mut tools = ToolRegistry::builtin();
    tools
        .register(ToolDefinition::new(spec("lookup"), move |_| {
            Ok(lookup_answer.to_owned())
        }))
        .unwrap();
    tools
        .register(ToolDefinition::new(spec("explode"), |_| {
            panic!("boom in handler")
        }))
        .unwrap();
    tools
        .register(ToolDefinition::new(spec("refuse"), |_| {
            Err(ToolError::new("refused", "not today"))
        }))
        .unwrap();
    tools
}

fn call(name: &str) -> Action {
    Action::ToolCall(ToolCall::new(name, Map::new()))
}

/// Records a scripted run with full capture, as a user's agent would have.
fn record(actions: Vec<Action>, tools: &ToolRegistry) -> RecordedRun {
    let mut events: Vec<Event> = Vec::new();
    let options = RecorderOptions {
        capture: Capture::Full,
        summarizer: Summarizer::sha256(),
        durations: false,
        replay_of: None,
    };
    let mut recorder = TraceRecorder::new("user-run", options, &mut events);
    let _ = run_agent_result(
        &Task::new("look it up"),
        &mut ScriptedModel::new(actions),
        tools,
        RunOptions { max_steps: 5 },
        &mut recorder,
    );
    RecordedRun {
        run_id: "user-run".to_owned(),
        events: (1..).zip(events).collect(),
    }
}

#[test]
fn a_users_tools_are_regression_tested_on_a_recorded_run() {
    let recorded = record(
        vec![
            call("lookup"),
            call("refuse"),
            Action::Finish(Finish {
                answer: "done".to_owned(),
            }),
        ],
        &registry("42"),
    );
    let options = ReplayOptions::default();
    let same = registry("42");
    let replay = replay_run(&recorded, ToolSource::Live(&same), options, &mut NoObserver).unwrap();
    assert_eq!(replay.verdict, Verdict::Faithful, "{replay:?}");

    let changed = registry("43");
    let replay = replay_run(
        &recorded,
        ToolSource::Live(&changed),
        options,
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(replay.verdict, Verdict::Diverged);
    assert_eq!(replay.divergences.len(), 1);
    let divergence = &replay.divergences[0];
    assert_eq!(divergence.step, 1);
    assert_eq!(divergence.what, DivergenceKind::Observation);
    assert_eq!(divergence.recorded_text.as_deref(), Some("42"));
    assert_eq!(divergence.actual_text.as_deref(), Some("43"));
    assert_eq!(divergence.recorded, Summarizer::sha256().summarize("42"));
    assert_eq!(divergence.actual, Summarizer::sha256().summarize("43"));

    // Tools the replaying program does not have are served from the recording.
    let replay = replay_run(&recorded, ToolSource::Recorded, options, &mut NoObserver).unwrap();
    assert_eq!(replay.verdict, Verdict::Faithful);
}

#[test]
fn a_recorded_tool_panic_replays_as_the_same_internal_error() {
    let tools = registry("42");
    let recorded = record(vec![call("lookup"), call("explode")], &tools);
    assert_eq!(
        recorded.finished().unwrap().ending(),
        Some(ExitReason::InternalError)
    );
    let options = ReplayOptions {
        on_divergence: OnDivergence::Continue,
        ..ReplayOptions::default()
    };
    for source in [ToolSource::Live(&tools), ToolSource::Recorded] {
        let replay = replay_run(&recorded, source, options, &mut NoObserver).unwrap();
        assert_eq!(replay.verdict, Verdict::Faithful, "{replay:?}");
        assert_eq!(replay.actual.outcome, "internal_error");
        assert_eq!(replay.actual.steps_used, Some(2));
    }
    // A calculator-only runtime has no `lookup`: the unknown tool shows at step 1.
    let calculator_only = ToolRegistry::builtin();
    let replay = replay_run(
        &recorded,
        ToolSource::Live(&calculator_only),
        ReplayOptions::default(),
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(replay.divergences[0].step, 1);
    assert_eq!(replay.divergences[0].what, DivergenceKind::IsError);
}

#[test]
fn a_rerun_stopped_at_its_divergence_is_recorded_as_replay_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let input = replay_fixture("edited_observation.jsonl");
    let output = run(&["replay", &input, "--trace", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let contents = looptrace::trace::read_trace(&out, Default::default()).unwrap();
    let ending = contents.runs[0].finished().unwrap();
    assert_eq!(ending.error_kind(), Some("replay_stopped"));
}

#[test]
fn a_rerun_that_runs_past_the_recordings_end_is_recorded_as_replay_stopped() {
    // A larger budget than the recording's asks for a turn it does not have: the replay
    // stopped there, and no model failed.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let input = "sample_traces/max_steps_exceeded.full.jsonl";
    for on_divergence in ["stop", "continue"] {
        let _ = std::fs::remove_file(&out);
        let output = run(&[
            "replay",
            input,
            "--max-steps",
            "10",
            "--on-divergence",
            on_divergence,
            "--trace",
            out.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(1));
        let contents = looptrace::trace::read_trace(&out, Default::default()).unwrap();
        let ending = contents.runs[0].finished().unwrap();
        assert_eq!(
            ending.error_kind(),
            Some("replay_stopped"),
            "{on_divergence}"
        );
    }
}

#[test]
fn fields_a_python_loop_recording_lacks_are_not_compared_and_the_run_stays_faithful() {
    // Shaped like the write-up's Python loop: no `error_kind` on the error observation nor on the
    // `max_steps_exceeded` ending, no `steps_used`, and no `is_error` on the first observation.
    let input = replay_fixture("writeup_loop.full.jsonl");
    // Live tools give the error a kind the recording lacks; recorded tools serve none.
    let observation_kind = json!({"step": 2, "event": "observation", "field": "error_kind"});
    for (tools, kind_listed) in [("live", true), ("recorded", false)] {
        let output = run(&["replay", &input, "--tools", tools]);
        assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
        let kind_text = if kind_listed {
            " observation.error_kind (step 2),"
        } else {
            ""
        };
        assert_eq!(
            stdout(&output),
            format!(
                "py-max-steps: faithful (max_steps_exceeded in 2 steps)\n  not compared (the \
                 recording lacks them): observation.is_error (step 1),{kind_text} \
                 run_finished.error_kind (step 2), run_finished.steps_used (step 2)\n\
                 1 run of writeup_loop.full.jsonl replayed with {tools} tools: 1 faithful, 0 diverged\n"
            )
        );
        let json = json_of(&run(&[
            "replay", &input, "--tools", tools, "--format", "json",
        ]));
        assert_eq!(json["runs"][0]["verdict"], "faithful");
        let mut expected = vec![json!({"step": 1, "event": "observation", "field": "is_error"})];
        if kind_listed {
            expected.push(observation_kind.clone());
        }
        expected.push(json!({"step": 2, "event": "run_finished", "field": "error_kind"}));
        expected.push(json!({"step": 2, "event": "run_finished", "field": "steps_used"}));
        assert_eq!(json["runs"][0]["not_compared"], Value::Array(expected));
    }
    // `show` reads the missing `is_error` by the rule: no `error_kind`, so not an error.
    let shown = stdout(&run(&["show", &input]));
    assert!(shown.contains("calculator ok output=\"2\""), "{shown}");
    assert!(shown.contains("calculator error unclassified"), "{shown}");
}

#[test]
fn a_recorded_field_that_differs_still_diverges() {
    // The same recording with its kinds written: a wrong one is a divergence, not skipped.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kinds.jsonl");
    let text = std::fs::read_to_string(fixture("replay/writeup_loop.full.jsonl")).unwrap();
    let text = text.replace(
        r#""is_error":true,"#,
        r#""is_error":true,"error_kind":"overflow","#,
    );
    std::fs::write(&path, text).unwrap();
    let json = json_of(&run(&[
        "replay",
        path.to_str().unwrap(),
        "--format",
        "json",
    ]));
    assert_eq!(json["runs"][0]["verdict"], "diverged");
    assert_eq!(json["runs"][0]["divergences"][0]["what"], "error_kind");
    assert_eq!(json["runs"][0]["divergences"][0]["recorded"], "overflow");
}

#[test]
fn occurrence_selects_a_later_run_of_a_reused_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reused.jsonl");
    let id = reused_id_trace(&path);
    let path = path.to_str().unwrap();

    let json = json_of(&run(&[
        "replay",
        path,
        "--run",
        &id,
        "--occurrence",
        "2",
        "--format",
        "json",
    ]));
    assert_eq!(json["runs"][0]["recorded"]["outcome"], "max_steps_exceeded");
    let first = run(&["replay", path, "--run", &id, "--format", "json"]);
    assert_eq!(
        json_of(&first)["runs"][0]["recorded"]["outcome"],
        "finished"
    );
    // Without --occurrence, the 1st is replayed and the others are named, as `show` does.
    let note = format!(
        "note: run {id:?} occurs twice in `{path}`; replaying the 1st (choose with --occurrence N)"
    );
    assert!(stderr(&first).contains(&note), "{}", stderr(&first));
    let chosen = run(&["replay", path, "--run", &id, "--occurrence", "1"]);
    assert!(!stderr(&chosen).contains("note:"), "{}", stderr(&chosen));
    let past = run(&["replay", path, "--run", &id, "--occurrence", "3"]);
    assert_eq!(past.status.code(), Some(2));
    assert!(stderr(&past).contains("occurs twice"), "{}", stderr(&past));

    let shown = stdout(&run(&["show", path]));
    assert!(shown.contains(&format!("run {id} (5 events)")), "{shown}");
    assert!(shown.contains(&format!("run {id} (2nd) (")), "{shown}");
    let second_only = run(&["show", path, "--run", &id, "--occurrence", "2"]);
    assert!(stdout(&second_only).contains("outcome: max_steps_exceeded"));
    assert!(!stdout(&second_only).contains("outcome: finished"));
}

/// A trace whose two runs share one id: first `finished`, then `max_steps_exceeded`.
fn reused_id_trace(path: &Path) -> String {
    let first = std::fs::read_to_string(sample("finished.full.jsonl")).unwrap();
    let second = std::fs::read_to_string(sample("max_steps_exceeded.full.jsonl")).unwrap();
    let id: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let id = id["run_id"].as_str().unwrap().to_owned();
    let second_id: Value = serde_json::from_str(second.lines().next().unwrap()).unwrap();
    let second = second.replace(second_id["run_id"].as_str().unwrap(), &id);
    std::fs::write(path, format!("{first}{second}")).unwrap();
    id
}

#[test]
fn a_suite_replay_task_selects_a_later_run_with_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    let id = reused_id_trace(&dir.path().join("t.jsonl"));
    let suite = dir.path().join("suite.json");
    let write_suite = |occurrence: Value| {
        let mut model = json!({"replay": "t.jsonl", "run_id": id});
        if !occurrence.is_null() {
            model["occurrence"] = occurrence;
        }
        let suite_json = json!({"name": "occ", "tasks": [{"id": "t", "model": model}]});
        std::fs::write(&suite, suite_json.to_string()).unwrap();
    };
    let out = dir.path().join("out");
    let eval = || {
        run(&[
            "eval",
            suite.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--format",
            "json",
        ])
    };
    for (occurrence, expected) in [
        (Value::Null, "finished"),
        (json!(1), "finished"),
        (json!(2), "max_steps_exceeded"),
    ] {
        write_suite(occurrence);
        let output = eval();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let results: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
                .unwrap();
        assert_eq!(results["tasks"][0]["exit_reason"], expected);
    }
    write_suite(json!(3));
    let past = eval();
    assert_eq!(past.status.code(), Some(2));
    assert!(
        stderr(&past).contains("has no 3rd run"),
        "{}",
        stderr(&past)
    );
}

#[test]
fn a_fifo_as_replay_source_is_bad_input_instead_of_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let output = run(&["replay", fifo.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not a regular file"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_suite_naming_a_fifo_and_a_line_without_end_are_bad_input_instead_of_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["tasks.jsonl", "tools.json"] {
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join(name))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let task = json!({"id": "a", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "x"}]}});
    for (suite, problem) in [
        (
            json!({"name": "s", "tasks_file": "tasks.jsonl"}),
            "not a regular file",
        ),
        (
            json!({"name": "s", "tools": "tools.json", "tasks": [task]}),
            "is a named pipe (FIFO), not a regular file",
        ),
    ] {
        let path = dir.path().join("suite.json");
        std::fs::write(&path, suite.to_string()).unwrap();
        let out = dir.path().join("out");
        let output = run(&[
            "eval",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(problem), "{}", stderr(&output));
    }
    // A line longer than the limit is an error as soon as the limit is passed, not at a newline
    // that never comes.
    for args in [
        &["show", "/dev/zero"][..],
        &["export", "--otlp", "/dev/zero"],
    ] {
        let output = run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&output).contains("line is longer than the limit"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn eval_traces_of_an_eval_output_folder_names_the_traces_to_give_instead() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("first"), dir.path().join("second"));
    let suite = sample("suite.json");
    let output = run(&[
        "eval",
        suite.to_str().unwrap(),
        "--out",
        first.to_str().unwrap(),
        "--capture",
        "full",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The folder itself, or a folder holding it: its row logs are no traces.
    for given in [&first, dir.path()] {
        let output = run(&[
            "eval",
            "--traces",
            given.to_str().unwrap(),
            "--out",
            second.to_str().unwrap(),
            "-q",
        ]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(
            stderr(&output)
                .contains("is an output folder of eval (a run store), not a folder of traces"),
            "{}",
            stderr(&output)
        );
        assert!(!second.exists());
    }
    let run_dir = std::fs::read_dir(first.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let traces = run_dir.join("traces");
    let output = run(&[
        "eval",
        "--traces",
        traces.to_str().unwrap(),
        "--out",
        second.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn eval_traces_gives_a_run_with_a_very_long_id_a_bounded_unique_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    let text = std::fs::read_to_string(sample("finished.full.jsonl")).unwrap();
    let id: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let id = id["run_id"].as_str().unwrap().to_owned();
    // Two ids of 300 characters that differ only at the end: cut alone, they would collide.
    let long_a = format!("{}a", "x".repeat(299));
    let long_b = format!("{}b", "x".repeat(299));
    std::fs::write(
        corpus.join("long.jsonl"),
        format!(
            "{}{}",
            text.replace(&id, &long_a),
            text.replace(&id, &long_b)
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    // A file per run (`eval --traces` writes one trace file unless asked).
    let output = run(&[
        "eval",
        "--traces",
        corpus.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--trace-layout",
        "per-task",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut names: Vec<String> = std::fs::read_dir(crate::support::traces_of(&out))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2);
    assert_ne!(names[0], names[1]);
    assert!(names.iter().all(|n| n.len() <= 110), "{names:?}");
    // The recorded id stays inside the file, in `replay_of`.
    let mut replayed: Vec<String> = names
        .iter()
        .map(|n| {
            let contents =
                read_trace(&crate::support::traces_of(&out).join(n), Default::default()).unwrap();
            contents.runs[0]
                .started()
                .unwrap()
                .replay_of
                .clone()
                .unwrap()
                .run_id
        })
        .collect();
    replayed.sort();
    assert_eq!(replayed, [long_a, long_b]);
}

#[test]
fn eval_traces_refuses_a_named_fifo_and_skips_one_in_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::copy(sample("finished.full.jsonl"), corpus.join("a.jsonl")).unwrap();
    let fifo = corpus.join("pipe.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let out = dir.path().join("out");
    let named = run(&[
        "eval",
        "--traces",
        fifo.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(named.status.code(), Some(2));
    assert!(
        stderr(&named).contains("not a regular file"),
        "{}",
        stderr(&named)
    );
    let walked = run(&[
        "eval",
        "--traces",
        corpus.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(walked.status.code(), Some(0), "{}", stderr(&walked));
    assert!(
        stderr(&walked).contains("warning: skipped") && stderr(&walked).contains("pipe.jsonl"),
        "{}",
        stderr(&walked)
    );
}

/// A trace whose first run never ends, then thousands of runs ending two at a time out of order:
/// every part of the report waits for the first run (replayed at the end of the file), far more
/// than replay holds in memory, so the parts go through its temporary file and come back in order
/// of first appearance.
#[test]
fn a_run_that_never_ends_keeps_the_report_in_order_of_first_appearance_however_many_runs_follow() {
    const RUNS: usize = 6_000;
    let recorded = std::fs::read_to_string(sample("finished.full.jsonl")).unwrap();
    let lines: Vec<&str> = recorded.lines().collect();
    let with_id = |line: &str, id: &str| {
        line.replace(
            "\"run_id\":\"finished-full\"",
            &format!("\"run_id\":\"{id}\""),
        )
    };
    let mut trace = String::new();
    // Everything but its ending: replayed only once the file is read.
    for line in &lines[..lines.len() - 1] {
        trace.push_str(&with_id(line, "never-ends"));
        trace.push('\n');
    }
    for pair in 0..RUNS / 2 {
        let (a, b) = (format!("run-{}", 2 * pair), format!("run-{}", 2 * pair + 1));
        // The second run of each pair begins later and ends first.
        trace.push_str(&with_id(lines[0], &a));
        trace.push('\n');
        for line in &lines {
            trace.push_str(&with_id(line, &b));
            trace.push('\n');
        }
        for line in &lines[1..] {
            trace.push_str(&with_id(line, &a));
            trace.push('\n');
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.jsonl");
    std::fs::write(&path, trace).unwrap();
    let path = path.display().to_string();
    let mut expected_ids = vec!["never-ends".to_owned()];
    expected_ids.extend((0..RUNS).map(|i| format!("run-{i}")));

    let text = run(&["replay", &path, "--tools", "recorded"]);
    assert_eq!(text.status.code(), Some(1), "{}", stderr(&text));
    // Each run's block begins with its id; the summary line is last.
    let shown: Vec<String> = stdout(&text)
        .lines()
        .filter(|line| line.starts_with("run-") || line.starts_with("never-ends:"))
        .filter_map(|line| line.split(':').next().map(str::to_owned))
        .collect();
    assert_eq!(shown, expected_ids);
    assert!(
        stdout(&text).ends_with(&format!(
            "{} runs of many.jsonl replayed with recorded tools: {RUNS} faithful, 1 diverged\n",
            RUNS + 1
        )),
        "{}",
        stdout(&text)
    );

    let json = run(&["replay", &path, "--tools", "recorded", "-f", "json"]);
    assert_eq!(json.status.code(), Some(1), "{}", stderr(&json));
    let report = json_of(&json);
    let ids: Vec<&str> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, expected_ids);
    assert_eq!(
        (report["faithful"].clone(), report["diverged"].clone()),
        (json!(RUNS), json!(1))
    );
}
