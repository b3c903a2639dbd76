//! Agent tasks: a suite task whose `agent` command does the work, its model calls recorded
//! through a proxy of its own and replayed offline with `eval --replay-models`. A tiny agent on
//! the official `openai` SDK (`LOOPTRACE_TEST_PYTHON`) and the real mini-swe-agent
//! (`LOOPTRACE_TEST_MINI`, its `mini` command; `.ci/run` installs it) run against a scripted
//! upstream on 127.0.0.1; the key never reaches the agent; a hanging agent is killed with its
//! process group at its timeout; an agent that exits non-zero before its run ended leaves an
//! incomplete run with its status recorded.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use super::mcp::installed;
use super::proxy_upstream::ScriptedUpstream;
use super::support::{closed_validator, files_under, read_events, schema_problems, stderr, stdout};

const KEY_VAR: &str = "AGENT_TASKS_TEST_KEY";
const KEY: &str = "sk-agent-tasks-secret-0123456789";

/// A suite of `tasks` in a fresh folder; returns the folder (kept while it lives) and the path.
fn suite(tasks: Value) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.json");
    let text = json!({"name": "agents", "defaults": {"capture": "full"}, "tasks": tasks});
    std::fs::write(&path, serde_json::to_string_pretty(&text).unwrap()).unwrap();
    (dir, path)
}

fn chat_model(url: &str, model: &str) -> Value {
    json!({"chat": {"api": "openai-chat", "base_url": format!("{url}/v1"), "model": model,
        "api_key_env": KEY_VAR}})
}

/// `looptrace eval ARGS --out OUT` with the key in looptrace's environment.
fn eval(args: &[&str], out: &Path) -> Output {
    let mut command = super::support::looptrace();
    command
        .arg("eval")
        .args(args)
        .arg("--out")
        .arg(out)
        .env(KEY_VAR, KEY);
    command.output().unwrap()
}

fn rows(out: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    let results: Value = serde_json::from_str(&text).unwrap();
    results["tasks"].as_array().unwrap().clone()
}

/// Every event of every trace under the newest run of `out`, run by run.
fn run_events(out: &Path, row: &Value) -> Vec<Value> {
    let trace = out.join(row["trace"].as_str().unwrap());
    let id = row["run_id"].as_str().unwrap();
    read_events(&trace)
        .into_iter()
        .filter(|e| e["run_id"] == id)
        .collect()
}

/// What an agent's run did, without ids and times: each event's type, tool and arguments or
/// answer.
fn trajectory(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {}",
                e["event_type"].as_str().unwrap(),
                e["tool_name"].as_str().unwrap_or(""),
                e.get("arguments").map_or(String::new(), Value::to_string),
                e["exit_reason"].as_str().unwrap_or(""),
            )
        })
        .collect()
}

fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains(needle))
        .map(|(path, _)| path)
        .collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    files_under(dir).into_iter().map(|(path, _)| path).collect()
}

/// Asserts that `looptrace` exited 0, showing what it printed when not.
fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "{}{}",
        stdout(output),
        stderr(output)
    );
}

