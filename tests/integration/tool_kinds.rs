//! Tools from a tools file, run for real: command tools (content, exit status, timeout with the
//! whole process group, output cut, stdin, environment allow-list), the bash builtin in its
//! per-task folder, the file's checks with JSON paths, and a suite whose tasks edit and test a
//! template repository, replayed with live tools.

use std::path::{Path, PathBuf};

use looptrace::run::ToolCall;
use looptrace::tools::{TaskToolSet, TaskTools, ToolOutcome, ToolRuntime, ToolsFile};
use serde_json::{Value, json};

use crate::support::{assert_replays_live_faithfully, fixture, read_events, run, stderr, stdout};

/// Every tool the fixture tools file offers, by name.
const FIXTURE_TOOLS: [&str; 8] = [
    "bash",
    "calculator",
    "echo_stdin",
    "fail",
    "flood",
    "hang",
    "latin1",
    "show_env",
];

/// The `name` of every object in a JSON array.
fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap())
        .collect()
}

/// The fixture tools, with a fresh working folder under `root`.
fn fixture_tools(root: &Path) -> TaskToolSet {
    let file = ToolsFile::load(&fixture("tools/tools.json")).unwrap();
    TaskTools::new(file, None)
        .for_task(&root.join("task"))
        .unwrap()
}

fn call(set: &TaskToolSet, tool: &str, arguments: Value) -> ToolOutcome {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    set.registry
        .execute(&ToolCall::new(tool, arguments))
        .unwrap()
}

#[test]
fn a_command_tool_reads_its_arguments_as_json_on_stdin_and_its_stdout_is_the_content() {
    let root = tempfile::tempdir().unwrap();
    let set = fixture_tools(root.path());
    let arguments = json!({"text": "héllo \"quoted\"\n", "n": 1.5});
    let outcome = call(&set, "echo_stdin", arguments.clone());
    assert_eq!(outcome.error_kind, None);
    assert!(!outcome.observation.is_error);
    assert_eq!(outcome.observation.content, arguments.to_string());
    assert!(!outcome.lossy);
}

#[test]
fn arguments_are_checked_against_the_schema_before_the_command_runs() {
    let root = tempfile::tempdir().unwrap();
    let set = fixture_tools(root.path());
    let outcome = call(&set, "echo_stdin", json!({"text": 5, "extra": true}));
    assert_eq!(outcome.error_kind.as_deref(), Some("invalid_arguments"));
    assert!(
        outcome.observation.content.contains("/text"),
        "{}",
        outcome.observation.content
    );
}

#[test]
fn a_non_zero_exit_is_an_error_observation_with_its_status_and_stderr() {
    let root = tempfile::tempdir().unwrap();
    let set = fixture_tools(root.path());
    let outcome = call(&set, "fail", json!({}));
    assert!(outcome.observation.is_error);
    assert_eq!(outcome.error_kind.as_deref(), Some("exit_status"));
    assert_eq!(outcome.exit_status, Some(3));
    assert_eq!(
        outcome.observation.content,
        "partial result\nsomething went wrong\n[exit status 3]"
    );
}

#[test]
fn a_timeout_kills_the_whole_process_group_grandchildren_included() {
    let root = tempfile::tempdir().unwrap();
    let set = fixture_tools(root.path());
    let outcome = call(&set, "hang", json!({}));
    assert_eq!(outcome.error_kind.as_deref(), Some("timeout"));
    assert!(outcome.observation.is_error);
    let content = &outcome.observation.content;
    assert!(content.contains("ran past its timeout of 1 s"), "{content}");
    let pid: u32 = content
        .lines()
        .find_map(|line| line.strip_prefix("grandchild "))
        .and_then(|pid| pid.trim().parse().ok())
        .unwrap_or_else(|| panic!("no grandchild pid in {content:?}"));
    // The grandchild was killed with its group; once reaped it is gone, and until then it can
    // only be a zombie. Poll (no timing assertion): a live process never turns into either.
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| stat.rsplit(')').next().map(|rest| rest.trim().to_owned()))
            .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
    };
    let mut checks = 0;
    while alive(pid) && checks < 500 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        checks += 1;
    }
    assert!(
        !alive(pid),
        "the backgrounded grandchild {pid} survived the timeout"
    );
}

