//! Codex CLI rollouts: JSONL `{timestamp, type, payload}`, one session per file, one run per turn
//! (`task_started` .. `task_complete`/`turn_aborted`). Versions that persist no turn markers (0.66)
//! split at each `user_message`, and their endings are inferred. A failed turn (0.17x) still ends
//! with `task_complete`, carrying `error.codex_error_info`. Steps are model responses: one per
//! `token_usage_record` (0.17x) or, before that, one per `turn_context`.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use serde_json::{Map, Value};

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, for_each_line, head_text, str_at, text_of,
};
use super::run::{Ending, ImportedRun, Item, arguments_of};
use crate::run::ExitReason;

/// `--from codex`.
pub struct Codex;

impl Importer for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn probe(&self, name: &str, head: &[u8]) -> u8 {
        let text = head_text(head);
        let line = text.lines().next().unwrap_or("");
        if line.contains("\"type\":\"session_meta\"") || line.contains("\"type\": \"session_meta\"")
        {
            95
        } else if name.starts_with("rollout-") && name.ends_with(".jsonl") {
            60
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
        let mut state = Session {
            id: context.name.clone(),
            turn_mode: false,
            runs: 0,
            current: None,
        };
        for_each_line(input, context, |_, line| {
            let kind = str_at(&line, "type").unwrap_or("");
            let payload = line.get("payload").unwrap_or(&Value::Null);
            let inner = str_at(payload, "type").unwrap_or("");
            match (kind, inner) {
                ("session_meta", _) => {
                    if let Some(id) = str_at(payload, "id") {
                        state.id = id.to_owned();
                    }
                }
                ("event_msg", "task_started" | "turn_started") => {
                    state.turn_mode = true;
                    state.close(out)?;
                    let id = str_at(payload, "turn_id").map(str::to_owned);
                    state.open(id, true);
                }
                ("event_msg", "user_message") => {
                    let message = text_of(payload.get("message"));
                    if !state.turn_mode {
                        state.close(out)?;
                        state.open(None, false);
                    }
                    if let Some(turn) = state.current.as_mut() {
                        turn.run.task.get_or_insert(message);
                    }
                }
                ("event_msg", "item_completed") => {
                    // 0.17x records the prompt only as a completed `UserMessage` item.
                    let item = payload.get("item").unwrap_or(&Value::Null);
                    if str_at(item, "type") == Some("UserMessage")
                        && let Some(turn) = state.current.as_mut()
                    {
                        turn.run.task.get_or_insert(text_of(item.get("content")));
                    }
                }
                ("event_msg", "task_complete" | "turn_complete") => {
                    if let Some(turn) = state.current.as_mut() {
                        turn.complete(inner, payload);
                    }
                    state.close(out)?;
                }
                ("event_msg", "turn_aborted") => {
                    let reason = str_at(payload, "reason").unwrap_or("");
                    if let Some(turn) = state.current.as_mut() {
                        let native = format!("turn_aborted/{reason}");
                        turn.ending = match reason {
                            "budget_limited" => Some(Ending::budget("other").native(native)),
                            "review_ended" => {
                                Some(Ending::new(ExitReason::Finished).native(native))
                            }
                            // A user stop or a superseded task: incomplete.
                            _ => None,
                        };
                        turn.aborted = true;
                    }
                    state.close(out)?;
                }
                ("event_msg", "agent_message") => {
                    if let Some(turn) = state.current.as_mut() {
                        turn.answered = true;
                        if let Some(text) = str_at(payload, "message") {
                            turn.answer = Some(text.to_owned());
                        }
                    }
                }
                ("turn_context", _) => {
                    if let Some(turn) = state.current.as_mut() {
                        if turn.usage_records {
                            turn.response_open = false;
                        } else {
                            // Before 0.17x one `turn_context` precedes each model request.
                            turn.run.turn();
                            turn.response_open = true;
                        }
                        if let Some(model) = str_at(payload, "model") {
                            turn.run.model = Some(model.to_owned());
                        }
                    }
                }
                ("token_usage_record", _) => {
                    // One per model response (0.17x), written after the response's items.
                    if let Some(turn) = state.current.as_mut() {
                        turn.response_done();
                    }
                }
                ("response_item", item) => {
                    if let Some(turn) = state.current.as_mut() {
                        turn.item(item, payload);
                    }
                }
                _ => {}
            }
            Ok(())
        })?;
        state.close(out)
    }
}

