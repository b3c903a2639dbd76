//! What a replay found: for each run a verdict (`faithful` or `diverged`) and the divergences, each
//! with the step, what differed, and the recorded and actual values side by side. Also the result
//! of `--check`, which tells whether a run can be replayed without running it.

use std::fmt;

use serde::Serialize;

/// Whether a rerun came out the same as its recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No difference was found.
    Faithful,
    /// At least one difference was found.
    Diverged,
}

impl Verdict {
    /// `faithful` or `diverged`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faithful => "faithful",
            Verdict::Diverged => "diverged",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kinds of difference between a rerun and its recording, as snake_case names in JSON output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DivergenceKind {
    /// The model proposed another action, or another invalid output, than the recording has
    /// (raw replay through today's adapter).
    ModelTurn,
    /// The observation names another tool than the recorded one.
    ToolName,
    /// The observation is an error where the recorded one is not, or the other way round.
    IsError,
    /// The observation's error kind differs.
    ErrorKind,
    /// The observation's content differs: another summary hash, or another text with full capture.
    Observation,
    /// The rerun asked for more than the recording holds: "recording ends at step N".
    RecordingEnded,
    /// A recorded model turn the rerun never reached.
    NotReached,
    /// The run ended with another exit reason.
    ExitReason,
    /// The run used another number of steps.
    StepsUsed,
    /// The finish gate accepted where the recorded gate rejected, or the other way round.
    GateVerdict,
    /// The request today's loop would send to a live model hashes differently from the recorded
    /// `request_hash` (raw replay of a live run).
    Request,
}

impl DivergenceKind {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            DivergenceKind::ModelTurn => "model_turn",
            DivergenceKind::ToolName => "tool_name",
            DivergenceKind::IsError => "is_error",
            DivergenceKind::ErrorKind => "error_kind",
            DivergenceKind::Observation => "observation",
            DivergenceKind::RecordingEnded => "recording_ended",
            DivergenceKind::NotReached => "not_reached",
            DivergenceKind::ExitReason => "exit_reason",
            DivergenceKind::StepsUsed => "steps_used",
            DivergenceKind::GateVerdict => "gate_verdict",
            DivergenceKind::Request => "request",
        }
    }

    /// A short phrase for people: what differed.
    pub fn describe(self) -> &'static str {
        match self {
            DivergenceKind::ModelTurn => "the model turn differs",
            DivergenceKind::ToolName => "the observation's tool name differs",
            DivergenceKind::IsError => "the observation's is_error differs",
            DivergenceKind::ErrorKind => "the error kind differs",
            DivergenceKind::Observation => "the observation differs",
            DivergenceKind::RecordingEnded => "the recording ended",
            DivergenceKind::NotReached => "a recorded model turn was never reached",
            DivergenceKind::ExitReason => "the exit reason differs",
            DivergenceKind::StepsUsed => "the steps used differ",
            DivergenceKind::GateVerdict => "the finish gate's verdict differs",
            DivergenceKind::Request => "the request to the model differs",
        }
    }
}

impl fmt::Display for DivergenceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One difference between a rerun and its recording.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// The step where it shows.
    pub step: u64,
    /// What differed.
    pub what: DivergenceKind,
    /// The recorded value: a summary for observations, else the value itself.
    pub recorded: String,
    /// The rerun's value, in the same form.
    pub actual: String,
    /// The recorded text behind a summary, with full capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_text: Option<String>,
    /// The rerun's text behind a summary, when the recording has the text too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_text: Option<String>,
    /// For a request, the first JSON path where the recorded and actual bodies differ (the texts
    /// are then the values there), when the recording has the body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl Divergence {
    /// A divergence with values only, no texts.
    pub fn new(
        step: u64,
        what: DivergenceKind,
        recorded: impl Into<String>,
        actual: impl Into<String>,
    ) -> Self {
        Divergence {
            step,
            what,
            recorded: recorded.into(),
            actual: actual.into(),
            recorded_text: None,
            actual_text: None,
            path: None,
        }
    }
}

/// A field the recording lacks (older writers omit some), so it could not be compared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NotCompared {
    /// The step of the event that lacks it.
    pub step: u64,
    /// The event that lacks it: `observation` or `run_finished`.
    pub event: &'static str,
    /// `is_error`, `error_kind` or `steps_used`.
    pub field: &'static str,
}

/// The outcome of a rerun that the replay ended at its first divergence.
pub const STOPPED_OUTCOME: &str = "stopped";

/// How a run ended, recorded or rerun.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ending {
    /// An exit reason; `incomplete` for a recording without an ending; `stopped` for a rerun the
    /// replay ended before its next model turn, at its first divergence.
    pub outcome: &'static str,
    /// Steps used, when the run recorded an ending; for a stopped rerun, the step it was stopped
    /// at.
    pub steps_used: Option<u32>,
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.outcome == STOPPED_OUTCOME {
            return match self.steps_used {
                Some(step) => write!(f, "stopped before step {step}"),
                None => f.write_str(STOPPED_OUTCOME),
            };
        }
        match self.steps_used {
            Some(1) => write!(f, "{} in 1 step", self.outcome),
            Some(n) => write!(f, "{} in {n} steps", self.outcome),
            None => f.write_str(self.outcome),
        }
    }
}

/// The replay of one recorded run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunReplay {
    /// The recorded run's id.
    pub run_id: String,
    /// `faithful` when no divergence was found.
    pub verdict: Verdict,
    /// The step budget of the rerun.
    pub max_steps: u32,
    /// How the recording ended.
    pub recorded: Ending,
    /// How the rerun ended.
    pub actual: Ending,
    /// Every difference found, in the order they showed.
    pub divergences: Vec<Divergence>,
    /// Fields the recording lacks, which could not be compared.
    pub not_compared: Vec<NotCompared>,
    /// The replay stopped at the first divergence, so later ones are not reported.
    pub stopped: bool,
    /// The run id of the rerun in the trace it was recorded to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_run_id: Option<String>,
}

/// The result of checking one run without running it (`--check`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunCheck {
    /// The recorded run's id.
    pub run_id: String,
    /// Always `true`: a run that cannot be replayed is an error, not a check result.
    pub replayable: bool,
    /// Recorded model turns (actions and invalid outputs).
    pub model_turns: usize,
    /// Recorded observations.
    pub observations: usize,
    /// The step budget a replay would use.
    pub max_steps: u32,
    /// How the recording ended.
    pub recorded: Ending,
}
