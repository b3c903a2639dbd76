//! The page of an evaluation's results (`eval --html`, `merge --html`): the rows' runs, the
//! aggregate report over them, statistics, scores, models and the baseline's view.
//!
//! The runs come from one of two places. [`PageRuns::Files`] reads the trace files the rows
//! name (merged results, whose runs were written by other processes). [`PageRuns::Folded`]
//! takes the runs an evaluation folded as it wrote them ([`crate::report::LiveFold`]) and reads
//! from disk only the files of rows it did not run (rows `--resume` or `--rerun-failed` keeps
//! from earlier runs), so an evaluation that ran every row opens no trace. Both give the same
//! page: the inputs are the same files, named and ordered alike, folded by the same fold.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Baseline, Page, Statistics};
use crate::eval::{Comparison, ModelMatrix, PassRate, ResultsFile, TaskResult};
use crate::report::{
    self, FoldedRuns, Input, Options, Report, ReportError, RowMode, RunRow, RunTable, Source,
};
use crate::run::{ExitReason, RunOutcome};
use crate::stats::{PairedVerdict, StatsOptions, TaskCounts};

/// Where the page's runs come from.
#[derive(Debug)]
pub enum PageRuns {
    /// The trace files the rows name, read.
    Files,
    /// The runs folded as they were written, under the names the rows give their traces
    /// (`trace`, relative to the results' folder); files of other rows are read.
    Folded(Option<FoldedRuns>),
}

/// Everything the page of a results file shows besides its runs.
#[derive(Debug, Clone, Copy)]
pub struct ResultsPage<'a> {
    /// The page's title.
    pub title: &'a str,
    /// The results.
    pub results: &'a ResultsFile,
    /// The baseline's view, when there is one.
    pub baseline: Option<&'a Baseline>,
    /// How success rates are estimated.
    pub stats: &'a StatsOptions,
    /// The paired test against the baseline, when there is one.
    pub paired: Option<&'a PairedVerdict>,
}

/// Renders the page of `page.results`, whose rows' traces lie beside `folder(row)` (a row's
/// `trace` is relative to it), taking the runs from `runs`.
pub fn render_results(
    page: &ResultsPage<'_>,
    folder: &dyn Fn(&TaskResult) -> PathBuf,
    runs: PageRuns,
) -> Result<Vec<u8>, ReportError> {
    let results = page.results;
    let (report, runs) = results_runs(results, folder, runs)?;
    let rates = crate::eval::pass_rates_of(results);
    let counts: Vec<TaskCounts<'_>> = rates.iter().map(PassRate::counts).collect();
    let (task_stats, suite_stats) = crate::stats::statistics(&counts, page.stats);
    let statistics = Statistics {
        tasks: &task_stats,
        suite: &suite_stats,
        paired: page.paired,
    };
    let mut context = vec![format!(
        "suite {} ({} of {} tasks)",
        results.suite.name,
        results.tasks.len(),
        results.suite.tasks
    )];
    if results.partial {
        context.push("partial: some shards are missing".to_owned());
    }
    let matrix = ModelMatrix::of(&rates);
    let score_totals = crate::eval::score_totals(&results.tasks);
    Ok(super::render(&Page {
        models: matrix.as_ref(),
        scores: &score_totals,
        title: page.title,
        context: &context,
        report: &report,
        runs: &runs,
        verdict: "expectation",
        baseline: page.baseline,
        statistics: Some(&statistics),
    }))
}

/// The report and rows of the runs of `results` (see [`render_results`]); a row whose trace is
/// missing gets a row from its results alone.
pub fn results_runs(
    results: &ResultsFile,
    folder: &dyn Fn(&TaskResult) -> PathBuf,
    runs: PageRuns,
) -> Result<(Report, RunTable), ReportError> {
    let options = Options {
        rows: RowMode::Timelines,
        ..Options::default()
    };
    let folded = match runs {
        PageRuns::Files | PageRuns::Folded(None) => None,
        PageRuns::Folded(Some(folded)) => Some(folded),
    };
    let traced = match folded {
        Some(folded) => match placed_inputs(results, folder, &folded) {
            Some((inputs, at)) => folded.analyze(&inputs, &at, &options, Vec::new())?,
            // A run written to a file no row names: the files say which runs the page shows.
            None => report::analyze_runs(&file_inputs(results, folder), &options, Vec::new())?,
        },
        None => report::analyze_runs(&file_inputs(results, folder), &options, Vec::new())?,
    };
    Ok((traced.0, rows_of(results, traced.1)))
}

/// The inputs that read every row's trace file: each once, in the order rows name them.
fn file_inputs(results: &ResultsFile, folder: &dyn Fn(&TaskResult) -> PathBuf) -> Vec<Input> {
    let mut inputs = Vec::new();
    // Rows share a file with `--trace-layout single` (and a shard's rows share its folder's):
    // each file is read once, or its runs would be counted once per row.
    let mut seen = HashSet::new();
    for task in &results.tasks {
        if let Some(trace) = &task.trace {
            let path = folder(task).join(trace);
            if path.is_file() && seen.insert(path.clone()) {
                inputs.push(path_input(path));
            }
        }
    }
    inputs
}

fn path_input(path: PathBuf) -> Input {
    Input {
        // The folder too: merged rows' traces lie in several shards' folders, and a message
        // about one must say which.
        name: path.display().to_string(),
        source: Source::Path(path),
    }
}

