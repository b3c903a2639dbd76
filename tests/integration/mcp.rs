//! MCP servers started for real: the fixture server `tests/fixtures/mcp/server.py` on the reference
//! Python `mcp` package, and `@modelcontextprotocol/server-filesystem` from npm. `.ci/run`
//! installs both under `target/` and names them in `LOOPTRACE_TEST_PYTHON` (a Python with `mcp`)
//! and `LOOPTRACE_TEST_MCP_FS` (the filesystem server's program). Where one is unset a test prints
//! one `SKIP` line and passes, except under `CI=true`, where it fails: CI must run them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use looptrace::run::ToolCall;
use looptrace::tools::mcp::{CallReply, Launch, McpClient, ServerFailed};
use looptrace::tools::{TaskToolSet, TaskTools, ToolRuntime, ToolsFile};
use serde_json::{Map, Value, json};

use crate::support::{
    assert_replays_live_faithfully, fixture, looptrace, read_events, run, stderr, stdout,
};

/// The program named by `variable`, or `None` (after a `SKIP` line) where it is unset outside CI.
pub fn installed(variable: &str, test: &str) -> Option<PathBuf> {
    match std::env::var_os(variable) {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("{variable} is unset under CI=true: .ci/run installs it and must set it")
        }
        _ => {
            println!("SKIP {test}: {variable} is unset (.ci/run installs and sets it)");
            None
        }
    }
}

/// The Python that has the `mcp` package, or `None` after a `SKIP` line.
pub fn python(test: &str) -> Option<PathBuf> {
    installed("LOOPTRACE_TEST_PYTHON", test)
}

/// The environment the servers get in these tests: `PATH` and whatever `extra` adds.
fn env(extra: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
    let mut env = vec![(
        OsString::from("PATH"),
        std::env::var_os("PATH").unwrap_or_default(),
    )];
    env.extend(extra.iter().map(|(k, v)| (k.into(), v.into())));
    env
}

fn launch(python: &Path, args: &[&str], timeout_s: u64) -> Launch {
    let mut all = vec![
        fixture("mcp/server.py")
            .to_str()
            .expect("a UTF-8 path")
            .to_owned(),
    ];
    all.extend(args.iter().map(|&a| a.to_owned()));
    Launch {
        name: "test".to_owned(),
        program: python.to_owned(),
        args: all,
        cwd: fixture("mcp"),
        env: env(&[]),
        stderr_log: None,
        start_timeout: Duration::from_secs(120),
        timeout: Duration::from_secs(timeout_s),
    }
}

/// Whether process `pid` is gone (or a zombie), waiting up to 10 s for a SIGKILL to land.
pub fn gone(pid: &str) -> bool {
    for _ in 0..100 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(") ").next().unwrap_or("").chars().next();
        if matches!(state, None | Some('Z')) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("arguments are an object"),
    }
}

fn content(reply: Result<CallReply, ServerFailed>) -> String {
    match reply {
        Ok(CallReply::Content(text)) => text,
        other => panic!("expected content, got {other:?}"),
    }
}

#[test]
fn mcp_client_lists_every_page_of_tools_with_their_schemas() {
    let Some(python) = python("mcp_client_lists_every_page_of_tools_with_their_schemas") else {
        return;
    };
    let client = McpClient::start(&launch(&python, &["--page-size", "3"], 30)).unwrap();
    let tools = client.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "echo", "fail", "reject", "crash", "hang", "env", "cwd", "pid"
        ]
    );
    assert_eq!(tools[0].description.as_deref(), Some("Repeats text."));
    assert_eq!(
        tools[0].input_schema,
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "times": {"type": "integer", "minimum": 1, "maximum": 5}
            },
            "required": ["text"],
            "additionalProperties": false
        })
    );
}

#[test]
fn mcp_client_tells_content_tool_errors_and_protocol_errors_apart() {
    let Some(python) = python("mcp_client_tells_content_tool_errors_and_protocol_errors_apart")
    else {
        return;
    };
    let client = McpClient::start(&launch(&python, &[], 30)).unwrap();
    let reply = client.call("echo", &args(json!({"text": "ab", "times": 2})));
    assert_eq!(content(reply), "abab");
    assert_eq!(
        client.call("fail", &Map::new()).unwrap(),
        CallReply::ToolError("the tool failed on purpose".to_owned())
    );
    assert_eq!(
        client.call("reject", &Map::new()).unwrap(),
        CallReply::ProtocolError {
            code: -32001,
            message: "rejected on purpose".to_owned()
        }
    );
    // Neither error broke the server.
    assert!(!client.has_failed());
    assert_eq!(
        content(client.call("echo", &args(json!({"text": "c"})))),
        "c"
    );
}