#[test]
fn an_sdk_agent_is_recorded_then_replayed_offline_and_never_sees_the_key() {
    let Some(python) = installed("LOOPTRACE_TEST_PYTHON", "agent task sdk test") else {
        return;
    };
    let agent = super::support::fixture("agents/sdk_agent.py");
    let upstream = ScriptedUpstream::start();
    let url = upstream.url.clone();
    let task = |prompt: &str| {
        json!([{
            "id": "sum",
            "prompt": prompt,
            "model": chat_model(&url, "m"),
            "agent": {"command": [python, agent, "{prompt}", "{model}"], "timeout_s": 120},
            "expect": {"exit_reason": "finished", "answer_contains": "The sum is 5"},
            "scorers": [{"kind": "command", "command": ["sh", "-c", "grep -q 'The sum is 5' answer.txt"]}]
        }])
    };
    let (dir, path) = suite(task("What is 2 + 3?"));
    let recorded = dir.path().join("recorded");
    let output = eval(
        &[path.to_str().unwrap(), "--jobs", "2", "--repeat", "2"],
        &recorded,
    );
    succeeded(&output);
    let rows_recorded = rows(&recorded);
    assert_eq!(rows_recorded.len(), 2);
    for row in &rows_recorded {
        assert_eq!(row["exit_reason"], "finished", "{row}");
        assert_eq!(row["expectation"], "met", "{row}");
        assert_eq!(row["answer"], "The sum is 5.", "{row}");
        assert_eq!(row["tool_calls"], 1, "{row}");
        assert_eq!(row["steps_used"], 2, "{row}");
        assert_eq!(row["scores"][0]["passed"], true, "{row}");
        let events = run_events(&recorded, row);
        assert_eq!(events[0]["task_id"], "sum");
        assert_eq!(events[0]["task"], "What is 2 + 3?");
        assert_eq!(events[0]["capture"], "full");
        assert_eq!(
            trajectory(&events),
            [
                "run_started   ",
                "model_action add {\"a\":2,\"b\":3} ",
                "observation add  ",
                "model_action   ",
                "run_finished   finished",
            ]
        );
    }
    // Each attempt had its own proxy: the two repeats are two runs, each with two calls.
    assert_eq!(upstream.seen().len(), 4);
    for seen in upstream.seen() {
        let auth = seen
            .headers
            .iter()
            .find(|(name, _)| name == "authorization")
            .map(|(_, value)| value.clone());
        assert_eq!(auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    }
    // The agent had a placeholder key and the proxy's URL; the real key is nowhere on disk.
    let envs: Vec<PathBuf> = walk(&recorded)
        .into_iter()
        .filter(|p| p.ends_with("env.json"))
        .collect();
    assert_eq!(envs.len(), 2, "{envs:?}");
    for env in &envs {
        let env: Value = serde_json::from_str(&std::fs::read_to_string(env).unwrap()).unwrap();
        assert_eq!(env["OPENAI_API_KEY"], "looptrace-placeholder-key");
        assert!(env[KEY_VAR].is_null(), "{env}");
        assert!(
            env["OPENAI_BASE_URL"]
                .as_str()
                .unwrap()
                .starts_with("http://127.0.0.1:"),
            "{env}"
        );
        assert!(!env.to_string().contains(KEY), "{env}");
    }
    assert_eq!(files_containing(&recorded, KEY), Vec::<PathBuf>::new());
    // What was written is what the schemas declare, closed.
    let event_schema = closed_validator("trace-event.schema.json");
    let results_schema = closed_validator("results.schema.json");
    let mut problems = Vec::new();
    for row in &rows_recorded {
        for event in run_events(&recorded, row) {
            problems.extend(schema_problems(&event_schema, &event, "trace"));
        }
    }
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(recorded.join("results.json")).unwrap())
            .unwrap();
    problems.extend(schema_problems(&results_schema, &results, "results.json"));
    assert_eq!(problems, Vec::<String>::new());

    // Offline: the upstream is gone; the key's variable is still named by the suite (so set,
    // to anything), and nothing goes upstream.
    drop(upstream);
    let replayed = dir.path().join("replayed");
    let output = super::support::looptrace()
        .arg("eval")
        .arg(&path)
        .args(["--jobs", "2", "--repeat", "2", "--replay-models"])
        .arg(&recorded)
        .arg("--out")
        .arg(&replayed)
        .env(KEY_VAR, "unused-offline")
        .output()
        .unwrap();
    succeeded(&output);
    let rows_replayed = rows(&replayed);
    for (before, after) in rows_recorded.iter().zip(&rows_replayed) {
        assert_eq!(after["exit_reason"], "finished", "{after}");
        assert_eq!(after["expectation"], "met", "{after}");
        assert_eq!(after["answer"], before["answer"]);
        assert_eq!(
            trajectory(&run_events(&replayed, after)),
            trajectory(&run_events(&recorded, before))
        );
        let started = &run_events(&replayed, after)[0];
        assert_eq!(started["model"]["provider"], "replay");
    }

    // The agent now asks something it did not ask before: the run says where.
    let text =
        json!({"name": "agents", "defaults": {"capture": "full"}, "tasks": task("What is 2 + 4?")});
    std::fs::write(&path, text.to_string()).unwrap();
    let changed = dir.path().join("changed");
    let output = super::support::looptrace()
        .arg("eval")
        .arg(&path)
        .args(["--repeat", "2", "--replay-models"])
        .arg(&recorded)
        .arg("--out")
        .arg(&changed)
        .env(KEY_VAR, "unused-offline")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    for row in rows(&changed) {
        assert_eq!(row["exit_reason"], "internal_error", "{row}");
        assert_eq!(row["error_kind"], "replay_miss", "{row}");
        let error = row["error"].as_str().unwrap();
        assert!(
            error.contains("did not ask in the recorded run")
                && error.contains("first differs at $.messages[0].content")
                && error.contains("What is 2 + 4?"),
            "{error}"
        );
    }
}

