//! The proxy's server: accept connections on one address, one thread per connection, each
//! request either forwarded to the upstream (its answer passed back as it comes, server-sent
//! events chunk by chunk) or answered from the recording, and written to the trace as it
//! completes. SIGINT/SIGTERM stop accepting, let calls in flight finish (up to [`DRAIN`]), end
//! the open runs and return.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::api::{self, api_of_path};
use super::http::{self, Connection, ReadError, Request};
use super::ignore::{IgnoredPath, matching_text};
use super::recorded::{RecordedCall, RecordingError, Recordings};
use super::runs::{Call, Outcome, Runs, Ticket};
use super::secrets::{CREDENTIAL_HEADERS, Secrets};
use crate::model::live::{Api, canonical_json};
use crate::trace::{Summarizer, TraceWriter, sha256_tagged};

/// How long calls in flight may take to finish once the proxy is told to stop.
pub const DRAIN: Duration = Duration::from_secs(10);
/// The header that puts a request in a named run.
pub const RUN_HEADER: &str = "x-looptrace-run";
/// The error type of an answer to a request no recorded call matches.
pub const MISS_TYPE: &str = "looptrace_replay_miss";

/// What a replaying proxy does with a request no recorded call matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnMiss {
    /// Answer HTTP 400 with type `looptrace_replay_miss`.
    Error,
    /// Forward it to the upstream and record it.
    Upstream,
}

/// Where requests go: an origin, or an origin and a path prefix, without a trailing slash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    base: String,
    authority: String,
}

impl Upstream {
    /// Reads `http[s]://HOST[:PORT][/PREFIX]`: no credentials, query or fragment.
    pub fn parse(url: &str) -> Result<Upstream, String> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(format!(
                "the upstream `{url}` is not an http:// or https:// URL"
            ));
        };
        if scheme != "http" && scheme != "https" {
            return Err(format!(
                "the upstream `{url}` is not an http:// or https:// URL"
            ));
        }
        if rest.contains(['?', '#']) {
            return Err(format!(
                "the upstream `{url}` has a query or fragment; give an origin and optional path prefix"
            ));
        }
        let authority = rest.split('/').next().unwrap_or("");
        if authority.contains('@') {
            return Err(
                "the upstream URL holds credentials; send the key in the client's header or \
                 name its variable with --api-key-env"
                    .to_owned(),
            );
        }
        if authority.is_empty() {
            return Err(format!("the upstream `{url}` has no host"));
        }
        Ok(Upstream {
            base: url.trim_end_matches('/').to_owned(),
            authority: authority.to_owned(),
        })
    }

    /// The host and port, as runs record the provider.
    pub fn authority(&self) -> &str {
        &self.authority
    }
}

/// Everything the proxy runs with, checked.
pub struct ProxyConfig {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// The wire format of every request, or `None` to tell it by path.
    pub api: Option<Api>,
    /// Where to forward requests (recording, or replay misses with [`OnMiss::Upstream`]).
    pub upstream: Option<Upstream>,
    /// The trace to append the calls to.
    pub record: Option<PathBuf>,
    /// The recordings to answer from.
    pub replay: Option<Recordings>,
    /// What a replay miss does.
    pub on_miss: OnMiss,
    /// A key to send upstream instead of the client's.
    pub api_key: Option<String>,
    /// End a run after this long without a call.
    pub idle_end: Option<Duration>,
    /// How long the upstream may stay silent (connect, answer, between chunks).
    pub upstream_timeout: Duration,
    /// Request parts a replay does not match by.
    pub ignore: Vec<IgnoredPath>,
}

/// Why the proxy could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The address is taken or not ours.
    #[error("failed to listen on {address}: {source}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The output trace could not be opened.
    #[error("failed to open `{path}` to record to: {source}")]
    Record {
        /// The trace.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The recordings cannot be replayed.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// Signal handlers could not be installed.
    #[error("failed to watch for SIGINT/SIGTERM: {0}")]
    Signals(std::io::Error),
    /// The trace could not be written.
    #[error("{0}")]
    TraceWrite(String),
}

