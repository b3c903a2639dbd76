//! Runs as conversations. Each model call the proxy sees is put in a run: a request whose
//! conversation extends an open run's last request continues it (so does a Responses request
//! whose `previous_response_id` one of the run's responses had, and a request equal to the run's
//! last one, which is a retry or a resample), a request with `x-looptrace-run: ID` goes to that
//! run, anything else starts a new run. Each call is written as trace events as it completes:
//! the tool results the request carries as `observation`s, the response as `model_action`s (full
//! capture: request body and hash, raw response, stream chunking), a failed call as a
//! `model_retry`. A run ends `finished` when its last response had no tool call and nothing more
//! came before the proxy stopped or the run went idle; `internal_error` when its last call
//! failed; otherwise it stays `incomplete` (no ending event).

use std::time::{Duration, Instant};

use serde_json::Value;

use super::api;
use super::secrets::Secrets;
use crate::model::live::http::{HttpReply, classify_reply};
use crate::model::live::{Api, ParsedTurn};
use crate::model::{ProviderError, ProviderErrorKind, TurnItem, Usage};
use crate::run::{Action, ExitReason, unique_token};
use crate::trace::{
    Capture, Event, ModelAction, ModelCall, ModelFeedback, ModelRef, ModelRetry, Observation,
    RunFinished, RunStarted, SCHEMA, Summarizer, TraceWriter,
};

/// A request, as the run tracker needs it.
pub struct Call<'a> {
    /// The wire format.
    pub api: Api,
    /// The parsed body.
    pub body: &'a Value,
    /// The body in canonical JSON (what `request_hash` hashes).
    pub canonical: &'a str,
    /// `x-looptrace-run`, when sent.
    pub run_header: Option<&'a str>,
    /// The client's `User-Agent`: the agent that ran.
    pub agent: Option<&'a str>,
    /// Who answers: the upstream's host and port, or `replay`.
    pub provider: &'a str,
    /// The request target, for messages.
    pub target: &'a str,
}

/// A call in flight: which run and which of its calls it is.
#[derive(Clone, Debug)]
pub struct Ticket {
    /// The run's id.
    pub run_id: String,
    /// The request hash, as written.
    pub request_hash: String,
    started: Instant,
    canonical: String,
    target: String,
    /// Whether the call already stopped counting as in flight ([`Runs::release`]).
    released: std::cell::Cell<bool>,
}

/// How a call ended.
pub enum Outcome {
    /// An HTTP answer (from the upstream or the recording). `chunks` is the streamed chunking.
    Answered {
        /// The status.
        status: u16,
        /// The body, whole.
        body: String,
        /// Each piece's byte length as it came, for a streamed body.
        chunks: Option<Vec<u64>>,
    },
    /// No whole answer: the upstream failed or was cut, the client went away, or the proxy
    /// stopped. `kind` is a failure kind (`timeout`, `connection_failed`, `client_disconnected`,
    /// `stopped`), `partial` what came before.
    Unanswered {
        /// What went wrong.
        kind: &'static str,
        /// Said for people.
        message: String,
        /// The body so far.
        partial: String,
        /// Its chunking so far.
        chunks: Option<Vec<u64>>,
        /// Whether the client went away (the run is then left incomplete, not failed).
        client_gone: bool,
    },
    /// No recorded call matched (replay).
    Miss {
        /// The message the client got.
        message: String,
    },
}

/// Open runs kept before the one idle longest is ended.
pub const MAX_OPEN: usize = 4096;

/// A conversation element's hash, from its canonical JSON (std's SipHash with fixed keys: the
/// same in every process, and collisions between two messages of one run are not a concern).
fn element_hash(element: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    crate::model::live::canonical_json(element).hash(&mut hasher);
    hasher.finish()
}

/// What the next replayed call of a run is: a recorded run and the index of its next call.
pub type Cursor = (usize, usize);

