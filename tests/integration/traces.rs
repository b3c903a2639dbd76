//! Traces: exact event sequences, summaries, capture modes, the tolerant and strict reader, and
//! concurrent appends through the real binary.

use std::io::Write;
use std::path::Path;

use looptrace::run::ExitReason;
use looptrace::run::RunOutcome;
use looptrace::trace::{
    Capture, Event, EventKind, ReadOptions, Summarizer, TraceContents, TraceReader, TraceWriter,
    read_trace,
};
use serde_json::json;

use crate::samples::{SAMPLE_RUNS, record};
use crate::support::{fixture, looptrace, run, sample, stderr, stdout};

fn sequence(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let action_type = match &e.kind {
                EventKind::ModelAction(action) => action.action_type.clone(),
                _ => None,
            };
            let detail = action_type
                .or(e.run_finished().map(|f| f.exit_reason.to_string()))
                .or(e.error_kind().map(str::to_owned))
                .unwrap_or_default();
            format!(
                "{}:{}{}",
                e.step,
                e.event_type(),
                if detail.is_empty() {
                    String::new()
                } else {
                    format!("({detail})")
                }
            )
        })
        .collect()
}

#[test]
fn each_exit_reason_has_its_exact_event_sequence() {
    let expected: [&[&str]; 4] = [
        &[
            "0:run_started",
            "1:model_action(tool_call)",
            "1:observation",
            "2:model_action(finish)",
            "2:run_finished(finished)",
        ],
        &[
            "0:run_started",
            "1:model_action(tool_call)",
            "1:observation",
            "2:model_action(tool_call)",
            "2:observation(unknown_tool)",
            "3:model_action(tool_call)",
            "3:observation(division_by_zero)",
            "3:run_finished(max_steps_exceeded)",
        ],
        &[
            "0:run_started",
            "1:model_feedback(invalid_json)",
            "2:model_feedback(missing_field)",
            "2:run_finished(invalid_model_output)",
        ],
        &[
            "0:run_started",
            "1:model_action(tool_call)",
            "1:observation",
            "2:run_finished(internal_error)",
        ],
    ];
    for (run, expected) in SAMPLE_RUNS.iter().zip(expected) {
        let events = record(run, "r", Capture::Summary);
        assert_eq!(sequence(&events), expected, "{}", run.name);
    }
}

#[test]
fn summaries_match_known_sha256_values() {
    let s = Summarizer::sha256();
    assert_eq!(
        s.summarize(""),
        "chars=0;sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        s.summarize("84"),
        "chars=2;sha256=44c8031cb036a7350d8b9b8603af662a4b9cdbd2f96e8d5de5af435c9c35da69"
    );
    assert_eq!(
        s.summarize("12 × 7 = 84，84大于80。"),
        "chars=19;sha256=7c48911e613351b2418b7a3cbda06b2cda7d77dfd163bb53e9552a7bcc8ba588"
    );
    assert_eq!(
        s.summarize("héllo 🌍"),
        "chars=7;sha256=cbbcee01a3fc5f1c0db23e02be25316adf28ede876031fdbabe5f4fabe47ed7f"
    );
    assert_eq!(
        Summarizer::hmac("k3y").summarize("84"),
        "chars=2;hmac-sha256=7a63cfcf5336f4847fd1fce9d06ab565700350d68b135cd9c09c496b46fd9b5b"
    );
}

#[test]
fn hmac_mode_is_recorded_in_run_started() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let output = crate::support::looptrace()
        .args(["run", "--task", "t", "--responses"])
        .arg(fixture("responses/finish.txt"))
        .arg("--trace")
        .arg(&trace)
        .env("LOOPTRACE_HASH_KEY", "k3y")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let contents = read_trace(&trace, ReadOptions::default()).unwrap();
    let events: Vec<&Event> = contents.runs[0].events.iter().map(|(_, e)| e).collect();
    let (EventKind::RunStarted(started), EventKind::Observation(observed)) =
        (&events[0].kind, &events[2].kind)
    else {
        panic!("not a run_started and an observation: {events:?}");
    };
    assert_eq!(
        started.hash,
        Some(looptrace::trace::HashAlgorithm::HmacSha256)
    );
    assert_eq!(
        observed.output.as_deref(),
        Some(
            "chars=2;hmac-sha256=7a63cfcf5336f4847fd1fce9d06ab565700350d68b135cd9c09c496b46fd9b5b"
        )
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(!text.contains("k3y"));
}

