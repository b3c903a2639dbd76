//! JSONL traces, format `looptrace.trace/1`: one complete event per line, written by an observer
//! of the loop and read back by `show`, replay, evaluation and reports. `docs/trace-format.md` is
//! the reference.

mod clock;
mod event;
mod reader;
mod recorder;
mod runs;
mod show;
mod summary;
mod writer;

pub use clock::{Clock, SteppingClock, SystemClock};
pub use event::{
    Capture, EventType, HashAlgorithm, ModelRef, ReplayOf, RunSource, SCHEMA, Score, ToolRef,
    TraceEvent, Usage,
};
pub use reader::parse_line;
pub use reader::{
    DEFAULT_MAX_LINE_BYTES, ReadOptions, ReadStats, TraceError, TraceReader,
    describe_json_error_plain,
};
pub use recorder::{RecorderOptions, TraceRecorder};
pub use runs::{
    LineSpan, OPEN_BYTES_BUDGET, RecordedRun, RunOutcome, RunStream, StreamedRun, TraceContents,
    read_event_at, read_run_at, read_trace,
};
pub use show::{ordinal, render_run, render_runs};
pub(crate) use summary::hex;
pub use summary::{Summarizer, sha256_tagged};
pub use writer::{EventSink, TraceWriter, finish_cut_line};

/// The file names a folder walk reads: looptrace's own traces (`.jsonl`) and the formats other
/// agents write (`import`, `report`, `show`, `export`).
pub const TRACE_FILE_EXTENSIONS: [&str; 6] = [".jsonl", ".json", ".traj", ".eval", ".yaml", ".yml"];
