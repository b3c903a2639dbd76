//! `looptrace proxy`: a model endpoint that records any agent's model calls as a trace and
//! answers them again offline. It speaks the three wire formats looptrace implements
//! (`openai-chat`, `openai-responses`, `anthropic-messages`), streamed or not; a recording
//! groups calls into runs by conversation ([`runs`]), and a replay matches each request by its
//! canonical hash against the recorded calls ([`recorded`]). An evaluation starts one in-process
//! for each agent task's attempt ([`one_run`]). `docs/proxy.md` describes it.

mod api;
mod http;
mod ignore;
mod one_run;
mod recorded;
mod runs;
mod secrets;
mod server;
mod stream;

pub use ignore::IgnoredPath;
pub use one_run::{RunProxy, RunProxyConfig, RunRecord, RunSource};
pub use recorded::{Closest, RecordedCall, RecordedRun, RecordingError, Recordings};
pub use runs::{Detached, Ending, EventTap, FixedRun};
pub use server::{
    DRAIN, MISS_TYPE, OnMiss, Proxy, ProxyConfig, ProxyError, ProxySummary, RUN_HEADER, Upstream,
};
pub use stream::{SseEvent, assemble, parse_events};
