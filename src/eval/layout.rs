//! Where an evaluation's traces go (`--trace-layout per-task|single`), when their events are
//! written (`--trace-flush event|run`), and how runs and trace files are named (with `--repeat`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The one trace file of `--trace-layout single`, in the output folder.
pub const SINGLE_TRACE: &str = "traces.jsonl";

/// `--trace-layout`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceLayout {
    /// `traces/<task-id>.jsonl` in the run's folder, one file per run.
    #[default]
    PerTask,
    /// `traces.jsonl` in the run's folder, every run in one file.
    Single,
}

impl TraceLayout {
    /// The name on the command line and in the partial file.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceLayout::PerTask => "per-task",
            TraceLayout::Single => "single",
        }
    }

    /// The layout of `rows` (told by their `trace`): what a rerun keeps unless `--trace-layout`
    /// is given, and what a folder of results format 1 converted into a run used.
    pub fn of_rows(rows: &[crate::eval::TaskResult]) -> TraceLayout {
        let mut traces = rows.iter().filter_map(|t| t.trace.as_deref());
        match traces.any(|trace| trace.ends_with(SINGLE_TRACE)) {
            true => TraceLayout::Single,
            false => TraceLayout::PerTask,
        }
    }

    /// Where the traces of a run are under its folder `run_dir`: `traces/`, or the one file.
    pub fn root(self, run_dir: &Path) -> PathBuf {
        run_dir.join(match self {
            TraceLayout::PerTask => "traces",
            TraceLayout::Single => SINGLE_TRACE,
        })
    }
}

/// `--trace-flush`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceFlush {
    /// Each event is written as it happens.
    #[default]
    Event,
    /// A run's events are written together when it ends.
    Run,
}

/// Where the runner writes traces.
#[derive(Debug)]
pub enum TraceTarget {
    /// One file per run under this run folder (named by `trace_path`).
    PerTask(PathBuf),
    /// The single trace file, opened for appending.
    Single(Arc<File>),
}

/// The run id of one run of a task in an evaluation: `<task-id>.<eval-id>`, and with `--repeat N`
/// (N > 1) `<task-id>.<eval-id>.r<k>`. Unique across evaluations, machines and repeats.
pub fn run_id(task: &str, eval_id: &str, repeat: u32, repeats: u32) -> String {
    if repeats > 1 {
        format!("{task}.{eval_id}.r{repeat}")
    } else {
        format!("{task}.{eval_id}")
    }
}

/// A run's trace file relative to the run's folder, where `target` writes it:
/// `traces/<task-id>.jsonl`; with `--repeat N` (N > 1) `traces/r<k>/<task-id>.jsonl`, so repeats
/// never overwrite each other; with the single layout `traces.jsonl`.
pub fn trace_path(target: &TraceTarget, task: &str, repeat: u32, repeats: u32) -> String {
    match target {
        TraceTarget::Single(_) => SINGLE_TRACE.to_owned(),
        TraceTarget::PerTask(_) if repeats > 1 => format!("traces/r{repeat}/{task}.jsonl"),
        TraceTarget::PerTask(_) => format!("traces/{task}.jsonl"),
    }
}
