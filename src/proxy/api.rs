//! What the proxy reads from each wire format's requests: which format a path speaks, the
//! conversation array, the task (the first user text), the tool results a request carries, and
//! the format's own error body. Responses are read by the live adapters' parsers
//! ([`crate::model::live`]); streamed ones are first put back together by [`super::stream`].

use serde_json::{Value, json};

use crate::model::live::Api;

/// The wire format a request path speaks, by its last segments.
pub fn api_of_path(path: &str) -> Option<Api> {
    let path = path.trim_end_matches('/');
    if path.ends_with("/chat/completions") {
        Some(Api::OpenAiChat)
    } else if path.ends_with("/responses") {
        Some(Api::OpenAiResponses)
    } else if path.ends_with("/messages") {
        Some(Api::AnthropicMessages)
    } else {
        None
    }
}

/// The request body's key whose array holds the conversation.
pub fn conversation_key(api: Api) -> &'static str {
    match api {
        Api::OpenAiResponses => "input",
        Api::OpenAiChat | Api::AnthropicMessages => "messages",
    }
}

/// The conversation's elements (a Responses `input` given as one string is one element).
pub fn conversation(api: Api, body: &Value) -> Vec<&Value> {
    match body.get(conversation_key(api)) {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(other @ Value::String(_)) => vec![other],
        _ => Vec::new(),
    }
}

/// The text of the first user message: what the run is about.
pub fn task_text(api: Api, body: &Value) -> String {
    for item in conversation(api, body) {
        if let Value::String(text) = item {
            return text.clone();
        }
        if item.get("role").and_then(Value::as_str) == Some("user") {
            return text_of(item.get("content").unwrap_or(&Value::Null));
        }
    }
    String::new()
}

/// A content value as text: a string, or the text parts of an array joined by newlines.
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(text) => Some(text.as_str()),
                _ => part.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A tool's result as a request carries it back to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResultSeen {
    /// The provider's id of the call it answers.
    pub call_id: String,
    /// The text the model reads.
    pub content: String,
    /// The format's error flag, where it has one (`anthropic-messages`).
    pub is_error: Option<bool>,
}

/// Whether the format's tool results say whether they are errors.
pub fn records_tool_errors(api: Api) -> bool {
    api == Api::AnthropicMessages
}

/// The tool results among conversation elements, in order.
pub fn tool_results(api: Api, items: &[&Value]) -> Vec<ToolResultSeen> {
    let mut found = Vec::new();
    for item in items {
        match api {
            Api::OpenAiChat => {
                if item.get("role").and_then(Value::as_str) == Some("tool") {
                    found.push(ToolResultSeen {
                        call_id: string_at(item, "tool_call_id"),
                        content: text_of(item.get("content").unwrap_or(&Value::Null)),
                        is_error: None,
                    });
                }
            }
            Api::OpenAiResponses => {
                if item.get("type").and_then(Value::as_str) == Some("function_call_output") {
                    found.push(ToolResultSeen {
                        call_id: string_at(item, "call_id"),
                        content: text_of(item.get("output").unwrap_or(&Value::Null)),
                        is_error: None,
                    });
                }
            }
            Api::AnthropicMessages => {
                let blocks = item.get("content").and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                        found.push(ToolResultSeen {
                            call_id: string_at(block, "tool_use_id"),
                            content: text_of(block.get("content").unwrap_or(&Value::Null)),
                            is_error: Some(
                                block
                                    .get("is_error")
                                    .and_then(Value::as_bool)
                                    .unwrap_or(false),
                            ),
                        });
                    }
                }
            }
        }
    }
    found
}

fn string_at(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The body of an error answered by the proxy itself, in the format's own shape, so the client's
/// SDK reads `kind` as the error type and `message` as its message.
pub fn error_body(api: Option<Api>, kind: &str, message: &str) -> Value {
    match api {
        Some(Api::AnthropicMessages) => json!({
            "type": "error",
            "error": {"type": kind, "message": message},
        }),
        _ => json!({
            "error": {"message": message, "type": kind, "param": null, "code": kind},
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_name_their_format_whatever_the_prefix() {
        assert_eq!(api_of_path("/v1/chat/completions"), Some(Api::OpenAiChat));
        assert_eq!(
            api_of_path("/openai/v1/responses"),
            Some(Api::OpenAiResponses)
        );
        assert_eq!(api_of_path("/v1/messages"), Some(Api::AnthropicMessages));
        assert_eq!(api_of_path("/v1/messages/count_tokens"), None);
        assert_eq!(api_of_path("/v1/models"), None);
    }

    #[test]
    fn tool_results_are_read_in_each_format() {
        let chat = json!({"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "4"}]});
        assert_eq!(
            tool_results(Api::OpenAiChat, &[&chat]),
            vec![ToolResultSeen {
                call_id: "c1".into(),
                content: "4".into(),
                is_error: None
            }]
        );
        let responses = json!({"type": "function_call_output", "call_id": "c2", "output": "ok"});
        assert_eq!(
            tool_results(Api::OpenAiResponses, &[&responses])[0].call_id,
            "c2"
        );
        let anthropic = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": true},
            {"type": "text", "text": "go on"}
        ]});
        assert_eq!(
            tool_results(Api::AnthropicMessages, &[&anthropic]),
            vec![ToolResultSeen {
                call_id: "t1".into(),
                content: "boom".into(),
                is_error: Some(true)
            }]
        );
    }

    #[test]
    fn the_task_is_the_first_user_text() {
        let body = json!({"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "add 2 and 2"}]}
        ]});
        assert_eq!(task_text(Api::OpenAiChat, &body), "add 2 and 2");
        assert_eq!(
            task_text(Api::OpenAiResponses, &json!({"input": "hi"})),
            "hi"
        );
    }
}
