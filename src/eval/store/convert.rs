//! Converting an output folder of results format 1 (`results.json` beside `traces/` or
//! `traces.jsonl`, rewritten in place) into a run store: one sealed run holding its rows and
//! copies of their traces, so `--resume`, `--rerun-failed` and `gc` work on it.

use std::collections::HashSet;
use std::path::Path;

use super::copy::copy_new;
use super::run_folder::{
    RunFolder, RunFormat, RunHeader, RunKind, Seal, StoreError, io_error, is_inside, is_run_id,
    malformed,
};
use crate::eval::{RESULTS_FORMAT_V1, TraceLayout, read_results};

/// Converts `dir/results.json` (format 1) into the run `runs/<its eval id>/`; returns the id.
pub fn convert_v1(dir: &Path) -> Result<String, StoreError> {
    let path = dir.join(super::RESULTS_NAME);
    let bad = |what, message| malformed(&path, 1, what, message);
    let results = read_results(&path).map_err(|e| bad("results to convert", e))?;
    if results.format != RESULTS_FORMAT_V1 {
        let message = format!("it is {:?} and `runs/` holds no run", results.format);
        return Err(bad("results format 1", message));
    }
    let id = (results.eval_id.clone())
        .filter(|id| is_run_id(id))
        .unwrap_or_else(crate::run::unique_token);
    let mut seen = HashSet::new();
    let tasks: Vec<String> = (results.tasks.iter())
        .filter(|row| seen.insert(row.id.as_str()))
        .map(|row| row.id.clone())
        .collect();
    let layout = TraceLayout::of_rows(&results.tasks);
    let header = RunHeader {
        format: RunFormat::V1,
        eval_id: id.clone(),
        looptrace_version: results.looptrace_version.clone(),
        created_at: results.created_at.clone(),
        kind: RunKind::Eval,
        parents: Vec::new(),
        suite: results.suite.clone(),
        capture: results.capture,
        repeats: results.repeats.unwrap_or(1),
        adaptive: results.adaptive.clone(),
        trace_layout: layout.as_str().to_owned(),
        shard: results.shard,
        models: Vec::new(),
        selection: results.selection.clone(),
        tasks,
    };
    let run = RunFolder::create(dir, &header)?;
    // The traces are where the layout puts them: its folder or file is copied whole.
    let (from, to) = (layout.root(dir), layout.root(&run.dir));
    if from.exists() {
        copy_new(&from, &to).map_err(io_error("copy", &from))?;
    }
    for mut row in results.tasks {
        // Only traces inside the folder are named.
        let trace = row.trace.filter(|trace| is_inside(trace));
        row.trace = trace.map(|trace| format!("runs/{id}/{trace}"));
        row.carried_over = false;
        run.append(&row)?;
    }
    run.seal(&Seal {
        sealed: true,
        interrupted: results.interrupted,
        not_reached: results.not_reached,
    })?;
    Ok(id)
}
