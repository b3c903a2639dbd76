//! Properties over generated inputs: every action and every event survives the writer and the
//! reader unchanged, the parsers never panic on arbitrary bytes, a trace cut at any byte still
//! reads (the cut line at most a warning), and summaries are deterministic, count characters as
//! Python's `len` does and survive re-serialization byte for byte.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

use looptrace::agent::{RunEvent, RunObserver};
use looptrace::model::parse_json_action;
use looptrace::replay::{RecordedTurn, ReplayModel};
use looptrace::run::{Action, ExitReason, Finish, Task, ToolCall};
use looptrace::trace::{
    Capture, Event, EventKind, HashAlgorithm, InternalError, ModelAction, ModelFeedback,
    Observation, ReadOptions, RecorderOptions, ReplayOf, RunFinished, RunStarted, Summarizer,
    TraceReader, TraceRecorder, TraceWriter, parse_line, read_trace,
};

/// Few enough cases to keep the suite quick on two cores, enough to explore; no regression
/// files are written into the source tree.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Any text, weighted towards what breaks naive code: quotes, escapes, control characters,
/// non-ASCII and characters outside the Basic Multilingual Plane.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z0-9 ]{0,12}",
        "[\"\\\\\n\r\t\u{0}\u{7f}\u{2028}é×大😀]{0,8}",
    ]
}

/// Any JSON value the writer can be handed: finite numbers of every representation, nested
/// arrays and objects.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<u64>().prop_map(|n| Value::Number(n.into())),
        any::<f64>()
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(text(), json_value(), 0..5).prop_map(|m| m.into_iter().collect())
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        (text(), json_object()).prop_map(|(tool_name, arguments)| Action::ToolCall(ToolCall::new(
            tool_name, arguments
        ))),
        text().prop_map(|answer| Action::Finish(Finish { answer })),
    ]
}

/// A name a newer writer might use; a known name would read back as its own variant.
fn unknown_event_type() -> impl Strategy<Value = String> {
    text().prop_filter("unknown names only", |name| {
        let line = serde_json::json!({"run_id": "r", "step": 0, "event_type": name});
        matches!(
            serde_json::from_value::<Event>(line).map(|e| e.kind),
            Ok(EventKind::Unknown { .. })
        )
    })
}

fn exit_reason() -> impl Strategy<Value = ExitReason> {
    prop::sample::select(ExitReason::ALL.to_vec())
}

/// `duration_ms` is finite: the writer only records measured durations.
fn duration_ms() -> impl Strategy<Value = Option<f64>> {
    prop::option::of(any::<f64>().prop_filter("finite", |d| d.is_finite()))
}

