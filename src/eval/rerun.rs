//! `eval SUITE --rerun-failed RESULTS`: which tasks of an earlier evaluation to run again (those
//! that failed, errored or were not reached when it was interrupted). The new run names the runs
//! of those results as its parents; its view carries their other rows over.

use std::collections::HashSet;

use super::results::ResultsFile;
use super::store::{Owing, RowKey, owed};
use super::suite::Suite;

/// A task under the model it was given (`None`: its own): what a row is of, but for its repeat.
pub type Slot = (String, Option<String>);

/// The (task, model)s of the suite that `previous` says need another run, by [`owed`]'s rule (a
/// (task, model)'s repeats run again together) over those it speaks for: the ones it has rows
/// of; when it covered the whole suite (a row for each of its tasks), tasks added since; and
/// when it was interrupted, those lacking rows of the tasks it set out to run (the whole suite,
/// its `--only`/`--skip` selection, or a rerun's tasks and those it lists as `not_reached`).
pub fn failed_ids(previous: &ResultsFile, suite: &Suite) -> HashSet<Slot> {
    let repeats = previous.repeats.unwrap_or(1);
    let with_rows: HashSet<(&str, Option<&str>)> = (previous.tasks.iter())
        .map(|row| (row.id.as_str(), row.given_model()))
        .collect();
    // Under a model matrix the suite counts a task once per model.
    let ids: HashSet<&str> = with_rows.iter().map(|(id, _)| *id).collect();
    let not_reached = (previous.not_reached.iter())
        .filter(|id| !ids.contains(id.as_str()))
        .count();
    let whole =
        with_rows.len() + not_reached * previous.models.len().max(1) >= previous.suite.tasks;
    let set_out: Option<HashSet<&str>> = (previous.selection.as_ref())
        .map(|selection| selection.tasks.iter().chain(&previous.not_reached))
        .map(|ids| ids.map(String::as_str).collect());
    let entries = suite.tasks.entries();
    let in_scope = entries.iter().filter(|entry| {
        let set_out = set_out
            .as_ref()
            .is_none_or(|ids| ids.contains(entry.id.as_str()));
        with_rows.contains(&(entry.id.as_str(), entry.model_name))
            || whole
            || (previous.interrupted && set_out)
    });
    let rows: Vec<(RowKey, bool)> = (previous.tasks.iter())
        .map(|row| (RowKey::of(row), !row.fails()))
        .collect();
    let scope: Vec<RowKey> = RowKey::scope(in_scope, repeats).collect();
    (owed(Owing::RerunFailed, &scope, &rows).into_iter())
        .map(|key| (key.task, key.model))
        .collect()
}

