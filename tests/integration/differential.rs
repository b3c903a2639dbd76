//! The two readers of the trace format, held together: the trace reader (`show`, replay, eval)
//! and `report`'s scanner must give every input the same verdict (well-formed or malformed) and
//! the same outcome to every run. Inputs come from a JSON grammar biased towards the trace
//! format's fields, and from mutations of the real lines under `sample_traces/`.

use std::path::Path;

use looptrace::report::analyze_slice;
use looptrace::run::RunOutcome;
use looptrace::trace::{ReadOptions, TraceContents, TraceReader};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

/// Runs per ending (`finished` ... `incomplete`), or the error.
type Outcomes = Result<[u64; 5], ()>;

fn by_the_trace_reader(bytes: &[u8]) -> Outcomes {
    let contents = TraceContents::from_reader(TraceReader::new(bytes, "t", ReadOptions::default()))
        .map_err(drop)?;
    let mut counts = [0; 5];
    for run in &contents.runs {
        counts[run.outcome().index()] += 1;
    }
    Ok(counts)
}

fn by_the_report(bytes: &[u8]) -> Outcomes {
    let report = analyze_slice(bytes, "t", false).map_err(drop)?;
    Ok(RunOutcome::ALL.map(|ending| report.exit_reasons.get(ending)))
}

/// Asserts the two readers agree on `bytes`.
pub fn assert_readers_agree(bytes: &[u8]) {
    assert_eq!(
        by_the_trace_reader(bytes),
        by_the_report(bytes),
        "trace reader (left) and report (right) disagree on {:?}",
        String::from_utf8_lossy(bytes)
    );
}

