//! `report`, `show` and `export` given an eval output folder read the traces its view names, each
//! row's run once (`--all-runs`: every run's); see [`looptrace::eval::store::view_traces`]. A
//! trace file that holds other runs too is read through [`looptrace::report::KeepRuns`], which
//! passes on the named runs' lines as the file is read.

use std::path::Path;
use std::sync::Arc;

use super::CliError;
use looptrace::eval::store::{RUNS_DIR, view_traces};
use looptrace::report::Source;

/// The paths to read, and the sources standing in for some of them (keyed by the path shown).
type Expanded = (Vec<String>, Vec<(String, Source)>);

/// `paths` with each run store's folder replaced by the trace files to read, and for a file
/// holding other runs too, the source of only its named runs (keyed by the path shown).
pub fn expand(paths: &[String], all_runs: bool) -> Result<Expanded, CliError> {
    let mut expanded = Vec::new();
    let mut named_runs = Vec::new();
    for arg in paths {
        let path = Path::new(arg);
        if arg == "-" || !path.join(RUNS_DIR).is_dir() {
            expanded.push(arg.clone());
            continue;
        }
        for (trace, keep) in view_traces(path, all_runs).map_err(CliError::Input)? {
            let shown = trace.display().to_string();
            if let Some(keep) = keep {
                let keep = Arc::new(keep.into_iter().collect());
                named_runs.push((shown.clone(), Source::Runs { path: trace, keep }));
            }
            expanded.push(shown);
        }
    }
    Ok((expanded, named_runs))
}