/// Any event kind, every optional field present or not. Boxed: the value trees of seven kinds
/// of eight fields each would not fit a test thread's stack unboxed in a debug build.
fn event_kind() -> BoxedStrategy<EventKind> {
    let started = (
        prop::option::of(text()),
        prop::option::of(prop::sample::select(vec![Capture::Summary, Capture::Full])),
        prop::option::of(prop::sample::select(vec![
            HashAlgorithm::Sha256,
            HashAlgorithm::HmacSha256,
        ])),
        prop::option::of(any::<u32>()),
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of((text(), text()).prop_map(|(source, run_id)| ReplayOf { source, run_id })),
    )
        .prop_map(
            |(schema, capture, hash, max_steps, input_summary, task, replay_of)| {
                EventKind::RunStarted(RunStarted {
                    schema,
                    capture,
                    hash,
                    max_steps,
                    input_summary,
                    task,
                    replay_of,
                    ..RunStarted::default()
                })
            },
        );
    let action = (
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(prop::collection::vec(text(), 0..4)),
        prop::option::of(json_object()),
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(text()),
        duration_ms(),
    )
        .prop_map(
            |(
                action_type,
                tool_name,
                argument_keys,
                arguments,
                output,
                answer,
                raw_output,
                duration_ms,
            )| {
                EventKind::ModelAction(ModelAction {
                    action_type,
                    tool_name,
                    argument_keys,
                    arguments,
                    output,
                    answer,
                    raw_output,
                    duration_ms,
                    ..ModelAction::default()
                })
            },
        );
    let observation = (
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(any::<bool>()),
        prop::option::of(text()),
        prop::option::of(text()),
        duration_ms(),
    )
        .prop_map(
            |(tool_name, output, is_error, error_kind, content, duration_ms)| {
                EventKind::Observation(Observation {
                    tool_name,
                    output,
                    is_error,
                    error_kind,
                    content,
                    duration_ms,
                    ..Observation::default()
                })
            },
        );
    let feedback = (
        prop::option::of(text()),
        prop::option::of(any::<bool>()),
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(text()),
        duration_ms(),
    )
        .prop_map(
            |(output, is_error, error_kind, content, raw_output, duration_ms)| {
                EventKind::ModelFeedback(ModelFeedback {
                    output,
                    is_error,
                    error_kind,
                    content,
                    raw_output,
                    duration_ms,
                    ..ModelFeedback::default()
                })
            },
        );
    let finished = (
        exit_reason(),
        prop::option::of(any::<u32>()),
        prop::option::of(text()),
        prop::option::of(text()),
        duration_ms(),
    )
        .prop_map(
            |(exit_reason, steps_used, error_kind, error, duration_ms)| {
                EventKind::RunFinished(RunFinished {
                    steps_used,
                    error_kind,
                    error,
                    duration_ms,
                    ..RunFinished::new(exit_reason)
                })
            },
        );
    let internal = (
        prop::option::of(text()),
        prop::option::of(text()),
        duration_ms(),
    )
        .prop_map(|(error_kind, error, duration_ms)| {
            EventKind::InternalError(InternalError {
                error_kind,
                error,
                duration_ms,
                steps_used: None,
            })
        });
    let unknown = (
        unknown_event_type(),
        prop::option::of(text()),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(event_type, output, is_error)| {
            let mut fields = Map::new();
            if let Some(output) = output {
                fields.insert("output".to_owned(), Value::String(output));
            }
            if let Some(is_error) = is_error {
                fields.insert("is_error".to_owned(), Value::Bool(is_error));
            }
            EventKind::Unknown { event_type, fields }
        });
    prop_oneof![
        started.boxed(),
        action.boxed(),
        observation.boxed(),
        feedback.boxed(),
        finished.boxed(),
        internal.boxed(),
        unknown.boxed(),
    ]
    .boxed()
}

/// Any event.
fn trace_event() -> impl Strategy<Value = Event> {
    (text(), any::<u64>(), prop::option::of(text()), event_kind()).prop_map(
        |(run_id, step, ts, kind)| Event {
            run_id,
            step,
            ts,
            kind,
        },
    )
}

/// Writes events with the real writer to a fresh file and returns its bytes.
fn write_events(events: &[Event]) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let mut writer = TraceWriter::append(&path, false).unwrap();
    for event in events {
        writer.write_event(event).unwrap();
    }
    drop(writer);
    let bytes = std::fs::read(&path).unwrap();
    (dir, path, bytes)
}

/// Reads every event strictly; panics on any error.
fn read_all(bytes: &[u8]) -> Vec<(u64, Event)> {
    TraceReader::new(bytes, "t.jsonl", ReadOptions::default())
        .collect::<Result<_, _>>()
        .unwrap()
}

