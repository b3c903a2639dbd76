//! `looptrace proxy`: the official `openai` and `anthropic` Python SDKs record through it and
//! replay from it with the upstream gone, getting the same ids, tool-call ids, text and events;
//! a changed request gets the documented miss; the key is in no recorded file. Upstream
//! failures, a client that leaves mid-stream and two clients on one run leave a valid trace, and
//! nothing hangs. `.ci/run` installs the SDKs and names their Python in `LOOPTRACE_TEST_PYTHON`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mcp::installed;
use super::proxy_upstream::ScriptedUpstream;
use super::support::{fixture, looptrace, read_events, run, stderr};

const KEY: &str = "sk-test-proxy-key-0123456789abcdef";

/// A running `looptrace proxy`.
struct Running {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = looptrace()
            .arg("proxy")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start looptrace proxy");
        let mut lines = BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        lines.read_line(&mut first).unwrap();
        let url = first
            .trim_end()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the first stderr line is {first:?}"))
            .to_owned();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = lines.read_to_string(&mut rest);
            sink.lock().unwrap().push_str(&rest);
        });
        Running { child, url, stderr }
    }

    /// SIGTERM, then the exit status and what it printed after the first line.
    fn stop(mut self) -> (ExitStatus, String) {
        let pid = i32::try_from(self.child.id()).unwrap();
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the proxy did not stop within 30 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(50));
        let text = self.stderr.lock().unwrap().clone();
        (status, text)
    }
}

/// A scripted upstream and a proxy recording it to `NAME.jsonl` in a fresh folder (kept while
/// the first value lives).
fn recording(
    name: &str,
    extra: &[&str],
) -> (tempfile::TempDir, PathBuf, ScriptedUpstream, Running) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(format!("{name}.jsonl"));
    let upstream = ScriptedUpstream::start();
    let mut args = vec![
        "--upstream",
        upstream.url.as_str(),
        "--record",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let proxy = Running::start(&args);
    (dir, out, upstream, proxy)
}

/// Runs the SDK agent's jobs (`SDK:MODE[:PROMPT]`) in one Python process (the SDKs take
/// seconds to import) and returns what it printed for each.
fn agent(python: &Path, url: &str, jobs: &[String]) -> Vec<Value> {
    let output = Command::new(python)
        .arg(fixture("proxy/agent.py"))
        .arg(url)
        .args(jobs)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .output()
        .expect("run the agent");
    assert!(
        output.status.success(),
        "{jobs:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}")))
        .collect();
    assert_eq!(results.len(), jobs.len());
    results
}

/// The runs of a trace: run id to its events, in order of first appearance.
fn runs(events: &[Value]) -> Vec<(String, Vec<Value>)> {
    let mut runs: Vec<(String, Vec<Value>)> = Vec::new();
    for event in events {
        let id = event["run_id"].as_str().unwrap().to_owned();
        match runs.iter_mut().find(|(run, _)| *run == id) {
            Some((_, list)) => list.push(event.clone()),
            None => runs.push((id, vec![event.clone()])),
        }
    }
    runs
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e["event_type"].as_str().unwrap() {
            "model_action" => format!("model_action:{}", e["action_type"].as_str().unwrap()),
            other => other.to_owned(),
        })
        .collect()
}

const CLIENTS: [(&str, &str); 6] = [
    ("chat", "plain"),
    ("chat", "stream"),
    ("responses", "plain"),
    ("responses", "stream"),
    ("anthropic", "plain"),
    ("anthropic", "stream"),
];

