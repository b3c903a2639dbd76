//! OpenTelemetry export: each recorded run as spans following the GenAI semantic conventions
//! (`docs/otel.md`), written as OTLP/JSON lines or pushed to a receiver over OTLP/HTTP protobuf.
//! Ids in `ids`, the span model in `span`, building spans from a run in `build`, times in
//! `timeline`, the resource in `resource`, the encodings in `json` and `proto`, the push settings
//! in `endpoint`, the sending in `push` and `live` (runs sent as they end), and the streaming
//! driver in `stream`.

mod build;
mod endpoint;
mod ids;
mod json;
mod live;
mod proto;
mod push;
mod resource;
mod span;
mod stream;
mod timeline;

pub use build::{BuildOptions, Verdict, build_run};
pub use endpoint::{ConfigError, DEFAULT_TIMEOUT, PushConfig};
pub use ids::{SpanId, TraceId, TraceIds};
pub use json::{SCHEMA_URL, SEMCONV_VERSION, encode_run};
pub use live::{LivePush, LivePushReport};
pub use proto::encode_request;
pub use push::{MAX_ATTEMPTS, MAX_BATCH_BYTES, MAX_BATCH_SPANS, PushError, PushStats, Pusher};
pub use resource::{ResourceConfig, ResourceError, parse_key_values};
pub use span::{Attribute, Attributes, ExportedRun, Span, SpanEvent, SpanKind, Status, Value};
pub use stream::{Encoding, ExportError, ExportStats, RunSink, export_stream};
pub use timeline::{DEFAULT_DURATION_NS, GAP_NS, SYNTHETIC_START_NS, parse_rfc3339};
