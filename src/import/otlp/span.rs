//! One OTLP/JSON span as the mapping reads it, and what it means under the two conventions
//! instrumentations write: OpenTelemetry's GenAI semantic conventions (`gen_ai.*`, used by the
//! OpenAI Agents SDK instrumentations, pydantic-ai, `opentelemetry-instrumentation-openai-v2`,
//! any-agent and looptrace itself) and OpenInference's (`openinference.span.kind`, `llm.*`,
//! `tool.*`, `input.value`, used by Arize Phoenix's instrumentations).

use std::collections::HashMap;

use serde_json::Value;

use crate::trace::Usage;

/// What a span stands for in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An agent's run (`invoke_agent`, OpenInference `AGENT`).
    Agent,
    /// One model request (`chat`, `text_completion`, `generate_content`, OpenInference `LLM`).
    Chat,
    /// One tool call (`execute_tool`, OpenInference `TOOL`).
    Tool,
    /// Anything else: workflows, chains, turns, handoffs.
    Other,
}

/// An exception event recorded on a span.
#[derive(Debug, Clone, Default)]
pub struct Exception {
    /// `exception.type`, as written (often a qualified class name).
    pub kind: Option<String>,
    /// `exception.message`.
    pub message: Option<String>,
}

/// The fields of a span the mapping reads.
#[derive(Debug)]
pub struct Span {
    /// The span's id (lowercase hexadecimal).
    pub span_id: String,
    /// The parent span's id; `None` for a root span.
    pub parent: Option<String>,
    /// The span's name.
    pub name: String,
    /// Start and end, in nanoseconds since 1970 (0 when absent).
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Status ERROR.
    pub error: bool,
    /// The status description, if any.
    pub status_message: Option<String>,
    /// The span's attributes by key (OTLP `AnyValue` objects).
    pub attributes: HashMap<String, Value>,
    /// Exception events, in order.
    pub exceptions: Vec<Exception>,
    /// The resource's `service.name`.
    pub service: Option<String>,
}

