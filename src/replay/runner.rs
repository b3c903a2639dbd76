//! Replaying one recorded run: prepare it (the replayability check), rerun it through the agent
//! loop with the recorded model turns and live or recorded tools, and collect the verdict.

use std::io;
use std::rc::Rc;

use serde::Serialize;
use thiserror::Error;

use super::compare::{Comparator, StopFlag, StopGate};
use super::model::ReplayModel;
use super::recorded_tools::RecordedTools;
use super::recording::{Recording, ReplaySetupError};
use super::verdict::{Ending, RunCheck, RunReplay, STOPPED_OUTCOME, Verdict};
use super::wire::{RequestLog, WireReplayModel, WireSettings, is_live};
use crate::agent::{AgentError, InternalError, RunObserver, RunOptions, run_agent_with_gate};
use crate::gate::FinishGate;
use crate::model::Model;
use crate::run::RunOutcome;
use crate::tools::ToolRuntime;
use crate::trace::{RecordedRun, Summarizer};

/// What to do at a divergence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDivergence {
    /// End the rerun before its next model turn and report only the first divergence.
    #[default]
    Stop,
    /// Rerun to the end and report every divergence.
    Continue,
}

/// Which model turns a replay feeds the loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelSource {
    /// The recorded actions and invalid outputs, as parsed when they were recorded.
    #[default]
    Parsed,
    /// The recorded `raw_output` of every turn, parsed again by today's `JsonModelAdapter`, so an
    /// adapter change shows as a divergence. A live run's recorded `raw_response` bodies go
    /// through today's adapter for its `api` instead, and every request is checked against the
    /// recorded `request_hash`.
    Raw,
}

/// Where observations come from.
#[derive(Clone, Copy)]
pub enum ToolSource<'a> {
    /// Tools run again in this runtime and every fresh observation is compared with the recorded one.
    Live(&'a dyn ToolRuntime),
    /// Observations are served from the recording ([`RecordedTools`]).
    Recorded,
}

impl ToolSource<'_> {
    /// Which of the two this is.
    pub fn mode(&self) -> ToolMode {
        match self {
            ToolSource::Live(_) => ToolMode::Live,
            ToolSource::Recorded => ToolMode::Recorded,
        }
    }
}

/// Live or recorded tools, as named in output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    /// Tools ran again.
    Live,
    /// Observations came from the recording.
    Recorded,
}

impl ToolMode {
    /// `live` or `recorded`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolMode::Live => "live",
            ToolMode::Recorded => "recorded",
        }
    }
}

/// How to replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Another step budget than the recorded one.
    pub max_steps: Option<u32>,
    /// Stop at the first divergence or report them all.
    pub on_divergence: OnDivergence,
    /// Parsed or raw model turns.
    pub model: ModelSource,
}

/// The rerun could not be recorded.
#[derive(Debug, Error)]
#[error("failed to record the rerun of run {run_id:?}: {source}")]
pub struct ReplayRunError {
    /// The recorded run.
    pub run_id: String,
    /// What the observer said.
    pub source: io::Error,
}

/// A run checked for replay and ready to rerun.
pub struct PreparedReplay {
    recording: Recording,
    model: Box<dyn Model>,
    /// Where a replayed live wire logs its request divergences.
    requests: Option<RequestLog>,
    max_steps: u32,
    options: ReplayOptions,
}

