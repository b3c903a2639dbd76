//! `schemas/suite.schema.json`, compiled once, and its verdicts as the suite's problems: every
//! violation with its JSON path and a message a suite's author can act on. Two validators come
//! from the one schema: the suite's top level (its tasks counted, not read) and one task, so a
//! large suite's tasks are checked one at a time, as they are read. A task is checked first as
//! a [`FlatDocument`] borrowed from its text; only one that fails is built as a value, for the
//! messages.

mod flat_json;

use std::sync::OnceLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use self::flat_json::FlatJson;
pub use self::flat_json::{FlatDocument, FlatItems, FlatNode};
use crate::json_error::path_from_pointer;
use crate::model::json_type_name as type_name;

const SCHEMA: &str = include_str!("../../../schemas/suite.schema.json");

struct Compiled {
    document: Value,
    head: Validator,
    /// Compiled when first needed: only a task that fails is checked as a value.
    task: OnceLock<Validator>,
    /// The task's schema, for `task`.
    task_schema: Value,
    /// The same as `task`, for a task's text read as a [`FlatDocument`].
    flat_task: Validator<FlatJson>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let document: Value =
            serde_json::from_str(SCHEMA).expect("the shipped suite schema is valid JSON");
        // The top level with each task accepted as it is: tasks are checked one by one.
        let mut head = document.clone();
        head["properties"]["tasks"]["items"] = Value::Bool(true);
        let task = serde_json::json!({
            "$schema": document["$schema"],
            "$id": document["$id"],
            "$defs": document["$defs"],
            "$ref": "#/$defs/task",
        });
        let compile = |schema: &Value| {
            jsonschema::validator_for(schema).expect("the shipped suite schema compiles")
        };
        let flat_task = jsonschema::options_for::<FlatJson>()
            .build(&task)
            .expect("the shipped suite schema compiles");
        Compiled {
            flat_task,
            head: compile(&head),
            task: OnceLock::new(),
            task_schema: task,
            document,
        }
    })
}

/// The problems of a suite's top level; `tasks` may hold placeholders for its tasks.
pub fn head_problems(value: &Value) -> Vec<(String, String)> {
    let compiled = compiled();
    problems(&compiled.head, value, "$")
}

/// The problems of one task, its paths under `root` (`$.tasks[3]`, or `$` for a line of a
/// tasks file).
pub fn task_problems(value: &Value, root: &str) -> Vec<(String, String)> {
    let compiled = compiled();
    let task = compiled.task.get_or_init(|| {
        jsonschema::validator_for(&compiled.task_schema).expect("the shipped suite schema compiles")
    });
    if task.is_valid(value) {
        return Vec::new();
    }
    problems(task, value, root)
}

/// Whether a task read as a flat document passes the schema.
pub fn task_is_valid(task: FlatNode<'_>) -> bool {
    compiled().flat_task.is_valid(task)
}

fn problems(validator: &Validator, value: &Value, root: &str) -> Vec<(String, String)> {
    let errors: Vec<ValidationError<'_>> = validator.iter_errors(value).collect();
    // A value of the wrong type breaks every other rule about it too: only its type is told.
    let mistyped: Vec<&str> = errors
        .iter()
        .filter(|e| matches!(e.kind(), ValidationErrorKind::Type { .. }))
        .map(|e| e.instance_path().as_str())
        .collect();
    let mut found = Vec::new();
    for error in &errors {
        if !matches!(error.kind(), ValidationErrorKind::Type { .. })
            && mistyped.contains(&error.instance_path().as_str())
        {
            continue;
        }
        let path = path_from_pointer(root, error.instance_path().as_str());
        if let ValidationErrorKind::AdditionalProperties { unexpected } = error.kind() {
            let expected = expected_keys(error);
            for key in unexpected {
                found.push((
                    format!("{path}.{key}"),
                    format!("unknown key (expected one of: {expected})"),
                ));
            }
            continue;
        }
        found.push((path, describe(error)));
    }
    found
}

/// The schema object an error's keyword sits in.
fn keyword_parent<'s>(error: &ValidationError<'_>) -> Option<&'s Value> {
    let location = error.absolute_keyword_location()?;
    let pointer = location.fragment()?.as_str();
    let parent = pointer.rsplit_once('/').map_or("", |(parent, _)| parent);
    compiled().document.pointer(parent)
}

