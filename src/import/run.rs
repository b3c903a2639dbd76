//! The one shape every importer fills: a run with its task, its model turns, tool calls and
//! results, and its ending, turned into trace v1 events by one function.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::run::ExitReason;
use crate::trace::{
    Capture, Event, ModelAction, ModelFeedback, ModelRef, Observation, RunFinished, RunSource,
    RunStarted, SCHEMA, Score, Summarizer, Usage,
};

/// What happened in one model turn or right after it.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// The model asked for a tool.
    ToolCall {
        /// The tool.
        name: String,
        /// The arguments (an object; a bare command becomes `{"command": ...}`).
        arguments: Map<String, Value>,
        /// The source's id of the call.
        call_id: Option<String>,
    },
    /// The model ended the run with an answer (also a source's finish tool such as `submit`).
    Finish {
        /// The answer, if any.
        answer: String,
    },
    /// The tool's result.
    Observation {
        /// The tool.
        tool_name: String,
        /// What it returned.
        content: String,
        /// Whether it failed; `None` where the source does not record it.
        is_error: Option<bool>,
        /// Why, if known.
        error_kind: Option<String>,
    },
    /// Invalid model output sent back to the model.
    Feedback {
        /// The message.
        content: String,
        /// Why the output was invalid.
        error_kind: String,
    },
}

/// How an imported run ended; no ending at all is an incomplete run.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    /// The looptrace exit reason.
    pub exit_reason: ExitReason,
    /// Which budget ran out (max_steps_exceeded).
    pub budget: Option<&'static str>,
    /// A stable kind for failures.
    pub error_kind: Option<String>,
    /// The source's own ending value.
    pub native: Option<String>,
    /// The source submitted on its own after an error exit.
    pub autosubmitted: bool,
    /// The source records no ending; this one was inferred.
    pub inferred: bool,
}

impl Ending {
    /// An ending with this exit reason and nothing else.
    pub fn new(exit_reason: ExitReason) -> Self {
        Ending {
            exit_reason,
            budget: None,
            error_kind: None,
            native: None,
            autosubmitted: false,
            inferred: false,
        }
    }

    /// `finished`, inferred because the source records no ending.
    pub fn inferred_finish() -> Self {
        Ending {
            inferred: true,
            ..Ending::new(ExitReason::Finished)
        }
    }

    /// Budget exhaustion of `budget`.
    pub fn budget(budget: &'static str) -> Self {
        Ending {
            budget: Some(budget),
            error_kind: Some("budget_exhausted".to_owned()),
            ..Ending::new(ExitReason::MaxStepsExceeded)
        }
    }

    /// An internal error of `kind`.
    pub fn internal(kind: &str) -> Self {
        Ending {
            error_kind: Some(kind.to_owned()),
            ..Ending::new(ExitReason::InternalError)
        }
    }

    /// The same ending with the source's own value recorded.
    pub fn native(mut self, value: impl Into<String>) -> Self {
        self.native = Some(value.into());
        self
    }
}

/// One run read from a foreign file.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedRun {
    /// Unique across files.
    pub run_id: String,
    /// The source's own id, if any.
    pub native_id: Option<String>,
    /// The task text.
    pub task: Option<String>,
    /// The agent, if recorded.
    pub agent: Option<String>,
    /// The model, if recorded.
    pub model: Option<String>,
    /// False where the source records no tool-error flag.
    pub tool_errors_recorded: bool,
    /// What happened, each with its step (model turn, from 1).
    pub items: Vec<(u64, Item)>,
    /// Model turns, as the source counts them.
    pub steps: u64,
    /// Tokens used by the whole run, if recorded.
    pub usage: Option<Usage>,
    /// Cost of the whole run, if recorded.
    pub cost_usd: Option<f64>,
    /// When the run started and ended, where the source records it (`ts` of `run_started` and
    /// `run_finished`).
    pub started_ts: Option<String>,
    /// See `started_ts`.
    pub finished_ts: Option<String>,
    /// The time of `items[index]`, where the source records it.
    pub item_ts: BTreeMap<usize, String>,
    /// How it ended; `None` is incomplete.
    pub ending: Option<Ending>,
    /// The source's verdicts on the run (Inspect `scores`), explanations as full text.
    pub scores: Vec<Score>,
}

