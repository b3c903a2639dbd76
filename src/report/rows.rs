//! One small row per run, for the views that name runs (the HTML report and `report --list`): the
//! aggregate [`Report`](super::Report) forgets each run once it is counted, these keep what a
//! reader clicks through. Rows are read by the trace reader's run grouping ([`RunStream`]), which
//! a differential test holds to the report's outcome per run, so the two always count alike.

use std::collections::BTreeSet;
use std::path::Path;

use crate::run::{ExitReason, RunOutcome};
use crate::time::unix_ms_from_rfc3339;
use crate::trace::{Event, EventKind, ReadOptions, RecordedRun, RunStream, TraceError};

/// Characters of one trace text a timeline keeps; longer texts are cut and say their length.
pub const TEXT_LIMIT: usize = 2_000;

/// One run as the views that list runs show it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    /// The input the run was read from, as an index into [`RunTable::files`].
    pub file: u32,
    /// The run id.
    pub run_id: String,
    /// The suite task it is an attempt at, when recorded.
    pub task_id: Option<String>,
    /// How it ended.
    pub ending: RunOutcome,
    /// Model turns used: `steps_used`, else the largest `step` of its events.
    pub steps: u32,
    /// The error kinds it recorded (its ending's first, then feedback and tool errors in order).
    pub error_kinds: Vec<String>,
    /// The tools it called, sorted.
    pub tools: Vec<String>,
    /// The finish gate's last verdict (`accepted`, `rejected`), or what the caller judged (an
    /// eval's expectation verdict, a replay's outcome).
    pub verdict: Option<String>,
    /// The source format (`looptrace`, `codex`, ...).
    pub source: &'static str,
    /// Its duration, by the rule of `docs/report.md`.
    pub duration_ms: Option<f64>,
    /// Where a replay first diverged from this recorded run: the step, and what differed.
    pub divergence: Option<(u64, String)>,
    /// Its events, when the view shows timelines; empty otherwise.
    pub timeline: Vec<TimelineStep>,
}

/// One event of a run's timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineStep {
    /// The model turn.
    pub step: u64,
    /// The event type, as the trace names it.
    pub event: String,
    /// `tool_call` or `finish` (model actions).
    pub action: Option<String>,
    /// The tool called or answering.
    pub tool: Option<String>,
    /// The text the trace holds: the content, answer, arguments or error with full capture (cut
    /// at [`TEXT_LIMIT`] characters), else its summary (length and hash).
    pub text: Option<String>,
    /// An error observation, feedback or error ending.
    pub is_error: bool,
    /// Its error kind.
    pub error_kind: Option<String>,
    /// The finish gate's verdict.
    pub accepted: Option<bool>,
    /// How long it took.
    pub duration_ms: Option<f64>,
}

/// The runs of every input, in input order and, within an input, in order of first appearance.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunTable {
    /// The inputs' names.
    pub files: Vec<String>,
    /// One row per run.
    pub rows: Vec<RunRow>,
}

impl RunTable {
    /// Reads the runs of the trace at `path` (shown as `name`, of source format `source`).
    pub fn read(
        &mut self,
        path: &Path,
        name: &str,
        source: &'static str,
        lenient: bool,
        timelines: bool,
    ) -> Result<(), TraceError> {
        let options = ReadOptions {
            lenient,
            ..ReadOptions::default()
        };
        let stream = RunStream::open(path, options)?;
        let file = u32::try_from(self.files.len()).unwrap_or(u32::MAX);
        self.files.push(name.to_owned());
        let mut runs = Vec::new();
        for run in stream {
            let run = run?;
            runs.push((run.index, RunRow::of(&run.run, file, source, timelines)));
        }
        runs.sort_by_key(|(index, _)| *index);
        self.rows.extend(runs.into_iter().map(|(_, row)| row));
        Ok(())
    }

    /// Runs per ending, in the order of [`RunOutcome::ALL`].
    pub fn counts(&self) -> [u64; 5] {
        let mut counts = [0; 5];
        for row in &self.rows {
            counts[row.ending.index()] += 1;
        }
        counts
    }
}