/// What the proxy did, for the line it prints when it stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxySummary {
    /// Model calls answered (forwarded or replayed).
    pub calls: u64,
    /// Of which answered from the recording.
    pub replayed: u64,
    /// Requests no recorded call matched.
    pub misses: u64,
}

pub(super) struct State {
    pub(super) runs: Runs,
    recordings: Option<Recordings>,
    pub(super) summary: ProxySummary,
}

pub(super) struct Shared {
    config: ProxyConfig,
    pub(super) state: Mutex<State>,
    agent: ureq::Agent,
    pub(super) stop: Arc<AtomicBool>,
    /// Whether calls are answered from recordings.
    replaying: bool,
}

/// A bound proxy, ready to serve.
pub struct Proxy {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Binds the address and opens the output trace; nothing is served yet.
    pub fn bind(config: ProxyConfig) -> Result<Proxy, ProxyError> {
        let sink = match &config.record {
            Some(path) => {
                Some(
                    TraceWriter::append(path, false).map_err(|source| ProxyError::Record {
                        path: path.display().to_string(),
                        source,
                    })?,
                )
            }
            None => None,
        };
        Proxy::bind_with(config, sink, |runs| runs)
    }

    /// Binds the address, to write to `sink` with the run tracker `setup` makes of the plain one.
    pub(super) fn bind_with(
        mut config: ProxyConfig,
        sink: Option<TraceWriter>,
        setup: impl FnOnce(Runs) -> Runs,
    ) -> Result<Proxy, ProxyError> {
        let listener = TcpListener::bind(config.listen).map_err(|source| ProxyError::Listen {
            address: config.listen,
            source,
        })?;
        let mut secrets = Secrets::default();
        if let Some(key) = &config.api_key {
            secrets.add(key);
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(config.upstream_timeout.min(Duration::from_secs(30))))
            .timeout_recv_response(Some(config.upstream_timeout))
            .timeout_per_read(Some(config.upstream_timeout))
            .build()
            .into();
        let recordings = config.replay.take();
        let replaying = recordings.is_some();
        let state = State {
            runs: setup(Runs::new(sink, Summarizer::from_env(), secrets)),
            recordings,
            summary: ProxySummary::default(),
        };
        Ok(Proxy {
            listener,
            shared: Arc::new(Shared {
                config,
                state: Mutex::new(state),
                agent,
                stop: Arc::default(),
                replaying,
            }),
        })
    }

    /// The address it listens on (the port chosen when 0 was asked).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// A flag that stops the proxy when raised (SIGINT/SIGTERM raise it in [`Proxy::serve`]).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.shared.stop)
    }

    /// Serves until SIGINT, SIGTERM or the stop flag; then ends the runs and returns.
    pub fn serve(self) -> Result<ProxySummary, ProxyError> {
        let address = self.local_addr().map_err(ProxyError::Signals)?;
        watch_signals(Arc::clone(&self.shared.stop), address)?;
        let waker = spawn_waker(Arc::clone(&self.shared.stop), address);
        let shared = self.accept_until_stopped();
        let _ = waker.join();
        let mut state = lock(&shared.state);
        state.runs.end_all();
        if let Some(error) = state.runs.write_error() {
            return Err(ProxyError::TraceWrite(error.to_owned()));
        }
        Ok(state.summary)
    }

    /// Serves until the stop flag is raised and the accept is woken (a connection to the
    /// proxy's own address), then lets the calls in flight finish (up to [`DRAIN`]); the runs are
    /// left open.
    pub(super) fn accept_until_stopped(self) -> Arc<Shared> {
        let idle = self
            .shared
            .config
            .idle_end
            .map(|idle| spawn_idle_ender(Arc::clone(&self.shared), idle));
        let mut connections: Vec<JoinHandle<()>> = Vec::new();
        for stream in self.listener.incoming() {
            if self.shared.stop.load(Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = stream else { continue };
            connections.retain(|handle| !handle.is_finished());
            let shared = Arc::clone(&self.shared);
            connections.push(std::thread::spawn(move || {
                serve_connection(&shared, stream)
            }));
        }
        drop(self.listener);
        let deadline = Instant::now() + DRAIN;
        while connections.iter().any(|h| !h.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(idle) = idle {
            let _ = idle.join();
        }
        self.shared
    }
}

/// SIGINT and SIGTERM raise `stop`; the accept loop is then woken by a connection to itself.
fn watch_signals(stop: Arc<AtomicBool>, _address: SocketAddr) -> Result<(), ProxyError> {
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop)).map_err(ProxyError::Signals)?;
    }
    Ok(())
}

