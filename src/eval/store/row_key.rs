//! Row identity: a results row is (task, model, repeat) as `RULES.md` defines it.

use crate::eval::{TaskEntry, TaskResult};

/// The identity of a results row. `model` is the model as given from outside the task (a
/// `--model` SPEC, a name from the suite's `models`, `defaults.model`); `None` for a row of the
/// task's own model.
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
        RowKey::with(&row.id, row.given_model(), row.repeat.unwrap_or(1))
    }

    /// The identities of the runs of `entries` in output order: each task's `repeats` together
    /// (under a model matrix, a task once per model).
    pub fn scope<'a>(
        entries: impl Iterator<Item = TaskEntry<'a>>,
        repeats: u32,
    ) -> impl Iterator<Item = RowKey> {
        (entries.flat_map(move |entry| (1..=repeats).map(move |repeat| (entry, repeat))))
            .map(|(entry, repeat)| RowKey::with(entry.id.as_str(), entry.model_name, repeat))
    }

    /// The identity of task `task`'s `repeat` run under `model` (`None`: its own).
    pub fn with(task: &str, model: Option<&str>, repeat: u32) -> RowKey {
        RowKey {
            task: task.to_owned(),
            model: model.map(str::to_owned),
            repeat,
        }
    }
}