#[test]
fn every_event_written_reads_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("round.jsonl");
    let mut written = Vec::new();
    for run in SAMPLE_RUNS {
        for capture in [Capture::Summary, Capture::Full] {
            written.extend(record(
                run,
                &format!("{}-{}", run.name, capture.as_str()),
                capture,
            ));
        }
    }
    let mut writer = TraceWriter::append(&path, false).unwrap();
    for event in &written {
        writer.write_event(event).unwrap();
    }
    drop(writer);
    let reader = TraceReader::new(
        std::fs::File::open(&path).unwrap(),
        "round.jsonl",
        ReadOptions::default(),
    );
    let read: Vec<Event> = reader.map(|item| item.unwrap().1).collect();
    assert_eq!(read, written);
}

#[test]
fn summary_capture_never_writes_content() {
    let dir = tempfile::tempdir().unwrap();
    let responses = dir.path().join("responses.txt");
    std::fs::write(
        &responses,
        concat!(
            r#"{"type":"tool_call","tool_name":"calculator","arguments":{"left":31337,"operation":"multiply","right":1}}"#, "\n",
            r#"{"type":"tool_call","tool_name":"SECRET-TOOL-ZEBRA","arguments":{"SECRET-KEY":"x"}}"#, "\n",
            "SECRET-RAW-PLATYPUS not json\n",
            r#"{"type":"finish","answer":"SECRET-ANSWER-WOMBAT"}"#, "\n",
        ),
    )
    .unwrap();
    let trace = dir.path().join("t.jsonl");
    let output = run(&[
        "run",
        "--task",
        "SECRET-TASK-OKAPI",
        "--responses",
        responses.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = std::fs::read_to_string(&trace).unwrap();
    for secret in ["OKAPI", "31337", "WOMBAT", "PLATYPUS", "not valid JSON"] {
        assert!(!text.contains(secret), "{secret} leaked into {text}");
    }
    // Tool names and argument keys are structure, not content: they are kept.
    assert!(text.contains("SECRET-TOOL-ZEBRA"));
    let full = dir.path().join("full.jsonl");
    run(&[
        "run",
        "--task",
        "SECRET-TASK-OKAPI",
        "--responses",
        responses.to_str().unwrap(),
        "--trace",
        full.to_str().unwrap(),
        "--capture",
        "full",
    ]);
    let text = std::fs::read_to_string(&full).unwrap();
    for secret in ["OKAPI", "31337", "WOMBAT", "PLATYPUS"] {
        assert!(text.contains(secret), "full capture keeps {secret}");
    }
}

fn read_str(text: &str, options: ReadOptions) -> Result<TraceContents, String> {
    TraceContents::from_reader(TraceReader::new(text.as_bytes(), "t.jsonl", options))
        .map_err(|e| e.to_string())
}

#[test]
fn the_reader_tolerates_real_world_imperfections() {
    let text = "\n{\"run_id\":\"a\",\"step\":0,\"event_type\":\"run_started\",\"future_field\":[1,2]}\r\n\
                \n\
                {\"run_id\":\"a\",\"step\":1,\"event_type\":\"thought\",\"text\":\"hm\"}\n\
                {\"run_id\":\"b\",\"step\":0,\"event_type\":\"run_started\"}\n\
                {\"run_id\":\"a\",\"step\":1,\"event_type\":\"run_finished\",\"exit_reason\":\"finished\"}\n\
                {\"run_id\":\"c\",\"step\":3,\"event_type\":\"internal_error\"}\n\
                {\"run_id\":\"b\",\"step\":1,\"event_type\":\"model_act";
    let contents = read_str(text, ReadOptions::default()).unwrap();
    let outcomes: Vec<(&str, RunOutcome)> = contents
        .runs
        .iter()
        .map(|r| (r.run_id.as_str(), r.outcome()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("a", RunOutcome::Ended(ExitReason::Finished)),
            ("b", RunOutcome::Incomplete),
            ("c", RunOutcome::Ended(ExitReason::InternalError)),
        ]
    );
    assert_eq!(contents.stats.truncated_tail, Some(8));
    assert_eq!(contents.stats.unknown_event_types.get("thought"), Some(&1));
    assert_eq!(
        contents.runs[0].events[1].1.kind,
        EventKind::Unknown {
            event_type: "thought".to_owned(),
            fields: serde_json::Map::new()
        }
    );
    let warnings = contents.stats.warnings("t.jsonl");
    assert!(
        warnings[0].starts_with("t.jsonl:8: the last line is cut off"),
        "{warnings:?}"
    );
}

#[test]
fn the_reader_is_strict_in_the_middle_unless_lenient() {
    let good = "{\"run_id\":\"a\",\"step\":0,\"event_type\":\"run_started\"}\n";
    let cases = [
        (
            "{\"run_id\":\"a\",\"step\":0,\n",
            "t.jsonl:2: EOF while parsing a value (column 23)",
        ),
        ("[1,2]\n", "t.jsonl:2: expected a JSON object"),
        (
            "{\"step\":0,\"event_type\":\"run_started\"}\n",
            "t.jsonl:2: missing field `run_id` (column 37)",
        ),
        (
            "{\"run_id\":\"a\",\"step\":0}\n",
            "t.jsonl:2: missing field `event_type` (column 23)",
        ),
        (
            "{\"run_id\":\"a\",\"step\":\"one\",\"event_type\":\"x\"}\n",
            "t.jsonl:2: invalid type: string \"one\", expected u64 (column 26)",
        ),
        (
            "{\"run_id\":\"a\",\"step\":0,\"event_type\":\"run_finished\",\"exit_reason\":\"exploded\"}\n",
            "t.jsonl:2: unknown variant `exploded`, expected one of `finished`, `max_steps_exceeded`, `invalid_model_output`, `internal_error` (column 75)",
        ),
    ];
    // The line after a bad one belongs to the same run: a line cut short followed by a
    // `run_started` would be a write cut short, not an error.
    let after = "{\"run_id\":\"a\",\"step\":1,\"event_type\":\"x\"}\n";
    for (bad, message) in cases {
        let text = format!("{good}{bad}{after}");
        assert_eq!(
            read_str(&text, ReadOptions::default()).unwrap_err(),
            message
        );
        let lenient = read_str(
            &text,
            ReadOptions {
                lenient: true,
                ..ReadOptions::default()
            },
        )
        .unwrap();
        assert_eq!(lenient.stats.skipped_count, 1);
        assert_eq!(lenient.stats.events, 2);
    }
}

#[test]
fn invalid_utf8_and_huge_lines_are_errors_with_the_line_number() {
    let mut bytes = b"{\"run_id\":\"a\",\"step\":0,\"event_type\":\"run_started\"}\n".to_vec();
    bytes.extend_from_slice(b"{\"run_id\":\"\xff\",\"step\":0,\"event_type\":\"x\"}\n");
    let err = TraceContents::from_reader(TraceReader::new(
        bytes.as_slice(),
        "t.jsonl",
        ReadOptions::default(),
    ))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "t.jsonl:2: invalid UTF-8 at byte 12 of the line"
    );

    let options = ReadOptions {
        lenient: false,
        max_line_bytes: 64,
    };
    let text = format!("{}\n{{\"run_id\":\"a\"}}\n", "x".repeat(100));
    let err = read_str(&text, options).unwrap_err();
    assert_eq!(err, "t.jsonl:1: line is longer than the limit of 64 bytes");
}

#[test]
fn the_writeup_lines_are_a_valid_trace() {
    let contents = read_trace(&sample("writeup.jsonl"), ReadOptions::default()).unwrap();
    assert_eq!(contents.runs.len(), 1);
    assert_eq!(contents.runs[0].events.len(), 5);
    assert_eq!(
        contents.runs[0].outcome(),
        RunOutcome::Ended(ExitReason::Finished)
    );
}

#[test]
fn appending_never_truncates() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(
        &trace,
        "{\"run_id\":\"old\",\"step\":0,\"event_type\":\"run_started\"}\n",
    )
    .unwrap();
    for id in ["one", "two"] {
        record_finished_run(&trace, id);
    }
    let contents = read_trace(&trace, ReadOptions::default()).unwrap();
    let ids: Vec<&str> = contents.runs.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids, ["old", "one", "two"]);
}

