//! Which rows a new run owes: the one rule `--resume` and `--rerun-failed` share, a pure function
//! of what the run is responsible for and the rows its parents hold.

use std::collections::{HashMap, HashSet};

use super::row_key::RowKey;

/// Why a run is started over earlier ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owing {
    /// `--resume`: every identity in scope without a row.
    Resume,
    /// `--rerun-failed`: every identity of a (task, model) in scope that has a failing row or
    /// lacks one; a task's repeats run again together.
    RerunFailed,
}

/// The identities in `scope` (in its order) that a new run owes, given the rows its parents hold:
/// each row's identity and whether it passes (the rule of `RULES.md`). Every row was appended
/// after its run's trace was written whole, so a row held is a run recorded.
pub fn owed(owing: Owing, scope: &[RowKey], rows: &[(RowKey, bool)]) -> Vec<RowKey> {
    let held: HashMap<&RowKey, bool> = rows.iter().map(|(key, passes)| (key, *passes)).collect();
    let slot = |key: &RowKey| (key.task.clone(), key.model.clone());
    let failing: HashSet<_> = (scope.iter())
        .filter(|key| owing == Owing::RerunFailed && held.get(key) != Some(&true))
        .map(slot)
        .collect();
    (scope.iter())
        .filter(|key| !held.contains_key(key) || failing.contains(&slot(key)))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Rows = Vec<(RowKey, bool)>;

    fn scope_and_rows() -> impl Strategy<Value = (Vec<RowKey>, Rows)> {
        (1usize..6, 1u32..4).prop_flat_map(|(tasks, repeats)| {
            let scope: Vec<RowKey> = (0..tasks)
                .flat_map(|t| (1..=repeats).map(move |r| RowKey::with(&format!("t{t}"), None, r)))
                .collect();
            let n = scope.len();
            // Each identity: no row, or a row passing or not; plus rows out of scope (a task
            // left the suite) that must never be owed.
            (
                Just(scope),
                proptest::collection::vec(proptest::option::of(any::<bool>()), n),
                proptest::collection::vec(any::<bool>(), 0..3),
            )
                .prop_map(|(scope, states, strays)| {
                    let mut rows: Rows = (scope.iter().zip(states))
                        .filter_map(|(key, passes)| passes.map(|p| (key.clone(), p)))
                        .collect();
                    rows.extend(
                        (strays.into_iter().enumerate()).map(|(i, passes)| {
                            (RowKey::with(&format!("gone{i}"), None, 1), passes)
                        }),
                    );
                    (scope, rows)
                })
        })
    }

    /// The rows a run owes, once run and passing, leave nothing owed.
    fn settle(scope: &[RowKey], rows: &[(RowKey, bool)], owed: &[RowKey]) -> Rows {
        let owed: HashSet<&RowKey> = owed.iter().collect();
        let mut settled: Rows = rows
            .iter()
            .filter(|(key, _)| !owed.contains(key))
            .cloned()
            .collect();
        settled.extend(
            scope
                .iter()
                .filter(|k| owed.contains(k))
                .map(|key| (key.clone(), true)),
        );
        settled
    }

    proptest! {
        #[test]
        fn a_resume_owes_exactly_the_identities_without_a_row((scope, rows) in scope_and_rows()) {
            let owed = owed(Owing::Resume, &scope, &rows);
            for key in &scope {
                let held = rows.iter().any(|(k, _)| k == key);
                prop_assert_eq!(owed.contains(key), !held);
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
                    rows.iter().find(|(r, _)| r == k).is_none_or(|(_, passes)| !passes)
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
