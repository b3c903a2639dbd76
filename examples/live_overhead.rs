//! Looptrace's own time per live model call: building the request (canonical JSON and its hash),
//! parsing the response, and writing the turn's trace events, timed inside the process. The
//! server is an in-memory transport that answers at once, so nothing else is in the figure; a
//! run is ten calculator turns and a finish, so the conversation grows as it does in real runs.
//!
//! `cargo run --release --example live_overhead -- [RUNS] [DIR]`

use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use looptrace::agent::{RunEvent, RunObserver, RunOptions, run_agent_result};
use looptrace::model::live::http::{HttpReply, Transport, TransportError};
use looptrace::model::live::{Api, LiveConfig, LiveModel};
use looptrace::model::{CallRecord, LiveIdentity, Model, ModelError, TurnItem};
use looptrace::run::{Action, HistoryItem, Task};
use looptrace::tools::ToolRegistry;
use looptrace::trace::{Capture, RecorderOptions, Summarizer, TraceRecorder, TraceWriter};

const TURNS: usize = 10;

/// Answers ten tool calls, then a finish, in the Chat Completions format.
struct Canned {
    calls: usize,
}

impl Transport for Canned {
    fn post(
        &mut self,
        _url: &str,
        _headers: &[(&'static str, String)],
        _body: &str,
    ) -> Result<HttpReply, TransportError> {
        self.calls += 1;
        let message = if self.calls <= TURNS {
            format!(
                r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"call_{}","type":"function","function":{{"name":"calculator","arguments":"{{\"left\": {}, \"operation\": \"multiply\", \"right\": 7}}"}}}}]}}"#,
                self.calls, self.calls
            )
        } else {
            r#"{"role":"assistant","content":"done: the products are computed."}"#.to_owned()
        };
        let body = format!(
            r#"{{"id":"chatcmpl-1","object":"chat.completion","created":1764000000,"model":"m","choices":[{{"index":0,"message":{message},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":{},"completion_tokens":20,"total_tokens":0}}}}"#,
            200 + 40 * self.calls
        );
        Ok(HttpReply {
            status: 200,
            retry_after: None,
            location: None,
            body,
        })
    }
}

/// Times each model turn.
struct Timed<'s> {
    inner: LiveModel,
    samples: &'s mut Vec<Duration>,
}

impl Model for Timed<'_> {
    fn next_action(&mut self, task: &Task, history: &[HistoryItem]) -> Result<Action, ModelError> {
        self.inner.next_action(task, history)
    }

    fn next_turn(
        &mut self,
        task: &Task,
        history: &[HistoryItem],
    ) -> Result<Vec<TurnItem>, ModelError> {
        let started = Instant::now();
        let turn = self.inner.next_turn(task, history);
        self.samples.push(started.elapsed());
        turn
    }

    fn take_call_record(&mut self) -> CallRecord {
        self.inner.take_call_record()
    }

    fn live_identity(&self) -> Option<LiveIdentity> {
        self.inner.live_identity()
    }
}

/// Times the trace writes of model events, added to the turn they belong to.
struct TimedRecorder<'s> {
    inner: TraceRecorder<TraceWriter>,
    samples: &'s mut Vec<Duration>,
}

impl RunObserver for TimedRecorder<'_> {
    fn on_event(&mut self, event: &RunEvent<'_>) -> io::Result<()> {
        let started = Instant::now();
        self.inner.on_event(event)?;
        if matches!(event, RunEvent::ModelAction { .. }) {
            self.samples.push(started.elapsed());
        }
        Ok(())
    }
}

fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(2000);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "bench/out".to_owned()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("live_overhead.jsonl");
    let _ = std::fs::remove_file(&path);
    let tools = ToolRegistry::builtin();
    let specs: Vec<_> = tools.specs().into_iter().cloned().collect();
    let task = Task::new("multiply each of 1..10 by 7, then say done");
    let mut model_times = Vec::new();
    let mut write_times = Vec::new();
    for run in 0..runs {
        let config = LiveConfig::new(Api::OpenAiChat, "http://127.0.0.1:1/v1", "m");
        let inner = LiveModel::with_transport(config, specs.clone(), Box::new(Canned { calls: 0 }))
            .with_summarizer(Summarizer::sha256());
        let mut model = Timed {
            inner,
            samples: &mut model_times,
        };
        let options = RecorderOptions {
            capture: Capture::Full,
            summarizer: Summarizer::sha256(),
            ..RecorderOptions::default()
        };
        let writer = TraceWriter::append(&path, false)?;
        let mut recorder = TimedRecorder {
            inner: TraceRecorder::new(format!("run-{run}"), options, writer),
            samples: &mut write_times,
        };
        let options = RunOptions {
            max_steps: TURNS as u32 + 1,
        };
        run_agent_result(&task, &mut model, &tools, options, &mut recorder)
            .map_err(io::Error::other)?;
    }
    assert_eq!(model_times.len(), write_times.len());
    let mut per_call: Vec<Duration> = model_times
        .iter()
        .zip(&write_times)
        .map(|(model, write)| *model + *write)
        .collect();
    per_call.sort_unstable();
    let at = |q: f64| per_call[((per_call.len() - 1) as f64 * q) as usize];
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{} model calls ({runs} runs of {} turns, full capture): looptrace's own time per call \
         median {:.1} µs, p90 {:.1} µs, p99 {:.1} µs",
        per_call.len(),
        TURNS + 1,
        micros(at(0.5)),
        micros(at(0.9)),
        micros(at(0.99)),
    );
    Ok(())
}