fn recorder_options(summarizer: Summarizer) -> RecorderOptions {
    RecorderOptions {
        capture: Capture::Full,
        summarizer,
        durations: false,
        replay_of: None,
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// A recorded action reads back as the same action, and replay rebuilds it exactly.
    #[test]
    fn any_action_round_trips_through_writer_and_reader(
        task in text(),
        action in action(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let writer = TraceWriter::append(&path, false).unwrap();
        let mut recorder = TraceRecorder::new("r", recorder_options(Summarizer::sha256()), writer);
        let task = Task::new(task);
        let started = RunEvent::RunStarted { task: &task, max_steps: 3, finish_gate_hash: None, live: None, tools: &[] };
        let acted = RunEvent::ModelAction {
            step: 1,
            action: &action,
            raw_output: None,
            duration: Duration::ZERO,
            call_id: None,
            record: None,
        };
        let expected = vec![recorder.trace_event(&started), recorder.trace_event(&acted)];
        recorder.on_event(&started).unwrap();
        recorder.on_event(&acted).unwrap();
        drop(recorder);

        let contents = read_trace(&path, ReadOptions::default()).unwrap();
        prop_assert_eq!(contents.runs.len(), 1);
        let run = &contents.runs[0];
        let events: Vec<Event> = run.events.iter().map(|(_, e)| e.clone()).collect();
        prop_assert_eq!(events, expected);
        let model = ReplayModel::from_run(run).unwrap();
        prop_assert_eq!(model.task(), &task);
        prop_assert_eq!(model.turns(), &[(1, RecordedTurn::Action(action))][..]);
    }

    /// Any sequence of events is read back equal, one per line, numbered from 1, and writing
    /// what was read gives the same bytes again.
    #[test]
    fn any_events_round_trip_through_writer_and_reader(
        events in prop::collection::vec(trace_event(), 1..6),
    ) {
        let (_dir, _path, bytes) = write_events(&events);
        prop_assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), events.len());
        let read = read_all(&bytes);
        let lines: Vec<u64> = read.iter().map(|(line, _)| *line).collect();
        prop_assert_eq!(lines, (1..=events.len() as u64).collect::<Vec<_>>());
        let read: Vec<Event> = read.into_iter().map(|(_, e)| e).collect();
        prop_assert_eq!(&read, &events);
        let (_dir, _path, again) = write_events(&read);
        prop_assert_eq!(again, bytes);
    }

    /// A crash can cut the file at any byte: the complete lines before the cut still read, in
    /// order, and the cut line is at most a warning, never an error.
    #[test]
    fn a_trace_cut_at_any_byte_reads_its_complete_lines(
        events in prop::collection::vec(trace_event(), 1..5),
        cut in any::<prop::sample::Index>(),
    ) {
        let (_dir, _path, bytes) = write_events(&events);
        let cut = cut.index(bytes.len() + 1);
        let prefix = &bytes[..cut];
        let complete = prefix.iter().filter(|b| **b == b'\n').count();
        let mut reader = TraceReader::new(prefix, "t.jsonl", ReadOptions::default());
        let read: Vec<Event> = reader
            .by_ref()
            .map(|item| item.map(|(_, e)| e))
            .collect::<Result<_, _>>()
            .unwrap();
        let stats = reader.into_stats();
        // A cut that leaves a still-valid object (only the newline lost) reads as one more event.
        let tail_parsed = read.len() == complete + 1;
        prop_assert!(read.len() == complete || tail_parsed);
        prop_assert_eq!(&read[..], &events[..read.len()]);
        let cut_mid_line = cut > 0 && bytes[cut - 1] != b'\n';
        prop_assert_eq!(
            stats.truncated_tail.is_some(),
            cut_mid_line && !tail_parsed,
        );
    }

    /// The adapter answers any text with an action or a typed error, never a panic.
    #[test]
    fn parse_json_action_never_panics_on_arbitrary_text(raw in text()) {
        if let Err(err) = parse_json_action(&raw) {
            prop_assert!(!err.message.is_empty());
        }
    }

    /// Text that is almost an action: the accepted shapes with a field dropped, retyped or
    /// added, spliced from JSON fragments.
    #[test]
    fn parse_json_action_never_panics_on_json_fragments(
        parts in prop::collection::vec(
            prop::sample::select(vec![
                "{", "}", "[", "]", ":", ",", "\"type\"", "\"tool_call\"", "\"finish\"",
                "\"tool_name\"", "\"arguments\"", "\"answer\"", "\"calculator\"", "null",
                "true", "1e400", "-0", "18446744073709551616", "\"\\ud800\"", "\"\\u0000\"",
                "\"x\"", " ",
            ]),
            0..24,
        ),
    ) {
        let raw = parts.concat();
        if let Err(err) = parse_json_action(&raw) {
            prop_assert!(!err.message.is_empty());
        }
    }

    /// `parse_line` and the reader, strict and lenient, give events or line-numbered errors
    /// on arbitrary bytes, never a panic; lenient reading never fails on content.
    #[test]
    fn trace_parsers_never_panic_on_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        for line in bytes.split(|b| *b == b'\n') {
            let _ = parse_line(line);
        }
        let options = ReadOptions { lenient: false, max_line_bytes: 64 };
        for item in TraceReader::new(&bytes[..], "t.jsonl", options) {
            if let Err(err) = item {
                prop_assert!(err.to_string().starts_with("t.jsonl:"), "{}", err);
            }
        }
        let options = ReadOptions { lenient: true, max_line_bytes: 64 };
        let mut reader = TraceReader::new(&bytes[..], "t.jsonl", options);
        prop_assert!(reader.by_ref().all(|item| item.is_ok()));
        let stats = reader.into_stats();
        prop_assert!(stats.skipped.len() as u64 <= stats.skipped_count);
    }

    /// A valid line with one byte changed, dropped or inserted still gives an event or an
    /// error, never a panic.
    #[test]
    fn trace_parsers_never_panic_on_mutated_lines(
        event in trace_event(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0..3u8,
    ) {
        let mut line = serde_json::to_vec(&event).unwrap();
        let i = at.index(line.len());
        match how {
            0 => line[i] = byte,
            1 => {
                line.remove(i);
            }
            _ => line.insert(i, byte),
        }
        let _ = parse_line(&line);
        line.push(b'\n');
        let _ = TraceReader::new(&line[..], "t.jsonl", ReadOptions::default()).count();
    }
}