struct OpenRun {
    id: String,
    api: Api,
    started: Instant,
    last_active: Instant,
    turns: u32,
    attempts: u32,
    /// A hash of each element of the last request's conversation: enough to tell whether a
    /// request extends it, in 8 bytes a message.
    conversation: Vec<u64>,
    last_hash: String,
    response_ids: Vec<String>,
    pending: Vec<(String, String)>,
    called_tools: bool,
    /// The last call's failure: the kind a run ending on it records, and the message.
    failure: Option<(String, String)>,
    client_gone: bool,
    in_flight: u32,
    usage: Option<Usage>,
    cursor: Option<Cursor>,
}

/// Every call of a proxy started for one run (an evaluation's agent task) goes to that run,
/// whatever its conversation; its `run_started` names the task.
#[derive(Clone, Debug)]
pub struct FixedRun {
    /// The run's id.
    pub run_id: String,
    /// The task's prompt, recorded as the run's `task`.
    pub task: String,
    /// The suite task the run is an attempt at.
    pub task_id: Option<String>,
}

/// Sees every event as it is written (keys already redacted).
pub type EventTap = Box<dyn FnMut(&Event) + Send>;

/// How a run ends by the rule of [`Runs`], judged without writing it.
#[derive(Clone, Debug, PartialEq)]
pub enum Ending {
    /// Its last call was answered with no tool call.
    Finished,
    /// Its last call failed: the failure's kind and message.
    Failed {
        /// The failure kind (`replay_miss`, `rate_limited`, ...).
        kind: String,
        /// Said for people.
        message: String,
    },
    /// Neither: tool calls left unanswered, a client gone mid-answer, or no call at all.
    Open,
}

/// A run taken out of the tracker unended, for its owner to end ([`Runs::detach`]).
#[derive(Clone, Debug)]
pub struct Detached {
    /// How the proxy's rule would end it.
    pub ending: Ending,
    /// Answered turns.
    pub turns: u32,
    /// Its calls' usage, summed.
    pub usage: Option<Usage>,
    /// From its first request to its last answer.
    pub duration_ms: f64,
}

/// The open runs and the trace they are written to.
pub struct Runs {
    open: Vec<OpenRun>,
    sink: Option<TraceWriter>,
    summarizer: Summarizer,
    /// Keys to keep out of the trace.
    pub secrets: Secrets,
    write_error: Option<String>,
    fixed: Option<FixedRun>,
    tap: Option<EventTap>,
}

impl Runs {
    /// Runs written to `sink` (none: tracked, not written), hashed with `summarizer`.
    pub fn new(sink: Option<TraceWriter>, summarizer: Summarizer, secrets: Secrets) -> Self {
        Runs {
            open: Vec::new(),
            sink,
            summarizer,
            secrets,
            write_error: None,
            fixed: None,
            tap: None,
        }
    }

    /// Puts every call in `fixed`'s run, and shows each written event to `tap`.
    pub fn for_one_run(mut self, fixed: FixedRun, tap: Option<EventTap>) -> Self {
        self.fixed = Some(fixed);
        self.tap = tap;
        self
    }

    /// The id every call goes to, for a proxy started for one run.
    pub fn fixed_run(&self) -> Option<&str> {
        self.fixed.as_ref().map(|fixed| fixed.run_id.as_str())
    }

    /// Takes the fixed run out unended (its calls in flight count as cut), and the trace writer
    /// back, for the owner to write the ending. `None` for the run when it had no call.
    pub fn detach(&mut self) -> (Option<Detached>, Option<TraceWriter>) {
        let id = self.fixed.as_ref().map(|fixed| fixed.run_id.clone());
        let position = self
            .open
            .iter()
            .position(|run| Some(&run.id) == id.as_ref());
        let detached = position.map(|index| {
            let mut run = self.open.remove(index);
            if run.in_flight > 0 {
                run.failure = None;
                run.client_gone = true;
            }
            Detached {
                ending: ending(&run),
                turns: run.turns,
                usage: run.usage,
                duration_ms: millis(run.last_active.duration_since(run.started)),
            }
        });
        (detached, self.sink.take())
    }

    /// The first failed trace write, if any.
    pub fn write_error(&self) -> Option<&str> {
        self.write_error.as_deref()
    }

