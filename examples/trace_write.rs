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
    Capture, Event, HashAlgorithm, ModelAction, Observation, RunFinished, RunStarted, SCHEMA,
    Summarizer, TraceWriter,
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
fn sample_run() -> Vec<Event> {
    let s = Summarizer::sha256();
    let started = RunStarted {
        schema: Some(SCHEMA.to_owned()),
        capture: Some(Capture::Summary),
        hash: Some(HashAlgorithm::Sha256),
        max_steps: Some(5),
        input_summary: Some(s.summarize("compute 12 × 7 and say whether it exceeds 80")),
        ..RunStarted::default()
    };
    let call = ModelAction {
        action_type: Some("tool_call".to_owned()),
        tool_name: Some("calculator".to_owned()),
        argument_keys: Some(vec![
            "left".to_owned(),
            "operation".to_owned(),
            "right".to_owned(),
        ]),
        duration_ms: Some(0.012),
        ..ModelAction::default()
    };
    let observation = Observation {
        tool_name: Some("calculator".to_owned()),
        output: Some(s.summarize("84")),
        is_error: Some(false),
        duration_ms: Some(0.004),
        ..Observation::default()
    };
    let finish = ModelAction {
        action_type: Some("finish".to_owned()),
        output: Some(s.summarize("12 * 7 = 84, and 84 is greater than 80.")),
        ..ModelAction::default()
    };
    let finished = RunFinished {
        steps_used: Some(2),
        ..RunFinished::new(ExitReason::Finished)
    };
    let id = "run-bench-0001";
    vec![
        Event::new(id, 0, started),
        Event::new(id, 1, call),
        Event::new(id, 1, observation),
        Event::new(id, 2, finish),
        Event::new(id, 2, finished),
    ]
}
