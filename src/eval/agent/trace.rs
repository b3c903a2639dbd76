//! The end of an agent task's run in its trace: what the proxy cannot know (the command's exit
//! status, its timeout, the scores) written after the calls it recorded, as `scorer_call`s and
//! one `run_finished`. A run whose agent made no model call gets its `run_started` here too.

use std::io;

use super::ending::Verdict;
use crate::eval::scorers::Score;
use crate::model::CallRecord;
use crate::proxy::Detached;
use crate::trace::{
    Capture, EventType, RecorderOptions, SCHEMA, Summarizer, TraceEvent, TraceRecorder, TraceWriter,
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
        let mut e = TraceEvent::new(label.run_id, 0, EventType::RunStarted);
        e.schema = Some(SCHEMA.to_owned());
        e.capture = Some(Capture::Full);
        e.hash = Some(summarizer.algorithm());
        e.input_summary = Some(summarizer.summarize(label.prompt));
        e.task = Some(label.prompt.to_owned());
        e.task_id = Some(label.task_id.to_owned());
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
    let mut e = TraceEvent::new(label.run_id, steps.into(), EventType::RunFinished);
    e.exit_reason = Some(verdict.exit_reason);
    e.steps_used = Some(steps);
    e.error_kind = verdict.error_kind.clone();
    e.error = verdict.error.clone();
    e.usage = run.and_then(|run| run.usage);
    e.duration_ms = run.map(|run| run.duration_ms);
    e.scores = (!scores.is_empty()).then_some(scores);
    e.ts = Some(crate::time::now_ts());
    sink.write_event(&e)
}
