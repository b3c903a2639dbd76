//! `ReplayModel`: a model rebuilt from one recorded run. It returns the recorded actions in order,
//! and the recorded invalid outputs as the same errors, so feedback paths replay too. Replay needs
//! full capture: summaries cannot give arguments or answers back.

use thiserror::Error;

use crate::model::{
    InvalidOutput, InvalidOutputKind, JsonModelAdapter, Model, ModelError, RawModel, TurnItem,
};
use serde_json::{Map, Value};

use crate::run::{Action, Finish, HistoryItem, Task, ToolCall};
use crate::trace::{Event, EventKind, ModelAction, ModelFeedback, RecordedRun};

/// One recorded model turn.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordedTurn {
    /// The model proposed this action.
    Action(Action),
    /// The model's output was rejected with this error.
    Invalid(InvalidOutput),
}

/// A recorded run that cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ReplayError {
    /// An event lacks content that replay needs.
    #[error(
        "run {run_id:?} cannot be replayed: line {line} ({event_type} at step {step}) has no `{field}`; record replayable traces with `--capture full`"
    )]
    MissingContent {
        /// The run.
        run_id: String,
        /// The 1-based line of the event.
        line: u64,
        /// The event's type.
        event_type: String,
        /// The event's step.
        step: u64,
        /// The missing field.
        field: &'static str,
    },
    /// An event's content is not what its type requires.
    #[error("run {run_id:?} cannot be replayed: line {line}: {problem}")]
    Malformed {
        /// The run.
        run_id: String,
        /// The 1-based line of the event.
        line: u64,
        /// What is wrong.
        problem: String,
    },
}

/// Replays the recorded actions of one run.
#[derive(Clone, Debug)]
pub struct ReplayModel {
    task: Task,
    max_steps: Option<u32>,
    turns: Vec<(u64, RecordedTurn)>,
    /// The provider's call id of each turn entry, where recorded.
    call_ids: Vec<Option<String>>,
    next: usize,
    calls: usize,
}

impl ReplayModel {
    /// Builds the model from a recorded run, failing on the first event that lacks content.
    pub fn from_run(run: &RecordedRun) -> Result<ReplayModel, ReplayError> {
        let task = Task::new(recorded_task(run)?.to_owned());
        let mut turns = Vec::new();
        let mut call_ids = Vec::new();
        for (line, event) in &run.events {
            let Some(turn) = turn_of(run, *line, event)? else {
                continue;
            };
            turns.push((event.step, turn.to_owned()));
            call_ids.push(event.call_id().map(str::to_owned));
        }
        Ok(ReplayModel {
            max_steps: run.started().and_then(|e| e.max_steps),
            task,
            turns,
            call_ids,
            next: 0,
            calls: 0,
        })
    }

    /// [`ReplayModel::from_run`], with the same checks and errors, moving each turn's tool name,
    /// arguments and answer out of the run's events instead of copying them: for a replay that
    /// owns its run and drops it once its recording is arranged.
    pub(crate) fn from_run_taking(run: &mut RecordedRun) -> Result<ReplayModel, ReplayError> {
        let max_steps = ReplayModel::check(run)?;
        let task = Task::new(recorded_task(run)?.to_owned());
        let mut turns = Vec::new();
        let mut call_ids = Vec::new();
        for at in 0..run.events.len() {
            let (line, event) = &run.events[at];
            // Checked above: every turn reads, so only feedback (a short message) is copied.
            let turn = match &event.kind {
                EventKind::ModelFeedback(_) => match turn_of(run, *line, event)? {
                    Some(turn) => turn.to_owned(),
                    None => continue,
                },
                EventKind::ModelAction(_) => {
                    let EventKind::ModelAction(action) = &mut run.events[at].1.kind else {
                        continue;
                    };
                    taken_action(action)
                }
                _ => continue,
            };
            let event = &run.events[at].1;
            turns.push((event.step, turn));
            call_ids.push(event.call_id().map(str::to_owned));
        }
        Ok(ReplayModel {
            max_steps,
            task,
            turns,
            call_ids,
            next: 0,
            calls: 0,
        })
    }

    /// Checks a recorded run as [`ReplayModel::from_run`] does, with the same error, and gives
    /// its recorded step budget, without copying its turns.
    pub fn check(run: &RecordedRun) -> Result<Option<u32>, ReplayError> {
        recorded_task(run)?;
        for (line, event) in &run.events {
            turn_of(run, *line, event)?;
        }
        Ok(run.started().and_then(|e| e.max_steps))
    }