impl ImportedRun {
    /// An empty run with this id.
    pub fn new(run_id: impl Into<String>) -> Self {
        ImportedRun {
            run_id: run_id.into(),
            native_id: None,
            task: None,
            agent: None,
            model: None,
            tool_errors_recorded: true,
            items: Vec::new(),
            steps: 0,
            usage: None,
            cost_usd: None,
            started_ts: None,
            finished_ts: None,
            item_ts: BTreeMap::new(),
            ending: None,
            scores: Vec::new(),
        }
    }

    /// Starts a new model turn and returns its step.
    pub fn turn(&mut self) -> u64 {
        self.steps += 1;
        self.steps
    }

    /// Records `item` in the current turn (turn 1 if none began yet).
    pub fn push(&mut self, item: Item) {
        let step = self.steps.max(1);
        self.items.push((step, item));
    }

    /// A tool call in the current turn.
    pub fn call(&mut self, name: &str, arguments: Map<String, Value>, call_id: Option<String>) {
        self.push(Item::ToolCall {
            name: name.to_owned(),
            arguments,
            call_id,
        });
    }

    /// A tool result in the current turn.
    pub fn result(&mut self, tool_name: &str, content: String, is_error: Option<bool>) {
        self.push(Item::Observation {
            tool_name: tool_name.to_owned(),
            content,
            is_error,
            error_kind: None,
        });
    }

    /// Records `ts` as the time of the item pushed last.
    pub fn stamp(&mut self, ts: Option<String>) {
        if let (Some(ts), Some(last)) = (ts, self.items.len().checked_sub(1)) {
            self.item_ts.insert(last, ts);
        }
    }

    /// Tool calls in the run (finish actions excluded).
    pub fn tool_calls(&self) -> usize {
        self.items
            .iter()
            .filter(|(_, item)| matches!(item, Item::ToolCall { .. }))
            .count()
    }
}

/// Arguments as an object: objects stay, JSON text holding an object is parsed, anything else is
/// kept under `key`.
pub fn arguments_of(value: Option<&Value>, key: &str) -> Map<String, Value> {
    match value {
        Some(Value::Object(map)) => map.clone(),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            _ => Map::from_iter([(key.to_owned(), Value::String(text.clone()))]),
        },
        None | Some(Value::Null) => Map::new(),
        Some(other) => Map::from_iter([(key.to_owned(), other.clone())]),
    }
}

/// How the events are written.
#[derive(Debug, Clone)]
pub struct EmitOptions {
    /// Summary (default) or full capture.
    pub capture: Capture,
    /// The hash behind summaries.
    pub summarizer: Summarizer,
}

/// A native ending kept as it is when it is a status value docs/import.md lists for `format` (or
/// under full capture), summarized otherwise: free text, however short, is never written.
fn native_value(format: &str, text: &str, options: &EmitOptions) -> String {
    if options.capture == Capture::Full || super::statuses::is_listed(format, text) {
        text.to_owned()
    } else {
        options.summarizer.summarize(text)
    }
}