#[test]
fn the_official_sdks_record_through_the_proxy_and_replay_offline() {
    let Some(python) = installed("LOOPTRACE_TEST_PYTHON", "proxy sdk test") else {
        return;
    };
    let (dir, out, upstream, proxy) = recording("calls", &[]);
    let jobs: Vec<String> = CLIENTS
        .iter()
        .map(|(sdk, mode)| format!("{sdk}:{mode}"))
        .collect();
    let recorded = agent(&python, &proxy.url, &jobs);
    let (status, said) = proxy.stop();
    assert!(status.success(), "{said}");
    for ((sdk, mode), result) in CLIENTS.iter().zip(&recorded) {
        let turns = result["turns"]
            .as_array()
            .unwrap_or_else(|| panic!("{sdk} {mode}: {result}"));
        assert_eq!(turns.len(), 2, "{sdk} {mode}: {result}");
        assert_eq!(turns[1]["text"], "The sum is 5.", "{sdk} {mode}");
        assert_eq!(turns[0]["calls"].as_array().unwrap().len(), 1);
    }
    // The key went upstream, and nowhere else.
    let seen = upstream.seen();
    assert_eq!(seen.len(), 12);
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths
            .iter()
            .filter(|p| **p == "/v1/chat/completions")
            .count(),
        4
    );
    assert_eq!(paths.iter().filter(|p| **p == "/v1/messages").count(), 4);
    assert!(seen.iter().all(|s| s.body["model"].is_string()));
    assert!(
        seen.iter()
            .all(|s| s.headers.iter().any(|(_, v)| v.contains(KEY)))
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains(KEY), "the key is in the trace");
    assert!(!said.contains(KEY));

    let events = read_events(&out);
    assert!(
        events.iter().all(|e| e["ts"].is_string()),
        "an event without ts"
    );
    let recorded_runs = runs(&events);
    assert_eq!(recorded_runs.len(), 6, "one run per conversation");
    for ((sdk, mode), (id, events)) in CLIENTS.iter().zip(&recorded_runs) {
        assert_eq!(
            kinds(events),
            [
                "run_started",
                "model_action:tool_call",
                "observation",
                "model_action:finish",
                "run_finished"
            ],
            "{sdk} {mode} run {id}"
        );
        assert_eq!(events[0]["task"], "What is 2 + 3? Use the add tool.");
        assert_eq!(events[1]["tool_name"], "add");
        assert_eq!(events[1]["arguments"], json!({"a": 2, "b": 3}));
        assert_eq!(events[2]["content"], "5");
        assert_eq!(events[2]["call_id"], events[1]["call_id"]);
        assert_eq!(events[3]["answer"], "The sum is 5.");
        assert_eq!(events[4]["exit_reason"], "finished");
        assert_eq!(events[4]["steps_used"], 2);
        for turn in [&events[1], &events[3]] {
            assert!(turn["request_body"].is_string() && turn["raw_response"].is_string());
            assert!(
                turn["request_hash"]
                    .as_str()
                    .unwrap()
                    .starts_with("sha256=")
            );
            assert_eq!(turn["usage"]["input_tokens"], 20, "{sdk} {mode}");
            let chunks = turn["stream_chunks"].as_array();
            if *mode == "stream" {
                let chunks = chunks.unwrap_or_else(|| panic!("{sdk} stream without chunks"));
                let total: u64 = chunks.iter().map(|c| c.as_u64().unwrap()).sum();
                assert_eq!(total as usize, turn["raw_response"].as_str().unwrap().len());
            } else {
                assert!(chunks.is_none());
            }
        }
    }
    // `report` reads the recording as it reads any trace.
    let report = run(&["report", out.to_str().unwrap()]);
    assert!(report.status.success(), "{}", stderr(&report));

    // Replay, the upstream gone: the same answers, ids and events.
    drop(upstream);
    let replayed_out = dir.path().join("replayed.jsonl");
    let proxy = Running::start(&[
        "--replay",
        out.to_str().unwrap(),
        "--record",
        replayed_out.to_str().unwrap(),
    ]);
    let mut jobs = jobs;
    jobs.push("chat:plain:What is 2 + 4?".to_owned());
    jobs.push("anthropic:plain:What is 2 + 4?".to_owned());
    let replayed = agent(&python, &proxy.url, &jobs);
    for ((sdk, mode), (expected, again)) in CLIENTS.iter().zip(recorded.iter().zip(&replayed)) {
        assert_eq!(again, expected, "{sdk} {mode} replayed differently");
    }
    // A changed request: the SDK gets a 400 naming the closest call and the first difference.
    let miss = &replayed[6];
    assert_eq!(miss["error"]["status"], 400, "{miss}");
    assert_eq!(miss["error"]["type"], "looptrace_replay_miss");
    let message = miss["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("first differs at $.messages[0].content"),
        "{message}"
    );
    assert!(message.contains("call 1 of run `proxy-"), "{message}");
    let miss = &replayed[7];
    assert_eq!(miss["error"]["type"], "looptrace_replay_miss", "{miss}");
    let (status, said) = proxy.stop();
    assert!(status.success(), "{said}");
    assert!(said.contains("replay miss"), "{said}");
    assert!(
        said.contains("12 calls answered (12 replayed), 2 requests missed"),
        "{said}"
    );
    // What the replay recorded is a recording too, and holds the misses.
    let events = read_events(&replayed_out);
    assert_eq!(runs(&events).len(), 8);
    let missed: Vec<&Value> = events
        .iter()
        .filter(|e| e["event_type"] == "model_retry" && e["error_kind"] == "replay_miss")
        .collect();
    let brief: Vec<String> = events
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {}",
                e["run_id"], e["event_type"], e["error_kind"], e["error"]
            )
        })
        .collect();
    assert_eq!(missed.len(), 2, "{brief:#?}");
}

