//! OpenTelemetry export: each recorded run as one OTLP/JSON `TracesData` line of spans following
//! the GenAI semantic conventions (`docs/otel.md`). Ids in `ids`, the span model in `span`,
//! building spans from a run in `build`, times in `timeline`, the JSON encoding in `json`, and
//! the streaming driver in `stream`.

mod build;
mod ids;
mod json;
mod span;
mod stream;
mod timeline;

pub use build::{BuildOptions, Verdict, build_run};
pub use ids::{SpanId, TraceId, TraceIds};
pub use json::{SCHEMA_URL, SEMCONV_VERSION, encode_run};
pub use span::{Attribute, Attributes, ExportedRun, Span, SpanEvent, SpanKind, Status, Value};
pub use stream::{ExportError, ExportStats, export_stream};
pub use timeline::{DEFAULT_DURATION_NS, GAP_NS, SYNTHETIC_START_NS, parse_rfc3339};
