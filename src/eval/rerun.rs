//! `eval SUITE --rerun-failed RESULTS`: which tasks of an earlier evaluation to run again (those
//! that failed, errored or were not reached when it was interrupted), and how their new rows
//! replace the old ones while the others are carried over.

use std::collections::{HashMap, HashSet};

use super::results::{ResultsFile, TaskResult};
use super::store::{Owing, RowKey, RowState, owed};
use super::suite::{Suite, TaskEntry};

/// A task under the model it was given (`None`: its own): what a row is of, but for its repeat.
pub type Slot = (String, Option<String>);

fn slot_of_row(row: &TaskResult) -> (&str, Option<&str>) {
    (row.id.as_str(), row.given_model())
}

fn slot_of_entry(entry: TaskEntry<'_>) -> (&str, Option<&str>) {
    (entry.id.as_str(), entry.model_name)
}

/// The (task, model)s of the suite that `previous` says need another run: rows that fail the
/// evaluation (a failed expectation or an unexpected internal error); when `previous` was
/// interrupted, the tasks it did not reach ([`unreached`]); and when it covered the whole suite (a
/// row for each of its tasks), tasks added to the suite since. Which of those the rerun owes is
/// [`owed`]'s rule (a (task, model)'s repeats run again together), over the ones `previous`
/// speaks for.
pub fn failed_ids(previous: &ResultsFile, suite: &Suite) -> HashSet<Slot> {
    let mut rows_of: HashMap<(&str, Option<&str>), usize> = HashMap::new();
    for row in &previous.tasks {
        *rows_of.entry(slot_of_row(row)).or_default() += 1;
    }
    // What `previous` speaks for: those it has rows of, and those it owed rows to.
    let mut slots: Vec<(&str, Option<&str>)> = Vec::new();
    let mut seen = HashSet::new();
    for row in &previous.tasks {
        if seen.insert(slot_of_row(row)) {
            slots.push(slot_of_row(row));
        }
    }
    // Results of an `--only`/`--skip` selection hold fewer tasks than their suite had; whole
    // results (a rerun's too, whatever it narrowed its rerun to) hold them all, but for the tasks
    // they list as not reached yet.
    let with_rows: HashSet<&str> = previous.tasks.iter().map(|row| row.id.as_str()).collect();
    let not_reached = previous
        .not_reached
        .iter()
        .filter(|id| !with_rows.contains(id.as_str()))
        .collect::<HashSet<_>>()
        .len();
    // Under a model matrix the suite counts each task once per model.
    let models = previous.models.len().max(1);
    let entries = suite.tasks.entries();
    let mut owed_rows: Vec<(&str, Option<&str>)> = Vec::new();
    if rows_of.len() + not_reached * models >= previous.suite.tasks {
        owed_rows.extend(
            entries
                .iter()
                .map(slot_of_entry)
                .filter(|slot| !rows_of.contains_key(slot)),
        );
    }
    let unreached = if previous.interrupted {
        unreached(previous, &previous.tasks, suite)
    } else {
        Vec::new()
    };
    let unreached: HashSet<&str> = unreached.iter().map(String::as_str).collect();
    let repeats = previous.repeats.unwrap_or(1) as usize;
    owed_rows.extend(entries.iter().map(slot_of_entry).filter(|slot| {
        unreached.contains(slot.0) && rows_of.get(slot).copied().unwrap_or(0) < repeats
    }));
    for slot in owed_rows {
        if seen.insert(slot) {
            slots.push(slot);
        }
    }
    let repeats = previous.repeats.unwrap_or(1);
    let scope: Vec<RowKey> = slots
        .iter()
        .flat_map(|(task, model)| {
            (1..=repeats).map(move |repeat| RowKey {
                task: (*task).to_owned(),
                model: model.map(str::to_owned),
                repeat,
            })
        })
        .collect();
    let states: Vec<RowState> = previous
        .tasks
        .iter()
        .map(|row| RowState {
            key: RowKey::of(row),
            passes: !row.fails(),
            complete: true,
        })
        .collect();
    owed(Owing::RerunFailed, &scope, &states)
        .into_iter()
        .map(|key| (key.task, key.model))
        .collect()
}

/// The tasks `previous` owed a run for want of rows (not reached by an interrupted evaluation, or
/// added to the suite since) that `rows` still lack, in suite order: what a rerun narrowed by
/// `--only`/`--skip` leaves for the next one, which its results list as `not_reached`.
pub fn still_owed(previous: &ResultsFile, rows: &[TaskResult], suite: &Suite) -> Vec<String> {
    let owed: HashSet<String> = failed_ids(previous, suite)
        .into_iter()
        .map(|(task, _)| task)
        .collect();
    lacking_rows(previous, rows, suite, |id| owed.contains(id))
}

