//! Converting an output folder of results format 1 (`results.json` beside `traces/` or
//! `traces.jsonl`, rewritten in place) into a run store: one sealed run holding its rows and
//! copies of their traces, so `--resume`, `--rerun-failed` and `gc` work on it.

use std::collections::HashSet;
use std::path::Path;

use super::copy::copy_file_new;
use super::run_folder::{RUN_FORMAT, RunFolder, RunHeader, RunKind, Seal, StoreError};
use crate::eval::{RESULTS_FORMAT_V1, TaskResult, read_results};

/// Converts `dir/results.json` (format 1) into the run `runs/<its eval id>/`; returns the id.
pub fn convert_v1(dir: &Path) -> Result<String, StoreError> {
    let path = dir.join("results.json");
    let results = read_results(&path).map_err(|message| StoreError::Malformed {
        path: path.clone(),
        line: 1,
        what: "results to convert",
        message,
    })?;
    if results.format != RESULTS_FORMAT_V1 {
        return Err(StoreError::Malformed {
            path,
            line: 1,
            what: "results format 1",
            message: format!("it is {:?} and `runs/` holds no run", results.format),
        });
    }
    let id = results
        .eval_id
        .clone()
        .filter(|id| super::run_folder::is_run_id(id))
        .unwrap_or_else(crate::run::unique_token);
    let mut order: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for row in &results.tasks {
        if seen.insert(row.id.as_str()) {
            order.push(row.id.clone());
        }
    }
    let layout = if results
        .tasks
        .iter()
        .any(|row| row.trace.as_deref() == Some("traces.jsonl"))
    {
        "single"
    } else {
        "per-task"
    };
    let selection = results.selection.clone();
    let header = RunHeader {
        format: RUN_FORMAT.to_owned(),
        eval_id: id.clone(),
        looptrace_version: results.looptrace_version.clone(),
        created_at: results.created_at.clone(),
        kind: RunKind::Eval,
        parents: Vec::new(),
        suite: results.suite.clone(),
        capture: results.capture,
        repeats: results.repeats.unwrap_or(1),
        adaptive: results.adaptive.clone(),
        trace_layout: layout.to_owned(),
        shard: results.shard,
        models: Vec::new(),
        only: selection
            .as_ref()
            .map(|s| s.only.clone())
            .unwrap_or_default(),
        skip: selection
            .as_ref()
            .map(|s| s.skip.clone())
            .unwrap_or_default(),
        selection,
        tasks: order,
    };
    let run = RunFolder::create(dir, &header)?;
    let mut copied = HashSet::new();
    for row in &results.tasks {
        let trace = row.trace.as_deref().filter(|trace| {
            Path::new(trace)
                .components()
                .all(|part| matches!(part, std::path::Component::Normal(_)))
        });
        if let Some(trace) = trace
            && copied.insert(trace.to_owned())
            && dir.join(trace).is_file()
        {
            copy_file_new(&dir.join(trace), &run.dir().join(trace)).map_err(|source| {
                StoreError::Io {
                    action: "copy",
                    path: dir.join(trace),
                    source,
                }
            })?;
        }
        let row = TaskResult {
            trace: trace.map(|trace| format!("runs/{id}/{trace}")),
            carried_over: false,
            ..row.clone()
        };
        run.append(&row).map_err(|source| StoreError::Io {
            action: "write",
            path: run.rows_path().to_path_buf(),
            source,
        })?;
    }
    run.seal(&Seal {
        sealed: true,
        interrupted: results.interrupted,
        not_reached: results.not_reached.clone(),
    })?;
    Ok(id)
}
