//! What an evaluation gives its agent tasks: where their working folders and output logs go,
//! and the earlier results `eval --replay-models` answers their model calls from.

use std::path::{Path, PathBuf};

use super::recordings::ModelRecordings;

/// Where agent tasks work and log, and what they replay.
#[derive(Clone, Copy, Debug)]
pub struct AgentOptions<'a> {
    /// The folder holding each agent task's fresh working folder (`<folder>/<task-id>/`, or
    /// `<folder>/r<repeat>/<task-id>/` with repeats) when the suite's tools file has no template.
    pub work_dir: &'a Path,
    /// Where each attempt's output goes (`<folder>/<run-id>.agent.log`).
    pub log_dir: &'a Path,
    /// `eval --replay-models`: the recordings to answer from instead of the model servers.
    pub replay: Option<&'a ModelRecordings>,
}

impl AgentOptions<'_> {
    /// The log of the run `run_id`.
    pub fn log_of(&self, run_id: &str) -> PathBuf {
        self.log_dir.join(format!("{run_id}.agent.log"))
    }
}
