//! What a user asked an evaluation to do, as plain values: the command line fills one in from its
//! flags, a library user builds one with [`EvalRequest::suite`] or [`EvalRequest::traces`] and
//! sets the fields it needs. Nothing here is checked; [`super::EvalPlan::new`] checks it all.

use std::path::PathBuf;

use crate::eval::{Narrowing, Shard, TraceFlush, TraceLayout};
use crate::stats::{RegressionTest, StatsOptions};
use crate::trace::Capture;

/// Where the tasks come from.
#[derive(Clone, Debug, PartialEq)]
pub enum EvalSource {
    /// A suite file (JSON).
    Suite(PathBuf),
    /// Every recorded run in these trace files or folders, replayed (`eval --traces`).
    Traces(Vec<PathBuf>),
}

/// An evaluation as asked: the flags of `looptrace eval`, each with the same meaning.
#[derive(Clone, Debug)]
pub struct EvalRequest {
    /// The suite, or the recordings to replay.
    pub source: EvalSource,
    /// Tasks run at once (`None`: the number of cores).
    pub jobs: Option<usize>,
    /// The output folder (`None`: `looptrace-runs/<suite name>`, or a rerun's results' folder).
    pub out: Option<PathBuf>,
    /// Also write JUnit XML here.
    pub junit: Option<PathBuf>,
    /// The HTML report the caller writes from the outcome: checked like every output, and every
    /// row is kept for it.
    pub html: Option<PathBuf>,
    /// Compare with these earlier results.
    pub baseline: Option<PathBuf>,
    /// Accept a baseline from a suite with another name.
    pub baseline_any_suite: bool,
    /// `--confidence` and `--pass-at`.
    pub stats: StatsOptions,
    /// `--regression-test` (`None`: the default for the runs on either side).
    pub regression_test: Option<RegressionTest>,
    /// Run only this shard (`--shard K/N`, resolved).
    pub shard: Option<Shard>,
    /// `--only` patterns.
    pub only: Vec<String>,
    /// `--skip` patterns.
    pub skip: Vec<String>,
    /// `--rerun-failed RESULTS`.
    pub rerun_failed: Option<PathBuf>,
    /// `--resume`.
    pub resume: bool,
    /// `--repeat N`.
    pub repeat: u32,
    /// `--repeat-until-decided MAX`.
    pub repeat_until_decided: Option<u32>,
    /// `--pass-threshold P` (with `repeat_until_decided`; default 0.5).
    pub pass_threshold: Option<f64>,
    /// `--trace-layout` (`None`: per-task, single for `--traces`, or the layout of the results a
    /// rerun updates).
    pub trace_layout: Option<TraceLayout>,
    /// `--trace-flush`.
    pub trace_flush: TraceFlush,
    /// `--capture`, overriding the suite's.
    pub capture: Option<Capture>,
    /// `--tools-file`, for a suite that names none.
    pub tools_file: Option<PathBuf>,
    /// `--log-dir` for the MCP servers' logs (`None`: the run's `logs/`).
    pub log_dir: Option<PathBuf>,
    /// `--limit N` or `--sample N [--seed S]`.
    pub narrowing: Narrowing,
    /// `--retries N`.
    pub retries: u32,
    /// `--model SPEC`s: every task runs against each (`API:MODEL@BASE_URL` or a name from the
    /// suite's `models`).
    pub models: Vec<String>,
    /// The caller shows only the totals (`eval -q`): the outcome then holds no rows (unless
    /// for `html` or a baseline) and no per-task pass counts, so memory stays flat in the rows.
    pub summary_only: bool,
    /// `--api-key-env VAR`: the key of every model given as `API:MODEL@BASE_URL`.
    pub api_key_env: Option<String>,
    /// `--replay-models RESULTS`: agent tasks' model calls answered from these results' runs.
    pub replay_models: Option<PathBuf>,
}

impl EvalRequest {
    /// Runs the suite at `path` with every flag at its default.
    pub fn suite(path: impl Into<PathBuf>) -> EvalRequest {
        EvalRequest::new(EvalSource::Suite(path.into()))
    }

    /// Replays every recorded run in `paths` with every flag at its default.
    pub fn traces(paths: Vec<PathBuf>) -> EvalRequest {
        EvalRequest::new(EvalSource::Traces(paths))
    }

    /// Runs the tasks of `source` with every flag at its default.
    pub fn new(source: EvalSource) -> EvalRequest {
        EvalRequest {
            source,
            jobs: None,
            out: None,
            junit: None,
            html: None,
            baseline: None,
            baseline_any_suite: false,
            stats: StatsOptions {
                confidence: crate::stats::DEFAULT_CONFIDENCE,
                pass_at: vec![1],
            },
            regression_test: None,
            shard: None,
            only: Vec::new(),
            skip: Vec::new(),
            rerun_failed: None,
            resume: false,
            repeat: 1,
            repeat_until_decided: None,
            pass_threshold: None,
            trace_layout: None,
            trace_flush: TraceFlush::default(),
            capture: None,
            tools_file: None,
            log_dir: None,
            narrowing: Narrowing::default(),
            retries: 0,
            models: Vec::new(),
            summary_only: false,
            api_key_env: None,
            replay_models: None,
        }
    }
}
