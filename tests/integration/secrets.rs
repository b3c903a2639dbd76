//! Secrets stay with the host they are meant for, against a hostile model server on 127.0.0.1:
//! redirects are never followed (a second local server stands in for "another host"), echoed
//! keys are redacted in every form and before any cut, oversized answers are not retried, and no
//! child process (tool, finish gate) ever receives the key's variable or the hash key.

use std::path::Path;
use std::process::Output;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::live_model::{KEY, KEY_VAR, base_url, run_live};
use crate::live_model_server::{Reply, Server, anthropic, openai, responses};
use crate::support::{looptrace, stderr, stdout};

const HASH_KEY: &str = "hash-key-5e6f7a8b9c";

/// A 302 to the second server, whose path the wire format would post to.
fn redirect_to(other: &Server, api: &str) -> Reply {
    let path = match api {
        "anthropic-messages" => "/v1/messages",
        "openai-responses" => "/v1/responses",
        _ => "/v1/chat/completions",
    };
    Reply::status(302, json!({})).header("location", &format!("{}{path}", other.url))
}

fn a_good_answer(api: &str) -> Reply {
    Reply::ok(match api {
        "anthropic-messages" => anthropic::answer("the other host's answer"),
        "openai-responses" => responses::answer("the other host's answer"),
        _ => openai::answer("the other host's answer", "stop"),
    })
}

#[test]
fn a_redirect_is_never_followed_so_the_key_never_reaches_another_host() {
    for api in ["anthropic-messages", "openai-chat", "openai-responses"] {
        let other = Server::start(vec![a_good_answer(api)]);
        let server = Server::start(vec![redirect_to(&other, api)]);
        let (output, events) = run_live(&server, api, &["--max-retries", "3"]);
        assert_eq!(output.status.code(), Some(3), "{api}: {}", stderr(&output));
        // One attempt: a redirect is not retried.
        assert_eq!(server.finish().len(), 1, "{api}");
        assert!(
            other.received().is_empty(),
            "{api}: the other host was called"
        );
        let end = events.last().unwrap();
        assert_eq!(end["exit_reason"], "internal_error", "{api}");
        assert_eq!(end["error_kind"], "bad_response", "{api}");
        let message = stderr(&output);
        assert!(message.contains("HTTP 302"), "{api}: {message}");
        assert!(message.contains(&other.url), "{api}: {message}");
        assert!(message.contains("not followed"), "{api}: {message}");
    }
}

#[test]
fn a_post_redirected_to_a_get_on_another_host_does_not_finish_the_run() {
    // openai-chat used to follow a 302 with a GET and finish with the other host's answer.
    let other = Server::start(vec![a_good_answer("openai-chat")]);
    let server = Server::start(vec![redirect_to(&other, "openai-chat")]);
    let (output, events) = run_live(&server, "openai-chat", &[]);
    assert_ne!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(other.received().is_empty());
    let end = events.last().unwrap();
    assert_eq!(end["exit_reason"], "internal_error");
    assert!(!stdout(&output).contains("the other host's answer"));
}

