//! Server-sent events put back together: a streamed response, once whole, is turned into the
//! body the same call would have answered without streaming, so one parser per wire format
//! (the live adapters') reads both. The client got the events themselves, as they came.

use serde_json::{Map, Value, json};

use crate::model::live::Api;

/// One event: its `event:` name, if any, and its `data:` lines joined by newlines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field.
    pub event: Option<String>,
    /// The data.
    pub data: String,
}

/// Splits an event stream into events (blank-line separated; `\r\n` accepted; comments skipped).
pub fn parse_events(text: &str) -> Vec<SseEvent> {
    let mut events = Vec::new();
    let mut event = None;
    let mut data: Option<String> = None;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            if let Some(data) = data.take() {
                events.push(SseEvent {
                    event: event.take(),
                    data,
                });
            }
            event = None;
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    if let Some(data) = data {
        events.push(SseEvent { event, data });
    }
    events
}

/// The non-streamed body equivalent to a whole event stream, or why there is none.
pub fn assemble(api: Api, text: &str) -> Result<Value, String> {
    let events = parse_events(text);
    let data: Vec<Value> = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| serde_json::from_str(&e.data).ok())
        .collect();
    if data.is_empty() {
        return Err("the event stream holds no JSON event".to_owned());
    }
    match api {
        Api::OpenAiChat => Ok(chat(&data)),
        Api::OpenAiResponses => responses(&data),
        Api::AnthropicMessages => anthropic(&data),
    }
}

/// Chat Completions chunks: content and tool-call argument fragments concatenated by index.
fn chat(chunks: &[Value]) -> Value {
    let mut text: Option<String> = None;
    let mut calls: Vec<Map<String, Value>> = Vec::new();
    let mut finish_reason = Value::Null;
    let mut usage = Value::Null;
    for chunk in chunks {
        if let Some(found) = chunk.get("usage").filter(|u| u.is_object()) {
            usage = found.clone();
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            continue;
        };
        if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
            finish_reason = reason.clone();
        }
        let Some(delta) = choice.get("delta") else {
            continue;
        };
        if let Some(part) = delta.get("content").and_then(Value::as_str) {
            text.get_or_insert_with(String::new).push_str(part);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .unwrap_or(calls.len());
            if index >= calls.len() {
                calls.resize_with(index + 1, || {
                    let mut call = Map::new();
                    call.insert("type".into(), json!("function"));
                    call.insert("function".into(), json!({"name": "", "arguments": ""}));
                    call
                });
            }
            let slot = &mut calls[index];
            if let Some(id) = call.get("id").filter(|id| id.is_string()) {
                slot.insert("id".into(), id.clone());
            }
            if let Some(function) = call.get("function") {
                for key in ["name", "arguments"] {
                    if let Some(part) = function.get(key).and_then(Value::as_str)
                        && let Some(Value::String(whole)) =
                            slot.get_mut("function").and_then(|f| f.get_mut(key))
                    {
                        whole.push_str(part);
                    }
                }
            }
        }
    }
    let first = &chunks[0];
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls.into_iter().map(Value::Object).collect());
    }
    json!({
        "id": first.get("id").cloned().unwrap_or(Value::Null),
        "object": "chat.completion",
        "created": first.get("created").cloned().unwrap_or(Value::Null),
        "model": first.get("model").cloned().unwrap_or(Value::Null),
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage,
    })
}

/// Responses events: the final `response.completed` (or `.incomplete`, `.failed`) carries the
/// whole response.
fn responses(events: &[Value]) -> Result<Value, String> {
    events
        .iter()
        .rev()
        .find(|e| {
            matches!(
                e.get("type").and_then(Value::as_str),
                Some("response.completed" | "response.incomplete" | "response.failed")
            )
        })
        .and_then(|e| e.get("response").cloned())
        .ok_or_else(|| "the event stream has no response.completed event".to_owned())
}

