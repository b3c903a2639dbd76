//! Batch evaluation: load a suite (or a corpus of recorded runs), run its tasks in parallel with
//! isolation, check expectations, and write traces, `results.json`, reports and JUnit XML.

pub mod agent;
mod attempts;
mod baseline;
mod corpus;
mod corpus_line;
mod corpus_runs;
pub mod engine;
mod expect;
mod flaky;
mod folder_lock;
mod json_document;
mod junit;
mod layout;
mod matrix;
mod merge;
pub mod model_spec;
mod pass_counts;
mod render;
mod render_models;
mod render_shared;
mod render_stats;
mod report_sink;
mod rerun;
mod results;
mod results_formatter;
mod row_checks;
mod rows_of_tasks;
mod rows_on_disk;
mod runner;
mod sample;
mod score_totals;
pub mod scorers;
mod scripted_action;
mod select;
mod shard;
pub mod store;
mod strict_json;
mod suite;

pub use attempts::{Attempt, Attempts, Epochs};
pub(crate) use baseline::compare_counted;
pub use baseline::{Comparison, OutcomeCounts, compare};
pub(crate) use corpus::corpus_suite;
pub use corpus::{Corpus, RunSource, trace_files};
pub(crate) use expect::for_console;
pub use expect::{Verdict, check};
pub use flaky::{Divergence, FlakyTask, first_divergence, flaky_among, flaky_tasks};
pub use folder_lock::{FolderLock, lock_folder, lock_output};
pub(crate) use junit::write_junit;
pub use junit::{EachRow, render_junit};
pub use layout::{SINGLE_TRACE, TraceFlush, TraceLayout, TraceTarget, run_id};
pub use matrix::{apply_models, resolve_models};
pub(crate) use merge::merge_results_of;
pub use merge::{IncompleteShard, Merged, merge_results};
pub use pass_counts::{PackedRates, PassCounts, PassCountsLog};
pub use render::{
    ReportFormat, reason_label, render_report, render_report_styled, render_report_with,
    summary_line, write_report_full,
};
pub use render_models::ModelMatrix;
pub use render_shared::{FAILED_SHOWN, PassRate, TaskRates, pass_rates_of};
pub(crate) use rerun::{failed_ids, still_owed};
pub(crate) use results::now_rfc3339;
pub use results::{
    ExpectationTotals, MissingShard, RESULTS_FORMAT, RESULTS_FORMAT_V1, ResultsFile, Shard,
    SuiteInfo, TaskResult, Totals, read_results, run_ids, suite_info, write_atomically,
    write_results,
};
pub use row_checks::RowProblem;
pub(crate) use row_checks::check_rows;
pub use rows_of_tasks::read_rows_of_tasks;
pub use rows_on_disk::RowsOnDisk;
pub use runner::{OnRow, RunnerOptions, run_tasks};
pub use sample::{DEFAULT_SEED, Narrowing, sample};
pub use score_totals::{ScoreTotal, score_totals};
pub use scripted_action::ScriptedAction;
pub(crate) use select::{SelectError, select_tasks};
pub use select::{Selection, glob_match};
pub use shard::SHARD_ENV_VARS;
pub(crate) use shard::{list_shards, missing_sentence};
pub use suite::{
    DEFAULT_MAX_STEPS, Expectations, IdRef, ModelName, Selected, Suite, SuiteErrors, SuiteTask,
    SuiteTasks, TaskEntries, TaskEntry, TaskId, TaskModel, TaskSource, load_suite,
    load_suite_from_str, load_suite_with_text_for,
};
pub use suite::{Holding, LoadOptions};
