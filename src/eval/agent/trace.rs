//! The end of an agent task's run in its trace: what the proxy cannot know (the command's exit
//! status, its timeout, the scores) written after the calls it recorded, as `scorer_call`s and
//! one `run_finished`. A run whose agent made no model call gets its `run_started` here too.

use std::io;

use super::ending::Verdict;
use crate::eval::scorers::Score;
use crate::model::CallRecord;
use crate::proxy::Detached;
use crate::trace::{
    Capture, Event, RecorderOptions, RunFinished, RunStarted, SCHEMA, Summarizer, TraceRecorder,
    TraceWriter,
};

/// The run's identity, as its events carry it.
pub struct RunLabel<'a> {
    /// The run's id.
    pub run_id: &'a str,
    /// The suite task.
    pub task_id: &'a str,
    /// The task's prompt.
    pub prompt: &'a str,
}

/// Writes the run's scorer calls and `run_finished` (after a `run_started` when the proxy wrote
/// none) to `sink`; an incomplete run gets no `run_finished`.
#[allow(clippy::too_many_arguments)]
pub fn write_ending(
    sink: TraceWriter,
    label: &RunLabel<'_>,
    run: Option<&Detached>,
    verdict: &Verdict,
    scores: Vec<Score>,
    scorer_calls: &[(String, CallRecord)],
    capture: Capture,
    summarizer: &Summarizer,
) -> io::Result<()> {
    let mut sink = sink;
    if run.is_none() {
        let started = RunStarted {
            schema: Some(SCHEMA.to_owned()),
            capture: Some(Capture::Full),
            hash: Some(summarizer.algorithm()),
            input_summary: Some(summarizer.summarize(label.prompt)),
            task: Some(label.prompt.to_owned()),
            task_id: Some(label.task_id.to_owned()),
            ..RunStarted::default()
        };
        let mut e = Event::new(label.run_id, 0, started);
        e.ts = Some(crate::time::now_ts());
        sink.write_event(&e)?;
    }
    let steps = run.map_or(0, |run| run.turns);
    let mut sink = if scorer_calls.is_empty() {
        sink
    } else {
        let options = RecorderOptions {
            capture,
            summarizer: summarizer.clone(),
            durations: true,
            replay_of: None,
        };
        let mut recorder = TraceRecorder::new(label.run_id, options, sink);
        recorder.record_scores(steps, Vec::new(), scorer_calls)?;
        recorder.into_sink()
    };
    if verdict.incomplete {
        return Ok(());
    }
    let finished = RunFinished {
        steps_used: Some(steps),
        error_kind: verdict.error_kind.clone(),
        error: verdict.error.clone(),
        usage: run.and_then(|run| run.usage),
        duration_ms: run.map(|run| run.duration_ms),
        scores: (!scores.is_empty()).then_some(scores),
        ..RunFinished::new(verdict.exit_reason)
    };
    let mut e = Event::new(label.run_id, steps.into(), finished);
    e.ts = Some(crate::time::now_ts());
    sink.write_event(&e)
}
