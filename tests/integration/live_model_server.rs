//! A model server for tests: a thread on 127.0.0.1 that answers each request with the next scripted
//! reply and keeps every request it received (path, headers, JSON body) for the test to check.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A status, extra headers and a body.
    Http {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Say nothing for this long, then close the connection.
    Silence(Duration),
}

impl Reply {
    /// 200 with a JSON body.
    pub fn ok(body: Value) -> Reply {
        Reply::status(200, body)
    }

    /// A status with a JSON body.
    pub fn status(status: u16, body: Value) -> Reply {
        Reply::Http {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Http { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

/// A request as the server received it.
#[derive(Clone, Debug)]
pub struct Received {
    /// The request target, such as `/v1/chat/completions`.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: BTreeMap<String, String>,
    /// The body, parsed.
    pub body: Value,
    /// The body as sent.
    pub raw: String,
}

/// The running server.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `replies` in order, one per connection; after them every request gets a 500.
    pub fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let count = replies.len();
        let thread = std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for stream in listener.incoming().take(count) {
                let Ok(stream) = stream else { return };
                let reply = replies.next().expect("one reply per connection");
                serve(stream, reply, &log);
            }
        });
        Server {
            url,
            received,
            thread: Some(thread),
        }
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until the scripted replies are all served.
    pub fn finish(mut self) -> Vec<Received> {
        if let Some(thread) = self.thread.take() {
            thread.join().expect("server thread");
        }
        self.received()
    }
}

/// A server that answers every request with one reply, holding each request until `target`
/// requests have been in flight at once (or `patience` passes), and records the peak: a test of
/// how many requests a client keeps in flight that does not depend on timing.
pub struct ConcurrencyServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    state: Arc<(Mutex<Flight>, Condvar)>,
}

#[derive(Default)]
struct Flight {
    in_flight: usize,
    peak: usize,
    served: usize,
}

impl ConcurrencyServer {
    /// Serves `requests` requests with `reply`, each held until `target` are in flight at once
    /// (once reached, no request waits) or until `patience` has passed for it.
    pub fn start(reply: Reply, requests: usize, target: usize, patience: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state: Arc<(Mutex<Flight>, Condvar)> = Arc::default();
        let shared = Arc::clone(&state);
        // The acceptor is left to end with the test process if fewer requests come.
        std::thread::spawn(move || {
            let mut handlers = Vec::new();
            for stream in listener.incoming().take(requests) {
                let Ok(stream) = stream else { break };
                let (state, reply) = (Arc::clone(&shared), reply.clone());
                handlers.push(std::thread::spawn(move || {
                    let log = Mutex::new(Vec::new());
                    serve_with(stream, reply, &log, || {
                        let (flight, changed) = &*state;
                        let mut flight = flight.lock().unwrap();
                        flight.in_flight += 1;
                        flight.peak = flight.peak.max(flight.in_flight);
                        changed.notify_all();
                        let (mut flight, _) = changed
                            .wait_timeout_while(flight, patience, |f| f.peak < target)
                            .unwrap();
                        flight.in_flight -= 1;
                        flight.served += 1;
                    });
                }));
            }
            for handler in handlers {
                let _ = handler.join();
            }
        });
        ConcurrencyServer { url, state }
    }

    /// The most requests that were in flight at once, and how many were served. Called once the
    /// client is done: a request is counted before its reply is sent.
    pub fn peak_and_served(&self) -> (usize, usize) {
        let flight = self.state.0.lock().unwrap();
        (flight.peak, flight.served)
    }
}

fn serve(stream: TcpStream, reply: Reply, log: &Mutex<Vec<Received>>) {
    serve_with(stream, reply, log, || {});
}

