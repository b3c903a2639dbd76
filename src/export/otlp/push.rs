//! OTLP/HTTP push: encoded runs are batched into `ExportTraceServiceRequest` bodies and POSTed to
//! a receiver as `application/x-protobuf`, uncompressed with `Content-Length` or gzip-compressed
//! on request; 429, 502, 503 and 504 answers, timeouts and refused connections are retried with
//! exponential backoff that honours `Retry-After`. Redirects are not followed: the headers are
//! secrets meant for the endpoint's host only.
//!
//! A run's request body is its own one-run `ExportTraceServiceRequest`; concatenating such bodies
//! is a valid request holding all their runs (repeated fields of concatenated protobuf messages
//! append), so a batch is the bytes of its runs one after the other.

use std::io::{Read, Write};
use std::time::Duration;

use flate2::Compression;
use flate2::write::GzEncoder;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use prost::Message;

use super::endpoint::PushConfig;
use crate::model::live::http::{backoff, excerpt, parse_retry_after};
use crate::secrets::Redactor;

/// A batch is sent once it holds this many spans (the OpenTelemetry SDKs' default batch size).
pub const MAX_BATCH_SPANS: u64 = 512;
/// ... or this many bytes of protobuf, whichever comes first.
pub const MAX_BATCH_BYTES: usize = 1 << 20;
/// Attempts per batch before giving up.
pub const MAX_ATTEMPTS: u32 = 5;
/// The longest wait between attempts, whatever `Retry-After` asks.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// What a pusher sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PushStats {
    /// Runs the receiver accepted.
    pub runs: u64,
    /// Spans in those runs.
    pub spans: u64,
    /// Requests that succeeded.
    pub requests: u64,
    /// Attempts that failed and were retried.
    pub retries: u64,
    /// Spans the receiver said it rejected (`partial_success`).
    pub rejected_spans: u64,
    /// Runs that could not be sent.
    pub failed_runs: u64,
}

/// A batch the receiver did not take.
#[derive(Debug, thiserror::Error)]
#[error("failed to send {runs} run(s) to {endpoint}: {reason}")]
pub struct PushError {
    /// The endpoint, without credentials.
    pub endpoint: String,
    /// Runs in the batch.
    pub runs: u64,
    /// What happened to the last attempt.
    pub reason: String,
}

/// Sends runs to one endpoint in batches.
pub struct Pusher {
    config: PushConfig,
    agent: ureq::Agent,
    base_delay: Duration,
    /// Takes the header values out of what a receiver answers, should it echo them.
    redactor: Redactor,
    batch: Vec<u8>,
    batch_runs: u64,
    batch_spans: u64,
    stats: PushStats,
}

impl std::fmt::Debug for Pusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pusher")
            .field("config", &self.config)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// One attempt's failure.
struct Failure {
    retry: bool,
    retry_after: Option<Duration>,
    reason: String,
}