impl RunRow {
    /// The row of one recorded run.
    pub fn of(run: &RecordedRun, file: u32, source: &'static str, timelines: bool) -> RunRow {
        let started = run.started();
        let finished = run.finished();
        let ending = match run.outcome() {
            RunOutcome::Ended(reason) => ending_of(reason),
            RunOutcome::Incomplete => RunOutcome::Incomplete,
        };
        let steps = finished.and_then(Event::steps_used).unwrap_or_else(|| {
            let max = run.events.iter().map(|(_, e)| e.step).max().unwrap_or(0);
            u32::try_from(max).unwrap_or(u32::MAX)
        });
        let mut error_kinds: Vec<String> = Vec::new();
        if let Some(kind) = finished.and_then(Event::error_kind) {
            error_kinds.push(kind.to_owned());
        }
        let mut tools = BTreeSet::new();
        let mut verdict = None;
        for (_, event) in &run.events {
            if let Some(kind) = event.error_kind()
                && !error_kinds.iter().any(|known| known == kind)
            {
                error_kinds.push(kind.to_owned());
            }
            match &event.kind {
                EventKind::ModelAction(action) => {
                    if let Some(tool) = &action.tool_name {
                        tools.insert(tool.clone());
                    }
                }
                EventKind::FinishGate(gate) => {
                    if let Some(accepted) = gate.accepted {
                        verdict = Some(if accepted { "accepted" } else { "rejected" }.to_owned());
                    }
                }
                _ => {}
            }
        }
        RunRow {
            file,
            run_id: run.run_id.clone(),
            task_id: started.and_then(|e| e.task_id.clone()),
            ending,
            steps,
            error_kinds,
            tools: tools.into_iter().collect(),
            verdict,
            source,
            duration_ms: duration(run),
            divergence: None,
            timeline: if timelines {
                run.events
                    .iter()
                    .map(|(_, e)| TimelineStep::of(e))
                    .collect()
            } else {
                Vec::new()
            },
        }
    }
}

impl TimelineStep {
    /// The timeline entry of one event.
    pub fn of(event: &Event) -> TimelineStep {
        let none = None;
        // The text captured in full, its summary, and the argument names.
        let (content, answer, arguments, task, error, output, input_summary, argument_keys) =
            match &event.kind {
                EventKind::RunStarted(e) => (
                    &none,
                    &none,
                    None,
                    &e.task,
                    &none,
                    &none,
                    &e.input_summary,
                    None,
                ),
                EventKind::ModelAction(e) => (
                    &none,
                    &e.answer,
                    e.arguments.as_ref(),
                    &none,
                    &none,
                    &e.output,
                    &none,
                    e.argument_keys.as_ref(),
                ),
                EventKind::Observation(e) => (
                    &e.content, &none, None, &none, &none, &e.output, &none, None,
                ),
                EventKind::ModelFeedback(e) => (
                    &e.content, &none, None, &none, &none, &e.output, &none, None,
                ),
                EventKind::FinishGate(e) => (
                    &e.content, &none, None, &none, &none, &e.output, &none, None,
                ),
                EventKind::ModelRetry(e) => {
                    (&none, &none, None, &none, &e.error, &none, &none, None)
                }
                EventKind::RunFinished(e) => {
                    (&none, &none, None, &none, &e.error, &none, &none, None)
                }
                EventKind::InternalError(e) => {
                    (&none, &none, None, &none, &e.error, &none, &none, None)
                }
                EventKind::ScorerCall(_) | EventKind::Unknown { .. } => {
                    (&none, &none, None, &none, &none, &none, &none, None)
                }
            };
        let arguments = arguments.map(|a| serde_json::Value::Object(a.clone()).to_string());
        let full = content
            .clone()
            .or_else(|| answer.clone())
            .or(arguments)
            .or_else(|| task.clone())
            .or_else(|| error.clone());
        let summary = output
            .as_ref()
            .or(input_summary.as_ref())
            .map(|s| short_summary(s));
        let text = full
            .map(|t| cut(&t))
            .or(summary)
            .or_else(|| argument_keys.map(|keys| format!("arguments: {}", keys.join(", "))));
        let (action, tool, accepted) = match &event.kind {
            EventKind::ModelAction(e) => (e.action_type.clone(), e.tool_name.clone(), None),
            EventKind::Observation(e) => (None, e.tool_name.clone(), None),
            EventKind::FinishGate(e) => (None, None, e.accepted),
            _ => (None, None, None),
        };
        let is_error = match &event.kind {
            EventKind::ModelFeedback(_) | EventKind::InternalError(_) => true,
            EventKind::Observation(e) => e.is_error_by_rule(),
            EventKind::RunFinished(e) => e.exit_reason != ExitReason::Finished,
            _ => false,
        };
        TimelineStep {
            step: event.step,
            event: event.event_type().to_owned(),
            action,
            tool,
            text,
            is_error,
            error_kind: event.error_kind().map(str::to_owned),
            accepted,
            duration_ms: event.duration_ms().filter(|d| d.is_finite()),
        }
    }
}

