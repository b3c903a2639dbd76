//! What an evaluation gives its agent tasks: where their working folders and output logs go,
//! and the earlier results `eval --replay-models` answers their model calls from.

use std::path::{Path, PathBuf};

use super::recordings::ModelRecordings;
use crate::model::live::api_key_from_env;
use crate::proxy::{IgnoredPath, Recordings};

/// What answers an attempt's calls: the recording to replay (else the server), and the key sent
/// upstream.
pub type Answers = (Option<Recordings>, Option<String>);

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
    /// What answers the row `(task, model, repeat)`'s calls: the recording of its earlier run
    /// (`--replay-models`; no key then, as nothing goes upstream), or the server with the key in
    /// `api_key_env`. `Err` is the message and the error kind of a run that cannot start.
    pub fn answers(
        &self,
        (task, model, repeat): (&str, &str, u32),
        ignore: &[IgnoredPath],
        api_key_env: Option<&str>,
    ) -> Result<Answers, (String, &'static str)> {
        match self.replay {
            Some(recordings) => recordings
                .for_row(task, model, repeat, ignore)
                .map(|found| (Some(found), None))
                .map_err(|message| (message, "not_replayable")),
            None => api_key_from_env(api_key_env)
                .map(|key| (None, key))
                .map_err(|message| (message, "auth_failed")),
        }
    }

    /// The log of the run `run_id`.
    pub fn log_of(&self, run_id: &str) -> PathBuf {
        self.log_dir.join(format!("{run_id}.agent.log"))
    }
}
