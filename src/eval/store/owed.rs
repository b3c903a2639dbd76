//! Which rows a new run owes: the one rule `--resume` and `--rerun-failed` share, a pure function
//! of what the run is responsible for and the rows its parents hold.

use std::collections::{HashMap, HashSet};

use super::row_key::RowKey;

/// Why a run is started over earlier ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owing {
    /// `--resume`: every identity in scope without a complete row.
    Resume,
    /// `--rerun-failed`: every identity of a (task, model) in scope that has a failing row or
    /// lacks one; a task's repeats run again together.
    RerunFailed,
}

/// What the owing rule needs of a row its parents hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowState {
    /// The row's identity.
    pub key: RowKey,
    /// Whether the row passes (the rule of `RULES.md`: every expectation and scorer passes, or it
    /// finished when it has none).
    pub passes: bool,
    /// Whether the run the row names is whole in its trace (a crash can record a row whose trace
    /// was cut short only with `--trace-flush run`; a resume runs it again).
    pub complete: bool,
}

/// The identities in `scope` (in its order) that a new run owes, given the rows its parents hold.
pub fn owed(owing: Owing, scope: &[RowKey], rows: &[RowState]) -> Vec<RowKey> {
    let held: HashMap<&RowKey, &RowState> = rows.iter().map(|row| (&row.key, row)).collect();
    match owing {
        Owing::Resume => scope
            .iter()
            .filter(|key| held.get(key).is_none_or(|row| !row.complete))
            .cloned()
            .collect(),
        Owing::RerunFailed => {
            let failing: HashSet<(&str, Option<&str>)> = scope
                .iter()
                .filter(|key| held.get(key).is_none_or(|row| !row.passes || !row.complete))
                .map(|key| (key.task.as_str(), key.model.as_deref()))
                .collect();
            scope
                .iter()
                .filter(|key| failing.contains(&(key.task.as_str(), key.model.as_deref())))
                .cloned()
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn scope_and_rows() -> impl Strategy<Value = (Vec<RowKey>, Vec<RowState>)> {
        (1usize..6, 1u32..4).prop_flat_map(|(tasks, repeats)| {
            let scope: Vec<RowKey> = (0..tasks)
                .flat_map(|t| (1..=repeats).map(move |r| RowKey::new(&format!("t{t}"), r)))
                .collect();
            let n = scope.len();
            // Each identity: no row, or a row passing or not, complete or not; plus rows out of
            // scope (a task left the suite) that must never be owed.
            (
                Just(scope),
                proptest::collection::vec(proptest::option::of((any::<bool>(), any::<bool>())), n),
                proptest::collection::vec((any::<bool>(), any::<bool>()), 0..3),
            )
                .prop_map(|(scope, states, strays)| {
                    let mut rows: Vec<RowState> = scope
                        .iter()
                        .zip(states)
                        .filter_map(|(key, state)| {
                            state.map(|(passes, complete)| RowState {
                                key: key.clone(),
                                passes,
                                complete,
                            })
                        })
                        .collect();
                    rows.extend(
                        strays
                            .into_iter()
                            .enumerate()
                            .map(|(i, (passes, complete))| RowState {
                                key: RowKey::new(&format!("gone{i}"), 1),
                                passes,
                                complete,
                            }),
                    );
                    (scope, rows)
                })
        })
    }

    /// The rows a run owes, once run and passing, leave nothing owed.
    fn settle(scope: &[RowKey], rows: &[RowState], owed: &[RowKey]) -> Vec<RowState> {
        let owed: HashSet<&RowKey> = owed.iter().collect();
        let mut settled: Vec<RowState> = rows
            .iter()
            .filter(|row| !owed.contains(&row.key))
            .cloned()
            .collect();
        settled.extend(
            scope
                .iter()
                .filter(|k| owed.contains(k))
                .map(|key| RowState {
                    key: key.clone(),
                    passes: true,
                    complete: true,
                }),
        );
        settled
    }

    proptest! {
        #[test]
        fn a_resume_owes_exactly_the_identities_without_a_complete_row((scope, rows) in scope_and_rows()) {
            let owed = owed(Owing::Resume, &scope, &rows);
            for key in &scope {
                let complete = rows.iter().any(|r| &r.key == key && r.complete);
                prop_assert_eq!(owed.contains(key), !complete);
            }
            // In scope order, each once.
            let positions: Vec<usize> = owed.iter().map(|k| scope.iter().position(|s| s == k).unwrap()).collect();
            prop_assert!(positions.windows(2).all(|w| w[0] < w[1]));
            // A resume of the resume owes nothing once those rows are written.
            let after = settle(&scope, &rows, &owed);
            prop_assert!(super::owed(Owing::Resume, &scope, &after).is_empty());
        }

        #[test]
        fn a_rerun_owes_whole_tasks_that_failed_or_lack_rows((scope, rows) in scope_and_rows()) {
            let owed = owed(Owing::RerunFailed, &scope, &rows);
            for key in &scope {
                let task_bad = scope.iter().filter(|k| k.task == key.task).any(|k| {
                    rows.iter().find(|r| &r.key == k).is_none_or(|r| !r.passes || !r.complete)
                });
                prop_assert_eq!(owed.contains(key), task_bad);
            }
            // Never an identity out of scope (a task no longer in the suite keeps its row).
            prop_assert!(owed.iter().all(|k| scope.contains(k)));
            // What a resume owes, a rerun owes too.
            let resumed = super::owed(Owing::Resume, &scope, &rows);
            prop_assert!(resumed.iter().all(|k| owed.contains(k)));
            let after = settle(&scope, &rows, &owed);
            prop_assert!(super::owed(Owing::RerunFailed, &scope, &after).is_empty());
        }
    }
}
