//! `--baseline RESULTS`: how each task's outcome moved since an earlier results file. A regression
//! is a task that met its expectations before and does not now, or finished before and does not now.

use std::collections::{BTreeMap, HashMap};

use super::expect::Verdict;
use super::results::{ResultsFile, TaskResult};
use crate::run::ExitReason;

/// The comparison with a baseline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// `(old exit reason, new exit reason)` → tasks, for tasks in both files.
    pub transitions: BTreeMap<(ExitReason, ExitReason), usize>,
    /// Tasks that got worse, with why, in suite order.
    pub regressions: Vec<(String, String)>,
    /// Tasks that got better, with why, in suite order.
    pub improvements: Vec<(String, String)>,
    /// Tasks only in the new results.
    pub added: Vec<String>,
    /// Tasks only in the baseline.
    pub removed: Vec<String>,
}

/// Compares `current` with `baseline`, task by task.
pub fn compare(baseline: &ResultsFile, current: &ResultsFile) -> Comparison {
    let old: HashMap<&str, &TaskResult> =
        baseline.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    let mut comparison = Comparison::default();
    for task in &current.tasks {
        let Some(before) = old.get(task.id.as_str()) else {
            comparison.added.push(task.id.clone());
            continue;
        };
        *comparison
            .transitions
            .entry((before.exit_reason, task.exit_reason))
            .or_default() += 1;
        let was_met = before.expectation == Verdict::Met;
        let is_met = task.expectation == Verdict::Met;
        let was_finished = before.exit_reason == ExitReason::Finished;
        let is_finished = task.exit_reason == ExitReason::Finished;
        if was_met && task.expectation == Verdict::Failed {
            comparison.regressions.push((
                task.id.clone(),
                "met its expectations before, fails them now".to_owned(),
            ));
        } else if was_finished && !is_finished {
            comparison.regressions.push((
                task.id.clone(),
                format!("finished before, {} now", task.exit_reason),
            ));
        } else if before.expectation == Verdict::Failed && is_met {
            comparison.improvements.push((
                task.id.clone(),
                "failed its expectations before, meets them now".to_owned(),
            ));
        } else if !was_finished && is_finished {
            comparison.improvements.push((
                task.id.clone(),
                format!("{} before, finished now", before.exit_reason),
            ));
        }
    }
    let new: std::collections::HashSet<&str> =
        current.tasks.iter().map(|t| t.id.as_str()).collect();
    comparison.removed = baseline
        .tasks
        .iter()
        .filter(|t| !new.contains(t.id.as_str()))
        .map(|t| t.id.clone())
        .collect();
    comparison
}
