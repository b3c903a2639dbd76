//! OTLP/JSON traces: the OpenTelemetry Collector file exporter's JSON Lines (one `TracesData` per
//! line), as `looptrace export --otlp` and every OpenTelemetry SDK's OTLP/JSON encoding write
//! them. One run per trace id, under either convention [`span`] reads: agent spans are the run,
//! model-request spans its turns, tool spans its tool calls with their results. looptrace's own
//! `looptrace.*` attributes give the exit reason back exactly; other writers' runs end as
//! [`outcome`] reads their root and agent spans. Traces made only of one model request each
//! (client-only instrumentation) are grouped into conversations ([`conversation`]).
//!
//! Spans of one trace may come on several lines (a Collector or a span processor flushes in
//! batches): a trace is complete once its root span has been read (roots end last, so they are
//! exported last), and only traces still waiting for their root are held. A trace whose root
//! never came (the process was killed) is an incomplete run; no other span stands in for the root.

mod conversation;
mod outcome;
mod span;

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use serde_json::Value;

use super::error::ImportError;
use super::importer::{Context, Imported, Importer, Sink, first_byte, for_each_line, head_text};
use super::run::{ImportedRun, Item, arguments_of};
use crate::run::ExitReason;
use crate::trace::Usage;
use conversation::Conversation;
use span::{Exception, Role, Span};

pub use outcome::{is_provider_error, limit_budget};

/// `--from otlp`.
pub struct Otlp;

/// Tools that end a run in some frameworks (any-agent's `final_answer`).
const FINISH_TOOLS: [&str; 2] = ["final_answer", "final_output"];

/// A trace still being read.
struct OpenTrace {
    first_seen: u64,
    has_root: bool,
    spans: Vec<Span>,
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
        let mut talk: Option<Conversation> = None;
        let mut seen = 0u64;
        for_each_line(input, context, |number, line| {
            let at = |path: &str| format!("line {number} {path}");
            let resources = line
                .get("resourceSpans")
                .and_then(Value::as_array)
                .ok_or_else(|| context.malformed(at("$.resourceSpans"), "expected an array"))?;
            for (r, resource) in resources.iter().enumerate() {
                let service = resource_service(resource);
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
                        let (trace_id, mut fields) =
                            read_span(span).map_err(|(field, message)| {
                                context.malformed(at(&format!("{path}.{field}")), message)
                            })?;
                        fields.service.clone_from(&service);
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
                finish_trace(id, trace.spans, &mut talk, context, out)?;
            }
            Ok(())
        })?;
        let mut rest: Vec<(String, OpenTrace)> = open.into_iter().collect();
        rest.sort_by_key(|(_, t)| t.first_seen);
        for (id, trace) in rest {
            out(Imported::Run(to_run(&id, trace.spans, context)))?;
        }
        if let Some(talk) = talk {
            let run_id = context.run_id(Some(talk.trace_id()));
            out(Imported::Run(talk.into_run(run_id)))?;
        }
        Ok(())
    }
}

/// Hands on a trace whose root was read: a run of its own, or the next request of a
/// client-only conversation (which is handed on once it ends).
fn finish_trace(
    trace_id: String,
    mut spans: Vec<Span>,
    talk: &mut Option<Conversation>,
    context: &Context,
    out: &mut Sink<'_>,
) -> Result<(), ImportError> {
    let client_only = spans.len() == 1
        && spans[0].role() == Role::Chat
        && spans[0].str("looptrace.run_id").is_none();
    if !client_only {
        return out(Imported::Run(to_run(&trace_id, spans, context)));
    }
    let chat = spans.remove(0);
    match talk {
        Some(current) if current.continues_with(&chat) => current.push(chat),
        _ => {
            if let Some(done) = talk.take() {
                let run_id = context.run_id(Some(done.trace_id()));
                out(Imported::Run(done.into_run(run_id)))?;
            }
            *talk = Some(Conversation::new(trace_id, chat));
        }
    }
    if talk.as_ref().is_some_and(Conversation::ended)
        && let Some(done) = talk.take()
    {
        let run_id = context.run_id(Some(done.trace_id()));
        out(Imported::Run(done.into_run(run_id)))?;
    }
    Ok(())
}