#[test]
fn a_hanging_agent_is_killed_at_its_timeout_with_its_process_group() {
    let (dir, path) = suite(json!([{
        "id": "hang",
        "prompt": "wait",
        "model": chat_model("http://127.0.0.1:9", "m"),
        "agent": {
            "command": ["sh", "-c", "sleep 300 & echo $! > child.pid; wait"],
            "timeout_s": 1
        }
    }]));
    let out = dir.path().join("out");
    let junit = dir.path().join("junit.xml");
    let html = dir.path().join("report.html");
    let output = eval(
        &[
            path.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        &out,
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let row = &rows(&out)[0];
    assert_eq!(row["exit_reason"], "internal_error", "{row}");
    assert_eq!(row["error_kind"], "agent_timeout", "{row}");
    let html = std::fs::read_to_string(html).unwrap();
    assert!(html.contains("hang") && html.contains("internal_error"));
    let junit = std::fs::read_to_string(junit).unwrap();
    assert!(
        junit.contains("<testcase") && junit.contains("agent_timeout"),
        "{junit}"
    );
    assert!(
        row["error"].as_str().unwrap().contains("timeout_s (1 s)"),
        "{row}"
    );
    let pid_file = walk(&out)
        .into_iter()
        .find(|p| p.ends_with("child.pid"))
        .expect("the agent wrote its child's pid");
    let pid: i32 = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Killed, it is gone, or a zombie until whoever inherited it reaps it.
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let running = state
        .rsplit_once(") ")
        .is_some_and(|(_, rest)| !rest.starts_with('Z'));
    assert!(
        !running,
        "the agent's child {pid} outlived its timeout: {state}"
    );
    // No model call and no ending: the trace holds the run's start only, and reads incomplete.
    let events = run_events(&out, row);
    assert_eq!(trajectory(&events), ["run_started   "]);
    let report = super::support::run(&[
        "report",
        out.join(row["trace"].as_str().unwrap()).to_str().unwrap(),
    ]);
    assert!(
        stdout(&report).contains("incomplete"),
        "{}",
        stdout(&report)
    );
}

#[test]
fn an_agent_that_exits_non_zero_before_its_run_ended_is_incomplete_with_its_status() {
    let Some(python) = installed("LOOPTRACE_TEST_PYTHON", "agent task exit test") else {
        return;
    };
    let agent = super::support::fixture("agents/sdk_agent.py");
    let upstream = ScriptedUpstream::start();
    let (dir, path) = suite(json!([{
        "id": "crash",
        "prompt": "What is 2 + 3?",
        "model": chat_model(&upstream.url, "m"),
        "agent": {"command": [python, agent, "{prompt}", "{model}"], "env": {"AGENT_EXIT": "3"}}
    }]));
    let out = dir.path().join("out");
    // One trace file for every run: the proxy writes through the evaluation's shared writer.
    let output = eval(&[path.to_str().unwrap(), "--trace-layout", "single"], &out);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let row = &rows(&out)[0];
    assert_eq!(row["error_kind"], "agent_exit", "{row}");
    assert_eq!(
        row["error"],
        "the agent exited with status 3 before its run ended; the run is incomplete"
    );
    let events = run_events(&out, row);
    assert_eq!(
        trajectory(&events),
        ["run_started   ", "model_action add {\"a\":2,\"b\":3} "]
    );
    let log = walk(&out)
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(".agent.log"));
    assert!(
        log.is_some(),
        "the agent's output is kept in the run's logs"
    );
}

/// The suite of docs/proxy.md's replay-after-a-code-change workflow, as written, with the
/// scripted upstream's URL for OpenAI's and the installed `mini` for the bare name.
fn documented_suite(dir: &Path, url: &str, mini: &Path) -> PathBuf {
    let block = super::support::doc_blocks("proxy.md", "json")
        .into_iter()
        .find(|block| block.contains("\"agent\""))
        .expect("docs/proxy.md has the agent suite");
    let mini = serde_json::to_string(mini.to_str().unwrap()).unwrap();
    let text = block
        .replace("https://api.openai.com/v1", &format!("{url}/v1"))
        .replace("[\"mini\",", &format!("[{mini},"));
    let path = dir.join("hello.json");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn mini_swe_agent_runs_the_documented_suite_recorded_then_replayed() {
    let Some(mini) = installed("LOOPTRACE_TEST_MINI", "mini-swe-agent task test") else {
        return;
    };
    let upstream = ScriptedUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let path = documented_suite(dir.path(), &upstream.url, &mini);
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let eval = |args: &[&str], out: &Path| {
        super::support::looptrace()
            .arg("eval")
            .arg(&path)
            .args(args)
            .arg("--out")
            .arg(out)
            .env("OPENAI_API_KEY", KEY)
            .env("HOME", &home)
            .output()
            .unwrap()
    };
    let recorded = dir.path().join("recorded");
    let output = eval(&["--jobs", "2", "--repeat", "2"], &recorded);
    succeeded(&output);
    let rows_recorded = rows(&recorded);
    assert_eq!(rows_recorded.len(), 2);
    let commands = |out: &Path, row: &Value| -> Vec<String> {
        run_events(out, row)
            .iter()
            .filter(|e| e["event_type"] == "model_action")
            .map(|e| e["arguments"]["command"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    for row in &rows_recorded {
        assert_eq!(row["model"], "small", "{row}");
        assert_eq!(row["exit_reason"], "finished", "{row}");
        assert_eq!(row["expectation"], "met", "{row}");
        assert_eq!(
            commands(&recorded, row),
            [
                "echo hello > hello.txt",
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
            ]
        );
    }
    let seen = upstream.seen();
    assert_eq!(seen.len(), 4);
    assert!(seen.iter().all(|s| {
        s.headers
            .contains(&("authorization".to_owned(), format!("Bearer {KEY}")))
    }));
    assert_eq!(files_containing(&recorded, KEY), Vec::<PathBuf>::new());
    drop(upstream);

    let replayed = dir.path().join("replayed");
    let replay = [
        "--jobs",
        "2",
        "--repeat",
        "2",
        "--replay-models",
        recorded.to_str().unwrap(),
    ];
    let output = eval(&replay, &replayed);
    succeeded(&output);
    for (before, after) in rows_recorded.iter().zip(rows(&replayed)) {
        assert_eq!(after["exit_reason"], "finished", "{after}");
        assert_eq!(after["expectation"], "met", "{after}");
        assert_eq!(commands(&replayed, &after), commands(&recorded, before));
        assert_eq!(
            trajectory(&run_events(&replayed, &after)),
            trajectory(&run_events(&recorded, before))
        );
    }

    // The agent now asks something new: the prompt changed.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("Write hello into", "Write hello, world into"),
    )
    .unwrap();
    let changed = dir.path().join("changed");
    let output = eval(&replay, &changed);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    for row in rows(&changed) {
        assert_eq!(row["error_kind"], "replay_miss", "{row}");
        let error = row["error"].as_str().unwrap();
        assert!(
            error.contains("first differs at $.messages[1].content")
                && error.contains("hello, world"),
            "{error}"
        );
    }
}

#[test]
fn a_suite_s_agent_mistakes_are_each_named_and_nothing_runs() {
    let (dir, path) = suite(json!([
        {"id": "a", "prompt": "p", "model": chat_model("http://127.0.0.1:9", "m"),
         "agent": {"command": ["sh", "-c", "{promt}"], "env": {"OPENAI_API_KEY": "x"},
                   "pass_env": ["LOOPTRACE_HASH_KEY"], "ignore": ["metadata"]}},
        {"id": "b", "prompt": "p", "model": {"responses": ["{}"]},
         "agent": {"command": ["true"]}},
        {"id": "c", "prompt": "p", "model": chat_model("http://127.0.0.1:9", "m"),
         "finish_gate": {"command": ["true"]}, "agent": {"command": ["true"]}},
        {"id": "d", "prompt": "p", "model": chat_model("http://127.0.0.1:9", "m"),
         "agent": {"command": [], "timeout_s": 0}}
    ]));
    let out = dir.path().join("out");
    let output = eval(&[path.to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    for expected in [
        "$.tasks[0].agent.command[2]: unknown placeholder `{promt}`",
        "$.tasks[0].agent.env.OPENAI_API_KEY: `OPENAI_API_KEY` is set by looptrace",
        "$.tasks[0].agent.pass_env[0]: `LOOPTRACE_HASH_KEY` holds a secret",
        "$.tasks[0].agent.ignore[0]",
        "$.tasks[1].model: an agent task's model is the live model its agent calls",
        "$.tasks[2].finish_gate: an agent task takes no finish gate",
        "$.tasks[3].agent.command",
        "$.tasks[3].agent.timeout_s",
    ] {
        assert!(message.contains(expected), "{expected} not in:\n{message}");
    }
    assert!(!out.exists(), "nothing is written for a bad suite");

    let (dir, path) = suite(json!([
        {"id": "a", "prompt": "p", "model": chat_model("http://127.0.0.1:9", "m"),
         "agent": {"command": ["true"]}}
    ]));
    let missing = dir.path().join("nowhere");
    let output = eval(
        &[
            path.to_str().unwrap(),
            "--replay-models",
            missing.to_str().unwrap(),
        ],
        &dir.path().join("out"),
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("failed to read results") && message.contains("nowhere"),
        "{message}"
    );
}