/// The session being read.
struct Session {
    id: String,
    turn_mode: bool,
    runs: usize,
    current: Option<Turn>,
}

impl Session {
    fn open(&mut self, turn_id: Option<String>, marked: bool) {
        self.runs += 1;
        let suffix = turn_id.unwrap_or_else(|| format!("turn-{}", self.runs));
        let mut run = ImportedRun::new(format!("{}/{suffix}", self.id));
        run.native_id = Some(suffix);
        self.current = Some(Turn {
            run,
            marked,
            ending: None,
            aborted: false,
            answered: false,
            answer: None,
            response_open: false,
            usage_records: false,
            open_calls: HashSet::new(),
            names: HashMap::new(),
        });
    }

    fn close(&mut self, out: &mut Sink<'_>) -> Result<(), ImportError> {
        let Some(turn) = self.current.take() else {
            return Ok(());
        };
        let finished = |ending: &Option<Ending>| {
            ending
                .as_ref()
                .is_some_and(|e| e.exit_reason == ExitReason::Finished)
        };
        let ending = if turn.ending.is_some() || turn.marked || turn.aborted {
            turn.ending
        } else if turn.answered && turn.open_calls.is_empty() {
            Some(Ending::inferred_finish())
        } else {
            None
        };
        let mut run = turn.run;
        // The agent's last message is the run's answer.
        if finished(&ending)
            && let Some(answer) = turn.answer.filter(|_| turn.answered)
        {
            run.push(Item::Finish { answer });
        }
        run.ending = ending;
        out(Imported::Run(run))
    }
}

/// One turn being read.
struct Turn {
    run: ImportedRun,
    /// Started by `task_started`: its end is recorded, never inferred.
    marked: bool,
    ending: Option<Ending>,
    aborted: bool,
    /// The last item so far is an assistant message.
    answered: bool,
    /// The text of the last assistant message.
    answer: Option<String>,
    /// A model response is being read: its items belong to the current step.
    response_open: bool,
    /// The rollout records one `token_usage_record` per response (0.17x): they delimit steps.
    usage_records: bool,
    open_calls: HashSet<String>,
    names: HashMap<String, String>,
}

impl Turn {
    /// An item the model wrote: the first of a response starts its step.
    fn model_output(&mut self) {
        if !self.response_open {
            self.run.turn();
            self.response_open = true;
        }
    }

    /// A `token_usage_record`: the response it counts has ended.
    fn response_done(&mut self) {
        if !self.usage_records {
            // From now on responses, not `turn_context` lines, are the steps.
            self.usage_records = true;
            if !self.response_open {
                self.run.turn();
            }
        } else if !self.response_open {
            // A response that wrote no item (a failed request is never recorded).
            self.run.turn();
        }
        self.response_open = false;
    }

    /// `task_complete`: finished, or failed with `error.codex_error_info`.
    fn complete(&mut self, native: &str, payload: &Value) {
        if let Some(text) = str_at(payload, "last_agent_message") {
            self.answer = Some(text.to_owned());
            self.answered = true;
        }
        self.ending = Some(match payload.get("error").filter(|e| !e.is_null()) {
            None => Ending::new(ExitReason::Finished).native(native),
            Some(error) => {
                self.answered = false;
                failed_turn(error.get("codex_error_info"))
            }
        });
    }

    fn item(&mut self, item: &str, payload: &Value) {
        let call_id = str_at(payload, "call_id").map(str::to_owned);
        match item {
            "message" if str_at(payload, "role") == Some("assistant") => {
                self.model_output();
                self.answered = true;
                let text = text_of(payload.get("content"));
                if !text.is_empty() {
                    self.answer = Some(text);
                }
            }
            "reasoning" => self.model_output(),
            "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call" => {
                self.model_output();
                let name = match item {
                    "local_shell_call" => "local_shell",
                    "web_search_call" => "web_search_call",
                    _ => str_at(payload, "name").unwrap_or("unknown"),
                };
                let arguments = match item {
                    "function_call" => arguments_of(payload.get("arguments"), "arguments"),
                    "custom_tool_call" => arguments_of(payload.get("input"), "input"),
                    "local_shell_call" => arguments_of(payload.get("action"), "action"),
                    _ => Map::new(),
                };
                if let Some(id) = &call_id {
                    self.open_calls.insert(id.clone());
                    self.names.insert(id.clone(), name.to_owned());
                }
                self.run.call(name, arguments, call_id);
                self.answered = false;
            }
            "function_call_output" | "custom_tool_call_output" => {
                let name = call_id
                    .as_ref()
                    .and_then(|id| self.names.get(id))
                    .map_or("unknown", String::as_str)
                    .to_owned();
                if let Some(id) = &call_id {
                    self.open_calls.remove(id);
                }
                let output = match payload.get("output") {
                    Some(Value::String(text)) => text.clone(),
                    other => text_of(other),
                };
                let (is_error, error_kind) = output_failed(&output);
                self.run.push(Item::Observation {
                    tool_name: name,
                    content: output,
                    is_error,
                    error_kind: error_kind.map(str::to_owned),
                });
                self.answered = false;
            }
            _ => {}
        }
    }
}