/// The keys an object with unknown ones may have, from its schema's `properties`.
fn expected_keys(error: &ValidationError<'_>) -> String {
    keyword_parent(error)
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .keys()
                .filter(|key| !key.starts_with('$'))
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// A `oneOf` whose branches each only require one key: those keys.
fn one_of_keys(error: &ValidationError<'_>) -> Option<Vec<String>> {
    let branches = keyword_parent(error)?.get("oneOf")?.as_array()?;
    branches
        .iter()
        .map(
            |branch| match branch.get("required")?.as_array()?.as_slice() {
                [Value::String(key)] if branch.as_object()?.len() == 1 => Some(format!("`{key}`")),
                _ => None,
            },
        )
        .collect()
}

/// `a`, `a or b`, `a, b or c`.
fn either(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// A value for a message: short JSON, cut after 60 characters.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

fn article(name: &str) -> &'static str {
    if matches!(name.chars().next(), Some('a' | 'e' | 'i' | 'o' | 'u')) {
        "an"
    } else {
        "a"
    }
}

/// The message of one violation, as a lowercase fragment.
fn describe(error: &ValidationError<'_>) -> String {
    let instance = error.instance();
    let got = shown(instance);
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            format!("missing key `{}`", property.as_str().unwrap_or_default())
        }
        ValidationErrorKind::Type {
            kind: TypeKind::Single(expected),
        } => {
            let expected = expected.to_string();
            format!(
                "expected {} {expected}, got {}",
                article(&expected),
                type_name(instance)
            )
        }
        ValidationErrorKind::Enum { options } => {
            let options: Vec<String> = options
                .as_array()
                .map(|list| list.iter().map(Value::to_string).collect())
                .unwrap_or_default();
            format!("expected {}; got {got}", either(&options))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("expected {expected_value}, got {got}")
        }
        ValidationErrorKind::Minimum { limit } => format!("must be at least {limit}, got {got}"),
        ValidationErrorKind::Maximum { limit } => format!("must be at most {limit}, got {got}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("must be more than {limit}, got {got}")
        }
        ValidationErrorKind::MinItems { limit } => {
            let s = if *limit == 1 { "" } else { "s" };
            format!("expected at least {limit} item{s}, got {}", items(instance))
        }
        ValidationErrorKind::MinLength { limit: 1 } => "must not be empty".to_owned(),
        ValidationErrorKind::MinLength { limit } => {
            format!("must be at least {limit} characters long")
        }
        ValidationErrorKind::MaxLength { limit } => format!(
            "is {} characters long; at most {limit} are allowed",
            instance.as_str().map_or(0, |s| s.chars().count())
        ),
        ValidationErrorKind::Pattern { pattern } => {
            format!("{got} does not match the pattern `{pattern}`")
        }
        ValidationErrorKind::Not { .. } => format!("{got} is not allowed here"),
        ValidationErrorKind::OneOfNotValid { .. }
        | ValidationErrorKind::OneOfMultipleValid { .. } => match one_of_keys(error) {
            Some(keys) => {
                let given: Vec<String> = keys
                    .iter()
                    .filter(|key| instance.get(key.trim_matches('`')).is_some())
                    .cloned()
                    .collect();
                if given.is_empty() {
                    format!("expected one of {}", either(&keys))
                } else {
                    format!(
                        "give exactly one of {}, not {}",
                        either(&keys),
                        given.join(" and ")
                    )
                }
            }
            None => error.masked().to_string(),
        },
        _ => error.masked().to_string(),
    }
}

fn items(value: &Value) -> String {
    match value.as_array().map(Vec::len) {
        Some(0) => "an empty array".to_owned(),
        Some(1) => "1 item".to_owned(),
        Some(n) => format!("{n} items"),
        None => type_name(value).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_keys_are_named_with_the_keys_the_object_may_have() {
        let task = json!({"id": "a", "prompt": "p", "model": {"responses": ["x"]}, "expect": {"anwser": "4"}});
        assert_eq!(
            task_problems(&task, "$.tasks[8]"),
            [(
                "$.tasks[8].expect.anwser".to_owned(),
                "unknown key (expected one of: answer, answer_contains, answer_in, answer_json_schema, answer_number, answer_regex, exit_reason, ignore_case, max_cost_usd, max_duration_s, max_gate_rejections, max_steps_used, max_tool_errors, max_total_tokens, normalize_whitespace, tools_called, tools_not_called)".to_owned()
            )]
        );
    }

    #[test]
    fn a_model_names_its_kinds() {
        let none = json!({"id": "a", "prompt": "p", "model": {}});
        let two = json!({"id": "a", "prompt": "p", "model": {"responses": ["x"], "actions": [{"type": "finish", "answer": "a"}]}});
        assert_eq!(
            task_problems(&none, "$"),
            [(
                "$.model".to_owned(),
                "expected one of `responses`, `actions`, `replay` or `chat`".to_owned()
            )]
        );
        assert_eq!(
            task_problems(&two, "$"),
            [(
                "$.model".to_owned(),
                "give exactly one of `responses`, `actions`, `replay` or `chat`, not `responses` and `actions`".to_owned()
            )]
        );
    }

    #[test]
    fn an_action_is_told_what_it_lacks() {
        let task = json!({"id": "a", "prompt": "p", "model": {"actions": [{"type": "finish"}, {"type": "finish", "answer": "x", "extra": 1}]}});
        assert_eq!(
            task_problems(&task, "$"),
            [
                (
                    "$.model.actions[0]".to_owned(),
                    "missing key `answer`".to_owned()
                ),
                (
                    "$.model.actions[1].extra".to_owned(),
                    "unknown key (expected one of: answer, type)".to_owned()
                )
            ]
        );
    }
}
