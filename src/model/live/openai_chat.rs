//! The `openai-chat` wire format: Chat Completions, as OpenAI, vLLM, llama.cpp's `llama-server`,
//! Ollama, LM Studio, OpenRouter and DeepSeek serve it. Tool call `arguments` arrive as a JSON
//! *string* and are parsed strictly.

use serde_json::{Value, json};

use super::{
    LiveConfig, ParsedTurn, ToolResult, WireFormat, add_tools_and_sampling, arguments_object,
    bad_response, count, object,
};
use crate::model::json_adapter::{missing, wrong_type};
use crate::model::{
    InvalidOutput, InvalidOutputKind, ProviderError, TurnItem, Usage, json_type_name,
};
use crate::run::{Action, Finish, ToolCall};
use crate::tools::ToolSpec;

/// Chat Completions: `POST {base_url}/chat/completions`, `Authorization: Bearer KEY`.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenAiChat;

impl WireFormat for OpenAiChat {
    fn endpoint(&self, base_url: &str) -> String {
        format!("{}/chat/completions", base_url.trim_end_matches('/'))
    }

    fn headers(&self, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        api_key
            .map(|key| ("authorization", format!("Bearer {key}")))
            .into_iter()
            .collect()
    }

    fn task_message(&self, task: &str) -> Value {
        json!({"role": "user", "content": task})
    }

    fn tool_results(&self, results: &[ToolResult], messages: &mut Vec<Value>) {
        messages.extend(results.iter().map(|result| {
            json!({"role": "tool", "tool_call_id": result.call_id, "content": result.content})
        }));
    }

    fn feedback(&self, text: &str, messages: &mut Vec<Value>) {
        messages.push(json!({"role": "user", "content": text}));
    }

    fn request(&self, config: &LiveConfig, messages: &[Value], tools: &[ToolSpec]) -> Value {
        let mut all = Vec::with_capacity(messages.len() + 1);
        all.push(json!({"role": "system", "content": config.system()}));
        all.extend_from_slice(messages);
        let mut body = object([
            ("model", Value::String(config.model.clone())),
            ("messages", Value::Array(all)),
        ]);
        let tool = |spec: &ToolSpec| {
            json!({"type": "function", "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.input_schema,
            }})
        };
        add_tools_and_sampling(&mut body, config, tools, tool, Some("max_tokens"));
        body
    }

    fn conversation_key(&self) -> &'static str {
        "messages"
    }

    fn parse(&self, body: &Value) -> Result<ParsedTurn, ProviderError> {
        let choice = body
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first())
            .ok_or_else(|| bad_response("the response has no `choices[0]`"))?;
        let message = choice
            .get("message")
            .filter(|message| message.is_object())
            .ok_or_else(|| bad_response("the response has no `choices[0].message` object"))?;
        let finish_reason = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let usage = body.get("usage").filter(|u| u.is_object()).map(|u| Usage {
            input_tokens: count(u, &["prompt_tokens"]),
            output_tokens: count(u, &["completion_tokens"]),
            cache_read_tokens: count(u, &["prompt_tokens_details", "cached_tokens"]),
            cache_write_tokens: None,
            reasoning_tokens: count(u, &["completion_tokens_details", "reasoning_tokens"]),
        });
        let content = message.get("content").and_then(Value::as_str);
        let mut items = Vec::new();
        let mut kept_calls = Vec::new();
        match message.get("tool_calls") {
            None | Some(Value::Null) => {}
            Some(Value::Array(calls)) => {
                for (index, call) in calls.iter().enumerate() {
                    let call_id = call.get("id").and_then(Value::as_str).map(str::to_owned);
                    if call_id.is_some() {
                        kept_calls.push(call.clone());
                    }
                    items.push(match parse_call(call, index) {
                        Ok(call) => TurnItem::Action {
                            call_id,
                            action: Action::ToolCall(call),
                        },
                        Err(error) => TurnItem::Invalid { call_id, error },
                    });
                }
            }
            Some(other) => items.push(TurnItem::Invalid {
                call_id: None,
                error: InvalidOutput::new(
                    InvalidOutputKind::WrongFieldType,
                    format!(
                        "`tool_calls` must be an array, got {}",
                        json_type_name(other)
                    ),
                ),
            }),
        }
        if items.is_empty() {
            // No tool call: the text is the answer. A refusal is the model's answer too.
            let answer = content
                .filter(|text| !text.trim().is_empty())
                .or_else(|| message.get("refusal").and_then(Value::as_str))
                .filter(|text| !text.trim().is_empty());
            if let Some(answer) = answer {
                items.push(TurnItem::Action {
                    call_id: None,
                    action: Action::Finish(Finish {
                        answer: answer.to_owned(),
                    }),
                });
            }
        }
        let assistant = (!items.is_empty())
            .then(|| {
                let mut assistant = json!({"role": "assistant", "content": content});
                if !kept_calls.is_empty() {
                    assistant["tool_calls"] = Value::Array(kept_calls);
                }
                assistant
            })
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

/// One entry of `tool_calls`, strictly: `{id, type: "function", function: {name, arguments}}`
/// with `arguments` a string holding a JSON object.
fn parse_call(call: &Value, index: usize) -> Result<ToolCall, InvalidOutput> {
    let at = |field: &str| format!("tool_calls[{index}].{field}");
    let Some(call) = call.as_object() else {
        return Err(InvalidOutput::new(
            InvalidOutputKind::NotAnObject,
            format!(
                "tool_calls[{index}] must be an object, got {}",
                json_type_name(call)
            ),
        ));
    };
    match call.get("type") {
        None => {}
        Some(Value::String(kind)) if kind == "function" => {}
        Some(other) => {
            return Err(InvalidOutput::new(
                InvalidOutputKind::UnknownActionType,
                format!("{} must be \"function\", got {other}", at("type")),
            ));
        }
    }
    let function = match call.get("function") {
        None => return Err(missing(&at("function"))),
        Some(Value::Object(function)) => function,
        Some(other) => return Err(wrong_type(&at("function"), "an object", other)),
    };
    let name = match function.get("name") {
        None => return Err(missing(&at("function.name"))),
        Some(Value::String(name)) => name.clone(),
        Some(other) => return Err(wrong_type(&at("function.name"), "a string", other)),
    };
    let text = match function.get("arguments") {
        None => return Err(missing(&at("function.arguments"))),
        Some(Value::String(text)) => text,
        Some(other) => {
            return Err(wrong_type(
                &at("function.arguments"),
                "a JSON string",
                other,
            ));
        }
    };
    arguments_from_text(name, text)
}

/// A call whose `arguments` arrive as a JSON string holding an object, parsed strictly (shared
/// by the OpenAI formats).
pub(super) fn arguments_from_text(name: String, text: &str) -> Result<ToolCall, InvalidOutput> {
    let value: Value = serde_json::from_str(text).map_err(|err| {
        InvalidOutput::new(
            InvalidOutputKind::InvalidJson,
            format!("the arguments of the call to {name:?} are not valid JSON: {err}"),
        )
    })?;
    let arguments = arguments_object(value, &format!("the call to {name:?}"))?;
    Ok(ToolCall::new(name, arguments))
}
