//! The rule every results file's rows keep, whoever reads them (`merge`, `eval --rerun-failed`):
//! a row is one run, so each (task, model, repeat) appears once, and with `--repeat N` every row says
//! which repeat in 1..=N it is, without none does. A file that breaks it was edited or put
//! together from others.

use std::collections::HashSet;
use std::fmt;

use super::results::ResultsFile;

/// The first row of a results file that breaks the rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowProblem {
    /// `tasks[index]` has a `repeat` its evaluation never writes (missing, extra or out of range).
    Repeat {
        index: usize,
        id: String,
        repeat: Option<u32>,
        repeats: u32,
    },
    /// `tasks[index]` is a run an earlier row already holds.
    Twice { index: usize, label: String },
}

impl fmt::Display for RowProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowProblem::Repeat {
                index,
                id,
                repeat,
                repeats,
            } => {
                let repeat = match repeat {
                    Some(k) => format!("with `repeat` {k}"),
                    None => "without `repeat`".to_owned(),
                };
                write!(
                    f,
                    "has `tasks[{index}]` ({id:?}) {repeat}, but its evaluation ran each task {}",
                    crate::plural(u64::from(*repeats), "time", "times")
                )
            }
            RowProblem::Twice { index, label } => write!(
                f,
                "holds task {label:?} twice (again at `tasks[{index}]`): the file was edited or put together from others"
            ),
        }
    }
}

/// Whether a row's `repeat` is one an evaluation that ran each task `repeats` times writes:
/// with `--repeat N` one of 1..=N, without none.
pub fn repeat_fits(repeat: Option<u32>, repeats: u32) -> bool {
    match repeat {
        Some(k) => repeats > 1 && (1..=repeats).contains(&k),
        None => repeats <= 1,
    }
}

/// Checks every row of `results` against the rule, returning the first that breaks it.
pub fn check_rows(results: &ResultsFile) -> Result<(), RowProblem> {
    let repeats = results.repeats.unwrap_or(1).max(1);
    let mut runs = HashSet::with_capacity(results.tasks.len());
    for (index, row) in results.tasks.iter().enumerate() {
        if !repeat_fits(row.repeat, repeats) {
            return Err(RowProblem::Repeat {
                index,
                id: row.id.clone(),
                repeat: row.repeat,
                repeats,
            });
        }
        if !runs.insert((row.id.as_str(), row.model.as_str(), row.repeat)) {
            return Err(RowProblem::Twice {
                index,
                label: row.label(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(repeats: Option<u32>, rows: &[(&str, Option<u32>)]) -> ResultsFile {
        let tasks: Vec<_> = rows
            .iter()
            .map(|(id, repeat)| {
                serde_json::json!({
                    "id": id, "repeat": repeat, "model": "actions", "exit_reason": "finished",
                    "steps_used": 1, "max_steps": 5, "tool_calls": 0, "tool_errors": 0,
                    "feedback": 0, "duration_ms": 0.0, "expectation": "met"
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "format": "looptrace.results/1", "looptrace_version": "0", "created_at": "t",
            "suite": {"name": "s", "tasks": 2, "fingerprint": "f"}, "repeats": repeats,
            "capture": "summary", "tasks": tasks,
            "totals": {"tasks": rows.len(), "exit_reasons": {}, "expectations": {"met": 0, "failed": 0, "none": 0}}
        }))
        .unwrap()
    }

    #[test]
    fn each_run_once_with_the_repeats_its_evaluation_ran() {
        assert_eq!(
            check_rows(&results(None, &[("a", None), ("b", None)])),
            Ok(())
        );
        assert_eq!(
            check_rows(&results(Some(2), &[("a", Some(2)), ("a", Some(1))])),
            Ok(())
        );
        assert_eq!(
            check_rows(&results(None, &[("a", None), ("a", None)])),
            Err(RowProblem::Twice {
                index: 1,
                label: "a".to_owned()
            })
        );
        for (repeats, repeat) in [
            (None, Some(1)),
            (Some(2), None),
            (Some(2), Some(3)),
            (Some(2), Some(0)),
        ] {
            let problem = check_rows(&results(repeats, &[("a", repeat)])).unwrap_err();
            assert!(
                matches!(problem, RowProblem::Repeat { index: 0, .. }),
                "{problem}"
            );
        }
        let twice = check_rows(&results(Some(2), &[("a", Some(1)), ("a", Some(1))])).unwrap_err();
        assert_eq!(
            twice.to_string(),
            "holds task \"a (repeat 1)\" twice (again at `tasks[1]`): the file was edited or put together from others"
        );
    }
}
