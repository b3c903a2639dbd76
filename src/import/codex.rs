//! Codex CLI rollouts: JSONL `{timestamp, type, payload}`, one session per file, one run per turn
//! (`task_started` .. `task_complete`/`turn_aborted`). Versions that persist no turn markers (0.66)
//! split at each `user_message`, and their endings are inferred.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use serde_json::{Map, Value};

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, for_each_line, head_text, str_at, text_of,
};
use super::run::{Ending, ImportedRun, arguments_of};
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
                ("event_msg", "task_complete" | "turn_complete") => {
                    if let Some(turn) = state.current.as_mut() {
                        turn.ending = Some(Ending::new(ExitReason::Finished).native(inner));
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
                    }
                }
                ("turn_context", _) => {
                    if let Some(turn) = state.current.as_mut() {
                        turn.run.turn();
                        if let Some(model) = str_at(payload, "model") {
                            turn.run.model = Some(model.to_owned());
                        }
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
            open_calls: HashSet::new(),
            names: HashMap::new(),
        });
    }

    fn close(&mut self, out: &mut Sink<'_>) -> Result<(), ImportError> {
        let Some(turn) = self.current.take() else {
            return Ok(());
        };
        let mut run = turn.run;
        run.ending = if turn.ending.is_some() || turn.marked || turn.aborted {
            turn.ending
        } else if turn.answered && turn.open_calls.is_empty() {
            Some(Ending::inferred_finish())
        } else {
            None
        };
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
    open_calls: HashSet<String>,
    names: HashMap<String, String>,
}

impl Turn {
    fn item(&mut self, item: &str, payload: &Value) {
        let call_id = str_at(payload, "call_id").map(str::to_owned);
        match item {
            "message" if str_at(payload, "role") == Some("assistant") => self.answered = true,
            "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call" => {
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
                let is_error = output_failed(&output);
                self.run.result(&name, output, is_error);
                self.answered = false;
            }
            _ => {}
        }
    }
}

/// Whether a tool output records a failure: `Exit code: N` text, or JSON with
/// `metadata.exit_code`; `None` when the output is redacted or says nothing.
fn output_failed(output: &str) -> Option<bool> {
    if output.starts_with("[REDACTED") {
        return None;
    }
    if let Some(rest) = output.strip_prefix("Exit code: ") {
        let code = rest
            .split_whitespace()
            .next()
            .and_then(|c| c.parse::<i64>().ok());
        return code.map(|code| code != 0);
    }
    if let Ok(value) = serde_json::from_str::<Value>(output)
        && let Some(code) = value.pointer("/metadata/exit_code").and_then(Value::as_i64)
    {
        return Some(code != 0);
    }
    Some(false)
}
