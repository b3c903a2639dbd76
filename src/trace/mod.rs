//! JSONL traces, format `looptrace.trace/1`: one complete event per line, written by an observer
//! of the loop and read back by `show`, replay, evaluation and reports. `docs/trace-format.md` is
//! the reference. One event type, [`Event`] (an envelope around an [`EventKind`] per event
//! type), is read and written through the flat line shape of `wire.rs`. Two readers share one
//! definition of a well-formed line: [`Event`] (serde, owned) and the borrowed view [`EventRef`] over a one-pass field scanner, which `report` reads
//! corpora with and the serde reader checks every line with where serde alone is looser
//! (`serde_gaps.rs`).

mod as_written;
mod aside_runs;
mod clock;
mod compact_line;
mod cursor;
mod cut_line;
mod event;
mod event_fields;
mod fields;
mod json_line;
mod json_string;
mod line_error;
mod line_span;
mod mapped_file;
mod quote_marks;
mod reader;
mod recorder;
mod run_occurrences;
mod runs;
mod scan;
mod serde_gaps;
mod short_decimal;
mod show;
mod shown_event;
mod tap;
mod text_line;
mod values;
mod view;
mod wire;
mod writer;

pub use crate::digest::{HashAlgorithm, Summarizer, sha256_tagged};
pub use crate::json_error::describe_plain as describe_json_error_plain;
/// A serde-written line's top-level keys and raw values, for readers that need a few fields the
/// borrowed view does not keep.
pub(crate) use as_written::pairs as top_level_pairs;
pub use clock::{Clock, SteppingClock, SystemClock};
pub use cut_line::{cut_short, ends_early};
pub use event::{
    Capture, Event, EventKind, FinishGate, InternalError, ModelAction, ModelCall, ModelFeedback,
    ModelRef, ModelRetry, Observation, ReplayOf, RunFinished, RunSource, RunStarted, SCHEMA, Score,
    ScorerCall, ToolRef, Usage,
};
pub use event_fields::{ENVELOPE_FIELDS, fields_by_event_type};
pub use json_line::JsonLine;
pub use line_error::LineError;
pub use line_span::LineSpan;
pub(crate) use mapped_file::Window as FileWindow;
pub use reader::parse_line;
pub use reader::{
    DEFAULT_MAX_LINE_BYTES, LineItem, ReadOptions, ReadStats, TraceError, TraceReader,
};
pub use recorder::{RecorderOptions, TraceRecorder};
pub use runs::read_checked_run_in;
pub use runs::{
    OPEN_BYTES_BUDGET, RecordedRun, RunStream, StreamedRun, TraceContents, read_event_at,
    read_run_at, read_run_within, read_trace,
};
pub use scan::{Fields, TokenCounts, scan_line};
pub use show::{ordinal, render_lines, render_run, render_runs};
pub use shown_event::ShownEvent;
pub use tap::RunTap;
pub use text_line::TextLine;
pub use view::{EventRef, EventRefKind, EventSpend, check_line, is_run_started, parse_event};
pub use writer::{EventSink, KeptLines, TraceWriter, finish_cut_line};

/// The file names a folder walk reads: looptrace's own traces (`.jsonl`) and the formats other
/// agents write (`import`, `report`, `show`, `export`).
pub const TRACE_FILE_EXTENSIONS: [&str; 6] = [".jsonl", ".json", ".traj", ".eval", ".yaml", ".yml"];
