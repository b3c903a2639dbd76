//! A suite's inline tasks (its `tasks` array) read again from the suite's text as they run:
//! what an evaluation of a few of a large suite's tasks holds instead of every task. Each task
//! was checked when the suite loaded; reading it again gives the same task.

use std::ops::Range;
use std::sync::Arc;

use super::read::read_task;
use super::resolve::Context;
use super::task::SuiteTask;

/// The suite's text and where each task's text is in it.
#[derive(Clone, Debug)]
pub struct InlineTasks {
    text: Arc<String>,
    spans: Vec<Range<usize>>,
    context: Context,
}

impl InlineTasks {
    /// Tasks at `spans` of `text`, each checked against `context` when the suite loaded.
    pub fn new(text: Arc<String>, spans: Vec<Range<usize>>, context: Context) -> InlineTasks {
        InlineTasks {
            text,
            spans,
            context,
        }
    }

    /// Task `i`, read again from its text.
    pub fn task(&self, i: usize) -> Result<SuiteTask, String> {
        let text = self
            .spans
            .get(i)
            .and_then(|span| self.text.get(span.clone()))
            .ok_or_else(|| format!("no task {i} in the suite"))?;
        let root = format!("$.tasks[{i}]");
        read_task(text, &root, &self.context).map_err(|problems| {
            // Only a file the task reads (a recording) can have changed since the check.
            let listed: Vec<String> = problems
                .into_iter()
                .map(|(path, message)| format!("{path}: {message}"))
                .collect();
            format!(
                "{root} no longer reads as it did when eval checked it: {}",
                listed.join("; ")
            )
        })
    }
}