    /// Builds a raw-text replay: the recorded provider text of every turn, parsed again by
    /// today's `JsonModelAdapter`, so adapter changes are tested too. Needs `raw_output` on every
    /// model turn.
    pub fn raw_from_run(
        run: &RecordedRun,
    ) -> Result<(Task, JsonModelAdapter<RecordedResponses>), ReplayError> {
        let task = Task::new(recorded_task(run)?.to_owned());
        let mut responses = Vec::new();
        for (line, event) in &run.events {
            let raw_output = match &event.kind {
                EventKind::ModelAction(action) => &action.raw_output,
                EventKind::ModelFeedback(feedback) => &feedback.raw_output,
                _ => continue,
            };
            let raw = raw_output
                .clone()
                .ok_or_else(|| missing(run, *line, event, "raw_output"))?;
            responses.push((event.step, raw));
        }
        Ok((
            task,
            JsonModelAdapter::new(RecordedResponses { responses, next: 0 }),
        ))
    }

    /// The same task and budget with no turns to serve.
    pub(crate) fn without_turns(&self) -> ReplayModel {
        ReplayModel {
            task: self.task.clone(),
            max_steps: self.max_steps,
            turns: Vec::new(),
            call_ids: Vec::new(),
            next: 0,
            calls: 0,
        }
    }

    /// The recorded task.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The recorded step budget, if the recording has one.
    pub fn max_steps(&self) -> Option<u32> {
        self.max_steps
    }

    /// The recorded turns with their steps.
    pub fn turns(&self) -> &[(u64, RecordedTurn)] {
        &self.turns
    }

    /// How many turns have been served.
    pub fn served(&self) -> usize {
        self.next
    }

    /// How many times the model was asked, including past the end of the recording.
    pub fn calls(&self) -> usize {
        self.calls
    }
}

impl Model for ReplayModel {
    fn next_action(
        &mut self,
        _task: &Task,
        _history: &[HistoryItem],
    ) -> Result<Action, ModelError> {
        self.calls += 1;
        let Some((_, turn)) = self.turns.get(self.next) else {
            return Err(ModelError::Failure(end_of_recording(last_step(
                &self.turns,
            ))));
        };
        self.next += 1;
        match turn {
            RecordedTurn::Action(action) => Ok(action.clone()),
            RecordedTurn::Invalid(error) => Err(ModelError::InvalidOutput(error.clone())),
        }
    }

    /// Every recorded entry of the next step: a multi-call turn comes back as one turn.
    fn next_turn(
        &mut self,
        _task: &Task,
        _history: &[HistoryItem],
    ) -> Result<Vec<TurnItem>, ModelError> {
        self.calls += 1;
        let Some(&(step, _)) = self.turns.get(self.next) else {
            return Err(ModelError::Failure(end_of_recording(last_step(
                &self.turns,
            ))));
        };
        let mut items = Vec::new();
        while let Some((_, turn)) = self.turns.get(self.next).filter(|(s, _)| *s == step) {
            let call_id = self.call_ids.get(self.next).cloned().flatten();
            items.push(match turn {
                RecordedTurn::Action(action) => TurnItem::Action {
                    call_id,
                    action: action.clone(),
                },
                RecordedTurn::Invalid(error) => TurnItem::Invalid {
                    call_id,
                    error: error.clone(),
                },
            });
            self.next += 1;
        }
        Ok(items)
    }
}

/// The step of the last recorded turn: the step a rerun runs out of recording after.
fn last_step(turns: &[(u64, RecordedTurn)]) -> usize {
    turns
        .last()
        .map_or(0, |(step, _)| usize::try_from(*step).unwrap_or(usize::MAX))
}

/// The recorded raw responses of a run, served in order.
#[derive(Clone, Debug)]
pub struct RecordedResponses {
    responses: Vec<(u64, String)>,
    next: usize,
}

impl RawModel for RecordedResponses {
    fn next_response(
        &mut self,
        _task: &Task,
        _history: &[HistoryItem],
    ) -> Result<String, ModelError> {
        let Some((_, raw)) = self.responses.get(self.next) else {
            return Err(ModelError::Failure(end_of_recording(self.responses.len())));
        };
        self.next += 1;
        Ok(raw.clone())
    }
}

/// The message when a rerun asks for more turns than were recorded. Turn N is step N.
pub fn end_of_recording(turns: usize) -> String {
    format!("recording ends at step {turns}")
}