/// The resource's `service.name`.
fn resource_service(resource: &Value) -> Option<String> {
    resource
        .pointer("/resource/attributes")?
        .as_array()?
        .iter()
        .find(|a| a.get("key").and_then(Value::as_str) == Some("service.name"))?
        .pointer("/value/stringValue")?
        .as_str()
        .map(str::to_owned)
}

/// A time in nanoseconds: OTLP/JSON writes them as strings, some writers as numbers.
fn read_nanos(span: &Value, key: &'static str) -> Result<u64, (&'static str, &'static str)> {
    match span.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(text)) => text.parse().map_err(|_| (key, "expected an integer")),
        Some(value) => value.as_u64().ok_or((key, "expected an integer")),
    }
}

/// The trace id and fields of one span, or the field that is wrong and why.
fn read_span(span: &Value) -> Result<(String, Span), (&'static str, &'static str)> {
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
    let start = read_nanos(span, "startTimeUnixNano")?;
    let end = read_nanos(span, "endTimeUnixNano")?;
    let code = span.pointer("/status/code");
    let error = matches!(code, Some(Value::Number(n)) if n.as_u64() == Some(2))
        || code.and_then(Value::as_str) == Some("STATUS_CODE_ERROR");
    let status_message = span
        .pointer("/status/message")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    let attributes = read_attributes(span.get("attributes"))?;
    let mut exceptions = Vec::new();
    match span.get("events") {
        None | Some(Value::Null) => {}
        Some(Value::Array(events)) => {
            for event in events {
                if event.get("name").and_then(Value::as_str) != Some("exception") {
                    continue;
                }
                let attributes = read_attributes(event.get("attributes"))
                    .map_err(|_| ("events", "expected attributes as an array of objects"))?;
                let text = |key: &str| {
                    attributes
                        .get(key)
                        .and_then(|v| v.get("stringValue"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                exceptions.push(Exception {
                    kind: text("exception.type"),
                    message: text("exception.message"),
                });
            }
        }
        Some(_) => return Err(("events", "expected an array")),
    }
    let name = span
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    Ok((
        trace_id,
        Span {
            span_id,
            parent,
            name,
            start,
            end,
            error,
            status_message,
            attributes,
            exceptions,
            service: None,
        },
    ))
}

fn read_attributes(
    list: Option<&Value>,
) -> Result<HashMap<String, Value>, (&'static str, &'static str)> {
    let mut attributes = HashMap::new();
    match list {
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
    Ok(attributes)
}

/// Input and output tokens added up; `None` while neither side has any.
fn add_usage(total: Option<Usage>, more: Option<Usage>) -> Option<Usage> {
    let Some(more) = more else { return total };
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    let total = total.unwrap_or_default();
    Some(Usage {
        input_tokens: sum(total.input_tokens, more.input_tokens),
        output_tokens: sum(total.output_tokens, more.output_tokens),
        ..Usage::default()
    })
}

/// One trace's spans as a run. Only a span without a parent is the root: a trace whose root is
/// missing is an incomplete run.
fn to_run(trace_id: &str, mut spans: Vec<Span>, context: &Context) -> ImportedRun {
    let root_at = spans.iter().position(|s| s.parent.is_none());
    let root = root_at.map(|at| spans.remove(at));
    spans.sort_by_key(|s| s.start);
    let native = root
        .as_ref()
        .and_then(|r| r.str("looptrace.run_id"))
        .unwrap_or(trace_id);
    let mut run = ImportedRun::new(context.run_id(Some(native)));
    run.native_id = Some(trace_id.to_owned());
    if let Some(root) = &root {
        run.agent = root.agent_name().map(str::to_owned);
        run.model = root
            .str("gen_ai.request.model")
            .or_else(|| root.str("llm.model_name"))
            .map(str::to_owned);
        run.task = root.str("gen_ai.input.messages").and_then(first_user_text);
        run.tool_errors_recorded = root.bool("looptrace.tool_errors_recorded").unwrap_or(true);
        run.started_ts = root.start_ts();
        run.finished_ts = root.end_ts();
    } else {
        run.started_ts = spans.first().and_then(Span::start_ts);
    }
    let mut chat_usage: Option<Usage> = None;
    let mut agent_usage: Option<Usage> = None;
    let mut last_answer: Option<(String, Option<String>)> = None;
    let mut finished = false;
    // When the last model request ended: the tool calls it asked for were proposed then.
    let mut last_chat_end: Option<u64> = None;
    // A model request traced twice (an agent framework's span around the client
    // instrumentation's) is one step: the inner span is skipped.
    let chats: HashSet<&str> = spans
        .iter()
        .filter(|s| s.role() == Role::Chat)
        .map(|s| s.span_id.as_str())
        .collect();
    for span in &spans {
        let nested = span.parent.as_deref().is_some_and(|p| chats.contains(p));
        match span.role() {
            Role::Chat if nested => {}
            Role::Agent => {
                if run.agent.is_none() {
                    run.agent = span.agent_name().map(str::to_owned);
                }
                agent_usage = agent_usage.or_else(|| span.usage());
            }
            Role::Chat => {
                last_chat_end = Some(span.end);
                run.turn();
                if run.model.is_none() {
                    run.model = span.model().map(str::to_owned);
                }
                if run.task.is_none() {
                    run.task = span.user_text();
                }
                chat_usage = add_usage(chat_usage, span.usage());
                let actions = span.strings("looptrace.actions");
                if actions.contains(&"invalid_output") {
                    let kind = span.str("error.type").unwrap_or("invalid_output");
                    run.push(Item::Feedback {
                        content: String::new(),
                        error_kind: kind.to_owned(),
                    });
                    run.stamp(span.end_ts());
                }
                if actions.contains(&"finish") {
                    let answer = span.answer_text().unwrap_or_default();
                    run.push(Item::Finish { answer });
                    run.stamp(span.end_ts());
                    finished = true;
                }
                last_answer = (!span.error && !span.asked_for_tools())
                    .then(|| span.answer_text().map(|text| (text, span.end_ts())))
                    .flatten();
            }
            Role::Tool => {
                let proposed = last_chat_end.filter(|end| *end <= span.start);
                tool_items(&mut run, span, proposed, &mut finished);
            }
            Role::Other => {}
        }
    }
    if let Some(root) = &root {
        if let Some(steps) = root.int("looptrace.steps_used") {
            run.steps = run.steps.max(steps);
        }
        run.usage = root.usage().or(agent_usage).or(chat_usage);
        run.cost_usd = root.double("looptrace.cost_usd");
        run.ending = outcome::ending(root, &spans);
    } else {
        run.usage = agent_usage.or(chat_usage);
    }
    let foreign = root
        .as_ref()
        .is_some_and(|r| r.str("looptrace.exit_reason").is_none());
    let ended_finished = run
        .ending
        .as_ref()
        .is_some_and(|e| e.exit_reason == ExitReason::Finished);
    if foreign
        && ended_finished
        && !finished
        && let Some((answer, ts)) = last_answer
    {
        run.push(Item::Finish { answer });
        run.stamp(ts);
    }
    run
}

/// A tool span's call and result (a finish tool is the run's finish). The call is stamped when
/// it was `proposed` (the end of the model request that asked for it, as looptrace's own traces
/// stamp a `model_action`), else when the tool began.
fn tool_items(run: &mut ImportedRun, span: &Span, proposed: Option<u64>, finished: &mut bool) {
    let name = span.tool_name().to_owned();
    if FINISH_TOOLS.contains(&name.as_str()) && !span.error {
        let answer = span.tool_result().unwrap_or_default().to_owned();
        run.push(Item::Finish { answer });
        run.stamp(span.end_ts());
        *finished = true;
        return;
    }
    let arguments = span
        .tool_arguments()
        .map(|text| arguments_of(Some(&Value::String(text.to_owned())), "arguments"))
        .unwrap_or_default();
    let call_id = span.str("gen_ai.tool.call.id").map(str::to_owned);
    run.call(&name, arguments, call_id);
    run.stamp(span::ts_of(proposed.unwrap_or(span.start)));
    if span.bool("looptrace.tool.answered") != Some(false) {
        let is_error = run.tool_errors_recorded.then_some(span.error);
        run.push(Item::Observation {
            tool_name: name,
            content: span.tool_result().unwrap_or_default().to_owned(),
            is_error,
            error_kind: span
                .error
                .then(|| span.str("error.type").map(str::to_owned))
                .flatten(),
        });
        run.stamp(span.end_ts());
    }
}

/// The text of the first user message in `gen_ai.input.messages`.
fn first_user_text(messages: &str) -> Option<String> {
    let messages: Value = serde_json::from_str(messages).ok()?;
    let user = messages
        .as_array()?
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    span::parts_text(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: &str, parent: Option<&str>, attributes: Value) -> Value {
        let mut span = serde_json::json!({
            "traceId": "0123456789abcdef0123456789abcdef",
            "spanId": id,
            "name": "span",
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            "attributes": attributes,
        });
        if let Some(parent) = parent {
            span["parentSpanId"] = Value::String(parent.to_owned());
        }
        span
    }

    fn attribute(key: &str, value: &str) -> Value {
        serde_json::json!({"key": key, "value": {"stringValue": value}})
    }

    fn import(spans: Vec<Value>) -> Vec<ImportedRun> {
        let line = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]});
        let context = Context {
            file: "t.jsonl".to_owned(),
            name: "t.jsonl".to_owned(),
        };
        let mut runs = Vec::new();
        Otlp.import(
            &mut line.to_string().as_bytes(),
            &context,
            &mut |imported| {
                if let Imported::Run(run) = imported {
                    runs.push(run);
                }
                Ok(())
            },
        )
        .unwrap();
        runs
    }

    #[test]
    fn a_request_traced_by_the_framework_and_the_client_is_one_step() {
        let agent = attribute("gen_ai.operation.name", "invoke_agent");
        let chat = attribute("gen_ai.operation.name", "chat");
        let runs = import(vec![
            span(
                "00000000000000c2",
                Some("00000000000000c1"),
                Value::Array(vec![chat.clone()]),
            ),
            span(
                "00000000000000c1",
                Some("00000000000000a1"),
                Value::Array(vec![chat]),
            ),
            span("00000000000000a1", None, Value::Array(vec![agent])),
        ]);
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].steps, 1);
        assert_eq!(
            runs[0].ending.as_ref().map(|e| e.exit_reason),
            Some(ExitReason::Finished)
        );
    }

    /// A client-only request: a trace of one chat span.
    fn request(trace: u8, finish: &str, messages: Option<usize>) -> Value {
        let mut attributes = vec![
            attribute("gen_ai.operation.name", "chat"),
            serde_json::json!({"key": "gen_ai.response.finish_reasons",
                "value": {"arrayValue": {"values": [{"stringValue": finish}]}}}),
        ];
        if let Some(count) = messages {
            let input: Vec<Value> = (0..count)
                .map(|_| serde_json::json!({"role": "user", "parts": []}))
                .collect();
            attributes.push(attribute(
                "gen_ai.input.messages",
                &Value::Array(input).to_string(),
            ));
        }
        let mut span = span("00000000000000c1", None, Value::Array(attributes));
        span["traceId"] = Value::String(format!("{trace:032x}"));
        span
    }

    #[test]
    fn client_only_requests_split_where_a_conversation_ends() {
        let steps = |runs: &[ImportedRun]| -> Vec<(u64, bool)> {
            runs.iter().map(|r| (r.steps, r.ending.is_some())).collect()
        };
        // An answer ends a conversation; the next request opens another.
        let runs = import(vec![
            request(1, "tool_calls", None),
            request(2, "stop", None),
            request(3, "tool_calls", None),
            request(4, "stop", None),
        ]);
        assert_eq!(steps(&runs), [(2, true), (2, true)]);
        // A request that sends fewer messages than the one before is a new conversation, even
        // after a request for tools (which leaves the first one incomplete).
        let runs = import(vec![
            request(1, "tool_calls", Some(1)),
            request(2, "tool_calls", Some(3)),
            request(3, "tool_calls", Some(1)),
            request(4, "stop", Some(3)),
        ]);
        assert_eq!(steps(&runs), [(2, false), (2, true)]);
        assert_eq!(runs[0].native_id.as_deref(), Some(&*format!("{:032x}", 1)));
        assert_eq!(runs[1].native_id.as_deref(), Some(&*format!("{:032x}", 3)));
    }

    #[test]
    fn an_orphan_span_is_not_taken_for_the_root() {
        let chat = attribute("gen_ai.operation.name", "chat");
        let runs = import(vec![span(
            "00000000000000c1",
            Some("00000000000000a1"),
            Value::Array(vec![chat]),
        )]);
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].steps, 1);
        assert_eq!(runs[0].ending, None);
        assert_eq!(
            runs[0].started_ts.as_deref(),
            Some("2023-11-14T22:13:20.000Z")
        );
    }
}
