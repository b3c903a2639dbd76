//! What an evaluation found: its results (the view written to `results.json`), the comparison
//! with a baseline, the verdict, and the messages a user should read, as data the caller prints.

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;

use crate::eval::store::{RUNS_DIR, bytes_under, list_runs};
use crate::eval::{
    Comparison, FlakyTask, FolderLock, PassCounts, ResultsFile, TaskRates, TaskResult, Verdict,
    flaky_among, flaky_tasks, read_rows_of_tasks,
};
use crate::run::ExitReason;

/// How serious a [`Notice`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeKind {
    /// Something the user should know about what was done (`resumed: kept 3 rows`).
    Info,
    /// A summary of what was done, which a quiet console leaves out.
    Summary,
    /// Something was left out or could not be read, and the evaluation went on without it.
    Warning,
}

/// A message for the user about the evaluation, printed on stderr by the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Its kind.
    pub kind: NoticeKind,
    /// The message, without a `warning:` prefix.
    pub message: String,
}

impl Notice {
    /// An informational notice.
    pub(crate) fn info(message: String) -> Notice {
        Notice {
            kind: NoticeKind::Info,
            message,
        }
    }

    /// A summary a quiet console leaves out.
    pub(crate) fn summary(message: String) -> Notice {
        Notice {
            kind: NoticeKind::Summary,
            message,
        }
    }

    /// A warning.
    pub(crate) fn warning(message: String) -> Notice {
        Notice {
            kind: NoticeKind::Warning,
            message,
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            NoticeKind::Info | NoticeKind::Summary => f.write_str(&self.message),
            NoticeKind::Warning => write!(f, "warning: {}", self.message),
        }
    }
}

/// Whether the evaluation passed, as the exit code says it: 0 or 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalVerdict {
    /// Every run passed (or, with a statistical baseline test, nothing regressed).
    Passed,
    /// A run failed, a task regressed, or the evaluation was interrupted.
    Failed,
}

/// An evaluation's outcome.
#[derive(Debug)]
pub struct EvalOutcome {
    /// The results as written to `results.json` (with every row when the caller asked for the
    /// HTML page or the evaluation built on earlier runs; otherwise its failing rows only, or
    /// none when the request is [`super::EvalRequest::summary_only`] without a baseline).
    pub results: ResultsFile,
    /// The same results with the suite's expected values in full, for a console.
    pub shown: ResultsFile,
    /// The comparison with `--baseline`, judged.
    pub comparison: Option<Comparison>,
    /// The baseline's rows this evaluation can speak about.
    pub baseline: Option<ResultsFile>,
    /// Pass counts the results do not hold the rows for.
    pub pass_counts: Option<PassCounts>,
    /// The output folder.
    pub out: PathBuf,
    /// `results.json` in it, when written.
    pub results_path: PathBuf,
    /// Where this evaluation's traces are (`None`: it ran nothing).
    pub traces: Option<PathBuf>,
    /// Whether a signal stopped it before every run was made.
    pub interrupted: bool,
    /// Runs made now, of `planned`.
    pub ran: usize,
    /// Runs planned.
    pub planned: usize,
    /// Messages for the user, in order.
    pub notices: Vec<Notice>,
    /// Notices for after the report (interrupted, tasks not run yet).
    pub closing: Vec<Notice>,
    /// The verdict.
    pub verdict: EvalVerdict,
    /// The output folder's lock, released when the outcome is dropped.
    pub(crate) _locks: Option<FolderLock>,
}

impl EvalOutcome {
    /// The pass rates the report shows from [`EvalOutcome::pass_counts`], read in place.
    pub fn pass_rates(&self) -> Option<TaskRates<'_>> {
        self.pass_counts.as_ref().map(TaskRates::Packed)
    }

    /// Flaky tasks and where their runs parted, read back from what was written (repeats only).
    /// With the tasks' pass counts, only the flaky tasks' rows are kept as the view is read, and
    /// only their runs of the traces.
    pub fn flaky_tasks(&self) -> Vec<FlakyTask> {
        if self.results.repeats.unwrap_or(1) <= 1 || self.traces.is_none() {
            return Vec::new();
        }
        let folder = |_: &TaskResult| self.out.clone();
        let Some(counts) = &self.pass_counts else {
            return crate::eval::read_results(&self.results_path)
                .map(|written| flaky_tasks(&written, &folder))
                .unwrap_or_default();
        };
        let ids: HashSet<String> = (counts.rates())
            .filter(|rate| rate.flaky())
            .map(|rate| rate.id.into_owned())
            .collect();
        if ids.is_empty() {
            return Vec::new();
        }
        read_rows_of_tasks(&self.results_path, &ids)
            .map(|(capture, rows)| flaky_among(&rows, capture, &folder))
            .unwrap_or_default()
    }

    /// How many runs the output folder's run store holds, and their bytes.
    pub fn store_size(&self) -> (usize, u64) {
        let runs = list_runs(&self.out).map_or(0, |ids| ids.len());
        (runs, bytes_under(&self.out.join(RUNS_DIR)))
    }
}

/// The verdict of results: interrupted results lack the runs the evaluation did not reach.
pub fn verdict(results: &ResultsFile, comparison: Option<&Comparison>) -> EvalVerdict {
    if results.interrupted {
        return EvalVerdict::Failed;
    }
    verdict_of_rows(results, comparison)
}

/// The verdict of the rows alone, whether or not the results were interrupted. Under a
/// statistical test (`--baseline` without `--regression-test none`), only a statistically clear
/// regression or an internal error a task did not expect fails it: a task failing as it failed
/// before does not.
pub(crate) fn verdict_of_rows(
    results: &ResultsFile,
    comparison: Option<&Comparison>,
) -> EvalVerdict {
    let failed = if comparison.is_some_and(Comparison::tested) {
        unexpected_internal_error(results)
    } else {
        results.tasks.iter().any(|t| t.fails())
    };
    let regressed = comparison.is_some_and(Comparison::regressed);
    if failed || regressed {
        EvalVerdict::Failed
    } else {
        EvalVerdict::Passed
    }
}

/// The verdict of adaptive repeats whose tasks all decided `pass` (`passed`) or not: passed
/// only when they did and no task ended in an internal error it did not expect. `None` when a
/// statistical comparison with a baseline decides instead.
pub fn adaptive_verdict(
    results: &ResultsFile,
    passed: bool,
    comparison: Option<&Comparison>,
) -> Option<EvalVerdict> {
    if comparison.is_some_and(Comparison::tested) {
        return None;
    }
    Some(if passed && !unexpected_internal_error(results) {
        EvalVerdict::Passed
    } else {
        EvalVerdict::Failed
    })
}

/// Whether a row ended in an internal error its task did not expect.
fn unexpected_internal_error(results: &ResultsFile) -> bool {
    results
        .tasks
        .iter()
        .any(|t| t.exit_reason == ExitReason::InternalError && t.expectation != Verdict::Met)
}
