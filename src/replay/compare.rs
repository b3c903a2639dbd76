//! Divergence detection. `Comparator` observes the rerun as it happens, passes every event on to
//! the observer it wraps (the trace recorder of `--trace OUT`), and compares it with the recording
//! step by step: the model turn, the observation (tool name, `is_error`, error kind, summary hash
//! computed with the recording's hash, and the text with full capture), the end of the recording,
//! the exit reason and steps used, and recorded turns never reached. `StopGate` ends the rerun
//! before its next model turn once a divergence is found, when the replay stops at the first one.

use std::cell::Cell;
use std::io;
use std::rc::Rc;

use super::model::{RecordedTurn, end_of_recording};
use super::recording::{RecordedStep, Recording};
use super::verdict::{Divergence, DivergenceKind, NotCompared};
use super::wire::RequestLog;
use crate::agent::{RunEvent, RunObserver};
use crate::gate::GateVerdict;
use crate::model::{CallRecord, InvalidOutput, LiveIdentity, Model, ModelError, TurnItem};
use crate::run::{Action, ExitReason, HistoryItem, RunResult, Task};
use crate::tools::ToolOutcome;

/// The model failure that ends a rerun stopped at its first divergence.
pub const STOPPED: &str = "replay stopped at the first divergence";

/// A flag the comparator raises and the gate reads: the rerun should take no further turn.
pub(crate) type StopFlag = Rc<Cell<bool>>;

/// Compares a rerun's events with a recording while passing them on.
pub(crate) struct Comparator<'a> {
    recording: &'a Recording,
    inner: &'a mut dyn RunObserver,
    stop_at_first: bool,
    stop: StopFlag,
    divergences: Vec<Divergence>,
    not_compared: Vec<NotCompared>,
    /// The last step the rerun took a model turn at.
    turns_taken: u64,
    /// How many entries the rerun's turn at `turns_taken` has had so far.
    entries_in_turn: usize,
    /// The recorded entry the last model event was compared with.
    current: Option<usize>,
    /// Which recorded entries a model event of the rerun was compared with.
    reached: Vec<bool>,
    recording_end_reported: bool,
    requests: Option<RequestLog>,
}

impl<'a> Comparator<'a> {
    /// A comparator against `recording` that passes events on to `inner`. With `stop_at_first`,
    /// it raises `stop` at the first divergence and compares nothing after it.
    pub(crate) fn new(
        recording: &'a Recording,
        inner: &'a mut dyn RunObserver,
        stop_at_first: bool,
        stop: StopFlag,
    ) -> Self {
        Comparator {
            recording,
            inner,
            stop_at_first,
            stop,
            divergences: Vec::new(),
            not_compared: Vec::new(),
            turns_taken: 0,
            entries_in_turn: 0,
            current: None,
            reached: vec![false; recording.steps().len()],
            recording_end_reported: false,
            requests: None,
        }
    }

    /// Also reports the request divergences a replayed wire logs, each before the model turn it
    /// belongs to.
    pub(crate) fn with_requests(mut self, requests: RequestLog) -> Self {
        self.requests = Some(requests);
        self
    }

    fn take_requests(&mut self) {
        let Some(log) = &self.requests else { return };
        let found = std::mem::take(&mut *log.lock().unwrap_or_else(|e| e.into_inner()));
        for divergence in found {
            self.push(divergence);
        }
    }

    /// The divergences found, in the order they showed, and the fields the recording lacks.
    pub(crate) fn into_findings(self) -> (Vec<Divergence>, Vec<NotCompared>) {
        (self.divergences, self.not_compared)
    }

    fn not_compared(&mut self, step: u64, event: &'static str, field: &'static str) {
        if !self.stop.get() {
            self.not_compared.push(NotCompared { step, event, field });
        }
    }

    fn push(&mut self, divergence: Divergence) {
        if self.stop.get() {
            return;
        }
        self.divergences.push(divergence);
        if self.stop_at_first {
            self.stop.set(true);
        }
    }