/// The inputs of [`file_inputs`], where the files `folded` holds are not read but placed (their
/// places, in the order of [`FoldedRuns::traces`]); `None` when a folded file is not among
/// them.
fn placed_inputs(
    results: &ResultsFile,
    folder: &dyn Fn(&TaskResult) -> PathBuf,
    folded: &FoldedRuns,
) -> Option<(Vec<Input>, Vec<u32>)> {
    let names: HashMap<&Path, usize> = folded
        .traces()
        .enumerate()
        .map(|(at, path)| (path, at))
        .collect();
    let mut at = vec![None; names.len()];
    let mut inputs = Vec::new();
    let mut seen = HashSet::new();
    let empty: Arc<[u8]> = Arc::from(Vec::new());
    for task in &results.tasks {
        let Some(trace) = &task.trace else { continue };
        let path = folder(task).join(trace);
        match names.get(Path::new(trace)) {
            Some(&folded_at) if seen.insert(path.clone()) => {
                at[folded_at] = Some(u32::try_from(inputs.len()).ok()?);
                inputs.push(Input {
                    name: path.display().to_string(),
                    source: Source::Lines(Arc::clone(&empty)),
                });
            }
            Some(_) => {}
            None => {
                if path.is_file() && seen.insert(path.clone()) {
                    inputs.push(path_input(path));
                }
            }
        }
    }
    let at = at.into_iter().collect::<Option<Vec<u32>>>()?;
    Some((inputs, at))
}

/// The page's rows: the run of each results row (its `run_id`, else its task's), in the rows'
/// order (grouped by model under a model matrix), named `id[model]` under a matrix and carrying
/// the row's expectation as their verdict.
fn rows_of(results: &ResultsFile, traced: RunTable) -> RunTable {
    let mut table = RunTable {
        files: traced.files.clone(),
        rows: Vec::new(),
    };
    let by_run: HashMap<&str, &RunRow> = traced
        .rows
        .iter()
        .map(|row| (row.run_id.as_str(), row))
        .collect();
    let by_task: HashMap<&str, &RunRow> = traced
        .rows
        .iter()
        .filter_map(|row| row.task_id.as_deref().map(|task| (task, row)))
        .collect();
    // Under a model matrix the runs are grouped by model, in the order the models were given.
    let mut ordered: Vec<&TaskResult> = results.tasks.iter().collect();
    if ModelMatrix::of(&crate::eval::pass_rates_of(results)).is_some() {
        let mut models: Vec<&str> = Vec::new();
        for task in &results.tasks {
            if !models.contains(&task.model.as_str()) {
                models.push(&task.model);
            }
        }
        ordered.sort_by_key(|task| models.iter().position(|m| *m == task.model));
    }
    for task in ordered {
        let found = match &task.run_id {
            Some(run) => by_run.get(run.as_str()),
            None => by_task.get(task.id.as_str()),
        };
        let mut row = match found {
            Some(row) => (*row).clone(),
            None => {
                table.files.push(String::from("(no trace)"));
                RunRow {
                    file: u32::try_from(table.files.len() - 1).unwrap_or(u32::MAX),
                    run_id: task.run_id.clone().unwrap_or_else(|| task.id.clone()),
                    task_id: None,
                    ending: ending_of(task.exit_reason),
                    steps: task.steps_used,
                    error_kinds: task.error_kind.iter().cloned().collect(),
                    tools: Vec::new(),
                    verdict: None,
                    source: "looptrace",
                    duration_ms: Some(task.duration_ms),
                    divergence: None,
                    timeline: Vec::new(),
                }
            }
        };
        // Under a matrix a task's rows are told apart by their model: `id[model]`.
        row.task_id = Some(match task.given_model() {
            Some(model) => format!("{}[{model}]", task.id),
            None => task.id.clone(),
        });
        row.verdict = Some(task.expectation.as_str().to_owned());
        table.rows.push(row);
    }
    table
}

fn ending_of(reason: ExitReason) -> RunOutcome {
    RunOutcome::ALL
        .into_iter()
        .find(|e| e.as_str() == reason.as_str())
        .unwrap_or(RunOutcome::Incomplete)
}

/// The baseline section's data: transitions, and the tasks newly failing, newly fixed and still
/// failing.
pub fn baseline_of(
    comparison: &Comparison,
    baseline: &ResultsFile,
    current: &ResultsFile,
) -> Baseline {
    let failed_before: HashSet<&str> = baseline
        .tasks
        .iter()
        .filter(|t| t.fails())
        .map(|t| t.id.as_str())
        .collect();
    let mut named = HashSet::new();
    let moved: HashSet<&str> = comparison
        .regressions
        .iter()
        .chain(&comparison.improvements)
        .map(|(id, _)| id.as_str())
        .collect();
    Baseline {
        transitions: comparison
            .transitions
            .iter()
            .map(|((from, to), n)| (ending_of(*from), ending_of(*to), *n as u64))
            .collect(),
        newly_failing: comparison.regressions.clone(),
        newly_fixed: comparison.improvements.clone(),
        // A repeated task is named once, however many of its runs failed, and not when it is
        // already named as newly failing or newly fixed (failing every run before, some now).
        still_failing: current
            .tasks
            .iter()
            .filter(|t| t.fails() && failed_before.contains(t.id.as_str()))
            .filter(|t| !moved.contains(t.id.as_str()))
            .filter(|t| named.insert(t.id.as_str()))
            .map(|t| t.id.clone())
            .collect(),
    }
}
