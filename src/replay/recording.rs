//! What replay needs from one recorded run: its model turns in order, each with the observation
//! that answered it, how the run ended, and a summarizer with the hash the recording used. Building
//! it is the replayability check: a run without full capture fails here, naming the first event
//! that lacks content.

use thiserror::Error;

use super::model::{RecordedTurn, ReplayError, ReplayModel};
use crate::gate::{GateVerdict, RecordedGate, RecordedVerdict};
use crate::run::{Action, ExitReason, Task};
use crate::trace::{
    Capture, Event, EventKind, HashAlgorithm, Observation, RecordedRun, Summarizer, ToolRef,
};

/// Why a recorded run cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ReplaySetupError {
    /// The run lacks content replay needs, or an event is malformed.
    #[error(transparent)]
    Recording(#[from] ReplayError),
    /// The summaries are keyed and no key is set.
    #[error(
        "run {run_id:?} was recorded with hmac-sha256 summaries: set LOOPTRACE_HASH_KEY to the key it was recorded with"
    )]
    MissingHashKey {
        /// The run.
        run_id: String,
    },
    /// The key set is not the one the run was recorded with.
    #[error(
        "run {run_id:?} was recorded with another LOOPTRACE_HASH_KEY: line {line}: the summary of the task does not match"
    )]
    WrongHashKey {
        /// The run.
        run_id: String,
        /// The `run_started` line.
        line: u64,
    },
    /// The budget is zero.
    #[error("run {run_id:?} cannot be replayed with max_steps 0: it must be at least 1")]
    InvalidMaxSteps {
        /// The run.
        run_id: String,
    },
}

/// A recorded observation, as replay compares and serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedObservation {
    /// The 1-based line it came from.
    pub line: u64,
    /// The step of its call.
    pub step: u64,
    /// The tool that answered.
    pub tool_name: String,
    /// The summary of the content.
    pub output: String,
    /// Whether it was an error: as recorded, or by the rule for older writers (an error if it has
    /// an `error_kind`) when `is_error` is missing.
    pub is_error: bool,
    /// Whether the recording has `is_error` at all; a missing one is not compared.
    pub is_error_recorded: bool,
    /// The error kind, for errors.
    pub error_kind: Option<String>,
    /// The exit status of a command tool that exited with one other than 0.
    pub exit_status: Option<i32>,
    /// Whether the output was decoded with U+FFFD.
    pub lossy: bool,
    /// The content itself.
    pub content: String,
}

/// One recorded model turn and the observation that answered it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedStep {
    /// The 1-based line of the turn.
    pub line: u64,
    /// The recorded step.
    pub step: u64,
    /// What the model proposed, or the invalid output it gave.
    pub turn: RecordedTurn,
    /// The observation of a tool call, if one was recorded.
    pub observation: Option<RecordedObservation>,
}

/// How a recorded run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedEnding {
    /// The exit reason.
    pub exit_reason: ExitReason,
    /// Steps used, if recorded.
    pub steps_used: Option<u32>,
    /// The error kind of a run that did not finish.
    pub error_kind: Option<String>,
    /// The error text of a run that did not finish.
    pub error: Option<String>,
}

/// A recorded run, checked and arranged for replay.
#[derive(Clone, Debug)]
pub struct Recording {
    run_id: String,
    model: ReplayModel,
    steps: Vec<RecordedStep>,
    ending: Option<RecordedEnding>,
    capture: Capture,
    summarizer: Summarizer,
    gate_verdicts: Vec<RecordedVerdict>,
    finish_gate_hash: Option<String>,
    tools: Vec<ToolRef>,
    workdir_hash: Option<String>,
}

impl Recording {
    /// Checks a recorded run and arranges it for replay. Summaries are recomputed with the hash the
    /// run was recorded with; for `hmac-sha256` that takes `LOOPTRACE_HASH_KEY`.
    pub fn from_run(run: &RecordedRun) -> Result<Recording, ReplaySetupError> {
        Recording::with_summarizer(run, Summarizer::from_env())
    }

    /// Like [`Recording::from_run`], with the summarizer given instead of read from the
    /// environment; it must use the hash the run was recorded with.
    pub fn with_summarizer(
        run: &RecordedRun,
        summarizer: Summarizer,
    ) -> Result<Recording, ReplaySetupError> {
        let model = ReplayModel::from_run(run)?;
        Recording::arranged(run, model, summarizer)
    }

