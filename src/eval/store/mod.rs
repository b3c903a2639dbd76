//! The run store: an output folder holds one folder per `eval`, `--resume` or `--rerun-failed`
//! invocation, `DIR/runs/<eval-id>/`, each created new and never rewritten, and `DIR/results.json`,
//! a view derived from them (the fold of a run and its parents: the latest row per row identity).
//!
//! ```text
//! DIR/
//!   runs/<eval-id>/   header.json (what the run set out to do, its parents)
//!                     rows.jsonl  (result rows as tasks finish; a last `sealed` line)
//!                     traces/...  or traces.jsonl (new files only)
//!   results.json      the view: rebuilt from runs/ at any time, replaced atomically
//! ```
//!
//! Every file below `runs/` is created with `O_EXCL`, so it is never a hard link, a symbolic
//! link or a pipe placed there beforehand, needs no copy aside, and a reader never races a writer
//! of it. Which rows a new run owes ([`owed`]) is a pure function of the rows its parents hold;
//! pruning is a separate policy (`gc.rs`).

mod convert;
mod copy;
mod gc;
mod owed;
mod row_key;
mod run_folder;
mod traces;
mod view;

pub use convert::convert_v1;
pub use copy::copy_runs;
pub use gc::{GcPlan, bytes_under, plan_gc, remove_runs};
pub use owed::{Owing, owed};
pub use row_key::RowKey;
pub use run_folder::{
    ROWS_NAME, RUNS_DIR, RunFolder, RunFormat, RunHeader, RunKind, RunRead, Seal, StoreError,
    is_run_id, list_runs, read_header, read_run, row_line,
};
pub use traces::{NamedTrace, read_view, view_traces};
pub use view::rebuild_view;

/// The view's name in an output folder.
pub const RESULTS_NAME: &str = "results.json";
