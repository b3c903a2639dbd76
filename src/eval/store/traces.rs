//! Which trace files `report`, `show` and `export` read when given a run store's folder: those
//! the view (`results.json`) names, each row's run once; or, with `--all-runs`, every run's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::RESULTS_NAME;
use super::run_folder::{RUNS_DIR, is_inside, list_runs};
use crate::eval::{RESULTS_FORMAT, ResultsFile, SINGLE_TRACE, TraceLayout, read_results};

/// A trace file to read, and the run ids of it to keep (`None`: every run in it).
pub type NamedTrace = (PathBuf, Option<Vec<String>>);

/// Reads the view of the run store `dir`, refused unless it is of results format 2.
pub fn read_view(dir: &Path) -> Result<ResultsFile, String> {
    let view = dir.join(RESULTS_NAME);
    let results = read_results(&view)?;
    if results.format != RESULTS_FORMAT {
        return Err(format!(
            "`{}` is not the view of `{}` (format {:?}): `looptrace eval --rebuild-view {}` writes it",
            view.display(),
            dir.join(RUNS_DIR).display(),
            results.format,
            dir.display()
        ));
    }
    Ok(results)
}

/// The traces of the run store `dir`: those its view names (each file once, in the view's
/// order; a file holding many runs, `traces.jsonl`, with the runs the view names of it), or
/// every run's traces with `all_runs`.
pub fn view_traces(dir: &Path, all_runs: bool) -> Result<Vec<NamedTrace>, String> {
    let runs = dir.join(RUNS_DIR);
    if all_runs {
        let ids = list_runs(dir).map_err(|e| e.to_string())?;
        let paths = (ids.iter().map(|id| runs.join(id)))
            .flat_map(|run| [TraceLayout::PerTask, TraceLayout::Single].map(|l| l.root(&run)));
        return Ok(paths.filter(|p| p.exists()).map(|p| (p, None)).collect());
    }
    let results = read_view(dir)?;
    let mut traces: Vec<NamedTrace> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for row in &results.tasks {
        let Some(trace) = &row.trace else { continue };
        // Only paths inside the folder's runs are followed.
        if !is_inside(trace) || !trace.starts_with(&format!("{RUNS_DIR}/")) {
            let (view, runs) = (dir.join(RESULTS_NAME), runs.display());
            return Err(format!(
                "`{}` names the trace {trace:?}, which is not in `{runs}`",
                view.display()
            ));
        }
        let i = *at.entry(trace).or_insert_with(|| {
            // A file of many runs is read for the runs the view names of it.
            let keep = trace.ends_with(SINGLE_TRACE).then(Vec::new);
            traces.push((dir.join(trace), keep));
            traces.len() - 1
        });
        if let Some(keep) = &mut traces[i].1 {
            keep.extend(row.run_id.clone());
        }
    }
    Ok(traces)
}