/// Wakes the blocking accept once `stop` is raised.
fn spawn_waker(stop: Arc<AtomicBool>, address: SocketAddr) -> JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = TcpStream::connect_timeout(&address, Duration::from_secs(1));
    })
}

fn spawn_idle_ender(shared: Arc<Shared>, idle: Duration) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let tick = (idle / 4).clamp(Duration::from_millis(20), Duration::from_secs(1));
        while !shared.stop.load(Ordering::SeqCst) {
            std::thread::sleep(tick);
            lock(&shared.state).runs.end_idle(idle);
        }
    })
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn serve_connection(shared: &Shared, stream: TcpStream) {
    let Ok(mut connection) = Connection::new(stream, Arc::clone(&shared.stop)) else {
        return;
    };
    loop {
        match connection.next_request() {
            Ok(Some(request)) => {
                let close = request.close;
                let keep = handle(shared, &mut connection, request);
                if !keep || close || shared.stop.load(Ordering::SeqCst) {
                    return;
                }
            }
            Ok(None) | Err(ReadError::Broken) => return,
            Err(ReadError::Malformed(message)) => {
                let body = api::error_body(None, "invalid_request_error", &message);
                let _ = respond_json(connection.stream(), 400, &body, &[]);
                return;
            }
        }
    }
}

/// Answers one request; false when the connection must close (a stream was cut).
fn handle(shared: &Shared, connection: &mut Connection, request: Request) -> bool {
    let path = request.path().to_owned();
    let api = shared.config.api.or_else(|| api_of_path(&path));
    let fixed_run = {
        let mut state = lock(&shared.state);
        for name in CREDENTIAL_HEADERS {
            if let Some(value) = request.header(name) {
                state.runs.secrets.add(value);
            }
        }
        state.runs.fixed_run().map(str::to_owned)
    };
    let Some(api) = api.filter(|_| request.method == "POST") else {
        return other_request(shared, connection, &request, &path);
    };
    let body: Value = match serde_json::from_slice(&request.body) {
        Ok(body @ Value::Object(_)) => body,
        Ok(_) | Err(_) => {
            let message = "the request body is not a JSON object";
            let body = api::error_body(Some(api), "invalid_request_error", message);
            return respond_json(connection.stream(), 400, &body, &[]).is_ok();
        }
    };
    let canonical = canonical_json(&body);
    let provider = shared
        .config
        .upstream
        .as_ref()
        .filter(|_| !shared.replaying)
        .map_or("replay", Upstream::authority)
        .to_owned();
    let call = Call {
        api,
        body: &body,
        canonical: &canonical,
        run_header: fixed_run.as_deref().or(request.header(RUN_HEADER)),
        agent: request.header("user-agent"),
        provider: &provider,
        target: &request.target,
    };
    let (ticket, answer) = {
        let mut state = lock(&shared.state);
        let ticket = state.runs.begin(&call);
        let answer = if state.recordings.is_some() {
            let matching = matching_text(&body, &shared.config.ignore);
            Some(find_recorded(
                &mut state,
                &ticket,
                &matching,
                call.run_header,
            ))
        } else {
            None
        };
        (ticket, answer)
    };
    let outcome = match answer {
        None => forward(shared, connection, &request, Some(api), Some(&ticket)),
        Some(Ok((recorded, run_id))) => {
            lock(&shared.state).summary.replayed += 1;
            serve_recorded(connection.stream(), &recorded, &run_id)
        }
        Some(Err(message)) => {
            let message = lock(&shared.state)
                .runs
                .secrets
                .redact(&message)
                .into_owned();
            eprintln!(
                "replay miss (run {}): {}",
                ticket.run_id,
                crate::text::escape(&message)
            );
            lock(&shared.state).summary.misses += 1;
            if shared.config.on_miss == OnMiss::Upstream && shared.config.upstream.is_some() {
                forward(shared, connection, &request, Some(api), Some(&ticket))
            } else {
                let body = api::error_body(Some(api), MISS_TYPE, &message);
                let _ = respond_json(connection.stream(), 400, &body, &[]);
                Outcome::Miss { message }
            }
        }
    };
    let keep = !matches!(outcome, Outcome::Unanswered { .. });
    complete(shared, ticket, outcome);
    keep
}

