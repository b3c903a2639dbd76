//! The check against real trajectories: every file listed in every `EXPECTED.json` under
//! `../shared/real-traces` is imported and compared with the ground truth per run (exit reason
//! and tool calls) and per file (runs). Prints one table row per file; any mismatch fails.
//! Run by `.ci/run`; where the folder is missing it prints one `SKIP` line.

use std::path::Path;

use looptrace::import::{self, Imported, ImportedRun};
use serde_json::Value;

/// What one run is expected to be.
struct Expected {
    exit_reason: String,
    tool_calls: Option<u64>,
}

fn exit_reason(run: &ImportedRun) -> String {
    run.ending
        .as_ref()
        .map_or("incomplete", |ending| ending.exit_reason.as_str())
        .to_owned()
}

/// The expected runs of one listed file: `run_list` for traces, `exit_reasons` counts for batch
/// summaries (whose runs carry no tool calls).
fn expected_runs(entry: &Value) -> Vec<Expected> {
    if let Some(list) = entry.get("run_list").and_then(Value::as_array) {
        return list
            .iter()
            .map(|run| Expected {
                exit_reason: run["exit_reason"].as_str().unwrap_or("").to_owned(),
                tool_calls: run["tool_calls"].as_u64(),
            })
            .collect();
    }
    let mut runs = Vec::new();
    if let Some(counts) = entry.get("exit_reasons").and_then(Value::as_object) {
        for (reason, count) in counts {
            for _ in 0..count.as_u64().unwrap_or(0) {
                runs.push(Expected {
                    exit_reason: reason.clone(),
                    tool_calls: Some(0),
                });
            }
        }
    }
    runs
}

/// Compares one file; returns its table row and whether it matched.
fn check_file(source: &Path, entry: &Value) -> (String, bool) {
    let file = entry["file"].as_str().unwrap_or("");
    let path = source.join(file);
    let expected = expected_runs(entry);
    let mut runs = Vec::new();
    let imported = import::import_path(&path, None, &mut |item| {
        if let Imported::Run(run) = item {
            runs.push(run);
        }
        Ok(())
    });
    let short: String = file
        .rsplit('/')
        .next()
        .unwrap_or(file)
        .chars()
        .take(48)
        .collect();
    let format = match &imported {
        Ok(importer) => importer.name().to_owned(),
        Err(err) => return (format!("{short:<48} error: {err}"), false),
    };
    let mut problems = Vec::new();
    let listed = entry.get("runs").and_then(Value::as_u64);
    if listed.is_some_and(|n| n != runs.len() as u64) || expected.len() != runs.len() {
        problems.push(format!("runs {} != {}", runs.len(), expected.len()));
    }
    let mut got: Vec<(String, u64)> = runs
        .iter()
        .map(|run| (exit_reason(run), run.tool_calls() as u64))
        .collect();
    let mut want: Vec<(String, u64)> = expected
        .iter()
        .zip(&got)
        .map(|(e, g)| (e.exit_reason.clone(), e.tool_calls.unwrap_or(g.1)))
        .collect();
    if entry.get("run_list").is_none() {
        got.sort();
        want.sort();
    }
    for (index, (g, w)) in got.iter().zip(&want).enumerate() {
        if g != w {
            problems.push(format!(
                "run {}: {} with {} tool calls, expected {} with {}",
                index + 1,
                g.0,
                g.1,
                w.0,
                w.1
            ));
        }
    }
    let ok = problems.is_empty();
    let endings: Vec<&str> = got.iter().map(|(reason, _)| reason.as_str()).collect();
    let summary = summarize(&endings);
    let calls: u64 = got.iter().map(|(_, calls)| calls).sum();
    let row = format!(
        "{short:<48} {format:<14} {:>5} {calls:>6}  {summary:<28} {}",
        runs.len(),
        if ok {
            "ok".to_owned()
        } else {
            problems.join("; ")
        }
    );
    (row, ok)
}

fn summarize(endings: &[&str]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for ending in endings {
        match counts.iter_mut().find(|(name, _)| name == ending) {
            Some((_, n)) => *n += 1,
            None => counts.push((ending, 1)),
        }
    }
    counts
        .iter()
        .map(|(name, n)| format!("{name}={n}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
#[ignore = "run by .ci/run with --ignored: reads ../shared/real-traces"]
fn real_traces_match_their_ground_truth() {
    let Some(sources) = crate::support::real_trace_sources("real-traces check") else {
        return;
    };
    let mut failures = 0;
    let mut files = 0;
    println!(
        "{:<48} {:<14} {:>5} {:>6}  {:<28} result",
        "file", "format", "runs", "calls", "endings"
    );
    for source in sources {
        let text = std::fs::read_to_string(source.join("EXPECTED.json")).expect("read EXPECTED");
        let expected: Value = serde_json::from_str(&text).expect("parse EXPECTED");
        let listed = ["files", "batch_summaries"]
            .iter()
            .filter_map(|key| expected.get(*key).and_then(Value::as_array))
            .flatten();
        for entry in listed {
            let (row, ok) = check_file(&source, entry);
            println!("{row}");
            files += 1;
            if !ok {
                failures += 1;
            }
        }
    }
    println!("{files} files, {failures} mismatched");
    assert_eq!(
        failures, 0,
        "{failures} of {files} real trace files do not match EXPECTED.json"
    );
}
