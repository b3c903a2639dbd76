//! The report's data: what every renderer shows, computed once from all inputs.

use std::collections::BTreeMap;
use std::fmt;

use crate::run::RunOutcome;

/// A number of runs per ending.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EndingCounts([u64; 5]);

impl EndingCounts {
    /// The runs that ended with `ending`.
    pub fn get(&self, ending: RunOutcome) -> u64 {
        self.0[ending.index()]
    }

    /// Counts `runs` more runs ending with `ending`.
    pub fn add(&mut self, ending: RunOutcome, runs: u64) {
        self.0[ending.index()] += runs;
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &EndingCounts) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
    }

    /// All runs.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
}

/// The whole report.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Report {
    /// How much input was read.
    pub input: InputTotals,
    /// Runs per ending over all inputs.
    pub exit_reasons: EndingCounts,
    /// Runs per ending for each input, in input order.
    pub by_file: Vec<FileEndings>,
    /// How the runs that hit the step budget spent their steps.
    pub budget: BudgetExhaustion,
    /// Feedback on invalid model output and `invalid_model_output` endings.
    pub invalid_output: InvalidOutput,
    /// Per tool, sorted by name.
    pub tools: Vec<ToolReport>,
    /// Steps used per ending, in the order of [`RunOutcome::ALL`].
    pub steps: [StepStats; 5],
    /// `internal_error` endings by `error_kind`.
    pub internal_errors: BTreeMap<String, u64>,
    /// Runs whose scores give a verdict, and how many passed.
    pub verdicts: Verdicts,
    /// Finish gate verdicts, apart from invalid output.
    pub finish_gate: FinishGateTotals,
    /// Tokens, cost and duration per ending, in the order of [`RunOutcome::ALL`].
    pub spend: [SpendStats; 5],
    /// Duration percentiles per ending, over the runs with a duration (`None`: no such run), in
    /// the order of [`RunOutcome::ALL`].
    pub durations: [Option<DurationSummary>; 5],
    /// Everything the reader tolerated, in input order.
    pub warnings: Vec<Warning>,
}

/// How much input was read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct InputTotals {
    /// Input files (standard input counts as one).
    pub files: u64,
    /// Lines, blank and skipped ones included.
    pub lines: u64,
    /// Events read.
    pub events: u64,
    /// Malformed lines skipped under `--lenient`.
    pub skipped_lines: u64,
}

/// Runs per ending of one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEndings {
    /// The input's name.
    pub file: String,
    /// Its runs: a run belongs to the file holding its ending, or its last event if incomplete.
    pub exit_reasons: EndingCounts,
}

/// The budgets a `max_steps_exceeded` run can exhaust, as `run_finished.budget` names them (absent:
/// `steps`; a name of no other budget counts as `other`).
pub const BUDGETS: [&str; 6] = ["steps", "tokens", "cost", "time", "context", "other"];

/// Totals over the runs that ended `max_steps_exceeded`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BudgetExhaustion {
    /// Runs that ended `max_steps_exceeded`.
    pub runs: u64,
    /// Those runs by the budget that ran out, in the order of [`BUDGETS`].
    pub by_budget: [u64; 6],
    /// Their observations that were not errors.
    pub tool_successes: u64,
    /// Their error observations.
    pub tool_errors: u64,
    /// Their `model_feedback` events.
    pub feedback: u64,
}

/// What the runs of one ending spent, as far as their traces record it: each figure with the
/// number of runs that recorded it, so a total over some runs is never read as one over all.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct SpendStats {
    /// Runs that recorded tokens (`usage` on `run_finished`, else on their turns).
    pub runs_with_tokens: u64,
    /// Their input tokens.
    pub input_tokens: u64,
    /// Their output tokens.
    pub output_tokens: u64,
    /// Runs that recorded a cost (`cost_usd` on `run_finished`, else on their turns).
    pub runs_with_cost: u64,
    /// Their cost in US dollars.
    pub cost_usd: f64,
    /// Runs with a duration: `run_finished.duration_ms`, else the span of their events' `ts`,
    /// else the sum of their events' `duration_ms`.
    pub runs_with_duration: u64,
    /// Their duration in milliseconds.
    pub duration_ms: f64,
}

impl SpendStats {
    /// Adds every figure of `other`.
    pub fn merge(&mut self, other: &SpendStats) {
        self.runs_with_tokens += other.runs_with_tokens;
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.runs_with_cost += other.runs_with_cost;
        self.cost_usd += other.cost_usd;
        self.runs_with_duration += other.runs_with_duration;
        self.duration_ms += other.duration_ms;
    }

    /// Whether any run recorded anything.
    pub fn any(&self) -> bool {
        self.runs_with_tokens + self.runs_with_cost + self.runs_with_duration > 0
    }
}

/// Runs whose finishes a finish gate checked: a rejection is a wrong answer, not invalid output.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FinishGateTotals {
    /// Runs with at least one `finish_gate` event, per ending.
    pub runs: EndingCounts,
    /// Rejected finishes, per ending of their run.
    pub rejections: EndingCounts,
    /// Gated runs by the number of finishes the gate checked (attempts).
    pub runs_by_attempts: BTreeMap<u64, u64>,
}