    /// Puts a request in its run (writing `run_started` for a new one and the tool results it
    /// carries as observations) and marks the call in flight.
    pub fn begin(&mut self, call: &Call<'_>) -> Ticket {
        let elements: Vec<u64> = api::conversation(call.api, call.body)
            .into_iter()
            .map(element_hash)
            .collect();
        let request_hash = self.summarizer.digest(call.canonical.as_bytes());
        let index = match self.find(call, &elements, &request_hash) {
            Some(index) => index,
            None => self.start(call),
        };
        let known = {
            let run = &self.open[index];
            if elements.starts_with(&run.conversation) {
                run.conversation.len()
            } else {
                0
            }
        };
        let fresh: Vec<&Value> = api::conversation(call.api, call.body)
            .into_iter()
            .skip(known)
            .collect();
        let results = api::tool_results(call.api, &fresh);
        let run = &mut self.open[index];
        let mut events = Vec::new();
        for result in results {
            let Some(position) = run.pending.iter().position(|(id, _)| *id == result.call_id)
            else {
                continue;
            };
            let (call_id, tool_name) = run.pending.remove(position);
            let observation = Observation {
                tool_name: Some(tool_name),
                output: Some(self.summarizer.summarize(&result.content)),
                is_error: result.is_error,
                content: Some(result.content),
                call_id: Some(call_id),
                ..Observation::default()
            };
            events.push(Event::new(&run.id, run.turns.into(), observation));
        }
        run.conversation = elements;
        run.last_hash = request_hash.clone();
        run.in_flight += 1;
        run.last_active = Instant::now();
        let run_id = run.id.clone();
        for event in events {
            self.write(event);
        }
        Ticket {
            run_id,
            request_hash,
            started: Instant::now(),
            canonical: call.canonical.to_owned(),
            target: call.target.to_owned(),
            released: std::cell::Cell::new(false),
        }
    }

    /// Stops counting the ticket's call as in flight, before its answer reaches the client: a
    /// client may send its retry as soon as it has read a 429, and that retry must find the run
    /// with nothing in flight, or it would read as another client starting the same task.
    pub fn release(&mut self, ticket: &Ticket) {
        if ticket.released.replace(true) {
            return;
        }
        if let Some(run) = self.open.iter_mut().find(|run| run.id == ticket.run_id) {
            run.in_flight = run.in_flight.saturating_sub(1);
            run.last_active = Instant::now();
        }
    }

    fn find(&self, call: &Call<'_>, elements: &[u64], hash: &str) -> Option<usize> {
        if let Some(id) = call.run_header {
            return self.open.iter().position(|run| run.id == id);
        }
        if let Some(previous) = call
            .body
            .get("previous_response_id")
            .and_then(Value::as_str)
            && let Some(index) = self
                .open
                .iter()
                .position(|run| run.response_ids.iter().any(|id| id == previous))
        {
            return Some(index);
        }
        // The longest conversation this one extends; the latest run among equals.
        let extends = self
            .open
            .iter()
            .enumerate()
            .filter(|(_, run)| {
                run.api == call.api
                    && !run.conversation.is_empty()
                    && run.conversation.len() < elements.len()
                    && elements.starts_with(&run.conversation)
            })
            .max_by_key(|(index, run)| (run.conversation.len(), *index))
            .map(|(index, _)| index);
        extends.or_else(|| {
            // The same request again, when its run has nothing in flight: a retry or resample.
            // With a call in flight it is another client starting the same task.
            self.open
                .iter()
                .rposition(|run| run.api == call.api && run.last_hash == hash && run.in_flight == 0)
        })
    }