fn complete(shared: &Shared, ticket: Ticket, outcome: Outcome) {
    let mut state = lock(&shared.state);
    if matches!(outcome, Outcome::Answered { .. }) {
        state.summary.calls += 1;
    }
    state.runs.complete(ticket, outcome);
}

/// The recorded call that answers this request (`matching`: its canonical JSON without the
/// `--ignore`d parts), and the recorded run's id; or the miss message.
fn find_recorded(
    state: &mut State,
    ticket: &Ticket,
    matching: &str,
    run_header: Option<&str>,
) -> Result<(RecordedCall, String), String> {
    let hash = sha256_tagged(matching.as_bytes());
    let cursor = state.runs.cursor(ticket);
    let Some(recordings) = state.recordings.as_mut() else {
        return Err("nothing is recorded".to_owned());
    };
    let taken = match cursor {
        Some((run, next)) => recordings
            .call((run, next))
            .filter(|call| call.hash == hash)
            .map(|_| (run, next)),
        None => recordings.start(&hash, run_header),
    };
    match taken {
        Some((run, index)) => {
            let call = recordings.call((run, index)).cloned();
            let run_id = recordings
                .run((run, index))
                .map(|r| r.run_id.clone())
                .unwrap_or_default();
            state.runs.set_cursor(ticket, (run, index + 1));
            call.map(|call| (call, run_id))
                .ok_or_else(|| "the recording changed while replaying".to_owned())
        }
        None => {
            let why = match cursor {
                Some(cursor) if recordings.call(cursor).is_none() => format!(
                    "the recorded run `{}` has no call after its {}",
                    recordings.run(cursor).map_or("", |r| r.run_id.as_str()),
                    cursor.1
                ),
                _ => "no recorded call matches this request".to_owned(),
            };
            let hint = cursor.filter(|c| recordings.call(*c).is_some());
            Err(match recordings.closest(matching, hint) {
                Some(closest) => format!("{why}; {closest}"),
                None => why,
            })
        }
    }
}

/// Sends a recorded answer: streamed ones in their recorded pieces.
fn serve_recorded(out: &mut TcpStream, call: &RecordedCall, run_id: &str) -> Outcome {
    let mut headers = vec![("x-looptrace-replay".to_owned(), run_id.to_owned())];
    let bytes = call.response.as_bytes();
    let pieces = call
        .chunks
        .as_ref()
        .filter(|chunks| chunks.iter().sum::<u64>() == bytes.len() as u64);
    let sent = match pieces {
        Some(chunks) => {
            headers.push(("content-type".to_owned(), "text/event-stream".to_owned()));
            headers.push(("cache-control".to_owned(), "no-cache".to_owned()));
            let mut at = 0usize;
            let mut result = http::write_head(out, call.status, &headers, None);
            for length in chunks {
                let Ok(length) = usize::try_from(*length) else {
                    break;
                };
                if result.is_err() {
                    break;
                }
                result = http::write_chunk(out, &bytes[at..at + length]);
                at += length;
            }
            result.and_then(|()| http::end_chunks(out))
        }
        _ => {
            headers.push(("content-type".to_owned(), "application/json".to_owned()));
            http::write_response(out, call.status, &headers, bytes)
        }
    };
    match sent {
        Ok(()) => Outcome::Answered {
            status: call.status,
            body: call.response.clone(),
            chunks: call.chunks.clone(),
        },
        Err(err) => Outcome::Unanswered {
            kind: "client_disconnected",
            message: format!("the client went away: {err}"),
            partial: String::new(),
            chunks: None,
            client_gone: true,
        },
    }
}

