//! The strict adapter from raw JSON text to actions. It accepts exactly two shapes,
//! `{"type":"tool_call","tool_name":...,"arguments":{...}}` and `{"type":"finish","answer":...}`,
//! and names what is wrong with anything else so the model can correct itself.

use serde_json::{Map, Value};

use super::contract::{InvalidOutput, InvalidOutputKind, Model, ModelError, RawModel};
use crate::run::{Action, Finish, HistoryItem, Task, ToolCall};

/// Wraps a raw-text model and parses each response with [`parse_json_action`].
#[derive(Debug)]
pub struct JsonModelAdapter<M> {
    raw_model: M,
    last_raw: Option<String>,
}

impl<M: RawModel> JsonModelAdapter<M> {
    /// An adapter over `raw_model`.
    pub fn new(raw_model: M) -> Self {
        JsonModelAdapter {
            raw_model,
            last_raw: None,
        }
    }

    /// The wrapped raw model.
    pub fn inner(&self) -> &M {
        &self.raw_model
    }
}

impl<M: RawModel> Model for JsonModelAdapter<M> {
    fn next_action(&mut self, task: &Task, history: &[HistoryItem]) -> Result<Action, ModelError> {
        self.last_raw = None;
        let raw = self.raw_model.next_response(task, history)?;
        let action = parse_json_action(&raw);
        self.last_raw = Some(raw);
        Ok(action?)
    }

    fn last_raw_output(&self) -> Option<&str> {
        self.last_raw.as_deref()
    }
}

/// Parses one raw model response into an action, strictly.
pub fn parse_json_action(raw: &str) -> Result<Action, InvalidOutput> {
    let text = crate::tools::integer_negative_zero_as_zero(raw);
    let value: Value = serde_json::from_str(&text).map_err(|err| {
        InvalidOutput::new(
            InvalidOutputKind::InvalidJson,
            format!("model output is not valid JSON: {err}"),
        )
    })?;
    action_from_value(value)
}

/// Turns already parsed JSON into an action with the same rules as [`parse_json_action`] (suites
/// hold scripted actions as JSON values).
pub fn action_from_value(value: Value) -> Result<Action, InvalidOutput> {
    let Value::Object(object) = value else {
        return Err(InvalidOutput::new(
            InvalidOutputKind::NotAnObject,
            format!(
                "model output must be a JSON object, got {}",
                json_type_name(&value)
            ),
        ));
    };
    let action_type = match object.get("type") {
        None => return Err(missing("type")),
        Some(Value::String(name)) => name.as_str(),
        Some(other) => return Err(wrong_type("type", "a string", other)),
    };
    match action_type {
        "tool_call" => {
            only_fields(&object, &["type", "tool_name", "arguments"], "tool_call")?;
            let tool_name = match object.get("tool_name") {
                None => return Err(missing("tool_name")),
                Some(Value::String(name)) => name.clone(),
                Some(other) => return Err(wrong_type("tool_name", "a string", other)),
            };
            let arguments = match object.get("arguments") {
                None => return Err(missing("arguments")),
                Some(Value::Object(arguments)) => arguments.clone(),
                Some(other) => return Err(wrong_type("arguments", "an object", other)),
            };
            Ok(Action::ToolCall(ToolCall::new(tool_name, arguments)))
        }
        "finish" => {
            only_fields(&object, &["type", "answer"], "finish")?;
            match object.get("answer") {
                None => Err(missing("answer")),
                Some(Value::String(answer)) => Ok(Action::Finish(Finish {
                    answer: answer.clone(),
                })),
                Some(other) => Err(wrong_type("answer", "a string", other)),
            }
        }
        other => Err(InvalidOutput::new(
            InvalidOutputKind::UnknownActionType,
            format!("unknown action type {other:?}: expected \"tool_call\" or \"finish\""),
        )),
    }
}

/// Rejects the first field (alphabetically) that `action` does not have.
fn only_fields(
    object: &Map<String, Value>,
    allowed: &[&str],
    action: &str,
) -> Result<(), InvalidOutput> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(InvalidOutput::new(
            InvalidOutputKind::UnexpectedField,
            format!("unexpected field {key:?} in a {action} action"),
        )),
        None => Ok(()),
    }
}

pub(crate) fn missing(field: &str) -> InvalidOutput {
    InvalidOutput::new(
        InvalidOutputKind::MissingField,
        format!("missing field {field:?}"),
    )
}

pub(crate) fn wrong_type(field: &str, expected: &str, got: &Value) -> InvalidOutput {
    InvalidOutput::new(
        InvalidOutputKind::WrongFieldType,
        format!(
            "field {field:?} must be {expected}, got {}",
            json_type_name(got)
        ),
    )
}

/// The JSON type of a value, as a user would name it.
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
