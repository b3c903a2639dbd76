//! The fast path for loading suites: typed deserialization straight into suite tasks, for suites
//! that need no file access (no replay tasks) and break no rule. Anything it cannot prove valid
//! (an unknown key, a `null`, a replay task, a bad id, a zero budget, ...) sends the loader to the
//! full checker, which reports every problem with its JSON path; so both paths accept exactly the
//! same suites and only the checker ever reports.

use std::collections::HashSet;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::suite::{DEFAULT_MAX_STEPS, Expectations, Suite, SuiteTask, TaskId, TaskModel};
use crate::run::{Action, ExitReason, Finish, ToolCall};
use crate::trace::Capture;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastSuite {
    #[serde(rename = "$schema", default, deserialize_with = "present")]
    _schema: Option<String>,
    name: String,
    #[serde(default, deserialize_with = "present")]
    defaults: Option<FastDefaults>,
    tasks: Vec<FastTask>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastDefaults {
    #[serde(default, deserialize_with = "present")]
    max_steps: Option<u32>,
    #[serde(default, deserialize_with = "present")]
    capture: Option<Capture>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastTask {
    id: String,
    #[serde(default, deserialize_with = "present")]
    prompt: Option<String>,
    #[serde(default, deserialize_with = "present")]
    max_steps: Option<u32>,
    model: FastModel,
    #[serde(default, deserialize_with = "present")]
    expect: Option<FastExpect>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastModel {
    #[serde(default, deserialize_with = "present")]
    responses: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    actions: Option<Vec<FastAction>>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum FastAction {
    ToolCall {
        tool_name: String,
        arguments: Map<String, Value>,
    },
    Finish {
        answer: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastExpect {
    #[serde(default, deserialize_with = "present")]
    exit_reason: Option<ExitReason>,
    #[serde(default, deserialize_with = "present")]
    answer: Option<String>,
    #[serde(default, deserialize_with = "present")]
    answer_contains: Option<String>,
    #[serde(default, deserialize_with = "present")]
    max_steps_used: Option<u32>,
}

/// A key that is given must hold a value: `null` is not "absent" in a suite.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The suite, when the fast path can prove it valid; `None` sends the caller to the checker.
pub fn load_fast(text: &str) -> Option<Suite> {
    let suite: FastSuite = serde_json::from_str(text).ok()?;
    if suite.name.trim().is_empty() || suite.tasks.is_empty() {
        return None;
    }
    let defaults = suite.defaults.unwrap_or(FastDefaults {
        max_steps: None,
        capture: None,
    });
    if defaults.max_steps == Some(0) {
        return None;
    }
    let mut ids = HashSet::with_capacity(suite.tasks.len());
    let mut tasks = Vec::with_capacity(suite.tasks.len());
    for task in suite.tasks {
        let id = TaskId::parse(&task.id).ok()?;
        if !ids.insert(id.clone()) || task.max_steps == Some(0) {
            return None;
        }
        let model = match (task.model.responses, task.model.actions) {
            (Some(responses), None) if !responses.is_empty() => TaskModel::Responses(responses),
            (None, Some(actions)) if !actions.is_empty() => {
                TaskModel::Actions(actions.into_iter().map(action).collect())
            }
            _ => return None,
        };
        let expect = task
            .expect
            .map_or_else(Expectations::default, |e| Expectations {
                exit_reason: e.exit_reason,
                answer: e.answer,
                answer_contains: e.answer_contains,
                max_steps_used: e.max_steps_used,
                max_gate_rejections: None,
            });
        tasks.push(SuiteTask {
            id,
            prompt: task.prompt?,
            max_steps: task
                .max_steps
                .or(defaults.max_steps)
                .unwrap_or(DEFAULT_MAX_STEPS),
            model,
            expect,
            finish_gate: None,
            limits: crate::agent::Limits::default(),
        });
    }
    Some(Suite {
        name: suite.name,
        capture: defaults.capture.unwrap_or_default(),
        tasks,
        tools: None,
    })
}

fn action(action: FastAction) -> Action {
    match action {
        FastAction::ToolCall {
            tool_name,
            arguments,
        } => Action::ToolCall(ToolCall::new(tool_name, arguments)),
        FastAction::Finish { answer } => Action::Finish(Finish { answer }),
    }
}
