//! The observer that turns loop events into trace events: summaries by default, the content itself
//! only with full capture.

use std::io;
use std::sync::Arc;
use std::time::Instant;

use super::clock::{Clock, SystemClock};
use super::event::{
    Capture, Event, EventKind, FinishGate, ModelAction, ModelCall, ModelFeedback, ModelRef,
    ModelRetry, Observation, ReplayOf, RunFinished, RunStarted, SCHEMA, Score, ScorerCall, ToolRef,
};
use super::writer::EventSink;
use crate::agent::{CONTEXT_EXHAUSTED, RunEvent, RunObserver, TIME_EXHAUSTED, TOKENS_EXHAUSTED};
use crate::digest::Summarizer;
use crate::model::{CallRecord, Usage};
use crate::run::{Action, ExitReason};

/// What a recorder writes besides the events themselves.
#[derive(Clone, Debug)]
pub struct RecorderOptions {
    /// Summaries only, or the content too.
    pub capture: Capture,
    /// How summaries are hashed.
    pub summarizer: Summarizer,
    /// Whether to write measured times: `duration_ms`, and `ts` on every event (both off for
    /// byte-stable sample traces; [`TraceRecorder::with_clock`] fixes `ts` instead).
    pub durations: bool,
    /// Set when the run replays a recording.
    pub replay_of: Option<ReplayOf>,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions {
            capture: Capture::Summary,
            summarizer: Summarizer::from_env(),
            durations: true,
            replay_of: None,
        }
    }
}

/// Records one run's events into a sink.
#[derive(Debug)]
pub struct TraceRecorder<S> {
    run_id: String,
    task_id: Option<String>,
    workdir_hash: Option<String>,
    options: RecorderOptions,
    sink: S,
    /// The tokens of the run's model calls so far, for `run_finished.usage`.
    usage: Option<Usage>,
    /// Where `ts` comes from.
    clock: Arc<dyn Clock>,
    /// When the run started, for `run_finished.duration_ms`.
    started: Option<Instant>,
    /// The run's scores, for `run_finished.scores`.
    scores: Option<Vec<Score>>,
}

thread_local! {
    /// The last `ts` made on this thread, and its millisecond: a worker's runs follow one
    /// another within the same millisecond, so the text is made about once a millisecond.
    static LAST_TS: std::cell::RefCell<(i64, String)> =
        const { std::cell::RefCell::new((i64::MIN, String::new())) };
}

impl<S: EventSink> TraceRecorder<S> {
    /// A recorder for the run `run_id`.
    pub fn new(run_id: impl Into<String>, options: RecorderOptions, sink: S) -> Self {
        TraceRecorder {
            run_id: run_id.into(),
            task_id: None,
            workdir_hash: None,
            options,
            sink,
            usage: None,
            clock: Arc::new(SystemClock),
            started: None,
            scores: None,
        }
    }

    /// Records what scored the run before its `run_finished` is: each scorer's model call
    /// (`scorer_call`, with the request and response under full capture), and the scores, which
    /// `run_finished` then carries.
    pub fn record_scores(
        &mut self,
        step: u32,
        scores: Vec<Score>,
        calls: &[(String, CallRecord)],
    ) -> io::Result<()> {
        for (scorer, record) in calls {
            let scorer_call = ScorerCall {
                scorer: Some(scorer.clone()),
                call_id: None,
                call: self.call(Some(record)),
            };
            let mut e = Event::new(&self.run_id, step.into(), scorer_call);
            if self.options.durations {
                e.ts = Some(self.ts());
            }
            self.sink.record(&e)?;
        }
        self.scores = (!scores.is_empty()).then_some(scores);
        Ok(())
    }

    /// The time now as `ts`; events come many to a millisecond, so the text of the last one
    /// made on this thread is reused while the millisecond is the same.
    fn ts(&self) -> String {
        let now = self.clock.now_unix_ms();
        LAST_TS.with_borrow_mut(|(at, text)| {
            if *at != now {
                *text = crate::time::ts_from_unix_ms(now);
                *at = now;
            }
            text.clone()
        })
    }

