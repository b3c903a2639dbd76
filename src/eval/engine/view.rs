//! Writing `DIR/results.json` as the view of a run (`eval --rebuild-view DIR`, and after every
//! resume or rerun): the fold of the run's chain, replaced atomically.

use std::path::Path;

use super::EvalError;
use crate::eval::store::{RESULTS_NAME, convert_v1, list_runs, rebuild_view as fold_view};
use crate::eval::{ResultsFile, lock_output, write_results};

/// What `--rebuild-view` did.
#[derive(Debug)]
pub struct RebuiltView {
    /// The run whose view was written.
    pub head: String,
    /// Set when the folder held results format 1 and was converted into this run first.
    pub converted: bool,
    /// The view written.
    pub view: ResultsFile,
}

/// Writes `dir/results.json` again from `dir/runs/`, the view of the newest run (converting a
/// folder of results format 1 into a run store first), holding the folder's lock.
pub fn rebuild_view(dir: &Path) -> Result<RebuiltView, EvalError> {
    let _lock = lock_output("--out", dir)?;
    let results_path = dir.join(RESULTS_NAME);
    let ids = list_runs(dir).map_err(|e| EvalError::store(dir, e))?;
    let (head, converted) = match ids.last() {
        Some(head) => (head.clone(), false),
        None => (convert_v1(dir).map_err(|e| EvalError::store(dir, e))?, true),
    };
    super::check_output("eval", "--rebuild-view", &results_path, &[])?;
    let view = write_view(dir, &head)?;
    Ok(RebuiltView {
        head,
        converted,
        view,
    })
}

/// Writes `dir/results.json` as the view of run `head`, and returns it.
pub(crate) fn write_view(dir: &Path, head: &str) -> Result<ResultsFile, EvalError> {
    let view = fold_view(dir, head).map_err(|e| EvalError::store(dir, e))?;
    let path = dir.join(RESULTS_NAME);
    write_results(&path, &view).map_err(|err| EvalError::io("write", &path, err))?;
    Ok(view)
}
