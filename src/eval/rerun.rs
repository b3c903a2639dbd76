//! `eval SUITE --rerun-failed RESULTS`: which tasks of an earlier evaluation to run again (those
//! that failed, errored or were not reached when it was interrupted), and how their new rows
//! replace the old ones while the others are carried over.

use std::collections::{HashMap, HashSet};

use super::results::{ResultsFile, TaskResult};
use super::suite::Suite;

/// The ids of the suite's tasks that `previous` says need another run: rows that fail the
/// evaluation (a failed expectation or an unexpected internal error) and, when `previous` was
/// interrupted, tasks of its selection it has no row for.
pub fn failed_ids(previous: &ResultsFile, suite: &Suite) -> HashSet<String> {
    let mut ids: HashSet<String> = previous
        .tasks
        .iter()
        .filter(|t| t.fails())
        .map(|t| t.id.clone())
        .collect();
    if previous.interrupted {
        let has_row: HashSet<&str> = previous.tasks.iter().map(|t| t.id.as_str()).collect();
        let scope: Option<HashSet<&str>> = previous
            .selection
            .as_ref()
            .map(|s| s.tasks.iter().map(String::as_str).collect());
        ids.extend(
            suite
                .tasks
                .iter()
                .map(|t| t.id.as_str())
                .filter(|id| scope.as_ref().is_none_or(|scope| scope.contains(id)))
                .filter(|id| !has_row.contains(id))
                .map(str::to_owned),
        );
    }
    ids
}

/// The rows of the updated results: `rerun` rows, and every row of `previous` they do not
/// replace marked `carried_over`, in suite order (rows of tasks no longer in the suite last).
pub fn carry_over(
    previous: &ResultsFile,
    rerun: Vec<TaskResult>,
    suite: &Suite,
) -> Vec<TaskResult> {
    let rerun_ids: HashSet<String> = rerun.iter().map(|t| t.id.clone()).collect();
    let mut rows: Vec<TaskResult> = previous
        .tasks
        .iter()
        .filter(|t| !rerun_ids.contains(&t.id))
        .map(|t| TaskResult {
            carried_over: true,
            ..t.clone()
        })
        .chain(rerun)
        .collect();
    let position: HashMap<&str, usize> = suite
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    rows.sort_by_key(|t| position.get(t.id.as_str()).copied().unwrap_or(usize::MAX));
    rows
}