#[test]
fn mcp_client_fails_when_the_server_exits_mid_call() {
    let Some(python) = python("mcp_client_fails_when_the_server_exits_mid_call") else {
        return;
    };
    let client = McpClient::start(&launch(&python, &[], 30)).unwrap();
    let failure = client.call("crash", &Map::new()).unwrap_err();
    assert_eq!(
        failure.to_string(),
        "MCP server \"test\" exited during tools/call"
    );
    assert!(client.has_failed());
    let again = client
        .call("echo", &args(json!({"text": "x"})))
        .unwrap_err();
    assert_eq!(again.what, "failed earlier");
}

#[test]
fn mcp_client_kills_a_server_that_hangs_past_its_timeout() {
    let Some(python) = python("mcp_client_kills_a_server_that_hangs_past_its_timeout") else {
        return;
    };
    let client = McpClient::start(&launch(&python, &[], 2)).unwrap();
    let pid = content(client.call("pid", &Map::new()));
    let failure = client.call("hang", &Map::new()).unwrap_err();
    assert_eq!(
        failure.to_string(),
        "MCP server \"test\" did not answer tools/call within 2 s"
    );
    assert!(
        gone(&pid),
        "server {pid} still runs after its timeout killed it"
    );
}

#[test]
fn mcp_client_gives_the_server_only_its_environment_and_folder() {
    let Some(python) = python("mcp_client_gives_the_server_only_its_environment_and_folder") else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let mut launch = launch(&python, &[], 30);
    launch.cwd = folder.path().to_owned();
    launch.env = env(&[("GIVEN", "yes")]);
    let client = McpClient::start(&launch).unwrap();
    let read = |name: &str| content(client.call("env", &args(json!({"name": name}))));
    assert_eq!(read("GIVEN"), "yes");
    // Set for this test process by cargo, never passed on.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert_eq!(read("CARGO_MANIFEST_DIR"), "<unset>");
    assert_eq!(read("HOME"), "<unset>");
    let cwd = content(client.call("cwd", &Map::new()));
    assert_eq!(
        Path::new(&cwd).canonicalize().unwrap(),
        folder.path().canonicalize().unwrap()
    );
}