    fn compare(&mut self, event: &RunEvent<'_>) {
        match *event {
            RunEvent::RunStarted { .. } | RunEvent::ModelRetry { .. } => {}
            RunEvent::ModelAction { step, action, .. } => {
                self.turn(step.into(), TurnRef::Action(action));
            }
            RunEvent::ModelFeedback { step, error, .. } => {
                self.turn(step.into(), TurnRef::Invalid(error));
            }
            RunEvent::Observation { step, outcome, .. } => self.observation(step.into(), outcome),
            RunEvent::FinishGate { step, verdict, .. } => self.gate_verdict(step.into(), verdict),
            RunEvent::RunFinished { result, error_kind } => self.finished(result, error_kind),
        }
    }

    /// One entry of the rerun's turn at `step`, compared with the recorded entry at the same place
    /// of the same step: a multi-call turn is compared call by call.
    fn turn(&mut self, step: u64, actual: TurnRef<'_>) {
        if step != self.turns_taken {
            self.turns_taken = step;
            self.entries_in_turn = 0;
        }
        let place = self.entries_in_turn;
        self.entries_in_turn += 1;
        self.current = None;
        let (start, entries) = self.recording.turn_entries(step);
        if entries.is_empty() {
            self.recording_ended(step, format!("a model turn at step {step}"));
            return;
        }
        let Some(recorded) = entries.get(place) else {
            self.push(Divergence::new(
                step,
                DivergenceKind::ModelTurn,
                "none",
                describe_turn(actual),
            ));
            return;
        };
        self.current = Some(start + place);
        if let Some(reached) = self.reached.get_mut(start + place) {
            *reached = true;
        }
        if !actual.is(&recorded.turn) {
            self.push(Divergence::new(
                step,
                DivergenceKind::ModelTurn,
                describe_turn(TurnRef::of(&recorded.turn)),
                describe_turn(actual),
            ));
        }
    }

    fn observation(&mut self, step: u64, outcome: &ToolOutcome) {
        let actual = &outcome.observation;
        let recorded_entry = self
            .current
            .and_then(|index| self.recording.steps().get(index))
            .filter(|entry| entry.step == step);
        let Some(recorded) = recorded_entry.and_then(|s| s.observation.as_ref()) else {
            let last = self.recording.last_step();
            if self.recording.ending().is_none() && step == last {
                self.recording_ended(step, format!("an observation at step {step}"));
            } else {
                let mut divergence = Divergence::new(
                    step,
                    DivergenceKind::Observation,
                    "none",
                    self.recording.summarizer().summarize(&actual.content),
                );
                divergence.actual_text = Some(actual.content.clone());
                self.push(divergence);
            }
            return;
        };
        if recorded.tool_name != actual.tool_name {
            self.push(Divergence::new(
                step,
                DivergenceKind::ToolName,
                &recorded.tool_name,
                &actual.tool_name,
            ));
        }
        if !recorded.is_error_recorded {
            self.not_compared(step, "observation", "is_error");
        } else if recorded.is_error != actual.is_error {
            self.push(Divergence::new(
                step,
                DivergenceKind::IsError,
                recorded.is_error.to_string(),
                actual.is_error.to_string(),
            ));
        }
        // An error recorded without its kind (older writers) leaves the kind unknown; a recorded
        // non-error has no kind to compare but none.
        let kind_unknown = recorded.error_kind.is_none()
            && (recorded.is_error || !recorded.is_error_recorded)
            && outcome.error_kind.is_some();
        if kind_unknown {
            self.not_compared(step, "observation", "error_kind");
        } else if recorded.error_kind != outcome.error_kind {
            self.push(Divergence::new(
                step,
                DivergenceKind::ErrorKind,
                or_none(recorded.error_kind.as_deref()),
                or_none(outcome.error_kind.as_deref()),
            ));
        }
        // With the recorded text at hand, the texts are compared byte for byte; the summary (a
        // hash of the text) is only worked out to show a difference.
        if recorded.content != actual.content {
            self.push(Divergence {
                step,
                what: DivergenceKind::Observation,
                recorded: recorded.output.clone(),
                actual: self.recording.summarizer().summarize(&actual.content),
                recorded_text: Some(recorded.content.clone()),
                actual_text: Some(actual.content.clone()),
                path: None,
            });
        }
    }