/// Requests that are not model calls: `/v1/models` from the recording when replaying, anything
/// else forwarded unrecorded when there is an upstream.
fn other_request(
    shared: &Shared,
    connection: &mut Connection,
    request: &Request,
    path: &str,
) -> bool {
    if shared.config.upstream.is_some() && !(shared.replaying && path.ends_with("/models")) {
        let outcome = forward(shared, connection, request, None, None);
        return !matches!(outcome, Outcome::Unanswered { .. });
    }
    let anthropic = request.header("anthropic-version").is_some();
    if request.method == "GET" && path.trim_end_matches('/').ends_with("/models") {
        let names = lock(&shared.state)
            .recordings
            .as_ref()
            .map(Recordings::model_names)
            .unwrap_or_default();
        let body = if anthropic {
            let data: Vec<Value> = names
                .iter()
                .map(|name| json!({"type": "model", "id": name, "display_name": name, "created_at": "1970-01-01T00:00:00Z"}))
                .collect();
            json!({"data": data, "has_more": false, "first_id": names.first(), "last_id": names.last()})
        } else {
            let data: Vec<Value> = names
                .iter()
                .map(|name| json!({"id": name, "object": "model", "created": 0, "owned_by": "looptrace"}))
                .collect();
            json!({"object": "list", "data": data})
        };
        return respond_json(connection.stream(), 200, &body, &[]).is_ok();
    }
    let api = anthropic.then_some(Api::AnthropicMessages);
    let message = format!(
        "the proxy replays model calls only ({} {path} is not one)",
        request.method
    );
    let body = api::error_body(api, "not_found_error", &message);
    respond_json(connection.stream(), 404, &body, &[]).is_ok()
}

/// Headers not passed on: hop-by-hop ones, and those the proxy sets itself.
fn passed_on(name: &str) -> bool {
    !matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authorization"
            | "proxy-authenticate"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
            | "accept-encoding"
    ) && !name.starts_with("x-looptrace-")
}

