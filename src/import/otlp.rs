//! OTLP/JSON traces: the OpenTelemetry Collector file exporter's JSON Lines (one `TracesData` per
//! line), which `looptrace export --otlp` writes. One run per trace id, following the GenAI
//! semantic conventions: the root span is the run, `chat` spans are model turns, `execute_tool`
//! spans are tool calls with their results. looptrace's own `looptrace.*` attributes give the
//! exit reason back exactly; other writers' runs end as their root span's status says.
//!
//! Spans of one trace may come on several lines (a Collector flushes in batches): a trace is
//! complete once its root span has been read (roots end last, so they are exported last), and
//! only traces still waiting for their root are held.

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::Value;

use super::error::ImportError;
use super::importer::{Context, Imported, Importer, Sink, first_byte, for_each_line, head_text};
use super::run::{Ending, ImportedRun, Item, arguments_of};
use crate::export::otlp::SYNTHETIC_START_NS;
use crate::run::ExitReason;
use crate::time::ts_from_unix_ms;
use crate::trace::Usage;

/// `--from otlp`.
pub struct Otlp;

/// The budgets a `looptrace.budget` may name.
const BUDGETS: [&str; 6] = ["steps", "tokens", "cost", "time", "context", "other"];

/// The fields of a span the mapping reads.
struct SpanFields {
    span_id: String,
    parent: Option<String>,
    name: String,
    start: u64,
    end: u64,
    error: bool,
    attributes: HashMap<String, Value>,
}

impl SpanFields {
    fn str(&self, key: &str) -> Option<&str> {
        self.attributes.get(key)?.get("stringValue")?.as_str()
    }

    fn int(&self, key: &str) -> Option<u64> {
        let value = self.attributes.get(key)?.get("intValue")?;
        value
            .as_u64()
            .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
    }

    fn double(&self, key: &str) -> Option<f64> {
        self.attributes.get(key)?.get("doubleValue")?.as_f64()
    }

    fn bool(&self, key: &str) -> Option<bool> {
        self.attributes.get(key)?.get("boolValue")?.as_bool()
    }

