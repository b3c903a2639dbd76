//! The write-up author's newer loop (`code_agent`): JSONL with `schema_version`, `sequence` and a
//! `payload` per event, one run per `run_id`, ending in `run_finished.payload.status` or
//! `run_aborted`.

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::Value;

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, for_each_line, head_text, str_at, text_of,
};
use super::run::{Ending, ImportedRun, Item, arguments_of};
use crate::run::ExitReason;
use crate::trace::Usage;

/// `--from code-agent`.
pub struct CodeAgent;

impl Importer for CodeAgent {
    fn name(&self) -> &'static str {
        "code-agent"
    }

    fn probe(&self, _name: &str, head: &[u8]) -> u8 {
        let head = head_text(head);
        let line = head.lines().next().unwrap_or("");
        if line.contains("\"schema_version\"")
            && line.contains("\"sequence\"")
            && line.contains("\"payload\"")
        {
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
        let mut current: Option<ImportedRun> = None;
        let mut tools: HashMap<String, String> = HashMap::new();
        for_each_line(input, context, |line, event| {
            let at = || format!("line {line}");
            let run_id = str_at(&event, "run_id")
                .ok_or_else(|| context.malformed(at(), "missing `run_id`"))?;
            let kind = str_at(&event, "event_type")
                .ok_or_else(|| context.malformed(at(), "missing `event_type`"))?;
            let payload = event.get("payload").unwrap_or(&Value::Null);
            if current.as_ref().is_none_or(|run| run.run_id != run_id) || kind == "run_started" {
                if let Some(done) = current.take() {
                    out(Imported::Run(done))?;
                }
                let mut run = ImportedRun::new(run_id);
                run.native_id = Some(run_id.to_owned());
                current = Some(run);
                tools.clear();
            }
            let Some(run) = current.as_mut() else {
                return Ok(());
            };
            match kind {
                "run_started" => {
                    run.task = payload
                        .get("history")
                        .and_then(Value::as_array)
                        .and_then(|history| {
                            history.iter().find(|m| str_at(m, "role") == Some("user"))
                        })
                        .map(|m| text_of(m.get("content")));
                }
                "model_call_prepared" => {
                    run.turn();
                }
                "model_call_completed" => {
                    let action = payload.get("action").unwrap_or(&Value::Null);
                    if str_at(action, "type") == Some("final_answer") {
                        run.push(Item::Finish {
                            answer: text_of(action.get("content")),
                        });
                    }
                }
                "model_retry_scheduled" if str_at(payload, "kind") == Some("invalid_output") => {
                    let feedback = payload.get("feedback").unwrap_or(&Value::Null);
                    run.push(Item::Feedback {
                        content: text_of(feedback.get("error_message")),
                        error_kind: "invalid_output".to_owned(),
                    });
                }
                "tool_call_requested" => {
                    let name = str_at(payload, "tool_name").unwrap_or("unknown");
                    let call_id = str_at(payload, "call_id").map(str::to_owned);
                    if let Some(id) = &call_id {
                        tools.insert(id.clone(), name.to_owned());
                    }
                    run.call(
                        name,
                        arguments_of(payload.get("arguments"), "input"),
                        call_id,
                    );
                }
                "tool_result_recorded" => {
                    let name = str_at(payload, "call_id")
                        .and_then(|id| tools.get(id))
                        .map_or("unknown", String::as_str)
                        .to_owned();
                    let is_error = payload.get("is_error").and_then(Value::as_bool);
                    run.result(&name, text_of(payload.get("content")), is_error);
                }
                "run_finished" => {
                    run.ending = Some(ending(payload));
                    run.usage = usage(payload);
                }
                "run_aborted" => {
                    run.ending = Some(
                        Ending::internal(
                            str_at(payload, "error_kind").unwrap_or("unexpected_error"),
                        )
                        .native("run_aborted"),
                    );
                    run.usage = usage(payload);
                }
                _ => {}
            }
            Ok(())
        })?;
        if let Some(done) = current.take() {
            out(Imported::Run(done))?;
        }
        Ok(())
    }
}

/// `run_finished.payload` mapped onto an exit reason, as FORMATS.md's table says.
fn ending(payload: &Value) -> Ending {
    let status = str_at(payload, "status").unwrap_or("");
    let reason = str_at(payload, "reason");
    let native = match reason {
        Some(reason) => format!("{status}/{reason}"),
        None => status.to_owned(),
    };
    let ending = match (status, reason.unwrap_or("")) {
        ("completed", _) => Ending::new(ExitReason::Finished),
        ("budget_stopped", "model_calls_exhausted" | "action_steps_exhausted") => {
            Ending::budget("steps")
        }
        ("budget_stopped", "tokens_exhausted") => Ending::budget("tokens"),
        ("budget_stopped", "time_exhausted") => Ending::budget("time"),
        ("budget_stopped", _) => Ending::budget("other"),
        ("model_failed", kind @ ("invalid_output_retries_exhausted" | "duplicate_call_id")) => {
            Ending {
                error_kind: Some(kind.to_owned()),
                ..Ending::new(ExitReason::InvalidModelOutput)
            }
        }
        ("model_failed", _) => Ending::internal("model_failure"),
        _ => Ending::internal("unknown_status"),
    };
    ending.native(native)
}

fn usage(payload: &Value) -> Option<Usage> {
    let usage = payload.get("usage")?;
    Some(Usage {
        input_tokens: usage.get("input_tokens").and_then(Value::as_u64),
        output_tokens: usage.get("output_tokens").and_then(Value::as_u64),
        ..Usage::default()
    })
}
