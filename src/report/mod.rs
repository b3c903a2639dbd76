//! `looptrace report`: how the runs in any number of trace files ended and why.
//!
//! [`collect_inputs`] turns paths into [`Input`]s, [`analyze`] reads them (in parallel, in
//! line-aligned chunks, keeping only the fields the report needs) into a [`Report`], and
//! [`render`] turns the report into a table, JSON, Markdown or CSV. Runs are keyed by `run_id`
//! across all inputs, so the numbers do not depend on how the lines are split into files.

mod aggregate;
mod analyze;
mod chunk;
mod duration;
mod error;
mod hash;
mod histogram;
mod input;
mod keep_runs;
mod list;
mod live_fold;
mod mapped;
mod model;
mod render;
mod row_fold;
mod rows;
mod spend;

pub use analyze::{Options, analyze, analyze_runs, analyze_slice};
pub use error::{LineError, ReportError};
pub use input::{Input, Source, collect_inputs};
pub use keep_runs::KeepRuns;
pub use list::{Selector, render_list_json, render_list_text};
pub use live_fold::{FoldedRuns, LiveFold};
pub use model::{
    BUDGETS, BudgetExhaustion, DurationSummary, EndingCounts, FileEndings, FinishGateTotals,
    InputTotals, InvalidOutput, Report, SpendStats, StepStats, StepSummary, ToolReport, Verdicts,
    Warning,
};
pub use render::{Format, RenderOptions, render, summary_line};
pub use row_fold::RowMode;
pub use rows::{RunRow, RunTable, TEXT_LIMIT, TimelineStep};
