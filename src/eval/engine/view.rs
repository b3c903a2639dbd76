//! Writing `DIR/results.json` as the view of a run (`eval --rebuild-view DIR`, and after every
//! resume or rerun): the fold of the run's chain, replaced atomically.

use std::path::Path;

use super::EvalError;
use crate::eval::store::{RESULTS_NAME, convert_v1, list_runs, rebuild_view as fold_view};
use crate::eval::{ResultsFile, lock_output, write_results};

/// Writes `dir/results.json` again from `dir/runs/`, the view of the newest run (its
/// `eval_id`), holding the folder's lock; a folder of results format 1 is converted into a run
/// store first, and then the flag returned is set.
pub fn rebuild_view(dir: &Path) -> Result<(ResultsFile, bool), EvalError> {
    let _lock = lock_output("--out", dir)?;
    let results = dir.join(RESULTS_NAME);
    let (head, converted) = match list_runs(dir)?.pop() {
        Some(head) => (head, false),
        None if !results.exists() => {
            let message = format!(
                "`{}` holds no runs and no results: nothing to rebuild",
                dir.display()
            );
            return Err(EvalError::input(dir, message));
        }
        None => (convert_v1(dir)?, true),
    };
    super::check_output("--rebuild-view", &results, &[])?;
    Ok((write_view(dir, &head)?, converted))
}

/// Writes `dir/results.json` as the view of run `head`, and returns it.
pub(crate) fn write_view(dir: &Path, head: &str) -> Result<ResultsFile, EvalError> {
    let view = fold_view(dir, head)?;
    let path = dir.join(RESULTS_NAME);
    write_results(&path, &view).map_err(|err| EvalError::io("write", &path, err))?;
    Ok(view)
}
