//! Flaky tasks (runs of one task that disagree on passing) and where their runs first parted
//! ways: at a model step (the model answered the same history differently) or at a tool
//! observation (a tool, or the finish gate, answered the same call differently, which points at
//! the environment, not the model). Only full capture holds the texts to compare; under summary
//! capture the divergence is `unknown`.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde::Serialize;

use super::results::{ResultsFile, TaskResult};
use crate::trace::{Capture, Event, EventKind, ReadOptions, RecordedRun, RunStream};

/// Where two runs of a task first differ.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum Divergence {
    /// The model's output at `step` differs after the same history.
    Model {
        /// The step.
        step: u64,
    },
    /// A tool's (or the finish gate's) answer at `step` differs to the same call.
    Tool {
        /// The step.
        step: u64,
        /// The tool, or `finish gate`.
        tool: String,
    },
    /// Every compared event is the same (the runs differ only in what is not compared, such as
    /// times).
    Same,
    /// Not known, with why.
    Unknown {
        /// Why.
        why: String,
    },
}

impl Divergence {
    /// The divergence in words.
    pub fn describe(&self) -> String {
        match self {
            Divergence::Model { step } => format!(
                "first diverged at step {step}: the model answered the same history differently"
            ),
            Divergence::Tool { step, tool } => format!(
                "first diverged at step {step}: {tool} answered the same call differently (the environment, not the model)"
            ),
            Divergence::Same => "the runs' recorded events are the same".to_owned(),
            Divergence::Unknown { why } => format!("divergence unknown: {why}"),
        }
    }
}

/// A flaky task: its passing runs, its runs, and where a passing and a failing run parted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlakyTask {
    /// The task id.
    pub id: String,
    /// Runs that passed.
    pub passed: u32,
    /// Runs.
    pub runs: u32,
    /// Where its first passing and first failing run parted.
    pub divergence: Divergence,
}

/// The event's parts that say what happened (not when, nor how long it took, nor what the model
/// call cost).
#[derive(PartialEq, Default)]
struct Compared<'a> {
    event_type: &'a str,
    action_type: Option<&'a str>,
    tool_name: Option<&'a str>,
    arguments: Option<&'a serde_json::Map<String, serde_json::Value>>,
    answer: Option<&'a str>,
    content: Option<&'a str>,
    raw_output: Option<&'a str>,
    output: Option<&'a str>,
    is_error: Option<bool>,
    error_kind: Option<&'a str>,
    exit_status: Option<i32>,
    accepted: Option<bool>,
}

fn compared(event: &Event) -> Compared<'_> {
    let base = Compared {
        event_type: event.event_type(),
        error_kind: event.error_kind(),
        ..Compared::default()
    };
    match &event.kind {
        EventKind::ModelAction(e) => Compared {
            action_type: e.action_type.as_deref(),
            tool_name: e.tool_name.as_deref(),
            arguments: e.arguments.as_ref(),
            answer: e.answer.as_deref(),
            raw_output: e.raw_output.as_deref(),
            output: e.output.as_deref(),
            ..base
        },
        EventKind::Observation(e) => Compared {
            tool_name: e.tool_name.as_deref(),
            content: e.content.as_deref(),
            output: e.output.as_deref(),
            is_error: e.is_error,
            exit_status: e.exit_status,
            ..base
        },
        EventKind::ModelFeedback(e) => Compared {
            content: e.content.as_deref(),
            raw_output: e.raw_output.as_deref(),
            output: e.output.as_deref(),
            is_error: e.is_error,
            ..base
        },
        EventKind::FinishGate(e) => Compared {
            content: e.content.as_deref(),
            output: e.output.as_deref(),
            accepted: e.accepted,
            ..base
        },
        _ => base,
    }
}

/// The events of a run that its model and tools produced, in order.
fn steps(run: &RecordedRun) -> Vec<&Event> {
    run.events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::ModelAction(_)
                    | EventKind::ModelFeedback(_)
                    | EventKind::Observation(_)
                    | EventKind::FinishGate(_)
            )
        })
        .collect()
}

