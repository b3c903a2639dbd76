//! One attempt at an agent task: a proxy of its own on a free loopback port (forwarding to the
//! task's model server with the real key, or answering from an earlier run's recording), the
//! agent's command run in the task's working folder with the proxy's base URLs and a
//! placeholder key, its process group killed at its timeout, and the run judged from the
//! recording, the replay's misses and the command's end ([`super::ending`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::command::AgentCommand;
use super::ending::{CommandEnd, Verdict, judge};
use super::facts::{RunFacts, SharedFacts, tap};
use super::placeholders::Values;
use crate::model::live::LiveConfig;
use crate::process::{Ended, Finished, OutputMode, ProcessSpec, run_process};
use crate::proxy::{Detached, FixedRun, Recordings, RunProxy, RunProxyConfig, RunSource, Upstream};
use crate::trace::TraceWriter;

/// Bytes of the agent's output kept from each end for its log.
const KEEP_OUTPUT: usize = 256 * 1024;

/// What one attempt runs.
pub struct AttemptSpec<'a> {
    /// The agent's command.
    pub command: &'a AgentCommand,
    /// The run's id.
    pub run_id: String,
    /// The task's id.
    pub task_id: &'a str,
    /// The task's prompt.
    pub prompt: &'a str,
    /// The working folder, made already.
    pub workdir: &'a Path,
    /// The model: its API, server and name (the key aside).
    pub model: &'a LiveConfig,
    /// The key the proxy sends upstream.
    pub api_key: Option<String>,
    /// The recording to answer from instead of the server (`eval --replay-models`).
    pub replay: Option<Recordings>,
    /// Where the agent's output is written.
    pub log: Option<PathBuf>,
}

/// What the attempt left.
pub struct AttemptOutcome {
    /// How the run ended.
    pub verdict: Verdict,
    /// What its events showed.
    pub facts: RunFacts,
    /// The recorded run (`None`: no model call).
    pub run: Option<Detached>,
    /// The trace writer, for the ending.
    pub sink: Option<TraceWriter>,
    /// The first failed trace write.
    pub write_error: Option<String>,
}

/// Runs the attempt, its calls written to `sink` (if any) under its run id. `Err` is a proxy
/// that could not start (nothing was run).
pub fn run_attempt(
    spec: AttemptSpec<'_>,
    sink: Option<TraceWriter>,
) -> Result<AttemptOutcome, String> {
    let (origin, prefix) = split_base(&spec.model.base_url);
    let source = match spec.replay {
        Some(recordings) => RunSource::Replay(recordings),
        None => RunSource::Upstream {
            upstream: Upstream::parse(origin)?,
            api_key: spec.api_key,
        },
    };
    let facts: SharedFacts = Arc::default();
    let config = RunProxyConfig {
        source,
        run: FixedRun {
            run_id: spec.run_id.clone(),
            task: spec.prompt.to_owned(),
            task_id: Some(spec.task_id.to_owned()),
        },
        upstream_timeout: spec.model.timeout,
        ignore: spec.command.ignore.clone(),
    };
    let proxy = RunProxy::start(config, sink, Some(tap(&facts)))
        .map_err(|err| format!("failed to start the agent's proxy: {err}"))?;
    let proxy_url = proxy.origin();
    let values = Values {
        prompt: spec.prompt.to_owned(),
        model: spec.model.model.clone(),
        base_url: format!("{proxy_url}{prefix}"),
        proxy_url,
        task_id: spec.task_id.to_owned(),
        run_id: spec.run_id,
        workdir: spec.workdir.display().to_string(),
    };
    let argv = spec.command.argv(&values);
    let process = ProcessSpec {
        program: PathBuf::from(&argv[0]),
        args: argv[1..].to_vec(),
        dir: Some(spec.workdir.to_path_buf()),
        env: Some(spec.command.environment(spec.model.api, &values)),
        stdin: Vec::new(),
        timeout: spec.command.timeout,
        output: OutputMode::Merged,
        keep_bytes: KEEP_OUTPUT,
    };
    let ran = run_process(&process);
    let record = proxy.finish();
    let command_end = match &ran {
        Ok(finished) => command_end(finished, spec.command.timeout),
        Err(err) => CommandEnd::NotStarted(format!("`{}`: {err}", argv[0])),
    };
    if let (Some(log), Ok(finished)) = (&spec.log, &ran) {
        // The log is a convenience: failing to write it changes nothing about the run.
        let _ = write_log(log, finished);
    }
    let facts = facts.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let verdict = judge(
        record.run.as_ref().map(|run| &run.ending),
        facts.first_miss.as_deref(),
        &command_end,
    );
    Ok(AttemptOutcome {
        verdict,
        facts,
        run: record.run,
        sink: record.sink,
        write_error: record.write_error,
    })
}

/// A model server's base URL as its origin (what the proxy forwards to) and its path (what the
/// agent's base URL keeps after the proxy's origin): `https://api.openai.com/v1` is
/// `https://api.openai.com` and `/v1`.
fn split_base(base_url: &str) -> (&str, &str) {
    let base = base_url.trim_end_matches('/');
    let after_scheme = base.find("://").map_or(0, |at| at + 3);
    match base[after_scheme..].find('/') {
        Some(at) => base.split_at(after_scheme + at),
        None => (base, ""),
    }
}

fn command_end(finished: &Finished, timeout: Duration) -> CommandEnd {
    match finished.ended {
        Ended::TimedOut => CommandEnd::TimedOut {
            seconds: timeout.as_secs_f64(),
        },
        ended => match (ended.code(), ended.signal()) {
            (Some(code), _) => CommandEnd::Exited(code),
            (None, Some(signal)) => CommandEnd::Signaled(signal),
            (None, None) => CommandEnd::Exited(-1),
        },
    }
}

/// The agent's output (head and tail when it was long), created new beside the run's other logs.
fn write_log(path: &Path, finished: &Finished) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = crate::output::create_new_append(path)?;
    let kept = &finished.stdout;
    file.write_all(&kept.head)?;
    if kept.dropped > 0 {
        writeln!(file, "\n[... {} bytes left out ...]", kept.dropped)?;
    }
    file.write_all(&kept.tail)
}

#[cfg(test)]
mod tests {
    use super::split_base;

    #[test]
    fn a_base_url_splits_into_origin_and_path() {
        assert_eq!(
            split_base("https://api.openai.com/v1"),
            ("https://api.openai.com", "/v1")
        );
        assert_eq!(
            split_base("http://127.0.0.1:8080/"),
            ("http://127.0.0.1:8080", "")
        );
        assert_eq!(
            split_base("https://openrouter.ai/api/v1"),
            ("https://openrouter.ai", "/api/v1")
        );
    }
}