    /// Stamps `ts` from `clock` instead of the system clock (traces whose times are known in
    /// advance).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Records `task_id` on `run_started`: the suite task this run is an attempt at.
    pub fn with_task_id(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }

    /// Records `workdir_hash` on `run_started`: the content hash of the working-folder template
    /// the run's tools ran in.
    pub fn with_workdir_hash(mut self, hash: Option<String>) -> Self {
        self.workdir_hash = hash;
        self
    }

    /// The sink, to take the events back or reuse the writer.
    pub fn into_sink(self) -> S {
        self.sink
    }

    fn full(&self) -> bool {
        self.options.capture == Capture::Full
    }

    fn summary(&self, text: &str) -> String {
        self.options.summarizer.summarize(text)
    }

    /// Builds the trace event for a loop event.
    pub fn trace_event(&self, event: &RunEvent<'_>) -> Event {
        let full = self.full();
        match *event {
            RunEvent::RunStarted {
                task,
                max_steps,
                finish_gate_hash,
                live,
                tools,
            } => {
                let tools = (!tools.is_empty()).then(|| {
                    tools
                        .iter()
                        .map(|(name, hash)| ToolRef {
                            name: name.clone(),
                            spec_hash: Some(hash.clone()),
                        })
                        .collect()
                });
                let started = RunStarted {
                    schema: Some(SCHEMA.to_owned()),
                    capture: Some(self.options.capture),
                    hash: Some(self.options.summarizer.algorithm()),
                    max_steps: Some(max_steps),
                    task_id: self.task_id.clone(),
                    input_summary: Some(self.summary(&task.prompt)),
                    task: full.then(|| task.prompt.clone()),
                    replay_of: self.options.replay_of.clone(),
                    finish_gate_hash: finish_gate_hash.map(str::to_owned),
                    tools,
                    workdir_hash: self.workdir_hash.clone(),
                    api: live.map(|live| live.api.clone()),
                    model: live.map(|live| ModelRef {
                        provider: Some(live.provider.clone()),
                        name: live.model.clone(),
                    }),
                    ..RunStarted::default()
                };
                Event::new(&self.run_id, 0, started)
            }
            RunEvent::ModelRetry { step, attempt } => {
                let retry = ModelRetry {
                    attempt: Some(attempt.attempt),
                    error_kind: Some(attempt.error_kind.clone()),
                    http_status: attempt.http_status,
                    wait_ms: Some(attempt.wait_ms),
                    ..ModelRetry::default()
                };
                Event::new(&self.run_id, step.into(), retry)
            }
            RunEvent::FinishGate {
                step,
                verdict,
                duration,
            } => {
                let gate = FinishGate {
                    accepted: Some(verdict.accepted),
                    output: Some(self.summary(&verdict.output)),
                    content: full.then(|| verdict.output.clone()),
                    duration_ms: self.duration(duration),
                };
                Event::new(&self.run_id, step.into(), gate)
            }
            RunEvent::ModelAction {
                step,
                action,
                raw_output,
                duration,
                call_id,
                record,
            } => {
                let mut e = ModelAction {
                    action_type: Some(action.kind().to_owned()),
                    raw_output: raw_output.filter(|_| full).map(str::to_owned),
                    duration_ms: self.duration(duration),
                    call_id: call_id.map(str::to_owned),
                    call: self.call(record),
                    ..ModelAction::default()
                };
                match action {
                    Action::ToolCall(call) => {
                        e.tool_name = Some(call.tool_name.clone());
                        e.argument_keys = Some(call.arguments.keys().cloned().collect());
                        e.arguments = full.then(|| call.arguments.clone());
                    }
                    Action::Finish(finish) => {
                        e.output = Some(self.summary(&finish.answer));
                        e.answer = full.then(|| finish.answer.clone());
                    }
                }
                Event::new(&self.run_id, step.into(), e)
            }
            RunEvent::Observation {
                step,
                outcome,
                duration,
                call_id,
            } => {
                let observation = &outcome.observation;
                let e = Observation {
                    tool_name: Some(observation.tool_name.clone()),
                    output: Some(self.summary(&observation.content)),
                    is_error: Some(observation.is_error),
                    error_kind: outcome.error_kind.clone(),
                    exit_status: outcome.exit_status,
                    lossy: outcome.lossy.then_some(true),
                    content: full.then(|| observation.content.clone()),
                    duration_ms: self.duration(duration),
                    call_id: call_id.map(str::to_owned),
                };
                Event::new(&self.run_id, step.into(), e)
            }
            RunEvent::ModelFeedback {
                step,
                feedback,
                error,
                raw_output,
                duration,
                call_id,
                record,
            } => {
                let e = ModelFeedback {
                    output: Some(self.summary(&feedback.content)),
                    is_error: Some(true),
                    error_kind: Some(error.kind.as_str().to_owned()),
                    content: full.then(|| feedback.content.clone()),
                    raw_output: raw_output.filter(|_| full).map(str::to_owned),
                    duration_ms: self.duration(duration),
                    call_id: call_id.map(str::to_owned),
                    call: self.call(record),
                };
                Event::new(&self.run_id, step.into(), e)
            }
            RunEvent::RunFinished { result, error_kind } => {
                let mut e = RunFinished::new(result.exit_reason);
                e.steps_used = Some(result.steps_used);
                if result.exit_reason != ExitReason::Finished {
                    e.budget = error_kind.and_then(budget_of).map(str::to_owned);
                    e.error_kind = error_kind.map(str::to_owned);
                    e.error = result.error.as_deref().map(|error| {
                        if full {
                            error.to_owned()
                        } else {
                            self.summary(error)
                        }
                    });
                }
                Event::new(&self.run_id, result.steps_used.into(), e)
            }
        }
    }