impl Pusher {
    /// A pusher for `config`; the first retry waits about a second, doubling after that.
    pub fn new(config: PushConfig) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(config.timeout))
            .user_agent(concat!("looptrace/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let redactor = Redactor::new(config.headers.iter().map(|(_, value)| value));
        Pusher {
            config,
            agent,
            redactor,
            base_delay: Duration::from_secs(1),
            batch: Vec::new(),
            batch_runs: 0,
            batch_spans: 0,
            stats: PushStats::default(),
        }
    }

    /// Sets the first backoff (tests use a short one).
    pub fn with_base_delay(mut self, delay: Duration) -> Self {
        self.base_delay = delay;
        self
    }

    /// What was sent so far.
    pub fn stats(&self) -> PushStats {
        self.stats
    }

    /// The endpoint for messages, without credentials.
    pub fn endpoint(&self) -> String {
        self.config.shown_endpoint()
    }

    /// Adds one run's request body (from [`super::encode_request`]) holding `spans` spans; sends
    /// the batch when it is full.
    pub fn add(&mut self, request: &[u8], spans: u64) -> Result<(), PushError> {
        if self.batch_runs > 0
            && (self.batch_spans + spans > MAX_BATCH_SPANS
                || self.batch.len() + request.len() > MAX_BATCH_BYTES)
        {
            self.flush()?;
        }
        self.batch.extend_from_slice(request);
        self.batch_runs += 1;
        self.batch_spans += spans;
        if self.batch_spans >= MAX_BATCH_SPANS || self.batch.len() >= MAX_BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Sends what the batch holds. A batch that fails is dropped and counted in `failed_runs`.
    pub fn flush(&mut self) -> Result<(), PushError> {
        if self.batch_runs == 0 {
            return Ok(());
        }
        let body = std::mem::take(&mut self.batch);
        let runs = std::mem::take(&mut self.batch_runs);
        let spans = std::mem::take(&mut self.batch_spans);
        match self.send(&body) {
            Ok(rejected) => {
                self.stats.runs += runs;
                self.stats.spans += spans;
                self.stats.requests += 1;
                self.stats.rejected_spans += rejected;
                Ok(())
            }
            Err(reason) => {
                self.stats.failed_runs += runs;
                Err(PushError {
                    endpoint: self.endpoint(),
                    runs,
                    reason,
                })
            }
        }
    }

    /// Sends one body until an attempt succeeds or retrying is pointless; returns the spans the
    /// receiver reported rejecting.
    fn send(&mut self, body: &[u8]) -> Result<u64, String> {
        let body = if self.config.gzip {
            gzip(body).map_err(|err| format!("failed to compress the request: {err}"))?
        } else {
            body.to_vec()
        };
        let mut attempt = 1;
        loop {
            let failure = match self.attempt(&body) {
                Ok(rejected) => return Ok(rejected),
                Err(failure) => failure,
            };
            if !failure.retry || attempt >= MAX_ATTEMPTS {
                let tries = if attempt == 1 {
                    String::new()
                } else {
                    format!(" (gave up after {attempt} attempts)")
                };
                return Err(format!("{}{tries}", failure.reason));
            }
            let wait = failure
                .retry_after
                .unwrap_or_else(|| backoff(self.base_delay, attempt))
                .min(MAX_WAIT);
            self.stats.retries += 1;
            std::thread::sleep(wait);
            attempt += 1;
        }
    }

    fn attempt(&self, body: &[u8]) -> Result<u64, Failure> {
        let mut request = self
            .agent
            .post(&self.config.endpoint)
            .header("content-type", "application/x-protobuf");
        if self.config.gzip {
            request = request.header("content-encoding", "gzip");
        }
        for (name, value) in &self.config.headers {
            request = request.header(name, value);
        }
        let mut response = request.send(body).map_err(|err| Failure {
            retry: true,
            retry_after: None,
            // ureq's errors name the host and the cause, never a header.
            reason: format!("{err}"),
        })?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(parse_retry_after);
        let mut reply = Vec::new();
        let read = response
            .body_mut()
            .as_reader()
            .take(64 * 1024)
            .read_to_end(&mut reply);
        if (200..300).contains(&status) {
            let rejected = ExportTraceServiceResponse::decode(reply.as_slice())
                .ok()
                .and_then(|r| r.partial_success)
                .map_or(0, |p| u64::try_from(p.rejected_spans).unwrap_or(0));
            return Ok(rejected);
        }
        let text = if read.is_ok() {
            let reply = String::from_utf8_lossy(&reply);
            excerpt(&self.redactor.redact(&reply), &self.redactor)
        } else {
            String::new()
        };
        let hint = match status {
            300..=399 => " (redirects are not followed: the headers are meant for this host only)",
            415 => " (the receiver does not take OTLP/HTTP protobuf here: is this its traces URL?)",
            _ => "",
        };
        Err(Failure {
            retry: matches!(status, 429 | 502 | 503 | 504),
            retry_after,
            reason: format!("HTTP {status}{hint}: {text}")
                .trim_end_matches([':', ' '])
                .to_owned(),
        })
    }
}

fn gzip(body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(body.len() / 4), Compression::default());
    encoder.write_all(body)?;
    encoder.finish()
}
