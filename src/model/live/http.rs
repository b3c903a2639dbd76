//! The HTTP side every wire format shares: one POST per attempt, the classification of failures
//! (`docs/models.md`), and retries with exponential backoff and jitter that honour `Retry-After`
//! within `max_retries` and the retry budget. Written once so the adapters only speak JSON.
//!
//! Two rules keep the key with its server: a redirect is never followed (it would carry the
//! credential headers, or turn the POST into a GET, to a host the user never named), and every
//! body is redacted whole as it arrives, before anything reads, cuts or keeps it.

use std::time::{Duration, Instant};

use crate::model::{ProviderError, ProviderErrorKind, RetriedAttempt};
use crate::secrets::Redactor;

/// The largest response body read; a larger one is a `bad_response`.
pub const MAX_BODY_BYTES: u64 = 10 * 1024 * 1024;

/// What the server answered to one attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpReply {
    /// The HTTP status.
    pub status: u16,
    /// The `Retry-After` header, as sent.
    pub retry_after: Option<String>,
    /// The `Location` header of a redirect, as sent.
    pub location: Option<String>,
    /// The response body.
    pub body: String,
}

/// Why an attempt got no answer at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// No answer within the attempt's timeout.
    Timeout(String),
    /// The connection could not be made or broke (refused, reset, DNS, TLS).
    Connection(String),
    /// The body is larger than [`MAX_BODY_BYTES`]: an answer, but not one to read.
    TooLarge,
}

/// Sends one request. The real one is [`UreqTransport`]; offline replay serves recorded bodies.
pub trait Transport: Send {
    /// POSTs `body` (JSON) to `url` with these headers.
    fn post(
        &mut self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &str,
    ) -> Result<HttpReply, TransportError>;
}

/// Blocking HTTP over `ureq` with rustls; statuses are data, not errors.
pub struct UreqTransport {
    agent: ureq::Agent,
}

impl UreqTransport {
    /// A transport whose every attempt gives up after `timeout`; redirects come back as
    /// answers, never followed.
    pub fn new(timeout: Duration) -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(timeout))
            .build();
        UreqTransport {
            agent: config.into(),
        }
    }
}

impl Transport for UreqTransport {
    fn post(
        &mut self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &str,
    ) -> Result<HttpReply, TransportError> {
        let mut request = self
            .agent
            .post(url)
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = request.send(body).map_err(transport_error)?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = header("retry-after");
        let location = header("location");
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_string()
            .map_err(transport_error)?;
        Ok(HttpReply {
            status,
            retry_after,
            location,
            body,
        })
    }
}

fn transport_error(error: ureq::Error) -> TransportError {
    match &error {
        ureq::Error::BodyExceedsLimit(_) => TransportError::TooLarge,
        ureq::Error::Timeout(_) => TransportError::Timeout(format!("no answer in time ({error})")),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            TransportError::Timeout(format!("no answer in time ({error})"))
        }
        _ => TransportError::Connection(format!("connection failed: {error}")),
    }
}

/// How hard to try before giving up on a model call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Attempts after the first.
    pub max_retries: u32,
    /// Time all attempts and waits of one call may take.
    pub budget: Duration,
    /// The first backoff; it doubles per attempt, up to 30 s, with jitter.
    pub base_delay: Duration,
}

/// What one failed attempt means.
enum Failure {
    /// Worth another attempt.
    Retry {
        /// `rate_limited`, `provider_unavailable`, `timeout` or `connection_failed`.
        attempt_kind: &'static str,
        /// The run's error kind if no attempt is left.
        final_kind: ProviderErrorKind,
        status: Option<u16>,
        retry_after: Option<Duration>,
        message: String,
    },
    /// Retrying would not help.
    Fatal(ProviderError),
}

