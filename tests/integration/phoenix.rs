//! A real receiver: Arize Phoenix (`arize-phoenix`, installed by `.ci/run` into
//! `target/phoenix-venv`) started on 127.0.0.1 (`tests/phoenix/serve.py` keeps its gRPC port
//! there too). `export --endpoint` and `eval --otlp-endpoint` send runs; Phoenix's REST API gives
//! them back: every span with its ids, parent, name, status and Phoenix's token counts, eval runs
//! at the time they ran, and no duplicates when the same runs are sent again.
//!
//! Phoenix takes a minute or more to start, so this test is ignored by `cargo test`; `.ci/run`
//! runs it with `LOOPTRACE_TEST_PHOENIX` set to the venv's `python` (without it the test prints
//! one `SKIP` line).

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::otlp_push::{clean_looptrace, json_spans};
use crate::support::{fixture, sample, stderr};

/// Phoenix running until dropped.
struct Phoenix {
    child: Child,
    base: String,
    log: PathBuf,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Phoenix {
    fn start(python: &Path, dir: &Path) -> Phoenix {
        let port = free_port();
        let log = dir.join("phoenix.log");
        let child = Command::new(python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/phoenix/serve.py"))
            .env("PHOENIX_WORKING_DIR", dir)
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", free_port().to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(dir.join("phoenix.err")).unwrap())
            .spawn()
            .unwrap();
        let phoenix = Phoenix {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
        };
        let started = Instant::now();
        while phoenix.get("/healthz").is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(900),
                "Phoenix did not start; see {}",
                phoenix.log.display()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        println!(
            "Phoenix started in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        phoenix
    }

    fn get(&self, path: &str) -> Option<String> {
        let mut response = ureq::get(format!("{}{path}", self.base)).call().ok()?;
        response.body_mut().read_to_string().ok()
    }

    fn traces_url(&self) -> String {
        format!("{}/v1/traces", self.base)
    }

    /// Every span of the default project, by span id.
    fn spans(&self) -> HashMap<String, Value> {
        let mut spans = HashMap::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = match &cursor {
                Some(cursor) => format!("/v1/projects/default/spans?limit=1000&cursor={cursor}"),
                None => "/v1/projects/default/spans?limit=1000".to_owned(),
            };
            let Some(body) = self.get(&page) else {
                return spans;
            };
            let page: Value = serde_json::from_str(&body).unwrap();
            for span in page["data"].as_array().unwrap() {
                let id = span["context"]["span_id"].as_str().unwrap().to_owned();
                // A second copy of a span id would be a duplicate.
                assert!(spans.insert(id, span.clone()).is_none(), "duplicate {span}");
            }
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return spans,
            }
        }
    }

    /// Waits until Phoenix holds `count` spans (it stores what it receives in the background).
    fn wait_for(&self, count: usize) -> HashMap<String, Value> {
        let started = Instant::now();
        loop {
            let spans = self.spans();
            if spans.len() >= count || started.elapsed() > Duration::from_secs(120) {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// One exported span, from `export --otlp`'s OTLP/JSON.
struct Exported {
    trace_id: String,
    parent: Option<String>,
    name: String,
    error: bool,
    start: u64,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
}

fn exported(paths: &[&Path]) -> HashMap<String, Exported> {
    let mut spans = HashMap::new();
    for span in json_spans(paths) {
        let int = |key: &str| {
            span["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == key)
                .and_then(|a| a["value"]["intValue"].as_str()?.parse().ok())
        };
        spans.insert(
            span["spanId"].as_str().unwrap().to_owned(),
            Exported {
                trace_id: span["traceId"].as_str().unwrap().to_owned(),
                parent: span["parentSpanId"].as_str().map(str::to_owned),
                name: span["name"].as_str().unwrap().to_owned(),
                error: span["status"]["code"] == 2,
                start: span["startTimeUnixNano"].as_str().unwrap().parse().unwrap(),
                input_tokens: int("gen_ai.usage.input_tokens"),
                output_tokens: int("gen_ai.usage.output_tokens"),
            },
        );
    }
    spans
}

/// Phoenix's ISO time (`2024-01-01T00:00:00.000001+00:00`) in nanoseconds since 1970.
fn phoenix_nanos(time: &str) -> u64 {
    let utc = time.replace("+00:00", "Z");
    looptrace::export::otlp::parse_rfc3339(&utc).unwrap_or_else(|| panic!("{time}"))
}

/// Checks that Phoenix holds each exported span as it was sent.
fn assert_stored(phoenix: &HashMap<String, Value>, sent: &HashMap<String, Exported>) {
    for (id, span) in sent {
        let stored = phoenix
            .get(id)
            .unwrap_or_else(|| panic!("span {id} ({}) missing", span.name));
        assert_eq!(stored["context"]["trace_id"], span.trace_id.as_str());
        assert_eq!(stored["name"], span.name.as_str());
        assert_eq!(stored["parent_id"].as_str(), span.parent.as_deref());
        let status = if span.error { "ERROR" } else { "UNSET" };
        assert_eq!(stored["status_code"], status, "{id} {}", span.name);
        // Phoenix keeps microseconds.
        assert_eq!(
            phoenix_nanos(stored["start_time"].as_str().unwrap()) / 1_000,
            span.start / 1_000
        );
        let attributes = &stored["attributes"];
        assert_eq!(
            attributes["llm.token_count.prompt"].as_i64(),
            span.input_tokens,
            "{id}"
        );
        assert_eq!(
            attributes["llm.token_count.completion"].as_i64(),
            span.output_tokens,
            "{id}"
        );
        let kind = match span.name.split(' ').next().unwrap() {
            "invoke_agent" => "AGENT",
            "chat" => "LLM",
            "execute_tool" => "TOOL",
            _ => "UNKNOWN",
        };
        if kind != "UNKNOWN" {
            assert_eq!(stored["span_kind"], kind, "{}", span.name);
        }
    }
}

fn sent_count(output: &std::process::Output) -> usize {
    let said = stderr(output);
    let spans = said
        .split(" spans)")
        .next()
        .and_then(|head| head.rsplit('(').next())
        .unwrap_or_else(|| panic!("{said}"));
    spans.parse().unwrap()
}

#[test]
#[ignore = "starts Arize Phoenix (a minute or more): `.ci/run` runs it"]
fn phoenix_shows_exported_and_evaluated_runs_once_each() {
    let Some(python) = std::env::var_os("LOOPTRACE_TEST_PHOENIX").map(PathBuf::from) else {
        println!("SKIP: LOOPTRACE_TEST_PHOENIX is not set (`.ci/run` sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let phoenix = Phoenix::start(&python, dir.path());
    let url = phoenix.traces_url();

    // Every sample run and a trace with token counts, through `export --endpoint`.
    let samples = sample("");
    let spend = fixture("report/spend.jsonl");
    let inputs: [&Path; 2] = [&samples, &spend];
    let send = || {
        let output = clean_looptrace()
            .args(["export", "--otlp"])
            .args(inputs)
            .args(["--endpoint", &url])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        output
    };
    let sent = exported(&inputs);
    assert_eq!(sent_count(&send()), sent.len());
    let stored = phoenix.wait_for(sent.len());
    assert_eq!(stored.len(), sent.len());
    assert_stored(&stored, &sent);

    // An evaluation sends its runs as they end, at the time they ran.
    let out = dir.path().join("eval");
    let before = looptrace::time::now_unix_ms() as u64 * 1_000_000;
    let output = clean_looptrace()
        .arg("eval")
        .arg(sample("suite.json"))
        .args(["-o", out.to_str().unwrap(), "--otlp-endpoint", &url])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let after = looptrace::time::now_unix_ms() as u64 * 1_000_000 + 1_000_000;
    let traces = crate::otlp_push::eval_traces(&out);
    let evaluated = exported(&[&traces]);
    let stored = phoenix.wait_for(sent.len() + evaluated.len());
    assert_eq!(stored.len(), sent.len() + evaluated.len());
    assert_stored(&stored, &evaluated);
    for span in evaluated.values() {
        assert!(
            before <= span.start && span.start <= after,
            "{} at {}",
            span.name,
            span.start
        );
    }

    // Sending everything again, then one new run: once the new run is there, Phoenix has
    // handled the repeats before it, and holds no second copy of any span.
    send();
    let output = clean_looptrace()
        .args(["export", "--otlp"])
        .arg(&traces)
        .args(["--endpoint", &url])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let marker = dir.path().join("marker.jsonl");
    std::fs::copy(sample("finished.summary.jsonl"), &marker).unwrap();
    let marked = exported(&[&marker]);
    let output = clean_looptrace()
        .args(["export", "--otlp"])
        .arg(&marker)
        .args(["--endpoint", &url])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let total = sent.len() + evaluated.len() + marked.len();
    let stored = phoenix.wait_for(total);
    assert_stored(&stored, &marked);
    assert_eq!(stored.len(), total, "no duplicates");
}
