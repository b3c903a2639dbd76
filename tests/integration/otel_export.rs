//! `looptrace export --otlp`: the span tree of every exit reason, ids, the timeline, content
//! safety, evaluation verdicts, bad input, reading the export back with `report`, and parsing it
//! with the OpenTelemetry protobuf definitions (`opentelemetry-proto`, in the venv `.ci/run`
//! makes).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{fixture, run, sample, stderr, stdout};

/// One span as the tests read it.
#[derive(Debug, Clone)]
struct Span {
    trace_id: String,
    span_id: String,
    parent: Option<String>,
    name: String,
    kind: u64,
    start: u64,
    end: u64,
    error: bool,
    attributes: HashMap<String, Value>,
    events: Vec<(String, HashMap<String, Value>)>,
}

impl Span {
    fn str(&self, key: &str) -> Option<&str> {
        self.attributes.get(key)?.get("stringValue")?.as_str()
    }

    fn int(&self, key: &str) -> Option<i64> {
        self.attributes
            .get(key)?
            .get("intValue")?
            .as_str()?
            .parse()
            .ok()
    }
}

fn attributes(list: Option<&Value>) -> HashMap<String, Value> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| (a["key"].as_str().unwrap().to_owned(), a["value"].clone()))
        .collect()
}

fn nanos(value: &Value) -> u64 {
    value.as_str().expect("times are strings").parse().unwrap()
}

/// Every line's spans, root first.
fn parse(output: &str) -> Vec<Vec<Span>> {
    output
        .lines()
        .map(|line| {
            let doc: Value = serde_json::from_str(line).expect("each line is JSON");
            let mut spans = Vec::new();
            for rs in doc["resourceSpans"].as_array().unwrap() {
                for ss in rs["scopeSpans"].as_array().unwrap() {
                    for s in ss["spans"].as_array().unwrap() {
                        spans.push(Span {
                            trace_id: s["traceId"].as_str().unwrap().to_owned(),
                            span_id: s["spanId"].as_str().unwrap().to_owned(),
                            parent: s
                                .get("parentSpanId")
                                .map(|p| p.as_str().unwrap().to_owned()),
                            name: s["name"].as_str().unwrap().to_owned(),
                            kind: s["kind"].as_u64().unwrap(),
                            start: nanos(&s["startTimeUnixNano"]),
                            end: nanos(&s["endTimeUnixNano"]),
                            error: s.pointer("/status/code").and_then(Value::as_u64) == Some(2),
                            attributes: attributes(s.get("attributes")),
                            events: s
                                .get("events")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                                .map(|e| {
                                    (
                                        e["name"].as_str().unwrap().to_owned(),
                                        attributes(e.get("attributes")),
                                    )
                                })
                                .collect(),
                        });
                    }
                }
            }
            spans
        })
        .collect()
}

fn export(args: &[&str]) -> String {
    let mut all = vec!["export", "--otlp"];
    all.extend_from_slice(args);
    let output = run(&all);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    stdout(&output)
}