impl std::fmt::Debug for PreparedReplay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedReplay")
            .field("run_id", &self.recording.run_id())
            .field("max_steps", &self.max_steps)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl PreparedReplay {
    /// Checks that `run` can be replayed with `options` and builds its model. Summaries are
    /// compared with the hash the run was recorded with (`LOOPTRACE_HASH_KEY` for HMAC).
    pub fn new(run: &RecordedRun, options: ReplayOptions) -> Result<Self, ReplaySetupError> {
        PreparedReplay::with_summarizer(run, options, Summarizer::from_env())
    }

    /// Like [`PreparedReplay::new`] with the HMAC summarizer given instead of read from the
    /// environment.
    pub fn with_summarizer(
        run: &RecordedRun,
        options: ReplayOptions,
        summarizer: Summarizer,
    ) -> Result<Self, ReplaySetupError> {
        PreparedReplay::with_wire(run, options, summarizer, &WireSettings::default())
    }

    /// Like [`PreparedReplay::with_summarizer`]; a raw replay of a live run builds its requests
    /// with `wire` (system prompt, sampling settings, tools offered).
    pub fn with_wire(
        run: &RecordedRun,
        options: ReplayOptions,
        summarizer: Summarizer,
        wire: &WireSettings,
    ) -> Result<Self, ReplaySetupError> {
        let live_raw = options.model == ModelSource::Raw && is_live(run);
        if live_raw {
            // The response bodies are checked first: a summary-capture trace is refused for them.
            WireReplayModel::check(run)?;
        }
        let mut recording = Recording::with_summarizer(run, summarizer)?;
        let max_steps = recording.budget(options.max_steps)?;
        let mut requests = None;
        let model: Box<dyn Model> = match options.model {
            ModelSource::Parsed => Box::new(recording.take_model()),
            ModelSource::Raw if live_raw => {
                let (model, log) = WireReplayModel::new(run, &recording, wire)?;
                requests = Some(log);
                Box::new(model)
            }
            ModelSource::Raw => Box::new(ReplayModel::raw_from_run(run)?.1),
        };
        Ok(PreparedReplay {
            recording,
            model,
            requests,
            max_steps,
            options,
        })
    }

    /// Like [`PreparedReplay::with_wire`], taking the run: a replay of the parsed turns moves the
    /// recorded texts instead of copying them.
    pub fn with_wire_owned(
        run: RecordedRun,
        options: ReplayOptions,
        summarizer: Summarizer,
        wire: &WireSettings,
    ) -> Result<Self, ReplaySetupError> {
        if options.model != ModelSource::Parsed {
            return PreparedReplay::with_wire(&run, options, summarizer, wire);
        }
        let mut recording = Recording::from_owned(run, summarizer)?;
        let max_steps = recording.budget(options.max_steps)?;
        Ok(PreparedReplay {
            model: Box::new(recording.take_model()),
            recording,
            requests: None,
            max_steps,
            options,
        })
    }

    /// The checked recording.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    /// The budget the rerun will have.
    pub fn max_steps(&self) -> u32 {
        self.max_steps
    }

    /// What `--check` reports for this run.
    pub fn check(&self) -> RunCheck {
        RunCheck {
            run_id: self.recording.run_id().to_owned(),
            replayable: true,
            model_turns: self.recording.turn_count(),
            observations: self.recording.observations().count(),
            max_steps: self.max_steps,
            recorded: recorded_ending(&self.recording),
        }
    }

    /// Reruns the recorded run and compares it with the recording. `observer` receives every
    /// event of the rerun (a trace recorder, to keep it); its failure is the only error.
    pub fn run(
        self,
        tools: ToolSource<'_>,
        observer: &mut dyn RunObserver,
    ) -> Result<RunReplay, ReplayRunError> {
        self.run_with_gate(tools, None, observer)
    }

    /// [`PreparedReplay::run`] with a finish gate to rerun: its verdicts are compared with the
    /// recorded ones. Without one, a recording checked by a gate gets its recorded verdicts.
    pub fn run_with_gate(
        mut self,
        tools: ToolSource<'_>,
        gate: Option<&mut dyn FinishGate>,
        observer: &mut dyn RunObserver,
    ) -> Result<RunReplay, ReplayRunError> {
        let mut recorded_gate = self.recording.recorded_gate();
        let gate: Option<&mut dyn FinishGate> = match gate {
            Some(gate) => Some(gate as &mut dyn FinishGate),
            None if self.recording.has_gate() => Some(&mut recorded_gate as &mut dyn FinishGate),
            None => None,
        };
        let cassette;
        let runtime: &dyn ToolRuntime = match tools {
            ToolSource::Live(runtime) => runtime,
            ToolSource::Recorded => {
                cassette = RecordedTools::new(&self.recording);
                &cassette
            }
        };
        let stop: StopFlag = Rc::default();
        let stop_at_first = self.options.on_divergence == OnDivergence::Stop;
        let mut comparator =
            Comparator::new(&self.recording, observer, stop_at_first, stop.clone());
        if let Some(requests) = self.requests.take() {
            comparator = comparator.with_requests(requests);
        }
        let mut stop_gate = StopGate::new(self.model.as_mut(), stop);
        let task = self.recording.task().clone();
        let options = RunOptions {
            max_steps: self.max_steps,
        };
        let outcome = run_agent_with_gate(
            &task,
            &mut stop_gate,
            runtime,
            gate,
            options,
            &mut comparator,
        );
        let result = match outcome {
            Ok(result) => result,
            Err(AgentError::Internal {
                cause: InternalError::Observer(source),
                ..
            }) => {
                return Err(ReplayRunError {
                    run_id: self.recording.run_id().to_owned(),
                    source,
                });
            }
            Err(AgentError::Internal { result, .. }) => result,
            Err(AgentError::InvalidMaxSteps) => {
                // `Recording::budget` never gives 0.
                return Err(ReplayRunError {
                    run_id: self.recording.run_id().to_owned(),
                    source: io::Error::other("max_steps must be at least 1"),
                });
            }
        };
        let (divergences, not_compared) = comparator.into_findings();
        Ok(RunReplay {
            run_id: self.recording.run_id().to_owned(),
            verdict: if divergences.is_empty() {
                Verdict::Faithful
            } else {
                Verdict::Diverged
            },
            max_steps: self.max_steps,
            recorded: recorded_ending(&self.recording),
            actual: match stop_gate.refused_at() {
                Some(step) => Ending {
                    outcome: STOPPED_OUTCOME,
                    steps_used: Some(step),
                },
                None => Ending {
                    outcome: result.exit_reason.as_str(),
                    steps_used: Some(result.steps_used),
                },
            },
            stopped: stop_at_first && !divergences.is_empty(),
            divergences,
            not_compared,
            replay_run_id: None,
        })
    }
}

/// Replays one recorded run: [`PreparedReplay::new`] then [`PreparedReplay::run`]. For
/// regression tests of an agent's tools on recorded runs.
pub fn replay_run(
    run: &RecordedRun,
    tools: ToolSource<'_>,
    options: ReplayOptions,
    observer: &mut dyn RunObserver,
) -> Result<RunReplay, ReplayFailure> {
    let prepared = PreparedReplay::new(run, options)?;
    Ok(prepared.run(tools, observer)?)
}

/// Why [`replay_run`] gave no verdict.
#[derive(Debug, Error)]
pub enum ReplayFailure {
    /// The run cannot be replayed.
    #[error(transparent)]
    Setup(#[from] ReplaySetupError),
    /// The rerun could not be recorded.
    #[error(transparent)]
    Run(#[from] ReplayRunError),
}

fn recorded_ending(recording: &Recording) -> Ending {
    match recording.ending() {
        Some(ending) => Ending {
            outcome: ending.exit_reason.as_str(),
            steps_used: ending.steps_used,
        },
        None => Ending {
            outcome: RunOutcome::Incomplete.as_str(),
            steps_used: None,
        },
    }
}