    fn strings(&self, key: &str) -> Vec<&str> {
        self.attributes
            .get(key)
            .and_then(|v| v.pointer("/arrayValue/values"))
            .and_then(Value::as_array)
            .map(|values| {
                values
                    .iter()
                    .filter_map(|v| v.get("stringValue").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The GenAI operation: the attribute, else the span name's first word.
    fn operation(&self) -> &str {
        self.str("gen_ai.operation.name")
            .unwrap_or_else(|| self.name.split(' ').next().unwrap_or(""))
    }
}

/// A trace still being read.
struct OpenTrace {
    first_seen: u64,
    has_root: bool,
    spans: Vec<SpanFields>,
}

impl Importer for Otlp {
    fn name(&self) -> &'static str {
        "otlp"
    }

    fn probe(&self, _name: &str, head: &[u8]) -> u8 {
        // Above otel-genai's probe, which also matches `"spans"` next to `gen_ai.` attributes.
        if first_byte(head) == Some(b'{') && head_text(head).contains("\"resourceSpans\"") {
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
        let mut open: HashMap<String, OpenTrace> = HashMap::new();
        let mut seen = 0u64;
        for_each_line(input, context, |number, line| {
            let at = |path: &str| format!("line {number} {path}");
            let resources = line
                .get("resourceSpans")
                .and_then(Value::as_array)
                .ok_or_else(|| context.malformed(at("$.resourceSpans"), "expected an array"))?;
            for (r, resource) in resources.iter().enumerate() {
                let scopes = match resource.get("scopeSpans") {
                    None | Some(Value::Null) => continue,
                    Some(Value::Array(scopes)) => scopes,
                    Some(_) => {
                        return Err(context.malformed(
                            at(&format!("$.resourceSpans[{r}].scopeSpans")),
                            "expected an array",
                        ));
                    }
                };
                for (s, scope) in scopes.iter().enumerate() {
                    let spans = match scope.get("spans") {
                        None | Some(Value::Null) => continue,
                        Some(Value::Array(spans)) => spans,
                        Some(_) => {
                            return Err(context.malformed(
                                at(&format!("$.resourceSpans[{r}].scopeSpans[{s}].spans")),
                                "expected an array",
                            ));
                        }
                    };
                    for (k, span) in spans.iter().enumerate() {
                        let path = format!("$.resourceSpans[{r}].scopeSpans[{s}].spans[{k}]");
                        let (trace_id, fields) = read_span(span).map_err(|(field, message)| {
                            context.malformed(at(&format!("{path}.{field}")), message)
                        })?;
                        let trace = open.entry(trace_id).or_insert_with(|| {
                            seen += 1;
                            OpenTrace {
                                first_seen: seen,
                                has_root: false,
                                spans: Vec::new(),
                            }
                        });
                        trace.has_root |= fields.parent.is_none();
                        trace.spans.push(fields);
                    }
                }
            }
            let mut complete: Vec<(String, OpenTrace)> = Vec::new();
            let ids: Vec<String> = open
                .iter()
                .filter(|(_, t)| t.has_root)
                .map(|(id, _)| id.clone())
                .collect();
            for id in ids {
                if let Some(trace) = open.remove(&id) {
                    complete.push((id, trace));
                }
            }
            complete.sort_by_key(|(_, t)| t.first_seen);
            for (id, trace) in complete {
                out(Imported::Run(to_run(&id, trace.spans, context)))?;
            }
            Ok(())
        })?;
        let mut rest: Vec<(String, OpenTrace)> = open.into_iter().collect();
        rest.sort_by_key(|(_, t)| t.first_seen);
        for (id, trace) in rest {
            out(Imported::Run(to_run(&id, trace.spans, context)))?;
        }
        Ok(())
    }
}

/// The trace id and fields of one span, or the field that is wrong and why.
fn read_span(span: &Value) -> Result<(String, SpanFields), (&'static str, &'static str)> {
    let id = |key: &'static str, digits: usize| -> Result<Option<String>, _> {
        match span.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if text.is_empty() => Ok(None),
            Some(Value::String(text))
                if text.len() == digits && text.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                Ok(Some(text.to_ascii_lowercase()))
            }
            Some(_) => Err((key, "expected an id in hexadecimal")),
        }
    };
    let trace_id = id("traceId", 32)?.ok_or(("traceId", "missing"))?;
    let span_id = id("spanId", 16)?.ok_or(("spanId", "missing"))?;
    let parent = id("parentSpanId", 16)?;
    let nanos = |key: &'static str| match span.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(text)) => text.parse().map_err(|_| (key, "expected an integer")),
        Some(value) => value.as_u64().ok_or((key, "expected an integer")),
    };
    let start = nanos("startTimeUnixNano")?;
    let end = nanos("endTimeUnixNano")?;
    let code = span.pointer("/status/code");
    let error = matches!(code, Some(Value::Number(n)) if n.as_u64() == Some(2))
        || code.and_then(Value::as_str) == Some("STATUS_CODE_ERROR");
    let mut attributes = HashMap::new();
    match span.get("attributes") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for attribute in list {
                let key = attribute
                    .get("key")
                    .and_then(Value::as_str)
                    .ok_or(("attributes", "expected objects with a string `key`"))?;
                let value = attribute.get("value").cloned().unwrap_or(Value::Null);
                attributes.insert(key.to_owned(), value);
            }
        }
        Some(_) => return Err(("attributes", "expected an array")),
    }
    let name = span
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    Ok((
        trace_id,
        SpanFields {
            span_id,
            parent,
            name,
            start,
            end,
            error,
            attributes,
        },
    ))
}

