//! `run_agent_result`, the loop with the write-up's semantics, and `run_agent`, its convenience
//! form that returns the answer or a typed error.

use std::io;
use std::time::Instant;

use thiserror::Error;

use super::events::{RunEvent, RunObserver};
use crate::gate::{FinishGate, GateFailure};
use crate::model::{InvalidOutput, Model, ModelError};
use crate::run::{
    Action, ExitReason, FinishRejection, HistoryItem, ModelFeedback, RunResult, Task,
};
use crate::tools::{ToolPanic, ToolRuntime};

/// How a run is allowed to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Model turns allowed; at least 1.
    pub max_steps: u32,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { max_steps: 5 }
    }
}

/// A bug or broken dependency that ended a run.
#[derive(Debug, Error)]
pub enum InternalError {
    /// The model could not answer at all.
    #[error("model failed: {0}")]
    ModelFailure(String),
    /// A tool handler panicked.
    #[error(transparent)]
    ToolPanic(#[from] ToolPanic),
    /// An observer (the trace writer) could not record an event.
    #[error("failed to record the run: {0}")]
    Observer(#[source] io::Error),
    /// The finish gate could not run or could not decide.
    #[error(transparent)]
    FinishGate(#[from] GateFailure),
}

impl InternalError {
    /// The stable kind written to traces and reports.
    pub fn kind(&self) -> &'static str {
        match self {
            InternalError::ModelFailure(_) => "model_failure",
            InternalError::ToolPanic(_) => "tool_panic",
            InternalError::Observer(_) => "trace_write_failed",
            InternalError::FinishGate(_) => "finish_gate_failed",
        }
    }
}

/// Why `run_agent_result` returned no result.
#[derive(Debug, Error)]
pub enum AgentError {
    /// The budget must allow at least one step.
    #[error("max_steps must be at least 1")]
    InvalidMaxSteps,
    /// The run ended as `internal_error`; `result` is what observers were told.
    #[error("{cause}")]
    Internal {
        /// The `internal_error` result that was recorded.
        result: RunResult,
        /// What went wrong.
        cause: InternalError,
    },
}

/// Why `run_agent` returned no answer.
#[derive(Debug, Error)]
pub enum RunError {
    /// The budget ran out before a finish.
    #[error("no finish within {steps_used} steps")]
    MaxStepsExceeded {
        /// Steps used, equal to the budget.
        steps_used: u32,
    },
    /// The model's output was still invalid on the last step.
    #[error("invalid model output on the last step: {message}")]
    InvalidModelOutput {
        /// The adapter's message.
        message: String,
    },
    /// The run could not run or ended as `internal_error`.
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// Runs the loop and returns the answer, or a typed error for every other outcome.
pub fn run_agent(
    task: &Task,
    model: &mut dyn Model,
    tools: &dyn ToolRuntime,
    options: RunOptions,
    observer: &mut dyn RunObserver,
) -> Result<String, RunError> {
    let result = run_agent_result(task, model, tools, options, observer)?;
    match result.exit_reason {
        ExitReason::Finished => Ok(result.answer.unwrap_or_default()),
        ExitReason::MaxStepsExceeded => Err(RunError::MaxStepsExceeded {
            steps_used: result.steps_used,
        }),
        // `run_agent_result` returns internal errors as `Err`, so only invalid output is left.
        ExitReason::InvalidModelOutput | ExitReason::InternalError => {
            Err(RunError::InvalidModelOutput {
                message: result.error.unwrap_or_default(),
            })
        }
    }
}

/// Runs the loop. Normal endings (`finished`, `max_steps_exceeded`, `invalid_model_output`) are
/// `Ok`; an internal error is recorded as `internal_error`, told to the observer, and returned as
/// `Err` with its cause, so it is never mistaken for a normal finish.
pub fn run_agent_result(
    task: &Task,
    model: &mut dyn Model,
    tools: &dyn ToolRuntime,
    options: RunOptions,
    observer: &mut dyn RunObserver,
) -> Result<RunResult, AgentError> {
    run_agent_with_gate(task, model, tools, None, options, observer)
}

/// [`run_agent_result`] with a finish gate: a `Finish` ends the run only when `gate` accepts it;
/// a rejection goes back to the model as [`HistoryItem::FinishRejected`] and the run goes on
/// while budget remains. A rejection on the last step ends the run `max_steps_exceeded` with
/// `error_kind: finish_rejected` and no answer.
pub fn run_agent_with_gate(
    task: &Task,
    model: &mut dyn Model,
    tools: &dyn ToolRuntime,
    mut gate: Option<&mut dyn FinishGate>,
    options: RunOptions,
    observer: &mut dyn RunObserver,
) -> Result<RunResult, AgentError> {
    if options.max_steps == 0 {
        return Err(AgentError::InvalidMaxSteps);
    }
    let mut run = LoopState {
        observer,
        steps_used: 0,
    };
    let finish_gate_hash = gate.as_ref().map(|gate| gate.config_hash());
    run.emit(RunEvent::RunStarted {
        task,
        max_steps: options.max_steps,
        finish_gate_hash: finish_gate_hash.as_deref(),
    })?;
    let mut history: Vec<HistoryItem> = Vec::new();
    for step in 1..=options.max_steps {
        run.steps_used = step;
        let started = Instant::now();
        let answer = model.next_action(task, &history);
        let duration = started.elapsed();
        match answer {
            Err(ModelError::Failure(message)) => {
                return Err(run.internal(InternalError::ModelFailure(message)));
            }
            Err(ModelError::InvalidOutput(error)) => {
                let feedback = ModelFeedback::new(error.message.clone());
                run.emit(RunEvent::ModelFeedback {
                    step,
                    feedback: &feedback,
                    error: &error,
                    raw_output: model.last_raw_output(),
                    duration,
                })?;
                history.push(HistoryItem::ModelFeedback(feedback));
                if step == options.max_steps {
                    return run.finish(
                        invalid_output_result(step, &error),
                        Some(error.kind.as_str()),
                    );
                }
            }
            Ok(action) => {
                run.emit(RunEvent::ModelAction {
                    step,
                    action: &action,
                    raw_output: model.last_raw_output(),
                    duration,
                })?;
                let call = match action {
                    Action::Finish(finish) => {
                        if let Some(gate) = gate.as_deref_mut() {
                            let started = Instant::now();
                            let verdict = gate
                                .check(&finish.answer)
                                .map_err(|failure| run.internal(failure.into()))?;
                            run.emit(RunEvent::FinishGate {
                                step,
                                verdict: &verdict,
                                duration: started.elapsed(),
                            })?;
                            if !verdict.accepted {
                                history.push(HistoryItem::FinishRejected(FinishRejection {
                                    answer: finish.answer,
                                    feedback: verdict.feedback().to_owned(),
                                }));
                                if step == options.max_steps {
                                    return run
                                        .finish(rejected_result(step), Some("finish_rejected"));
                                }
                                continue;
                            }
                        }
                        let result = RunResult {
                            exit_reason: ExitReason::Finished,
                            answer: Some(finish.answer),
                            steps_used: step,
                            error: None,
                        };
                        return run.finish(result, None);
                    }
                    Action::ToolCall(call) => call,
                };
                let started = Instant::now();
                let outcome = tools
                    .execute(&call)
                    .map_err(|panic| run.internal(panic.into()))?;
                run.emit(RunEvent::Observation {
                    step,
                    outcome: &outcome,
                    duration: started.elapsed(),
                })?;
                history.push(HistoryItem::ToolCall(call));
                history.push(HistoryItem::Observation(outcome.observation));
            }
        }
    }
    let result = RunResult {
        exit_reason: ExitReason::MaxStepsExceeded,
        answer: None,
        steps_used: options.max_steps,
        error: Some(format!("no finish within max_steps={}", options.max_steps)),
    };
    run.finish(result, Some("budget_exhausted"))
}

/// A rejection on the last step: the budget is spent without an accepted answer. The rejected
/// answer stays in its `model_action` and `finish_gate` events, never in the result.
fn rejected_result(step: u32) -> RunResult {
    RunResult {
        exit_reason: ExitReason::MaxStepsExceeded,
        answer: None,
        steps_used: step,
        error: Some(format!(
            "the finish gate rejected the answer on the last step (max_steps={step})"
        )),
    }
}

fn invalid_output_result(step: u32, error: &InvalidOutput) -> RunResult {
    RunResult {
        exit_reason: ExitReason::InvalidModelOutput,
        answer: None,
        steps_used: step,
        error: Some(error.message.clone()),
    }
}

/// The observer and the step count, so every exit path reports the same way.
struct LoopState<'o> {
    observer: &'o mut dyn RunObserver,
    steps_used: u32,
}

impl LoopState<'_> {
    fn emit(&mut self, event: RunEvent<'_>) -> Result<(), AgentError> {
        self.observer
            .on_event(&event)
            .map_err(|err| self.internal_unrecorded(InternalError::Observer(err)))
    }

    fn finish(
        &mut self,
        result: RunResult,
        error_kind: Option<&str>,
    ) -> Result<RunResult, AgentError> {
        self.emit(RunEvent::RunFinished {
            result: &result,
            error_kind,
        })?;
        Ok(result)
    }

    /// Records the internal error as the run's end, then hands it to the caller.
    fn internal(&mut self, cause: InternalError) -> AgentError {
        let result = self.internal_result(&cause);
        let event = RunEvent::RunFinished {
            result: &result,
            error_kind: Some(cause.kind()),
        };
        if let Err(err) = self.observer.on_event(&event) {
            return self.internal_unrecorded(InternalError::Observer(err));
        }
        AgentError::Internal { result, cause }
    }

    /// An internal error that could not be recorded (the observer itself failed).
    fn internal_unrecorded(&self, cause: InternalError) -> AgentError {
        AgentError::Internal {
            result: self.internal_result(&cause),
            cause,
        }
    }

    fn internal_result(&self, cause: &InternalError) -> RunResult {
        RunResult {
            exit_reason: ExitReason::InternalError,
            answer: None,
            steps_used: self.steps_used,
            error: Some(cause.to_string()),
        }
    }
}