/// One POST through the proxy; the status and body.
fn post(url: &str, path: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let mut request = agent.post(format!("{url}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    match request.send(body.to_string()) {
        Ok(mut response) => (
            response.status().as_u16(),
            response.body_mut().read_to_string().unwrap_or_default(),
        ),
        Err(err) => (0, err.to_string()),
    }
}

fn chat_request(model: &str, prompt: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": prompt}]})
}

#[test]
fn upstream_failures_end_their_runs_and_the_trace_stays_valid() {
    let (_dir, out, _upstream, proxy) = recording("failures", &["--upstream-timeout", "0.5"]);
    let auth = [("authorization", "Bearer sk-test-proxy-key-0123456789abcdef")];
    // A 429, then the client's retry of the same request succeeds: one run, finished.
    let request = chat_request("rate-limited-once", "limited", false);
    assert_eq!(
        post(&proxy.url, "/v1/chat/completions", &request, &auth).0,
        429
    );
    assert_eq!(
        post(&proxy.url, "/v1/chat/completions", &request, &auth).0,
        200
    );
    // Always 500: the client gets it as it is, the run ends provider_unavailable.
    let (status, body) = post(
        &proxy.url,
        "/v1/chat/completions",
        &chat_request("always-500", "broken", false),
        &auth,
    );
    assert_eq!(status, 500);
    assert!(body.contains("upstream broke"));
    // A body cut midway: a 502 in the format's error shape.
    let (status, body) = post(
        &proxy.url,
        "/v1/messages",
        &json!({"model": "cut", "max_tokens": 9, "messages": [{"role": "user", "content": "cut"}]}),
        &[],
    );
    assert_eq!(status, 502);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["type"],
        "upstream_failed"
    );
    // A stream cut midway reaches the client cut too.
    let (status, _) = post(
        &proxy.url,
        "/v1/chat/completions",
        &chat_request("cut", "cut stream", true),
        &auth,
    );
    assert_ne!(status, 500);
    // Slower than --upstream-timeout.
    let (status, _) = post(
        &proxy.url,
        "/v1/chat/completions",
        &chat_request("slow", "slow", false),
        &auth,
    );
    assert_eq!(status, 502);
    let (status, said) = proxy.stop();
    assert!(status.success(), "{said}");
    assert!(!said.contains(KEY));
    let events = read_events(&out);
    assert!(!std::fs::read_to_string(&out).unwrap().contains(KEY));
    let runs = runs(&events);
    let by_task = |task: &str| {
        runs.iter()
            .find(|(_, events)| events[0]["task"] == task)
            .map(|(_, events)| events.clone())
            .unwrap_or_else(|| panic!("no run for {task}"))
    };
    let limited = by_task("limited");
    assert_eq!(
        kinds(&limited),
        ["run_started", "model_retry", "model_action:tool_call"]
    );
    assert_eq!(limited[1]["error_kind"], "rate_limited");
    assert_eq!(limited[1]["http_status"], 429);
    let broken = by_task("broken");
    assert_eq!(
        kinds(&broken),
        ["run_started", "model_retry", "run_finished"]
    );
    assert_eq!(broken[2]["exit_reason"], "internal_error");
    assert_eq!(broken[2]["error_kind"], "provider_unavailable");
    let cut = by_task("cut");
    assert_eq!(cut[1]["error_kind"], "connection_failed");
    assert_eq!(cut.last().unwrap()["exit_reason"], "internal_error");
    let cut_stream = by_task("cut stream");
    assert_eq!(cut_stream[1]["error_kind"], "connection_failed");
    assert!(
        cut_stream[1]["stream_chunks"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
    let slow = by_task("slow");
    assert_eq!(slow[1]["error_kind"], "timeout");
}

#[test]
fn events_pass_through_as_they_come_and_a_client_leaving_mid_stream_leaves_the_run_incomplete() {
    let (_dir, out, upstream, proxy) = recording("held", &[]);
    let address = proxy.url.strip_prefix("http://").unwrap().to_owned();
    let mut stream = TcpStream::connect(&address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = chat_request("hold", "held", true).to_string();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // The upstream holds everything after its first event until released: reading that event
    // here proves the proxy passed it on before the stream ended.
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&received).contains("data: ") {
        let n = stream.read(&mut buffer).unwrap();
        assert!(n > 0, "the proxy closed the stream");
        received.extend_from_slice(&buffer[..n]);
    }
    drop(stream);
    upstream.release();
    let (status, said) = proxy.stop();
    assert!(status.success(), "{said}");
    // Whether the proxy's next writes fail depends on when the kernel learns the client is
    // gone: either the call is cut (`client_disconnected`) or its answer went out whole into the
    // socket. Either way the trace is valid and the run has no ending: the client left.
    let events = read_events(&out);
    let kinds = kinds(&events);
    assert_eq!(kinds[0], "run_started");
    match kinds[1].as_str() {
        "model_retry" => assert_eq!(events[1]["error_kind"], "client_disconnected"),
        other => assert_eq!(other, "model_action:tool_call"),
    }
    assert_eq!(kinds.len(), 2, "{kinds:?}");
}

#[test]
fn two_clients_on_one_run_id_share_one_valid_run() {
    let (_dir, out, _upstream, proxy) = recording("shared", &[]);
    let url = proxy.url.clone();
    let clients: Vec<_> = (0..2)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || {
                let request = chat_request("m", &format!("client {i}"), i == 1);
                post(
                    &url,
                    "/v1/chat/completions",
                    &request,
                    &[("x-looptrace-run", "shared-run")],
                )
                .0
            })
        })
        .collect();
    for client in clients {
        assert_eq!(client.join().unwrap(), 200);
    }
    let (status, said) = proxy.stop();
    assert!(status.success(), "{said}");
    let events = read_events(&out);
    assert!(events.iter().all(|e| e["run_id"] == "shared-run"));
    let kinds = kinds(&events);
    assert_eq!(kinds[0], "run_started");
    assert_eq!(
        kinds
            .iter()
            .filter(|k| *k == "model_action:tool_call")
            .count(),
        2
    );
    assert_eq!(kinds.iter().filter(|k| *k == "run_started").count(), 1);
}