/// `export --otlp SOURCE -o OUT`.
fn export_to(source: &Path, out: &Path) -> std::process::Output {
    run(&[
        "export",
        "--otlp",
        source.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
}

fn export_one(path: &Path) -> Vec<Span> {
    let mut runs = parse(&export(&[path.to_str().unwrap()]));
    assert_eq!(runs.len(), 1, "one run, one line");
    runs.remove(0)
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn each_exit_reason_has_its_span_tree() {
    // (trace, span names, root error.type, the span that carries the error)
    let finished = export_one(&sample("finished.summary.jsonl"));
    assert_eq!(
        names(&finished),
        [
            "invoke_agent looptrace",
            "chat",
            "execute_tool calculator",
            "chat"
        ]
    );
    assert!(!finished[0].error);
    assert_eq!(finished[0].str("error.type"), None);
    assert_eq!(finished[0].str("looptrace.exit_reason"), Some("finished"));

    let exhausted = export_one(&sample("max_steps_exceeded.summary.jsonl"));
    assert_eq!(
        names(&exhausted),
        [
            "invoke_agent looptrace",
            "chat",
            "execute_tool calculator",
            "chat",
            "execute_tool search",
            "chat",
            "execute_tool calculator"
        ]
    );
    let root = &exhausted[0];
    assert!(root.error);
    assert_eq!(root.str("error.type"), Some("max_steps_exceeded"));
    assert_eq!(root.str("looptrace.error_kind"), Some("budget_exhausted"));
    assert_eq!(root.str("looptrace.budget"), Some("steps"));
    assert_eq!(root.int("looptrace.steps_used"), Some(3));
    // Tool errors are errors on their own span, with their kind.
    assert!(exhausted[4].error);
    assert_eq!(exhausted[4].str("error.type"), Some("unknown_tool"));
    assert_eq!(exhausted[6].str("error.type"), Some("division_by_zero"));
    assert!(!exhausted[2].error);

    let invalid = export_one(&sample("invalid_model_output.summary.jsonl"));
    assert_eq!(names(&invalid), ["invoke_agent looptrace", "chat", "chat"]);
    assert_eq!(invalid[0].str("error.type"), Some("invalid_model_output"));
    // Invalid output is an error on the chat span of its turn.
    assert!(invalid[1].error && invalid[2].error);
    assert_eq!(invalid[1].str("error.type"), Some("invalid_json"));
    assert_eq!(invalid[2].str("error.type"), Some("missing_field"));

    let internal = export_one(&sample("internal_error.summary.jsonl"));
    assert_eq!(internal[0].str("error.type"), Some("internal_error"));
    assert!(internal[0].error);

    let incomplete = export_one(&sample("incomplete.jsonl"));
    assert_eq!(incomplete[0].str("error.type"), Some("incomplete"));
    assert_eq!(
        incomplete[0].str("looptrace.exit_reason"),
        Some("incomplete")
    );
    assert!(incomplete[0].error);

    for spans in [&finished, &exhausted, &invalid, &internal, &incomplete] {
        let root = &spans[0];
        assert_eq!(root.parent, None);
        assert_eq!(root.kind, 1, "invoke_agent is INTERNAL");
        assert_eq!(root.str("gen_ai.operation.name"), Some("invoke_agent"));
        for span in &spans[1..] {
            assert_eq!(span.parent.as_deref(), Some(root.span_id.as_str()));
            assert_eq!(span.trace_id, root.trace_id);
            let (kind, operation) = if span.name.starts_with("chat") {
                (3, "chat")
            } else {
                (1, "execute_tool")
            };
            assert_eq!(
                (span.kind, span.str("gen_ai.operation.name")),
                (kind, Some(operation))
            );
        }
    }
}

#[test]
fn gates_retries_and_multi_call_turns() {
    let gated = export_one(&sample("finish_gate.full.jsonl"));
    assert_eq!(
        names(&gated),
        [
            "invoke_agent looptrace",
            "chat",
            "execute_tool calculator",
            "chat",
            "finish_gate",
            "chat",
            "finish_gate"
        ]
    );
    let accepted: Vec<Option<bool>> = [4, 6]
        .iter()
        .map(|&i| gated[i].attributes["looptrace.finish_gate.accepted"]["boolValue"].as_bool())
        .collect();
    assert_eq!(accepted, [Some(false), Some(true)]);

    let retried = export_one(&fixture("report/model_retry.jsonl"));
    assert_eq!(retried[1].events.len(), 1);
    let (name, retry) = &retried[1].events[0];
    assert_eq!(name, "looptrace.model_retry");
    assert_eq!(retry["error.type"]["stringValue"], "rate_limited");
    assert_eq!(retry["http.response.status_code"]["intValue"], "429");

    // Two calls in one turn: one chat span, a tool span per call, in the order the tools ran.
    let multi = export_one(&fixture("otel/multi_call.jsonl"));
    assert_eq!(
        names(&multi),
        [
            "invoke_agent calc-agent",
            "chat gpt-4o",
            "execute_tool calculator",
            "execute_tool calculator",
            "chat gpt-4o"
        ]
    );
    let chat = &multi[1];
    assert_eq!(chat.str("gen_ai.provider.name"), Some("openai"));
    assert_eq!(chat.str("gen_ai.request.model"), Some("gpt-4o"));
    assert_eq!(chat.int("gen_ai.usage.input_tokens"), Some(120));
    assert_eq!(chat.int("gen_ai.usage.output_tokens"), Some(30));
    assert_eq!(chat.events.len(), 1, "the retry");
    assert_eq!(multi[2].str("gen_ai.tool.call.id"), Some("call-b"));
    assert_eq!(multi[2].str("error.type"), Some("division_by_zero"));
    assert_eq!(multi[3].str("gen_ai.tool.call.id"), Some("call-a"));
    assert!(!multi[3].error);
    assert_eq!(multi[0].int("gen_ai.usage.input_tokens"), Some(320));
}

/// 2026-12-01T10:00:00Z in nanoseconds.
const TEN_O_CLOCK: u64 = 1_796_119_200_000_000_000;
const MS: u64 = 1_000_000;

#[test]
fn recorded_times_are_used() {
    let multi = export_one(&fixture("otel/multi_call.jsonl"));
    assert_eq!(multi[0].start, TEN_O_CLOCK);
    assert_eq!(multi[0].end, TEN_O_CLOCK + 2_100 * MS);
    // The first turn ends when its actions were recorded, lasting its retry wait and its call.
    assert_eq!(multi[1].end, TEN_O_CLOCK + 1_000 * MS);
    assert_eq!(multi[1].start, TEN_O_CLOCK + 300 * MS);
    // Tool calls end at their observations, lasting their recorded durations.
    assert_eq!(
        (multi[2].start, multi[2].end),
        (TEN_O_CLOCK + 1_008 * MS, TEN_O_CLOCK + 1_010 * MS)
    );
    assert_eq!(
        (multi[3].start, multi[3].end),
        (TEN_O_CLOCK + 1_019 * MS, TEN_O_CLOCK + 1_020 * MS)
    );
}

/// Children are monotonic, never overlap and stay inside their root.
fn assert_well_placed(spans: &[Span]) {
    let root = &spans[0];
    assert!(root.start <= root.end);
    let mut previous_end = root.start;
    for span in &spans[1..] {
        assert!(span.start <= span.end, "{span:?}");
        assert!(span.start > previous_end, "overlap or disorder at {span:?}");
        assert!(span.end < root.end, "outside the root: {span:?}");
        previous_end = span.end;
    }
}

#[test]
fn timelines_nest_and_never_overlap() {
    let output = export(&[
        sample("").to_str().unwrap(),
        fixture("otel").to_str().unwrap(),
        fixture("report/model_retry.jsonl").to_str().unwrap(),
    ]);
    let runs = parse(&output);
    assert!(runs.len() >= 15);
    for spans in &runs {
        assert_well_placed(spans);
    }
    // Without recorded times the synthetic timeline starts at 2024-01-01T00:00:00Z.
    let finished = export_one(&sample("finished.summary.jsonl"));
    assert_eq!(finished[0].start, 1_704_067_200_000_000_000);
}

#[test]
fn ids_are_deterministic_hex_and_unique() {
    let dir = tempfile::tempdir().unwrap();
    // The same file name in two folders, and a file that reuses run ids.
    for folder in ["a", "b"] {
        std::fs::create_dir(dir.path().join(folder)).unwrap();
        std::fs::copy(
            sample("multi_run.jsonl"),
            dir.path().join(folder).join("multi_run.jsonl"),
        )
        .unwrap();
    }
    let inputs = [
        dir.path().to_str().unwrap().to_owned(),
        fixture("report/reused_ids.jsonl")
            .to_str()
            .unwrap()
            .to_owned(),
    ];
    let args: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let first = export(&args);
    assert_eq!(first, export(&args), "same input, same output");
    let runs = parse(&first);
    let mut trace_ids = HashSet::new();
    for spans in &runs {
        assert!(
            trace_ids.insert(spans[0].trace_id.clone()),
            "a shared trace id"
        );
        let mut span_ids = HashSet::new();
        for span in spans {
            assert_eq!(span.trace_id, spans[0].trace_id);
            assert!(span_ids.insert(span.span_id.clone()));
            let hex = |s: &str, n: usize| {
                s.len() == n
                    && s.bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            };
            assert!(hex(&span.trace_id, 32), "{}", span.trace_id);
            assert!(hex(&span.span_id, 16), "{}", span.span_id);
        }
    }
    // One line per run `report` counts: a reused run id is a run of its own.
    let rows = exit_reasons(&args);
    let counted: u64 = rows["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["runs"].as_u64().unwrap())
        .sum();
    assert_eq!(runs.len() as u64, counted);
}

/// Every string in a full-capture trace's content fields.
fn content_strings(trace: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for line in std::fs::read_to_string(trace).unwrap().lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        for key in ["task", "answer", "content", "raw_output"] {
            if let Some(text) = event[key].as_str().filter(|t| t.len() >= 2) {
                found.push(text.to_owned());
            }
        }
        if let Some(arguments) = event["arguments"].as_object() {
            found.push(serde_json::to_string(arguments).unwrap());
        }
    }
    found
}

#[test]
fn content_only_with_content_and_full_capture() {
    let traces = [
        sample("finished.full.jsonl"),
        sample("finish_gate.full.jsonl"),
        sample("max_steps_exceeded.full.jsonl"),
        fixture("otel/multi_call.jsonl"),
    ];
    let content_keys = [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "looptrace.finish_gate.output",
    ];
    for trace in &traces {
        let strings = content_strings(trace);
        assert!(!strings.is_empty());
        let default = export(&[trace.to_str().unwrap()]);
        for text in &strings {
            // Short texts ("84") also occur inside ids and times: they are looked for as whole
            // JSON strings, longer ones anywhere.
            let quoted = serde_json::to_string(text).unwrap();
            let inner = &quoted[1..quoted.len() - 1];
            assert!(!default.contains(&quoted), "{text:?} leaked from {trace:?}");
            assert!(
                text.len() < 8 || !default.contains(inner),
                "{text:?} leaked from {trace:?}"
            );
        }
        for key in content_keys {
            assert!(!default.contains(key), "{key} without --content");
        }
        let with = export(&[trace.to_str().unwrap(), "--content"]);
        assert!(with.contains("gen_ai.input.messages"));
    }
    let full = export_one(&fixture("otel/multi_call.jsonl"));
    assert_eq!(full[0].str("gen_ai.input.messages"), None);
    let with = parse(&export(&[
        fixture("otel/multi_call.jsonl").to_str().unwrap(),
        "--content",
    ]));
    let spans = &with[0];
    assert_eq!(
        spans[2].str("gen_ai.tool.call.arguments"),
        Some(r#"{"left":3,"operation":"divide","right":0}"#)
    );
    assert_eq!(
        spans[2].str("gen_ai.tool.call.result"),
        Some("division by zero")
    );
    let messages: Value =
        serde_json::from_str(spans[0].str("gen_ai.input.messages").unwrap()).unwrap();
    assert_eq!(messages[0]["parts"][0]["content"], "add 2+2 and 3+3 please");
    // A summary trace has no content to give, even when asked.
    let summary = sample("finished.summary.jsonl");
    let output = run(&["export", "--otlp", summary.to_str().unwrap(), "--content"]);
    assert_eq!(output.status.code(), Some(0));
    for key in content_keys {
        assert!(!stdout(&output).contains(key));
    }
    assert!(stderr(&output).contains("1 run(s) exported without content"));
}

#[test]
fn results_become_evaluation_events() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eval");
    let suite = sample("suite.json");
    let eval = run(&[
        "eval",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(eval.status.code().is_some(), "{}", stderr(&eval));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let mut expected: HashMap<String, String> = HashMap::new();
    for task in results["tasks"].as_array().unwrap() {
        let verdict = task["expectation"].as_str().unwrap();
        if verdict != "none" {
            expected.insert(
                task["run_id"].as_str().unwrap().to_owned(),
                verdict.to_owned(),
            );
        }
    }
    assert!(!expected.is_empty());
    let runs = parse(&export(&[
        out.to_str().unwrap(),
        "--results",
        out.join("results.json").to_str().unwrap(),
    ]));
    let mut seen = HashMap::new();
    for spans in &runs {
        let root = &spans[0];
        let events: Vec<_> = root
            .events
            .iter()
            .filter(|(name, _)| name == "gen_ai.evaluation.result")
            .collect();
        if let Some((_, attributes)) = events.first() {
            assert_eq!(events.len(), 1);
            assert_eq!(
                attributes["gen_ai.evaluation.name"]["stringValue"],
                "looptrace.expectations"
            );
            let label = attributes["gen_ai.evaluation.score.label"]["stringValue"]
                .as_str()
                .unwrap();
            seen.insert(
                root.str("looptrace.run_id").unwrap().to_owned(),
                label.to_owned(),
            );
        }
    }
    assert_eq!(seen, expected);

    // Results of another evaluation match no run: said, not silently ignored.
    let results_arg = out.join("results.json");
    for (traces, warned) in [(out.clone(), false), (sample("finished.full.jsonl"), true)] {
        let output = run(&[
            "export",
            "--otlp",
            traces.to_str().unwrap(),
            "--results",
            results_arg.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(
            stderr(&output).contains("no exported run is a run of"),
            warned,
            "{}",
            stderr(&output)
        );
    }
}

/// The exit-reason rows of `report --format json` on `paths`.
fn exit_reasons(paths: &[&str]) -> Value {
    let mut args = vec!["report", "--format", "json"];
    args.extend_from_slice(paths);
    let output = run(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    serde_json::from_slice::<Value>(&output.stdout).unwrap()["exit_reasons"].clone()
}

#[test]
fn report_reads_the_export_back_with_the_same_exit_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let sources: Vec<PathBuf> = vec![
        sample(""),
        fixture("otel"),
        fixture("report/reused_ids.jsonl"),
        fixture("report/model_retry.jsonl"),
        fixture("import"),
    ];
    for (i, source) in sources.iter().enumerate() {
        let exported = dir.path().join(format!("export-{i}.otlp.jsonl"));
        let output = export_to(source, &exported);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let before = exit_reasons(&[source.to_str().unwrap()]);
        let after = exit_reasons(&[exported.to_str().unwrap()]);
        assert_eq!(before, after, "{source:?}");
    }
    // The export is detected by its `resourceSpans` and reported as its own source.
    let exported = dir.path().join("export-0.otlp.jsonl");
    let output = run(&["report", "--by", "source", exported.to_str().unwrap()]);
    assert!(stdout(&output).contains("otlp"), "{}", stdout(&output));
    // `show` and `import` read it too.
    let show = run(&["show", exported.to_str().unwrap()]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    assert!(stdout(&show).contains("max_steps_exceeded"));
    let import = run(&["import", "--from", "otlp", exported.to_str().unwrap()]);
    assert_eq!(import.status.code(), Some(0), "{}", stderr(&import));
}

#[test]
fn bad_input_is_exit_2_with_its_place_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    let good = std::fs::read_to_string(sample("finished.summary.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(2, "{\"run_id\": oops}");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("out.jsonl");
    let output = export_to(&bad, &out);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("bad.jsonl:3:"),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists(), "nothing half-written");

    // The output may not be an input: the rename would replace the trace being exported.
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, &good).unwrap();
    let output = export_to(dir.path(), &trace);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("never writes over its input"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read_to_string(&trace).unwrap(), good);

    let missing = run(&["export", "--otlp", "no/such/file.jsonl"]);
    assert_eq!(missing.status.code(), Some(2));

    let results = dir.path().join("results.json");
    std::fs::write(&results, "{}").unwrap();
    let output = run(&[
        "export",
        "--otlp",
        sample("finished.summary.jsonl").to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("results.json"),
        "{}",
        stderr(&output)
    );

    // A malformed OTLP file read back names its line and JSON path.
    let otlp = dir.path().join("bad.otlp.jsonl");
    std::fs::write(
        &otlp,
        "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[]}]}]}\n{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"traceId\":\"XYZ\"}]}]}]}\n",
    )
    .unwrap();
    let output = run(&["report", otlp.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("line 2 $.resourceSpans[0].scopeSpans[0].spans[0].traceId"),
        "{}",
        stderr(&output)
    );
}

/// The venv Python with `opentelemetry-proto`, from `LOOPTRACE_TEST_PYTHON` (set by `.ci/run`).
/// Unset: one SKIP line locally, a failure in CI.
pub fn test_python() -> Option<PathBuf> {
    match std::env::var_os("LOOPTRACE_TEST_PYTHON") {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "LOOPTRACE_TEST_PYTHON must name the venv Python with opentelemetry-proto in CI"
            );
            println!("SKIP OTLP protobuf check: LOOPTRACE_TEST_PYTHON is not set");
            None
        }
    }
}

#[test]
fn the_export_parses_with_the_opentelemetry_protobuf_definitions() {
    let Some(python) = test_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let exported = dir.path().join("all.otlp.jsonl");
    let output = run(&[
        "export",
        "--otlp",
        sample("").to_str().unwrap(),
        fixture("otel").to_str().unwrap(),
        fixture("report/model_retry.jsonl").to_str().unwrap(),
        "--content",
        "-o",
        exported.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otel/check_otlp.py");
    let checked = std::process::Command::new(&python)
        .arg(&script)
        .arg(&exported)
        .output()
        .expect("failed to start the test Python");
    assert!(
        checked.status.success(),
        "the protobuf parse failed: {}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let ours = parse(&std::fs::read_to_string(&exported).unwrap());
    let decoded: Vec<Value> = String::from_utf8(checked.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(decoded.len(), ours.len());
    for (spans, proto) in ours.iter().zip(&decoded) {
        let proto = proto.as_array().unwrap();
        assert_eq!(proto.len(), spans.len());
        for (span, decoded) in spans.iter().zip(proto) {
            assert_eq!(decoded["trace_id"], span.trace_id.as_str());
            assert_eq!(decoded["span_id"], span.span_id.as_str());
            assert_eq!(decoded["parent"], span.parent.as_deref().unwrap_or(""));
            assert_eq!(decoded["name"], span.name.as_str());
            assert_eq!(decoded["kind"], span.kind);
            assert_eq!(decoded["start"], span.start);
            assert_eq!(decoded["end"], span.end);
            assert_eq!(decoded["status"], if span.error { 2 } else { 0 });
            assert_eq!(
                decoded["schema_url"],
                "https://opentelemetry.io/schemas/1.38.0"
            );
            // 64-bit integers written as strings decode as numbers.
            if let Some(steps) = span.int("looptrace.steps_used") {
                assert_eq!(decoded["attributes"]["looptrace.steps_used"], steps);
            }
        }
    }
}

#[test]
fn real_trajectories_read_back_with_the_same_exit_reasons() {
    let Some(sources) = crate::support::real_trace_sources("real-traces export round trip") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for source in sources {
        let exported = dir.path().join("export.otlp.jsonl");
        let output = export_to(&source, &exported);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(
            exit_reasons(&[source.to_str().unwrap()]),
            exit_reasons(&[exported.to_str().unwrap()]),
            "{source:?}"
        );
    }
}