#[test]
fn a_key_straddling_the_messages_cut_is_redacted_before_the_cut() {
    // The key starts at character 290 of the body; messages keep 300 characters.
    let message = format!("{}{KEY} is not a valid key", "x".repeat(244));
    let body = openai::error("invalid_request", &message);
    let at = body.to_string().find(KEY).unwrap();
    assert!((285..295).contains(&at), "{at}");
    let server = Server::start(vec![Reply::status(400, body)]);
    let (output, events) = run_live(&server, "openai-chat", &[]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let trace = serde_json::to_string(&events).unwrap();
    for (place, text) in [("stderr", stderr(&output)), ("trace", trace)] {
        assert!(!text.contains(&KEY[..10]), "{place}: {text}");
    }
}

/// A chat answer whose text is `echo` as it stands in the JSON body (no re-escaping).
fn echoing_answer(echo: &str) -> Reply {
    let body = openai::answer("ECHO", "stop")
        .to_string()
        .replace("ECHO", &format!("your key: {echo}"));
    Reply::Http {
        status: 200,
        headers: Vec::new(),
        body,
    }
}

#[test]
fn keys_echoed_escaped_percent_encoded_or_in_base64_are_redacted_everywhere() {
    let json_escaped: String = KEY
        .chars()
        .map(|c| match c {
            '-' => "\\u002d".to_owned(),
            c => c.to_string(),
        })
        .collect();
    let percent = KEY.replace('-', "%2D");
    let base64 = base64::engine::general_purpose::STANDARD.encode(KEY);
    for echo in [json_escaped, percent, base64.clone()] {
        let server = Server::start(vec![echoing_answer(&echo)]);
        // run_live checks stdout, stderr and the full-capture trace for the key as sent.
        let (output, events) = run_live(&server, "openai-chat", &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let trace = serde_json::to_string(&events).unwrap();
        let answer = events.last().unwrap()["answer"].clone();
        assert!(
            !trace.contains(&base64[..base64.len() - 4]),
            "the base64 form leaked: {trace}"
        );
        assert!(trace.contains("[redacted]"), "{echo}: {answer}");
        // The derived outputs read the trace: the key is not in them either.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        write_events(&path, &events);
        for args in [
            &["report", "-f", "html"][..],
            &["export", "--otlp", "--content"],
        ] {
            let out = looptrace().args(args).arg(&path).output().unwrap();
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
            assert!(!stdout(&out).contains(KEY), "{args:?}");
        }
    }
}

fn write_events(path: &Path, events: &[Value]) {
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_success_over_the_size_limit_is_a_bad_response_and_not_retried() {
    let huge = "x".repeat(11 * 1024 * 1024);
    let server = Server::start(vec![Reply::ok(openai::answer(&huge, "stop"))]);
    let (output, events) = run_live(&server, "openai-chat", &["--max-retries", "3"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_eq!(server.finish().len(), 1);
    let end = events.last().unwrap();
    assert_eq!(end["error_kind"], "bad_response");
    assert!(stderr(&output).contains("10 MiB"), "{}", stderr(&output));
}

/// `run` against the server with a finish gate that saves its environment to `env_file`.
fn gated_live_run(server: &Server, dir: &Path, tools_file: Option<&Path>) -> Output {
    let env_file = dir.join("gate-env.txt");
    let base_url = base_url(server, "openai-chat");
    let mut command = looptrace();
    command
        .args(["run", "--task", "t", "--api", "openai-chat", "--model", "m"])
        .args(["--base-url", &base_url, "--api-key-env", KEY_VAR])
        .args(["--finish-gate", "sh", "--finish-gate-arg", "-c"])
        .arg("--finish-gate-arg")
        .arg(format!("env > '{}'", env_file.display()))
        .env(KEY_VAR, KEY)
        .env("LOOPTRACE_HASH_KEY", HASH_KEY)
        .env("LOOPTRACE_TEST_NOT_ALLOWED", "private");
    if let Some(tools_file) = tools_file {
        command.arg("--tools-file").arg(tools_file);
    }
    command.output().unwrap()
}

#[test]
fn the_finish_gate_gets_the_allow_list_and_never_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::ok(openai::answer("84", "stop"))]);
    let output = gated_live_run(&server, dir.path(), None);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let env = std::fs::read_to_string(dir.path().join("gate-env.txt")).unwrap();
    assert!(env.contains("PATH="), "{env}");
    for secret in [
        KEY_VAR,
        KEY,
        "LOOPTRACE_HASH_KEY",
        HASH_KEY,
        "LOOPTRACE_TEST_NOT_ALLOWED",
    ] {
        assert!(!env.contains(secret), "the gate saw {secret}: {env}");
    }

    // A tools file's allow-list extends the gate's environment too.
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"{"env": ["LOOPTRACE_TEST_NOT_ALLOWED"], "tools": []}"#,
    )
    .unwrap();
    let server = Server::start(vec![Reply::ok(openai::answer("84", "stop"))]);
    let output = gated_live_run(&server, dir.path(), Some(&tools));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let env = std::fs::read_to_string(dir.path().join("gate-env.txt")).unwrap();
    assert!(env.contains("LOOPTRACE_TEST_NOT_ALLOWED=private"), "{env}");
    assert!(!env.contains(KEY) && !env.contains(HASH_KEY), "{env}");
}

#[test]
fn an_allow_list_naming_a_secret_variable_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    for (tools, names) in [
        (json!({"env": [KEY_VAR]}), KEY_VAR),
        (json!({"env": ["LOOPTRACE_HASH_KEY"]}), "LOOPTRACE_HASH_KEY"),
        (
            json!({"tools": [{"name": "t", "input_schema": {"type": "object"},
                   "command": ["true"], "env": {KEY_VAR: "x"}}]}),
            KEY_VAR,
        ),
        (
            json!({"mcp_servers": [{"name": "s", "command": ["true"],
                   "env": {"LOOPTRACE_HASH_KEY": "x"}}]}),
            "LOOPTRACE_HASH_KEY",
        ),
    ] {
        let file = dir.path().join("tools.json");
        std::fs::write(&file, tools.to_string()).unwrap();
        let server = Server::start(vec![Reply::ok(openai::answer("84", "stop"))]);
        let output = gated_live_run(&server, dir.path(), Some(&file));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{tools}: {}",
            stderr(&output)
        );
        assert!(stderr(&output).contains(names), "{}", stderr(&output));
        assert!(stderr(&output).contains("$."), "{}", stderr(&output));
        assert!(server.received().is_empty(), "{tools}: a request was sent");
        assert!(!dir.path().join("gate-env.txt").exists());
    }
}

#[test]
fn an_eval_whose_tools_pass_on_a_models_key_variable_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let suite = json!({
        "name": "s",
        "tools": {"env": [KEY_VAR]},
        "tasks": [{"id": "a", "prompt": "p", "model": {"chat": {
            "api": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "m",
            "api_key_env": KEY_VAR}}}]
    });
    let path = dir.path().join("suite.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = looptrace()
        .arg("eval")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .env(KEY_VAR, KEY)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains(KEY_VAR), "{}", stderr(&output));
    assert!(!out.exists());
}

#[test]
fn a_named_pipe_as_a_tasks_replay_source_is_refused_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("run.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let suite = json!({"name": "s", "tasks": [
        {"id": "a", "prompt": "p", "model": {"replay": "run.jsonl"}}]});
    let path = dir.path().join("suite.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = looptrace()
        .arg("eval")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("$.tasks[0].model.replay")
            && stderr(&output).contains("named pipe"),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists());
}