/// Sends the request upstream and passes the answer back as it comes; a model call's outcome
/// (`api` given) is returned for the trace.
fn forward(
    shared: &Shared,
    connection: &mut Connection,
    request: &Request,
    api: Option<Api>,
    ticket: Option<&Ticket>,
) -> Outcome {
    let Some(upstream) = &shared.config.upstream else {
        return Outcome::Unanswered {
            kind: "connection_failed",
            message: "no upstream".to_owned(),
            partial: String::new(),
            chunks: None,
            client_gone: false,
        };
    };
    let url = format!("{}{}", upstream.base, request.target);
    let mut builder = ureq::http::Request::builder()
        .method(request.method.as_str())
        .uri(url.as_str());
    let own_key = shared.config.api_key.as_deref();
    for (name, value) in &request.headers {
        let credential = CREDENTIAL_HEADERS.contains(&name.as_str());
        if passed_on(name) && !(credential && own_key.is_some()) {
            builder = builder.header(name.as_str(), value.as_str());
        }
    }
    if let Some(key) = own_key {
        builder = match api {
            Some(Api::AnthropicMessages) => builder.header("x-api-key", key),
            _ if request.header("x-api-key").is_some() => builder.header("x-api-key", key),
            _ => builder.header("authorization", format!("Bearer {key}")),
        };
    }
    let sent = builder
        .body(request.body.clone())
        .map_err(|err| ureq::Error::BadUri(err.to_string()))
        .and_then(|built| shared.agent.run(built));
    let response = match sent {
        Ok(response) => response,
        Err(err) => {
            let kind = match &err {
                ureq::Error::Timeout(_) => "timeout",
                ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => "timeout",
                _ => "connection_failed",
            };
            let message = format!("the upstream could not be reached: {err}");
            return upstream_failed(shared, connection, api, kind, message, String::new());
        }
    };
    let status = response.status().as_u16();
    if (300..400).contains(&status) {
        let message = format!(
            "the upstream answered HTTP {status}, a redirect, which the proxy does not follow"
        );
        return upstream_failed(
            shared,
            connection,
            api,
            "redirected",
            message,
            String::new(),
        );
    }
    let mut headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter(|(name, _)| passed_on(name.as_str()))
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    let event_stream = headers.iter().any(|(name, value)| {
        name == "content-type" && value.to_ascii_lowercase().starts_with("text/event-stream")
    });
    let mut reader = response
        .into_body()
        .into_with_config()
        .limit(http::MAX_BODY as u64 * 4)
        .reader();
    if !event_stream {
        let mut body = Vec::new();
        if let Err(err) = reader.read_to_end(&mut body) {
            let message = format!("the upstream's answer was cut: {err}");
            let partial = String::from_utf8_lossy(&body).into_owned();
            return upstream_failed(
                shared,
                connection,
                api,
                "connection_failed",
                message,
                partial,
            );
        }
        if let Some(ticket) = ticket {
            lock(&shared.state).runs.release(ticket);
        }
        let client = http::write_response(connection.stream(), status, &headers, &body);
        // A whole answer the client did not take is still the upstream's answer: recorded.
        let _ = client;
        return Outcome::Answered {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
            chunks: None,
        };
    }
    headers.retain(|(name, _)| name != "content-length");
    let out = connection.stream();
    if let Err(err) = http::write_head(out, status, &headers, None) {
        return gone(err, String::new(), Some(Vec::new()));
    }
    let mut body = Vec::new();
    let mut chunks = Vec::new();
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                body.extend_from_slice(&buffer[..n]);
                chunks.push(n as u64);
                if let Err(err) = http::write_chunk(out, &buffer[..n]) {
                    let partial = String::from_utf8_lossy(&body).into_owned();
                    return gone(err, partial, Some(chunks));
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => {
                // The client's stream is cut too (no final chunk), so its SDK sees the failure.
                let kind = if err.kind() == std::io::ErrorKind::TimedOut {
                    "timeout"
                } else {
                    "connection_failed"
                };
                return Outcome::Unanswered {
                    kind,
                    message: format!("the upstream's stream was cut: {err}"),
                    partial: String::from_utf8_lossy(&body).into_owned(),
                    chunks: Some(chunks),
                    client_gone: false,
                };
            }
        }
    }
    if let Err(err) = http::end_chunks(out) {
        let partial = String::from_utf8_lossy(&body).into_owned();
        return gone(err, partial, Some(chunks));
    }
    Outcome::Answered {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
        chunks: Some(chunks),
    }
}

fn gone(err: std::io::Error, partial: String, chunks: Option<Vec<u64>>) -> Outcome {
    Outcome::Unanswered {
        kind: "client_disconnected",
        message: format!("the client went away mid-answer: {err}"),
        partial,
        chunks,
        client_gone: true,
    }
}

/// Answers 502 in the format's error shape when the upstream gave no usable answer.
fn upstream_failed(
    shared: &Shared,
    connection: &mut Connection,
    api: Option<Api>,
    kind: &'static str,
    message: String,
    partial: String,
) -> Outcome {
    let message = lock(&shared.state)
        .runs
        .secrets
        .redact(&message)
        .into_owned();
    eprintln!("upstream failure: {}", crate::text::escape(&message));
    let body = api::error_body(api, "upstream_failed", &message);
    let _ = respond_json(connection.stream(), 502, &body, &[]);
    Outcome::Unanswered {
        kind,
        message,
        partial,
        chunks: None,
        client_gone: false,
    }
}

fn respond_json(
    out: &mut impl Write,
    status: u16,
    body: &Value,
    extra: &[(String, String)],
) -> std::io::Result<()> {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    headers.extend_from_slice(extra);
    http::write_response(out, status, &headers, body.to_string().as_bytes())
}
