//! What the commands that write an HTML report (or list runs) share: naming rows with their
//! source formats, writing an output file as a whole, and writing the pages of `eval` and
//! `merge`.

use std::io::Write;
use std::path::{Path, PathBuf};

use looptrace::eval::{ResultsFile, TaskResult};
use looptrace::html::{PageRuns, ResultsPage};
use looptrace::report::RunTable;

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
    super::common::refuse_overwrite("-o", path, inputs.iter().copied())?;
    super::import::write_atomically(path, |out| {
        out.write_all(bytes)?;
        Ok(0)
    })?;
    Ok(Outcome::Success)
}
/// Renders the HTML page of a results file (of `eval` or `merge`), its runs taken from `runs`,
/// and writes it to `path`.
pub fn write_results_page(
    path: &Path,
    page: &ResultsPage<'_>,
    folder: &dyn Fn(&TaskResult) -> PathBuf,
    runs: PageRuns,
) -> Result<(), CliError> {
    let bytes = looptrace::html::render_results(page, folder, runs).map_err(CliError::input)?;
    write_output(Some(path), &bytes, &[])?;
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
    let page = ResultsPage {
        title: &title,
        results: merged,
        baseline: None,
        stats,
        paired: None,
    };
    write_results_page(html, &page, &folder, PageRuns::Files)
}
