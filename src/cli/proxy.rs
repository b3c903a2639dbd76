//! `looptrace proxy`: record any agent's model calls through a local endpoint, or answer them
//! again from a recording. The arguments become a checked [`ProxyConfig`] (every path and URL
//! checked, nothing served yet); the library serves it until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::common::same_file;
use super::{CliError, CliResult, Outcome};
use looptrace::model::live::{Api, api_key_from_env};
use looptrace::proxy::{IgnoredPath, OnMiss, Proxy, ProxyConfig, ProxyError, Recordings, Upstream};

/// The address the proxy listens on unless `--listen` says.
const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

/// Arguments of `looptrace proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// The model server to forward to: an origin, or an origin and a path prefix; a request's
    /// path is appended to it.
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// Append every call, with full capture, to this trace.
    #[arg(long, value_name = "OUT")]
    pub record: Option<PathBuf>,
    /// Answer from these recordings instead of an upstream.
    #[arg(long, value_name = "TRACE", num_args = 1..)]
    pub replay: Vec<PathBuf>,
    /// When replaying, what a request no recorded call matches gets: an HTTP 400 of type
    /// `looptrace_replay_miss`, or the upstream's answer (recorded; needs --upstream and --record).
    #[arg(long, value_enum, default_value_t = OnMissArg::Error, requires = "replay")]
    pub on_miss: OnMissArg,
    /// The address to listen on; port 0 picks a free one. Only 127.0.0.1 unless given.
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: String,
    /// The wire format of every request, or `auto` to tell it by path.
    #[arg(long, value_enum, default_value_t = ApiArg::Auto)]
    pub api: ApiArg,
    /// Send the key in this environment variable upstream instead of the client's.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// End a run after this many seconds without a call (default: runs end when the proxy stops).
    #[arg(long, value_name = "SECONDS")]
    pub idle_end: Option<f64>,
    /// How long the upstream may stay silent: to connect, to answer, between streamed chunks.
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
    pub upstream_timeout: f64,
    /// When replaying, leave this part of every request out of the match (a JSON path such as
    /// `$.metadata.user_id`: a session id, a date); repeatable.
    #[arg(long, value_name = "PATH", requires = "replay")]
    pub ignore: Vec<String>,
}

/// `--on-miss`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnMissArg {
    /// Answer HTTP 400 `looptrace_replay_miss`.
    Error,
    /// Forward to the upstream and record.
    Upstream,
}

/// `--api`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ApiArg {
    /// By path: `/chat/completions`, `/responses`, `/messages`.
    Auto,
    /// Chat Completions.
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    AnthropicMessages,
}

/// Checks the arguments, serves, and prints what was done when stopped.
pub fn run(args: ProxyArgs) -> CliResult {
    let config = plan(args)?;
    let proxy = Proxy::bind(config).map_err(proxy_error)?;
    let address = proxy.local_addr()?;
    // The first line on stderr, always: clients and scripts wait for it.
    eprintln!("listening on http://{address}");
    let summary = proxy.serve().map_err(proxy_error)?;
    eprintln!(
        "proxy stopped: {} answered ({} replayed), {} missed",
        looptrace::plural(summary.calls, "call", "calls"),
        summary.replayed,
        looptrace::plural(summary.misses, "request", "requests"),
    );
    Ok(Outcome::Success)
}

fn proxy_error(error: ProxyError) -> CliError {
    match error {
        ProxyError::Signals(_) | ProxyError::TraceWrite(_) => CliError::internal(error),
        _ => CliError::input(error),
    }
}

/// The checked plan: every argument read, the recordings loaded, nothing served.
fn plan(args: ProxyArgs) -> Result<ProxyConfig, CliError> {
    let listen: SocketAddr = args.listen.parse().map_err(|_| {
        CliError::input(format!(
            "--listen `{}` is not an address and port such as 127.0.0.1:7878",
            args.listen
        ))
    })?;
    let upstream = args
        .upstream
        .as_deref()
        .map(Upstream::parse)
        .transpose()
        .map_err(CliError::input)?;
    let replaying = !args.replay.is_empty();
    match (&upstream, &args.record, replaying) {
        (None, _, false) => {
            return Err(CliError::input(
                "give --upstream URL --record OUT to record, or --replay TRACE to replay",
            ));
        }
        (Some(_), None, false) => {
            return Err(CliError::input(
                "--upstream needs --record OUT: the proxy is for recording (or give --replay)",
            ));
        }
        _ => {}
    }
    if args.on_miss == OnMissArg::Upstream && (upstream.is_none() || args.record.is_none()) {
        return Err(CliError::input(
            "--on-miss upstream needs --upstream URL and --record OUT, to fill in the calls it forwards",
        ));
    }
    if replaying && upstream.is_some() && args.on_miss == OnMissArg::Error {
        return Err(CliError::input(
            "--upstream with --replay is only used with --on-miss upstream",
        ));
    }
    if let Some(out) = &args.record
        && let Some(input) = args.replay.iter().find(|input| same_file(input, out))
    {
        return Err(CliError::input(format!(
            "--record `{}` is the recording being replayed (`{}`); record to another file",
            out.display(),
            input.display()
        )));
    }
    let seconds = |value: f64, flag: &str| {
        (value.is_finite() && value > 0.0)
            .then(|| Duration::from_secs_f64(value.min(86_400.0 * 365.0)))
            .ok_or_else(|| CliError::input(format!("{flag} must be a positive number of seconds")))
    };
    let idle_end = args
        .idle_end
        .map(|value| seconds(value, "--idle-end"))
        .transpose()?;
    let upstream_timeout = seconds(args.upstream_timeout, "--upstream-timeout")?;
    let api_key = api_key_from_env(args.api_key_env.as_deref()).map_err(CliError::input)?;
    let ignore = args
        .ignore
        .iter()
        .map(|path| IgnoredPath::parse(path))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::input)?;
    let replay = if replaying {
        Some(Recordings::load(&args.replay, &ignore).map_err(CliError::input)?)
    } else {
        None
    };
    Ok(ProxyConfig {
        listen,
        api: match args.api {
            ApiArg::Auto => None,
            ApiArg::OpenaiChat => Some(Api::OpenAiChat),
            ApiArg::OpenaiResponses => Some(Api::OpenAiResponses),
            ApiArg::AnthropicMessages => Some(Api::AnthropicMessages),
        },
        upstream,
        record: args.record,
        replay,
        on_miss: match args.on_miss {
            OnMissArg::Error => OnMiss::Error,
            OnMissArg::Upstream => OnMiss::Upstream,
        },
        api_key,
        idle_end,
        upstream_timeout,
        ignore,
    })
}
