//! OpenTelemetry GenAI spans as any-agent writes them: `{spans, final_output}`, one run per trace
//! (the `invoke_agent` span and its children), model turns from `call_llm` spans, tool calls from
//! `execute_tool` spans. Trace ids are 128-bit decimal integers, so they are read from the text.
//! An `invoke_agent` span in error ends the run as its exception says, read as the `otlp`
//! importer reads it: a step-limit callback's `AgentCancel` subclass is `max_steps_exceeded`.

use std::io::BufRead;

use serde_json::Value;

use super::error::ImportError;
use super::importer::{
    Context, Imported, Importer, Sink, first_byte, head_text, parse_document, read_bytes, str_at,
    text_of,
};
use super::otlp::{is_provider_error, limit_budget};
use super::run::{Ending, ImportedRun, Item, arguments_of};
use crate::run::ExitReason;
use crate::time::ts_from_unix_ms;

/// Tools that end a run in some frameworks.
const FINISH_TOOLS: [&str; 2] = ["final_answer", "final_output"];

/// `--from otel-genai`.
pub struct OtelGenai;

impl Importer for OtelGenai {
    fn name(&self) -> &'static str {
        "otel-genai"
    }

    fn probe(&self, _name: &str, head: &[u8]) -> u8 {
        let text = head_text(head);
        if first_byte(head) == Some(b'{') && text.contains("\"spans\"") && text.contains("gen_ai.")
        {
            90
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
        let bytes = read_bytes(input, context)?;
        let document = parse_document(&bytes, context, "")?;
        let spans = document
            .get("spans")
            .and_then(Value::as_array)
            .ok_or_else(|| context.malformed("$.spans", "expected an array"))?;
        let raw_ids = trace_ids(&bytes);
        // Group by trace, in order of first appearance; the parsed ids may be rounded, the raw
        // text is exact, and both list the traces in the same order.
        let mut traces: Vec<(Option<Value>, Vec<&Value>)> = Vec::new();
        for span in spans {
            let id = span.pointer("/context/trace_id").cloned();
            match traces.iter_mut().find(|(known, _)| *known == id) {
                Some((_, members)) => members.push(span),
                None => traces.push((id, vec![span])),
            }
        }
        for (index, (id, mut members)) in traces.into_iter().enumerate() {
            members.sort_by_key(|span| span.get("start_time").and_then(Value::as_u64));
            let native = raw_ids
                .get(index)
                .cloned()
                .or_else(|| id.map(|id| id.to_string()))
                .unwrap_or_else(|| format!("trace-{}", index + 1));
            let mut run = ImportedRun::new(native.clone());
            run.native_id = Some(native);
            read_trace(&mut run, &members);
            out(Imported::Run(run))?;
        }
        Ok(())
    }
}

/// The distinct `"trace_id": <digits>` values in the order they first appear.
fn trace_ids(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut ids: Vec<String> = Vec::new();
    let mut rest = text.as_ref();
    while let Some(at) = rest.find("\"trace_id\"") {
        rest = &rest[at + 10..];
        let value = rest.trim_start_matches([':', ' ']);
        let digits: String = value
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if !digits.is_empty() && !ids.contains(&digits) {
            ids.push(digits);
        }
    }
    ids
}

fn read_trace(run: &mut ImportedRun, spans: &[&Value]) {
    let mut root: Option<&Value> = None;
    for span in spans {
        let attributes = span.get("attributes").unwrap_or(&Value::Null);
        let failed = span.pointer("/status/status_code").and_then(Value::as_str) == Some("error");
        match str_at(attributes, "gen_ai.operation.name") {
            Some("invoke_agent") => root = Some(span),
            Some("call_llm") => {
                run.turn();
                if run.task.is_none() {
                    run.task = task_of(attributes);
                }
                if let Some(model) = str_at(attributes, "gen_ai.request.model") {
                    run.model = Some(model.to_owned());
                }
            }
            Some("execute_tool") => {
                let name = str_at(attributes, "gen_ai.tool.name").unwrap_or("unknown");
                let output = text_of(attributes.get("gen_ai.output"));
                if FINISH_TOOLS.contains(&name) {
                    run.push(Item::Finish { answer: output });
                    continue;
                }
                run.call(
                    name,
                    arguments_of(attributes.get("gen_ai.tool.args"), "args"),
                    None,
                );
                run.result(name, output, Some(failed));
            }
            _ => {}
        }
    }
    run.ending = root.map(|span| {
        let attributes = span.get("attributes").unwrap_or(&Value::Null);
        run.agent = str_at(attributes, "gen_ai.agent.name").map(str::to_owned);
        run.started_ts = time_of(span, "start_time");
        run.finished_ts = time_of(span, "end_time");
        let status = span
            .pointer("/status/status_code")
            .and_then(Value::as_str)
            .unwrap_or("unset");
        if status != "error" {
            return Ending::new(ExitReason::Finished).native(status);
        }
        // The status description and exception events say why: a step-limit callback's
        // `AgentCancel` subclass (`StepLimitReached`), or the provider's error.
        let mut texts: Vec<&str> = span
            .pointer("/status/description")
            .and_then(Value::as_str)
            .into_iter()
            .collect();
        let mut exception_type = None;
        for event in span
            .get("events")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let attributes = event.get("attributes").unwrap_or(&Value::Null);
            if let Some(kind) = str_at(attributes, "exception.type") {
                exception_type = exception_type.or(Some(kind.rsplit('.').next().unwrap_or(kind)));
                texts.push(kind);
            }
            texts.extend(str_at(attributes, "exception.message"));
        }
        let native = exception_type.unwrap_or(status);
        if let Some(budget) = limit_budget(&texts) {
            return Ending::budget(budget).native(native);
        }
        if exception_type.is_some_and(is_provider_error) {
            return Ending::internal("model_failure").native(native);
        }
        Ending::internal("agent_error").native(native)
    });
}

/// A span time (nanoseconds since 1970) as a trace `ts`.
fn time_of(span: &Value, key: &str) -> Option<String> {
    let nanos = span.get(key)?.as_u64().filter(|n| *n > 0)?;
    Some(ts_from_unix_ms(i64::try_from(nanos / 1_000_000).ok()?))
}

/// The user message of the first model call.
fn task_of(attributes: &Value) -> Option<String> {
    let messages: Value =
        serde_json::from_str(str_at(attributes, "gen_ai.input.messages")?).ok()?;
    let user = messages
        .as_array()?
        .iter()
        .find(|m| str_at(m, "role") == Some("user"))?;
    Some(text_of(user.get("content")))
}