#[test]
fn concurrent_processes_append_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("shared.jsonl");
    let responses = dir.path().join("long.txt");
    let mut file = std::fs::File::create(&responses).unwrap();
    for i in 0..200 {
        writeln!(file, r#"{{"type":"tool_call","tool_name":"calculator","arguments":{{"left":{i},"operation":"add","right":1}}}}"#).unwrap();
    }
    writeln!(file, r#"{{"type":"finish","answer":"done"}}"#).unwrap();
    drop(file);
    let children: Vec<_> = (0..8)
        .map(|i| {
            crate::support::looptrace()
                .args([
                    "run",
                    "--task",
                    "t",
                    "--max-steps",
                    "201",
                    "--capture",
                    "full",
                    "--run-id",
                ])
                .arg(format!("p{i}"))
                .arg("--responses")
                .arg(&responses)
                .arg("--trace")
                .arg(&trace)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let contents = read_trace(&trace, ReadOptions::default()).unwrap();
    assert_eq!(contents.runs.len(), 8);
    for run in &contents.runs {
        assert_eq!(run.events.len(), 1 + 200 * 2 + 2, "{}", run.run_id);
        assert_eq!(run.outcome(), RunOutcome::Ended(ExitReason::Finished));
    }
}

#[test]
fn show_prints_runs_with_their_outcomes() {
    let output = run(&[
        "show",
        sample("multi_run.jsonl").to_str().unwrap(),
        "--run",
        "multi-c",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("run multi-c (4 events)\n"), "{text}");
    assert!(text.contains("model_feedback  invalid_json"), "{text}");
    assert!(
        text.ends_with("  outcome: invalid_model_output after 2 steps\n"),
        "{text}"
    );

    let output = run(&["show", sample("incomplete.jsonl").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).ends_with("  outcome: incomplete\n"));
    assert!(
        stderr(&output).contains("incomplete.jsonl:4: the last line is cut off"),
        "{}",
        stderr(&output)
    );

    let output = run(&[
        "show",
        sample("finished.full.jsonl").to_str().unwrap(),
        "--format",
        "json",
    ]);
    let shown = stdout(&output);
    let original = std::fs::read_to_string(sample("finished.full.jsonl")).unwrap();
    assert_eq!(
        shown.lines().collect::<Vec<_>>(),
        original.lines().collect::<Vec<_>>()
    );
}

#[test]
fn show_reports_bad_input_with_exit_2() {
    let output = run(&["show", "missing.jsonl"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).starts_with("error: failed to read `missing.jsonl`: "));
    let output = run(&[
        "show",
        sample("finished.full.jsonl").to_str().unwrap(),
        "--run",
        "nope",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "error: no run \"nope\" in `".to_owned()
            + sample("finished.full.jsonl").to_str().unwrap()
            + "` (it has \"finished-full\")\n"
    );
}

#[test]
fn show_works_on_a_read_only_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.jsonl");
    std::fs::copy(sample("finished.summary.jsonl"), &path).unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&path, perms).unwrap();
    let output = run(&["show", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn every_sample_trace_matches_the_schema() {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/trace-event.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut checked = 0;
    for entry in
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces")).unwrap()
    {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
                assert!(
                    path.ends_with("incomplete.jsonl"),
                    "{}:{}",
                    path.display(),
                    i + 1
                );
                continue;
            };
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| e.to_string())
                .collect();
            assert!(
                errors.is_empty(),
                "{}:{}: {errors:?}",
                path.display(),
                i + 1
            );
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} lines checked");
}

#[test]
fn a_reused_run_id_starts_a_new_run_after_the_old_one_ended() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    for _ in 0..2 {
        record_finished_run(&trace, "same");
    }
    let contents = read_trace(&trace, ReadOptions::default()).unwrap();
    let runs: Vec<(&str, usize)> = contents
        .runs
        .iter()
        .map(|r| (r.run_id.as_str(), r.events.len()))
        .collect();
    assert_eq!(runs, [("same", 5), ("same", 5)]);
}

#[test]
fn a_run_finished_without_an_exit_reason_is_malformed() {
    let text = "{\"run_id\":\"a\",\"step\":0,\"event_type\":\"run_started\"}\n{\"run_id\":\"a\",\"step\":1,\"event_type\":\"run_finished\"}\n";
    assert_eq!(
        read_str(text, ReadOptions::default()).unwrap_err(),
        "t.jsonl:2: run_finished without `exit_reason`"
    );
}

#[test]
fn show_never_sends_control_characters_from_a_trace_to_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("esc.jsonl");
    std::fs::write(
        &path,
        "{\"run_id\":\"a\\u001b[31m\",\"step\":1,\"event_type\":\"observation\",\"tool_name\":\"t\\u0007\",\"is_error\":true,\"error_kind\":\"k\\u001b\"}\n",
    )
    .unwrap();
    let output = run(&["show", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        !output.stdout.iter().any(|b| *b == 0x1b || *b == 0x07),
        "{}",
        stdout(&output)
    );
    assert!(
        stdout(&output).starts_with("run a\\u{1b}[31m (1 event)\n"),
        "{}",
        stdout(&output)
    );
}

/// Appends a finished run (the `finish.txt` responses) with this run id to `trace`.
fn record_finished_run(trace: &Path, run_id: &str) {
    let output = run(&[
        "run",
        "--task",
        "t",
        "--responses",
        fixture("responses/finish.txt").to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--run-id",
        run_id,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// Lines of `runs` runs of the sample with full capture, `open` of them cut before their ending,
/// written interleaved two at a time.
fn interleaved_corpus(runs: usize, open: usize) -> (String, Vec<String>) {
    let mut text = String::new();
    let mut ids = Vec::new();
    let mut pending: Vec<std::collections::VecDeque<String>> = Vec::new();
    for i in 0..runs {
        let id = format!("run-{i}");
        let mut lines: Vec<String> =
            record(&SAMPLE_RUNS[i % SAMPLE_RUNS.len()], &id, Capture::Full)
                .iter()
                .map(|e| serde_json::to_string(e).unwrap())
                .collect();
        if i < open {
            lines.truncate(2);
        }
        ids.push(id);
        pending.push(lines.into());
        // Two runs in flight: their lines alternate.
        if pending.len() == 2 || i + 1 == runs {
            while pending.iter().any(|p| !p.is_empty()) {
                for p in &mut pending {
                    if let Some(line) = p.pop_front() {
                        text.push_str(&line);
                        text.push('\n');
                    }
                }
            }
            pending.clear();
        }
    }
    (text, ids)
}

#[test]
fn the_run_stream_holds_open_runs_within_its_budget_and_reads_put_aside_runs_again() {
    use looptrace::trace::RunStream;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.jsonl");
    // 40 runs never end: a reader that kept them parsed would hold them all to the end.
    let (text, _) = interleaved_corpus(200, 40);
    std::fs::write(&path, &text).unwrap();
    let budget = 4096;
    let mut stream = RunStream::open(&path, ReadOptions::default())
        .unwrap()
        .with_budget(budget);
    let mut streamed = Vec::new();
    let mut largest_line = 0;
    for line in text.lines() {
        largest_line = largest_line.max(line.len() as u64);
    }
    while let Some(run) = stream.next() {
        assert!(
            stream.held_bytes() <= budget + largest_line,
            "{} bytes held",
            stream.held_bytes()
        );
        streamed.push(run.unwrap());
    }
    // The same runs as reading the whole file, events and lines included.
    let whole = read_trace(&path, ReadOptions::default()).unwrap();
    streamed.sort_by_key(|r| r.index);
    let runs: Vec<_> = streamed.iter().map(|r| r.run.clone()).collect();
    assert_eq!(runs, whole.runs);
    assert_eq!(
        whole
            .runs
            .iter()
            .filter(|r| r.outcome() == RunOutcome::Incomplete)
            .count(),
        40
    );
}

#[test]
fn show_prints_a_run_as_soon_as_it_ends_before_the_input_is_closed() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let (text, _) = interleaved_corpus(2, 0);
    let lines: Vec<&str> = text.lines().collect();
    // The first run ends before the second; hold back the rest of the second run.
    let first_end = lines
        .iter()
        .position(|l| l.contains("\"run_finished\""))
        .unwrap();
    let mut child = crate::support::looptrace()
        .args(["show", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    for line in &lines[..=first_end] {
        writeln!(input, "{line}").unwrap();
    }
    input.flush().unwrap();
    // Read until the first run's outcome while the input is still open; a reader that waits for
    // the end of its input never gets there (the watchdog then fails the test instead of hanging).
    let output = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        for line in BufReader::new(output).lines() {
            let line = line.unwrap();
            let done = line.starts_with("  outcome:");
            seen.push(line);
            if done {
                let _ = sender.send(seen.clone());
            }
        }
    });
    let first = receiver
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("show printed nothing while its input was open");
    assert!(first[0].starts_with("run run-0 "), "{first:?}");
    assert_eq!(first.last().unwrap(), "  outcome: finished after 2 steps");
    for line in &lines[first_end + 1..] {
        writeln!(input, "{line}").unwrap();
    }
    drop(input);
    let second = receiver
        .recv_timeout(std::time::Duration::from_secs(120))
        .unwrap();
    assert!(
        second.iter().any(|l| l.starts_with("run run-1 ")),
        "{second:?}"
    );
    assert!(child.wait().unwrap().success());
}

/// Characters that must never reach a terminal from a trace.
const UNSAFE: [char; 7] = [
    '\u{1b}', '\u{9b}', '\u{7}', '\r', '\u{8}', '\u{202e}', '\u{2066}',
];

fn assert_printable(what: &str, text: &str) {
    let found: Vec<char> = text.chars().filter(|c| UNSAFE.contains(c)).collect();
    assert!(found.is_empty(), "{what} printed {found:?}:\n{text}");
}

#[test]
fn suite_and_program_text_is_escaped_in_eval_merge_and_run_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let finish = json!({"actions": [{"type": "finish", "answer": "x"}]});
    let suite = json!({"name": "x", "tasks": [
        {"id": "a", "prompt": "p", "model": finish,
         "expect": {"tools_called": ["\u{1b}[32my"], "answer_regex": "^\u{1b}\\[35m$"}},
        {"id": "e", "prompt": "p", "model": finish, "scorers": [{"kind": "command",
         "name": "s\u{1b}[36m", "command": ["sh", "-c", "printf '\\033[31mbad\\a'; exit 1"]}]},
    ]});
    std::fs::write(dir.path().join("s.json"), suite.to_string()).unwrap();
    std::fs::write(
        dir.path().join("r.txt"),
        "{\"type\":\"finish\",\"answer\":\"a\\u001b[31mRED\\u0007\"}\n",
    )
    .unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (suite, out, responses) = (at("s.json"), at("o"), at("r.txt"));
    let results = format!("{out}/results.json");
    for args in [
        vec!["eval", &suite, "--out", &out],
        vec!["eval", &suite, "--out", &at("o2"), "--baseline", &results],
        vec!["merge", &results, "-o", &at("merged.json")],
        vec!["run", "--task", "t", "--responses", &responses],
    ] {
        let output = run(&args);
        assert!(
            output.status.code().is_some_and(|code| code < 2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_printable(&format!("{args:?} stdout"), &stdout(&output));
        assert_printable(&format!("{args:?} stderr"), &stderr(&output));
    }
    let ran = stdout(&run(&["run", "--task", "t", "--responses", &responses]));
    assert!(
        ran.contains("answer:      a\\u{1b}[31mRED\\u{7}\n"),
        "{ran}"
    );
}

#[test]
fn trace_text_with_escapes_and_bidi_overrides_is_escaped_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.jsonl");
    // Summary capture: the model chose the tool names; kinds and ids are as hostile.
    let evil_tool = "calc\u{1b}[31m\u{202e}|x\r\u{8}";
    let formula_tool = "=HYPERLINK(\"http://x\")";
    let lines = [
        json!({"run_id": "r\u{1b}]0;t\u{7}", "step": 0, "event_type": "run_started", "capture": "summary", "input_summary": "chars=1;sha256=00"}),
        json!({"run_id": "r\u{1b}]0;t\u{7}", "step": 1, "event_type": "model_action", "action_type": "tool_call", "tool_name": evil_tool, "argument_keys": ["a\u{9b}2J"]}),
        json!({"run_id": "r\u{1b}]0;t\u{7}", "step": 1, "event_type": "observation", "tool_name": evil_tool, "output": "chars=1;sha256=00", "is_error": true, "error_kind": "k\u{9b}2J\u{2066}"}),
        json!({"run_id": "r\u{1b}]0;t\u{7}", "step": 2, "event_type": "model_action", "action_type": "tool_call", "tool_name": formula_tool, "argument_keys": []}),
        json!({"run_id": "r\u{1b}]0;t\u{7}", "step": 2, "event_type": "observation", "tool_name": formula_tool, "output": "chars=1;sha256=00", "is_error": false}),
        json!({"run_id": "r\u{1b}]0;t\u{7}", "step": 2, "event_type": "run_finished", "exit_reason": "internal_error", "steps_used": 2, "error_kind": "e\u{1b}[2J"}),
        json!({"run_id": "u", "step": 0, "event_type": "x\u{1b}[5m"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, &text).unwrap();
    let path = path.to_str().unwrap();

    for args in [
        vec!["show", path],
        vec!["show", path, "--run", "nope\u{1b}[1m"],
        vec!["report", path],
        vec!["report", path, "--format", "markdown"],
        vec!["report", path, "--format", "csv"],
    ] {
        let output = run(&args);
        assert_printable(&format!("{args:?} stdout"), &stdout(&output));
        assert_printable(&format!("{args:?} stderr"), &stderr(&output));
    }
    let shown = stdout(&run(&["show", path]));
    assert!(
        shown.contains("calc\\u{1b}[31m\\u{202e}|x\\r\\u{8}"),
        "{shown}"
    );
    assert!(shown.contains("error_kind=e\\u{1b}[2J"), "{shown}");
    let markdown = stdout(&run(&["report", path, "--format", "markdown"]));
    assert!(markdown.contains("\\u{202e}\\|x"), "{markdown}");
    let csv = stdout(&run(&["report", path, "--format", "csv"]));
    assert!(csv.contains("'=HYPERLINK"), "{csv}");
    assert!(!csv.contains(",=HYPERLINK"), "{csv}");
    // Markup in a tool name stays text in Markdown: no image loads from a report in a PR comment.
    let markup = text.replace(formula_tool.replace('"', "\\\"").as_str(), "<img src=x>");
    std::fs::write(path, markup).unwrap();
    let markdown = stdout(&run(&["report", path, "--format", "markdown"]));
    assert!(markdown.contains("&lt;img src=x&gt;"), "{markdown}");
    assert!(!markdown.contains("<img"), "{markdown}");
}

#[test]
fn eval_reports_keep_suite_text_out_of_markup_and_formulas() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    let answer = "<img src=\"https://example.invalid/x.png\"><details open><summary>ALL PASSED";
    std::fs::write(
        &suite,
        json!({"name": "<b>suite</b>", "tasks": [
            {"id": "-2-3", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": answer}]},
             "expect": {"answer": "ok"}}
        ]})
        .to_string(),
    )
    .unwrap();
    let out = dir.path().join("out");
    let eval = |format: &str| {
        let output = looptrace()
            .arg("eval")
            .arg(&suite)
            .arg("--out")
            .arg(&out)
            .args(["--capture", "full", "--format", format])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        stdout(&output)
    };
    let markdown = eval("markdown");
    assert!(!markdown.contains('<'), "{markdown}");
    assert!(markdown.contains("&lt;details open&gt;"), "{markdown}");
    assert!(markdown.contains("&lt;b&gt;suite&lt;/b&gt;"), "{markdown}");
    let csv = eval("csv");
    assert!(csv.contains("failed_task,'-2-3,"), "{csv}");
    assert!(!csv.contains(",-2-3"), "{csv}");
}

#[test]
fn replay_text_check_and_errors_escape_run_ids_from_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.full.jsonl");
    let text = std::fs::read_to_string(sample("finished.full.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let id = first["run_id"].as_str().unwrap();
    let text = text.replace(&format!("\"{id}\""), "\"r\\u001b[31m\\u202e\"");
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap();
    for args in [
        vec!["replay", path],
        vec!["replay", path, "--check"],
        vec!["replay", path, "--max-steps", "1"],
        vec!["replay", path, "--run", "x\u{1b}[2J"],
    ] {
        let output = run(&args);
        assert_printable(&format!("{args:?} stdout"), &stdout(&output));
        assert_printable(&format!("{args:?} stderr"), &stderr(&output));
    }
    let replayed = stdout(&run(&["replay", path]));
    assert!(
        replayed.starts_with("r\\u{1b}[31m\\u{202e}: faithful"),
        "{replayed}"
    );
}

/// `show -f json` writes each run's events as serde_json writes them, one line each, runs in the
/// order they end, every file after the one before: byte for byte, with no line lost at the end.
#[test]
fn show_json_is_each_event_as_serde_writes_it() {
    let files = [
        "multi_run.jsonl",
        "finished.full.jsonl",
        "incomplete.jsonl",
        "writeup.jsonl",
    ];
    let mut expected = String::new();
    for name in files {
        let stream =
            looptrace::trace::RunStream::open(&sample(name), ReadOptions::default()).unwrap();
        for streamed in stream {
            for (_, event) in &streamed.unwrap().run.events {
                expected.push_str(&serde_json::to_string(event).unwrap());
                expected.push('\n');
            }
        }
    }
    let paths: Vec<String> = files
        .iter()
        .map(|name| sample(name).display().to_string())
        .collect();
    let mut args = vec!["show", "-f", "json"];
    args.extend(paths.iter().map(String::as_str));
    let output = run(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(expected.lines().count() > 20);
    assert_eq!(stdout(&output), expected);
}

#[test]
fn a_run_read_again_in_stretches_is_the_run_the_stream_gave() {
    use looptrace::trace::{RunStream, read_run_at, read_run_within};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.jsonl");
    let (mut text, _) = interleaved_corpus(60, 5);
    // A long line of a run of its own between two lines of the first run: read apart, not across.
    let first_line_end = text.find('\n').unwrap() + 1;
    let wide = json!({"run_id": "wide", "step": 0, "event_type": "run_started", "task": "x".repeat(20_000)});
    text.insert_str(first_line_end, &format!("{wide}\n\n"));
    std::fs::write(&path, &text).unwrap();
    let mut runs = 0;
    for run in RunStream::open(&path, ReadOptions::default()).unwrap() {
        let run = run.unwrap();
        let again = read_run_within(&path, &run.run.run_id, &run.spans).unwrap();
        assert_eq!(again, run.run);
        assert_eq!(
            again,
            read_run_at(&path, &run.run.run_id, &run.spans).unwrap()
        );
        runs += 1;
    }
    assert_eq!(runs, 61);
    // Another run's lines where the run was: refused, naming the line.
    let first = RunStream::open(&path, ReadOptions::default())
        .unwrap()
        .find_map(|run| run.ok().filter(|run| run.run.run_id == "run-0"))
        .unwrap();
    let err = read_run_within(&path, "run-1", &first.spans).unwrap_err();
    assert!(
        err.ends_with(":1: the line changed while the file was being read"),
        "{err}"
    );
}