/// Sends `body` until an attempt succeeds or the policy gives up; each failed attempt that is
/// retried is added to `retries`. Returns the success body, or the classified failure, both with
/// `redactor`'s secrets taken out.
pub fn send_with_retries(
    transport: &mut dyn Transport,
    url: &str,
    headers: &[(&'static str, String)],
    body: &str,
    policy: &RetryPolicy,
    redactor: &Redactor,
    retries: &mut Vec<RetriedAttempt>,
) -> Result<String, ProviderError> {
    let started = Instant::now();
    let mut attempt: u32 = 1;
    loop {
        let failure = match transport.post(url, headers, body) {
            Ok(mut reply) => {
                reply.body = redactor.redact(&reply.body).into_owned();
                if (200..300).contains(&reply.status) {
                    return Ok(reply.body);
                }
                classify(&reply, url, redactor)
            }
            Err(TransportError::TooLarge) => Failure::Fatal(ProviderError::new(
                ProviderErrorKind::BadResponse,
                format!(
                    "POST {url}: the response body is larger than the {} MiB limit",
                    MAX_BODY_BYTES / (1024 * 1024)
                ),
            )),
            Err(TransportError::Timeout(message)) => Failure::Retry {
                attempt_kind: "timeout",
                final_kind: ProviderErrorKind::ProviderUnavailable,
                status: None,
                retry_after: None,
                message: format!("POST {url}: {message}"),
            },
            Err(TransportError::Connection(message)) => Failure::Retry {
                attempt_kind: "connection_failed",
                final_kind: ProviderErrorKind::ProviderUnavailable,
                status: None,
                retry_after: None,
                message: format!("POST {url}: {message}"),
            },
        };
        let (attempt_kind, final_kind, status, retry_after, message) = match failure {
            Failure::Fatal(error) => {
                let message = redactor.redact(&error.message).into_owned();
                return Err(ProviderError::new(error.kind, message));
            }
            Failure::Retry {
                attempt_kind,
                final_kind,
                status,
                retry_after,
                message,
            } => (attempt_kind, final_kind, status, retry_after, message),
        };
        let wait = retry_after.unwrap_or_else(|| backoff(policy.base_delay, attempt));
        if attempt > policy.max_retries || started.elapsed() + wait > policy.budget {
            let tries = if attempt == 1 {
                "1 attempt".to_owned()
            } else {
                format!("{attempt} attempts")
            };
            let message = redactor.redact(&message).into_owned();
            return Err(ProviderError::new(
                final_kind,
                format!("{message} (gave up after {tries})"),
            ));
        }
        retries.push(RetriedAttempt {
            attempt,
            error_kind: attempt_kind.to_owned(),
            http_status: status,
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
        });
        std::thread::sleep(wait);
        attempt += 1;
    }
}

/// The table in `docs/models.md`, for an answer with a non-success status (its body already
/// redacted).
fn classify(reply: &HttpReply, url: &str, redactor: &Redactor) -> Failure {
    let status = reply.status;
    if (300..400).contains(&status) {
        let location = reply.location.as_deref().unwrap_or("(no Location header)");
        return Failure::Fatal(ProviderError::new(
            ProviderErrorKind::BadResponse,
            format!(
                "POST {url}: HTTP {status} redirect to {location} not followed (model calls never follow redirects: set the base URL to where the server is)"
            ),
        ));
    }
    let lower = reply.body.to_ascii_lowercase();
    let message = format!(
        "POST {url}: HTTP {status}: {}",
        excerpt(&reply.body, redactor)
    );
    let fatal = |kind| Failure::Fatal(ProviderError::new(kind, message.clone()));
    if status == 401 || status == 403 {
        return fatal(ProviderErrorKind::AuthFailed);
    }
    const QUOTA: [&str; 6] = [
        "insufficient_quota",
        "exceeded your current quota",
        "billing",
        "credit balance",
        "spend limit",
        "spending limit",
    ];
    if status == 402 || QUOTA.iter().any(|marker| lower.contains(marker)) {
        return fatal(ProviderErrorKind::QuotaExceeded);
    }
    const CONTEXT: [&str; 5] = [
        "context_length_exceeded",
        "prompt is too long",
        "maximum context length",
        "context window",
        "too many input tokens",
    ];
    if CONTEXT.iter().any(|marker| lower.contains(marker)) {
        return fatal(ProviderErrorKind::ContextLengthExceeded);
    }
    let retry_after = reply.retry_after.as_deref().and_then(parse_retry_after);
    match status {
        429 => Failure::Retry {
            attempt_kind: "rate_limited",
            final_kind: ProviderErrorKind::RateLimited,
            status: Some(status),
            retry_after,
            message,
        },
        408 | 500..=599 => Failure::Retry {
            attempt_kind: "provider_unavailable",
            final_kind: ProviderErrorKind::ProviderUnavailable,
            status: Some(status),
            retry_after,
            message,
        },
        _ => fatal(ProviderErrorKind::RequestRejected),
    }
}

/// `Retry-After` in seconds (integer or decimal); HTTP dates fall back to the backoff.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(3600.0)))
}

/// `base * 2^(attempt-1)`, at most 30 s, then a random point in its upper half.
pub(crate) fn backoff(base: Duration, attempt: u32) -> Duration {
    let full = base
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(Duration::from_secs(30));
    full / 2 + full.mul_f64(jitter() / 2.0)
}

/// A number in [0, 1) that differs between calls and processes, without a random-number crate:
/// std's hasher is seeded randomly per process and fed a counter.
fn jitter() -> f64 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// The start of an error body (already redacted whole), on one line, for messages; a cut that
/// ends in the first part of a key loses it.
pub(crate) fn excerpt(body: &str, redactor: &Redactor) -> String {
    const LIMIT: usize = 300;
    let flat: String = body
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(LIMIT + 1)
        .collect();
    if flat.chars().count() > LIMIT {
        let cut: String = flat.chars().take(LIMIT).collect();
        format!("{}…", redactor.redact_cut_tail(&cut))
    } else {
        flat
    }
}

/// How a reply with a non-success status is classed, by the table in `docs/models.md`: the kind
/// of the failed attempt (`rate_limited`, `provider_unavailable`, or a kind retrying cannot help,
/// such as `auth_failed`) and the failure a call ends with if no later attempt succeeds.
pub fn classify_reply(
    reply: &HttpReply,
    url: &str,
    redactor: &Redactor,
) -> (&'static str, ProviderError) {
    match classify(reply, url, redactor) {
        Failure::Retry {
            attempt_kind,
            final_kind,
            message,
            ..
        } => (attempt_kind, ProviderError::new(final_kind, message)),
        Failure::Fatal(error) => (error.kind.as_str(), error),
    }
}
