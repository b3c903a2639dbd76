//! mini-swe-agent: `.traj.json` documents (`info`, `messages`), legacy bare message lists, and
//! `exit_statuses_*.yaml` batch summaries, read as runs without steps. Actions are the one bash
//! block of each assistant message; results are `<returncode>N</returncode>` user messages.

use std::collections::HashMap;
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
/// How format-error messages open: 1.x, then 2.x's text-based and tool-call templates (and its
/// note on a reply cut at the output token limit).
const FORMAT_ERRORS: [&str; 4] = [
    "Please always provide EXACTLY ONE action",
    "Format error:",
    "Tool call error:",
    "Your previous response reached the output token limit",
];
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
                // A request that failed for good is a model call with no message of its own.
                let calls = stats.get("api_calls").and_then(Value::as_u64).unwrap_or(0);
                run.steps = run.steps.max(calls);
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

/// The turns of a message list. Each assistant message is a model turn whose commands are its
/// `tool_calls` (2.x), else its `extra.actions`, else its one fenced block (1.x); each command is
/// answered by a `tool` message (2.x) or the next user message (1.x). A format error is model
/// feedback, and a turn of its own when the unparseable reply was not stored as a message (2.x).
/// The submit command is the run's finish only when the run ended there.
fn read_messages(
    run: &mut ImportedRun,
    messages: &[Value],
    context: &Context,
    path: &str,
) -> Result<(), ImportError> {
    let mut pending: Vec<Command> = Vec::new();
    let mut after_assistant = false;
    for (index, message) in messages.iter().enumerate() {
        let role = str_at(message, "role")
            .ok_or_else(|| context.malformed(format!("{path}[{index}].role"), "missing role"))?;
        let content = text_of(message.get("content"));
        let extra = message.get("extra").unwrap_or(&Value::Null);
        match role {
            "user" if run.task.is_none() && run.steps == 0 => run.task = Some(content),
            "assistant" => {
                flush_unanswered(run, &mut pending);
                run.turn();
                pending = commands_of(message, &content);
                after_assistant = true;
                continue;
            }
            "user" | "tool" if is_format_error(&content, extra) => {
                // The reply's commands were refused, never run.
                pending.clear();
                if !after_assistant {
                    // 2.x keeps the unparseable reply only inside this message's `extra`.
                    run.turn();
                }
                run.push(Item::Feedback {
                    content,
                    error_kind: "format_error".to_owned(),
                });
            }
            "tool" => {
                let id = str_at(message, "tool_call_id");
                let at = pending
                    .iter()
                    .position(|command| id.is_some() && command.id.as_deref() == id)
                    .unwrap_or(0);
                let command = if pending.is_empty() {
                    Command::unknown(id)
                } else {
                    pending.remove(at)
                };
                observe(run, command, content, extra);
            }
            "user" if !pending.is_empty() => {
                let command = pending.remove(0);
                let shape = Outcome::of(&content, extra);
                if shape == Outcome::Unknown && command.is_submit() && pending.is_empty() {
                    // 1.x: the submit command's output (the patch) is the last user message.
                    run.push(Item::Finish { answer: content });
                } else {
                    observe(run, command, content, extra);
                }
            }
            "exit" => {
                let submitted = str_at(extra, "exit_status") == Some("Submitted");
                let submit = pending.iter().position(Command::is_submit);
                if let (true, Some(at)) = (submitted, submit) {
                    pending.remove(at);
                }
                flush_unanswered(run, &mut pending);
                let has_finish = matches!(run.items.last(), Some((_, Item::Finish { .. })));
                if submitted && !has_finish {
                    run.push(Item::Finish {
                        answer: text_of(extra.get("submission")),
                    });
                }
            }
            _ => {}
        }
        after_assistant = false;
    }
    flush_unanswered(run, &mut pending);
    Ok(())
}

/// One command the model asked for.
#[derive(Debug)]
struct Command {
    id: Option<String>,
    command: String,
}

impl Command {
    /// A result with no command before it: its call is recorded under an unknown command.
    fn unknown(id: Option<&str>) -> Self {
        Command {
            id: id.map(str::to_owned),
            command: String::new(),
        }
    }

    fn is_submit(&self) -> bool {
        self.command.contains(SUBMIT)
    }
}

