//! `export --otlp --endpoint` and `eval --otlp-endpoint` against a local receiver that records
//! every request and answers as each test scripts: the protobuf body, its headers, batching,
//! retries that honour `Retry-After`, gzip, refusals, redirects, and secrets kept out of output.
//! `phoenix.rs` sends the same runs to a real Arize Phoenix.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use prost::Message;
use serde_json::Value;

use crate::support::{looptrace, sample, stderr, stdout};

/// One request as the receiver read it.
#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body, gunzipped when it says it is compressed, as a request.
    pub fn decode(&self) -> ExportTraceServiceRequest {
        let body = if self.header("content-encoding") == Some("gzip") {
            let mut plain = Vec::new();
            flate2::read::GzDecoder::new(self.body.as_slice())
                .read_to_end(&mut plain)
                .unwrap();
            plain
        } else {
            self.body.clone()
        };
        ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP protobuf body")
    }
}

/// A receiver on 127.0.0.1 that answers its requests with `replies` in turn (the last one
/// again once they run out): `(status, extra header lines)`.
pub struct Receiver {
    pub url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Receiver {
    pub fn start(replies: Vec<(u16, &'static str)>) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { return };
                let Some(request) = read_request(&mut stream) else {
                    continue;
                };
                let (status, extra) = replies[n.min(replies.len() - 1)];
                // A 401 echoes the credentials it was sent, as careless servers do.
                let body = match status {
                    200 => String::new(),
                    401 => format!(
                        "bad credentials: {}",
                        request.header("authorization").unwrap_or_default()
                    ),
                    _ => "scripted answer".to_owned(),
                };
                seen.lock().unwrap().push(request);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} Scripted\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
                    body.len()
                );
            }
        });
        Receiver { url, requests }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        path,
        headers,
        body,
    })
}

