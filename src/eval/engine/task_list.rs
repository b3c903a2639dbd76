//! The tasks a plan runs, in suite order: the suite's own list when nothing narrows it, or the
//! tasks `--only`/`--skip`, a rerun and a shard chose. Sources that add tasks (a streamed task
//! file, a sample, a model matrix) fit here as further variants.

use crate::eval::{Suite, SuiteTask};

/// The tasks a plan runs.
pub(crate) enum TaskList {
    /// Every task of the suite, borrowed from it (no copy for the common case).
    All,
    /// The tasks chosen, in suite order.
    Chosen(Vec<SuiteTask>),
}

impl TaskList {
    /// The tasks, given the suite they come from.
    pub(crate) fn as_slice<'a>(&'a self, suite: &'a Suite) -> &'a [SuiteTask] {
        match self {
            TaskList::All => &suite.tasks,
            TaskList::Chosen(tasks) => tasks,
        }
    }
}