/// The commands of an assistant message: `tool_calls` when present, else `extra.actions`, else
/// the one fenced block of its text. Each command is counted once.
fn commands_of(message: &Value, content: &str) -> Vec<Command> {
    let from_calls: Vec<Command> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|call| {
            let arguments = call.pointer("/function/arguments");
            let command = match arguments {
                Some(Value::String(text)) => serde_json::from_str::<Value>(text)
                    .ok()
                    .and_then(|args| str_at(&args, "command").map(str::to_owned))
                    .unwrap_or_else(|| text.clone()),
                Some(args) => str_at(args, "command").unwrap_or_default().to_owned(),
                None => String::new(),
            };
            Command {
                id: str_at(call, "id").map(str::to_owned),
                command,
            }
        })
        .collect();
    if !from_calls.is_empty() {
        return from_calls;
    }
    let from_actions: Vec<Command> = message
        .pointer("/extra/actions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|action| Command {
            id: str_at(action, "tool_call_id").map(str::to_owned),
            command: str_at(action, "command").unwrap_or_default().to_owned(),
        })
        .collect();
    if !from_actions.is_empty() {
        return from_actions;
    }
    bash_block(content)
        .map(|command| Command { id: None, command })
        .into_iter()
        .collect()
}

/// Records commands that never got a result as calls without one (the run stopped first).
fn flush_unanswered(run: &mut ImportedRun, pending: &mut Vec<Command>) {
    for command in pending.drain(..) {
        run.call("bash", command_arguments(&command.command), command.id);
    }
}

/// Whether a message is the format-error feedback of 1.x or 2.x.
fn is_format_error(content: &str, extra: &Value) -> bool {
    str_at(extra, "interrupt_type") == Some("FormatError")
        || FORMAT_ERRORS.iter().any(|start| content.starts_with(start))
}

/// A command's call and its result.
fn observe(run: &mut ImportedRun, command: Command, content: String, extra: &Value) {
    run.call("bash", command_arguments(&command.command), command.id);
    let (is_error, error_kind) = match Outcome::of(&content, extra) {
        Outcome::Exited(code) => (Some(code != 0), None),
        Outcome::Timeout => (Some(true), Some("timeout")),
        Outcome::Exception => (Some(true), Some("exception")),
        Outcome::Unknown => (None, None),
    };
    run.push(Item::Observation {
        tool_name: "bash".to_owned(),
        content,
        is_error,
        error_kind: error_kind.map(str::to_owned),
    });
}

/// What an observation says of its command.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// It ran and exited with this code.
    Exited(i64),
    /// It was killed for taking too long.
    Timeout,
    /// The environment could not run it.
    Exception,
    /// The observation's shape is unknown (a custom template).
    Unknown,
}

impl Outcome {
    fn of(content: &str, extra: &Value) -> Outcome {
        let exception = str_at(extra, "exception_info").filter(|info| !info.is_empty());
        let exception_type = str_at(extra, "exception_type");
        if exception_type == Some("TimeoutExpired") {
            return Outcome::Timeout;
        }
        if exception.is_some() || exception_type.is_some() {
            return Outcome::failed(exception.unwrap_or_default());
        }
        if let Some(code) = extra.get("returncode").and_then(Value::as_i64) {
            return Outcome::Exited(code);
        }
        let text = content.trim_start();
        if let Some(info) = text.strip_prefix("<exception>") {
            return Outcome::failed(info.split("</exception>").next().unwrap_or(""));
        }
        if text.starts_with(TIMEOUT) {
            return Outcome::Timeout;
        }
        if let Some(rest) = text.strip_prefix("<returncode>") {
            let code = rest.split('<').next().and_then(|c| c.trim().parse().ok());
            return code.map_or(Outcome::Unknown, Outcome::Exited);
        }
        // The JSON template of 2.x's `mini.yaml`.
        if text.starts_with('{')
            && let Ok(value) = serde_json::from_str::<Value>(text)
        {
            if let Some(info) = str_at(&value, "exception_info").filter(|info| !info.is_empty()) {
                return Outcome::failed(info);
            }
            if let Some(code) = value.get("returncode").and_then(Value::as_i64) {
                return Outcome::Exited(code);
            }
        }
        Outcome::Unknown
    }

    /// A command the environment could not finish: a timeout, or another exception.
    fn failed(info: &str) -> Outcome {
        if info.to_ascii_lowercase().contains("timed out") {
            Outcome::Timeout
        } else {
            Outcome::Exception
        }
    }
}

/// The command of a model message's action block: its first ```bash (or ```mswea_bash_command)
/// block, as mini-swe-agent's action regex reads it, else its first fenced block.
fn bash_block(text: &str) -> Option<String> {
    let mut first = None;
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let newline = after.find('\n')?;
        let info = after[..newline].trim();
        let body = &after[newline + 1..];
        let end = body.find("```")?;
        let command = body[..end].trim().to_owned();
        if info == "bash" || info == "mswea_bash_command" {
            return Some(command);
        }
        first.get_or_insert(command);
        rest = &body[end + 3..];
    }
    first
}

