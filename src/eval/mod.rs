//! Batch evaluation: load a suite (or a corpus of recorded runs), run its tasks in parallel with
//! isolation, check expectations, and write traces, `results.json`, reports and JUnit XML.

mod baseline;
mod corpus;
mod expect;
mod flaky;
mod folder_lock;
mod junit;
mod layout;
mod matrix;
mod merge;
pub mod model_spec;
mod render;
mod render_models;
mod render_stats;
mod rerun;
mod results;
mod results_formatter;
mod row_checks;
mod rows_on_disk;
mod runner;
mod score_totals;
pub mod scorers;
mod scripted_action;
mod select;
mod shard;
pub mod store;
mod strict_json;
mod suite;

pub use baseline::{Comparison, OutcomeCounts, compare, compare_counted};
pub use corpus::{Corpus, RunSource, corpus_suite, trace_files};
pub use expect::{Verdict, check, expected_in_full, for_console, has_summary};
pub use flaky::{Divergence, FlakyTask, first_divergence, flaky_tasks};
pub use folder_lock::{FolderLock, LockMode, lock_folder};
pub use junit::{EachRow, render_junit, write_junit};
pub use layout::{
    SINGLE_TRACE, TraceFlush, TraceLayout, TraceTarget, ends_with_finished_run, finished_runs,
    run_id, trace_path,
};
pub use matrix::{apply_models, resolve_models};
pub use merge::{IncompleteShard, Merged, merge_results, merge_results_of};
pub use render::{
    FAILED_SHOWN, PassRate, ReportFormat, pass_rates_of, reason_label, render_report,
    render_report_full, render_report_styled, render_report_with, summary_line,
};
pub use render_models::ModelMatrix;
pub use rerun::{carry_over, failed_ids, still_owed, unreached};
pub use results::{
    ExpectationTotals, MissingShard, RESULTS_FORMAT, RESULTS_FORMAT_V1, ResultsFile, Shard,
    SuiteInfo, TaskResult, Totals, now_rfc3339, read_results, run_ids, suite_info,
    write_atomically, write_results,
};
pub use row_checks::{RowProblem, check_rows, repeat_fits};
pub use rows_on_disk::RowsOnDisk;
pub use runner::{Attempt, RunnerOptions, run_tasks};
pub use score_totals::{ScoreTotal, score_totals};
pub use scripted_action::ScriptedAction;
pub use select::{Selection, glob_match, select_tasks};
pub use shard::{SHARD_ENV_VARS, list_shards, missing_sentence};
pub use suite::{
    DEFAULT_MAX_STEPS, Expectations, ModelName, Selected, Suite, SuiteErrors, SuiteTask,
    SuiteTasks, TaskEntry, TaskId, TaskModel, TaskSource, load_suite, load_suite_from_str,
    load_suite_with_text, load_suite_with_text_for,
};