impl Span {
    /// A string attribute.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.attributes.get(key)?.get("stringValue")?.as_str()
    }

    /// An integer attribute (OTLP/JSON writes 64-bit integers as strings).
    pub fn int(&self, key: &str) -> Option<u64> {
        let value = self.attributes.get(key)?.get("intValue")?;
        value
            .as_u64()
            .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
    }

    /// A floating-point attribute.
    pub fn double(&self, key: &str) -> Option<f64> {
        self.attributes.get(key)?.get("doubleValue")?.as_f64()
    }

    /// A boolean attribute.
    pub fn bool(&self, key: &str) -> Option<bool> {
        self.attributes.get(key)?.get("boolValue")?.as_bool()
    }

    /// The strings of an array attribute.
    pub fn strings(&self, key: &str) -> Vec<&str> {
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

    /// The first of `keys` that is a string attribute.
    fn first_str(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|key| self.str(key))
    }

    /// The GenAI operation: the attribute, else the span name's first word.
    pub fn operation(&self) -> &str {
        self.str("gen_ai.operation.name")
            .unwrap_or_else(|| self.name.split(' ').next().unwrap_or(""))
    }

    /// What the span stands for.
    pub fn role(&self) -> Role {
        if let Some(kind) = self.str("openinference.span.kind") {
            return match kind {
                "AGENT" => Role::Agent,
                "LLM" => Role::Chat,
                "TOOL" => Role::Tool,
                _ => Role::Other,
            };
        }
        match self.operation() {
            "invoke_agent" => Role::Agent,
            "chat" | "text_completion" | "generate_content" | "call_llm" => Role::Chat,
            "execute_tool" => Role::Tool,
            _ => Role::Other,
        }
    }

    /// The span's start as a trace `ts`.
    pub fn start_ts(&self) -> Option<String> {
        ts_of(self.start)
    }

    /// The span's end as a trace `ts`.
    pub fn end_ts(&self) -> Option<String> {
        ts_of(self.end)
    }

    /// The agent's name.
    pub fn agent_name(&self) -> Option<&str> {
        self.first_str(&["gen_ai.agent.name", "agent.name", "agent_name"])
    }

    /// The model asked for (or, failing that, the one that answered).
    pub fn model(&self) -> Option<&str> {
        self.first_str(&[
            "gen_ai.request.model",
            "gen_ai.response.model",
            "llm.model_name",
        ])
    }

    /// Tokens of this span: GenAI usage (pydantic-ai's aggregated usage on agent spans) or
    /// OpenInference token counts.
    pub fn usage(&self) -> Option<Usage> {
        let input = self
            .int("gen_ai.usage.input_tokens")
            .or_else(|| self.int("gen_ai.aggregated_usage.input_tokens"))
            .or_else(|| self.int("gen_ai.usage.prompt_tokens"))
            .or_else(|| self.int("llm.token_count.prompt"));
        let output = self
            .int("gen_ai.usage.output_tokens")
            .or_else(|| self.int("gen_ai.aggregated_usage.output_tokens"))
            .or_else(|| self.int("gen_ai.usage.completion_tokens"))
            .or_else(|| self.int("llm.token_count.completion"));
        (input.is_some() || output.is_some()).then(|| Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        })
    }

    /// The tool's name.
    pub fn tool_name(&self) -> &str {
        self.first_str(&["gen_ai.tool.name", "tool.name"])
            .or_else(|| self.name.strip_prefix("execute_tool "))
            .or_else(|| self.name.strip_suffix(".tool"))
            .unwrap_or(&self.name)
    }

    /// The tool's arguments as JSON text.
    pub fn tool_arguments(&self) -> Option<&str> {
        self.first_str(&[
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.args",
            "input.value",
        ])
    }

    /// The tool's result as text.
    pub fn tool_result(&self) -> Option<&str> {
        self.first_str(&["gen_ai.tool.call.result", "gen_ai.output", "output.value"])
    }

    /// The first user message's text of a model request.
    pub fn user_text(&self) -> Option<String> {
        if let Some(messages) = self.genai_messages("gen_ai.input.messages") {
            return messages
                .iter()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                .and_then(parts_text);
        }
        let index = (0..self.oi_message_count("llm.input_messages"))
            .find(|i| self.oi_field("llm.input_messages", *i, "role") == Some("user"))?;
        self.oi_field("llm.input_messages", index, "content")
            .map(str::to_owned)
    }

    /// The answer text of a model request, if it gave one.
    pub fn answer_text(&self) -> Option<String> {
        if let Some(messages) = self.genai_messages("gen_ai.output.messages") {
            return messages.first().and_then(parts_text);
        }
        if let Some(output) = self.str("gen_ai.output") {
            // any-agent: the answer, or its tool calls as JSON.
            return self.requested_calls().is_empty().then(|| output.to_owned());
        }
        self.oi_field("llm.output_messages", 0, "content")
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    }

    /// The tool calls a model request asked for: name, arguments (JSON text) and call id.
    pub fn requested_calls(&self) -> Vec<(String, String, Option<String>)> {
        if let Some(messages) = self.genai_messages("gen_ai.output.messages") {
            return messages
                .iter()
                .flat_map(|m| parts(m).iter())
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("tool_call"))
                .map(|p| {
                    let arguments = match p.get("arguments") {
                        Some(Value::String(text)) => text.clone(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    };
                    let name = p.get("name").and_then(Value::as_str).unwrap_or("unknown");
                    let id = p.get("id").and_then(Value::as_str).map(str::to_owned);
                    (name.to_owned(), arguments, id)
                })
                .collect();
        }
        if let Some(Value::Array(calls)) = self
            .str("gen_ai.output")
            .and_then(|text| serde_json::from_str(text).ok())
        {
            // any-agent: `[{"tool.name": ..., "tool.args": ...}]`
            return calls
                .iter()
                .filter_map(|call| {
                    let name = call.get("tool.name")?.as_str()?;
                    let arguments = call.get("tool.args").and_then(Value::as_str).unwrap_or("");
                    Some((name.to_owned(), arguments.to_owned(), None))
                })
                .collect();
        }
        let prefix = "llm.output_messages.0.message.tool_calls";
        (0..64)
            .map_while(|i| {
                let field = |name: &str| self.str(&format!("{prefix}.{i}.tool_call.{name}"));
                let name = field("function.name")?;
                Some((
                    name.to_owned(),
                    field("function.arguments").unwrap_or("").to_owned(),
                    field("id").map(str::to_owned),
                ))
            })
            .collect()
    }

    /// The tool results sent back at the end of a model request's input: tool name or call id,
    /// and the content.
    pub fn trailing_tool_results(&self) -> Vec<(Option<String>, String)> {
        if let Some(messages) = self.genai_messages("gen_ai.input.messages") {
            let tail = messages
                .iter()
                .rev()
                .take_while(|m| m.get("role").and_then(Value::as_str) == Some("tool"));
            let mut results: Vec<(Option<String>, String)> = tail
                .flat_map(|m| parts(m).iter())
                .map(|p| {
                    let id = p.get("id").and_then(Value::as_str).map(str::to_owned);
                    let content = match p.get("response").or_else(|| p.get("content")) {
                        Some(Value::String(text)) => text.clone(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    };
                    (id, content)
                })
                .collect();
            results.reverse();
            return results;
        }
        let count = self.oi_message_count("llm.input_messages");
        let mut results: Vec<(Option<String>, String)> = (0..count)
            .rev()
            .take_while(|i| self.oi_field("llm.input_messages", *i, "role") == Some("tool"))
            .map(|i| {
                (
                    self.oi_field("llm.input_messages", i, "tool_call_id")
                        .map(str::to_owned),
                    self.oi_field("llm.input_messages", i, "content")
                        .unwrap_or("")
                        .to_owned(),
                )
            })
            .collect();
        results.reverse();
        results
    }

    /// How many messages the request sent, where content was captured.
    pub fn input_message_count(&self) -> Option<usize> {
        if let Some(messages) = self.genai_messages("gen_ai.input.messages") {
            return Some(messages.len());
        }
        let count = self.oi_message_count("llm.input_messages");
        (count > 0).then_some(count)
    }

    /// Whether the request ended asking for tools: its finish reasons, else its output.
    pub fn asked_for_tools(&self) -> bool {
        let reasons = self.strings("gen_ai.response.finish_reasons");
        if !reasons.is_empty() {
            return reasons.iter().any(|r| {
                matches!(
                    *r,
                    "tool_calls" | "tool_call" | "tool_use" | "function_call"
                )
            });
        }
        !self.requested_calls().is_empty()
    }

    fn genai_messages(&self, key: &str) -> Option<Vec<Value>> {
        match serde_json::from_str(self.str(key)?).ok()? {
            Value::Array(messages) => Some(messages),
            _ => None,
        }
    }

    /// One past the highest index of OpenInference's flattened messages under `prefix`.
    fn oi_message_count(&self, prefix: &str) -> usize {
        let lead = format!("{prefix}.");
        self.attributes
            .keys()
            .filter_map(|key| key.strip_prefix(&lead))
            .filter_map(|rest| rest.split('.').next()?.parse::<usize>().ok())
            .map(|index| index + 1)
            .max()
            .unwrap_or(0)
    }

    fn oi_field(&self, prefix: &str, index: usize, field: &str) -> Option<&str> {
        self.str(&format!("{prefix}.{index}.message.{field}"))
    }
}

/// Nanoseconds since 1970 as a trace `ts`; 0 (absent) is none.
pub(super) fn ts_of(nanos: u64) -> Option<String> {
    let millis = i64::try_from(nanos / 1_000_000).ok()?;
    (nanos > 0).then(|| crate::time::ts_from_unix_ms(millis))
}

fn parts(message: &Value) -> &[Value] {
    message
        .get("parts")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The text parts of a GenAI message, joined (or its `content` where a writer keeps OpenAI's
/// message shape, as any-agent does).
pub fn parts_text(message: &Value) -> Option<String> {
    if let Some(text) = message.get("content").and_then(Value::as_str) {
        return Some(text.to_owned());
    }
    let texts: Vec<&str> = parts(message)
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("content").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}
