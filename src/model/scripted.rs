//! Scripted models for tests and for `looptrace run`: they return fixed answers in order and
//! record every call, so a test can assert the exact history the model saw.

use super::contract::{Model, ModelError, RawModel};
use crate::run::{Action, HistoryItem, Task};

/// One call a scripted model received: the task and a snapshot of the history.
pub type ModelCall = (Task, Vec<HistoryItem>);

/// Returns a fixed list of actions in order and records every call it received.
#[derive(Clone, Debug, Default)]
pub struct ScriptedModel {
    actions: Vec<Action>,
    next: usize,
    calls: Vec<ModelCall>,
}

impl ScriptedModel {
    /// A model that will return `actions` in order.
    pub fn new(actions: Vec<Action>) -> Self {
        ScriptedModel {
            actions,
            next: 0,
            calls: Vec::new(),
        }
    }

    /// Every call received so far, in order.
    pub fn calls(&self) -> &[ModelCall] {
        &self.calls
    }
}

impl Model for ScriptedModel {
    fn next_action(&mut self, task: &Task, history: &[HistoryItem]) -> Result<Action, ModelError> {
        self.calls.push((task.clone(), history.to_vec()));
        let action = next_scripted(&self.actions, &mut self.next, ("action", "actions"))?;
        Ok(action.clone())
    }
}

/// Returns fixed raw responses in order (one per line of a responses file) and records every call.
#[derive(Clone, Debug, Default)]
pub struct ScriptedRawModel {
    responses: Vec<String>,
    next: usize,
    calls: Vec<ModelCall>,
}

impl ScriptedRawModel {
    /// A raw model that will return `responses` in order.
    pub fn new(responses: Vec<String>) -> Self {
        ScriptedRawModel {
            responses,
            next: 0,
            calls: Vec::new(),
        }
    }

    /// Every call received so far, in order.
    pub fn calls(&self) -> &[ModelCall] {
        &self.calls
    }
}

impl RawModel for ScriptedRawModel {
    fn next_response(
        &mut self,
        task: &Task,
        history: &[HistoryItem],
    ) -> Result<String, ModelError> {
        self.calls.push((task.clone(), history.to_vec()));
        let response = next_scripted(&self.responses, &mut self.next, ("response", "responses"))?;
        Ok(response.clone())
    }
}

/// Plays a borrowed script without recording the calls: what batch evaluation uses, where nobody
/// reads the history back and copying every script would cost more than running it.
#[derive(Clone, Debug)]
pub struct ScriptPlayer<'a, T> {
    items: &'a [T],
    next: usize,
}

impl<'a, T> ScriptPlayer<'a, T> {
    /// A player of `items`, from the first.
    pub fn new(items: &'a [T]) -> Self {
        ScriptPlayer { items, next: 0 }
    }

    /// The next item, or the failure that says how many there were (`one`/`many` name them).
    pub fn next_item(&mut self, (one, many): (&str, &str)) -> Result<&'a T, ModelError> {
        next_scripted(self.items, &mut self.next, (one, many))
    }
}

impl Model for ScriptPlayer<'_, Action> {
    fn next_action(
        &mut self,
        _task: &Task,
        _history: &[HistoryItem],
    ) -> Result<Action, ModelError> {
        self.next_item(("action", "actions")).cloned()
    }
}

impl RawModel for ScriptPlayer<'_, String> {
    fn next_response(
        &mut self,
        _task: &Task,
        _history: &[HistoryItem],
    ) -> Result<String, ModelError> {
        self.next_item(("response", "responses")).cloned()
    }
}

/// The next scripted item, or the failure that makes too little test data visible.
fn next_scripted<'a, T>(
    items: &'a [T],
    next: &mut usize,
    (one, many): (&str, &str),
) -> Result<&'a T, ModelError> {
    let item = items.get(*next).ok_or_else(|| {
        ModelError::Failure(format!(
            "scripted model exhausted after {}",
            crate::plural(items.len() as u64, one, many)
        ))
    })?;
    *next += 1;
    Ok(item)
}
