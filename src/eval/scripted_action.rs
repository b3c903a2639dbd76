//! A scripted action as a loaded suite holds it: a tool call's arguments stay the JSON text the
//! suite wrote, checked when the suite loads and read into a map only when the action is played.
//! Held as maps, the arguments of a large scripted suite were about a quarter of its parsed
//! memory (a map of three keys takes a 640-byte node besides its keys), all built on the loading
//! threads before the first task could start; as text they take a tenth of that, and each is read
//! by the worker that plays it.

use std::fmt;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::model::{Model, ModelError, ScriptPlayer};
use crate::run::{Action, Finish, HistoryItem, Task, ToolCall};

/// One scripted action of a suite task.
#[derive(Clone)]
pub enum ScriptedAction {
    /// A tool call whose arguments are a JSON object, as text.
    ToolCall {
        tool_name: String,
        arguments: Box<RawValue>,
    },
    /// A finish.
    Finish(Finish),
}

impl ScriptedAction {
    /// The action held as a script holds it: its arguments written as compact JSON.
    pub fn from_action(action: Action) -> Self {
        match action {
            Action::ToolCall(call) => ScriptedAction::ToolCall {
                tool_name: call.tool_name,
                arguments: serde_json::value::to_raw_value(&call.arguments)
                    .expect("a map of JSON values is written as JSON"),
            },
            Action::Finish(finish) => ScriptedAction::Finish(finish),
        }
    }

    /// The action played. The arguments were checked to be an object without repeated keys when
    /// the suite loaded, so reading them fails only if that check was wrong.
    pub fn action(&self) -> Result<Action, serde_json::Error> {
        Ok(match self {
            ScriptedAction::ToolCall {
                tool_name,
                arguments,
            } => Action::ToolCall(ToolCall::new(
                tool_name.clone(),
                serde_json::from_str::<Map<String, Value>>(arguments.get())?,
            )),
            ScriptedAction::Finish(finish) => Action::Finish(finish.clone()),
        })
    }
}

/// Shows the action played, so two suites that script the same actions look the same whatever
/// the spacing of their arguments' text.
impl fmt::Debug for ScriptedAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.action(), self) {
            (Ok(action), _) => action.fmt(f),
            (Err(err), ScriptedAction::ToolCall { arguments, .. }) => {
                write!(f, "unreadable arguments ({err}): {}", arguments.get())
            }
            (Err(err), ScriptedAction::Finish(_)) => err.fmt(f),
        }
    }
}

impl Model for ScriptPlayer<'_, ScriptedAction> {
    fn next_action(
        &mut self,
        _task: &Task,
        _history: &[HistoryItem],
    ) -> Result<Action, ModelError> {
        self.next_item(("action", "actions"))?
            .action()
            .map_err(|err| ModelError::Failure(format!("scripted arguments unreadable: {err}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_read_back_as_the_map_they_were() {
        let arguments = json!({"b": [1, -2.5, {"c": null}], "a": "x"});
        let Value::Object(map) = arguments else {
            unreachable!()
        };
        let call = Action::ToolCall(ToolCall::new("calculator", map));
        let scripted = ScriptedAction::from_action(call.clone());
        assert_eq!(scripted.action().unwrap(), call);
        assert_eq!(format!("{scripted:?}"), format!("{call:?}"));
        let finish = Action::Finish(Finish {
            answer: "a".to_owned(),
        });
        assert_eq!(
            ScriptedAction::from_action(finish.clone())
                .action()
                .unwrap(),
            finish
        );
    }
}