fn recorded_task(run: &RecordedRun) -> Result<&str, ReplayError> {
    let Some((line, event, started)) = run.events.iter().find_map(|(line, e)| match &e.kind {
        EventKind::RunStarted(started) => Some((line, e, started)),
        _ => None,
    }) else {
        return Err(ReplayError::Malformed {
            run_id: run.run_id.clone(),
            line: run.events.first().map_or(0, |(line, _)| *line),
            problem: "the run has no run_started event".to_owned(),
        });
    };
    started
        .task
        .as_deref()
        .ok_or_else(|| missing(run, *line, event, "task"))
}

/// A recorded model turn, borrowed from its event.
enum TurnOf<'e> {
    ToolCall(&'e str, &'e Map<String, Value>),
    Finish(&'e str),
    Invalid(InvalidOutputKind, &'e str),
}

impl TurnOf<'_> {
    fn to_owned(&self) -> RecordedTurn {
        match *self {
            TurnOf::ToolCall(tool_name, arguments) => RecordedTurn::Action(Action::ToolCall(
                ToolCall::new(tool_name.to_owned(), arguments.clone()),
            )),
            TurnOf::Finish(answer) => RecordedTurn::Action(Action::Finish(Finish {
                answer: answer.to_owned(),
            })),
            TurnOf::Invalid(kind, message) => {
                RecordedTurn::Invalid(InvalidOutput::new(kind, message.to_owned()))
            }
        }
    }
}

/// The turn of a `model_action` that [`action_of`] has read, its texts moved out of the event.
fn taken_action(action: &mut ModelAction) -> RecordedTurn {
    if action.action_type.as_deref() == Some("tool_call") {
        RecordedTurn::Action(Action::ToolCall(ToolCall::new(
            action.tool_name.take().unwrap_or_default(),
            action.arguments.take().unwrap_or_default(),
        )))
    } else {
        RecordedTurn::Action(Action::Finish(Finish {
            answer: action.answer.take().unwrap_or_default(),
        }))
    }
}

/// The model turn an event records (`None` for events that are not turns), or why it cannot be
/// replayed.
fn turn_of<'e>(
    run: &RecordedRun,
    line: u64,
    event: &'e Event,
) -> Result<Option<TurnOf<'e>>, ReplayError> {
    match &event.kind {
        EventKind::ModelAction(action) => action_of(run, line, event, action).map(Some),
        EventKind::ModelFeedback(feedback) => feedback_of(run, line, event, feedback).map(Some),
        _ => Ok(None),
    }
}

fn action_of<'e>(
    run: &RecordedRun,
    line: u64,
    event: &Event,
    action: &'e ModelAction,
) -> Result<TurnOf<'e>, ReplayError> {
    match action.action_type.as_deref() {
        Some("tool_call") => {
            let tool_name = action
                .tool_name
                .as_deref()
                .ok_or_else(|| missing(run, line, event, "tool_name"))?;
            let arguments = action
                .arguments
                .as_ref()
                .ok_or_else(|| missing(run, line, event, "arguments"))?;
            Ok(TurnOf::ToolCall(tool_name, arguments))
        }
        Some("finish") => {
            let answer = action
                .answer
                .as_deref()
                .ok_or_else(|| missing(run, line, event, "answer"))?;
            Ok(TurnOf::Finish(answer))
        }
        Some(other) => Err(ReplayError::Malformed {
            run_id: run.run_id.clone(),
            line,
            problem: format!("unknown action_type {other:?}"),
        }),
        None => Err(missing(run, line, event, "action_type")),
    }
}

fn feedback_of<'e>(
    run: &RecordedRun,
    line: u64,
    event: &Event,
    feedback: &'e ModelFeedback,
) -> Result<TurnOf<'e>, ReplayError> {
    let kind_name = feedback
        .error_kind
        .as_deref()
        .ok_or_else(|| missing(run, line, event, "error_kind"))?;
    let kind = InvalidOutputKind::parse(kind_name).ok_or_else(|| ReplayError::Malformed {
        run_id: run.run_id.clone(),
        line,
        problem: format!("unknown model_feedback error_kind {kind_name:?}"),
    })?;
    let message = feedback
        .content
        .as_deref()
        .ok_or_else(|| missing(run, line, event, "content"))?;
    Ok(TurnOf::Invalid(kind, message))
}

fn missing(run: &RecordedRun, line: u64, event: &Event, field: &'static str) -> ReplayError {
    ReplayError::MissingContent {
        run_id: run.run_id.clone(),
        line,
        event_type: event.event_type().to_owned(),
        step: event.step,
        field,
    }
}
