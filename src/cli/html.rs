//! What the commands that write an HTML report (or list runs) share: naming rows with their
//! source formats, writing an output file as a whole, and the pages of `eval`, `merge` and
//! `replay`.

use std::io::Write;
use std::path::{Path, PathBuf};

use looptrace::eval::{Comparison, ResultsFile, TaskResult};
use looptrace::html::{Baseline, Page};
use looptrace::report::{self, Input, Options, Report, RowMode, RunRow, RunTable, Source};
use looptrace::run::RunOutcome;

use super::common::same_file;
use super::{CliError, CliResult, Outcome};

/// The runs of `table` named with their inputs' source formats (`formats`, one per input).
pub fn with_formats(mut table: RunTable, formats: &[&'static str]) -> RunTable {
    for row in &mut table.rows {
        row.source = formats
            .get(row.file as usize)
            .copied()
            .unwrap_or("looptrace");
    }
    table
}

/// Writes `bytes` to `output` as a whole (nothing half-written on failure), or to standard output.
/// An output that is one of the `inputs` is refused.
pub fn write_output(output: Option<&Path>, bytes: &[u8], inputs: &[&Path]) -> CliResult {
    let Some(path) = output else {
        let mut out = super::common::outcome_stdout();
        out.write_all(bytes)?;
        out.flush()?;
        return Ok(Outcome::Success);
    };
    if let Some(input) = inputs.iter().find(|input| same_file(input, path)) {
        return Err(CliError::input(format!(
            "-o would overwrite the input `{}`",
            input.display()
        )));
    }
    super::import::write_atomically(path, |out| {
        out.write_all(bytes)?;
        Ok(0)
    })?;
    Ok(Outcome::Success)
}
/// The report and rows of the traces an evaluation wrote (a task's `trace` is relative to
/// `folder(task)`, the folder of the results file it came from); a task whose trace is missing
/// gets a row from its results alone.
pub fn results_page_data(
    results: &ResultsFile,
    folder: &dyn Fn(&TaskResult) -> PathBuf,
) -> Result<(Report, RunTable), CliError> {
    let mut inputs = Vec::new();
    // Rows share a file with `--trace-layout single` (and a shard's rows share its folder's):
    // each file is read once, or its runs would be counted once per row.
    let mut seen = std::collections::HashSet::new();
    for task in &results.tasks {
        if let Some(trace) = &task.trace {
            let path = folder(task).join(trace);
            if path.is_file() && seen.insert(path.clone()) {
                inputs.push(Input {
                    // The folder too: merged rows' traces lie in several shards' folders, and a
                    // message about one must say which.
                    name: path.display().to_string(),
                    source: Source::Path(path),
                });
            }
        }
    }
    let options = Options {
        rows: RowMode::Timelines,
        ..Options::default()
    };
    let (report, traced) =
        report::analyze_runs(&inputs, &options, Vec::new()).map_err(CliError::input)?;
    let mut table = RunTable {
        files: traced.files.clone(),
        rows: Vec::new(),
    };
    let by_run: std::collections::HashMap<&str, &RunRow> = traced
        .rows
        .iter()
        .map(|row| (row.run_id.as_str(), row))
        .collect();
    let by_task: std::collections::HashMap<&str, &RunRow> = traced
        .rows
        .iter()
        .filter_map(|row| row.task_id.as_deref().map(|task| (task, row)))
        .collect();
    // Under a model matrix the runs are grouped by model, in the order the models were given.
    let mut ordered: Vec<&TaskResult> = results.tasks.iter().collect();
    if looptrace::eval::ModelMatrix::of(&looptrace::eval::pass_rates_of(results)).is_some() {
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
    Ok((report, table))
}

fn ending_of(reason: looptrace::run::ExitReason) -> RunOutcome {
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
    let failed_before: std::collections::HashSet<&str> = baseline
        .tasks
        .iter()
        .filter(|t| t.fails())
        .map(|t| t.id.as_str())
        .collect();
    let mut named = std::collections::HashSet::new();
    let moved: std::collections::HashSet<&str> = comparison
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

/// Renders the HTML page of a results file (of `eval` or `merge`) and writes it to `path`.
pub fn write_results_page(
    path: &Path,
    title: &str,
    results: &ResultsFile,
    folder: &dyn Fn(&TaskResult) -> PathBuf,
    baseline: Option<&Baseline>,
    stats: &looptrace::stats::StatsOptions,
    paired: Option<&looptrace::stats::PairedVerdict>,
) -> Result<(), CliError> {
    let (report, runs) = results_page_data(results, folder)?;
    let counts: Vec<looptrace::stats::TaskCounts<'_>> = looptrace::eval::pass_rates_of(results)
        .iter()
        .map(|r| looptrace::stats::TaskCounts {
            id: r.id,
            model: r.model,
            runs: r.runs,
            successes: r.passed,
        })
        .collect();
    let (task_stats, suite_stats) = looptrace::stats::statistics(&counts, stats);
    let statistics = looptrace::html::Statistics {
        tasks: &task_stats,
        suite: &suite_stats,
        paired,
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
    let rates = looptrace::eval::pass_rates_of(results);
    let matrix = looptrace::eval::ModelMatrix::of(&rates);
    let score_totals = looptrace::eval::score_totals(&results.tasks);
    let page = Page {
        models: matrix.as_ref(),
        scores: &score_totals,
        title,
        context: &context,
        report: &report,
        runs: &runs,
        verdict: "expectation",
        baseline,
        statistics: Some(&statistics),
    };
    write_output(Some(path), &looptrace::html::render(&page), &[])?;
    Ok(())
}

/// The page of merged results: each task's trace is read beside the shard results it came from.
pub fn write_merged_page(
    html: &Path,
    merged: &ResultsFile,
    inputs: &[(String, ResultsFile)],
    paths: &[PathBuf],
    stats: &looptrace::stats::StatsOptions,
) -> Result<(), CliError> {
    let mut folders = std::collections::HashMap::new();
    for ((_, results), path) in inputs.iter().zip(paths) {
        let folder = looptrace::eval::engine::folder_of(path);
        for task in &results.tasks {
            folders.insert(task.id.clone(), folder.clone());
        }
    }
    let folder = |task: &TaskResult| {
        folders
            .get(&task.id)
            .cloned()
            .unwrap_or_else(|| PathBuf::from("."))
    };
    let title = format!("looptrace merge: {}", merged.suite.name);
    write_results_page(html, &title, merged, &folder, None, stats, None)
}
