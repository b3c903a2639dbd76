//! Writes a large synthetic full-capture JSONL trace for benchmarking the streaming readers
//! (`show`, `replay`, `eval --traces`).
//!
//! `cargo run --release --example gen_full_traces -- OUTPUT SIZE SEED`, where SIZE is a byte count
//! (`1073741824`, `512M`, `1G`). The same SIZE and SEED always give the same file. Every run is
//! recorded by the real loop with full capture (so it replays faithfully with `--tools recorded`):
//! tasks of up to 4 KB, up to eight tool calls per run, calculator calls and calls of a `read_file`
//! tool that is not built in (2 to 16 KB of recorded content each), tool errors, budget
//! exhaustion: about 22 KB per run on average. Eight runs are written interleaved at
//! any time, and 5% of the runs are cut off before their ending (left incomplete).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use looptrace::agent::{RunOptions, run_agent_result};
use looptrace::model::ScriptPlayer;
use looptrace::run::{Action, Finish, Observation, Task, ToolCall};
use looptrace::tools::{ToolOutcome, ToolPanic, ToolRegistry, ToolRuntime};
use looptrace::trace::{Capture, Event, RecorderOptions, Summarizer, TraceRecorder};
use serde_json::{Map, Value, json};

/// How many runs are open (interleaved) at any time.
const OPEN_RUNS: usize = 8;

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

const WORDS: &[&str] = &[
    "the", "agent", "reads", "file", "config", "value", "returns", "error", "check", "budget",
    "tool", "model", "step", "line", "trace", "output", "answer", "compute", "sum", "total",
];

fn text(rng: &mut Rng, chars: u64) -> String {
    let mut out = String::new();
    while (out.len() as u64) < chars {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(rng.pick(WORDS));
    }
    out
}

/// The built-in calculator plus a `read_file` tool whose content is the `content` argument's
/// length in generated text (so recorded observations are long).
struct Tools {
    builtin: ToolRegistry,
}

impl ToolRuntime for Tools {
    fn execute(&self, call: &ToolCall) -> Result<ToolOutcome, ToolPanic> {
        if call.tool_name != "read_file" {
            return self.builtin.execute(call);
        }
        let seed = call
            .arguments
            .get("seed")
            .and_then(Value::as_u64)
            .unwrap_or(1);
        let mut rng = Rng(seed);
        let size = 2000 + rng.below(14000);
        Ok(ToolOutcome {
            observation: Observation {
                tool_name: call.tool_name.clone(),
                content: text(&mut rng, size),
                is_error: false,
            },
            error_kind: None,
            exit_status: None,
            lossy: false,
        })
    }
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Records one run and returns its lines.
fn one_run(rng: &mut Rng, tools: &Tools, run_id: &str) -> Vec<String> {
    let prompt_chars = 500 + rng.below(3500);
    let prompt = text(rng, prompt_chars);
    let calls = rng.below(9);
    let mut actions = Vec::new();
    for _ in 0..calls {
        if rng.chance(50) {
            actions.push(Action::ToolCall(ToolCall::new(
                "read_file",
                args(json!({"path": format!("src/{}.rs", rng.below(1000)), "seed": rng.next()})),
            )));
        } else {
            let right = if rng.chance(10) {
                0
            } else {
                1 + rng.below(100)
            };
            actions.push(Action::ToolCall(ToolCall::new(
                "calculator",
                args(json!({"left": rng.below(1000), "operation": "divide", "right": right})),
            )));
        }
    }
    // One run in ten never finishes and exhausts its budget.
    let max_steps = if rng.chance(10) {
        calls.max(1) as u32
    } else {
        calls as u32 + 1
    };
    let answer_chars = 100 + rng.below(900);
    actions.push(Action::Finish(Finish {
        answer: text(rng, answer_chars),
    }));
    let options = RecorderOptions {
        capture: Capture::Full,
        summarizer: Summarizer::sha256(),
        durations: false,
        replay_of: None,
    };
    let mut events: Vec<Event> = Vec::new();
    let mut recorder = TraceRecorder::new(run_id, options, &mut events);
    let mut model = ScriptPlayer::new(actions.as_slice());
    let _ = run_agent_result(
        &Task::new(prompt),
        &mut model,
        tools,
        RunOptions { max_steps },
        &mut recorder,
    );
    let mut lines: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap_or_default())
        .collect();
    if rng.chance(5) {
        // Cut off: the process died before the ending, maybe earlier.
        let keep = 1 + rng.below(lines.len() as u64 - 1) as usize;
        lines.truncate(keep);
    }
    lines
}

fn parse_size(text: &str) -> Option<u64> {
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let factor = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(factor)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(size), Some(seed)) = (
        args.first(),
        args.get(1).and_then(|t| parse_size(t)),
        args.get(2).and_then(|t| t.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: gen_full_traces OUTPUT SIZE SEED (SIZE: bytes, or 512M, 1G)");
        return ExitCode::from(2);
    };
    let file = match File::create(path) {
        Ok(file) => file,
        Err(err) => {
            eprintln!("failed to create `{path}`: {err}");
            return ExitCode::from(2);
        }
    };
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut rng = Rng(seed);
    let tools = Tools {
        builtin: ToolRegistry::builtin(),
    };
    let mut open: Vec<VecDeque<String>> = Vec::new();
    let mut written = 0u64;
    let mut runs = 0u64;
    loop {
        while written < size && open.len() < OPEN_RUNS {
            runs += 1;
            let id = format!("run-{seed}-{runs}");
            open.push(one_run(&mut rng, &tools, &id).into());
        }
        if open.is_empty() {
            break;
        }
        let i = rng.below(open.len() as u64) as usize;
        if let Some(line) = open[i].pop_front() {
            written += line.len() as u64 + 1;
            if writeln!(out, "{line}").is_err() {
                eprintln!("failed to write `{path}`");
                return ExitCode::from(3);
            }
        }
        if open[i].is_empty() {
            open.swap_remove(i);
        }
    }
    if out.flush().is_err() {
        eprintln!("failed to write `{path}`");
        return ExitCode::from(3);
    }
    eprintln!("{path}: {written} bytes, {runs} runs");
    ExitCode::SUCCESS
}
