//! What an agent's recorded run showed, folded from the events its proxy wrote as they were
//! written: the tools it was asked to call and the results it sent back, the model's last text
//! answer, tokens, and the first request a replay had no recorded answer for.

use std::sync::{Arc, Mutex, PoisonError};

use crate::trace::{Event, EventKind};

/// The facts of one agent run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunFacts {
    /// The tools the model called, once per call, in order.
    pub tools: Vec<String>,
    /// Tool results the agent sent back.
    pub tool_calls: u32,
    /// Of which marked as errors.
    pub tool_errors: u32,
    /// Answers that were neither text nor a well-formed tool call.
    pub feedback: u32,
    /// The model's last text answer.
    pub answer: Option<String>,
    /// Input and output tokens, when the server reported any.
    pub tokens: Option<(u64, u64)>,
    /// The first replay miss's message: what the agent asked that it did not ask before.
    pub first_miss: Option<String>,
    /// The step of the last event written.
    pub last_step: u64,
}

impl RunFacts {
    /// Takes one written event into account.
    pub fn add(&mut self, event: &Event) {
        self.last_step = self.last_step.max(event.step);
        match &event.kind {
            EventKind::Observation(observation) => {
                self.tool_calls += 1;
                if observation.is_error == Some(true) {
                    self.tool_errors += 1;
                }
            }
            EventKind::ModelAction(action) => {
                if action.action_type.as_deref() == Some("finish") {
                    self.answer = action.answer.clone();
                } else if let Some(tool) = &action.tool_name {
                    self.tools.push(tool.clone());
                }
            }
            EventKind::ModelFeedback(_) => self.feedback += 1,
            EventKind::ModelRetry(retry)
                if retry.error_kind.as_deref() == Some("replay_miss")
                    && self.first_miss.is_none() =>
            {
                self.first_miss = retry.error.clone();
            }
            _ => {}
        }
        if let Some(usage) = event.usage() {
            let (input, output) = self.tokens.get_or_insert((0, 0));
            *input = input.saturating_add(usage.input_tokens.unwrap_or(0));
            *output = output.saturating_add(usage.output_tokens.unwrap_or(0));
        }
    }
}

/// Facts shared between the proxy's tap (which adds to them) and the runner (which reads them
/// once the proxy has stopped).
pub type SharedFacts = Arc<Mutex<RunFacts>>;

/// A tap for the run proxy that folds each event into `facts`.
pub fn tap(facts: &SharedFacts) -> crate::proxy::EventTap {
    let facts = Arc::clone(facts);
    Box::new(move |event| {
        facts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(event);
    })
}