#[test]
fn huge_output_is_cut_to_head_and_tail_on_character_boundaries() {
    let root = tempfile::tempdir().unwrap();
    let set = fixture_tools(root.path());
    let outcome = call(&set, "flood", json!({}));
    assert_eq!(outcome.error_kind, None);
    assert!(!outcome.lossy);
    let content = &outcome.observation.content;
    let (head, rest) = content.split_once("\n[... ").unwrap();
    let (marker, tail) = rest.split_once(" bytes elided ...]\n").unwrap();
    // 90,000 lines of "ééééé\n" (11 bytes) and "THE END\n": 990,008 bytes, 100 kept.
    let elided: usize = marker.parse().unwrap();
    assert_eq!(head.len() + elided + tail.len(), 990_008);
    assert!(head.len() <= 50 && tail.len() <= 50, "{content:?}");
    assert!(head.starts_with("ééééé\n"), "{head:?}");
    assert!(tail.ends_with("é\nTHE END\n"), "{tail:?}");
    assert!(!content.contains('\u{FFFD}'));
}

#[test]
fn output_that_is_not_utf8_is_decoded_lossily_and_marked() {
    let root = tempfile::tempdir().unwrap();
    let set = fixture_tools(root.path());
    let outcome = call(&set, "latin1", json!({}));
    assert_eq!(outcome.observation.content, "caf\u{FFFD}\n");
    assert!(outcome.lossy);
    assert!(!outcome.observation.is_error);
}

#[test]
fn bash_runs_in_the_tasks_own_fresh_copy_of_the_template() {
    let root = tempfile::tempdir().unwrap();
    let set = fixture_tools(root.path());
    let workdir = root.path().join("task").canonicalize().unwrap();
    assert_eq!(set.workdir, workdir);
    let outcome = call(
        &set,
        "bash",
        json!({"command": "pwd; cat README.txt; echo oops >&2; touch made-here"}),
    );
    assert_eq!(outcome.error_kind, None, "{}", outcome.observation.content);
    assert_eq!(
        outcome.observation.content,
        format!(
            "{}\nthe working folder of one task\noops\n",
            workdir.display()
        )
    );
    assert!(workdir.join("made-here").exists());
    assert!(!fixture("tools/work/made-here").exists());
    // A second task gets a fresh copy: what the first one made is gone.
    let again = fixture_tools(root.path());
    assert!(!again.workdir.join("made-here").exists());
    let outcome = call(&again, "bash", json!({"command": "exit 7"}));
    assert_eq!(outcome.exit_status, Some(7));
    let outcome = call(&again, "bash", json!({"command": "ls", "cwd": "/"}));
    assert_eq!(outcome.error_kind.as_deref(), Some("invalid_arguments"));
}

/// A run of the fixture tools through the binary, with `env` set in looptrace's environment;
/// returns the trace's observations.
fn run_with_env(root: &Path, responses: &[Value], env: &[(&str, &str)]) -> Vec<Value> {
    let responses_path = root.join("responses.txt");
    let text: Vec<String> = responses.iter().map(Value::to_string).collect();
    std::fs::write(&responses_path, text.join("\n")).unwrap();
    let trace = root.join("trace.jsonl");
    let mut command = crate::support::looptrace();
    command.args([
        "run",
        "--task",
        "t",
        "--capture",
        "full",
        "--max-steps",
        "5",
    ]);
    command.arg("--responses").arg(&responses_path);
    command.arg("--trace").arg(&trace);
    command.arg("--tools-file").arg(fixture("tools/tools.json"));
    command.envs(env.iter().copied());
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    read_events(&trace)
}