#[test]
fn the_listed_disagreements_are_gone() {
    let start = r#"{"run_id":"r","step":0,"event_type":"run_started"}"#;
    let end = r#"{"run_id":"r","step":1,"event_type":"run_finished","exit_reason":"finished"}"#;
    let deep = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    let cases = [
        format!(
            "{start}\n{}\n",
            end.replace("run_finished", "run_finished\\u0000")
        ),
        format!("{start}\n{}\n", end.replace("\"step\"", "\"step\\u0000\"")),
        format!("{start}\n{}\n", end.replace("}", r#","x":"\udc00"}"#)),
        format!("{start}\n{}\n", end.replace("}", r#","x":"\ud800"}"#)),
        format!(
            "{}\n{end}\n",
            start.replace("}", r#","replay_of":["a","b"]}"#)
        ),
        format!(
            "{}\n{end}\n",
            start.replace("}", r#","capture":{"full":null}}"#)
        ),
        format!(
            "{}\n{end}\n",
            start.replace("}", r#","hash":{"sha256":null}}"#)
        ),
        format!(
            "{start}\n{}\n",
            end.replace(r#""finished""#, r#"{"finished":null}"#)
        ),
        format!("\u{a0}{start}\n{end}\n"),
        format!("{start}\u{85}\n{end}\n"),
        format!("{start}\n\u{b}{end}\n"),
        format!("{start}\n{end}\u{c}\n"),
        format!("{start}\n\u{a0}\n{end}\n"),
        format!(
            "{start}\n{}\n",
            end.replace("}", &format!(",\"x\":{}}}", deep(127)))
        ),
        format!(
            "{start}\n{}\n",
            end.replace("}", &format!(",\"x\":{}}}", deep(128)))
        ),
        format!(
            "{start}\n{}\n",
            end.replace("}", &format!(",\"arguments\":{{\"a\":{}}}}}", deep(125)))
        ),
        format!(
            "{start}\n{}\n",
            end.replace("}", &format!(",\"arguments\":{{\"a\":{}}}}}", deep(126)))
        ),
        format!(
            "{start}\n{}\n",
            end.replace("}", &format!(",\"arguments\":{{\"a\":{}}}}}", deep(127)))
        ),
        format!(
            "{start}\n{}\n",
            end.replace("}", r#","arguments":{"a":1e400}}"#)
        ),
        format!(
            "{start}\n{}\n",
            end.replace(
                "}",
                &format!(",\"arguments\":{{\"a\":{}}}}}", "9".repeat(400))
            )
        ),
        format!(
            "{start}\n{}\n",
            end.replace("}", &format!(",\"x\":{}}}", "9".repeat(400)))
        ),
        r#"{"run_id":"r","step":1,"event_type":"observation"}"#.to_owned()
            + "\n"
            + start
            + "\n"
            + end
            + "\n",
    ];
    // Fields added to the format after the report's scanner was written: each is type-checked by
    // both readers (a fuzzing run found `finish_reason` as an array read by one and not the other).
    let typed = [
        r#""finish_reason":["stop"]"#,
        r#""stream_chunks":["12"]"#,
        r#""stream_chunks":[12,-1]"#,
        r#""raw_response":{}"#,
        r#""task_id":1"#,
        r#""tool_errors_recorded":"yes""#,
        r#""http_status":70000"#,
        r#""exit_status":-1"#,
        r#""exit_status":4294967296"#,
        r#""source":{"format":"codex"}"#,
        r#""source":{"format":"codex","file":"a.jsonl"}"#,
        r#""model":{"provider":"p"}"#,
        r#""tools":[{"name":"calc","spec_hash":"sha256:00"}]"#,
        r#""tools":[{"spec_hash":"sha256:00"}]"#,
    ];
    let listed = cases.into_iter().chain(
        typed
            .iter()
            .map(|field| format!("{}\n{end}\n", start.replace("}", &format!(",{field}}}")))),
    );
    for case in listed {
        assert_readers_agree(case.as_bytes());
    }
}

/// Every line of the sample traces.
fn sample_lines() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
    let mut lines = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        lines.extend(text.lines().map(str::to_owned));
    }
    lines
}

/// Pieces of JSON and of the trace format that mutations insert.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\",
    "\\u0000",
    "\\ud800",
    "\\udc00",
    "\\ud83d\\ude00",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1e400",
    "1.5",
    "99999999999999999999999",
    "\u{a0}",
    "\u{85}",
    "\u{b}",
    "\u{c}",
    " ",
    "\t",
    "\r",
    "\u{0}",
    "\u{ff}",
    "é",
    "\"run_id\":\"r\"",
    "\"step\":1",
    "\"event_type\":\"run_started\"",
    "\"event_type\":\"run_finished\"",
    "\"exit_reason\":\"finished\"",
    "\"capture\":{\"full\":null}",
    "\"replay_of\":[\"a\",\"b\"]",
    "\"arguments\":{\"a\":[1]}",
    "\"x\":",
    "\"is_error\":",
    "\"steps_used\":",
    "\"step\":",
];

/// A JSON value, biased towards what the readers treat differently.
fn json_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|n| format!("{n:e}")),
        "[0-9]{1,400}",
        prop::sample::select(vec![
            "\"a\"",
            "\"\\u0000\"",
            "\"\\ud800\"",
            "\"\\ud83d\\ude00\"",
            "\"é\"",
            "1e400",
            "-0",
            "1E+2"
        ])
        .prop_map(str::to_owned),
        "[a-z_\u{0}-\u{7f}\u{a0}]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
    ];
    leaf.prop_recursive(6, 40, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|items| format!("[{}]", items.join(","))),
            prop::collection::vec((field_name(), inner), 0..4).prop_map(|fields| {
                let fields: Vec<String> = fields
                    .into_iter()
                    .map(|(k, v)| format!("{k}:{v}"))
                    .collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

fn field_name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "run_id",
        "step",
        "event_type",
        "action_type",
        "tool_name",
        "is_error",
        "error_kind",
        "exit_reason",
        "steps_used",
        "schema",
        "capture",
        "hash",
        "max_steps",
        "input_summary",
        "task",
        "replay_of",
        "argument_keys",
        "arguments",
        "output",
        "answer",
        "content",
        "raw_output",
        "error",
        "duration_ms",
        "source",
        "accepted",
        "finish_gate_hash",
        "budget",
        "usage",
        "cost_usd",
        "ts",
        "task_id",
        "agent",
        "api",
        "workdir_hash",
        "call_id",
        "request_hash",
        "request_body",
        "raw_response",
        "finish_reason",
        "native_ending",
        "lossy",
        "tool_errors_recorded",
        "autosubmitted",
        "ending_inferred",
        "attempt",
        "http_status",
        "wait_ms",
        "exit_status",
        "model",
        "tools",
        "scores",
        "stream_chunks",
        "scorer",
        "x",
        "run_id\\u0000",
        "step ",
    ])
    .prop_map(|name| format!("\"{name}\""))
}

/// A value fit for a field, often the right type.
fn field_value(name: &str) -> BoxedStrategy<String> {
    let typical: Vec<&'static str> = match name {
        "\"run_id\"" => vec!["\"r\"", "\"s\""],
        "\"step\"" | "\"steps_used\"" | "\"max_steps\"" => vec!["0", "1", "2", "4294967296"],
        "\"event_type\"" => vec![
            "\"run_started\"",
            "\"model_action\"",
            "\"observation\"",
            "\"model_feedback\"",
            "\"run_finished\"",
            "\"internal_error\"",
            "\"scorer_call\"",
            "\"thought\"",
            "\"run_finished\\u0000\"",
        ],
        "\"exit_reason\"" => vec![
            "\"finished\"",
            "\"max_steps_exceeded\"",
            "\"internal_error\"",
            "{\"finished\":null}",
        ],
        "\"capture\"" => vec!["\"full\"", "\"summary\"", "{\"full\":null}"],
        "\"hash\"" => vec!["\"sha256\"", "\"hmac-sha256\""],
        "\"replay_of\"" => vec!["{\"source\":\"a\",\"run_id\":\"b\"}", "[\"a\",\"b\"]"],
        "\"is_error\"" => vec!["true", "false"],
        "\"stream_chunks\"" => vec!["[12,3]", "[]", "[\"12\"]", "[-1]"],
        "\"scorer\"" => vec!["\"judge\"", "\"\"", "3"],
        "\"scores\"" => vec![
            "[{\"name\":\"a\",\"kind\":\"k\",\"passed\":true,\"value\":1,\"explanation\":null}]",
            "[{\"name\":\"a\"}]",
        ],
        _ => vec!["\"x\""],
    };
    prop_oneof![3 => prop::sample::select(typical).prop_map(str::to_owned), 1 => json_value()]
        .boxed()
}

fn whitespace() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "", "", "", " ", "\t", "\r", "\u{a0}", "\u{85}", "\u{b}", "\u{c}",
    ])
}