    fn start(&mut self, call: &Call<'_>) -> usize {
        if self.open.len() >= MAX_OPEN {
            // Memory stays bounded however many runs a long-lived proxy sees: the run idle
            // longest (nothing in flight) ends by the rule, as with --idle-end.
            if let Some(oldest) = self
                .open
                .iter()
                .enumerate()
                .filter(|(_, run)| run.in_flight == 0)
                .min_by_key(|(_, run)| run.last_active)
                .map(|(index, _)| index)
            {
                let run = self.open.remove(oldest);
                self.end(run);
            }
        }
        let id = call
            .run_header
            .map_or_else(|| format!("proxy-{}", unique_token()), str::to_owned);
        let task = match &self.fixed {
            Some(fixed) => fixed.task.clone(),
            None => api::task_text(call.api, call.body),
        };
        let started = RunStarted {
            task_id: self.fixed.as_ref().and_then(|fixed| fixed.task_id.clone()),
            schema: Some(SCHEMA.to_owned()),
            capture: Some(Capture::Full),
            hash: Some(self.summarizer.algorithm()),
            input_summary: Some(self.summarizer.summarize(&task)),
            task: Some(task),
            agent: call.agent.map(|agent| agent.chars().take(200).collect()),
            api: Some(call.api.as_str().to_owned()),
            model: Some(ModelRef {
                provider: Some(call.provider.to_owned()),
                name: call
                    .body
                    .get("model")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_owned(),
            }),
            tool_errors_recorded: (!api::records_tool_errors(call.api)).then_some(false),
            ..RunStarted::default()
        };
        self.write(Event::new(&id, 0, started));
        let now = Instant::now();
        self.open.push(OpenRun {
            id,
            api: call.api,
            started: now,
            last_active: now,
            turns: 0,
            attempts: 0,
            conversation: Vec::new(),
            last_hash: String::new(),
            response_ids: Vec::new(),
            pending: Vec::new(),
            called_tools: false,
            failure: None,
            client_gone: false,
            in_flight: 0,
            usage: None,
            cursor: None,
        });
        self.open.len() - 1
    }

    /// The replay cursor of a call's run.
    pub fn cursor(&self, ticket: &Ticket) -> Option<Cursor> {
        self.run(&ticket.run_id).and_then(|run| run.cursor)
    }

    /// Moves a call's run to the next replayed call.
    pub fn set_cursor(&mut self, ticket: &Ticket, cursor: Cursor) {
        if let Some(run) = self.open.iter_mut().find(|run| run.id == ticket.run_id) {
            run.cursor = Some(cursor);
        }
    }

    fn run(&self, id: &str) -> Option<&OpenRun> {
        self.open.iter().find(|run| run.id == id)
    }

    /// Writes how a call ended.
    pub fn complete(&mut self, ticket: Ticket, outcome: Outcome) {
        let Some(index) = self.open.iter().position(|run| run.id == ticket.run_id) else {
            return;
        };
        let duration = ticket.started.elapsed();
        let mut events = Vec::new();
        {
            let run = &mut self.open[index];
            if !ticket.released.get() {
                run.in_flight = run.in_flight.saturating_sub(1);
            }
            run.last_active = Instant::now();
            let step = u64::from(run.turns) + 1;
            let mut first = ModelRetry {
                duration_ms: Some(millis(duration)),
                call: ModelCall {
                    request_hash: Some(ticket.request_hash.clone()),
                    request_body: Some(ticket.canonical),
                    ..ModelCall::default()
                },
                ..ModelRetry::default()
            };
            match outcome {
                Outcome::Answered {
                    status,
                    body,
                    chunks,
                } if (200..300).contains(&status) => {
                    let parsed = parse_answer(run.api, &body, chunks.is_some());
                    first.call.raw_response = Some(body);
                    first.call.stream_chunks = chunks;
                    match parsed {
                        Ok((turn, response_id)) => {
                            run.response_ids.extend(response_id);
                            events = turn_events(run, first, turn, &self.summarizer);
                        }
                        Err(error) => {
                            first.http_status = Some(status);
                            let kind = error.kind.as_str();
                            events.push(failed(run, step, first, kind, kind, error.message));
                        }
                    }
                }
                Outcome::Answered {
                    status,
                    body,
                    chunks,
                } => {
                    let reply = HttpReply {
                        status,
                        retry_after: None,
                        location: None,
                        body: body.clone(),
                    };
                    let (kind, error) =
                        classify_reply(&reply, &ticket.target, self.secrets.redactor());
                    first.http_status = Some(status);
                    first.call.raw_response = Some(body);
                    first.call.stream_chunks = chunks;
                    let final_kind = error.kind.as_str();
                    events.push(failed(run, step, first, kind, final_kind, error.message));
                }
                Outcome::Unanswered {
                    kind,
                    message,
                    partial,
                    chunks,
                    client_gone,
                } => {
                    first.call.raw_response = Some(partial);
                    first.call.stream_chunks = chunks;
                    first.error = Some(message.clone());
                    let final_kind = ProviderErrorKind::ProviderUnavailable.as_str();
                    events.push(failed(run, step, first, kind, final_kind, message));
                    if client_gone {
                        run.failure = None;
                        run.client_gone = true;
                    }
                }
                Outcome::Miss { message } => {
                    first.http_status = Some(400);
                    first.error = Some(message.clone());
                    let miss = "replay_miss";
                    events.push(failed(run, step, first, miss, miss, message));
                }
            }
        }
        for event in events {
            self.write(event);
        }
    }