/// `looptrace` with no OpenTelemetry variables from the environment the tests run in.
pub fn clean_looptrace() -> Command {
    let mut command = looptrace();
    for (name, _) in std::env::vars() {
        if name.starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    command
}

fn export_to(url: &str, paths: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = clean_looptrace();
    command
        .args(["export", "--otlp"])
        .args(paths)
        .args(["--endpoint", url]);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn string_attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(text) => Some(text.as_str()),
            _ => None,
        }
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// (trace id, span id, name) of every span of a request, in order.
pub fn span_ids(request: &ExportTraceServiceRequest) -> Vec<(String, String, String)> {
    request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .map(|s| (hex(&s.trace_id), hex(&s.span_id), s.name.clone()))
        .collect()
}

/// The folder holding the traces of the evaluation written to `out`.
pub fn eval_traces(out: &std::path::Path) -> std::path::PathBuf {
    let results: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let trace = results["tasks"][0]["trace"].as_str().unwrap();
    out.join(trace).parent().unwrap().to_path_buf()
}

/// Every span `export --otlp PATHS` writes as OTLP/JSON, in order.
pub fn json_spans<P: AsRef<std::ffi::OsStr>>(paths: &[P]) -> Vec<Value> {
    let output = clean_looptrace()
        .args(["export", "--otlp"])
        .args(paths)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    stdout(&output)
        .lines()
        .flat_map(|line| {
            let doc: Value = serde_json::from_str(line).unwrap();
            doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect()
}

/// The same as [`span_ids`], from the OTLP/JSON `export --otlp` writes.
fn json_span_ids(paths: &[&str]) -> Vec<(String, String, String)> {
    json_spans(paths)
        .iter()
        .map(|s| {
            (
                s["traceId"].as_str().unwrap().to_owned(),
                s["spanId"].as_str().unwrap().to_owned(),
                s["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn export_sends_one_protobuf_request_with_the_ids_of_the_file_export_and_keeps_headers_secret() {
    let receiver = Receiver::start(vec![(200, "")]);
    let samples = [
        sample("finished.summary.jsonl"),
        sample("max_steps_exceeded.summary.jsonl"),
    ];
    let paths: Vec<&str> = samples.iter().map(|p| p.to_str().unwrap()).collect();
    let output = export_to(
        &receiver.url,
        &paths,
        &[
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%20s3cr3t-token,x-team=evals",
            ),
            ("OTEL_SERVICE_NAME", "my-agent"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "both runs in one batch");
    let request = &requests[0];
    assert_eq!(request.path, "/v1/traces");
    assert_eq!(
        request.header("content-type"),
        Some("application/x-protobuf")
    );
    assert_eq!(
        request.header("content-length"),
        Some(request.body.len().to_string().as_str())
    );
    assert_eq!(request.header("content-encoding"), None);
    assert_eq!(request.header("authorization"), Some("Bearer s3cr3t-token"));
    assert_eq!(request.header("x-team"), Some("evals"));
    let decoded = request.decode();
    assert_eq!(decoded.resource_spans.len(), 2);
    for resource_spans in &decoded.resource_spans {
        let attributes = &resource_spans.resource.as_ref().unwrap().attributes;
        assert_eq!(
            string_attribute(attributes, "service.name"),
            Some("my-agent")
        );
        assert_eq!(
            string_attribute(attributes, "deployment.environment"),
            Some("ci")
        );
    }
    assert_eq!(span_ids(&decoded), json_span_ids(&paths));
    let said = stderr(&output);
    assert!(
        said.contains(&format!(
            "sent 2 runs (11 spans) to {} in 1 request",
            receiver.url
        )),
        "{said}"
    );
    assert!(!said.contains("s3cr3t"), "{said}");
}

#[test]
fn busy_answers_are_retried_after_their_retry_after_and_a_resend_is_identical() {
    let receiver = Receiver::start(vec![
        (503, "Retry-After: 0\r\n"),
        (429, "Retry-After: 0\r\n"),
        (200, ""),
    ]);
    let trace = sample("finished.summary.jsonl");
    let output = export_to(&receiver.url, &[trace.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("(2 attempts retried)"),
        "{}",
        stderr(&output)
    );
    let output = export_to(&receiver.url, &[trace.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let bodies: Vec<Vec<u8>> = receiver.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 4);
    assert!(
        bodies.iter().all(|body| *body == bodies[0]),
        "the same bytes each time"
    );
}

#[test]
fn gzip_is_sent_when_asked_for() {
    let receiver = Receiver::start(vec![(200, "")]);
    let trace = sample("finished.summary.jsonl");
    let output = export_to(
        &receiver.url,
        &[trace.to_str().unwrap()],
        &[("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let request = &receiver.requests()[0];
    assert_eq!(request.header("content-encoding"), Some("gzip"));
    assert_eq!(
        span_ids(&request.decode()),
        json_span_ids(&[trace.to_str().unwrap()])
    );
}

#[test]
fn a_refusal_is_not_retried_and_exits_1_naming_the_status() {
    let receiver = Receiver::start(vec![(415, "")]);
    let trace = sample("finished.summary.jsonl");
    let output = export_to(&receiver.url, &[trace.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(
        said.contains(&format!(
            "error: failed to send 1 run(s) to {}: HTTP 415 (the receiver does not take OTLP/HTTP protobuf here: is this its traces URL?): scripted answer",
            receiver.url
        )),
        "{said}"
    );
    assert!(said.contains("sent 0 runs (0 spans)"), "{said}");
    assert_eq!(receiver.requests().len(), 1);
}

#[test]
fn a_receiver_echoing_the_headers_has_them_redacted_from_the_message() {
    let receiver = Receiver::start(vec![(401, "")]);
    let trace = sample("finished.summary.jsonl");
    let output = export_to(
        &receiver.url,
        &[trace.to_str().unwrap()],
        &[(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "Authorization=Basic%20czNjcjN0LXBhc3M=",
        )],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(
        said.contains("HTTP 401: bad credentials: [redacted]"),
        "{said}"
    );
    assert!(!said.contains("czNjcjN0LXBhc3M"), "{said}");
}

#[test]
fn redirects_are_not_followed_so_headers_never_reach_another_host() {
    let elsewhere = Receiver::start(vec![(200, "")]);
    let location: &'static str =
        Box::leak(format!("Location: {}\r\n", elsewhere.url).into_boxed_str());
    let receiver = Receiver::start(vec![(307, location)]);
    let trace = sample("finished.summary.jsonl");
    let output = export_to(
        &receiver.url,
        &[trace.to_str().unwrap()],
        &[("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=s3cr3t")],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("HTTP 307 (redirects are not followed"));
    assert!(elsewhere.requests().is_empty());
}

#[test]
fn grpc_and_bad_settings_exit_2_before_anything_is_sent() {
    let receiver = Receiver::start(vec![(200, "")]);
    let trace = sample("finished.summary.jsonl");
    for (env, message) in [
        (
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            "error: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: looptrace sends OTLP/HTTP with protobuf",
        ),
        (
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"),
            "error: OTEL_EXPORTER_OTLP_COMPRESSION=zstd is not supported: use `gzip` or `none`",
        ),
        (
            ("OTEL_EXPORTER_OTLP_HEADERS", "Authorization"),
            "error: failed to read OTEL_EXPORTER_OTLP_HEADERS: entry 1 has no `=`",
        ),
    ] {
        let output = export_to(&receiver.url, &[trace.to_str().unwrap()], &[env]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).starts_with(message), "{}", stderr(&output));
    }
    let output = clean_looptrace()
        .args(["export", "--otlp", trace.to_str().unwrap(), "--push"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).starts_with("error: no OTLP endpoint"),
        "{}",
        stderr(&output)
    );
    let output = clean_looptrace()
        .args(["export", "--otlp", trace.to_str().unwrap(), "--push"])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            receiver.url.trim_end_matches("/v1/traces"),
        )
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "only the last command sent");
    assert_eq!(requests[0].path, "/v1/traces");
}

fn eval_to(url: &str, out: &std::path::Path) -> Output {
    clean_looptrace()
        .arg("eval")
        .arg(sample("suite.json"))
        .args(["-q", "-o", out.to_str().unwrap(), "--otlp-endpoint", url])
        .output()
        .unwrap()
}

#[test]
fn eval_sends_every_run_with_the_ids_a_later_export_of_its_traces_gives() {
    let receiver = Receiver::start(vec![(200, "")]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = eval_to(&receiver.url, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut sent: Vec<_> = receiver
        .requests()
        .iter()
        .flat_map(|r| span_ids(&r.decode()))
        .collect();
    let traces = eval_traces(&out);
    let mut exported = json_span_ids(&[traces.to_str().unwrap()]);
    sent.sort();
    exported.sort();
    assert_eq!(sent, exported);
    let results: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let roots = sent
        .iter()
        .filter(|(_, _, name)| name.starts_with("invoke_agent"))
        .count();
    assert_eq!(roots, results["tasks"].as_array().unwrap().len());
}

#[test]
fn a_failing_receiver_changes_nothing_eval_writes_or_its_exit_code() {
    let receiver = Receiver::start(vec![(400, "")]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = eval_to(&receiver.url, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(
        said.contains("warning: OTLP push: failed to send"),
        "{said}"
    );
    assert!(said.contains("HTTP 400"), "{said}");
    assert!(
        said.contains("not sent (the evaluation's outputs are complete"),
        "{said}"
    );
    assert!(out.join("results.json").is_file());
    // After the first refusal the receiver is left alone.
    assert_eq!(receiver.requests().len(), 1);
}

#[test]
fn the_documented_file_recipe_sends_what_the_push_sends() {
    let Some(python) = crate::otel_export::test_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("send_otlp.py");
    let recipe = crate::support::doc_blocks("otel.md", "python");
    assert_eq!(recipe.len(), 1, "one Python block in docs/otel.md");
    std::fs::write(&script, &recipe[0]).unwrap();
    let samples = [
        sample("finished.summary.jsonl"),
        sample("invalid_model_output.full.jsonl"),
    ];
    let paths: Vec<&str> = samples.iter().map(|p| p.to_str().unwrap()).collect();
    let file = dir.path().join("runs.otlp.jsonl");
    let output = clean_looptrace()
        .args(["export", "--otlp"])
        .args(&paths)
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let receiver = Receiver::start(vec![(200, "")]);
    let output = Command::new(python)
        .arg(&script)
        .arg(&file)
        .arg(&receiver.url)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2, "one request per line");
    assert!(
        requests
            .iter()
            .all(|r| r.header("content-type") == Some("application/x-protobuf"))
    );
    let sent: Vec<_> = requests
        .iter()
        .flat_map(|r| span_ids(&r.decode()))
        .collect();
    assert_eq!(sent, json_span_ids(&paths));
}