#[test]
fn bad_proxy_arguments_are_usage_errors_that_start_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(&trace, "").unwrap();
    let summary_trace: PathBuf = dir.path().join("summary.jsonl");
    std::fs::write(
        &summary_trace,
        r#"{"run_id":"r1","step":0,"event_type":"run_started","schema":"looptrace.trace/1","capture":"summary","hash":"sha256","input_summary":"chars=1;sha256=00","api":"openai-chat","model":{"name":"m"}}
"#,
    )
    .unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![], "give --upstream URL --record OUT to record"),
        (
            vec!["--upstream".into(), "http://127.0.0.1:1".into()],
            "--upstream needs --record OUT",
        ),
        (
            vec![
                "--upstream".into(),
                "ftp://x".into(),
                "--record".into(),
                "o.jsonl".into(),
            ],
            "is not an http:// or https:// URL",
        ),
        (
            vec![
                "--upstream".into(),
                "https://user:pw@h".into(),
                "--record".into(),
                "o.jsonl".into(),
            ],
            "holds credentials",
        ),
        (
            vec!["--replay".into(), trace.display().to_string()],
            "holds no recorded model call",
        ),
        (
            vec![
                "--replay".into(),
                trace.display().to_string(),
                "--record".into(),
                trace.display().to_string(),
            ],
            "is the recording being replayed",
        ),
        (
            vec![
                "--replay".into(),
                trace.display().to_string(),
                "--on-miss".into(),
                "upstream".into(),
            ],
            "--on-miss upstream needs --upstream URL and --record OUT",
        ),
        (
            vec!["--replay".into(), summary_trace.display().to_string()],
            "it was recorded with summary capture",
        ),
    ];
    for (args, expected) in cases {
        let output = looptrace().arg("proxy").args(&args).output().unwrap();
        crate::eval_guards::assert_refused(&output, expected);
        assert!(!stderr(&output).contains("listening on"));
    }
    assert!(!dir.path().join("o.jsonl").exists());
}

#[test]
fn an_ignored_path_does_not_make_a_miss_and_a_miss_names_it_otherwise() {
    let (_dir, out, upstream, proxy) = recording("ignore", &[]);
    let request = |session: &str| {
        json!({"model": "m", "metadata": {"user_id": session}, "max_tokens": 9,
            "messages": [{"role": "user", "content": "hello"}]})
    };
    let (status, recorded) = post(&proxy.url, "/v1/messages", &request("session-1"), &[]);
    assert_eq!(status, 200, "{recorded}");
    let (status, said) = proxy.stop();
    assert!(status.success(), "{said}");
    drop(upstream);
    let trace = out.to_str().unwrap();
    let strict = Running::start(&["--replay", trace]);
    let (status, body) = post(&strict.url, "/v1/messages", &request("session-2"), &[]);
    assert_eq!(status, 400);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "looptrace_replay_miss");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "first differs at $.metadata.user_id: recorded \"session-1\", got \"session-2\""
        ),
        "{message}"
    );
    strict.stop();
    let lenient = Running::start(&["--replay", trace, "--ignore", "$.metadata.user_id"]);
    let (status, body) = post(&lenient.url, "/v1/messages", &request("session-2"), &[]);
    assert_eq!((status, body), (200, recorded));
    let (status, said) = lenient.stop();
    assert!(status.success(), "{said}");
    assert!(
        said.contains("1 call answered (1 replayed), 0 requests missed"),
        "{said}"
    );
    let bad = run(&["proxy", "--replay", trace, "--ignore", "metadata.user_id"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("must start with `$`"),
        "{}",
        stderr(&bad)
    );
}