/// The ending of a turn that `task_complete` closed with an `error`, by its `codex_error_info`
/// (a string, or an object with one key).
fn failed_turn(info: Option<&Value>) -> Ending {
    let (name, detail) = match info {
        Some(Value::String(name)) => (name.as_str(), None),
        Some(Value::Object(map)) => match map.iter().next() {
            Some((name, detail)) => (name.as_str(), Some(detail)),
            None => ("", None),
        },
        _ => ("", None),
    };
    let status = detail
        .and_then(|d| d.get("http_status_code"))
        .and_then(Value::as_u64);
    let native = match status {
        Some(status) => format!("task_complete/{name}/{status}"),
        None if name.is_empty() => "task_complete/error".to_owned(),
        None => format!("task_complete/{name}"),
    };
    let ending = match (name, status) {
        ("context_window_exceeded", _) => Ending::budget("context"),
        (_, Some(429)) => Ending::internal("rate_limited"),
        _ => Ending::internal("model_failure"),
    };
    ending.native(native)
}

/// Whether a tool output records a failure, and why: `Process exited with code N` (0.17x) or
/// `Exit code: N` text, JSON with `metadata.exit_code`, a sandbox denial; `None` when the output
/// is redacted or says nothing.
fn output_failed(output: &str) -> (Option<bool>, Option<&'static str>) {
    if output.starts_with("[REDACTED") {
        return (None, None);
    }
    if output.contains("failed in sandbox") {
        return (Some(true), Some("sandbox"));
    }
    let code_after = |prefix: &str| {
        output.lines().take(8).find_map(|line| {
            line.strip_prefix(prefix)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|code| code.parse::<i64>().ok())
        })
    };
    if let Some(code) =
        code_after("Process exited with code ").or_else(|| code_after("Exit code: "))
    {
        return (Some(code != 0), None);
    }
    if let Ok(value) = serde_json::from_str::<Value>(output)
        && let Some(code) = value.pointer("/metadata/exit_code").and_then(Value::as_i64)
    {
        return (Some(code != 0), None);
    }
    (Some(false), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_outputs_say_whether_the_command_failed() {
        let exec = "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 2\nOutput:\nx\n";
        assert_eq!(output_failed(exec), (Some(true), None));
        assert_eq!(
            output_failed("Process exited with code 0\nOutput:\n"),
            (Some(false), None)
        );
        assert_eq!(
            output_failed("Exit code: 1\nWall time: 1s"),
            (Some(true), None)
        );
        assert_eq!(
            output_failed("execution error: failed in sandbox LinuxSeccomp with execution error"),
            (Some(true), Some("sandbox"))
        );
        assert_eq!(
            output_failed(r#"{"output":"","metadata":{"exit_code":127}}"#),
            (Some(true), None)
        );
        assert_eq!(output_failed("[REDACTED_OUTPUT len=3]"), (None, None));
    }

    #[test]
    fn failed_turns_map_by_codex_error_info() {
        let info = |v: Value| failed_turn(Some(&v));
        let overflow = info(Value::from("context_window_exceeded"));
        assert_eq!(overflow.budget, Some("context"));
        let limited = info(serde_json::json!({
            "response_too_many_failed_attempts": {"http_status_code": 429}
        }));
        assert_eq!(limited.error_kind.as_deref(), Some("rate_limited"));
        let bad_gateway = info(serde_json::json!({
            "response_too_many_failed_attempts": {"http_status_code": 502}
        }));
        assert_eq!(bad_gateway.error_kind.as_deref(), Some("model_failure"));
        let other = info(Value::from("usage_limit_exceeded"));
        assert_eq!(other.exit_reason, ExitReason::InternalError);
        assert_eq!(other.error_kind.as_deref(), Some("model_failure"));
        assert_eq!(
            failed_turn(None).error_kind.as_deref(),
            Some("model_failure")
        );
    }
}