#[test]
fn tools_see_only_the_allowed_environment() {
    let root = tempfile::tempdir().unwrap();
    let responses = [
        json!({"type": "tool_call", "tool_name": "show_env", "arguments": {}}),
        json!({"type": "tool_call", "tool_name": "bash", "arguments": {"command": "env"}}),
        json!({"type": "finish", "answer": "done"}),
    ];
    let events = run_with_env(
        root.path(),
        &responses,
        &[
            ("LOOPTRACE_PLANTED_SECRET", "hunter2-secret"),
            ("LOOPTRACE_TEST_ALLOWED", "listed-in-env"),
        ],
    );
    let observations: Vec<&str> = events
        .iter()
        .filter(|e| e["event_type"] == "observation")
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(observations.len(), 2);
    for content in &observations {
        assert!(!content.contains("hunter2"), "{content}");
        assert!(!content.contains("LOOPTRACE_PLANTED_SECRET"), "{content}");
        assert!(
            content.contains("LOOPTRACE_TEST_ALLOWED=listed-in-env"),
            "{content}"
        );
        assert!(content.contains("PATH="), "{content}");
    }
    assert!(observations[0].contains("TOOL_FIXED=fixed-value"));
    assert!(!observations[1].contains("TOOL_FIXED"));
    let started = &events[0];
    assert_eq!(names(&started["tools"]), FIXTURE_TOOLS);
    assert!(
        started["workdir_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
}

#[test]
fn spec_hashes_ignore_key_order_and_change_with_the_entry() {
    let root = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = root.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let hashes = |path: PathBuf| {
        let file = ToolsFile::load(&path).unwrap();
        TaskTools::new(file, None)
            .for_task(&root.path().join("w"))
            .unwrap()
            .registry
            .all_spec_hashes()
    };
    let a = hashes(write(
        "a.json",
        r#"{"tools": [{"name": "t", "input_schema": {"type": "object", "required": []}, "command": ["true"]}]}"#,
    ));
    let b = hashes(write(
        "b.json",
        r#"{"tools": [{"command": ["true"], "input_schema": {"required": [], "type": "object"}, "name": "t"}]}"#,
    ));
    let c = hashes(write(
        "c.json",
        r#"{"tools": [{"name": "t", "input_schema": {"type": "object", "required": []}, "command": ["true"], "timeout_s": 5}]}"#,
    ));
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn every_problem_of_a_tools_file_is_reported_with_its_json_path() {
    let output = run(&[
        "tools",
        "--tools-file",
        fixture("tools/bad/tools.json").to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stdout(&output), "");
    let message = stderr(&output);
    for expected in [
        "has 11 problems:",
        "$.env[1]: \"bad name\" does not match",
        "$.tools[0].name: \"has space\" does not match \"^[a-zA-Z0-9_-]{1,64}$\"",
        "$.tools[4].timeout_s: 0 is less than the minimum of 1",
        "$.tools[5]: \"input_schema\" is a required property",
        "$.tools[6]: Additional properties are not allowed ('shell' was unexpected)",
        "$.workdir.template: no folder",
        "$.tools[1].name: the tool name \"calculator\" is already taken by the built-in calculator",
        "$.tools[2].command[0]: no program `no-such-program-xyz` on PATH",
        "$.mcp_servers[1].prefix: another server has the same prefix",
        "$.mcp_servers[1].name: another server is named \"fs\"",
    ] {
        assert!(
            message.contains(expected),
            "missing {expected:?} in:\n{message}"
        );
    }
}

#[test]
fn a_bad_tools_file_stops_a_run_before_anything_is_written() {
    let root = tempfile::tempdir().unwrap();
    let responses = root.path().join("responses.txt");
    std::fs::write(&responses, r#"{"type":"finish","answer":"a"}"#).unwrap();
    let trace = root.path().join("trace.jsonl");
    let output = run(&[
        "run",
        "--task",
        "t",
        "--responses",
        responses.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--tools-file",
        fixture("tools/bad/tools.json").to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("$.tools[0].name"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stdout(&output), "");
    assert!(!trace.exists());
}

#[test]
fn the_tools_command_prints_every_spec_of_a_tools_file() {
    let output = run(&[
        "tools",
        "--tools-file",
        fixture("tools/tools.json").to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let specs: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(names(&specs), FIXTURE_TOOLS);
    let fail = &specs[3];
    assert_eq!(fail["description"], "(no description given)");
    assert_eq!(specs[0]["input_schema"]["required"], json!(["command"]));
}

#[test]
fn a_suite_with_tools_and_a_tools_file_flag_is_refused() {
    let out = tempfile::tempdir().unwrap();
    let output = run(&[
        "eval",
        fixture("tools/e2e/suite.json").to_str().unwrap(),
        "--tools-file",
        fixture("tools/tools.json").to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--tools-file"),
        "{}",
        stderr(&output)
    );
    assert!(!out.path().join("results.json").exists());
}

#[test]
fn a_scripted_suite_edits_and_tests_its_own_copies_of_a_repository_and_replays_faithfully() {
    let out = tempfile::tempdir().unwrap();
    let suite = fixture("tools/e2e/suite.json");
    let output = run(&[
        "eval",
        suite.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let work = crate::support::newest_run(out.path()).join("work");
    // Each task edited its own copy; the template is untouched.
    let greet = |dir: &Path| std::fs::read_to_string(dir.join("greet.sh")).unwrap();
    assert!(greet(&work.join("fix-greeting")).contains("Hello, $1!"));
    assert!(greet(&work.join("untouched-copy")).contains("Helo, $1!"));
    assert!(greet(&fixture("tools/e2e/repo")).contains("Helo, $1!"));
    assert!(
        std::fs::read_to_string(work.join("edit-and-count/NOTES.md"))
            .unwrap()
            .ends_with("checked by a task\n")
    );
    let trace = crate::support::traces_of(out.path()).join("fix-greeting.jsonl");
    let events = read_events(&trace);
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/trace-event.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for event in &events {
        let errors: Vec<String> = validator
            .iter_errors(event)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{event}: {errors:?}");
    }
    let observations: Vec<&Value> = events
        .iter()
        .filter(|e| e["event_type"] == "observation")
        .collect();
    assert_eq!(observations[1]["error_kind"], "exit_status");
    assert_eq!(observations[1]["exit_status"], 1);
    assert_eq!(
        observations[1]["content"],
        "FAIL: expected 'Hello, world!', got 'Helo, world!'\n[exit status 1]"
    );
    assert_eq!(observations[3]["content"], "PASS\n");
    let shown = stdout(&run(&["show", trace.to_str().unwrap()]));
    assert!(shown.contains("exit_status=1"), "{shown}");
    let tools_file = fixture("tools/e2e/tools.json");
    for task in ["fix-greeting", "untouched-copy", "edit-and-count"] {
        let trace = crate::support::traces_of(out.path()).join(format!("{task}.jsonl"));
        assert_replays_live_faithfully(&trace, &tools_file);
    }
    // Without the tools file, bash is an unknown tool: the replay diverges and says why.
    let output = run(&["replay", trace.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("give --tools-file"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn replay_reports_a_changed_tool_spec_and_template_before_any_step() {
    let root = tempfile::tempdir().unwrap();
    let e2e = root.path().join("e2e");
    looptrace::tools::copy_fresh(&fixture("tools/e2e"), &e2e).unwrap();
    let out = root.path().join("out");
    let output = run(&[
        "eval",
        e2e.join("suite.json").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools = e2e.join("tools.json");
    let text = std::fs::read_to_string(&tools).unwrap();
    std::fs::write(
        &tools,
        text.replace("\"timeout_s\": 30", "\"timeout_s\": 31"),
    )
    .unwrap();
    std::fs::write(e2e.join("repo/NOTES.md"), "changed notes\n").unwrap();
    let trace = crate::support::traces_of(&out).join("untouched-copy.jsonl");
    let output = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--tools",
        "recorded",
        "--tools-file",
        tools.to_str().unwrap(),
    ]);
    let message = stderr(&output);
    assert!(
        message.contains("the spec of tool `bash` changed since the recording"),
        "{message}"
    );
    assert!(
        message.contains("the working-folder template changed since the recording"),
        "{message}"
    );
    // Recorded tools serve the recording: the run itself is still faithful.
    assert_eq!(output.status.code(), Some(0), "{message}");

    // Recorded tools need no tools file, and are not told to give one.
    let output = run(&["replay", trace.to_str().unwrap(), "--tools", "recorded"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        !stderr(&output).contains("give --tools-file"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_suite_names_its_tools_file_inside_its_folder_or_holds_the_tools_inline() {
    use looptrace::eval::load_suite_from_str;
    let task = json!({"id": "a", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "x"}]}});
    let base = fixture("tools/e2e");
    let suite = |tools: Value| json!({"name": "s", "tools": tools, "tasks": [task]}).to_string();
    let named = load_suite_from_str(&suite(json!("tools.json")), &base).unwrap();
    assert!(named.tools.unwrap().template().unwrap().ends_with("repo"));
    let inline =
        load_suite_from_str(&suite(json!({"tools": [{"builtin": "bash"}]})), &base).unwrap();
    assert!(inline.tools.unwrap().template().is_none());
    let problems = |tools: Value| {
        load_suite_from_str(&suite(tools), &base)
            .unwrap_err()
            .problems
    };
    let outside = problems(json!("../tools.json"));
    assert_eq!(outside.len(), 1);
    assert_eq!(outside[0].0, "$.tools");
    assert!(
        outside[0]
            .1
            .contains("not a file inside the suite's folder"),
        "{outside:?}"
    );
    let bad_inline = problems(json!({"tools": [{"builtin": "bash", "timeout_s": "1"}]}));
    assert_eq!(bad_inline.len(), 1, "{bad_inline:?}");
    assert_eq!(bad_inline[0].0, "$.tools.tools[0].timeout_s");
}

#[test]
fn run_removes_its_temporary_working_folder_unless_asked_to_keep_it() {
    let root = tempfile::tempdir().unwrap();
    let responses = root.path().join("responses.txt");
    let touch = json!({"type": "tool_call", "tool_name": "bash", "arguments": {"command": "touch made-by-the-run"}});
    let finish = json!({"type": "finish", "answer": "done"});
    std::fs::write(&responses, format!("{touch}\n{finish}\n")).unwrap();
    let tmp = root.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let run_once = |keep: bool| {
        let mut command = crate::support::looptrace();
        command
            .args(["run", "--task", "t", "--responses"])
            .arg(&responses);
        command.arg("--tools-file").arg(fixture("tools/tools.json"));
        if keep {
            command.arg("--keep-workdir");
        }
        let output = command.env("TMPDIR", &tmp).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        output
    };
    run_once(false);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    let output = run_once(true);
    let kept = stderr(&output);
    let kept = Path::new(kept.trim().strip_prefix("working folder kept: ").unwrap());
    assert!(kept.starts_with(&tmp), "{}", kept.display());
    assert!(kept.join("made-by-the-run").exists());
    assert!(kept.join("README.txt").exists());
}

/// A tool source that breaks on every call, as a crashed server does.
struct BrokenServer;

impl looptrace::tools::ToolProvider for BrokenServer {
    fn specs(&self) -> Vec<looptrace::tools::ToolSpec> {
        vec![looptrace::tools::ToolSpec {
            name: "fs_read".to_owned(),
            description: "reads".to_owned(),
            input_schema: json!({"type": "object"}),
            output_description: "text".to_owned(),
            error_description: "none".to_owned(),
        }]
    }

    fn call(
        &self,
        _tool_name: &str,
        _arguments: &serde_json::Map<String, Value>,
    ) -> Result<looptrace::tools::ToolReply, looptrace::tools::ToolFailure> {
        Err(looptrace::tools::ToolFailure::new(
            looptrace::tools::TOOL_SERVER_FAILED,
            "the server exited",
        ))
    }
}

#[test]
fn a_broken_tool_source_ends_the_run_as_its_internal_error_and_replays_from_the_recording() {
    use looptrace::agent::{AgentError, RunOptions, run_agent_result};
    use looptrace::model::ScriptedModel;
    use looptrace::run::{Action, ExitReason, Finish, Task};
    use looptrace::trace::{Capture, RecorderOptions, TraceRecorder, TraceWriter};

    let mut registry = looptrace::tools::ToolRegistry::builtin();
    registry.register_provider(Box::new(BrokenServer)).unwrap();
    registry.record_spec_hashes();
    let root = tempfile::tempdir().unwrap();
    let trace = root.path().join("trace.jsonl");
    let options = RecorderOptions {
        capture: Capture::Full,
        ..RecorderOptions::default()
    };
    let mut recorder = TraceRecorder::new(
        "broken",
        options,
        TraceWriter::append(&trace, false).unwrap(),
    );
    let actions = vec![
        Action::ToolCall(ToolCall::new("fs_read", serde_json::Map::new())),
        Action::Finish(Finish {
            answer: "never".to_owned(),
        }),
    ];
    let outcome = run_agent_result(
        &Task::new("read a file"),
        &mut ScriptedModel::new(actions),
        &registry,
        RunOptions { max_steps: 3 },
        &mut recorder,
    );
    let Err(AgentError::Internal { result, cause }) = outcome else {
        panic!("expected an internal error, got {outcome:?}")
    };
    assert_eq!(result.exit_reason, ExitReason::InternalError);
    assert_eq!(cause.kind(), "tool_server_failed");
    assert_eq!(
        cause.to_string(),
        "tool \"fs_read\" failed: the server exited"
    );
    drop(recorder);
    let events = read_events(&trace);
    let ending = events.last().unwrap();
    assert_eq!(ending["error_kind"], "tool_server_failed");
    assert_eq!(names(&events[0]["tools"]), ["calculator", "fs_read"]);
    let output = run(&["replay", trace.to_str().unwrap(), "--tools", "recorded"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stdout(&output).contains("broken: faithful"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn workdir_in_arguments_and_fixed_env_values_is_the_tasks_working_folder() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("template")).unwrap();
    let tools = json!({
        "workdir": {"template": "template"},
        "tools": [{
            "name": "where",
            "input_schema": {"type": "object"},
            "command": ["sh", "-c", "printf '%s|%s|%s' \"$0\" \"$PWD\" \"$W\"", "{workdir}"],
            "env": {"W": "{workdir}"}
        }]
    });
    let path = root.path().join("tools.json");
    std::fs::write(&path, tools.to_string()).unwrap();
    let file = ToolsFile::load(&path).unwrap();
    let set = TaskTools::new(file, None)
        .for_task(&root.path().join("work/task-1"))
        .unwrap();
    let outcome = call(&set, "where", json!({}));
    let dir = set.workdir.display().to_string();
    assert!(dir.ends_with("work/task-1"), "{dir}");
    assert_eq!(outcome.observation.content, format!("{dir}|{dir}|{dir}"));
}

#[test]
fn the_tools_command_exits_3_when_a_server_cannot_start() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("tools.json");
    let tools = json!({"mcp_servers": [{"name": "dead", "command": ["false"], "timeout_s": 5}]});
    std::fs::write(&path, tools.to_string()).unwrap();
    let output = run(&["tools", "--tools-file", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    assert!(
        stderr(&output).starts_with("internal error: "),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_tools_page_main_example_works_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("tools.json"),
        &crate::support::doc_blocks("tools.md", "json")[0],
    )
    .unwrap();
    std::fs::write(
        root.join("wc.py"),
        &crate::support::doc_blocks("tools.md", "python")[0],
    )
    .unwrap();
    std::fs::create_dir(root.join("repo")).unwrap();
    let responses = [
        json!({"type": "tool_call", "tool_name": "word_count", "arguments": {"text": "three little words"}}),
        json!({"type": "tool_call", "tool_name": "bash", "arguments": {"command": "pwd"}}),
        json!({"type": "finish", "answer": "3"}),
    ];
    let text: Vec<String> = responses.iter().map(Value::to_string).collect();
    std::fs::write(root.join("responses.txt"), text.join("\n")).unwrap();
    let trace = root.join("trace.jsonl");
    let output = crate::support::looptrace()
        .current_dir(root)
        .args(["run", "--task", "count", "--capture", "full"])
        .args(["--responses", "responses.txt", "--tools-file", "tools.json"])
        .arg("--trace")
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = read_events(&trace);
    let observations: Vec<&Value> = events
        .iter()
        .filter(|e| e["event_type"] == "observation")
        .collect();
    assert_eq!(observations[0]["tool_name"], "word_count");
    assert_eq!(observations[0]["is_error"], false, "{:?}", observations[0]);
    assert_eq!(observations[0]["content"].as_str().unwrap().trim(), "3");
    // Tools run in the task's fresh copy of `repo/`, not beside the tools file.
    assert_eq!(observations[1]["is_error"], false, "{:?}", observations[1]);
    let pwd = observations[1]["content"]
        .as_str()
        .unwrap()
        .trim()
        .to_owned();
    assert_ne!(Path::new(&pwd), root.canonicalize().unwrap());
}