    fn gate_verdict(&mut self, step: u64, actual: &GateVerdict) {
        let name = |accepted: bool| if accepted { "accepted" } else { "rejected" };
        let recorded = self
            .recording
            .gate_verdicts()
            .iter()
            .find(|v| v.step == step);
        match recorded {
            Some(recorded) if recorded.verdict.accepted == actual.accepted => {}
            _ => {
                let mut divergence = Divergence::new(
                    step,
                    DivergenceKind::GateVerdict,
                    recorded.map_or("none", |r| name(r.verdict.accepted)),
                    name(actual.accepted),
                );
                divergence.recorded_text = recorded.map(|r| r.verdict.output.clone());
                divergence.actual_text = Some(actual.output.clone());
                self.push(divergence);
            }
        }
    }

    /// Whether the rerun ended because it asked for a turn past the end of the recording (the
    /// replay models fail only then), not because the recording's own run failed there.
    fn ran_past_end(&self, result: &RunResult, error_kind: Option<&str>) -> bool {
        let past_end = result.exit_reason == ExitReason::InternalError
            && error_kind == Some("model_failure")
            && u64::from(result.steps_used) > self.recording.last_step();
        past_end
            && !self.recording.ending().is_some_and(|e| {
                e.exit_reason == ExitReason::InternalError
                    && e.error_kind.as_deref() == Some("model_failure")
                    && e.steps_used == Some(result.steps_used)
            })
    }

    fn finished(&mut self, result: &RunResult, error_kind: Option<&str>) {
        let ending = self.recording.ending();
        let step = u64::from(result.steps_used);
        if self.ran_past_end(result, error_kind) {
            self.recording_ended(step, format!("a model turn at step {step}"));
            return;
        }
        if result.exit_reason == ExitReason::InternalError
            && error_kind == Some("model_failure")
            && step > self.recording.last_step()
        {
            // The recording failed here too: the same ending.
            return;
        }
        match ending {
            None => {
                let mut divergence = Divergence::new(
                    step,
                    DivergenceKind::ExitReason,
                    "incomplete",
                    result.exit_reason.as_str(),
                );
                divergence.actual_text = result.error.clone();
                self.push(divergence);
            }
            Some(recorded) => {
                if recorded.exit_reason != result.exit_reason {
                    self.push(Divergence {
                        step,
                        what: DivergenceKind::ExitReason,
                        recorded: recorded.exit_reason.as_str().to_owned(),
                        actual: result.exit_reason.as_str().to_owned(),
                        recorded_text: recorded.error.clone(),
                        actual_text: result.error.clone(),
                        path: None,
                    });
                } else if recorded.error_kind.is_none()
                    && result.exit_reason != ExitReason::Finished
                {
                    self.not_compared(step, "run_finished", "error_kind");
                } else if recorded.error_kind.as_deref() != error_kind
                    && result.exit_reason != ExitReason::Finished
                {
                    self.push(Divergence::new(
                        step,
                        DivergenceKind::ErrorKind,
                        or_none(recorded.error_kind.as_deref()),
                        or_none(error_kind),
                    ));
                }
                if recorded.steps_used.is_none() {
                    self.not_compared(step, "run_finished", "steps_used");
                }
                if let Some(recorded_steps) = recorded.steps_used
                    && recorded_steps != result.steps_used
                {
                    self.push(Divergence::new(
                        step,
                        DivergenceKind::StepsUsed,
                        recorded_steps.to_string(),
                        result.steps_used.to_string(),
                    ));
                }
            }
        }
        let unreached: Vec<&RecordedStep> = self
            .recording
            .steps()
            .iter()
            .zip(&self.reached)
            .filter(|(_, reached)| !**reached)
            .map(|(entry, _)| entry)
            .collect();
        for recorded in unreached {
            self.push(Divergence::new(
                recorded.step,
                DivergenceKind::NotReached,
                describe_turn(TurnRef::of(&recorded.turn)),
                "not reached",
            ));
        }
    }

    fn recording_ended(&mut self, step: u64, actual: String) {
        if self.recording_end_reported {
            return;
        }
        self.recording_end_reported = true;
        let turns = usize::try_from(self.recording.last_step()).unwrap_or(usize::MAX);
        self.push(Divergence::new(
            step,
            DivergenceKind::RecordingEnded,
            end_of_recording(turns),
            actual,
        ));
    }
}

/// The error kind a rerun stopped at its first divergence is recorded with, so reports never count
/// it as a real model failure.
pub const STOPPED_KIND: &str = "replay_stopped";