    /// Ends the runs idle for `idle` or more (nothing in flight) by the rule above.
    pub fn end_idle(&mut self, idle: Duration) {
        let now = Instant::now();
        let mut index = 0;
        while index < self.open.len() {
            let run = &self.open[index];
            if run.in_flight == 0 && now.duration_since(run.last_active) >= idle {
                let run = self.open.remove(index);
                self.end(run);
            } else {
                index += 1;
            }
        }
    }

    /// Ends every run: the proxy is stopping. Calls still in flight count as cut.
    pub fn end_all(&mut self) {
        for mut run in std::mem::take(&mut self.open) {
            if run.in_flight > 0 {
                run.failure = None;
                run.client_gone = true;
            }
            self.end(run);
        }
    }

    fn end(&mut self, run: OpenRun) {
        let mut e = match ending(&run) {
            Ending::Failed { kind, message } => RunFinished {
                error_kind: Some(kind),
                error: Some(message),
                ..RunFinished::new(ExitReason::InternalError)
            },
            Ending::Finished => RunFinished::new(ExitReason::Finished),
            Ending::Open => return,
        };
        e.steps_used = Some(run.turns);
        e.usage = run.usage;
        e.duration_ms = Some(millis(run.last_active.duration_since(run.started)));
        self.write(Event::new(&run.id, run.turns.into(), e));
    }

    /// Writes one event with `ts`, keys redacted.
    fn write(&mut self, mut event: Event) {
        event.ts = Some(crate::time::now_ts());
        if self.sink.is_none() && self.tap.is_none() {
            return;
        }
        let event = redacted(&self.secrets, event);
        if let Some(tap) = self.tap.as_mut() {
            tap(&event);
        }
        let Some(sink) = self.sink.as_mut() else {
            return;
        };
        if let Err(err) = sink.write_event(&event)
            && self.write_error.is_none()
        {
            self.write_error = Some(format!("failed to write the trace: {err}"));
        }
    }
}

/// How `run` ends by the rule: its last call failed, or was answered with no tool call.
fn ending(run: &OpenRun) -> Ending {
    match &run.failure {
        Some((kind, message)) => Ending::Failed {
            kind: kind.clone(),
            message: message.clone(),
        },
        None if !run.client_gone && run.turns > 0 && !run.called_tools => Ending::Finished,
        None => Ending::Open,
    }
}

/// The event with every known key replaced, in any field.
fn redacted(secrets: &Secrets, event: Event) -> Event {
    let Ok(line) = serde_json::to_string(&event) else {
        return event;
    };
    if !secrets.found_in(&line) {
        return event;
    }
    serde_json::from_str(&secrets.redact(&line)).unwrap_or(event)
}

/// A 2xx body read by the format's parser (a stream put back together first), and the
/// response's id.
fn parse_answer(
    api: Api,
    body: &str,
    streamed: bool,
) -> Result<(ParsedTurn, Option<String>), ProviderError> {
    let bad = |message: String| ProviderError::new(ProviderErrorKind::BadResponse, message);
    let value = if streamed {
        super::stream::assemble(api, body).map_err(bad)?
    } else {
        serde_json::from_str::<Value>(body)
            .map_err(|err| bad(format!("the response body is not JSON: {err}")))?
    };
    let id = value.get("id").and_then(Value::as_str).map(str::to_owned);
    Ok((api.wire().parse(&value)?, id))
}

