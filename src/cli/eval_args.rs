//! The arguments of `looptrace eval` (and the verdict flags `merge` shares), and the
//! [`EvalRequest`] they make: plain values the library plans and runs.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::CliError;
use super::common::{CaptureArg, ToolsFileArgs};
use super::progress::ProgressMode;
use looptrace::eval::engine::{EvalRequest, EvalSource};
use looptrace::eval::{ReportFormat, Shard, TraceFlush, TraceLayout};

/// Arguments of `looptrace eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The suite file (JSON). Not needed with `--traces` or `--rebuild-view`.
    #[arg(required_unless_present_any = ["traces", "rebuild_view"], conflicts_with = "traces")]
    pub suite: Option<PathBuf>,
    /// Write `DIR/results.json` again from `DIR/runs/` (the view of its newest run), and run
    /// nothing; a folder of results format 1 is converted into a run store first.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["suite", "traces", "resume", "rerun_failed"])]
    pub rebuild_view: Option<PathBuf>,
    /// Replay every recorded run in these trace files or folders instead of a suite.
    #[arg(long, num_args = 1.., value_name = "PATH")]
    pub traces: Vec<PathBuf>,
    /// Tasks run at once (default: the number of cores).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Output folder for `traces/` and `results.json` (default: `looptrace-runs/<suite name>`).
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Report format.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
    /// Print only errors and a one-line summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Send each run's spans to this OTLP/HTTP traces URL as the run ends (`docs/otel.md`).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Progress on stderr: `lines` (one per finished run; the default when stderr is not a
    /// terminal), `bar` (the default on a terminal), `summary[=SECONDS]` (counts every 30 s) or
    /// `none`.
    #[arg(long, value_name = "MODE", value_parser = parse_progress)]
    pub progress: Option<ProgressMode>,
    /// `--junit`, `--baseline`, `--baseline-any-suite`.
    #[command(flatten)]
    pub verdicts: VerdictArgs,
    /// `--limit`, `--sample`, `--seed`, `--retries`.
    #[command(flatten)]
    pub narrow: super::narrow_args::NarrowArgs,
    /// Run only shard K of N (1-based), e.g. `--shard 2/4`; `auto` reads K and N from the CI or
    /// batch engine's variables (docs/scale-out.md).
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<ShardArg>,
    /// Run only the tasks whose id matches PATTERN (`*` for any characters); repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub only: Vec<String>,
    /// Leave out the tasks whose id matches PATTERN (`*` for any characters); repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub skip: Vec<String>,
    /// Run again only the tasks that failed, errored or were not reached in this earlier
    /// `results.json`, as a new run beside the ones it names (the default `--out` is its folder).
    #[arg(long, value_name = "RESULTS", conflicts_with_all = ["shard", "traces"])]
    pub rerun_failed: Option<PathBuf>,
    /// Continue an evaluation into `--out` that crashed or was stopped: a new run that keeps
    /// every row of the stopped one with a complete trace, and runs the rest.
    #[arg(long, conflicts_with = "rerun_failed")]
    pub resume: bool,
    /// Run each task N times (epochs, 1 to 10,000): one row and one run per repeat; the report
    /// gives pass rates and flaky tasks.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// Repeat each task only until a sequential test (SPRT) decides whether it passes at least
    /// `--pass-threshold` of the time, at most MAX runs each (docs/report.md).
    #[arg(long, value_name = "MAX", conflicts_with_all = ["repeat", "resume", "rerun_failed", "traces"])]
    pub repeat_until_decided: Option<u32>,
    /// The pass rate a task must reach under `--repeat-until-decided` (default 0.5).
    #[arg(long, value_name = "P", requires = "repeat_until_decided")]
    pub pass_threshold: Option<f64>,
    /// `per-task` (the default): `DIR/runs/<eval-id>/traces/<task-id>.jsonl`; `single` (the
    /// default with `--traces`): every run in `DIR/runs/<eval-id>/traces.jsonl`.
    /// `--rerun-failed` keeps the layout of the results it updates.
    #[arg(long, value_enum)]
    pub trace_layout: Option<TraceLayoutArg>,
    /// `event`: write each event as it happens; `run`: write a run's events together when it
    /// ends (fewer writes; a crash loses the run in progress).
    #[arg(long, value_enum, default_value_t = TraceFlushArg::Event)]
    pub trace_flush: TraceFlushArg,
    /// Trace capture, overriding the suite's default.
    #[arg(long, value_enum)]
    pub capture: Option<CaptureArg>,
    /// The tools file, for a suite that names none.
    #[command(flatten)]
    pub tools_file: ToolsFileArgs,
    /// The model every task runs against: `API:MODEL@BASE_URL` or a name from the suite's
    /// `models`. Given several times, every task runs against each (a model matrix).
    #[arg(long = "model", value_name = "SPEC", conflicts_with = "traces")]
    pub models: Vec<String>,
    /// The variable holding the API key of every `--model` given as `API:MODEL@BASE_URL` (or
    /// recorded by the evaluation `--resume` or `--rerun-failed` continues).
    #[arg(long, value_name = "VAR", conflicts_with = "traces")]
    pub api_key_env: Option<String>,
    /// Answer every agent task's model calls from the run of the same row (task, model,
    /// repeat) in these earlier results (a `results.json` or its folder), offline; a call the
    /// agent did not make before ends its run with `replay_miss`.
    #[arg(long, value_name = "RESULTS", conflicts_with = "traces")]
    pub replay_models: Option<PathBuf>,
}