#[test]
fn mcp_client_appends_the_server_stderr_to_its_log() {
    let Some(python) = python("mcp_client_appends_the_server_stderr_to_its_log") else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let log = folder.path().join("mcp-test.log");
    let mut launch = launch(&python, &[], 30);
    launch.stderr_log = Some(log.clone());
    for text in ["one", "two"] {
        let client = McpClient::start(&launch).unwrap();
        content(client.call("echo", &args(json!({"text": text}))));
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = logged
        .lines()
        .filter(|l| l.starts_with("test server") || l.starts_with("call"))
        .collect();
    assert_eq!(
        lines,
        [
            "test server started",
            "call echo [('text', 'one')]",
            "test server started",
            "call echo [('text', 'two')]"
        ]
    );
}

#[test]
fn mcp_client_refuses_a_program_that_is_not_an_mcp_server() {
    let Some(python) = python("mcp_client_refuses_a_program_that_is_not_an_mcp_server") else {
        return;
    };
    let mut launch = launch(&python, &[], 30);
    launch.args = vec!["-c".to_owned(), "print('hello')".to_owned()];
    let failure = McpClient::start(&launch).unwrap_err();
    assert!(
        failure.what.starts_with("failed to initialize: "),
        "{failure}"
    );
    launch.args = vec![
        "-c".to_owned(),
        "print('hello'); import time; time.sleep(60)".to_owned(),
    ];
    launch.start_timeout = Duration::from_secs(2);
    let failure = McpClient::start(&launch).unwrap_err();
    assert_eq!(
        failure.to_string(),
        "MCP server \"test\" did not answer initialize within 2 s"
    );
    launch.program = PathBuf::from("/nonexistent/server");
    let failure = McpClient::start(&launch).unwrap_err();
    assert!(
        failure
            .what
            .starts_with("could not be started (/nonexistent/server): "),
        "{failure}"
    );
}

/// Each task's observations as `(tool_name, error_kind, content)` and its `run_finished`.
fn task_trace(out: &Path, task: &str) -> (Vec<(String, String, String)>, Value) {
    let events = read_events(&crate::support::trace_for(out, task));
    let text = |event: &Value, key: &str| event[key].as_str().unwrap_or("").to_owned();
    let observations = events
        .iter()
        .filter(|e| e["event_type"] == "observation")
        .map(|e| {
            (
                text(e, "tool_name"),
                text(e, "error_kind"),
                text(e, "content"),
            )
        })
        .collect();
    let finished = events
        .iter()
        .find(|e| e["event_type"] == "run_finished")
        .cloned()
        .unwrap_or_default();
    (observations, finished)
}

fn observation(tool: &str, error_kind: &str, content: &str) -> (String, String, String) {
    (tool.to_owned(), error_kind.to_owned(), content.to_owned())
}

#[test]
fn the_tools_command_starts_mcp_servers_to_list_their_tools() {
    if python("the_tools_command_starts_mcp_servers_to_list_their_tools").is_none() {
        return;
    }
    let tools_file = fixture("mcp/tools.json");
    let output = run(&["tools", "--tools-file", tools_file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let specs: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let names: Vec<&str> = specs
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    // Every page of tools/list, each name with the server's prefix.
    assert_eq!(
        names,
        [
            "calculator",
            "py_crash",
            "py_cwd",
            "py_echo",
            "py_env",
            "py_fail",
            "py_hang",
            "py_pid",
            "py_reject"
        ]
    );
    let echo = &specs[3];
    assert_eq!(echo["description"], "Repeats text.");
    assert_eq!(echo["input_schema"]["required"], json!(["text"]));
    assert_eq!(
        echo["input_schema"]["properties"]["times"],
        json!({"type": "integer", "minimum": 1, "maximum": 5})
    );
}

#[test]
fn an_eval_turns_mcp_results_errors_and_broken_servers_into_observations_and_internal_errors() {
    if python(
        "an_eval_turns_mcp_results_errors_and_broken_servers_into_observations_and_internal_errors",
    )
    .is_none()
    {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let output = looptrace()
        .args(["eval", fixture("mcp/suite.json").to_str().unwrap()])
        .args(["--out", out.path().to_str().unwrap(), "--jobs", "1"])
        .env("LOOPTRACE_TEST_SECRET", "s3cret")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = out.path();

    let (seen, finished) = task_trace(out, "echo");
    assert_eq!(seen, [observation("py_echo", "", "hihi")]);
    assert_eq!(finished["exit_reason"], "finished");

    // The secret in looptrace's environment never reaches the server, which runs in the tools
    // file's folder (it does not use `{workdir}`).
    let (seen, _) = task_trace(out, "environment");
    let folder = fixture("mcp").canonicalize().unwrap();
    assert_eq!(
        seen,
        [
            observation("py_env", "", "<unset>"),
            observation("py_cwd", "", folder.to_str().unwrap())
        ]
    );

    let (seen, _) = task_trace(out, "invalid-arguments");
    assert_eq!(
        seen,
        [observation(
            "py_echo",
            "invalid_arguments",
            "invalid arguments for py_echo: /text: 5 is not of type \"string\"; /times: 9 is greater than the maximum of 5"
        )]
    );

    let (seen, _) = task_trace(out, "tool-error");
    assert_eq!(
        seen,
        [observation(
            "py_fail",
            "tool_error",
            "the tool failed on purpose"
        )]
    );

    let (seen, _) = task_trace(out, "protocol-error");
    assert_eq!(
        seen,
        [observation(
            "py_reject",
            "tool_protocol_error",
            "JSON-RPC error -32001: rejected on purpose"
        )]
    );

    // A crash and a hang each end their task; the next task gets a new server.
    for (task, after, what) in [
        ("crash", "after-crash", "exited during tools/call"),
        ("hang", "after-hang", "did not answer tools/call within 5 s"),
    ] {
        let (seen, finished) = task_trace(out, task);
        assert_eq!(seen, []);
        assert_eq!(finished["exit_reason"], "internal_error");
        assert_eq!(finished["error_kind"], "tool_server_failed");
        assert!(
            finished["error"].as_str().unwrap().ends_with(what),
            "{finished}"
        );
        let (_, finished) = task_trace(out, after);
        assert_eq!(finished["exit_reason"], "finished", "{after}");
    }

    // The server's stderr: started once for the suite and again after each failure; the
    // invalid arguments never reached it.
    let log =
        std::fs::read_to_string(crate::support::newest_run(out).join("logs/mcp-py.log")).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "test server started",
            "call echo [('text', 'hi'), ('times', 2)]",
            "call env [('name', 'LOOPTRACE_TEST_SECRET')]",
            "call cwd []",
            "call fail []",
            "call reject []",
            "call crash []",
            "test server started",
            "call echo [('text', 'back')]",
            "call hang []",
            "test server started",
            "call echo [('text', 'again')]"
        ]
    );
}

#[test]
fn a_suite_reads_and_writes_its_working_folders_through_the_filesystem_server_and_replays_faithfully()
 {
    if installed(
        "LOOPTRACE_TEST_MCP_FS",
        "a_suite_reads_and_writes_its_working_folders_through_the_filesystem_server_and_replays_faithfully",
    )
    .is_none()
    {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let output = run(&[
        "eval",
        fixture("mcp/e2e/suite.json").to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let work = crate::support::newest_run(out.path()).join("work");
    let read = |path: PathBuf| std::fs::read_to_string(path).unwrap();
    assert_eq!(
        read(work.join("fix-greeting/greeting.txt")),
        "Hello, world!\n"
    );
    assert_eq!(read(work.join("own-copy/greeting.txt")), "Helo, world!\n");
    assert_eq!(
        read(work.join("own-copy/notes.txt")),
        "looked, left the typo\n"
    );
    assert!(!work.join("fix-greeting/notes.txt").exists());
    assert_eq!(read(fixture("mcp/e2e/repo/greeting.txt")), "Helo, world!\n");

    let (seen, _) = task_trace(out.path(), "fix-greeting");
    assert_eq!(
        seen,
        [
            observation("fs_read_text_file", "", "Helo, world!\n"),
            observation("bash", "exit_status", "FAIL: Helo, world!\n[exit status 1]"),
            observation("fs_write_file", "", "Successfully wrote to greeting.txt"),
            observation("bash", "", "PASS\n"),
        ]
    );
    // One server per task, started in that task's folder.
    let log = read(crate::support::newest_run(out.path()).join("logs/mcp-fs.log"));
    for task in ["fix-greeting", "own-copy"] {
        let folder = work.join(task).canonicalize().unwrap();
        assert!(log.contains(folder.to_str().unwrap()), "{log}");
    }

    let tools_file = fixture("mcp/e2e/tools.json");
    for task in ["fix-greeting", "own-copy"] {
        let trace = crate::support::trace_for(out.path(), task);
        assert_replays_live_faithfully(&trace, &tools_file);
    }
}

#[test]
fn a_task_goes_on_with_a_new_suite_server_when_another_task_broke_it() {
    if python("a_task_goes_on_with_a_new_suite_server_when_another_task_broke_it").is_none() {
        return;
    }
    let file = ToolsFile::load(&fixture("mcp/tools.json")).unwrap();
    let tools = TaskTools::new(file, None);
    let root = tempfile::tempdir().unwrap();
    // Two tasks at once share the suite's one server.
    let first = tools.for_task(&root.path().join("first")).unwrap();
    let second = tools.for_task(&root.path().join("second")).unwrap();
    let call = |set: &TaskToolSet, tool: &str, arguments: Value| {
        set.registry.execute(&ToolCall::new(tool, args(arguments)))
    };
    let pid = |set: &TaskToolSet| call(set, "py_pid", json!({})).unwrap().observation.content;
    let before = pid(&first);
    assert_eq!(pid(&second), before);
    let failure = call(&first, "py_crash", json!({})).unwrap_err();
    assert_eq!(failure.kind, "tool_server_failed");
    let after = pid(&second);
    assert_ne!(after, before);
    // A task that starts now gets the same new server.
    let third = tools.for_task(&root.path().join("third")).unwrap();
    assert_eq!(pid(&third), after);
}