fn at(event: &Event) -> Divergence {
    match &event.kind {
        EventKind::Observation(observation) => Divergence::Tool {
            step: event.step,
            tool: format!(
                "the tool `{}`",
                observation.tool_name.as_deref().unwrap_or("(unknown)")
            ),
        },
        EventKind::FinishGate(_) => Divergence::Tool {
            step: event.step,
            tool: "the finish gate".to_owned(),
        },
        _ => Divergence::Model { step: event.step },
    }
}

/// Where runs `a` and `b` of one task first differ.
pub fn first_divergence(a: &RecordedRun, b: &RecordedRun) -> Divergence {
    let (a, b) = (steps(a), steps(b));
    for (x, y) in a.iter().zip(&b) {
        if compared(x) != compared(y) {
            // The same history so far: whichever event differs first is where they parted; a
            // model step against a tool answer means the model moved first.
            return if x.event_type() == y.event_type() {
                at(x)
            } else {
                Divergence::Model {
                    step: x.step.min(y.step),
                }
            };
        }
    }
    match a.len().cmp(&b.len()) {
        std::cmp::Ordering::Less => at(b[a.len()]),
        std::cmp::Ordering::Greater => at(a[b.len()]),
        std::cmp::Ordering::Equal => Divergence::Same,
    }
}

/// The flaky tasks of `results` (in the order the tasks first appear), each with the divergence
/// of its first passing and first failing run, read from the traces beside the results in
/// `folder(row)` (a row's `trace` is relative to it). Under summary capture every divergence is
/// `unknown`, and no trace is read.
pub fn flaky_tasks(
    results: &ResultsFile,
    folder: &dyn Fn(&TaskResult) -> PathBuf,
) -> Vec<FlakyTask> {
    flaky_among(&results.tasks, results.capture, folder)
}

/// [`flaky_tasks`] of `rows`, which hold every row of each task they hold a row of, written with
/// `capture`.
pub fn flaky_among(
    rows: &[TaskResult],
    capture: Capture,
    folder: &dyn Fn(&TaskResult) -> PathBuf,
) -> Vec<FlakyTask> {
    // A task's rows under a model matrix are one task per model (`id[model]`).
    let mut order: Vec<Cow<'_, str>> = Vec::new();
    let mut by_task: HashMap<Cow<'_, str>, Vec<&TaskResult>> = HashMap::new();
    for row in rows {
        let key = row.row_key();
        by_task
            .entry(key.clone())
            .or_insert_with(|| {
                order.push(key);
                Vec::new()
            })
            .push(row);
    }
    // Each flaky task's rows, and its first passing and first failing row.
    let mut pairs = Vec::new();
    for id in order {
        let mut task_rows = by_task.remove(&id).unwrap_or_default();
        task_rows.sort_by_key(|r| r.repeat);
        let passing = task_rows.iter().find(|r| r.passes()).copied();
        let failing = task_rows.iter().find(|r| !r.passes()).copied();
        if let (Some(pass), Some(fail)) = (passing, failing) {
            pairs.push((id, task_rows, pass, fail));
        }
    }
    // Only the runs compared are read, each trace file once, as a stream.
    let runs = match capture {
        Capture::Full => compared_runs(pairs.iter().flat_map(|p| [p.2, p.3]), folder),
        _ => HashMap::new(),
    };
    let run_of = |row: &TaskResult| {
        let path = folder(row).join(row.trace.as_deref()?);
        runs.get(&(path, row.run_id.clone()?))
    };
    (pairs.into_iter())
        .map(|(id, task_rows, pass, fail)| {
            let divergence = match (capture, run_of(pass), run_of(fail)) {
                (Capture::Full, Some(a), Some(b)) => first_divergence(a, b),
                (Capture::Full, _, _) => Divergence::Unknown {
                    why: "a run's trace could not be read".to_owned(),
                },
                _ => Divergence::Unknown {
                    why: "summary capture (run with --capture full to compare the runs)".to_owned(),
                },
            };
            FlakyTask {
                id: id.into_owned(),
                passed: task_rows.iter().filter(|r| r.passes()).count() as u32,
                runs: task_rows.len() as u32,
                divergence,
            }
        })
        .collect()
}