    /// The rest of [`Recording::with_summarizer`] once the run's model is made.
    fn arranged(
        run: &RecordedRun,
        model: ReplayModel,
        summarizer: Summarizer,
    ) -> Result<Recording, ReplaySetupError> {
        let started = run.events.iter().find_map(|(line, e)| match &e.kind {
            EventKind::RunStarted(started) => Some((line, started)),
            _ => None,
        });
        let algorithm = started
            .and_then(|(_, e)| e.hash)
            .unwrap_or(HashAlgorithm::Sha256);
        let summarizer = match (algorithm, summarizer.algorithm()) {
            (HashAlgorithm::Sha256, _) => Summarizer::sha256(),
            (HashAlgorithm::HmacSha256, HashAlgorithm::HmacSha256) => summarizer,
            (HashAlgorithm::HmacSha256, HashAlgorithm::Sha256) => {
                return Err(ReplaySetupError::MissingHashKey {
                    run_id: run.run_id.clone(),
                });
            }
        };
        if let Some((line, event)) = started
            && algorithm == HashAlgorithm::HmacSha256
            && let (Some(task), Some(summary)) = (&event.task, &event.input_summary)
            && summarizer.summarize(task) != *summary
        {
            return Err(ReplaySetupError::WrongHashKey {
                run_id: run.run_id.clone(),
                line: *line,
            });
        }
        let steps = arrange_steps(run, &model)?;
        let ending = run.events.iter().find_map(|(_, e)| {
            let error = match &e.kind {
                EventKind::RunFinished(finished) => finished.error.clone(),
                EventKind::InternalError(internal) => internal.error.clone(),
                _ => None,
            };
            e.ending().map(|exit_reason| RecordedEnding {
                exit_reason,
                steps_used: e.steps_used(),
                error_kind: e.error_kind().map(str::to_owned),
                error,
            })
        });
        let gate_verdicts = recorded_verdicts(run)?;
        Ok(Recording {
            gate_verdicts,
            finish_gate_hash: started.and_then(|(_, e)| e.finish_gate_hash.clone()),
            tools: started
                .and_then(|(_, e)| e.tools.clone())
                .unwrap_or_default(),
            workdir_hash: started.and_then(|(_, e)| e.workdir_hash.clone()),
            run_id: run.run_id.clone(),
            capture: started
                .and_then(|(_, e)| e.capture)
                .unwrap_or(Capture::Full),
            model,
            steps,
            ending,
            summarizer,
        })
    }

    /// Like [`Recording::with_summarizer`], taking the run: the recorded observations' texts
    /// are moved into the recording instead of copied.
    pub fn from_owned(
        mut run: RecordedRun,
        summarizer: Summarizer,
    ) -> Result<Recording, ReplaySetupError> {
        let mut contents = Vec::new();
        for (_, event) in &mut run.events {
            if let EventKind::Observation(observation) = &mut event.kind
                && let Some(content) = &mut observation.content
            {
                contents.push(std::mem::take(content));
            }
        }
        // The model takes the turns' texts; nothing below reads them from the run again.
        let model = ReplayModel::from_run_taking(&mut run)?;
        let mut recording = Recording::arranged(&run, model, summarizer)?;
        // Every observation became the observation of one step, in file order.
        let observations = recording
            .steps
            .iter_mut()
            .filter_map(|step| step.observation.as_mut());
        for (observation, content) in observations.zip(contents) {
            observation.content = content;
        }
        Ok(recording)
    }

    /// Whether a recorded run shows any sign of a finish gate (a `finish_gate_hash` on
    /// `run_started`, or a `finish_gate` event): without one, [`Recording::has_gate`] is false for
    /// it, and this says so without arranging the recording.
    pub fn may_have_gate(run: &RecordedRun) -> bool {
        run.events.iter().any(|(_, e)| match &e.kind {
            EventKind::FinishGate(_) => true,
            EventKind::RunStarted(started) => started.finish_gate_hash.is_some(),
            _ => false,
        })
    }

    /// The tools `run_started` lists with their spec hashes (empty when not recorded).
    pub fn tools(&self) -> &[ToolRef] {
        &self.tools
    }

    /// The working-folder template's content hash at recording time.
    pub fn workdir_hash(&self) -> Option<&str> {
        self.workdir_hash.as_deref()
    }

