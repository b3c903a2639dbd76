//! A scripted model server for the proxy tests, on 127.0.0.1, speaking the three wire formats
//! streamed and not. It is stateless per conversation: a request whose last message is a tool
//! result gets a final text answer quoting that result, any other gets a call of `add` with
//! `{"a": 2, "b": 3}`. Ids come from a counter, so two runs never get the same ones and a replay
//! that returns the recorded ids cannot have made them up. The model name picks a failure:
//! `rate-limited-once` (429 the first time a body is seen), `always-500`, `cut` (the answer
//! stops midway), `slow` (a second before answering), `hold` (a stream's first event, then the
//! rest only once [`ScriptedUpstream::release`] is called). A chat request that offers a `bash`
//! tool (mini-swe-agent's) is answered with `echo hello > hello.txt`, then with mini-swe-agent's
//! submit command once a tool result came back.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// A request as received.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The request target.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    seen: Mutex<Vec<Seen>>,
    bodies: Mutex<HashSet<String>>,
    counter: AtomicU64,
    released: (Mutex<bool>, Condvar),
}

/// The running server; it stops accepting when dropped.
pub struct ScriptedUpstream {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    port: u16,
}

impl ScriptedUpstream {
    /// Starts serving.
    pub fn start() -> ScriptedUpstream {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (state, stopped) = (Arc::clone(&shared), Arc::clone(&stop));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let state = Arc::clone(&state);
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        ScriptedUpstream {
            url: format!("http://127.0.0.1:{port}"),
            shared,
            stop,
            port,
        }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// Lets `hold` streams go on.
    pub fn release(&self) {
        let (flag, changed) = &self.shared.released;
        *flag.lock().unwrap() = true;
        changed.notify_all();
    }
}

impl Drop for ScriptedUpstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.release();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut raw = vec![0; length];
    if reader.read_exact(&mut raw).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    shared.seen.lock().unwrap().push(Seen {
        path: path.clone(),
        headers,
        body: body.clone(),
    });
    let mut out = stream;
    if path.ends_with("/models") {
        return send(
            &mut out,
            200,
            &json!({"object": "list", "data": [{"id": "m", "object": "model"}]}),
        );
    }
    let model = body["model"].as_str().unwrap_or("").to_owned();
    match model.as_str() {
        "always-500" => {
            return send(
                &mut out,
                500,
                &json!({"error": {"message": "upstream broke", "type": "server_error"}}),
            );
        }
        "rate-limited-once" if shared.bodies.lock().unwrap().insert(body.to_string()) => {
            let text =
                json!({"error": {"message": "slow down", "type": "rate_limit_error"}}).to_string();
            let head = format!(
                "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 0\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                text.len()
            );
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(text.as_bytes());
            return;
        }
        "slow" => std::thread::sleep(Duration::from_millis(1500)),
        _ => {}
    }
    let n = shared.counter.fetch_add(1, Ordering::SeqCst) + 1;
    let streamed = body["stream"] == json!(true);
    let reply = if path.ends_with("/chat/completions") {
        chat(&body, n, streamed)
    } else if path.ends_with("/responses") {
        responses(&body, n, streamed)
    } else {
        anthropic(&body, n, streamed)
    };
    match reply {
        Reply::Whole(value) if model == "cut" => {
            let text = value.to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                text.len()
            );
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(&text.as_bytes()[..text.len() / 2]);
        }
        Reply::Whole(value) => send(&mut out, 200, &value),
        Reply::Events(events) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            if out.write_all(head.as_bytes()).is_err() {
                return;
            }
            let count = events.len();
            for (index, event) in events.into_iter().enumerate() {
                if model == "cut" && index == count / 2 {
                    return;
                }
                if model == "hold" && index == 1 {
                    let (flag, changed) = &shared.released;
                    let guard = flag.lock().unwrap();
                    let _unused = changed
                        .wait_timeout_while(guard, Duration::from_secs(30), |released| !*released)
                        .unwrap();
                }
                let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                if out.write_all(chunk.as_bytes()).is_err() || out.flush().is_err() {
                    return;
                }
            }
            let _ = out.write_all(b"0\r\n\r\n");
        }
    }
}

fn send(out: &mut TcpStream, status: u16, body: &Value) {
    let text = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nx-request-id: req-upstream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        text.len()
    );
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(text.as_bytes());
}

enum Reply {
    Whole(Value),
    Events(Vec<String>),
}