/// The JUnit and HTML files and the baseline comparison, which `eval` and `merge` give alike.
#[derive(Debug, Args)]
pub struct VerdictArgs {
    /// Also write JUnit XML here.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write a self-contained HTML report (charts, tasks, their timelines) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Compare with an earlier `results.json`, task by task (a task's repeats together).
    #[arg(long, value_name = "RESULTS")]
    pub baseline: Option<PathBuf>,
    /// Accept a baseline from a suite with another name.
    #[arg(long, requires = "baseline")]
    pub baseline_any_suite: bool,
    /// `--confidence`, `--pass-at`, `--regression-test`.
    #[command(flatten)]
    pub stats: super::stats_args::StatsArgs,
}

/// `--shard K/N|auto`.
#[derive(Clone, Copy, Debug)]
pub enum ShardArg {
    /// `K/N`.
    Fixed(Shard),
    /// `auto`: from the environment, when the run starts.
    Auto,
}

impl std::str::FromStr for ShardArg {
    type Err = String;

    fn from_str(text: &str) -> Result<ShardArg, String> {
        if text == "auto" {
            return Ok(ShardArg::Auto);
        }
        text.parse()
            .map(ShardArg::Fixed)
            .map_err(|err| format!("{err} (or auto)"))
    }
}

impl ShardArg {
    /// The shard, reading the environment for `auto` and saying on stderr which variables it used.
    fn resolve(self) -> Result<Shard, CliError> {
        match self {
            ShardArg::Fixed(shard) => Ok(shard),
            ShardArg::Auto => {
                let (shard, used) =
                    Shard::from_env(|name| std::env::var(name).ok()).map_err(CliError::Input)?;
                eprintln!("{used}");
                Ok(shard)
            }
        }
    }
}

/// `--trace-layout per-task|single`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TraceLayoutArg {
    /// One trace file per run under `DIR/runs/<eval-id>/traces/`.
    PerTask,
    /// Every run in `DIR/runs/<eval-id>/traces.jsonl`.
    Single,
}

impl From<TraceLayoutArg> for TraceLayout {
    fn from(arg: TraceLayoutArg) -> TraceLayout {
        match arg {
            TraceLayoutArg::PerTask => TraceLayout::PerTask,
            TraceLayoutArg::Single => TraceLayout::Single,
        }
    }
}

/// `--trace-flush event|run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TraceFlushArg {
    /// Each event as it happens.
    Event,
    /// A run's events together when it ends.
    Run,
}

impl From<TraceFlushArg> for TraceFlush {
    fn from(arg: TraceFlushArg) -> TraceFlush {
        match arg {
            TraceFlushArg::Event => TraceFlush::Event,
            TraceFlushArg::Run => TraceFlush::Run,
        }
    }
}

/// `--format table|json|markdown|csv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Tables for a terminal.
    Table,
    /// JSON for machines.
    Json,
    /// Markdown for pull requests.
    Markdown,
    /// CSV for spreadsheets.
    Csv,
}

impl From<FormatArg> for ReportFormat {
    fn from(arg: FormatArg) -> ReportFormat {
        match arg {
            FormatArg::Table => ReportFormat::Table,
            FormatArg::Json => ReportFormat::Json,
            FormatArg::Markdown => ReportFormat::Markdown,
            FormatArg::Csv => ReportFormat::Csv,
        }
    }
}

impl EvalArgs {
    /// The request these arguments make (`--shard auto` read from the environment now).
    pub fn request(&self) -> Result<EvalRequest, CliError> {
        let source = match &self.suite {
            Some(path) => EvalSource::Suite(path.clone()),
            None if !self.traces.is_empty() => EvalSource::Traces(self.traces.clone()),
            None => return Err(CliError::input("give a suite file or --traces PATH...")),
        };
        let mut request = EvalRequest::new(source);
        request.jobs = self.jobs;
        request.out = self.out.clone();
        request.junit = self.verdicts.junit.clone();
        request.html = self.verdicts.html.clone();
        request.baseline = self.verdicts.baseline.clone();
        request.baseline_any_suite = self.verdicts.baseline_any_suite;
        request.stats = self.verdicts.stats.options();
        request.regression_test = self.verdicts.stats.test();
        request.shard = self.shard.map(ShardArg::resolve).transpose()?;
        request.only = self.only.clone();
        request.skip = self.skip.clone();
        request.rerun_failed = self.rerun_failed.clone();
        request.resume = self.resume;
        request.repeat = self.repeat;
        request.repeat_until_decided = self.repeat_until_decided;
        request.pass_threshold = self.pass_threshold;
        request.trace_layout = self.trace_layout.map(TraceLayout::from);
        request.trace_flush = self.trace_flush.into();
        request.capture = self.capture.map(Into::into);
        request.tools_file = self.tools_file.tools_file.clone();
        request.log_dir = self.tools_file.log_dir.clone();
        request.narrowing = self.narrow.narrowing();
        request.retries = self.narrow.retries;
        request.models = self.models.clone();
        request.api_key_env = self.api_key_env.clone();
        // `-q` prints the totals only: no row need be held for the report.
        request.summary_only = self.quiet;
        request.replay_models = self.replay_models.clone();
        Ok(request)
    }
}

/// `--progress MODE`.
fn parse_progress(text: &str) -> Result<ProgressMode, String> {
    text.parse()
}