    /// What the model call left behind, on a turn's first event.
    fn call(&self, record: Option<&CallRecord>) -> ModelCall {
        let Some(record) = record else {
            return ModelCall::default();
        };
        ModelCall {
            usage: record.usage,
            request_hash: record.request_hash.clone(),
            finish_reason: record.finish_reason.clone(),
            request_body: self.full().then(|| record.request_body.clone()).flatten(),
            raw_response: self.full().then(|| record.raw_response.clone()).flatten(),
            ..ModelCall::default()
        }
    }

    fn duration(&self, duration: std::time::Duration) -> Option<f64> {
        self.options
            .durations
            .then(|| (duration.as_secs_f64() * 1e6).round() / 1e3)
    }
}

/// The `budget` of a `max_steps_exceeded` ending, from its error kind; steps (the default) is
/// written as no budget at all, so traces of step-budget runs stay as they were.
fn budget_of(error_kind: &str) -> Option<&'static str> {
    match error_kind {
        CONTEXT_EXHAUSTED => Some("context"),
        TOKENS_EXHAUSTED => Some("tokens"),
        TIME_EXHAUSTED => Some("time"),
        _ => None,
    }
}

impl<S: EventSink> RunObserver for TraceRecorder<S> {
    /// Records the event with its `ts`; `run_finished` also gets the run's summed `usage` and
    /// its `duration_ms` since `run_started`.
    fn on_event(&mut self, event: &RunEvent<'_>) -> io::Result<()> {
        let mut trace_event = self.trace_event(event);
        if self.options.durations {
            trace_event.ts = Some(self.ts());
        }
        match event {
            RunEvent::RunStarted { .. } => {
                self.usage = None;
                self.started = Some(Instant::now());
            }
            RunEvent::ModelAction {
                record: Some(record),
                ..
            }
            | RunEvent::ModelFeedback {
                record: Some(record),
                ..
            } => {
                if let Some(usage) = &record.usage {
                    self.usage.get_or_insert_default().add(usage);
                }
            }
            RunEvent::RunFinished { .. } => {
                if let EventKind::RunFinished(finished) = &mut trace_event.kind {
                    finished.scores = self.scores.take();
                    finished.usage = self.usage;
                    if let Some(started) = self.started.take() {
                        finished.duration_ms = self.duration(started.elapsed());
                    }
                }
            }
            _ => {}
        }
        self.sink.record(&trace_event)
    }
}