/// The tasks `previous` owed a run that the rows of `keys` still lack (a (task, model) with fewer
/// rows than `previous` ran each), in suite order: what a rerun narrowed by `--only`/`--skip`
/// leaves for the next one, which its results list as `not_reached`.
pub fn still_owed(previous: &ResultsFile, keys: &HashSet<RowKey>, suite: &Suite) -> Vec<String> {
    let owed_tasks: HashSet<String> = (failed_ids(previous, suite).into_iter())
        .map(|(task, _)| task)
        .collect();
    let entries = suite.tasks.entries();
    let in_scope = (entries.iter()).filter(|entry| owed_tasks.contains(entry.id.as_str()));
    let scope: Vec<RowKey> = RowKey::scope(in_scope, previous.repeats.unwrap_or(1)).collect();
    let rows: Vec<(RowKey, bool)> = keys.iter().map(|key| (key.clone(), true)).collect();
    let mut lacking: Vec<String> = (owed(Owing::Resume, &scope, &rows).into_iter())
        .map(|key| key.task)
        .collect();
    lacking.dedup();
    lacking
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{TaskResult, load_suite_from_str};

    fn row(id: &str, repeat: u32, met: bool) -> TaskResult {
        serde_json::from_value(serde_json::json!({
            "id": id, "repeat": repeat, "model": "actions", "exit_reason": "finished",
            "steps_used": 1, "max_steps": 5, "tool_calls": 0, "tool_errors": 0, "feedback": 0,
            "duration_ms": 0.0, "expectation": if met { "met" } else { "failed" }
        }))
        .unwrap()
    }

    #[test]
    fn a_task_lacking_repeats_is_owed_until_its_rows_are_whole() {
        let suite = load_suite_from_str(
            r#"{"name":"s","tasks":[{"id":"a","prompt":"p","model":{"actions":[{"type":"finish","answer":"x"}]}}]}"#,
            std::path::Path::new("."),
        )
        .unwrap();
        let previous: ResultsFile = serde_json::from_value(serde_json::json!({
            "format": "looptrace.results/1", "looptrace_version": "0", "created_at": "t",
            "suite": {"name": "s", "tasks": 1, "fingerprint": "f"}, "repeats": 3,
            "capture": "summary", "interrupted": true,
            "tasks": [row("a", 1, true)],
            "totals": {"tasks": 1, "exit_reasons": {}, "expectations": {"met": 1, "failed": 0, "none": 0}}
        }))
        .unwrap();
        // A task with fewer rows than repeats in interrupted results runs again...
        assert!(failed_ids(&previous, &suite).contains(&("a".to_owned(), None)));
        let keys = |repeats: &[u32]| -> HashSet<RowKey> {
            repeats
                .iter()
                .map(|&r| RowKey::with("a", None, r))
                .collect()
        };
        assert_eq!(still_owed(&previous, &keys(&[1, 2]), &suite), ["a"]);
        // ...and is owed no more once a rerun (interrupted or not) leaves it a row per repeat.
        assert!(still_owed(&previous, &keys(&[1, 2, 3]), &suite).is_empty());
    }

    #[test]
    fn tasks_not_reached_count_in_the_selection_and_what_a_rerun_lists() {
        let suite = load_suite_from_str(
            r#"{"name":"s","tasks":[
                {"id":"a","prompt":"p","model":{"actions":[{"type":"finish","answer":"x"}]}},
                {"id":"b","prompt":"p","model":{"actions":[{"type":"finish","answer":"x"}]}},
                {"id":"c","prompt":"p","model":{"actions":[{"type":"finish","answer":"x"}]}}]}"#,
            std::path::Path::new("."),
        )
        .unwrap();
        let interrupted = |selection: serde_json::Value, not_reached: &[&str]| -> ResultsFile {
            serde_json::from_value(serde_json::json!({
                "format": "looptrace.results/1", "looptrace_version": "0", "created_at": "t",
                "suite": {"name": "s", "tasks": 3, "fingerprint": "f"},
                "capture": "summary", "interrupted": true, "selection": selection,
                "not_reached": not_reached,
                "tasks": [row("a", 1, true)],
                "totals": {"tasks": 1, "exit_reasons": {}, "expectations": {"met": 1, "failed": 0, "none": 0}}
            }))
            .unwrap()
        };
        let owed = |results: &ResultsFile| -> Vec<String> {
            let mut ids: Vec<String> = failed_ids(results, &suite)
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            ids.sort();
            ids
        };
        let whole = interrupted(serde_json::Value::Null, &[]);
        assert_eq!(owed(&whole), ["b", "c"]);
        let of_selection = interrupted(
            serde_json::json!({"only": ["a", "b"], "tasks": ["a", "b"]}),
            &[],
        );
        assert_eq!(owed(&of_selection), ["b"]);
        // A rerun of `a` that left `c` not reached: `b` was never in scope.
        let of_rerun = interrupted(
            serde_json::json!({"rerun_failed": "r.json", "tasks": ["a"]}),
            &["c"],
        );
        assert_eq!(owed(&of_rerun), ["c"]);
        // What a rerun ran is reached.
        let keys: HashSet<RowKey> = [RowKey::with("a", None, 1), RowKey::with("c", None, 1)].into();
        assert!(still_owed(&of_rerun, &keys, &suite).is_empty());
    }
}
