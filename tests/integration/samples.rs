//! `sample_traces/` is recorded by looptrace itself. This test regenerates every sample in memory
//! and checks the checked-in files are up to date; `LOOPTRACE_BLESS=1 cargo test samples` rewrites
//! them.

use std::collections::BTreeMap;
use std::path::Path;

use looptrace::agent::{RunOptions, run_agent_result, run_agent_with_gate};
use looptrace::gate::{CommandGate, CommandGateConfig};
use looptrace::model::{JsonModelAdapter, ScriptedRawModel};
use looptrace::run::Task;
use looptrace::tools::ToolRegistry;
use looptrace::trace::{Capture, Event, RecorderOptions, Summarizer, TraceRecorder};

/// One recorded sample run: its name, task, budget and raw model responses.
pub struct SampleRun {
    pub name: &'static str,
    pub task: &'static str,
    pub max_steps: u32,
    pub responses: &'static [&'static str],
}

/// The runs behind the per-exit-reason samples.
pub const SAMPLE_RUNS: &[SampleRun] = &[
    SampleRun {
        name: "finished",
        task: "compute 12 × 7 and say whether it exceeds 80",
        max_steps: 5,
        responses: &[
            r#"{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}"#,
            r#"{"type":"finish","answer":"12 * 7 = 84，84大于80。"}"#,
        ],
    },
    SampleRun {
        name: "max_steps_exceeded",
        task: "add numbers until told to stop",
        max_steps: 3,
        responses: &[
            r#"{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":1}}"#,
            r#"{"type":"tool_call","tool_name":"search","arguments":{"query":"what comes after 2"}}"#,
            r#"{"type":"tool_call","tool_name":"calculator","arguments":{"left":2,"operation":"divide","right":0}}"#,
        ],
    },
    SampleRun {
        name: "invalid_model_output",
        task: "compute 6 × 7",
        max_steps: 2,
        responses: &["I think the answer is 42.", r#"{"type":"finish"}"#],
    },
    SampleRun {
        name: "internal_error",
        task: "compute 2 + 2, then check the result",
        max_steps: 5,
        responses: &[
            r#"{"type":"tool_call","tool_name":"calculator","arguments":{"left":2,"operation":"add","right":2}}"#,
        ],
    },
];

/// Records one sample run with deterministic settings: fixed run id, plain SHA-256, no durations.
pub fn record(run: &SampleRun, run_id: &str, capture: Capture) -> Vec<Event> {
    let mut events = Vec::new();
    let options = RecorderOptions {
        capture,
        summarizer: Summarizer::sha256(),
        durations: false,
        replay_of: None,
    };
    let mut recorder = TraceRecorder::new(run_id, options, &mut events);
    let responses = run.responses.iter().map(|r| r.to_string()).collect();
    let mut model = JsonModelAdapter::new(ScriptedRawModel::new(responses));
    let _ = run_agent_result(
        &Task::new(run.task),
        &mut model,
        &ToolRegistry::builtin(),
        RunOptions {
            max_steps: run.max_steps,
        },
        &mut recorder,
    );
    events
}

fn jsonl(events: &[Event]) -> String {
    events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect()
}

/// The write-up's five example lines, verbatim.
pub const WRITEUP_LINES: &str = r#"{"run_id":"r1","step":0,"event_type":"run_started","input_summary":"chars=18;sha256=..."}
{"run_id":"r1","step":1,"event_type":"model_action","action_type":"tool_call","tool_name":"calculator","argument_keys":["left","operation","right"]}
{"run_id":"r1","step":1,"event_type":"observation","output":"chars=2;sha256=...","is_error":false}
{"run_id":"r1","step":2,"event_type":"model_action","action_type":"finish","output":"chars=22;sha256=..."}
{"run_id":"r1","step":2,"event_type":"run_finished","exit_reason":"finished"}
"#;

/// Every sample file and its expected contents.
pub fn expected_samples() -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for run in SAMPLE_RUNS {
        for capture in [Capture::Summary, Capture::Full] {
            let run_id = format!("{}-{}", run.name, capture.as_str());
            let name = format!("{}.{}.jsonl", run.name, capture.as_str());
            files.insert(name, jsonl(&record(run, &run_id, capture)));
        }
    }
    // Several runs in one file, two of them interleaved as concurrent appenders leave them.
    let a = record(&SAMPLE_RUNS[0], "multi-a", Capture::Full);
    let b = record(&SAMPLE_RUNS[1], "multi-b", Capture::Full);
    let c = record(&SAMPLE_RUNS[2], "multi-c", Capture::Full);
    let mut interleaved = Vec::new();
    let (mut ia, mut ib) = (a.iter(), b.iter());
    loop {
        match (ia.next(), ib.next()) {
            (None, None) => break,
            (x, y) => interleaved.extend(x.into_iter().chain(y).cloned()),
        }
    }
    interleaved.extend(c);
    files.insert("multi_run.jsonl".to_owned(), jsonl(&interleaved));
    // A run whose process died: three complete lines, then half of the fourth.
    let cut = jsonl(&record(&SAMPLE_RUNS[1], "cut-off", Capture::Full));
    let lines: Vec<&str> = cut.lines().collect();
    let mut incomplete: String = lines[..3].iter().map(|l| format!("{l}\n")).collect();
    incomplete.push_str(&lines[3][..lines[3].len() / 2]);
    files.insert("incomplete.jsonl".to_owned(), incomplete);
    files.insert("writeup.jsonl".to_owned(), WRITEUP_LINES.to_owned());
    files.insert("finish_gate.full.jsonl".to_owned(), jsonl(&record_gated()));
    files
}

/// The calculator task checked by the sample suite's `sh` finish gate, which rejects the first
/// answer (it does not say whether 84 exceeds 80) and accepts the second.
fn record_gated() -> Vec<Event> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
    let config = CommandGateConfig::new(vec!["sh".to_owned(), "check_answer.sh".to_owned()]);
    let mut gate = CommandGate::new(config).in_dir(dir);
    let responses = [
        r#"{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}"#,
        r#"{"type":"finish","answer":"12 * 7 = 84"}"#,
        r#"{"type":"finish","answer":"12 * 7 = 84, and 84 is greater than 80."}"#,
    ];
    let mut events = Vec::new();
    let options = RecorderOptions {
        capture: Capture::Full,
        summarizer: Summarizer::sha256(),
        durations: false,
        replay_of: None,
    };
    let mut recorder = TraceRecorder::new("finish-gate-full", options, &mut events);
    let mut model = JsonModelAdapter::new(ScriptedRawModel::new(
        responses.iter().map(|r| r.to_string()).collect(),
    ));
    let _ = run_agent_with_gate(
        &Task::new(SAMPLE_RUNS[0].task),
        &mut model,
        &ToolRegistry::builtin(),
        Some(&mut gate),
        RunOptions { max_steps: 5 },
        &mut recorder,
    );
    events
}

#[test]
fn sample_traces_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces");
    let bless = std::env::var_os("LOOPTRACE_BLESS").is_some();
    for (name, contents) in expected_samples() {
        let path = dir.join(&name);
        if bless {
            std::fs::write(&path, &contents).unwrap();
            continue;
        }
        let actual = std::fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "{}: {err}; run LOOPTRACE_BLESS=1 cargo test samples",
                path.display()
            )
        });
        assert_eq!(
            actual, contents,
            "{name} is stale: run LOOPTRACE_BLESS=1 cargo test samples"
        );
    }
}
