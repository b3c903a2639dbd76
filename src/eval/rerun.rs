//! `eval SUITE --rerun-failed RESULTS`: which tasks of an earlier evaluation to run again (those
//! that failed, errored or were not reached when it was interrupted). The new run names the runs
//! of those results as its parents; its view carries their other rows over.

use std::collections::{HashMap, HashSet};

use super::results::{ResultsFile, TaskResult};
use super::store::{Owing, RowKey, RowState, owed};
use super::suite::{Suite, TaskEntry};

/// A task under the model it was given (`None`: its own): what a row is of, but for its repeat.
pub type Slot = (String, Option<String>);

/// A [`Slot`] borrowed.
type SlotRef<'a> = (&'a str, Option<&'a str>);

fn slot_of_entry(entry: TaskEntry<'_>) -> SlotRef<'_> {
    (entry.id.as_str(), entry.model_name)
}

/// How many rows each (task, model) has, of the rows `slots` are of.
fn counts<'a>(slots: impl IntoIterator<Item = SlotRef<'a>>) -> HashMap<SlotRef<'a>, usize> {
    let mut counts = HashMap::new();
    for slot in slots {
        *counts.entry(slot).or_default() += 1;
    }
    counts
}

fn row_slots(rows: &[TaskResult]) -> impl Iterator<Item = SlotRef<'_>> {
    rows.iter().map(|row| (row.id.as_str(), row.given_model()))
}

/// The (task, model)s of the suite that `previous` says need another run: rows that fail the
/// evaluation (a failed expectation or an unexpected internal error); when `previous` was
/// interrupted, the tasks it did not reach ([`unreached`]); and when it covered the whole suite (a
/// row for each of its tasks), tasks added to the suite since. Which of those the rerun owes is
/// [`owed`]'s rule (a (task, model)'s repeats run again together), over the ones `previous`
/// speaks for.
pub fn failed_ids(previous: &ResultsFile, suite: &Suite) -> HashSet<Slot> {
    let repeats = previous.repeats.unwrap_or(1);
    let rows_of = counts(row_slots(&previous.tasks));
    // Results of an `--only`/`--skip` selection hold fewer tasks than their suite had; whole
    // results (a rerun's too, whatever it narrowed its rerun to) hold them all, but for the tasks
    // they list as not reached yet. Under a model matrix the suite counts a task once per model.
    let with_rows: HashSet<&str> = previous.tasks.iter().map(|row| row.id.as_str()).collect();
    let not_reached: HashSet<&String> = (previous.not_reached.iter())
        .filter(|id| !with_rows.contains(id.as_str()))
        .collect();
    let models = previous.models.len().max(1);
    let whole = rows_of.len() + not_reached.len() * models >= previous.suite.tasks;
    let unreached: Vec<String> = match previous.interrupted {
        true => unreached(previous, &previous.tasks, suite),
        false => Vec::new(),
    };
    // What `previous` speaks for: those it has rows of, and those it owed rows to.
    let entries = suite.tasks.entries();
    let owed_rows = entries.iter().map(slot_of_entry).filter(|slot| {
        let count = rows_of.get(slot).copied().unwrap_or(0);
        (whole && count == 0)
            || (unreached.iter().any(|id| id == slot.0) && count < repeats as usize)
    });
    let mut seen = HashSet::new();
    let slots: Vec<SlotRef> = (row_slots(&previous.tasks).chain(owed_rows))
        .filter(|slot| seen.insert(*slot))
        .collect();
    let scope: Vec<RowKey> = (slots.iter())
        .flat_map(|&(task, model)| {
            (1..=repeats).map(move |repeat| RowKey {
                task: task.to_owned(),
                model: model.map(str::to_owned),
                repeat,
            })
        })
        .collect();
    let states: Vec<RowState> = (previous.tasks.iter())
        .map(|row| RowState {
            key: RowKey::of(row),
            passes: !row.fails(),
            complete: true,
        })
        .collect();
    (owed(Owing::RerunFailed, &scope, &states).into_iter())
        .map(|key| (key.task, key.model))
        .collect()
}

/// The tasks `previous` owed a run for want of rows (not reached by an interrupted evaluation, or
/// added to the suite since) that the rows of `keys` still lack, in suite order: what a rerun
/// narrowed by `--only`/`--skip` leaves for the next one, which its results list as `not_reached`.
pub fn still_owed(previous: &ResultsFile, keys: &HashSet<RowKey>, suite: &Suite) -> Vec<String> {
    let owed: HashSet<String> = (failed_ids(previous, suite).into_iter())
        .map(|(task, _)| task)
        .collect();
    let counts = counts(keys.iter().map(|k| (k.task.as_str(), k.model.as_deref())));
    lacking_rows(previous, &counts, suite, |id| owed.contains(id))
}

/// The ids of the tasks an interrupted evaluation did not reach that `rows` still lack (with
/// `--repeat N`, fewer than N rows), in suite order: of the whole suite, of its `--only`/`--skip`
/// selection, or, for a rerun's results, of the tasks it set out to run and those it lists as
/// `not_reached` (what the evaluation it updated had left).
pub fn unreached(previous: &ResultsFile, rows: &[TaskResult], suite: &Suite) -> Vec<String> {
    let scope: Option<HashSet<&String>> = (previous.selection.as_ref()).map(|selection| {
        selection
            .tasks
            .iter()
            .chain(&previous.not_reached)
            .collect()
    });
    let counts = counts(row_slots(rows));
    lacking_rows(previous, &counts, suite, |id| {
        scope
            .as_ref()
            .is_none_or(|scope| scope.iter().any(|s| *s == id))
    })
}

/// The ids of the suite's tasks in `scope` that have fewer rows in `counts` than `previous` ran
/// each task, in suite order; under a model matrix a task lacks rows when any of its models
/// does, and is named once.
fn lacking_rows(
    previous: &ResultsFile,
    counts: &HashMap<SlotRef, usize>,
    suite: &Suite,
    scope: impl Fn(&str) -> bool,
) -> Vec<String> {
    let repeats = previous.repeats.unwrap_or(1) as usize;
    let mut lacking: Vec<String> = Vec::new();
    for slot in suite.tasks.entries().iter().map(slot_of_entry) {
        if scope(slot.0)
            && counts.get(&slot).copied().unwrap_or(0) < repeats
            && lacking.last().is_none_or(|last| last != slot.0)
        {
            lacking.push(slot.0.to_owned());
        }
    }
    lacking
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::load_suite_from_str;

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
            repeats.iter().map(|&r| RowKey::new("a", r)).collect()
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
        let whole = interrupted(serde_json::Value::Null, &[]);
        assert_eq!(unreached(&whole, &whole.tasks, &suite), ["b", "c"]);
        let of_selection = interrupted(
            serde_json::json!({"only": ["a", "b"], "tasks": ["a", "b"]}),
            &[],
        );
        assert_eq!(unreached(&of_selection, &of_selection.tasks, &suite), ["b"]);
        // A rerun of `a` that left `c` not reached: `b` was never in scope.
        let of_rerun = interrupted(
            serde_json::json!({"rerun_failed": "r.json", "tasks": ["a"]}),
            &["c"],
        );
        assert_eq!(unreached(&of_rerun, &of_rerun.tasks, &suite), ["c"]);
        // What a rerun ran is reached.
        let rows = [row("a", 1, true), row("c", 1, false)];
        assert_eq!(unreached(&of_rerun, &rows, &suite), Vec::<String>::new());
    }
}
