//! `run_agent_result`, the loop with the write-up's semantics, and `run_agent`, its convenience
//! form that returns the answer or a typed error.

use std::io;
use std::time::Instant;

use thiserror::Error;

use super::events::{RunEvent, RunObserver};
use crate::gate::{FinishGate, GateFailure};
use crate::model::{InvalidOutput, Model, ModelError, ProviderError, ProviderErrorKind, TurnItem};
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
    /// A model server failed after the retries its class allows.
    #[error("model server failed: {0}")]
    Provider(ProviderError),
    /// A tool handler panicked or a tool source broke (boxed: the error stays small).
    #[error(transparent)]
    ToolPanic(Box<ToolPanic>),
    /// An observer (the trace writer) could not record an event.
    #[error("failed to record the run: {0}")]
    Observer(#[source] io::Error),
    /// The finish gate could not run or could not decide.
    #[error(transparent)]
    FinishGate(#[from] GateFailure),
}

impl From<ToolPanic> for InternalError {
    fn from(panic: ToolPanic) -> Self {
        InternalError::ToolPanic(Box::new(panic))
    }
}

impl InternalError {
    /// The stable kind written to traces and reports.
    pub fn kind(&self) -> &str {
        match self {
            InternalError::ModelFailure(_) => "model_failure",
            InternalError::Provider(error) => error.kind.as_str(),
            InternalError::ToolPanic(panic) => &panic.kind,
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
    #[error("no finish within {}", crate::plural(*steps_used, "step", "steps"))]
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
    gate: Option<&mut dyn FinishGate>,
    options: RunOptions,
    observer: &mut dyn RunObserver,
) -> Result<RunResult, AgentError> {
    run_agent_with(
        task,
        model,
        tools,
        gate,
        options,
        Limits::default(),
        observer,
    )
}

/// [`run_agent_result`] with token and time budgets.
pub fn run_agent_with_limits(
    task: &Task,
    model: &mut dyn Model,
    tools: &dyn ToolRuntime,
    options: RunOptions,
    limits: Limits,
    observer: &mut dyn RunObserver,
) -> Result<RunResult, AgentError> {
    run_agent_with(task, model, tools, None, options, limits, observer)
}

/// Budgets beside the step budget; each one that runs out ends the run as `max_steps_exceeded`
/// with its own `error_kind` (and so its `budget` in traces).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Limits {
    /// Input plus output tokens over all model calls; checked after each turn.
    pub max_total_tokens: Option<u64>,
    /// Wall-clock seconds for the whole run; checked before each turn.
    pub max_seconds: Option<f64>,
}

/// The `error_kind` of a run that used up its step budget.
pub const STEPS_EXHAUSTED: &str = "budget_exhausted";
/// The `error_kind` of a run whose request outgrew the model's context window.
pub const CONTEXT_EXHAUSTED: &str = "context_length_exceeded";
/// The `error_kind` of a run that used up `max_total_tokens`.
pub const TOKENS_EXHAUSTED: &str = "token_budget_exhausted";
/// The `error_kind` of a run that used up `max_seconds`.
pub const TIME_EXHAUSTED: &str = "time_budget_exhausted";

/// The loop with every option: a finish gate and budgets beside the step budget. One model turn
/// is one step: every tool call of a turn runs in order within that step, and an invalid call
/// among them is answered with feedback for its call id while the others still run.
pub fn run_agent_with(
    task: &Task,
    model: &mut dyn Model,
    tools: &dyn ToolRuntime,
    mut gate: Option<&mut dyn FinishGate>,
    options: RunOptions,
    limits: Limits,
    observer: &mut dyn RunObserver,
) -> Result<RunResult, AgentError> {
    if options.max_steps == 0 {
        return Err(AgentError::InvalidMaxSteps);
    }
    let run_started = Instant::now();
    let mut run = LoopState {
        observer,
        steps_used: 0,
    };
    let finish_gate_hash = gate.as_ref().map(|gate| gate.config_hash());
    let live = model.live_identity();
    let tool_hashes = tools.spec_hashes();
    run.emit(RunEvent::RunStarted {
        task,
        max_steps: options.max_steps,
        finish_gate_hash: finish_gate_hash.as_deref(),
        live: live.as_ref(),
        tools: &tool_hashes,
    })?;
    let mut history: Vec<HistoryItem> = Vec::new();
    let mut tokens_used: u64 = 0;
    for step in 1..=options.max_steps {
        if let Some(max_seconds) = limits.max_seconds
            && run_started.elapsed().as_secs_f64() >= max_seconds
        {
            let error = format!("no finish within max_seconds={max_seconds}");
            return run.finish(budget_result(step - 1, error), Some(TIME_EXHAUSTED));
        }
        run.steps_used = step;
        let started = Instant::now();
        let answer = model.next_turn(task, &history);
        let duration = started.elapsed();
        let record = model.take_call_record();
        for attempt in &record.retries {
            run.emit(RunEvent::ModelRetry { step, attempt })?;
        }
        tokens_used += record.usage.map_or(0, |usage| usage.total());
        let items = match answer {
            Err(ModelError::Failure(message)) => {
                return Err(run.internal(InternalError::ModelFailure(message)));
            }
            Err(ModelError::Provider(error))
                if error.kind == ProviderErrorKind::ContextLengthExceeded =>
            {
                let message = format!("context length exceeded: {}", error.message);
                return run.finish(budget_result(step, message), Some(CONTEXT_EXHAUSTED));
            }
            Err(ModelError::Provider(error)) => {
                return Err(run.internal(InternalError::Provider(error)));
            }
            Err(ModelError::InvalidOutput(error)) => {
                vec![TurnItem::Invalid {
                    call_id: None,
                    error,
                }]
            }
            Ok(items) => items,
        };
        let mut record = Some(&record);
        let mut first_invalid: Option<InvalidOutput> = None;
        let mut any_valid = false;
        for item in items {
            match item {
                TurnItem::Invalid { call_id, error } => {
                    let feedback = ModelFeedback::new(error.message.clone());
                    run.emit(RunEvent::ModelFeedback {
                        step,
                        feedback: &feedback,
                        error: &error,
                        raw_output: model.last_raw_output(),
                        duration,
                        call_id: call_id.as_deref(),
                        record: record.take(),
                    })?;
                    history.push(HistoryItem::ModelFeedback(feedback));
                    first_invalid.get_or_insert(error);
                }
                TurnItem::Action { call_id, action } => {
                    any_valid = true;
                    run.emit(RunEvent::ModelAction {
                        step,
                        action: &action,
                        raw_output: model.last_raw_output(),
                        duration,
                        call_id: call_id.as_deref(),
                        record: record.take(),
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
                                        return run.finish(
                                            rejected_result(step),
                                            Some("finish_rejected"),
                                        );
                                    }
                                    // A finish is its turn's only item: the turn is over.
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
                        call_id: call_id.as_deref(),
                    })?;
                    history.push(HistoryItem::ToolCall(call));
                    history.push(HistoryItem::Observation(outcome.observation));
                }
            }
        }
        if step == options.max_steps
            && !any_valid
            && let Some(error) = first_invalid
        {
            return run.finish(
                invalid_output_result(step, &error),
                Some(error.kind.as_str()),
            );
        }
        if let Some(max_total_tokens) = limits.max_total_tokens
            && tokens_used >= max_total_tokens
            && step < options.max_steps
        {
            let error = format!(
                "no finish within max_total_tokens={max_total_tokens} ({tokens_used} used)"
            );
            return run.finish(budget_result(step, error), Some(TOKENS_EXHAUSTED));
        }
    }
    let error = format!("no finish within max_steps={}", options.max_steps);
    run.finish(
        budget_result(options.max_steps, error),
        Some(STEPS_EXHAUSTED),
    )
}

fn budget_result(steps_used: u32, error: String) -> RunResult {
    RunResult {
        exit_reason: ExitReason::MaxStepsExceeded,
        answer: None,
        steps_used,
        error: Some(error),
    }
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
