//! Row identity: a results row is (task, model, repeat) as `RULES.md` defines it.

use crate::eval::TaskResult;

/// The identity of a results row. `model` is the model as given on the command line or in a
/// suite's `models` section; today's rows run each task's own model, so it is `None` for them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowKey {
    /// The task's id.
    pub task: String,
    /// The model as given, when the evaluation ran several for one task.
    pub model: Option<String>,
    /// Which repeat (from 1; 1 without `--repeat`).
    pub repeat: u32,
}

impl RowKey {
    /// The identity of `row`.
    pub fn of(row: &TaskResult) -> RowKey {
        RowKey {
            task: row.id.clone(),
            model: None,
            repeat: row.repeat.unwrap_or(1),
        }
    }

    /// The identity of task `task`'s `repeat` run of its own model.
    pub fn new(task: &str, repeat: u32) -> RowKey {
        RowKey {
            task: task.to_owned(),
            model: None,
            repeat,
        }
    }
}
