//! The `openai-responses` wire format: OpenAI's Responses API. The conversation is a flat list of
//! input items; a response's `output` items (messages, `function_call`s, reasoning) go back into it
//! as they came, and each call is answered by a `function_call_output` item with its `call_id`.
//! `arguments` arrive as a JSON *string* and are parsed strictly, as in `openai-chat`.

use serde_json::{Value, json};

use super::openai_chat::arguments_from_text;
use super::{
    LiveConfig, OpenAiChat, ParsedTurn, ToolResult, WireFormat, add_tools_and_sampling,
    bad_response, count, object,
};
use crate::model::json_adapter::{missing, wrong_type};
use crate::model::{InvalidOutput, ProviderError, TurnItem, Usage};
use crate::run::{Action, Finish, ToolCall};
use crate::tools::ToolSpec;

/// Responses: `POST {base_url}/responses`, `Authorization: Bearer KEY`.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenAiResponses;

impl WireFormat for OpenAiResponses {
    fn endpoint(&self, base_url: &str) -> String {
        format!("{}/responses", base_url.trim_end_matches('/'))
    }

    fn headers(&self, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        OpenAiChat.headers(api_key)
    }

    fn task_message(&self, task: &str) -> Value {
        json!({"role": "user", "content": task})
    }

    fn tool_results(&self, results: &[ToolResult], messages: &mut Vec<Value>) {
        // The format has no error flag for a call's output: an error reads as its text.
        messages.extend(results.iter().map(|result| {
            json!({"type": "function_call_output", "call_id": result.call_id, "output": result.content})
        }));
    }

    fn feedback(&self, text: &str, messages: &mut Vec<Value>) {
        messages.push(json!({"role": "user", "content": text}));
    }

    fn request(&self, config: &LiveConfig, messages: &[Value], tools: &[ToolSpec]) -> Value {
        let mut body = object([
            ("model", Value::String(config.model.clone())),
            ("instructions", Value::String(config.system().to_owned())),
            ("input", Value::Array(messages.to_vec())),
        ]);
        let tool = |spec: &ToolSpec| {
            json!({
                "type": "function",
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.input_schema,
            })
        };
        add_tools_and_sampling(&mut body, config, tools, tool, Some("max_output_tokens"));
        body
    }

    fn conversation_key(&self) -> &'static str {
        "input"
    }

    fn parse(&self, body: &Value) -> Result<ParsedTurn, ProviderError> {
        if body.get("status").and_then(Value::as_str) == Some("failed") {
            let message = body
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("no message");
            return Err(bad_response(format!("the response failed: {message}")));
        }
        let output = body
            .get("output")
            .and_then(Value::as_array)
            .ok_or_else(|| bad_response("the response has no `output` array"))?;
        // An incomplete response says why (`max_output_tokens`, `content_filter`); a complete
        // one has only its status.
        let finish_reason = body
            .pointer("/incomplete_details/reason")
            .or_else(|| body.get("status"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let usage = body.get("usage").filter(|u| u.is_object()).map(|u| Usage {
            input_tokens: count(u, &["input_tokens"]),
            output_tokens: count(u, &["output_tokens"]),
            cache_read_tokens: count(u, &["input_tokens_details", "cached_tokens"]),
            cache_write_tokens: None,
            reasoning_tokens: count(u, &["output_tokens_details", "reasoning_tokens"]),
        });
        let mut items = Vec::new();
        let mut text = String::new();
        let mut refusal = String::new();
        for (index, item) in output.iter().enumerate() {
            match item.get("type").and_then(Value::as_str) {
                Some("message") => {
                    let parts = item.get("content").and_then(Value::as_array);
                    for part in parts.into_iter().flatten() {
                        match part.get("type").and_then(Value::as_str) {
                            Some("output_text") => {
                                text.push_str(
                                    part.get("text").and_then(Value::as_str).unwrap_or(""),
                                );
                            }
                            Some("refusal") => refusal.push_str(
                                part.get("refusal").and_then(Value::as_str).unwrap_or(""),
                            ),
                            _ => {}
                        }
                    }
                }
                Some("function_call") => {
                    let call_id = item
                        .get("call_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    items.push(match parse_function_call(item, index) {
                        Ok(call) => TurnItem::Action {
                            call_id,
                            action: Action::ToolCall(call),
                        },
                        Err(error) => TurnItem::Invalid { call_id, error },
                    });
                }
                // Reasoning and other items are kept in the conversation but propose nothing.
                _ => {}
            }
        }
        if items.is_empty() {
            // No call: the text is the answer. A refusal is the model's answer too.
            let answer = [text, refusal]
                .into_iter()
                .find(|answer| !answer.trim().is_empty());
            if let Some(answer) = answer {
                items.push(TurnItem::Action {
                    call_id: None,
                    action: Action::Finish(Finish { answer }),
                });
            }
        }
        let assistant = if items.is_empty() {
            Vec::new()
        } else {
            output.clone()
        };
        Ok(ParsedTurn {
            assistant,
            items,
            usage,
            finish_reason,
        })
    }
}

/// One `function_call` item, strictly: `{call_id, name, arguments}` with `arguments` a string
/// holding a JSON object.
fn parse_function_call(item: &Value, index: usize) -> Result<ToolCall, InvalidOutput> {
    let at = |field: &str| format!("output[{index}].{field}");
    let name = match item.get("name") {
        None => return Err(missing(&at("name"))),
        Some(Value::String(name)) => name.clone(),
        Some(other) => return Err(wrong_type(&at("name"), "a string", other)),
    };
    match item.get("arguments") {
        None => Err(missing(&at("arguments"))),
        Some(Value::String(text)) => arguments_from_text(name, text),
        Some(other) => Err(wrong_type(&at("arguments"), "a JSON string", other)),
    }
}