/// The ids of the tasks an interrupted evaluation did not reach that `rows` still lack (with
/// `--repeat N`, fewer than N rows), in suite order: of the whole suite, of its `--only`/`--skip`
/// selection, or, for a rerun's results, of the tasks it set out to run and those it lists as
/// `not_reached` (what the evaluation it updated had left).
pub fn unreached(previous: &ResultsFile, rows: &[TaskResult], suite: &Suite) -> Vec<String> {
    let scope: Option<HashSet<&str>> = previous.selection.as_ref().map(|selection| {
        selection
            .tasks
            .iter()
            .chain(&previous.not_reached)
            .map(String::as_str)
            .collect()
    });
    lacking_rows(previous, rows, suite, |id| {
        scope.as_ref().is_none_or(|scope| scope.contains(id))
    })
}

/// The ids of the suite's tasks in `scope` that have fewer rows in `rows` than `previous` ran
/// each task, in suite order.
fn lacking_rows(
    previous: &ResultsFile,
    rows: &[TaskResult],
    suite: &Suite,
    scope: impl Fn(&str) -> bool,
) -> Vec<String> {
    let repeats = previous.repeats.unwrap_or(1) as usize;
    let mut rows_of: HashMap<(&str, Option<&str>), usize> = HashMap::new();
    for row in rows {
        *rows_of.entry(slot_of_row(row)).or_default() += 1;
    }
    let mut lacking: Vec<String> = Vec::new();
    for slot in suite.tasks.entries().iter().map(slot_of_entry) {
        // Under a model matrix a task lacks rows when any of its models does; it is named once.
        if scope(slot.0)
            && rows_of.get(&slot).copied().unwrap_or(0) < repeats
            && lacking.last().is_none_or(|last| last != slot.0)
        {
            lacking.push(slot.0.to_owned());
        }
    }
    lacking
}

/// The rows of the updated results: `rerun` rows, and every row of `previous` they do not
/// replace marked `carried_over`, in suite order (rows of tasks no longer in the suite last). A
/// row is replaced by the new row of the same task and repeat: an interrupted rerun that ran only
/// some repeats of a task keeps the earlier rows of the others.
pub fn carry_over(
    previous: &ResultsFile,
    rerun: Vec<TaskResult>,
    suite: &Suite,
) -> Vec<TaskResult> {
    let rerun_runs: HashSet<RowKey> = rerun.iter().map(RowKey::of).collect();
    let mut rows: Vec<TaskResult> = previous
        .tasks
        .iter()
        .filter(|t| !rerun_runs.contains(&RowKey::of(t)))
        .map(|t| TaskResult {
            carried_over: true,
            ..t.clone()
        })
        .chain(rerun)
        .collect();
    let entries = suite.tasks.entries();
    let position: HashMap<(&str, Option<&str>), usize> = entries
        .iter()
        .enumerate()
        .map(|(i, t)| (slot_of_entry(t), i))
        .collect();
    rows.sort_by_key(|t| {
        (
            position.get(&slot_of_row(t)).copied().unwrap_or(usize::MAX),
            t.repeat,
        )
    });
    rows
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
    fn an_interrupted_rerun_keeps_the_earlier_rows_of_the_repeats_it_did_not_reach() {
        let suite = load_suite_from_str(
            r#"{"name":"s","tasks":[{"id":"a","prompt":"p","model":{"actions":[{"type":"finish","answer":"x"}]}}]}"#,
            std::path::Path::new("."),
        )
        .unwrap();
        let previous: ResultsFile = serde_json::from_value(serde_json::json!({
            "format": "looptrace.results/1", "looptrace_version": "0", "created_at": "t",
            "suite": {"name": "s", "tasks": 1, "fingerprint": "f"}, "repeats": 3,
            "capture": "summary", "interrupted": true,
            "tasks": [row("a", 1, false), row("a", 2, false), row("a", 3, true)],
            "totals": {"tasks": 3, "exit_reasons": {}, "expectations": {"met": 1, "failed": 2, "none": 0}}
        }))
        .unwrap();
        let rows = carry_over(&previous, vec![row("a", 1, true)], &suite);
        let seen: Vec<(Option<u32>, bool)> =
            rows.iter().map(|t| (t.repeat, t.carried_over)).collect();
        assert_eq!(seen, [(Some(1), false), (Some(2), true), (Some(3), true)]);

        // A task with fewer rows than repeats in interrupted results runs again.
        let short = ResultsFile {
            tasks: vec![row("a", 1, true)],
            ..previous
        };
        assert!(failed_ids(&short, &suite).contains(&("a".to_owned(), None)));
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