/// Reads one request, logs it, runs `hold` (the request is then in flight), then replies.
fn serve_with(stream: TcpStream, reply: Reply, log: &Mutex<Vec<Received>>, hold: impl FnOnce()) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_owned();
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let raw = String::from_utf8_lossy(&body).into_owned();
    log.lock().unwrap().push(Received {
        path,
        headers,
        body: serde_json::from_str(&raw).unwrap_or(Value::Null),
        raw,
    });
    hold();
    let mut stream = stream;
    match reply {
        Reply::Silence(duration) => std::thread::sleep(duration),
        Reply::Http {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
        }
    }
}

/// Realistic Chat Completions bodies.
pub mod openai {
    use serde_json::{Value, json};

    /// A response with these tool calls: `(id, name, arguments as sent)`.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Value {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, arguments)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        json!({
            "id": "chatcmpl-abc123",
            "object": "chat.completion",
            "created": 1_764_000_000,
            "model": "test-model",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": null, "tool_calls": calls},
                "logprobs": null,
                "finish_reason": "tool_calls"
            }],
            "usage": {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140,
                      "prompt_tokens_details": {"cached_tokens": 64}}
        })
    }

    /// A text answer.
    pub fn answer(text: &str, finish_reason: &str) -> Value {
        json!({
            "id": "chatcmpl-def456",
            "object": "chat.completion",
            "created": 1_764_000_001,
            "model": "test-model",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": null,
                "finish_reason": finish_reason
            }],
            "usage": {"prompt_tokens": 160, "completion_tokens": 12, "total_tokens": 172}
        })
    }

    /// An error body.
    pub fn error(code: &str, message: &str) -> Value {
        json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}})
    }
}

/// Realistic Messages bodies.
pub mod anthropic {
    use serde_json::{Value, json};

    /// A response mixing text and these `tool_use` blocks: `(id, name, input)`.
    pub fn tool_use(text: &str, calls: &[(&str, &str, Value)]) -> Value {
        let mut content = vec![json!({"type": "text", "text": text})];
        content.extend(calls.iter().map(
            |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        ));
        json!({
            "id": "msg_01AbC",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": "tool_use",
            "stop_sequence": null,
            "usage": {"input_tokens": 300, "output_tokens": 40,
                      "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        })
    }

    /// A text answer.
    pub fn answer(text: &str) -> Value {
        json!({
            "id": "msg_01DeF",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": {"input_tokens": 350, "output_tokens": 15}
        })
    }

    /// An error body.
    pub fn error(kind: &str, message: &str) -> Value {
        json!({"type": "error", "error": {"type": kind, "message": message}})
    }
}

/// Realistic Responses bodies.
pub mod responses {
    use serde_json::{Value, json};

    /// A response with a reasoning item and these `function_call` items: `(call_id, name,
    /// arguments as sent)`.
    pub fn function_calls(calls: &[(&str, &str, &str)]) -> Value {
        let mut output = vec![json!({"type": "reasoning", "id": "rs_01", "summary": []})];
        output.extend(
            calls
                .iter()
                .enumerate()
                .map(|(i, (call_id, name, arguments))| {
                    json!({"type": "function_call", "id": format!("fc_0{i}"), "call_id": call_id,
                   "name": name, "arguments": arguments, "status": "completed"})
                }),
        );
        json!({
            "id": "resp_abc123",
            "object": "response",
            "created_at": 1_764_000_000,
            "status": "completed",
            "incomplete_details": null,
            "model": "test-model",
            "output": output,
            "usage": {"input_tokens": 150, "input_tokens_details": {"cached_tokens": 32},
                      "output_tokens": 25, "output_tokens_details": {"reasoning_tokens": 8},
                      "total_tokens": 175}
        })
    }

    /// A text answer.
    pub fn answer(text: &str) -> Value {
        json!({
            "id": "resp_def456",
            "object": "response",
            "created_at": 1_764_000_001,
            "status": "completed",
            "incomplete_details": null,
            "model": "test-model",
            "output": [{"type": "message", "id": "msg_01", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": 200, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 210}
        })
    }
}