/// Feedback on invalid model output, and how those runs ended.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct InvalidOutput {
    /// `model_feedback` events by `error_kind`.
    pub feedback_by_kind: BTreeMap<String, u64>,
    /// `invalid_model_output` endings by `error_kind`.
    pub endings_by_kind: BTreeMap<String, u64>,
    /// Runs with at least one `model_feedback` event.
    pub runs_with_feedback: u64,
    /// Of those, the runs that still ended `finished`.
    pub recovered: u64,
}

/// Runs whose scores give a verdict (`run_finished.scores`, by the pass rule), and how many of
/// them passed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Verdicts {
    /// Runs with at least one score that has a verdict.
    pub runs: u64,
    /// Of those, the runs every such score passed.
    pub passed: u64,
}

/// Calls and errors of one tool.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ToolReport {
    /// The tool's name (`(unknown)` for observations of older writers with no earlier call).
    pub name: String,
    /// `tool_call` model actions naming the tool.
    pub calls: u64,
    /// Error observations of the tool.
    pub errors: u64,
    /// Error observations by `error_kind`.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Observations whose writer recorded no error flag (imports of sources without one): when
    /// the tool has no recorded errors, its errors are "not recorded", never 0.
    pub unrecorded: u64,
}

/// The distribution of steps used by the runs with one ending.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StepStats {
    /// Runs counted.
    pub runs: u64,
    /// Fewest steps, median, 90th percentile (nearest rank) and most steps; `None` with no runs.
    pub summary: Option<StepSummary>,
}

/// Order statistics of steps used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepSummary {
    /// Fewest steps.
    pub min: u64,
    /// Nearest-rank median: the smallest value with at least half the runs at or below it.
    pub median: u64,
    /// Nearest-rank 90th percentile.
    pub p90: u64,
    /// Most steps.
    pub max: u64,
}

/// Percentiles of run durations in milliseconds, read off a bounded sketch: p50, p90 and p99
/// within 1.6% of the exact nearest-rank values, the maximum exact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DurationSummary {
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Longest.
    pub max_ms: f64,
}

/// Something the reader tolerated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// The last line of a file has no newline and does not parse (a crash mid-write).
    TruncatedTail {
        /// The input.
        file: String,
        /// The line's number.
        line: u64,
    },
    /// A line that ends early (a write cut short, as on a full disk) followed directly by a
    /// `run_started` line: skipped, and the run it belonged to is incomplete.
    CutOffWrite {
        /// The input.
        file: String,
        /// The line's number.
        line: u64,
    },
    /// Malformed lines skipped under `--lenient`.
    SkippedLines {
        /// The input.
        file: String,
        /// How many lines.
        count: u64,
        /// The first one's number.
        first_line: u64,
        /// What is wrong with the first one.
        first_problem: String,
    },
    /// Events of a type this version does not know (counted, otherwise ignored).
    UnknownEventType {
        /// The `event_type` (`(other)` past the first 32 distinct ones).
        event_type: String,
        /// How many events.
        count: u64,
    },
    /// A run id found in more than one input.
    DuplicateRunId {
        /// The run id.
        run_id: String,
        /// The inputs holding it, in input order.
        files: Vec<String>,
    },
    /// More run ids found in more than one input than are listed one by one.
    MoreDuplicateRunIds {
        /// How many more.
        count: u64,
    },
    /// A folder holds no `*.jsonl` file.
    NoTraceFiles {
        /// The folder.
        folder: String,
    },
}

impl Warning {
    /// A short machine-readable name of the warning's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Warning::TruncatedTail { .. } => "truncated_tail",
            Warning::CutOffWrite { .. } => "cut_off_write",
            Warning::SkippedLines { .. } => "skipped_lines",
            Warning::UnknownEventType { .. } => "unknown_event_type",
            Warning::DuplicateRunId { .. } | Warning::MoreDuplicateRunIds { .. } => {
                "duplicate_run_id"
            }
            Warning::NoTraceFiles { .. } => "no_trace_files",
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::TruncatedTail { file, line } => {
                write!(
                    f,
                    "{file}:{line}: cut-off last line (a write cut short) skipped"
                )
            }
            Warning::CutOffWrite { file, line } => write!(
                f,
                "{file}:{line}: a write cut short (the next line starts a run) skipped"
            ),
            Warning::SkippedLines {
                file,
                count,
                first_line,
                first_problem,
            } => {
                let lines = if *count == 1 { "line" } else { "lines" };
                write!(
                    f,
                    "{file}: skipped {count} malformed {lines}, the first at line {first_line}: {first_problem}"
                )
            }
            Warning::UnknownEventType { event_type, count } => {
                let events = if *count == 1 { "event" } else { "events" };
                write!(f, "{count} {events} of unknown type `{event_type}` ignored")
            }
            Warning::DuplicateRunId { run_id, files } => {
                let files: Vec<String> = files.iter().map(|file| format!("`{file}`")).collect();
                write!(f, "run id `{run_id}` appears in {}", files.join(", "))
            }
            Warning::MoreDuplicateRunIds { count } => {
                write!(f, "{count} more run ids appear in more than one file")
            }
            Warning::NoTraceFiles { folder } => {
                let looked: Vec<String> = crate::trace::TRACE_FILE_EXTENSIONS
                    .iter()
                    .map(|ext| format!("`*{ext}`"))
                    .collect();
                write!(
                    f,
                    "{folder}: no trace files found (looked for {})",
                    looked.join(", ")
                )
            }
        }
    }
}
