//! Trace writer throughput: appends realistic summary-capture events to a file with the same
//! writer `looptrace run` and `eval` use (file kept open, one `write` per line), and, for
//! comparison, the write-up's way (reopen the file for every event).
//!
//! `cargo run --release --example trace_write -- [EVENTS] [DIR]`

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use looptrace::run::ExitReason;
use looptrace::trace::{
    Capture, EventType, HashAlgorithm, SCHEMA, Summarizer, TraceEvent, TraceWriter,
};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let events: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "bench/out".to_owned()));
    std::fs::create_dir_all(&dir)?;
    let run = sample_run();

    let path = dir.join("writer.jsonl");
    let _ = std::fs::remove_file(&path);
    let mut writer = TraceWriter::append(&path, false)?;
    let started = Instant::now();
    for i in 0..events {
        writer.write_event(&run[i % run.len()])?;
    }
    let open_rate = events as f64 / started.elapsed().as_secs_f64();
    drop(writer);

    // The write-up's writer reopens the file for every event; fewer events keep this short.
    let reopen_events = (events / 10).max(1);
    let path = dir.join("reopen.jsonl");
    let _ = std::fs::remove_file(&path);
    let started = Instant::now();
    for i in 0..reopen_events {
        let mut file = OpenOptions::new().append(true).create(true).open(&path)?;
        let mut line = serde_json::to_vec(&run[i % run.len()])?;
        line.push(b'\n');
        file.write_all(&line)?;
    }
    let reopen_rate = reopen_events as f64 / started.elapsed().as_secs_f64();

    println!("kept open:       {open_rate:>12.0} events/s ({events} events)");
    println!("reopen per event: {reopen_rate:>11.0} events/s ({reopen_events} events)");
    println!("ratio:            {:>11.1}x", open_rate / reopen_rate);
    Ok(())
}

/// The five events of a finished run with summary capture.
fn sample_run() -> Vec<TraceEvent> {
    let s = Summarizer::sha256();
    let mut started = TraceEvent::new("run-bench-0001", 0, EventType::RunStarted);
    started.schema = Some(SCHEMA.to_owned());
    started.capture = Some(Capture::Summary);
    started.hash = Some(HashAlgorithm::Sha256);
    started.max_steps = Some(5);
    started.input_summary = Some(s.summarize("compute 12 × 7 and say whether it exceeds 80"));
    let mut call = TraceEvent::new("run-bench-0001", 1, EventType::ModelAction);
    call.action_type = Some("tool_call".to_owned());
    call.tool_name = Some("calculator".to_owned());
    call.argument_keys = Some(vec![
        "left".to_owned(),
        "operation".to_owned(),
        "right".to_owned(),
    ]);
    call.duration_ms = Some(0.012);
    let mut observation = TraceEvent::new("run-bench-0001", 1, EventType::Observation);
    observation.tool_name = Some("calculator".to_owned());
    observation.output = Some(s.summarize("84"));
    observation.is_error = Some(false);
    observation.duration_ms = Some(0.004);
    let mut finish = TraceEvent::new("run-bench-0001", 2, EventType::ModelAction);
    finish.action_type = Some("finish".to_owned());
    finish.output = Some(s.summarize("12 * 7 = 84, and 84 is greater than 80."));
    let mut finished = TraceEvent::new("run-bench-0001", 2, EventType::RunFinished);
    finished.exit_reason = Some(ExitReason::Finished);
    finished.steps_used = Some(2);
    vec![started, call, observation, finish, finished]
}