/// The tool result the last message carries, if it carries one.
fn tool_result(body: &Value) -> Option<String> {
    let last = body["messages"]
        .as_array()
        .or_else(|| body["input"].as_array())
        .and_then(|items| items.last())?;
    if last["role"] == "tool" {
        return last["content"].as_str().map(str::to_owned);
    }
    if last["type"] == "function_call_output" {
        return last["output"].as_str().map(str::to_owned);
    }
    last["content"].as_array()?.iter().find_map(|block| {
        (block["type"] == "tool_result").then(|| match &block["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
    })
}

fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// A `bash` tool call, for agents that offer one (mini-swe-agent): write a file, then submit.
fn bash_turn(body: &Value, n: u64) -> Option<Reply> {
    let offers_bash = body["tools"]
        .as_array()?
        .iter()
        .any(|tool| tool["function"]["name"] == "bash");
    if !offers_bash {
        return None;
    }
    let results = body["messages"]
        .as_array()?
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    let (thought, command) = match results {
        0 => ("I will write the file.", "echo hello > hello.txt"),
        _ => (
            "The file is written; submitting.",
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
        ),
    };
    let arguments = json!({"command": command}).to_string();
    Some(Reply::Whole(json!({
        "id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1_700_000_000,
        "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": thought,
            "tool_calls": [{"id": format!("call_{n}"), "type": "function",
                "function": {"name": "bash", "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    })))
}

fn chat(body: &Value, n: u64, streamed: bool) -> Reply {
    if let Some(reply) = bash_turn(body, n) {
        return reply;
    }
    let model = body["model"].clone();
    let id = format!("chatcmpl-{n}");
    let usage = json!({"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25});
    let result = tool_result(body);
    if !streamed {
        let message = match &result {
            Some(result) => {
                json!({"role": "assistant", "content": format!("The sum is {result}.")})
            }
            None => json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": format!("call_{n}"), "type": "function",
                "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}}]}),
        };
        let reason = if result.is_some() {
            "stop"
        } else {
            "tool_calls"
        };
        return Reply::Whole(json!({
            "id": id, "object": "chat.completion", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": usage,
        }));
    }
    let chunk = |delta: Value, reason: Value| {
        data(
            &json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}),
        )
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    match &result {
        Some(result) => {
            for part in ["The sum ", "is ", &format!("{result}.")] {
                events.push(chunk(json!({"content": part}), Value::Null));
            }
            events.push(chunk(json!({}), json!("stop")));
        }
        None => {
            events.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": format!("call_{n}"), "type": "function",
                    "function": {"name": "add", "arguments": ""}}]}),
                Value::Null,
            ));
            for part in ["{\"a\": 2, ", "\"b\": 3}"] {
                events.push(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
                    Value::Null,
                ));
            }
            events.push(chunk(json!({}), json!("tool_calls")));
        }
    }
    events.push(data(
        &json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": model, "choices": [], "usage": usage}),
    ));
    events.push("data: [DONE]\n\n".to_owned());
    Reply::Events(events)
}

fn responses(body: &Value, n: u64, streamed: bool) -> Reply {
    let result = tool_result(body);
    let item = match &result {
        Some(result) => json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": format!("The sum is {result}."), "annotations": []}]}),
        None => {
            json!({"type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"),
            "name": "add", "arguments": "{\"a\": 2, \"b\": 3}", "status": "completed"})
        }
    };
    let response = json!({
        "id": format!("resp_{n}"), "object": "response", "created_at": 1_700_000_000,
        "status": "completed", "model": body["model"], "output": [item],
        "usage": {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25},
    });
    if !streamed {
        return Reply::Whole(response);
    }
    let event = |name: &str, mut value: Value, seq: u64| {
        value["type"] = json!(name);
        value["sequence_number"] = json!(seq);
        format!("event: {name}\ndata: {value}\n\n")
    };
    let mut started = response.clone();
    started["status"] = json!("in_progress");
    started["output"] = json!([]);
    let mut events = vec![event("response.created", json!({"response": started}), 0)];
    events.push(event(
        "response.output_item.added",
        json!({"output_index": 0, "item": item}),
        1,
    ));
    match &result {
        Some(result) => {
            for (i, part) in ["The sum ", &format!("is {result}.")].iter().enumerate() {
                events.push(event("response.output_text.delta",
                    json!({"item_id": format!("msg_{n}"), "output_index": 0, "content_index": 0, "delta": part}),
                    2 + i as u64));
            }
        }
        None => events.push(event("response.function_call_arguments.delta",
            json!({"item_id": format!("fc_{n}"), "output_index": 0, "delta": "{\"a\": 2, \"b\": 3}"}), 2)),
    }
    events.push(event(
        "response.output_item.done",
        json!({"output_index": 0, "item": item}),
        4,
    ));
    events.push(event(
        "response.completed",
        json!({"response": response}),
        5,
    ));
    Reply::Events(events)
}

fn anthropic(body: &Value, n: u64, streamed: bool) -> Reply {
    let result = tool_result(body);
    let (content, reason) = match &result {
        Some(result) => (
            json!([{"type": "text", "text": format!("The sum is {result}.")}]),
            "end_turn",
        ),
        None => (
            json!([{"type": "text", "text": "Let me add."},
                   {"type": "tool_use", "id": format!("toolu_{n}"), "name": "add", "input": {"a": 2, "b": 3}}]),
            "tool_use",
        ),
    };
    let message = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
        "model": body["model"], "content": content, "stop_reason": reason, "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 5}});
    if !streamed {
        return Reply::Whole(message);
    }
    let event = |name: &str, value: Value| format!("event: {name}\ndata: {value}\n\n");
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"] = json!({"input_tokens": 20, "output_tokens": 1});
    let mut events = vec![event(
        "message_start",
        json!({"type": "message_start", "message": start}),
    )];
    for (index, block) in content.as_array().unwrap().iter().enumerate() {
        let mut empty = block.clone();
        if block["type"] == "text" {
            empty["text"] = json!("");
        } else {
            empty["input"] = json!({});
        }
        events.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": empty}),
        ));
        let delta = if block["type"] == "text" {
            json!({"type": "text_delta", "text": block["text"]})
        } else {
            json!({"type": "input_json_delta", "partial_json": block["input"].to_string()})
        };
        events.push(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push(event(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
    ));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    Reply::Events(events)
}