/// Counts characters as Python's `len` does, without `str::chars`: every byte that does not
/// continue a UTF-8 sequence starts a code point.
fn python_len(text: &str) -> usize {
    text.bytes().filter(|b| b & 0xC0 != 0x80).count()
}

/// `chars=N;ALGO=HEX` split into its parts.
fn summary_parts(summary: &str) -> (usize, String, String) {
    let (chars, hash) = summary.split_once(';').unwrap();
    let chars = chars.strip_prefix("chars=").unwrap().parse().unwrap();
    let (algorithm, hex) = hash.split_once('=').unwrap();
    (chars, algorithm.to_owned(), hex.to_owned())
}

proptest! {
    #![proptest_config(config(256))]

    /// A summary is the same every time, counts code points, and is 64 lowercase hex digits.
    #[test]
    fn summaries_are_deterministic_and_count_like_python(
        content in text(),
        key in prop::collection::vec(any::<u8>(), 1..40),
    ) {
        for (summarizer, algorithm) in [
            (Summarizer::sha256(), "sha256"),
            (Summarizer::hmac(key.clone()), "hmac-sha256"),
        ] {
            let summary = summarizer.summarize(&content);
            prop_assert_eq!(&summary, &summarizer.clone().summarize(&content));
            let (chars, found, hex) = summary_parts(&summary);
            prop_assert_eq!(chars, python_len(&content));
            prop_assert_eq!(found, algorithm);
            prop_assert_eq!(hex.len(), 64);
            prop_assert!(hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
    }

    /// The summaries a recorder writes read back unchanged, and re-serializing the event read
    /// gives the line written, byte for byte.
    #[test]
    fn summaries_survive_write_and_read_unchanged(
        task in text(),
        answer in text(),
        key in prop::option::of(prop::collection::vec(any::<u8>(), 1..40)),
    ) {
        let summarizer = key.map_or_else(Summarizer::sha256, Summarizer::hmac);
        let mut options = recorder_options(summarizer.clone());
        options.capture = Capture::Summary;
        let mut recorder = TraceRecorder::new("r", options, Vec::new());
        let task = Task::new(task);
        let finish = Action::Finish(Finish { answer: answer.clone() });
        recorder.on_event(&RunEvent::RunStarted { task: &task, max_steps: 1, finish_gate_hash: None, live: None, tools: &[] }).unwrap();
        recorder
            .on_event(&RunEvent::ModelAction {
                step: 1,
                action: &finish,
                raw_output: None,
                duration: Duration::ZERO,
                call_id: None,
                record: None,
            })
            .unwrap();
        let events = recorder.into_sink();
        let (_dir, _path, bytes) = write_events(&events);
        let read: Vec<Event> = read_all(&bytes).into_iter().map(|(_, e)| e).collect();
        let (EventKind::RunStarted(started), EventKind::ModelAction(finished)) =
            (&read[0].kind, &read[1].kind)
        else {
            panic!("not a run_started and a model_action: {read:?}");
        };
        prop_assert_eq!(&started.input_summary, &Some(summarizer.summarize(&task.prompt)));
        prop_assert_eq!(&finished.output, &Some(summarizer.summarize(&answer)));
        prop_assert_eq!(started.task.as_ref(), None);
        prop_assert_eq!(finished.answer.as_ref(), None);
        let rewritten: Vec<u8> = read
            .iter()
            .flat_map(|e| {
                let mut line = serde_json::to_vec(e).unwrap();
                line.push(b'\n');
                line
            })
            .collect();
        prop_assert_eq!(rewritten, bytes);
    }
}

#[test]
fn summaries_match_published_digests() {
    assert_eq!(
        Summarizer::sha256().summarize(""),
        "chars=0;sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    // Python: len("é×大😀") == 4 although it is 11 bytes of UTF-8.
    assert_eq!(python_len("é×大😀"), 4);
    assert!(
        Summarizer::sha256()
            .summarize("é×大😀")
            .starts_with("chars=4;")
    );
    // RFC 4231, test case 2.
    assert_eq!(
        Summarizer::hmac(b"Jefe".to_vec()).summarize("what do ya want for nothing?"),
        "chars=28;hmac-sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}

proptest! {
    #![proptest_config(config(256))]

    /// A tools file with any value at any of its keys loads or is refused with every problem at
    /// a JSON path; it never panics.
    #[test]
    fn any_value_at_any_key_of_a_tools_file_is_loaded_or_refused_with_paths(
        top in prop::sample::select(vec!["workdir", "env", "tools", "mcp_servers", "other"]),
        key in prop::sample::select(vec![
            "name", "builtin", "command", "input_schema", "env", "timeout_s",
            "max_output_bytes", "prefix", "description", "template",
        ]),
        value in json_value(),
        whole in any::<bool>(),
    ) {
        let mut file = serde_json::json!({
            "workdir": {"template": "."},
            "env": ["HOME"],
            "tools": [
                {"name": "t", "input_schema": {"type": "object"}, "command": ["cat"]},
                {"builtin": "bash"}
            ],
            "mcp_servers": [{"name": "fs", "command": ["cat"], "prefix": "fs_"}]
        });
        if whole {
            file[top] = value;
        } else {
            match &mut file[top] {
                Value::Array(items) => match &mut items[0] {
                    Value::Object(entry) => { entry.insert(key.to_owned(), value); }
                    other => *other = value,
                },
                Value::Object(map) => { map.insert(key.to_owned(), value); }
                _ => file[top] = value,
            }
        }
        let dir = tempfile::tempdir().unwrap();
        if let Err(problems) = looptrace::tools::ToolsFile::from_value(&file, dir.path(), "$") {
            prop_assert!(!problems.is_empty());
            for (path, message) in &problems {
                prop_assert!(path.starts_with('$'), "{path}: {message}");
                prop_assert!(!message.is_empty());
            }
        }
    }
}

/// What `show -f json` writes for one line, or why it refuses it.
type ShownLine = Result<Option<Vec<u8>>, String>;

/// What `show -f json` writes for one line, through the copy-through path and through serde:
/// the event written again, or the reader's error.
fn shown_both_ways(line: &[u8]) -> (ShownLine, ShownLine) {
    use looptrace::trace::{JsonLine, LineItem};
    let copied = JsonLine::from_line(line).map(|l| l.map(|l| l.bytes().to_vec()));
    let written = parse_line(line).map(|e| e.map(|e| serde_json::to_vec(&e).unwrap()));
    (copied, written)
}

/// Every line of the bundled sample traces.
fn sample_trace_lines() -> Vec<String> {
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(samples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            let text = std::fs::read_to_string(&path).unwrap();
            lines.extend(text.lines().map(str::to_owned));
        }
    }
    lines
}

/// The same line written other ways a writer might: keys sorted, spaced out, non-ASCII and `/`
/// escaped, control characters escaped in upper case.
fn rewritten(line: &str) -> Vec<String> {
    let mut lines = vec![line.to_owned()];
    if let Ok(value) = serde_json::from_str::<Value>(line) {
        lines.push(value.to_string());
        lines.push(
            serde_json::to_string_pretty(&value)
                .unwrap()
                .replace('\n', " "),
        );
    }
    let mut ascii = String::new();
    for c in line.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                ascii.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    lines.push(ascii);
    lines.push(line.replace('/', "\\/"));
    let mut upper = line.to_owned();
    for high in ['0', '1'] {
        for low in ['a', 'b', 'c', 'd', 'e', 'f'] {
            let lower = format!("\\u00{high}{low}");
            upper = upper.replace(&lower, &lower.to_uppercase().replace("\\U", "\\u"));
        }
    }
    lines.push(upper);
    lines.push(line.replace("\\n", "\\u000a"));
    lines.push(format!(" {line}"));
    lines.push(format!("{line}\r"));
    lines
}

proptest! {
    #![proptest_config(config(256))]

    /// `show -f json` copies a line through only when that is byte for byte what writing its
    /// event again gives: any event, written by serde or rewritten another way, shows the same
    /// bytes (or the same error) as parsing and writing it.
    #[test]
    fn show_json_copies_through_exactly_what_serde_writes(event in trace_event()) {
        let line = serde_json::to_string(&event).unwrap();
        for variant in rewritten(&line) {
            let (copied, written) = shown_both_ways(variant.as_bytes());
            prop_assert_eq!(copied, written, "{}", variant);
        }
    }
}

/// Lines whose values serde_json reads but writes differently, and the sample traces' lines:
/// the copy-through path and serde agree on each.
#[test]
fn show_json_copies_through_only_lines_as_written() {
    let head = r#"{"run_id":"r","step":1,"event_type":"observation""#;
    let finished = r#"{"run_id":"r","step":2,"event_type":"run_finished","exit_reason":"finished""#;
    let mut lines: Vec<String> = [
        r#","output":"a","is_error":false}"#,
        r#","is_error":false,"output":"a"}"#,
        r#","output":"a\/b"}"#,
        r#","output":"\u00e9"}"#,
        r#","output":"\u001f\u001F\u0008\b\u000A"}"#,
        r#","output":"\ud83d\ude00"}"#,
        r#","output":null}"#,
        r#","content":"x"}"#,
        r#","unknown_field":1}"#,
        r#","duration_ms":1500}"#,
        r#","duration_ms":1500.0}"#,
        r#","duration_ms":1.5e3}"#,
        r#","duration_ms":0.1}"#,
        r#","duration_ms":-0.0}"#,
        r#","duration_ms":1e400}"#,
        r#","exit_status":-1}"#,
        r#","exit_status":-0}"#,
        r#","exit_status":2147483648}"#,
        r#","exit_status":65535}"#,
        r#","exit_status":65536}"#,
        r#","exit_status":007}"#,
        r#","is_error":true,"error_kind":"x"}"#,
        r#","is_error":"true"}"#,
        r#","tool_name":"t","tool_name":"u"}"#,
        r#","ts":"2026-01-01T00:00:00.000Z"}"#,
        r#","output":"a"} "#,
        r#","output":"a"}}"#,
    ]
    .iter()
    .map(|tail| format!("{head}{tail}"))
    .collect();
    lines.extend(
        [
            r#"}"#,
            r#","usage":{"input_tokens":1,"output_tokens":2}}"#,
            r#","usage":{"output_tokens":2,"input_tokens":1}}"#,
            r#","usage":{"input_tokens":1.0}}"#,
            r#","scores":[{"name":"s","kind":"k","passed":true,"value":1}]}"#,
            r#","cost_usd":0.001,"duration_ms":12.25}"#,
        ]
        .iter()
        .map(|tail| format!("{finished}{tail}")),
    );
    lines.push(
        r#"{"run_id":"r","step":18446744073709551615,"event_type":"run_started"}"#.to_owned(),
    );
    lines.push(
        r#"{"run_id":"r","step":18446744073709551616,"event_type":"run_started"}"#.to_owned(),
    );
    lines.push(r#"{"run_id":"r","step":0,"event_type":"run_started","capture":"full"}"#.to_owned());
    lines.push(r#"{"run_id":"r","step":0,"event_type":"run_started","capture":"Full"}"#.to_owned());
    lines.push(r#"{"run_id":"r","step":0,"event_type":"new_kind","output":"a"}"#.to_owned());
    lines.push(r#"{"run_id":"r","step":1,"event_type":"model_action","action_type":"tool_call","arguments":{"b":1,"a":[1.0,2]}}"#.to_owned());
    lines.push(
        r#"{"run_id":"r","step":1,"event_type":"model_action","arguments":{"n":1e999}}"#.to_owned(),
    );
    lines.extend(sample_trace_lines().iter().flat_map(|line| rewritten(line)));
    let mut copied_through = 0;
    for line in &lines {
        let (copied, written) = shown_both_ways(line.as_bytes());
        if let Ok(Some(bytes)) = &copied
            && bytes == line.as_bytes()
        {
            copied_through += 1;
        }
        assert_eq!(copied, written, "{line}");
    }
    // The sample traces are as looptrace writes them: most of their lines are copied through.
    assert!(copied_through > 50, "{copied_through}");
}

/// What `show` prints for a run of one line, reading it for text and reading it whole.
fn shown_as_text_both_ways(line: &[u8]) -> (TextShown, TextShown) {
    use looptrace::trace::{LineItem, RecordedRun, TextLine, render_run};
    let render = |event: Event| {
        let run = RecordedRun {
            run_id: event.run_id.clone(),
            events: vec![(1, event)],
        };
        render_run(&run, 1, false)
    };
    let shortened = TextLine::from_line(line).map(|l| l.map(|TextLine(event)| render(event)));
    let whole = parse_line(line).map(|e| e.map(render));
    (shortened, whole)
}

/// What `show` prints for one line, or why it refuses it.
type TextShown = Result<Option<String>, String>;

/// A line of each event type whose texts `show` shortens, with a long text and texts it never
/// shows.
fn line_with_long_texts() -> impl Strategy<Value = String> {
    let long = prop::collection::vec(text(), 0..40).prop_map(|parts| parts.concat());
    (0..7usize, long, prop::option::of(text())).prop_map(|(kind, long, raw)| {
        let long = serde_json::to_string(&long).unwrap();
        let raw = raw
            .map(|raw| format!(",\"raw_output\":{}", serde_json::to_string(&raw).unwrap()))
            .unwrap_or_default();
        let head = r#"{"run_id":"r","step":1,"event_type":"#;
        match kind {
            0 => format!(r#"{head}"run_started","task":{long}}}"#),
            1 => format!(r#"{head}"model_action","action_type":"finish","answer":{long}{raw}}}"#),
            2 => format!(r#"{head}"observation","tool_name":"t","content":{long}}}"#),
            3 => format!(r#"{head}"model_feedback","content":{long}{raw}}}"#),
            4 => format!(r#"{head}"finish_gate","accepted":false,"content":{long}}}"#),
            5 => format!(r#"{head}"run_finished","exit_reason":"internal_error","error":{long}}}"#),
            _ => format!(r#"{head}"internal_error","error":{long}}}"#),
        }
    })
}

proptest! {
    #![proptest_config(config(256))]

    /// `show` reads the texts it shortens only as far as it shows them, and prints exactly what it
    /// prints from the whole event (or refuses the line with the same message).
    #[test]
    fn show_text_from_shortened_texts_is_show_text_from_the_whole_event(
        line in prop_oneof![line_with_long_texts(), trace_event().prop_map(|e| serde_json::to_string(&e).unwrap())]
    ) {
        for variant in rewritten(&line) {
            let (shortened, whole) = shown_as_text_both_ways(variant.as_bytes());
            prop_assert_eq!(shortened, whole, "{}", variant);
        }
    }
}

/// What `show` prints for a run of one line, from the line of text made as the line is read
/// and from the whole event, in colour or not.
fn shown_as_made_and_from_the_event(line: &[u8], color: bool) -> (TextShown, TextShown) {
    use looptrace::trace::{LineItem, RecordedRun, ShownEvent, render_lines, render_run};
    fn made<const COLOR: bool>(line: &[u8], run_id: &str) -> TextShown {
        ShownEvent::<COLOR>::from_line(line).map(|shown| {
            shown.map(|shown| {
                let lines = std::iter::once((1, shown.text()));
                render_lines(run_id, 1, lines, shown.ending(), COLOR)
            })
        })
    }
    let whole = parse_line(line);
    let run_id = match &whole {
        Ok(Some(event)) => event.run_id.clone(),
        _ => String::new(),
    };
    let from_event = whole.map(|e| {
        e.map(|event| {
            let run = RecordedRun {
                run_id: event.run_id.clone(),
                events: vec![(1, event)],
            };
            render_run(&run, 1, color)
        })
    });
    let made = if color {
        made::<true>(line, &run_id)
    } else {
        made::<false>(line, &run_id)
    };
    (made, from_event)
}

proptest! {
    #![proptest_config(config(256))]

    /// `show` makes each event's line of text as it reads the line, from the borrowed view and
    /// the line's own fields when it can: it prints exactly what it prints from the whole event
    /// (or refuses the line with the same message), in colour or not.
    #[test]
    fn show_text_made_from_the_line_is_show_text_from_the_whole_event(
        line in prop_oneof![line_with_long_texts(), trace_event().prop_map(|e| serde_json::to_string(&e).unwrap())],
        color in any::<bool>(),
    ) {
        for variant in rewritten(&line) {
            let (made, whole) = shown_as_made_and_from_the_event(variant.as_bytes(), color);
            prop_assert_eq!(made, whole, "{}", variant);
        }
    }
}

/// The lines of the sample traces, and lines whose printed values read in unusual ways, give
/// the same text made from the line as from the whole event.
#[test]
fn show_text_made_from_sample_and_unusual_lines() {
    let head = r#"{"run_id":"r","step":1,"event_type":"#;
    let mut lines: Vec<String> = [
        r#""observation","tool_name":"t","exit_status":-0,"lossy":true,"content":null,"output":"o\u00e9"}"#,
        r#""observation","is_error":null,"error_kind":"k","duration_ms":1.5e3}"#,
        r#""observation","duration_ms":0.30000000000000004,"content":"\ud83d\ude00\/\u0000"}"#,
        r#""model_action","action_type":"tool_call","tool_name":"t","arguments":{"b":[1.0,2e2],"a":"\u00e9"},"argument_keys":["b","a"]}"#,
        r#""model_action","action_type":"tool_call","arguments":{"n":1e999},"argument_keys":["n"]}"#,
        r#""model_action","action_type":"tool_call","arguments":null,"argument_keys":["k\n"]}"#,
        r#""model_action","action_type":"finish","answer":"a\tb","output":null}"#,
        r#""run_started","capture":"full","max_steps":4294967295,"replay_of":{"source":"s\u001b","run_id":"q"},"task":"t"}"#,
        r#""run_started","input_summary":"chars=1"}"#,
        r#""run_finished","exit_reason":"max_steps_exceeded","steps_used":3,"error":"e","error_kind":"x"}"#,
        r#""internal_error","exit_reason":"finished","error":"boom"}"#,
        r#""model_retry","error_kind":"rate_limited","http_status":429,"wait_ms":18446744073709551615,"duration_ms":1}"#,
        r#""scorer_call","scorer":"judge","duration_ms":5}"#,
        r#""finish_gate","accepted":true,"output":"ok","answer":"not a gate field"}"#,
        r#""new_kind","content":"x"}"#,
    ]
    .iter()
    .map(|tail| format!("{head}{tail}"))
    .collect();
    let long = "\\\"é😀\\n".repeat(100);
    lines.push(format!(r#"{head}"observation","content":"{long}"}}"#));
    lines.extend(sample_trace_lines().iter().flat_map(|line| rewritten(line)));
    for line in &lines {
        for color in [false, true] {
            let (made, whole) = shown_as_made_and_from_the_event(line.as_bytes(), color);
            assert_eq!(made, whole, "{line}");
        }
    }
}
