//! The values nested in trace fields: the capture mode, scores, and the references a
//! `run_started` event makes to the recording it replays, its source, its model and its tools.

use serde::{Deserialize, Serialize};

/// How much of a run's content a trace keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capture {
    /// Character counts and hashes only (the default).
    #[default]
    Summary,
    /// The text itself as well: needed for replay.
    Full,
}

impl Capture {
    /// The name on disk.
    pub fn as_str(self) -> &'static str {
        match self {
            Capture::Summary => "summary",
            Capture::Full => "full",
        }
    }
}

/// One scorer's verdict on a run: `../shared` RULES' `{name, kind, passed, value, explanation}`,
/// every key written (null when unknown) so that readers see one shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The scorer's name.
    pub name: String,
    /// What kind of scorer gave it (`inspect` for a score imported from an Inspect log).
    pub kind: String,
    /// Whether the run passed this scorer; null when the score carries no verdict.
    #[serde(default)]
    pub passed: Option<bool>,
    /// The score as a number, when it has one.
    #[serde(default)]
    pub value: Option<f64>,
    /// Why, under the capture rules: a summary unless full capture.
    #[serde(default)]
    pub explanation: Option<String>,
}

impl Score {
    /// The verdict of a list of scores by the pass rule: `Some(true)` when every score with a
    /// verdict passed, `Some(false)` when one failed, `None` when none has a verdict.
    pub fn verdict(scores: &[Score]) -> Option<bool> {
        scores
            .iter()
            .filter_map(|score| score.passed)
            .reduce(|all, passed| all && passed)
    }
}

/// Which recorded run a replay reran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayOf {
    /// The recording's file name (no folders: paths are not recorded).
    pub source: String,
    /// The recorded run id.
    pub run_id: String,
}

/// Where an imported run came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSource {
    /// The `--from` format name.
    pub format: String,
    /// The file name (never a path).
    pub file: String,
    /// The source's own id of the run, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_id: Option<String>,
}

/// A model by provider and name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    /// Who serves it, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Its name.
    pub name: String,
}

/// A tool offered to the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRef {
    /// The registered name.
    pub name: String,
    /// Hash of its spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
}