/// One line from the grammar.
fn grammar_line() -> impl Strategy<Value = String> {
    let field = field_name().prop_flat_map(|name| {
        let value = field_value(&name);
        (Just(name), value)
    });
    (
        whitespace(),
        prop::collection::vec(field, 0..7),
        whitespace(),
    )
        .prop_map(|(before, fields, after)| {
            let fields: Vec<String> = fields
                .into_iter()
                .map(|(k, v)| format!("{k}:{v}"))
                .collect();
            format!("{before}{{{}}}{after}", fields.join(","))
        })
}

/// A real line with a few edits.
fn mutated_line(lines: Vec<String>) -> impl Strategy<Value = String> {
    let edit = (
        0usize..4,
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        prop::sample::select(TOKENS),
    );
    (
        prop::sample::select(lines),
        prop::collection::vec(edit, 0..3),
    )
        .prop_map(|(line, edits)| {
            let mut bytes = line.into_bytes();
            for (kind, at, len, token) in edits {
                let at = at.index(bytes.len() + 1);
                match kind {
                    0 => bytes.splice(at..at, token.bytes()).for_each(drop),
                    1 => bytes.truncate(at),
                    2 => {
                        let end = (at + len.index(8)).min(bytes.len());
                        bytes.drain(at..end);
                    }
                    _ => {
                        let end = (at + len.index(8)).min(bytes.len());
                        bytes.splice(at..end, token.bytes()).for_each(drop);
                    }
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
}

fn trace(line: impl Strategy<Value = String>) -> impl Strategy<Value = (Vec<String>, bool)> {
    (prop::collection::vec(line, 1..6), any::<bool>())
}

fn joined((lines, final_newline): &(Vec<String>, bool)) -> String {
    let mut text = lines.join("\n");
    if *final_newline {
        text.push('\n');
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Traces from the JSON grammar.
    #[test]
    fn grammar_traces_get_one_verdict(trace in trace(grammar_line())) {
        assert_readers_agree(joined(&trace).as_bytes());
    }

    /// Real lines, mutated, in any order.
    #[test]
    fn mutated_sample_traces_get_one_verdict(trace in trace(prop_oneof![mutated_line(sample_lines()), grammar_line()])) {
        assert_readers_agree(joined(&trace).as_bytes());
    }
}

/// The raw text of a long JSON string value (quotes included, not always well-formed): runs of
/// plain bytes of every length around the scanner's 16-byte blocks, escapes, non-ASCII
/// characters, and text that looks like the fields the report reads.
fn long_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => (0usize..40).prop_map(|n| "a".repeat(n)),
        1 => prop::sample::select(vec![
            "\\\"", "\\\\", "\\n", "\\u00e9", "\\ud83d\\ude00", "\\/", "é", "\u{1F600}", "\u{7f}",
            "\"", "\\", "\u{1}", "\t", "\\x", "\\ud800",
            "\\\"exit_reason\\\":\\\"finished\\\"", "\\\"run_id\\\":\\\"s\\\"", "}", "{", ",",
        ])
        .prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|pieces| format!("\"{}\"", pieces.concat()))
}

/// A `run_finished` line whose fields come in any order around long strings, with field names
/// written plainly or with escapes, and the report's fields also inside a nested object.
fn line_with_long_strings() -> impl Strategy<Value = String> {
    let name = |plain: &'static str, escaped: &'static str| {
        prop::sample::select(vec![plain, plain, escaped]).prop_map(|name| format!("\"{name}\""))
    };
    (
        name("run_id", "run\\u005fid"),
        name("exit_reason", "exit_reaso\\u006e"),
        name("content", "cont\\u0065nt"),
        long_string(),
        long_string(),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(run_id, exit_reason, content, first, second, order)| {
            let mut fields = [
                format!("{run_id}:\"r\""),
                "\"step\":1".to_owned(),
                "\"event_type\":\"run_finished\"".to_owned(),
                format!("{exit_reason}:\"max_steps_exceeded\""),
                format!("{content}:{first}"),
                format!("\"x\":{{\"run_id\":\"s\",\"exit_reason\":\"finished\",\"y\":[{second}]}}"),
            ];
            let at = order.index(fields.len());
            fields.rotate_left(at);
            format!("{{{}}}", fields.join(","))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Long strings with escapes, keys inside strings and nested objects: the fast string skip
    /// and the key matching agree with the trace reader.
    #[test]
    fn long_strings_and_nested_keys_get_one_verdict(trace in trace(prop_oneof![line_with_long_strings(), grammar_line()])) {
        assert_readers_agree(joined(&trace).as_bytes());
    }
}
