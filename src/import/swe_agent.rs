//! SWE-agent `.traj`: one JSON document per instance (`trajectory`, `history`, `info`), or a
//! `RetryAgent` file with one such document per entry of `attempts`. The ending is
//! `info.exit_status`; no tool-error flag is recorded.

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::{Map, Value};

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, first_byte, read_document, str_at, text_of,
};
use super::run::{Ending, ImportedRun, Item, arguments_of};
use crate::run::ExitReason;
use crate::trace::Usage;

/// `--from swe-agent`.
pub struct SweAgent;

impl Importer for SweAgent {
    fn name(&self) -> &'static str {
        "swe-agent"
    }

    fn probe(&self, name: &str, head: &[u8]) -> u8 {
        if name.ends_with(".traj") && first_byte(head) == Some(b'{') {
            95
        } else {
            0
        }
    }

    fn import(
        &self,
        input: &mut dyn BufRead,
        context: &Context,
        out: &mut Sink<'_>,
    ) -> Result<(), ImportError> {
        let document = read_document(input, context)?;
        if !document.is_object() {
            return Err(context.malformed("$", "expected a JSON object"));
        }
        let native = context.name.strip_suffix(".traj").unwrap_or(&context.name);
        if let Some(attempts) = document.get("attempts") {
            let attempts = attempts
                .as_array()
                .ok_or_else(|| context.malformed("$.attempts", "expected an array"))?;
            for (index, attempt) in attempts.iter().enumerate() {
                let suffix = format!("attempt-{}", index + 1);
                let mut run = ImportedRun::new(context.run_id(Some(&suffix)));
                run.native_id = Some(format!("{native}/{suffix}"));
                read_attempt(&mut run, attempt, context, &format!("$.attempts[{index}]"))?;
                out(Imported::Run(run))?;
            }
        } else {
            let mut run = ImportedRun::new(context.run_id(None));
            run.native_id = Some(native.to_owned());
            read_attempt(&mut run, &document, context, "$")?;
            out(Imported::Run(run))?;
        }
        Ok(())
    }
}

/// One attempt (or the whole file): its turns from `trajectory`, or from `history` when a
/// demonstration holds nothing else.
fn read_attempt(
    run: &mut ImportedRun,
    document: &Value,
    context: &Context,
    path: &str,
) -> Result<(), ImportError> {
    run.tool_errors_recorded = false;
    let info = document.get("info").unwrap_or(&Value::Null);
    let history = match document.get("history") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => return Err(context.malformed(format!("{path}.history"), "expected an array")),
    };
    run.task = history
        .iter()
        .find(|m| {
            str_at(m, "role") == Some("user")
                && m.get("is_demo").and_then(Value::as_bool) != Some(true)
        })
        .map(|m| text_of(m.get("content")));
    let trajectory = match document.get("trajectory") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => {
            return Err(context.malformed(format!("{path}.trajectory"), "expected an array"));
        }
    };
    if !trajectory.is_empty() {
        for step in trajectory {
            run.turn();
            let action = str_at(step, "action").unwrap_or("").trim();
            let tool = action.split_whitespace().next().unwrap_or("");
            let observation = text_of(step.get("observation"));
            if tool == "submit" {
                let answer = str_at(info, "submission").map_or(observation, str::to_owned);
                run.push(Item::Finish { answer });
            } else {
                let arguments = Map::from_iter([("command".to_owned(), Value::from(action))]);
                run.call(tool, arguments, None);
                run.result(tool, observation, None);
            }
        }
    } else {
        read_history(run, history);
    }
    let model_stats = info.get("model_stats").unwrap_or(&Value::Null);
    run.cost_usd = model_stats.get("instance_cost").and_then(Value::as_f64);
    if model_stats.is_object() {
        run.usage = Some(Usage {
            input_tokens: model_stats.get("tokens_sent").and_then(Value::as_u64),
            output_tokens: model_stats.get("tokens_received").and_then(Value::as_u64),
            ..Usage::default()
        });
    }
    run.ending = str_at(info, "exit_status").and_then(ending);
    Ok(())
}

/// Function-calling turns from the chat history: assistant `tool_calls`, answered by `tool`
/// messages through `tool_call_ids`.
fn read_history(run: &mut ImportedRun, history: &[Value]) {
    let mut names: HashMap<String, String> = HashMap::new();
    for message in history {
        match str_at(message, "role") {
            Some("assistant") => {
                run.turn();
                let calls = message.get("tool_calls").and_then(Value::as_array);
                for call in calls.into_iter().flatten() {
                    let function = call.get("function").unwrap_or(&Value::Null);
                    let name = str_at(function, "name").unwrap_or("unknown");
                    let id = str_at(call, "id").map(str::to_owned);
                    if name == "submit" {
                        run.push(Item::Finish {
                            answer: String::new(),
                        });
                        continue;
                    }
                    if let Some(id) = &id {
                        names.insert(id.clone(), name.to_owned());
                    }
                    run.call(name, arguments_of(function.get("arguments"), "input"), id);
                }
            }
            Some("tool") => {
                let ids = message.get("tool_call_ids").and_then(Value::as_array);
                let name = ids
                    .and_then(|ids| ids.first())
                    .and_then(Value::as_str)
                    .and_then(|id| names.get(id));
                if let Some(name) = name.cloned() {
                    run.result(&name, text_of(message.get("content")), None);
                }
            }
            _ => {}
        }
    }
}

/// `info.exit_status` mapped onto an exit reason; `None` is incomplete.
pub fn ending(status: &str) -> Option<Ending> {
    if let Some(inner) = status
        .strip_prefix("submitted (")
        .and_then(|rest| rest.strip_suffix(')'))
    {
        let mut ending = ending(inner)?;
        ending.autosubmitted = true;
        return Some(ending.native(status));
    }
    let ending = match status {
        "submitted" | "exit_command" | "exit_forfeit" => Ending::new(ExitReason::Finished),
        "exit_cost" => Ending::budget("cost"),
        "exit_context" => Ending::budget("context"),
        "exit_total_execution_time" => Ending::budget("time"),
        "exit_format" => Ending {
            error_kind: Some("format_error".to_owned()),
            ..Ending::new(ExitReason::InvalidModelOutput)
        },
        "exit_api" => Ending::internal("model_failure"),
        "" | "early_exit" => return None,
        other if other.starts_with("skipped") => return None,
        "exit_environment_error" | "exit_error" | "exit_command_timeout" => {
            Ending::internal(status)
        }
        _ => Ending::internal("uncaught_exception"),
    };
    Some(ending.native(status))
}
