//! mini-swe-agent: `.traj.json` documents (`info`, `messages`), legacy bare message lists, and
//! `exit_statuses_*.yaml` batch summaries, read as runs without steps. Actions are the one bash
//! block of each assistant message; results are `<returncode>N</returncode>` user messages.

use std::io::BufRead;

use serde_json::{Map, Value};

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, first_byte, head_text, peek_first_byte, read_bytes,
    read_document, str_at, text_of,
};
use super::run::{Ending, ImportedRun, Item};
use crate::run::ExitReason;
use crate::trace::Usage;

/// The command that ends a run.
const SUBMIT: &str = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";
/// The start of the format-error message.
const FORMAT_ERROR: &str = "Please always provide EXACTLY ONE action";
/// The start of the timeout message.
const TIMEOUT: &str = "The last command <command>";

/// `--from mini-swe-agent`.
pub struct MiniSweAgent;

impl Importer for MiniSweAgent {
    fn name(&self) -> &'static str {
        "mini-swe-agent"
    }

    fn probe(&self, name: &str, head: &[u8]) -> u8 {
        let text = head_text(head);
        if text.trim_start().starts_with("instances_by_exit_status:") {
            return 95;
        }
        if name.ends_with(".traj.json") && matches!(first_byte(head), Some(b'{' | b'[')) {
            return 95;
        }
        if first_byte(head) == Some(b'{')
            && text.contains("\"trajectory_format\": \"mini-swe-agent")
        {
            return 90;
        }
        0
    }

    fn import(
        &self,
        input: &mut dyn BufRead,
        context: &Context,
        out: &mut Sink<'_>,
    ) -> Result<(), ImportError> {
        if !matches!(peek_first_byte(input, context)?, Some(b'{' | b'[')) {
            return read_batch_summary(input, context, out);
        }
        let document = read_document(input, context)?;
        let native = context
            .name
            .strip_suffix(".traj.json")
            .unwrap_or(&context.name);
        let mut run = ImportedRun::new(context.run_id(None));
        let (messages, info, path) = match &document {
            Value::Array(messages) => (messages.as_slice(), None, "$"),
            Value::Object(_) => {
                run.native_id = Some(
                    str_at(&document, "instance_id")
                        .unwrap_or(native)
                        .to_owned(),
                );
                let messages = document
                    .get("messages")
                    .and_then(Value::as_array)
                    .ok_or_else(|| context.malformed("$.messages", "expected an array"))?;
                (messages.as_slice(), document.get("info"), "$.messages")
            }
            _ => return Err(context.malformed("$", "expected an object or an array")),
        };
        if run.native_id.is_none() {
            run.native_id = Some(native.to_owned());
        }
        read_messages(&mut run, messages, context, path)?;
        match info {
            Some(info) => {
                let status = str_at(info, "exit_status").unwrap_or("");
                if let Some(ending) = ending(status, info) {
                    run.ending = Some(ending);
                }
                let stats = info.get("model_stats").unwrap_or(&Value::Null);
                run.cost_usd = stats.get("instance_cost").and_then(Value::as_f64);
                run.model = info
                    .pointer("/config/model/model_name")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            None => {
                // A legacy list records no ending: finished only when it ends with the submit
                // command's output.
                let finished = matches!(run.items.last(), Some((_, Item::Finish { .. })));
                if finished {
                    run.ending = Some(Ending::inferred_finish());
                }
            }
        }
        out(Imported::Run(run))
    }
}