fn command_arguments(command: &str) -> Map<String, Value> {
    Map::from_iter([("command".to_owned(), Value::from(command))])
}

/// Exceptions a model provider raises (litellm's, and tenacity's `RetryError` around them): once
/// the retries are spent, the model failed, not the agent.
const PROVIDER_EXCEPTIONS: &[&str] = &[
    "RetryError",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "Timeout",
    "ContentPolicyViolationError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "UnsupportedParamsError",
    "UnprocessableEntityError",
    "JSONSchemaValidationError",
];

/// `info.exit_status` mapped onto an exit reason; `None` is incomplete.
fn ending(status: &str, info: &Value) -> Option<Ending> {
    let ending = match status {
        "" => return None,
        "Submitted" => Ending::new(ExitReason::Finished),
        "LimitsExceeded" => Ending::budget(limit_hit(info)),
        "TimeExceeded" => Ending::budget("time"),
        "ContextWindowExceededError" => Ending::budget("context"),
        "RepeatedFormatError" => Ending {
            error_kind: Some("format_error".to_owned()),
            ..Ending::new(ExitReason::InvalidModelOutput)
        },
        _ if PROVIDER_EXCEPTIONS.contains(&status) => Ending::internal("model_failure"),
        _ => Ending::internal("uncaught_exception"),
    };
    Some(ending.native(status))
}

/// Which budget `LimitsExceeded` (one status for two limits) means: steps when the model calls
/// reached `step_limit`, cost when the cost reached `cost_limit`, steps when neither is known.
fn limit_hit(info: &Value) -> &'static str {
    let number = |pointer: &str| info.pointer(pointer).and_then(Value::as_f64);
    let reached = |used: Option<f64>, limit: Option<f64>| matches!((used, limit), (Some(used), Some(limit)) if limit > 0.0 && used >= limit);
    let steps = reached(
        number("/model_stats/api_calls"),
        number("/config/agent/step_limit"),
    );
    let cost = reached(
        number("/model_stats/instance_cost"),
        number("/config/agent/cost_limit"),
    );
    if cost && !steps { "cost" } else { "steps" }
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
    let mut listed: HashMap<String, String> = HashMap::new();
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
            if let Some(first) = listed.get(id) {
                // One instance, one run: the first listing counts.
                out(Imported::Warning(format!(
                    "{}: instance `{id}` is listed again (under `{status}`, first under \
                     `{first}`); it counts once",
                    at()
                )))?;
                continue;
            }
            listed.insert(id.to_owned(), status.to_owned());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(messages: Value) -> ImportedRun {
        let context = Context {
            file: "t.traj.json".to_owned(),
            name: "t.traj.json".to_owned(),
        };
        let mut run = ImportedRun::new("t");
        let messages = messages.as_array().unwrap().clone();
        read_messages(&mut run, &messages, &context, "$.messages").unwrap();
        run
    }

    #[test]
    fn a_custom_observation_template_keeps_the_commands() {
        let run = run_of(serde_json::json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "```bash\nls\n```"},
            {"role": "user", "content": "Output:\nREADME.md"},
            {"role": "assistant", "content": "```bash\nmake\n```"},
            {"role": "user", "content": "Output:\nmake: *** No targets."},
        ]));
        assert_eq!(run.tool_calls(), 2);
        let flags: Vec<Option<bool>> = run
            .items
            .iter()
            .filter_map(|(_, item)| match item {
                Item::Observation { is_error, .. } => Some(*is_error),
                _ => None,
            })
            .collect();
        assert_eq!(flags, [None, None]);
    }

    #[test]
    fn a_submit_marker_the_run_went_past_is_a_tool_call() {
        let run = run_of(serde_json::json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "```bash\necho x && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\nx\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n</output>"},
            {"role": "assistant", "content": "```bash\nls\n```"},
            {"role": "user", "content": "<exception>An error occurred while executing the command: boom</exception>\n<returncode>-1</returncode>"},
        ]));
        assert_eq!(run.tool_calls(), 2);
        assert!(
            !run.items
                .iter()
                .any(|(_, i)| matches!(i, Item::Finish { .. }))
        );
        assert!(run.items.iter().any(|(_, i)| matches!(
            i,
            Item::Observation { error_kind: Some(kind), is_error: Some(true), .. } if kind == "exception"
        )));
    }
}