/// One trace's spans as a run.
fn to_run(trace_id: &str, mut spans: Vec<SpanFields>, context: &Context) -> ImportedRun {
    let ids: std::collections::HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    let root_at = spans.iter().position(|s| match &s.parent {
        None => true,
        Some(parent) => !ids.contains(parent.as_str()),
    });
    let root = root_at.map(|at| spans.remove(at));
    spans.sort_by_key(|s| s.start);
    let native = root
        .as_ref()
        .and_then(|r| r.str("looptrace.run_id"))
        .unwrap_or(trace_id);
    let mut run = ImportedRun::new(context.run_id(Some(native)));
    run.native_id = Some(trace_id.to_owned());
    if let Some(root) = &root {
        run.agent = root.str("gen_ai.agent.name").map(str::to_owned);
        run.model = root.str("gen_ai.request.model").map(str::to_owned);
        run.task = root.str("gen_ai.input.messages").and_then(first_user_text);
        run.tool_errors_recorded = root.bool("looptrace.tool_errors_recorded").unwrap_or(true);
    }
    for span in &spans {
        match span.operation() {
            "chat" | "text_completion" | "generate_content" => {
                run.turn();
                if run.model.is_none() {
                    run.model = span.str("gen_ai.request.model").map(str::to_owned);
                }
                let actions = span.strings("looptrace.actions");
                if actions.contains(&"invalid_output") || (span.error && actions.is_empty()) {
                    let kind = span.str("error.type").unwrap_or("invalid_output");
                    run.push(Item::Feedback {
                        content: String::new(),
                        error_kind: kind.to_owned(),
                    });
                }
                if actions.contains(&"finish") {
                    let answer = span
                        .str("gen_ai.output.messages")
                        .and_then(assistant_text)
                        .unwrap_or_default();
                    run.push(Item::Finish { answer });
                }
            }
            "execute_tool" => {
                let name = span
                    .str("gen_ai.tool.name")
                    .or_else(|| span.name.strip_prefix("execute_tool "))
                    .unwrap_or("unknown");
                let arguments = span
                    .str("gen_ai.tool.call.arguments")
                    .map(|text| arguments_of(Some(&Value::String(text.to_owned())), "arguments"))
                    .unwrap_or_default();
                let call_id = span.str("gen_ai.tool.call.id").map(str::to_owned);
                run.call(name, arguments, call_id);
                if span.bool("looptrace.tool.answered") != Some(false) {
                    let is_error = run.tool_errors_recorded.then_some(span.error);
                    run.push(Item::Observation {
                        tool_name: name.to_owned(),
                        content: span
                            .str("gen_ai.tool.call.result")
                            .unwrap_or_default()
                            .to_owned(),
                        is_error,
                        error_kind: span
                            .error
                            .then(|| span.str("error.type").map(str::to_owned))
                            .flatten(),
                    });
                }
            }
            _ => {}
        }
    }
    if let Some(root) = &root {
        if let Some(steps) = root.int("looptrace.steps_used") {
            run.steps = run.steps.max(steps);
        }
        let usage = Usage {
            input_tokens: root.int("gen_ai.usage.input_tokens"),
            output_tokens: root.int("gen_ai.usage.output_tokens"),
            ..Usage::default()
        };
        if usage.input_tokens.is_some() || usage.output_tokens.is_some() {
            run.usage = Some(usage);
        }
        run.cost_usd = root.double("looptrace.cost_usd");
    }
    run.ending = root.as_ref().and_then(ending);
    // The run's times come back from its root span, unless they are the synthetic timeline an
    // export of a trace without times lays out.
    if let Some(root) = root
        .as_ref()
        .filter(|r| r.start > 0 && r.start != SYNTHETIC_START_NS)
    {
        let ts = |nanos: u64| ts_from_unix_ms(i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX));
        run.started_ts = Some(ts(root.start));
        run.finished_ts = (run.ending.is_some() && root.end >= root.start).then(|| ts(root.end));
    }
    run
}

/// How the root span says the run ended; `None` is incomplete.
fn ending(root: &SpanFields) -> Option<Ending> {
    let Some(reason) = root.str("looptrace.exit_reason") else {
        // Another writer's run: its root status is all there is.
        return Some(if root.error {
            Ending::internal(root.str("error.type").unwrap_or("agent_error"))
        } else {
            Ending::new(ExitReason::Finished)
        });
    };
    let exit_reason: ExitReason = serde_json::from_value(Value::String(reason.to_owned())).ok()?;
    let mut ending = Ending::new(exit_reason);
    ending.error_kind = root.str("looptrace.error_kind").map(str::to_owned);
    ending.budget = root
        .str("looptrace.budget")
        .and_then(|b| BUDGETS.iter().copied().find(|known| *known == b));
    ending.autosubmitted = root.bool("looptrace.autosubmitted").unwrap_or(false);
    ending.inferred = root.bool("looptrace.ending_inferred").unwrap_or(false);
    Some(ending)
}

/// The text of the first user message in `gen_ai.input.messages`.
fn first_user_text(messages: &str) -> Option<String> {
    let messages: Value = serde_json::from_str(messages).ok()?;
    let user = messages
        .as_array()?
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    parts_text(user)
}

/// The text parts of the first assistant message in `gen_ai.output.messages`.
fn assistant_text(messages: &str) -> Option<String> {
    let messages: Value = serde_json::from_str(messages).ok()?;
    parts_text(messages.as_array()?.first()?)
}

fn parts_text(message: &Value) -> Option<String> {
    let texts: Vec<&str> = message
        .get("parts")?
        .as_array()?
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("content").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}