fn ending_of(reason: ExitReason) -> RunOutcome {
    match reason {
        ExitReason::Finished => RunOutcome::Ended(ExitReason::Finished),
        ExitReason::MaxStepsExceeded => RunOutcome::Ended(ExitReason::MaxStepsExceeded),
        ExitReason::InvalidModelOutput => RunOutcome::Ended(ExitReason::InvalidModelOutput),
        ExitReason::InternalError => RunOutcome::Ended(ExitReason::InternalError),
    }
}

/// A run's duration: its `run_finished.duration_ms`, else the span of its events' `ts`, else the
/// sum of its events' `duration_ms` (the rule of `docs/report.md`).
fn duration(run: &RecordedRun) -> Option<f64> {
    if let Some(ms) = run
        .finished()
        .and_then(Event::duration_ms)
        .filter(|d| d.is_finite())
    {
        return Some(ms);
    }
    let times: Vec<i64> = run
        .events
        .iter()
        .filter_map(|(_, e)| {
            e.ts.as_deref()
                .and_then(|t| unix_ms_from_rfc3339(t.as_bytes()))
        })
        .collect();
    if let (Some(first), Some(last)) = (times.iter().min(), times.iter().max())
        && times.len() > 1
    {
        return Some((last - first) as f64);
    }
    let durations: Vec<f64> = run
        .events
        .iter()
        .filter_map(|(_, e)| e.duration_ms().filter(|d| d.is_finite()))
        .collect();
    (!durations.is_empty()).then(|| durations.iter().sum())
}

/// A summary (`chars=N;sha256=HEX`) with its hash cut to 12 digits: the length and enough of the
/// hash to tell texts apart, at a fifth of the bytes.
fn short_summary(summary: &str) -> String {
    match summary
        .split_once('=')
        .and_then(|_| summary.rsplit_once('='))
    {
        Some((head, hash)) if hash.len() > 12 && hash.is_ascii() => {
            format!("{head}={}…", &hash[..12])
        }
        _ => cut(summary),
    }
}

/// `text`, cut at [`TEXT_LIMIT`] characters with its full length said.
fn cut(text: &str) -> String {
    match text.char_indices().nth(TEXT_LIMIT) {
        Some((at, _)) => format!(
            "{}… ({} characters in all)",
            &text[..at],
            text.chars().count()
        ),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_keep_their_length_and_a_prefix_of_the_hash() {
        assert_eq!(
            short_summary("chars=2;sha256=44c8031cb036a7350d8b9b8603af662a"),
            "chars=2;sha256=44c8031cb036…"
        );
        assert_eq!(short_summary("plain"), "plain");
    }

    #[test]
    fn long_texts_are_cut_and_say_their_length() {
        let long = "é".repeat(TEXT_LIMIT + 5);
        let shown = cut(&long);
        assert!(shown.ends_with(&format!("… ({} characters in all)", TEXT_LIMIT + 5)));
        assert_eq!(cut("short"), "short");
    }
}
