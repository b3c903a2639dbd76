//! The `anthropic-messages` wire format: `content` arrays of `text` and `tool_use` blocks, tool
//! results as `tool_result` blocks in the next user message, and `stop_reason`.

use serde_json::{Value, json};

use super::{
    LiveConfig, ParsedTurn, ToolResult, WireFormat, add_tools_and_sampling, arguments_object,
    bad_response, count, object,
};
use crate::model::{
    InvalidOutput, InvalidOutputKind, ProviderError, ProviderErrorKind, TurnItem, Usage,
    json_type_name,
};
use crate::run::{Action, Finish, ToolCall};
use crate::tools::ToolSpec;

/// The version header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The output limit sent when the configuration sets none (the API requires one).
const DEFAULT_MAX_TOKENS: u32 = 1024;

/// Messages: `POST {base_url}/v1/messages`, `x-api-key: KEY`, `anthropic-version: 2023-06-01`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnthropicMessages;

impl WireFormat for AnthropicMessages {
    fn endpoint(&self, base_url: &str) -> String {
        format!("{}/v1/messages", base_url.trim_end_matches('/'))
    }

    fn headers(&self, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = Vec::with_capacity(2);
        if let Some(key) = api_key {
            headers.push(("x-api-key", key.to_owned()));
        }
        headers.push(("anthropic-version", ANTHROPIC_VERSION.to_owned()));
        headers
    }

    fn task_message(&self, task: &str) -> Value {
        json!({"role": "user", "content": task})
    }

    fn tool_results(&self, results: &[ToolResult], messages: &mut Vec<Value>) {
        if results.is_empty() {
            return;
        }
        let blocks = results
            .iter()
            .map(|result| {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": result.call_id,
                    "content": result.content,
                });
                if result.is_error {
                    block["is_error"] = Value::Bool(true);
                }
                block
            })
            .collect();
        messages.push(json!({"role": "user", "content": Value::Array(blocks)}));
    }

    /// Roles must alternate, so feedback joins a user message that is already last.
    fn feedback(&self, text: &str, messages: &mut Vec<Value>) {
        let block = json!({"type": "text", "text": text});
        if let Some(last) = messages.last_mut()
            && last["role"] == "user"
        {
            let content = match last["content"].take() {
                Value::String(text) => vec![json!({"type": "text", "text": text})],
                Value::Array(blocks) => blocks,
                _ => Vec::new(),
            };
            let mut content = content;
            content.push(block);
            last["content"] = Value::Array(content);
        } else {
            messages.push(json!({"role": "user", "content": [block]}));
        }
    }

    fn request(&self, config: &LiveConfig, messages: &[Value], tools: &[ToolSpec]) -> Value {
        let mut body = object([
            ("model", Value::String(config.model.clone())),
            (
                "max_tokens",
                json!(config.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
            ),
            ("system", Value::String(config.system().to_owned())),
            ("messages", Value::Array(messages.to_vec())),
        ]);
        let tool = |spec: &ToolSpec| {
            json!({
                "name": spec.name,
                "description": spec.description,
                "input_schema": spec.input_schema,
            })
        };
        // The output limit is always sent, above.
        add_tools_and_sampling(&mut body, config, tools, tool, None);
        body
    }

    fn conversation_key(&self) -> &'static str {
        "messages"
    }

    fn parse(&self, body: &Value) -> Result<ParsedTurn, ProviderError> {
        let blocks = body
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| bad_response("the response has no `content` array"))?;
        let finish_reason = body
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if finish_reason.as_deref() == Some("model_context_window_exceeded") {
            return Err(ProviderError::new(
                ProviderErrorKind::ContextLengthExceeded,
                "stop_reason model_context_window_exceeded",
            ));
        }
        let usage = body.get("usage").filter(|u| u.is_object()).map(|u| Usage {
            input_tokens: count(u, &["input_tokens"]),
            output_tokens: count(u, &["output_tokens"]),
            cache_read_tokens: count(u, &["cache_read_input_tokens"]),
            cache_write_tokens: count(u, &["cache_creation_input_tokens"]),
            reasoning_tokens: None,
        });
        let mut items = Vec::new();
        let mut text = String::new();
        for (index, block) in blocks.iter().enumerate() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(part) = block.get("text").and_then(Value::as_str) {
                        text.push_str(part);
                    }
                }
                Some("tool_use") => {
                    let call_id = block.get("id").and_then(Value::as_str).map(str::to_owned);
                    items.push(match parse_tool_use(block, index) {
                        Ok(call) => TurnItem::Action {
                            call_id,
                            action: Action::ToolCall(call),
                        },
                        Err(error) => TurnItem::Invalid { call_id, error },
                    });
                }
                // Thinking and other blocks are kept in the conversation but propose nothing.
                _ => {}
            }
        }
        if items.is_empty() && !text.trim().is_empty() {
            items.push(TurnItem::Action {
                call_id: None,
                action: Action::Finish(Finish { answer: text }),
            });
        }
        let assistant = (!blocks.is_empty() && !items.is_empty())
            .then(|| json!({"role": "assistant", "content": blocks}))
            .into_iter()
            .collect();
        Ok(ParsedTurn {
            assistant,
            items,
            usage,
            finish_reason,
        })
    }
}

/// One `tool_use` block: `{id, name, input}` with `input` an object.
fn parse_tool_use(block: &Value, index: usize) -> Result<ToolCall, InvalidOutput> {
    let name = match block.get("name") {
        Some(Value::String(name)) => name.clone(),
        None => {
            return Err(InvalidOutput::new(
                InvalidOutputKind::MissingField,
                format!("missing field `content[{index}].name`"),
            ));
        }
        Some(other) => {
            return Err(InvalidOutput::new(
                InvalidOutputKind::WrongFieldType,
                format!(
                    "`content[{index}].name` must be a string, got {}",
                    json_type_name(other)
                ),
            ));
        }
    };
    let input = block.get("input").cloned().ok_or_else(|| {
        InvalidOutput::new(
            InvalidOutputKind::MissingField,
            format!("missing field `content[{index}].input`"),
        )
    })?;
    let arguments = arguments_object(input, &format!("the call to {name:?}"))?;
    Ok(ToolCall::new(name, arguments))
}