/// The runs of `rows` in their traces, by trace path and run id: each trace file is read once as
/// a stream, keeping only those runs (the first run with each id).
fn compared_runs<'r>(
    rows: impl Iterator<Item = &'r TaskResult>,
    folder: &dyn Fn(&TaskResult) -> PathBuf,
) -> HashMap<(PathBuf, String), RecordedRun> {
    let mut wanted: HashMap<PathBuf, HashSet<String>> = HashMap::new();
    for row in rows {
        if let (Some(trace), Some(run_id)) = (&row.trace, &row.run_id) {
            let path = folder(row).join(trace);
            wanted.entry(path).or_default().insert(run_id.clone());
        }
    }
    let mut runs = HashMap::new();
    for (path, mut ids) in wanted {
        let Ok(stream) = RunStream::open(&path, ReadOptions::default()) else {
            continue;
        };
        for streamed in stream {
            let Ok(streamed) = streamed else { break };
            if streamed.occurrence == 1 && ids.remove(&streamed.run.run_id) {
                runs.insert((path.clone(), streamed.run.run_id.clone()), streamed.run);
                if ids.is_empty() {
                    break;
                }
            }
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(step: u64, value: serde_json::Value) -> (u64, Event) {
        let mut line = json!({"run_id": "r", "step": step});
        for (k, v) in value.as_object().cloned().unwrap_or_default() {
            line[k] = v;
        }
        (
            step,
            serde_json::from_value(line).unwrap_or_else(|e| panic!("{e}")),
        )
    }

    fn run(events: Vec<(u64, Event)>) -> RecordedRun {
        RecordedRun {
            run_id: "r".to_owned(),
            events,
        }
    }

    fn call(step: u64) -> (u64, Event) {
        event(
            step,
            json!({"event_type": "model_action", "action_type": "tool_call", "tool_name": "calc", "arguments": {"x": 1}}),
        )
    }

    fn observed(step: u64, output: &str) -> (u64, Event) {
        event(
            step,
            json!({"event_type": "observation", "tool_name": "calc", "output": output, "is_error": false, "ts": format!("t{output}")}),
        )
    }

    fn finish(step: u64, answer: &str) -> (u64, Event) {
        event(
            step,
            json!({"event_type": "model_action", "action_type": "finish", "answer": answer}),
        )
    }

    #[test]
    fn a_tool_that_answers_differently_is_the_environment() {
        let a = run(vec![call(1), observed(1, "2"), finish(2, "2")]);
        let b = run(vec![call(1), observed(1, "3"), finish(2, "3")]);
        assert_eq!(
            first_divergence(&a, &b),
            Divergence::Tool {
                step: 1,
                tool: "the tool `calc`".to_owned()
            }
        );
    }

    #[test]
    fn a_model_that_answers_the_same_history_differently_is_the_model() {
        let a = run(vec![call(1), observed(1, "2"), finish(2, "2")]);
        let b = run(vec![call(1), observed(1, "2"), finish(2, "two")]);
        assert_eq!(first_divergence(&a, &b), Divergence::Model { step: 2 });
        // A finish against another tool call: the model moved first.
        let c = run(vec![call(1), observed(1, "2"), call(2)]);
        assert_eq!(first_divergence(&a, &c), Divergence::Model { step: 2 });
        // Times are not compared.
        let mut later = observed(1, "2");
        later.1.ts = Some("2026-12-06T00:00:00.000Z".to_owned());
        let d = run(vec![call(1), later, finish(2, "2")]);
        assert_eq!(first_divergence(&a, &d), Divergence::Same);
        // One run going on where the other stopped.
        let e = run(vec![call(1), observed(1, "2")]);
        assert_eq!(first_divergence(&e, &a), Divergence::Model { step: 2 });
    }
}