/// The trace v1 events of `run`, in order.
pub fn to_events(run: &ImportedRun, format: &str, file: &str, options: &EmitOptions) -> Vec<Event> {
    let full = options.capture == Capture::Full;
    let summarize = |text: &str| options.summarizer.summarize(text);
    let task = run.task.as_deref().unwrap_or("");
    let started = RunStarted {
        schema: Some(SCHEMA.to_owned()),
        capture: Some(options.capture),
        hash: Some(options.summarizer.algorithm()),
        input_summary: Some(summarize(task)),
        task: full.then(|| task.to_owned()),
        source: Some(RunSource {
            format: format.to_owned(),
            file: file.to_owned(),
            native_id: run.native_id.clone(),
        }),
        agent: run.agent.clone(),
        model: run.model.as_ref().map(|name| ModelRef {
            provider: None,
            name: name.clone(),
        }),
        tool_errors_recorded: Some(run.tool_errors_recorded),
        ..RunStarted::default()
    };
    let mut started = Event::new(&run.run_id, 0, started);
    started.ts = run.started_ts.clone();
    let mut events = vec![started];
    for (index, (step, item)) in run.items.iter().enumerate() {
        let mut event = match item {
            Item::ToolCall {
                name,
                arguments,
                call_id,
            } => {
                let mut keys: Vec<String> = arguments.keys().cloned().collect();
                keys.sort();
                let action = ModelAction {
                    action_type: Some("tool_call".to_owned()),
                    tool_name: Some(name.clone()),
                    argument_keys: Some(keys),
                    arguments: full.then(|| arguments.clone()),
                    call_id: call_id.clone(),
                    ..ModelAction::default()
                };
                Event::new(&run.run_id, *step, action)
            }
            Item::Finish { answer } => {
                let action = ModelAction {
                    action_type: Some("finish".to_owned()),
                    output: Some(summarize(answer)),
                    answer: full.then(|| answer.clone()),
                    ..ModelAction::default()
                };
                Event::new(&run.run_id, *step, action)
            }
            Item::Observation {
                tool_name,
                content,
                is_error,
                error_kind,
            } => {
                let observation = Observation {
                    tool_name: Some(tool_name.clone()),
                    output: Some(summarize(content)),
                    is_error: *is_error,
                    error_kind: error_kind.clone(),
                    content: full.then(|| content.clone()),
                    ..Observation::default()
                };
                Event::new(&run.run_id, *step, observation)
            }
            Item::Feedback {
                content,
                error_kind,
            } => {
                let feedback = ModelFeedback {
                    output: Some(summarize(content)),
                    is_error: Some(true),
                    error_kind: Some(error_kind.clone()),
                    content: full.then(|| content.clone()),
                    ..ModelFeedback::default()
                };
                Event::new(&run.run_id, *step, feedback)
            }
        };
        event.ts = run.item_ts.get(&index).cloned();
        events.push(event);
    }
    if let Some(ending) = &run.ending {
        let mut finished = RunFinished::new(ending.exit_reason);
        finished.steps_used = Some(u32::try_from(run.steps).unwrap_or(u32::MAX));
        finished.error_kind = ending.error_kind.clone();
        // Every budget stop names its budget; `steps` is what an absent one has always meant.
        let budget = match ending.exit_reason {
            ExitReason::MaxStepsExceeded => ending.budget.or(Some("steps")),
            _ => ending.budget,
        };
        finished.budget = budget.map(str::to_owned);
        finished.native_ending = ending
            .native
            .as_deref()
            .map(|text| native_value(format, text, options));
        finished.autosubmitted = ending.autosubmitted.then_some(true);
        finished.ending_inferred = ending.inferred.then_some(true);
        finished.usage = run.usage;
        finished.cost_usd = run.cost_usd;
        finished.scores = (!run.scores.is_empty()).then(|| {
            run.scores
                .iter()
                .map(|score| Score {
                    explanation: score.explanation.as_deref().map(|text| {
                        if full {
                            text.to_owned()
                        } else {
                            summarize(text)
                        }
                    }),
                    ..score.clone()
                })
                .collect()
        });
        let mut event = Event::new(&run.run_id, run.steps, finished);
        event.ts = run.finished_ts.clone();
        events.push(event);
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_budget_stop_names_its_budget() {
        let options = EmitOptions {
            capture: Capture::Summary,
            summarizer: Summarizer::from_env(),
        };
        let mut run = ImportedRun::new("r");
        run.ending = Some(Ending::new(ExitReason::MaxStepsExceeded));
        let budget = |run: &ImportedRun| match to_events(run, "f", "file", &options).pop() {
            Some(Event {
                kind: crate::trace::EventKind::RunFinished(finished),
                ..
            }) => finished.budget,
            other => panic!("not an ending: {other:?}"),
        };
        assert_eq!(budget(&run).as_deref(), Some("steps"));
        run.ending = Some(Ending::budget("context"));
        assert_eq!(budget(&run).as_deref(), Some("context"));
        run.ending = Some(Ending::new(ExitReason::Finished));
        assert_eq!(budget(&run), None);
    }
}