    /// Every difference between the recorded tools and `now` (name and spec hash of each tool
    /// offered today), as lines for the user, before any step runs: a changed spec, a tool gone,
    /// a tool added. Nothing when the recording lists no tools.
    pub fn tool_changes(&self, now: &[(String, String)]) -> Vec<String> {
        if self.tools.is_empty() {
            return Vec::new();
        }
        let mut changes = Vec::new();
        for recorded in &self.tools {
            match now.iter().find(|(name, _)| *name == recorded.name) {
                None => changes.push(format!(
                    "tool `{}` was recorded but is not offered now",
                    recorded.name
                )),
                Some((_, hash)) if recorded.spec_hash.as_ref().is_some_and(|r| r != hash) => {
                    changes.push(format!(
                        "the spec of tool `{}` changed since the recording ({} now {hash})",
                        recorded.name,
                        recorded.spec_hash.as_deref().unwrap_or_default()
                    ))
                }
                Some(_) => {}
            }
        }
        for (name, _) in now {
            if !self.tools.iter().any(|t| t.name == *name) {
                changes.push(format!("tool `{name}` is offered now but was not recorded"));
            }
        }
        changes
    }

    /// The recorded run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The recorded task.
    pub fn task(&self) -> &Task {
        self.model.task()
    }

    /// The recorded step budget, if any.
    pub fn max_steps(&self) -> Option<u32> {
        self.model.max_steps()
    }

    /// A fresh model that returns the recorded turns in order.
    pub fn model(&self) -> ReplayModel {
        self.model.clone()
    }

    /// The model that returns the recorded turns in order, moved out rather than copied: for a
    /// replay that owns its recording and needs the model once. [`Recording::model`] gives a
    /// model without turns afterwards; the steps, task and budget stay.
    pub(crate) fn take_model(&mut self) -> ReplayModel {
        let empty = self.model.without_turns();
        std::mem::replace(&mut self.model, empty)
    }

    /// The recorded model turn entries in order, one per `model_action` or `model_feedback`: a
    /// turn with several tool calls has several entries with its step.
    pub fn steps(&self) -> &[RecordedStep] {
        &self.steps
    }

    /// The recorded entries of the turn at `step` (several for a multi-call turn), with the index
    /// of the first in [`Recording::steps`]; none past the recording.
    pub fn turn_entries(&self, step: u64) -> (usize, &[RecordedStep]) {
        let start = self.steps.partition_point(|entry| entry.step < step);
        let len = self.steps[start..]
            .iter()
            .take_while(|entry| entry.step == step)
            .count();
        (start, &self.steps[start..start + len])
    }

    /// How many model turns were recorded (a multi-call turn counts once).
    pub fn turn_count(&self) -> usize {
        self.steps
            .iter()
            .enumerate()
            .filter(|(at, entry)| *at == 0 || self.steps[at - 1].step != entry.step)
            .count()
    }

    /// The step of the last recorded model turn (0 for none).
    pub fn last_step(&self) -> u64 {
        self.steps.last().map_or(0, |entry| entry.step)
    }

    /// How the run ended; `None` for an incomplete recording.
    pub fn ending(&self) -> Option<&RecordedEnding> {
        self.ending.as_ref()
    }

    /// The capture mode the run was recorded with.
    pub fn capture(&self) -> Capture {
        self.capture
    }

    /// Summarizes text with the hash the recording used.
    pub fn summarizer(&self) -> &Summarizer {
        &self.summarizer
    }

    /// The recorded finish gate verdicts in order.
    pub fn gate_verdicts(&self) -> &[RecordedVerdict] {
        &self.gate_verdicts
    }

    /// Whether a finish gate checked the recorded run's finishes.
    pub fn has_gate(&self) -> bool {
        self.finish_gate_hash.is_some() || !self.gate_verdicts.is_empty()
    }

    /// A gate serving the recorded verdicts in order.
    pub fn recorded_gate(&self) -> RecordedGate {
        RecordedGate::new(
            self.gate_verdicts.clone(),
            self.finish_gate_hash.clone().unwrap_or_default(),
        )
    }

    /// The recorded observations in order.
    pub fn observations(&self) -> impl Iterator<Item = &RecordedObservation> {
        self.steps.iter().filter_map(|s| s.observation.as_ref())
    }

