//! A proxy started in-process for one run: an evaluation's agent task gets its own listener on
//! a free loopback port, every call it makes goes to the task's run (whatever its
//! conversation), written to the trace writer it is given, and when the agent is done the run
//! comes back unended with the writer, for the evaluation to end with what only it knows (the
//! agent's exit status, its timeout, the scores). No signal handler is installed: the caller
//! owns the process's signals.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use super::ignore::IgnoredPath;
use super::recorded::Recordings;
use super::runs::{Detached, EventTap, FixedRun};
use super::server::{OnMiss, Proxy, ProxyConfig, ProxyError, ProxySummary, Shared, Upstream, lock};
use crate::trace::TraceWriter;

/// Where one run's calls are answered from.
pub enum RunSource {
    /// Forwarded to this upstream, with this key (else the client's) sent upstream.
    Upstream {
        /// The model server.
        upstream: Upstream,
        /// The key sent upstream instead of the client's placeholder.
        api_key: Option<String>,
    },
    /// Answered from these recordings; a request none matches gets the replay-miss 400.
    Replay(Recordings),
}

/// What a run proxy is started with.
pub struct RunProxyConfig {
    /// Where calls are answered from.
    pub source: RunSource,
    /// The run every call goes to, and what its `run_started` names.
    pub run: FixedRun,
    /// How long the upstream may stay silent.
    pub upstream_timeout: Duration,
    /// Request parts a replay does not match by.
    pub ignore: Vec<IgnoredPath>,
}

/// A proxy serving one run on its own loopback port, on a thread of its own.
pub struct RunProxy {
    address: SocketAddr,
    stop: Arc<std::sync::atomic::AtomicBool>,
    serving: JoinHandle<Arc<Shared>>,
}

/// What the run proxy did, once stopped.
pub struct RunRecord {
    /// The run as the proxy left it (`None`: the agent made no model call).
    pub run: Option<Detached>,
    /// The trace writer, for the ending.
    pub sink: Option<TraceWriter>,
    /// Calls answered, replayed and missed.
    pub summary: ProxySummary,
    /// The first failed trace write, if any.
    pub write_error: Option<String>,
}

impl RunProxy {
    /// Binds `127.0.0.1:0` and serves; `tap` sees every event written to `sink` (also when
    /// there is none).
    pub fn start(
        config: RunProxyConfig,
        sink: Option<TraceWriter>,
        tap: Option<EventTap>,
    ) -> Result<RunProxy, ProxyError> {
        let (upstream, api_key, replay) = match config.source {
            RunSource::Upstream { upstream, api_key } => (Some(upstream), api_key, None),
            RunSource::Replay(recordings) => (None, None, Some(recordings)),
        };
        let proxy_config = ProxyConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            api: None,
            upstream,
            record: None,
            replay,
            on_miss: OnMiss::Error,
            api_key,
            idle_end: None,
            upstream_timeout: config.upstream_timeout,
            ignore: config.ignore,
        };
        let fixed = config.run;
        let proxy = Proxy::bind_with(proxy_config, sink, move |runs| runs.for_one_run(fixed, tap))?;
        let address = proxy.local_addr().map_err(|source| ProxyError::Listen {
            address: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            source,
        })?;
        let stop = proxy.stop_flag();
        let serving = std::thread::spawn(move || proxy.accept_until_stopped());
        Ok(RunProxy {
            address,
            stop,
            serving,
        })
    }

    /// `http://127.0.0.1:PORT`: the origin clients add their API's path to.
    pub fn origin(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Stops serving (calls in flight get up to [`super::DRAIN`]) and hands the run back.
    pub fn finish(self) -> RunRecord {
        self.stop.store(true, Ordering::SeqCst);
        // The accept loop sees the flag with its next connection: this one.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        let Ok(shared) = self.serving.join() else {
            return RunRecord {
                run: None,
                sink: None,
                summary: ProxySummary::default(),
                write_error: Some("the proxy's thread panicked".to_owned()),
            };
        };
        let mut state = lock(&shared.state);
        let write_error = state.runs.write_error().map(str::to_owned);
        let (run, sink) = state.runs.detach();
        RunRecord {
            run,
            sink,
            summary: state.summary,
            write_error,
        }
    }
}