/// A failed call's `model_retry` event (`kind` is the attempt's failure kind); the run
/// remembers the failure (`final_kind`, `message`) for its ending.
fn failed(
    run: &mut OpenRun,
    step: u64,
    mut e: ModelRetry,
    kind: &str,
    final_kind: &str,
    message: String,
) -> Event {
    run.attempts += 1;
    e.attempt = Some(run.attempts);
    // The client, not the proxy, chooses how long to wait before its retry.
    e.wait_ms = Some(0);
    e.error_kind = Some(kind.to_owned());
    if e.error.is_none() {
        e.error = Some(message.clone());
    }
    run.client_gone = false;
    run.failure = Some((final_kind.to_owned(), message));
    Event::new(&run.id, step, e)
}

/// A model turn's events: one per proposed action, the first carrying the call's record.
fn turn_events(
    run: &mut OpenRun,
    first: ModelRetry,
    turn: ParsedTurn,
    summarizer: &Summarizer,
) -> Vec<Event> {
    run.turns += 1;
    run.attempts = 0;
    run.failure = None;
    run.client_gone = false;
    run.pending.clear();
    run.called_tools = false;
    if let Some(usage) = turn.usage {
        run.usage = Some(add_usage(run.usage, usage));
    }
    let step = u64::from(run.turns);
    let mut record = Some(first);
    let mut events = Vec::new();
    let mut items = turn.items;
    if items.is_empty() {
        items.push(TurnItem::Invalid {
            call_id: None,
            error: crate::model::InvalidOutput::new(
                crate::model::InvalidOutputKind::MissingField,
                "the response has neither text nor a tool call",
            ),
        });
    }
    for item in items {
        // The first event of the turn carries what the call left behind.
        let (call, duration_ms) = match record.take() {
            Some(record) => (
                ModelCall {
                    usage: turn.usage,
                    finish_reason: turn.finish_reason.clone(),
                    ..record.call
                },
                record.duration_ms,
            ),
            None => (ModelCall::default(), None),
        };
        let e = match item {
            TurnItem::Action { call_id, action } => {
                let mut e = ModelAction {
                    action_type: Some(action.kind().to_owned()),
                    duration_ms,
                    call,
                    ..ModelAction::default()
                };
                match action {
                    Action::ToolCall(tool_call) => {
                        run.called_tools = true;
                        if let Some(id) = &call_id {
                            run.pending.push((id.clone(), tool_call.tool_name.clone()));
                        }
                        e.tool_name = Some(tool_call.tool_name);
                        e.argument_keys = Some(tool_call.arguments.keys().cloned().collect());
                        e.arguments = Some(tool_call.arguments);
                    }
                    Action::Finish(finish) => {
                        e.output = Some(summarizer.summarize(&finish.answer));
                        e.answer = Some(finish.answer);
                    }
                }
                e.call_id = call_id;
                Event::new(&run.id, step, e)
            }
            TurnItem::Invalid { call_id, error } => {
                run.called_tools |= call_id.is_some();
                let e = ModelFeedback {
                    output: Some(summarizer.summarize(&error.message)),
                    is_error: Some(true),
                    error_kind: Some(error.kind.as_str().to_owned()),
                    content: Some(error.message),
                    duration_ms,
                    call_id,
                    call,
                    ..ModelFeedback::default()
                };
                Event::new(&run.id, step, e)
            }
        };
        events.push(e);
    }
    events
}

fn add_usage(total: Option<Usage>, turn: Usage) -> Usage {
    let Some(total) = total else { return turn };
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    Usage {
        input_tokens: sum(total.input_tokens, turn.input_tokens),
        output_tokens: sum(total.output_tokens, turn.output_tokens),
        cache_read_tokens: sum(total.cache_read_tokens, turn.cache_read_tokens),
        cache_write_tokens: sum(total.cache_write_tokens, turn.cache_write_tokens),
        reasoning_tokens: sum(total.reasoning_tokens, turn.reasoning_tokens),
    }
}

fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e6).round() / 1e3
}