    /// The budget a replay uses: the one asked for, else the recorded one, else as many steps
    /// as the recording shows.
    pub fn budget(&self, requested: Option<u32>) -> Result<u32, ReplaySetupError> {
        let shown = self
            .ending
            .as_ref()
            .and_then(|e| e.steps_used)
            .unwrap_or(0)
            .max(u32::try_from(self.steps.len()).unwrap_or(u32::MAX))
            .max(1);
        match requested.or(self.max_steps()).unwrap_or(shown) {
            0 => Err(ReplaySetupError::InvalidMaxSteps {
                run_id: self.run_id.clone(),
            }),
            n => Ok(n),
        }
    }
}

/// Pairs each recorded turn with the observation that follows it.
fn arrange_steps(
    run: &RecordedRun,
    model: &ReplayModel,
) -> Result<Vec<RecordedStep>, ReplaySetupError> {
    let mut turns = model.turns().iter();
    let mut steps: Vec<RecordedStep> = Vec::new();
    for (line, event) in &run.events {
        match &event.kind {
            EventKind::ModelAction(_) | EventKind::ModelFeedback(_) => {
                // `ReplayModel::from_run` made one turn per such event, in this order.
                let Some((step, turn)) = turns.next() else {
                    return Err(malformed(run, *line, "a model turn the replay model lacks"));
                };
                steps.push(RecordedStep {
                    line: *line,
                    step: *step,
                    turn: turn.clone(),
                    observation: None,
                });
            }
            EventKind::Observation(observation) => {
                let observation = observation_of(run, *line, event, observation)?;
                let Some(last) = steps.last_mut() else {
                    return Err(malformed(
                        run,
                        *line,
                        "an observation with no tool call before it",
                    ));
                };
                if !matches!(last.turn, RecordedTurn::Action(Action::ToolCall(_))) {
                    return Err(malformed(
                        run,
                        *line,
                        &format!(
                            "an observation after a model turn that is not a tool call (line {})",
                            last.line
                        ),
                    ));
                }
                if let Some(first) = &last.observation {
                    return Err(malformed(
                        run,
                        *line,
                        &format!(
                            "a second observation for the tool call of line {} (the first is line {})",
                            last.line, first.line
                        ),
                    ));
                }
                last.observation = Some(observation);
            }
            _ => {}
        }
    }
    Ok(steps)
}

/// The `finish_gate` events of a run, which need `accepted` and, for the text, full capture.
fn recorded_verdicts(run: &RecordedRun) -> Result<Vec<RecordedVerdict>, ReplaySetupError> {
    let gate_events = run.events.iter().filter_map(|(line, e)| match &e.kind {
        EventKind::FinishGate(gate) => Some((line, e, gate)),
        _ => None,
    });
    gate_events
        .map(|(line, event, gate)| {
            let missing = |field: &'static str| {
                ReplaySetupError::Recording(ReplayError::MissingContent {
                    run_id: run.run_id.clone(),
                    line: *line,
                    event_type: event.event_type().to_owned(),
                    step: event.step,
                    field,
                })
            };
            Ok(RecordedVerdict {
                step: event.step,
                verdict: GateVerdict {
                    accepted: gate.accepted.ok_or_else(|| missing("accepted"))?,
                    output: gate.content.clone().ok_or_else(|| missing("content"))?,
                },
            })
        })
        .collect()
}

fn observation_of(
    run: &RecordedRun,
    line: u64,
    event: &Event,
    observation: &Observation,
) -> Result<RecordedObservation, ReplaySetupError> {
    let missing = |field: &'static str| {
        ReplaySetupError::Recording(ReplayError::MissingContent {
            run_id: run.run_id.clone(),
            line,
            event_type: event.event_type().to_owned(),
            step: event.step,
            field,
        })
    };
    Ok(RecordedObservation {
        line,
        step: event.step,
        tool_name: observation
            .tool_name
            .clone()
            .ok_or_else(|| missing("tool_name"))?,
        output: observation
            .output
            .clone()
            .ok_or_else(|| missing("output"))?,
        is_error: observation.is_error_by_rule(),
        is_error_recorded: observation.is_error.is_some(),
        error_kind: observation.error_kind.clone(),
        exit_status: observation.exit_status,
        lossy: observation.lossy.unwrap_or(false),
        content: observation
            .content
            .clone()
            .ok_or_else(|| missing("content"))?,
    })
}

fn malformed(run: &RecordedRun, line: u64, problem: &str) -> ReplaySetupError {
    ReplaySetupError::Recording(ReplayError::Malformed {
        run_id: run.run_id.clone(),
        line,
        problem: problem.to_owned(),
    })
}