impl RunObserver for Comparator<'_> {
    fn on_event(&mut self, event: &RunEvent<'_>) -> io::Result<()> {
        match event {
            // Stopped by the comparator, or run past the recording's end: the replay stopped;
            // no model failed.
            RunEvent::RunFinished { result, error_kind }
                if (self.stop.get()
                    && result
                        .error
                        .as_deref()
                        .is_some_and(|e| e.ends_with(STOPPED)))
                    || self.ran_past_end(result, *error_kind) =>
            {
                self.inner.on_event(&RunEvent::RunFinished {
                    result,
                    error_kind: Some(STOPPED_KIND),
                })?
            }
            _ => self.inner.on_event(event)?,
        }
        if !self.stop.get() {
            self.take_requests();
        }
        if !self.stop.get() {
            self.compare(event);
        }
        Ok(())
    }
}

/// Wraps the replay model: once the comparator raises the flag, the next turn fails with
/// [`STOPPED`], which ends the rerun.
pub(crate) struct StopGate<'m> {
    inner: &'m mut dyn Model,
    stop: StopFlag,
    refused_at: Option<u32>,
    turns: u32,
}

impl<'m> StopGate<'m> {
    /// A gate over `inner` reading `stop`.
    pub(crate) fn new(inner: &'m mut dyn Model, stop: StopFlag) -> Self {
        StopGate {
            inner,
            stop,
            refused_at: None,
            turns: 0,
        }
    }

    /// The step at which the gate ended the rerun, if it did.
    pub(crate) fn refused_at(&self) -> Option<u32> {
        self.refused_at
    }
}

impl StopGate<'_> {
    /// Counts the turn; `Err` once the rerun must stop.
    fn admit(&mut self) -> Result<(), ModelError> {
        self.turns += 1;
        if self.stop.get() {
            self.refused_at = Some(self.turns);
            return Err(ModelError::Failure(STOPPED.to_owned()));
        }
        Ok(())
    }
}

impl Model for StopGate<'_> {
    fn next_action(&mut self, task: &Task, history: &[HistoryItem]) -> Result<Action, ModelError> {
        self.admit()?;
        self.inner.next_action(task, history)
    }

    fn next_turn(
        &mut self,
        task: &Task,
        history: &[HistoryItem],
    ) -> Result<Vec<TurnItem>, ModelError> {
        self.admit()?;
        self.inner.next_turn(task, history)
    }

    fn last_raw_output(&self) -> Option<&str> {
        self.inner.last_raw_output()
    }

    fn take_call_record(&mut self) -> CallRecord {
        self.inner.take_call_record()
    }

    fn live_identity(&self) -> Option<LiveIdentity> {
        self.inner.live_identity()
    }
}

/// A model turn of the rerun or the recording, borrowed: compared without a copy.
#[derive(Clone, Copy)]
enum TurnRef<'t> {
    Action(&'t Action),
    Invalid(&'t InvalidOutput),
}

impl<'t> TurnRef<'t> {
    fn of(turn: &'t RecordedTurn) -> Self {
        match turn {
            RecordedTurn::Action(action) => TurnRef::Action(action),
            RecordedTurn::Invalid(error) => TurnRef::Invalid(error),
        }
    }

    /// Whether this is the recorded turn.
    fn is(self, recorded: &RecordedTurn) -> bool {
        match (self, recorded) {
            (TurnRef::Action(actual), RecordedTurn::Action(recorded)) => actual == recorded,
            (TurnRef::Invalid(actual), RecordedTurn::Invalid(recorded)) => actual == recorded,
            _ => false,
        }
    }
}

/// A model turn as one line: `tool_call NAME ARGS`, `finish "ANSWER"` or
/// `invalid output (KIND): MESSAGE`.
fn describe_turn(turn: TurnRef<'_>) -> String {
    match turn {
        TurnRef::Action(Action::ToolCall(call)) => format!(
            "tool_call {} {}",
            call.tool_name,
            serde_json::Value::Object(call.arguments.clone())
        ),
        TurnRef::Action(Action::Finish(finish)) => format!("finish {:?}", finish.answer),
        TurnRef::Invalid(InvalidOutput { kind, message }) => {
            format!("invalid output ({kind}): {message}")
        }
    }
}

fn or_none(value: Option<&str>) -> String {
    value.unwrap_or("none").to_owned()
}
