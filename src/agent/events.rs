//! The events of a run, as the loop reports them to observers. Traces are one observer; the loop
//! itself does no I/O.

use std::io;
use std::time::Duration;

use crate::gate::GateVerdict;
use crate::model::{CallRecord, InvalidOutput, LiveIdentity, RetriedAttempt};
use crate::run::{Action, ModelFeedback, RunResult, Task};
use crate::tools::ToolOutcome;

/// One thing that happened in a run, borrowed from the loop's own state.
#[derive(Clone, Copy, Debug)]
pub enum RunEvent<'a> {
    /// The run began (step 0).
    RunStarted {
        /// The task.
        task: &'a Task,
        /// The step budget.
        max_steps: u32,
        /// The finish gate's configuration hash, when a gate checks finishes.
        finish_gate_hash: Option<&'a str>,
        /// The wire format and model of a live model.
        live: Option<&'a LiveIdentity>,
        /// Each tool's name and spec hash, when the runtime records them.
        tools: &'a [(String, String)],
    },
    /// A model call failed and will be tried again (same step as the turn it belongs to).
    ModelRetry {
        /// The step of the turn.
        step: u32,
        /// The failed attempt.
        attempt: &'a RetriedAttempt,
    },
    /// The model proposed a valid action.
    ModelAction {
        /// The step, from 1.
        step: u32,
        /// What it proposed.
        action: &'a Action,
        /// The provider text behind it, for raw-text models.
        raw_output: Option<&'a str>,
        /// How long the model took.
        duration: Duration,
        /// The provider's id for this call.
        call_id: Option<&'a str>,
        /// Usage, request hash and response of the turn, on its first event only.
        record: Option<&'a CallRecord>,
    },
    /// The runtime answered a tool call (same step as the call).
    Observation {
        /// The step of the call.
        step: u32,
        /// The observation and its error kind.
        outcome: &'a ToolOutcome,
        /// How long the tool took.
        duration: Duration,
        /// The provider's id of the call this answers.
        call_id: Option<&'a str>,
    },
    /// The model's output was invalid and feedback was added to the history.
    ModelFeedback {
        /// The step.
        step: u32,
        /// The feedback the model will see.
        feedback: &'a ModelFeedback,
        /// What the adapter rejected, with its kind.
        error: &'a InvalidOutput,
        /// The provider text that was rejected, for raw-text models.
        raw_output: Option<&'a str>,
        /// How long the model took.
        duration: Duration,
        /// The provider's id of the rejected tool call, when it had one.
        call_id: Option<&'a str>,
        /// Usage, request hash and response of the turn, on its first event only.
        record: Option<&'a CallRecord>,
    },
    /// The finish gate checked a proposed answer (same step as the finish).
    FinishGate {
        /// The step of the finish.
        step: u32,
        /// The gate's decision and output.
        verdict: &'a GateVerdict,
        /// How long the gate took.
        duration: Duration,
    },
    /// The run ended; for an internal error this comes before the error reaches the caller.
    RunFinished {
        /// The outcome.
        result: &'a RunResult,
        /// A stable kind for a run that did not finish (`invalid_json`, `tool_panic`, ...).
        error_kind: Option<&'a str>,
    },
}

/// Receives every event of a run as it happens. An error stops the run as an internal error:
/// evidence that cannot be recorded must not be silently lost.
pub trait RunObserver {
    /// Handles one event.
    fn on_event(&mut self, event: &RunEvent<'_>) -> io::Result<()>;
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl RunObserver for NoObserver {
    fn on_event(&mut self, _event: &RunEvent<'_>) -> io::Result<()> {
        Ok(())
    }
}

impl<O: RunObserver + ?Sized> RunObserver for &mut O {
    fn on_event(&mut self, event: &RunEvent<'_>) -> io::Result<()> {
        (**self).on_event(event)
    }
}