/// Messages events: `message_start`, then content blocks built from their deltas, then
/// `message_delta` with the stop reason and output tokens.
fn anthropic(events: &[Value]) -> Result<Value, String> {
    let mut message = None;
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial_json: Vec<String> = Vec::new();
    for event in events {
        match event.get("type").and_then(Value::as_str) {
            Some("message_start") => message = event.get("message").cloned(),
            Some("content_block_start") => {
                let index = index_of(event).unwrap_or(blocks.len());
                let block = event.get("content_block").cloned().unwrap_or(Value::Null);
                if index >= blocks.len() {
                    blocks.resize(index + 1, Value::Null);
                    partial_json.resize(index + 1, String::new());
                }
                blocks[index] = block;
            }
            Some("content_block_delta") => {
                let (Some(index), Some(delta)) = (index_of(event), event.get("delta")) else {
                    continue;
                };
                let Some(block) = blocks.get_mut(index) else {
                    continue;
                };
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => append(block, "text", delta.get("text")),
                    Some("thinking_delta") => append(block, "thinking", delta.get("thinking")),
                    Some("signature_delta") => append(block, "signature", delta.get("signature")),
                    Some("input_json_delta") => {
                        if let (Some(buffer), Some(part)) = (
                            partial_json.get_mut(index),
                            delta.get("partial_json").and_then(Value::as_str),
                        ) {
                            buffer.push_str(part);
                        }
                    }
                    _ => {}
                }
            }
            Some("content_block_stop") => {
                let Some(index) = index_of(event) else {
                    continue;
                };
                if let (Some(block), Some(buffer)) =
                    (blocks.get_mut(index), partial_json.get(index))
                    && !buffer.is_empty()
                {
                    // Arguments that are not JSON stay text, for the parser to reject as such.
                    block["input"] = serde_json::from_str(buffer)
                        .unwrap_or_else(|_| Value::String(buffer.clone()));
                }
            }
            Some("message_delta") => {
                let Some(message) = message.as_mut() else {
                    continue;
                };
                if let Some(delta) = event.get("delta").and_then(Value::as_object) {
                    for (key, value) in delta {
                        message[key] = value.clone();
                    }
                }
                if let Some(usage) = event.get("usage").and_then(Value::as_object) {
                    if !message["usage"].is_object() {
                        message["usage"] = json!({});
                    }
                    for (key, value) in usage {
                        message["usage"][key] = value.clone();
                    }
                }
            }
            _ => {}
        }
    }
    let mut message = message.ok_or("the event stream has no message_start event")?;
    message["content"] = Value::Array(blocks.into_iter().filter(|b| !b.is_null()).collect());
    Ok(message)
}

fn index_of(event: &Value) -> Option<usize> {
    event
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
}

fn append(block: &mut Value, key: &str, part: Option<&Value>) {
    let Some(part) = part.and_then(Value::as_str) else {
        return;
    };
    match block.get_mut(key) {
        Some(Value::String(whole)) => whole.push_str(part),
        _ => block[key] = Value::String(part.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn chat_chunks_become_one_completion_with_its_tool_calls() {
        let text = concat!(
            "data: {\"id\":\"c1\",\"model\":\"m\",\"created\":1,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"add\",\"arguments\":\"\"}}]}}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\":\"}}]}}]}\r\n\r\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"2}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n",
            "data: [DONE]\n\n"
        );
        let body = assemble(Api::OpenAiChat, text).unwrap();
        assert_eq!(
            body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":2}"
        );
        assert_eq!(
            body["choices"][0]["message"]["tool_calls"][0]["id"],
            "call_1"
        );
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(body["usage"]["prompt_tokens"], 5);
    }

    #[test]
    fn anthropic_events_become_one_message() {
        let text = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me \"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"add.\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"add\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\": 2}\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":12}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        );
        let body = assemble(Api::AnthropicMessages, text).unwrap();
        assert_eq!(body["content"][0]["text"], "Let me add.");
        assert_eq!(body["content"][1]["input"], json!({"a": 2}));
        assert_eq!(body["stop_reason"], "tool_use");
        assert_eq!(
            body["usage"],
            json!({"input_tokens": 9, "output_tokens": 12})
        );
    }

    #[test]
    fn a_responses_stream_is_its_completed_response() {
        let text = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"output\":[]}}\n\n";
        assert_eq!(
            assemble(Api::OpenAiResponses, text).unwrap(),
            json!({"id": "r", "output": []})
        );
        assert!(assemble(Api::OpenAiResponses, "data: {\"type\":\"x\"}\n\n").is_err());
    }
}