/// The turns of a message list: each assistant message is a model turn; the user message after it
/// is the command's result, a format error, or the submission.
fn read_messages(
    run: &mut ImportedRun,
    messages: &[Value],
    context: &Context,
    path: &str,
) -> Result<(), ImportError> {
    let mut command: Option<String> = None;
    for (index, message) in messages.iter().enumerate() {
        let role = str_at(message, "role")
            .ok_or_else(|| context.malformed(format!("{path}[{index}].role"), "missing role"))?;
        let content = text_of(message.get("content"));
        match role {
            "user" if run.task.is_none() && run.steps == 0 => run.task = Some(content),
            "assistant" => {
                run.turn();
                command = bash_block(&content);
            }
            "user" => {
                let action = command.take().unwrap_or_default();
                if content.starts_with("<returncode>") {
                    let code = content
                        .strip_prefix("<returncode>")
                        .and_then(|rest| rest.split('<').next())
                        .and_then(|code| code.trim().parse::<i64>().ok());
                    run.call("bash", command_arguments(&action), None);
                    run.result("bash", content, Some(code != Some(0)));
                } else if content.starts_with(TIMEOUT) {
                    run.call("bash", command_arguments(&action), None);
                    run.push(Item::Observation {
                        tool_name: "bash".to_owned(),
                        content,
                        is_error: Some(true),
                        error_kind: Some("timeout".to_owned()),
                    });
                } else if content.starts_with(FORMAT_ERROR) {
                    run.push(Item::Feedback {
                        content,
                        error_kind: "format_error".to_owned(),
                    });
                } else if action.contains(SUBMIT) {
                    run.push(Item::Finish { answer: content });
                }
            }
            "exit" => {
                let extra = message.get("extra").unwrap_or(&Value::Null);
                let has_finish = matches!(run.items.last(), Some((_, Item::Finish { .. })));
                if str_at(extra, "exit_status") == Some("Submitted") && !has_finish {
                    run.push(Item::Finish {
                        answer: text_of(extra.get("submission")),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The command of the one fenced block in a model message (```bash or ```mswea_bash_command).
fn bash_block(text: &str) -> Option<String> {
    let start = text.find("```")?;
    let rest = &text[start + 3..];
    let body = &rest[rest.find('\n')? + 1..];
    let end = body.find("```")?;
    Some(body[..end].trim().to_owned())
}

fn command_arguments(command: &str) -> Map<String, Value> {
    Map::from_iter([("command".to_owned(), Value::from(command))])
}

/// `info.exit_status` mapped onto an exit reason; `None` is incomplete.
fn ending(status: &str, info: &Value) -> Option<Ending> {
    let ending = match status {
        "" => return None,
        "Submitted" => Ending::new(ExitReason::Finished),
        "LimitsExceeded" => {
            // One status for two budgets: the cost limit fired if the cost reached it.
            let cost = info
                .pointer("/model_stats/instance_cost")
                .and_then(Value::as_f64);
            let limit = info
                .pointer("/config/agent/cost_limit")
                .and_then(Value::as_f64);
            match (cost, limit) {
                (Some(cost), Some(limit)) if limit > 0.0 && cost >= limit => Ending::budget("cost"),
                _ => Ending::budget("steps"),
            }
        }
        "TimeExceeded" => Ending::budget("time"),
        "RepeatedFormatError" => Ending {
            error_kind: Some("format_error".to_owned()),
            ..Ending::new(ExitReason::InvalidModelOutput)
        },
        "RetryError" => Ending::internal("model_failure"),
        _ => Ending::internal("uncaught_exception"),
    };
    Some(ending.native(status))
}

/// An `exit_statuses_*.yaml` batch summary: the flat `instances_by_exit_status` map of status to
/// instance ids, one run without steps per instance.
fn read_batch_summary(
    input: &mut dyn BufRead,
    context: &Context,
    out: &mut Sink<'_>,
) -> Result<(), ImportError> {
    let bytes = read_bytes(input, context)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|err| context.malformed("the document", format!("invalid UTF-8: {err}")))?;
    let mut in_map = false;
    let mut status: Option<String> = None;
    for (index, line) in text.lines().enumerate() {
        let at = || format!("line {}", index + 1);
        let trimmed = line.trim_end();
        if trimmed.trim_start().is_empty() || trimmed.trim_start().starts_with('#') {
            continue;
        }
        let indented = trimmed.starts_with(' ');
        if !indented {
            in_map = trimmed == "instances_by_exit_status:";
            status = None;
            if !in_map && !trimmed.contains(':') {
                return Err(context.malformed(at(), "expected `key: value`"));
            }
            continue;
        }
        if !in_map {
            continue;
        }
        let item = trimmed.trim_start();
        if let Some(id) = item.strip_prefix("- ").or_else(|| item.strip_prefix('-')) {
            let Some(status) = status.as_deref() else {
                return Err(context.malformed(at(), "an instance before any exit status"));
            };
            let id = unquote(id.trim());
            if status.starts_with("skipped") {
                continue;
            }
            let mut run = ImportedRun::new(context.run_id(Some(id)));
            run.native_id = Some(id.to_owned());
            run.usage = None::<Usage>;
            run.ending = ending(status, &Value::Null);
            out(Imported::Run(run))?;
        } else if let Some(key) = item.strip_suffix(':') {
            status = Some(unquote(key.trim()).to_owned());
        } else if item.ends_with("[]") {
            status = None;
        } else {
            return Err(context.malformed(at(), "expected `status:` or `- instance_id`"));
        }
    }
    Ok(())
}

fn unquote(text: &str) -> &str {
    text.strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .or_else(|| text.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
        .unwrap_or(text)
}
