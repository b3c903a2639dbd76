//! `looptrace eval`: run a suite (or a corpus of recorded runs), write traces, `results.json` and
//! JUnit, and print the exit-reason report.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, ValueEnum};

use super::common::{CaptureArg, ToolsFileArgs, resolve, same_file};
use super::folder_locks::{lock_output, lock_read, lock_read_linked, lock_rerun_in_place};
use super::output_checks::{
    Inputs, folder_of, is_device, probe_writable, refuse_blocked_logs, refuse_own_folder_elsewhere,
    refuse_symlink, refuse_traces_as_outputs, refuse_wrong_kind,
};
use super::progress::{Progress, ProgressMode};
use super::{CliError, CliResult, Outcome};
use looptrace::eval::store::{
    Owing, RESULTS_NAME, ROWS_NAME, RUN_FORMAT, RUNS_DIR, RowKey, RowState, RunFolder, RunHeader,
    RunKind, RunRead, Seal, V1_PARTIAL_NAME, bytes_under, convert_v1, copy_runs, list_runs, owed,
    read_run, rebuild_view as rebuild_store_view,
};
use looptrace::eval::{
    Attempt, Comparison, EachRow, OutcomeCounts, PassRate, RESULTS_FORMAT, RESULTS_FORMAT_V1,
    ReportFormat, ResultsFile, RowsOnDisk, RunnerOptions, SINGLE_TRACE, Shard, Suite, SuiteInfo,
    TaskEntry, TaskResult, Totals, TraceFlush, TraceLayout, TraceTarget, apply_models, carry_over,
    compare, compare_counted, corpus_suite, ends_with_finished_run, failed_ids, finished_runs,
    list_shards, load_suite_with_text_for, now_rfc3339, read_results, resolve_models, run_tasks,
    select_tasks, still_owed, suite_info, summary_line, write_junit, write_results,
};
use looptrace::tools::{TaskTools, ToolRegistry};
use looptrace::trace::Summarizer;

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
    /// `per-task` (the default): `DIR/traces/<task-id>.jsonl`; `single`: every run in
    /// `DIR/traces.jsonl`. `--rerun-failed` keeps the layout of the results it updates.
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
    /// The variable holding the API key of every `--model` given as `API:MODEL@BASE_URL`.
    #[arg(long, value_name = "VAR", requires = "models")]
    pub api_key_env: Option<String>,
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
    /// One trace file per run under `DIR/traces/`.
    PerTask,
    /// Every run in `DIR/traces.jsonl`.
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

/// The most repeats `--repeat` takes.
const MAX_REPEATS: u32 = 10_000;

/// Runs `looptrace eval`.
pub fn run(args: EvalArgs) -> CliResult {
    if let Some(dir) = &args.rebuild_view {
        return rebuild_view(dir);
    }
    if args.jobs == Some(0) {
        return Err(CliError::input("--jobs must be at least 1"));
    }
    if args.repeat == 0 {
        return Err(CliError::input("--repeat must be at least 1"));
    }
    let adaptive = super::stats_args::adaptive_rule(&args)?;
    let repeats = adaptive.as_ref().map_or(args.repeat, |rule| rule.max);
    // Each repeat gets its trace folder before any task runs: a mistyped count must not create
    // millions of them.
    if repeats > MAX_REPEATS {
        return Err(CliError::input(format!(
            "--repeat must be at most {MAX_REPEATS}"
        )));
    }
    let shard = args.shard.map(ShardArg::resolve).transpose()?;
    let otlp = super::otlp_push::EvalPush::start(args.otlp_endpoint.as_deref())?;
    // The registry (compiling its tools' schemas) is built on a thread of its own while the suite
    // is read, which leaves a core idle at its start and end.
    let (tools, loaded) = std::thread::scope(|scope| {
        let tools = std::thread::Builder::new()
            .spawn_scoped(scope, ToolRegistry::builtin)
            .ok();
        let loaded = load(&args);
        (tools.and_then(|t| t.join().ok()), loaded)
    });
    let (suite, inputs) = loaded?;
    let tools = tools.unwrap_or_else(ToolRegistry::builtin);
    // Held until the process ends: freeing a large suite task by task would only delay the exit.
    let suite = std::mem::ManuallyDrop::new(suite);
    let baseline = args
        .verdicts
        .baseline
        .as_deref()
        .map(|path| read_baseline(path, &suite.name, args.verdicts.baseline_any_suite))
        .transpose()?;
    args.verdicts.stats.check(repeats, baseline.as_ref())?;
    // A rerun takes its folders' locks before it reads the results: in place, it writes that
    // folder; into another, it reads it to its end (it copies the runs it builds on first).
    // Without `--out`, a rerun writes the results' folder.
    let rerun_elsewhere = match (&args.rerun_failed, &args.out) {
        (Some(path), Some(out)) => !same_file(&folder_of(path), out),
        _ => false,
    };
    let mut rerun_lock = None;
    let mut _reading = Vec::new();
    // A folder that cannot be opened holds no results: reading them says so.
    if let Some(path) = args.rerun_failed.as_ref().filter(|p| folder_of(p).is_dir()) {
        let source = folder_of(path);
        if rerun_elsewhere {
            _reading.push(lock_read("--rerun-failed", &source)?);
        } else {
            rerun_lock = Some(lock_rerun_in_place(&source)?);
        }
        _reading.extend(lock_read_linked("--rerun-failed", path)?);
    }
    let previous = match &args.rerun_failed {
        Some(path) => Some(read_rerun(path, &suite, repeats)?),
        None => None,
    };
    let layout = match (&previous, args.trace_layout) {
        (_, Some(given)) => TraceLayout::from(given),
        (Some(previous), None) => layout_of(previous),
        (None, None) => TraceLayout::PerTask,
    };
    let out = match (&args.out, &args.rerun_failed) {
        (Some(out), _) => out.clone(),
        (None, Some(path)) => folder_of(path),
        (None, None) => Path::new("looptrace-runs").join(folder_name(&suite.name)),
    };
    let results_path = out.join(RESULTS_NAME);
    // `--only`/`--skip` choose the tasks first; a shard then splits what they chose, so every
    // shard of one split must be given the same patterns (merge checks).
    let (chosen, selection) = if args.only.is_empty() && args.skip.is_empty() && previous.is_none()
    {
        (None, None)
    } else {
        let entries = suite.tasks.entries();
        let (mut tasks, mut selection) =
            select_tasks(entries, &args.only, &args.skip).map_err(CliError::Input)?;
        if tasks.is_empty() {
            return Err(CliError::input(
                "--only and --skip together select no task of the suite",
            ));
        }
        if let (Some(previous), Some(path)) = (&previous, &args.rerun_failed) {
            let failed = failed_ids(previous, &suite);
            tasks.retain(|&i| failed.contains(entries[i].id.as_str()));
            selection.tasks = tasks.iter().map(|&i| entries[i].id.to_string()).collect();
            selection.rerun_failed = Some(path.display().to_string());
            if tasks.is_empty() {
                // Interrupted results owe runs only to tasks still in the suite: once those have
                // left it, the interruption is settled and the results stand as they are.
                let settled = previous.interrupted
                    && still_owed(previous, &previous.tasks, &suite).is_empty();
                let why = if settled {
                    ", and the tasks its interrupted evaluation did not reach are no longer in the suite"
                } else {
                    ""
                };
                eprintln!(
                    "nothing to rerun: no selected task failed, errored or was interrupted in `{}`{why} (left as it was)",
                    path.display()
                );
                print_report(
                    previous,
                    None,
                    None,
                    &args.verdicts.stats.options(),
                    &[],
                    args.format,
                    args.quiet,
                )?;
                return Ok(if settled {
                    verdict_of_rows(previous, None)
                } else {
                    verdict(previous, None)
                });
            }
        }
        (Some(tasks), Some(selection))
    };
    // Positions in the suite; tasks are read only when they run.
    let selected = suite.tasks.select(match shard {
        Some(shard) => {
            Some(shard.select(&chosen.unwrap_or_else(|| (0..suite.tasks.len()).collect())))
        }
        None => chosen,
    });
    // Nothing eval writes may be one of its inputs (the suite, the baseline, a replayed recording,
    // the results a rerun reads), whatever path or link leads there, or another of its outputs;
    // and no output is written through a symbolic link. Everything below `DIR/runs/` is created
    // new, so only the view and the report files can meet an existing file.
    let mut input_paths = inputs;
    input_paths.extend(args.rerun_failed.iter().cloned());
    let inputs = Inputs::of(&input_paths);
    let outputs = [
        ("--out", Some(results_path.clone())),
        ("--junit", args.verdicts.junit.clone()),
        ("--html", args.verdicts.html.clone()),
    ];
    for (flag, output) in outputs
        .iter()
        .filter_map(|(flag, path)| path.as_ref().map(|p| (*flag, p)))
    {
        refuse_symlink("eval", flag, output)?;
        refuse_wrong_kind(flag, output)?;
        // A rerun in place replaces the view it reads.
        if !(flag == "--out"
            && args
                .rerun_failed
                .as_ref()
                .is_some_and(|r| same_file(r, output)))
        {
            inputs.refuse_overwriting(flag, output)?;
        }
    }
    // Through a link, eval would write files in another folder, out of that folder's lock.
    refuse_own_folder_elsewhere("--out", &out.join(RUNS_DIR), "eval writes its runs there")?;
    if let Some(tools) = &suite.tools
        && let Some(dir) = &args.tools_file.log_dir
    {
        refuse_blocked_logs("--log-dir", tools, dir)?;
    }
    // Every task's working folder is a copy of the tools file's template: the output folder
    // (which holds the working folders) may not be inside it.
    if let Some(template) = suite.tools.as_ref().and_then(|t| t.template())
        && let (Some(template), Some(resolved)) = (resolve(template), resolve(&out))
        && resolved.starts_with(&template)
    {
        return Err(CliError::input(format!(
            "--out `{}` is inside the tools file's working-folder template `{}`, which every task copies: choose another --out",
            out.display(),
            template.display()
        )));
    }
    for (flag, report) in [
        ("--junit", &args.verdicts.junit),
        ("--html", &args.verdicts.html),
    ] {
        let Some(report) = report else { continue };
        refuse_report_clash(flag, report, &results_path, &out.join(RUNS_DIR))?;
        let folder = folder_of(report);
        if !folder.is_dir() && !same_file(&folder, &out) {
            return Err(CliError::input(format!(
                "{flag} `{}`: the folder does not exist",
                report.display()
            )));
        }
    }
    // The traces the baseline's rows name are inputs, and so are those of the results a rerun
    // updates.
    let reports: Vec<(&str, &PathBuf)> = [
        ("--junit", &args.verdicts.junit),
        ("--html", &args.verdicts.html),
    ]
    .into_iter()
    .filter_map(|(flag, path)| path.as_ref().map(|p| (flag, p)))
    .collect();
    if let (Some(baseline), Some(path)) = (&baseline, &args.verdicts.baseline) {
        refuse_traces_as_outputs(&reports, baseline, path, "the baseline")?;
    }
    if let (Some(previous), Some(path)) = (&previous, &args.rerun_failed) {
        refuse_traces_as_outputs(&reports, previous, path, "the results")?;
    }
    // A device (`/dev/null`) takes both.
    if let (Some(junit), Some(html)) = (&args.verdicts.junit, &args.verdicts.html)
        && same_file(junit, html)
        && !is_device(html)
    {
        return Err(CliError::input("--html and --junit name the same file"));
    }
    // Every output is known to be writable before the first task runs, not after the last; the
    // report files first where their folders exist already, so that refusing one leaves no
    // `--out` folder made for nothing.
    let report_files = [
        ("--junit", args.verdicts.junit.clone()),
        ("--html", args.verdicts.html.clone()),
    ];
    let probe_report_files = |only_existing: bool| -> Result<(), CliError> {
        for (flag, path) in report_files
            .iter()
            .filter_map(|(f, p)| p.as_ref().map(|p| (*f, p)))
        {
            let folder = folder_of(path);
            if !only_existing || folder.is_dir() {
                probe_writable(flag, &folder)?;
            }
        }
        Ok(())
    };
    probe_report_files(true)?;
    // Held until the process ends (an in-place rerun holds it since it began). Only the folder is
    // made to take it: an evaluation refused because another holds it makes nothing inside.
    let _lock = match rerun_lock {
        Some(lock) => lock,
        None => {
            std::fs::create_dir_all(&out).map_err(|err| {
                CliError::input(format!(
                    "failed to create the output folder `{}`: {err}",
                    out.display()
                ))
            })?;
            lock_output(&out)?
        }
    };
    probe_writable("--out", &out)?;
    probe_report_files(false)?;
    let info = suite_info(&suite);
    let settings = Settings {
        shard,
        repeats,
        capture: suite.capture,
        layout: layout.as_str(),
    };
    // The run this one continues, and the rows it holds that need no run again.
    let mut parents = Vec::new();
    let mut kept: Vec<Option<TaskResult>> = Vec::new();
    let position = |task: usize, repeat: u32| task * repeats as usize + (repeat as usize - 1);
    if args.resume {
        match resumable(&out, &info, &settings, (&args.only, &args.skip))? {
            Resumable::Run(parent) => {
                kept = kept_rows(&out, &parent, selected.entries(), repeats)?;
                parents.push(parent.header.eval_id);
            }
            Resumable::Complete(previous) => {
                if let Err(why) = same_runs(&previous, &settings, selected.entries()) {
                    return Err(CliError::input(format!(
                        "--resume: `{}` is complete, but {why}: run without --resume to replace it",
                        results_path.display()
                    )));
                }
                eprintln!(
                    "nothing to resume: `{}` is complete (left as it was)",
                    results_path.display()
                );
                print_report(
                    &previous,
                    None,
                    None,
                    &args.verdicts.stats.options(),
                    &[],
                    args.format,
                    args.quiet,
                )?;
                return Ok(verdict(&previous, None));
            }
            Resumable::Nothing => eprintln!(
                "no run in `{}` to resume from: running every task",
                out.join(RUNS_DIR).display()
            ),
        }
    }
    if let (Some(previous), Some(path)) = (&previous, &args.rerun_failed) {
        parents = previous.runs.clone();
        if rerun_elsewhere {
            copy_runs(&folder_of(path), &out, &parents)
                .map_err(|e| CliError::internal(e.to_string()))?;
        }
    }
    let kept_count = kept.iter().flatten().count();
    let stop = Arc::new(AtomicBool::new(false));
    // A first Ctrl-C or SIGTERM (what CI runners and `kill` send) stops scheduling; a second
    // signal ends the process at once. The shutdown hook is registered first so that it sees
    // the flag as the previous signal left it.
    // Ending at once kills the process groups of running tools and gates first: they run in
    // groups of their own, out of the terminal's reach.
    let signals = [
        (signal_hook::consts::SIGINT, 130),
        (signal_hook::consts::SIGTERM, 143),
    ];
    looptrace::process::groups::exit_on_signal(&signals, Some(Arc::clone(&stop)));
    for (signal, _) in signals {
        let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let created_at = now_rfc3339();
    let eval_id = looptrace::run::unique_token();
    let summarizer = Summarizer::from_env();
    let internal = |what: &str, path: &Path, err: std::io::Error| {
        CliError::internal(format!("failed to {what} `{}`: {err}", path.display()))
    };
    let kind = match (&previous, parents.is_empty()) {
        (Some(_), _) => RunKind::Rerun,
        (None, false) => RunKind::Resume,
        (None, true) => RunKind::Eval,
    };
    // The view lists an evaluation's rows in suite order; a rerun's, every task of the suite.
    let order: Vec<String> = match kind {
        RunKind::Rerun => suite
            .tasks
            .entries()
            .iter()
            .map(|t| t.id.to_string())
            .collect(),
        _ => selected
            .entries()
            .iter()
            .map(|t| t.id.to_string())
            .collect(),
    };
    let header = RunHeader {
        format: RUN_FORMAT.to_owned(),
        eval_id: eval_id.clone(),
        looptrace_version: env!("CARGO_PKG_VERSION").to_owned(),
        created_at: created_at.clone(),
        kind,
        parents,
        suite: info.clone(),
        capture: suite.capture,
        repeats,
        adaptive: adaptive.clone(),
        trace_layout: layout.as_str().to_owned(),
        shard,
        only: args.only.clone(),
        skip: args.skip.clone(),
        selection: selection.clone(),
        tasks: order,
    };
    let run = RunFolder::create(&out, &header).map_err(|e| CliError::internal(e.to_string()))?;
    let run_dir = run.dir().to_path_buf();
    let traces = match layout {
        TraceLayout::PerTask => {
            let traces = run_dir.join("traces");
            std::fs::create_dir(&traces).map_err(|e| internal("create", &traces, e))?;
            for k in (1..=repeats).filter(|_| repeats > 1) {
                let folder = traces.join(format!("r{k}"));
                std::fs::create_dir(&folder).map_err(|e| internal("create", &folder, e))?;
            }
            TraceTarget::PerTask(run_dir.clone())
        }
        TraceLayout::Single => {
            let path = run_dir.join(SINGLE_TRACE);
            let file = looptrace::output::create_new_append(&path)
                .map_err(|e| internal("write", &path, e))?;
            TraceTarget::Single(file)
        }
    };
    let task_tools = suite.tools.clone().map(|file| {
        let logs = args.tools_file.log_dir.clone();
        TaskTools::new(file, Some(logs.unwrap_or_else(|| run_dir.join("logs"))))
    });
    let total = selected.len() * repeats as usize;
    let mut collected = Collected::new(
        total,
        selected.len(),
        repeats as usize,
        baseline.is_some() || kind != RunKind::Eval,
        args.verdicts.html.is_some() || kind != RunKind::Eval,
    );
    for (pos, row) in kept
        .iter()
        .enumerate()
        .filter_map(|(pos, row)| row.as_ref().map(|row| (pos, row)))
    {
        collected.add(pos, None, row);
    }
    // Epochs: every task once, then every task again, so an early stop leaves whole epochs.
    // With adaptive repeats, one epoch at a time: each next one runs the undecided tasks only.
    let epochs = if adaptive.is_some() { 1 } else { repeats };
    let attempts: Vec<Attempt> = (1..=epochs)
        .flat_map(|repeat| (0..selected.len()).map(move |task| Attempt { task, repeat }))
        .filter(|a| {
            kept.get(position(a.task, a.repeat))
                .is_none_or(Option::is_none)
        })
        .collect();
    drop(kept);
    let most = if adaptive.is_some() {
        selected.len() * repeats as usize
    } else {
        attempts.len()
    };
    let mode = match (args.quiet, args.progress) {
        (true, _) => ProgressMode::None,
        (false, Some(mode)) => mode,
        (false, None) => ProgressMode::for_stderr(),
    };
    let progress = Progress::new(most, repeats, mode);
    // The runs of the epochs before this one, so the progress line counts on across epochs.
    let done_before = std::sync::atomic::AtomicUsize::new(0);
    let on_done = |done: usize, task: &TaskResult| {
        if let Some(progress) = &progress {
            progress.task_done(done_before.load(Ordering::SeqCst) + done, task);
        }
        otlp.run_ended(&out, task);
    };
    let options = RunnerOptions {
        jobs,
        capture: suite.capture,
        summarizer,
        eval_id: eval_id.clone(),
        traces: Some(traces),
        trace_prefix: format!("{RUNS_DIR}/{eval_id}/"),
        flush: args.trace_flush.into(),
        repeats,
        stop: &stop,
        on_done: &on_done,
        task_tools: task_tools
            .as_ref()
            .map(|tools| (tools, run_dir.join("work"))),
    };
    let collected = std::sync::Mutex::new(collected);
    let mut attempts = attempts;
    let mut planned = attempts.len();
    let mut decisions = None;
    let ran = loop {
        let batch = &attempts;
        let on_row = |i: usize, row: TaskResult| {
            let attempt = batch[i];
            let offset = run
                .append(&row)
                .map_err(|err| format!("failed to write `{}`: {err}", run.rows_path().display()))?;
            let mut collected = collected
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            collected.add(position(attempt.task, attempt.repeat), Some(offset), &row);
            Ok(())
        };
        let ran = run_tasks(&selected, batch, &tools, &options, &on_row);
        done_before.fetch_add(batch.len(), Ordering::SeqCst);
        let Some(rule) = &adaptive else { break ran };
        if ran.is_err() || stop.load(Ordering::SeqCst) {
            break ran;
        }
        let counts = collected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .passes
            .clone();
        let next = next_epoch(rule, &counts);
        decisions = Some(next.0);
        attempts = next.1;
        if attempts.is_empty() {
            break ran;
        }
        planned += attempts.len();
    };
    if let Some(progress) = &progress {
        progress.finish();
    }
    otlp.finish(args.quiet);
    ran.map_err(CliError::internal)?;
    let collected = collected
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let rows_written = collected.totals.tasks;
    let interrupted = stop.load(Ordering::SeqCst)
        && match &adaptive {
            Some(_) => rows_written < planned || !attempts.is_empty() && decisions.is_none(),
            None => rows_written < total,
        };
    if let (Some(rule), Some(decisions), false) = (&adaptive, &decisions, args.quiet) {
        eprintln!(
            "{}",
            adaptive_summary(rule, decisions, rows_written, selected.len())
        );
    }
    // With adaptive repeats, the verdict is the test's: every task that ran decided `pass`.
    let adaptive_passed = decisions.as_ref().map(|decisions| {
        decisions
            .iter()
            .zip(&collected.passes)
            .filter(|(_, (_, runs))| *runs > 0)
            .all(|(decision, _)| *decision == looptrace::stats::Decision::Pass)
    });
    if kept_count > 0 {
        eprintln!(
            "resumed: kept {} from `{}`, ran {}",
            looptrace::plural(kept_count as u64, "row", "rows"),
            out.join(RUNS_DIR).join(&header.parents[0]).display(),
            rows_written - kept_count
        );
    }
    // Tasks the results owed a run (never reached by an interrupted evaluation, or added to the
    // suite since) that a rerun narrowed by `--only`/`--skip` left unrun: listed so the next rerun
    // runs them; interrupted results stay interrupted until it does.
    let mut not_reached = Vec::new();
    let mut seal = Seal {
        sealed: true,
        interrupted,
        not_reached: Vec::new(),
    };
    if let Some(previous) = &previous {
        let ran: Vec<TaskResult> = collected.rows.iter().flatten().cloned().collect();
        let rows = carry_over(previous, ran, &suite);
        not_reached = still_owed(previous, &rows, &suite);
        seal.interrupted = interrupted || (previous.interrupted && !not_reached.is_empty());
        seal.not_reached = not_reached.clone();
    }
    run.seal(&seal)
        .map_err(|e| CliError::internal(e.to_string()))?;
    // A plain evaluation's view is its own rows, copied from its log as they are; the others
    // fold their rows over their parents'.
    let results = if kind == RunKind::Eval {
        let offsets: Vec<u64> = collected.offsets.iter().flatten().copied().collect();
        let on_disk = RowsOnDisk {
            path: run.rows_path(),
            offsets: &offsets,
        };
        let streamed = ResultsFile {
            format: RESULTS_FORMAT.to_owned(),
            looptrace_version: env!("CARGO_PKG_VERSION").to_owned(),
            created_at,
            eval_id: Some(eval_id.clone()),
            suite: info,
            shard,
            selection,
            repeats: (repeats > 1).then_some(repeats),
            adaptive: adaptive.clone(),
            capture: suite.capture,
            interrupted,
            partial: false,
            not_reached: Vec::new(),
            missing_shards: Vec::new(),
            runs: if offsets.is_empty() {
                Vec::new()
            } else {
                vec![eval_id.clone()]
            },
            totals: collected.totals.clone(),
            tasks: on_disk,
        };
        write_results(&results_path, &streamed).map_err(|e| internal("write", &results_path, e))?;
        if let Some(junit) = &args.verdicts.junit {
            write_junit_file(junit, &streamed, &streamed.tasks)?;
        }
        let tasks = if collected.all {
            collected.rows.iter().flatten().cloned().collect()
        } else {
            let mut failing = collected.failing.clone();
            failing.sort_by_key(|(position, _)| *position);
            failing.into_iter().map(|(_, row)| row).collect()
        };
        streamed.with_tasks(tasks)
    } else {
        let results =
            rebuild_store_view(&out, &eval_id).map_err(|e| CliError::internal(e.to_string()))?;
        write_results(&results_path, &results).map_err(|e| internal("write", &results_path, e))?;
        // Last: a JUnit file that cannot be written leaves the folder as the results say.
        if let Some(junit) = &args.verdicts.junit {
            write_junit_file(junit, &results, &results.tasks[..])?;
        }
        results
    };
    // A rerun's or resume's report counts its pass rates from the rows of its view.
    let pass_rates = match kind {
        RunKind::Eval => collected.pass_rates(selected.entries()),
        _ => None,
    };
    // A rerun's results hold the tasks it carried over too: the baseline covers them as well.
    let scoped = baseline.as_ref().map(|b| {
        let compared: HashSet<&str> = match &previous {
            Some(_) => results.tasks.iter().map(|t| t.id.as_str()).collect(),
            None => selected.entries().iter().map(|t| t.id.as_str()).collect(),
        };
        in_scope(b, &suite, &compared)
    });
    // Under a model matrix a task's rows are compared per model.
    let keys: Vec<String> = selected.entries().iter().map(TaskEntry::row_key).collect();
    let mut comparison = scoped.as_ref().map(|b| {
        if kind != RunKind::Eval || collected.outcomes.is_empty() {
            return compare(b, &results);
        }
        let ran = keys
            .iter()
            .zip(&collected.outcomes)
            .filter(|(_, counts)| counts.ran())
            .map(|(key, counts)| (key.as_str(), counts));
        compare_counted(b, ran)
    });
    judge(&mut comparison, &args.verdicts.stats)?;
    if let Some(html) = &args.verdicts.html {
        let view = scoped
            .as_ref()
            .zip(comparison.as_ref())
            .map(|(b, c)| super::html::baseline_of(c, b, &results));
        let title = format!("looptrace eval: {}", results.suite.name);
        let folder = |_: &looptrace::eval::TaskResult| out.clone();
        super::html::write_results_page(
            html,
            &title,
            &results,
            &folder,
            view.as_ref(),
            &args.verdicts.stats.options(),
            comparison.as_ref().and_then(|c| c.paired.as_ref()),
        )?;
    }
    // The console shows the suite's expected values in full; the files keep their summaries.
    let shown = looptrace::eval::for_console(&results, &suite, &options.summarizer);
    // Flaky tasks and where their runs parted, read back from what was written.
    let flaky = if repeats > 1 && !args.quiet {
        read_results(&results_path)
            .map(|written| looptrace::eval::flaky_tasks(&written, &|_| out.clone()))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    print_report(
        &shown,
        comparison.as_ref(),
        pass_rates,
        &args.verdicts.stats.options(),
        &flaky,
        args.format,
        args.quiet,
    )?;
    let traces_shown = match layout {
        TraceLayout::PerTask => run_dir.join("traces"),
        TraceLayout::Single => run_dir.join(SINGLE_TRACE),
    };
    if !args.quiet {
        let runs = list_runs(&out).map_or(0, |ids| ids.len());
        eprintln!(
            "results: {} (traces in {}; `{}` holds {}, {})",
            results_path.display(),
            traces_shown.display(),
            out.join(RUNS_DIR).display(),
            looptrace::plural(runs as u64, "run", "runs"),
            human_bytes(bytes_under(&out.join(RUNS_DIR)))
        );
    }
    if interrupted {
        let rest = match &previous {
            Some(_) => format!("--rerun-failed `{}` runs the rest", results_path.display()),
            None => "--resume runs the rest".to_owned(),
        };
        eprintln!(
            "interrupted: {} of {} ran; results and traces so far are in `{}` ({rest})",
            rows_written,
            looptrace::plural(total as u64, "run", "runs"),
            out.display()
        );
        return Ok(Outcome::Failures);
    }
    if !not_reached.is_empty() {
        let stays = if results.interrupted {
            format!("`{}` stays interrupted, and ", results_path.display())
        } else {
            String::new()
        };
        eprintln!(
            "not run yet: {} the results do not cover (not reached when interrupted, or added to the suite; left out by --only/--skip): {stays}--rerun-failed `{}` runs them",
            looptrace::plural(not_reached.len() as u64, "task", "tasks"),
            results_path.display()
        );
    }
    Ok(adaptive_passed
        .and_then(|passed| adaptive_outcome(&results, passed, comparison.as_ref()))
        .unwrap_or_else(|| verdict(&results, comparison.as_ref())))
}

/// The exit code of adaptive repeats whose tasks all decided `pass` (`passed`) or not: 0 only
/// when they did and no task ended in an internal error it did not expect. `None` when a
/// statistical comparison with a baseline decides instead.
pub(super) fn adaptive_outcome(
    results: &ResultsFile,
    passed: bool,
    comparison: Option<&Comparison>,
) -> Option<Outcome> {
    if comparison.is_some_and(Comparison::tested) {
        return None;
    }
    let unexpected = results.tasks.iter().any(|t| {
        t.exit_reason == looptrace::run::ExitReason::InternalError
            && t.expectation != looptrace::eval::Verdict::Met
    });
    Some(if passed && !unexpected {
        Outcome::Success
    } else {
        Outcome::Failures
    })
}

/// `eval --rebuild-view DIR`: writes `DIR/results.json` again from `DIR/runs/`, the view of the
/// newest run (converting a folder of results format 1 into a run store first).
fn rebuild_view(dir: &Path) -> CliResult {
    let _lock = lock_output(dir)?;
    let results_path = dir.join(RESULTS_NAME);
    let ids = list_runs(dir).map_err(|e| CliError::input(e.to_string()))?;
    let head = match ids.last() {
        Some(head) => head.clone(),
        None => {
            let id = convert_v1(dir).map_err(|e| CliError::input(e.to_string()))?;
            eprintln!(
                "converted `{}` (results format 1) into the run `{}`",
                results_path.display(),
                dir.join(RUNS_DIR).join(&id).display()
            );
            id
        }
    };
    refuse_symlink("eval", "--rebuild-view", &results_path)?;
    let view = write_view(dir, &head)?;
    eprintln!(
        "rebuilt `{}` from the run `{head}` ({})",
        results_path.display(),
        looptrace::plural(view.tasks.len() as u64, "row", "rows")
    );
    Ok(Outcome::Success)
}

/// Writes `DIR/results.json` as the view of run `head`, and returns it.
fn write_view(dir: &Path, head: &str) -> Result<ResultsFile, CliError> {
    let view = rebuild_store_view(dir, head).map_err(|e| CliError::input(e.to_string()))?;
    let path = dir.join(RESULTS_NAME);
    write_results(&path, &view).map_err(|err| {
        CliError::internal(format!("failed to write `{}`: {err}", path.display()))
    })?;
    Ok(view)
}

/// Bytes as people read them: `812 B`, `4.2 KB`, `1.3 MB`, `2.0 GB`.
pub(super) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// What the evaluation keeps of its rows while they are written to its run's log.
struct Collected {
    /// Where each row starts in the log, by output position (`None` for a resume's kept rows).
    offsets: Vec<Option<u64>>,
    /// Every row, by output position, when they are all wanted (a resume, a rerun, the HTML
    /// page); empty otherwise.
    rows: Vec<Option<TaskResult>>,
    /// Counts over the rows.
    totals: Totals,
    /// The rows that fail the evaluation, with their output positions, for the report.
    failing: Vec<(usize, TaskResult)>,
    /// With `--repeat`: each task's repeats that passed and repeats that ran, for the report's
    /// pass rates.
    passes: Vec<(u32, u32)>,
    /// With `--baseline`: each task's runs counted for the comparison.
    outcomes: Vec<OutcomeCounts>,
    repeats: usize,
    /// Whether every row is held.
    all: bool,
}

impl Collected {
    fn new(total: usize, tasks: usize, repeats: usize, baseline: bool, all: bool) -> Self {
        let per_task = |wanted: bool| if wanted && !all { tasks } else { 0 };
        Collected {
            offsets: vec![None; total],
            rows: if all { vec![None; total] } else { Vec::new() },
            totals: Totals::zero(),
            failing: Vec::new(),
            passes: vec![(0, 0); tasks],
            outcomes: vec![OutcomeCounts::default(); per_task(baseline)],
            repeats,
            all,
        }
    }

    fn add(&mut self, position: usize, offset: Option<u64>, row: &TaskResult) {
        self.offsets[position] = offset;
        self.totals.add(row);
        if let Some((passed, runs)) = self.passes.get_mut(position / self.repeats) {
            *runs += 1;
            *passed += u32::from(row.passes());
        }
        if let Some(counts) = self.outcomes.get_mut(position / self.repeats) {
            counts.add(row, position);
        }
        if self.all {
            self.rows[position] = Some(row.clone());
        } else if row.fails() {
            self.failing.push((position, row.clone()));
        }
    }

    /// The pass rates of the tasks that ran, in suite order, when the report cannot count them
    /// from the rows it holds.
    fn pass_rates<'a>(&self, tasks: &'a [TaskEntry]) -> Option<Vec<PassRate<'a>>> {
        if self.all || self.passes.is_empty() {
            return None;
        }
        Some(
            tasks
                .iter()
                .zip(&self.passes)
                .filter(|(_, (_, runs))| *runs > 0)
                .map(|(task, &(passed, runs))| PassRate {
                    id: task.id.as_str(),
                    model: task.model_label(),
                    passed,
                    runs,
                })
                .collect(),
        )
    }
}

/// After an epoch of adaptive repeats: each task's decision so far, and the next epoch's attempts
/// (the undecided tasks that have not yet run `rule.max` times).
fn next_epoch(
    rule: &looptrace::stats::AdaptiveRule,
    counts: &[(u32, u32)],
) -> (Vec<looptrace::stats::Decision>, Vec<Attempt>) {
    use looptrace::stats::Decision;
    let sprt = rule.sprt();
    let decisions: Vec<Decision> = counts
        .iter()
        .map(|&(passed, runs)| sprt.decide(passed, runs))
        .collect();
    let attempts = decisions
        .iter()
        .zip(counts)
        .enumerate()
        .filter(|(_, (decision, (_, runs)))| {
            **decision == Decision::Undecided && *runs > 0 && *runs < rule.max
        })
        .map(|(task, (_, (_, runs)))| Attempt {
            task,
            repeat: runs + 1,
        })
        .collect();
    (decisions, attempts)
}

/// `adaptive repeats: 23 runs of at most 60 (37 saved, 62%); 2 tasks pass, 1 fails, 0 undecided`.
fn adaptive_summary(
    rule: &looptrace::stats::AdaptiveRule,
    decisions: &[looptrace::stats::Decision],
    runs: usize,
    tasks: usize,
) -> String {
    use looptrace::stats::Decision;
    let most = tasks * rule.max as usize;
    let saved = most.saturating_sub(runs);
    let count = |d: Decision| decisions.iter().filter(|x| **x == d).count();
    format!(
        "adaptive repeats (SPRT, pass rate at least {} vs below, error levels {}): {} of at most {most} ({saved} saved, {:.0}%); {} pass, {} fail, {} undecided",
        rule.pass_threshold,
        rule.alpha,
        looptrace::plural(runs as u64, "run", "runs"),
        if most == 0 {
            0.0
        } else {
            saved as f64 * 100.0 / most as f64
        },
        looptrace::plural(count(Decision::Pass) as u64, "task", "tasks"),
        count(Decision::Fail),
        count(Decision::Undecided)
    )
}

/// The baseline's tasks this evaluation can speak about: those it ran (or, rerunning, carried
/// over), and those no longer in the suite at all. A shard leaves out the other shards' tasks, which are neither.
fn in_scope(baseline: &ResultsFile, suite: &Suite, ran: &HashSet<&str>) -> ResultsFile {
    let in_suite: HashSet<&str> = suite
        .tasks
        .entries()
        .iter()
        .map(|t| t.id.as_str())
        .collect();
    let mut scoped = baseline.clone();
    scoped
        .tasks
        .retain(|t| ran.contains(t.id.as_str()) || !in_suite.contains(t.id.as_str()));
    scoped
}

/// The trace layout of the results a rerun updates (told by their rows' `trace`), which its new
/// run keeps unless `--trace-layout` is given.
fn layout_of(previous: &ResultsFile) -> TraceLayout {
    let single = previous
        .tasks
        .iter()
        .filter_map(|t| t.trace.as_deref())
        .any(|trace| trace.ends_with(SINGLE_TRACE));
    if single {
        TraceLayout::Single
    } else {
        TraceLayout::PerTask
    }
}

/// What `--resume` found in the output folder.
enum Resumable {
    /// The run to continue: the newest, which a crash or a signal stopped.
    Run(Box<RunRead>),
    /// The newest run ended with every row, and `results.json` is its view: nothing to do.
    Complete(Box<ResultsFile>),
    /// No run to continue: run everything.
    Nothing,
}

/// Finds the run `--resume` continues: the newest of `out`, unless it ended whole. A run of
/// another suite, capture, repeat count, trace layout, shard or selection is refused, as is an
/// interrupted rerun (the same rerun again continues it); a folder of results format 1 is refused
/// naming its conversion.
fn resumable(
    out: &Path,
    info: &SuiteInfo,
    settings: &Settings<'_>,
    (only, skip): (&[String], &[String]),
) -> Result<Resumable, CliError> {
    let ids = list_runs(out).map_err(|e| CliError::input(e.to_string()))?;
    let results_path = out.join(RESULTS_NAME);
    let Some(newest) = ids.last() else {
        if out.join(V1_PARTIAL_NAME).exists()
            || read_results(&results_path).is_ok_and(|r| r.format == RESULTS_FORMAT_V1)
        {
            return Err(CliError::input(format!(
                "--resume: `{}` holds results format 1 (an output folder rewritten in place), which this looptrace does not continue: convert it with `looptrace eval --rebuild-view {}` and run again, or run without --resume",
                out.display(),
                out.display()
            )));
        }
        return Ok(Resumable::Nothing);
    };
    let run = read_run(out, newest).map_err(|e| CliError::input(e.to_string()))?;
    let run_path = out.join(RUNS_DIR).join(newest);
    let refuse = |why: String| {
        Err(CliError::input(format!(
            "--resume: the run `{}` {why}",
            run_path.display()
        )))
    };
    let header = &run.header;
    let whole = run.seal.as_ref().is_some_and(|seal| !seal.interrupted);
    if whole {
        // A crash after the run ended but before its view was written: the view is all it owes.
        let view_is_older = read_results(&results_path).map_or(true, |view| {
            view.eval_id.as_deref() != Some(newest.as_str())
        });
        if view_is_older && header.suite == *info {
            write_view(out, newest)?;
            eprintln!(
                "the run `{}` ended whole: wrote its view `{}`",
                run_path.display(),
                results_path.display()
            );
        }
        // Results of another suite (or of this one since edited) are no evaluation to resume:
        // every task runs, as on a Job's first attempt in a folder an earlier Job left.
        return Ok(match read_results(&results_path) {
            Ok(previous) if previous.suite != *info => {
                eprintln!(
                    "`{}` is from suite {:?} (fingerprint {}), this is suite {:?} (fingerprint {}): nothing of it to resume",
                    results_path.display(),
                    previous.suite.name,
                    previous.suite.short_fingerprint(),
                    info.name,
                    info.short_fingerprint()
                );
                Resumable::Nothing
            }
            Ok(previous) if !previous.interrupted => Resumable::Complete(Box::new(previous)),
            _ => Resumable::Nothing,
        });
    }
    if header.kind == RunKind::Rerun {
        return refuse(format!(
            "was an interrupted `--rerun-failed {}`, whose rows --resume cannot continue: run that rerun again",
            header
                .selection
                .as_ref()
                .and_then(|s| s.rerun_failed.as_deref())
                .unwrap_or("RESULTS")
        ));
    }
    if header.suite != *info {
        return refuse(format!(
            "is from suite {:?} (fingerprint {}), this is suite {:?} (fingerprint {}): resume with the suite it came from, or run without --resume",
            header.suite.name,
            header.suite.short_fingerprint(),
            info.name,
            info.short_fingerprint()
        ));
    }
    // Another shard or selection too: the view would lose the first one's rows.
    let written = Settings {
        shard: header.shard,
        repeats: header.repeats,
        capture: header.capture,
        layout: &header.trace_layout,
    };
    if let Some(difference) = settings.difference(&written) {
        return refuse(format!("was {difference}"));
    }
    if header.only != only || header.skip != skip {
        return refuse(format!(
            "was written with {}, this eval has {}",
            patterns_text(&header.only, &header.skip),
            patterns_text(only, skip)
        ));
    }
    if let Some(line) = run.torn_line {
        eprintln!(
            "warning: ignored the torn last line ({line}) of `{}`, cut short by a crash",
            run_path.join(ROWS_NAME).display()
        );
    }
    Ok(Resumable::Run(Box::new(run)))
}

/// The rows of `parent`'s view a resume keeps, by output position: those whose run is whole in
/// its trace. Which rows are owed is [`owed`]; this reads the traces to say which are complete.
fn kept_rows(
    out: &Path,
    parent: &RunRead,
    selected: &[TaskEntry],
    repeats: u32,
) -> Result<Vec<Option<TaskResult>>, CliError> {
    let view = rebuild_store_view(out, &parent.header.eval_id)
        .map_err(|e| CliError::input(e.to_string()))?;
    let mut finished_in: HashMap<String, HashSet<String>> = HashMap::new();
    let mut states = Vec::with_capacity(view.tasks.len());
    for row in &view.tasks {
        let (Some(run_id), Some(trace)) = (&row.run_id, &row.trace) else {
            continue;
        };
        let complete = if trace.ends_with(SINGLE_TRACE) {
            if !finished_in.contains_key(trace) {
                let path = out.join(trace);
                let finished = finished_runs(&path).map_err(|err| {
                    CliError::input(format!("failed to read `{}`: {err}", path.display()))
                })?;
                finished_in.insert(trace.clone(), finished);
            }
            finished_in[trace].contains(run_id)
        } else {
            ends_with_finished_run(&out.join(trace), run_id)
        };
        states.push(RowState {
            key: RowKey::of(row),
            passes: !row.fails(),
            complete,
        });
    }
    let scope: Vec<RowKey> = (1..=repeats)
        .flat_map(|repeat| {
            selected
                .iter()
                .map(move |t| RowKey::new(t.id.as_str(), repeat))
        })
        .collect();
    let owed: HashSet<RowKey> = owed(Owing::Resume, &scope, &states).into_iter().collect();
    let index: HashMap<&str, usize> = selected
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut rows = vec![None; selected.len() * repeats as usize];
    for row in view.tasks {
        let key = RowKey::of(&row);
        if let Some(&task) = index.get(row.id.as_str())
            && !owed.contains(&key)
        {
            rows[task * repeats as usize + (key.repeat as usize - 1)] = Some(row);
        }
    }
    Ok(rows)
}

/// `--shard K/N` as given, for messages.
fn shard_text(shard: Option<Shard>) -> String {
    shard.map_or("no --shard".to_owned(), |s| format!("--shard {s}"))
}

/// `--only` and `--skip` as given, for messages.
fn patterns_text(only: &[String], skip: &[String]) -> String {
    let words: Vec<String> = only
        .iter()
        .map(|p| format!("--only {p:?}"))
        .chain(skip.iter().map(|p| format!("--skip {p:?}")))
        .collect();
    if words.is_empty() {
        "no --only or --skip".to_owned()
    } else {
        words.join(" ")
    }
}

/// What an evaluation ran with that `--resume` must find again, as a partial file's header or
/// complete results record it.
struct Settings<'a> {
    shard: Option<Shard>,
    repeats: u32,
    capture: looptrace::trace::Capture,
    /// `per-task` or `single`.
    layout: &'a str,
}

impl Settings<'_> {
    /// The first way `written` differs from these (`written with --repeat 2, this eval has
    /// --repeat 1`), if any.
    fn difference(&self, written: &Settings<'_>) -> Option<String> {
        let (was, now) = if written.shard != self.shard {
            (shard_text(written.shard), shard_text(self.shard))
        } else if written.repeats != self.repeats {
            (
                format!("--repeat {}", written.repeats),
                format!("--repeat {}", self.repeats),
            )
        } else if written.capture != self.capture {
            return Some(format!(
                "written with {} capture, this eval uses {}",
                written.capture.as_str(),
                self.capture.as_str()
            ));
        } else if written.layout != self.layout {
            (
                format!("--trace-layout {}", written.layout),
                format!("--trace-layout {}", self.layout),
            )
        } else {
            return None;
        };
        Some(format!("written with {was}, this eval has {now}"))
    }
}

/// Whether complete results are this command line's: the same shard, capture, repeat count and
/// trace layout, and rows for exactly the selected tasks. Says the first difference otherwise.
fn same_runs(
    previous: &ResultsFile,
    settings: &Settings<'_>,
    selected: &[TaskEntry],
) -> Result<(), String> {
    let written = Settings {
        shard: previous.shard,
        repeats: previous.repeats.unwrap_or(1),
        capture: previous.capture,
        layout: layout_of(previous).as_str(),
    };
    if let Some(difference) = settings.difference(&written) {
        return Err(format!("it was {difference}"));
    }
    let repeats = settings.repeats;
    let runs = previous
        .tasks
        .iter()
        .map(|row| (row.id.as_str(), row.repeat.unwrap_or(1)));
    let wanted = selected
        .iter()
        .flat_map(|task| (1..=repeats).map(move |repeat| (task.id.as_str(), repeat)));
    if !runs.eq(wanted) {
        return Err("its rows are not the tasks this eval selects (--only, --skip)".to_owned());
    }
    Ok(())
}

/// Reads `--rerun-failed`: complete results of this suite as a whole (merge shards first).
fn read_rerun(path: &Path, suite: &Suite, repeats: u32) -> Result<ResultsFile, CliError> {
    let previous = read_results(path).map_err(CliError::Input)?;
    let refuse = |why: String| {
        Err(CliError::input(format!(
            "--rerun-failed `{}` {why}",
            path.display()
        )))
    };
    if previous.suite.name != suite.name {
        return refuse(format!(
            "is from suite {:?}, this is suite {:?}",
            previous.suite.name, suite.name
        ));
    }
    if previous.partial {
        return refuse("is a partial merge: rerun from complete results".to_owned());
    }
    if previous.repeats.unwrap_or(1) != repeats {
        return refuse(format!(
            "ran each task {} time(s), this eval has --repeat {repeats}: give the same --repeat",
            previous.repeats.unwrap_or(1)
        ));
    }
    if let Some(shard) = previous.shard {
        return refuse(format!(
            "covers only shard {shard}: merge the shards, then rerun from the merged results"
        ));
    }
    // A row is one run of a task: two rows of one run would both be carried over.
    if let Err(problem) = looptrace::eval::check_rows(&previous) {
        return refuse(problem.to_string());
    }
    if previous.format == RESULTS_FORMAT_V1 {
        return refuse(format!(
            "is results format 1 (an output folder rewritten in place): convert its folder into a run store with `looptrace eval --rebuild-view {}`, then rerun from it",
            folder_of(path).display()
        ));
    }
    // Carried rows name their traces in the runs the results name: never a path that leads
    // elsewhere, since a rerun copies those runs and the report reads those traces.
    for (i, row) in previous.tasks.iter().enumerate() {
        let Some(trace) = row.trace.as_deref() else {
            continue;
        };
        let mut parts = Path::new(trace).components();
        let run = match (parts.next(), parts.next()) {
            (Some(std::path::Component::Normal(runs)), Some(std::path::Component::Normal(run)))
                if runs == RUNS_DIR =>
            {
                run.to_string_lossy()
            }
            _ => "".into(),
        };
        let plain = parts.all(|part| matches!(part, std::path::Component::Normal(_)));
        if !plain || !previous.runs.iter().any(|r| *r == run) {
            return refuse(format!(
                "has `tasks[{i}].trace` {trace:?}, which is not a trace in one of the runs it names (`runs/<eval-id>/...`)"
            ));
        }
    }
    // The runs it builds on must be beside it: results merged from shards name the shards' runs.
    let folder = folder_of(path);
    if let Some(missing) = previous
        .runs
        .iter()
        .find(|run| !folder.join(RUNS_DIR).join(run).is_dir())
    {
        return refuse(format!(
            "names the run `{missing}`, which `{}` does not hold (results merged from shards name the shards' runs: gather them beside the merged file first, `cp -r shard*/runs {}/`)",
            folder.join(RUNS_DIR).display(),
            folder.display()
        ));
    }
    Ok(previous)
}

/// Reads `--baseline` for suite `suite`: a partial merge cannot say what happened to the tasks it
/// lacks, and another suite's results are refused unless `any_suite` (`--baseline-any-suite`).
pub(super) fn read_baseline(
    path: &Path,
    suite: &str,
    any_suite: bool,
) -> Result<ResultsFile, CliError> {
    let baseline = read_results(path).map_err(CliError::Input)?;
    // Two rows of one run would count it twice in the comparison.
    if let Err(problem) = looptrace::eval::check_rows(&baseline) {
        return Err(CliError::input(format!(
            "--baseline `{}` {problem}",
            path.display()
        )));
    }
    if baseline.partial {
        return Err(CliError::input(format!(
            "--baseline `{}` is a partial merge (shards {} missing): compare with complete results",
            path.display(),
            list_shards(&baseline.missing_shards)
        )));
    }
    if baseline.suite.name != suite && !any_suite {
        return Err(CliError::input(format!(
            "--baseline `{}` is from suite {:?}, this is suite {:?} (--baseline-any-suite compares anyway)",
            path.display(),
            baseline.suite.name,
            suite
        )));
    }
    Ok(baseline)
}

/// The suite and every file it reads (for output-path guards).
fn load(args: &EvalArgs) -> Result<(Suite, Vec<PathBuf>), CliError> {
    let mut suite = if args.traces.is_empty() {
        let path = args
            .suite
            .as_ref()
            .ok_or_else(|| CliError::input("give a suite file or --traces PATH..."))?;
        let (mut suite, text) =
            load_suite_with_text_for(path, !args.models.is_empty()).map_err(CliError::input)?;
        // Never freed, as the suite is not: freeing megabytes of pages would only delay the exit.
        std::mem::forget(text);
        let models = resolve_models(&suite, &args.models, args.api_key_env.as_deref())
            .map_err(CliError::input)?;
        if models.len() > 1 && (args.resume || args.rerun_failed.is_some() || args.shard.is_some())
        {
            return Err(CliError::input(
                "several --model (a model matrix) cannot be combined with --resume, --rerun-failed or --shard yet",
            ));
        }
        apply_models(&mut suite, &models).map_err(CliError::input)?;
        suite
    } else {
        let corpus = corpus_suite(&args.traces, looptrace::trace::Capture::Summary)
            .map_err(CliError::input)?;
        for skipped in &corpus.skipped {
            eprintln!("warning: skipped {skipped}");
        }
        release_freed_memory();
        corpus.suite
    };
    if let Some(capture) = args.capture {
        suite.capture = capture.into();
    }
    if let Some(tools) = args.tools_file.load()? {
        if suite.tools.is_some() {
            return Err(CliError::input(
                "the suite has `tools` and --tools-file was given: use one of them",
            ));
        }
        suite.tools = Some(tools);
    }
    if let Some(tools) = &suite.tools {
        tools
            .refuse_key_vars(&suite.key_vars())
            .map_err(CliError::input)?;
    }
    let mut inputs: Vec<PathBuf> = args.suite.iter().cloned().collect();
    inputs.extend(args.verdicts.baseline.iter().cloned());
    inputs.extend(
        suite
            .tools
            .as_ref()
            .and_then(|t| t.path())
            .map(Path::to_path_buf),
    );
    inputs.extend(suite.tasks.read_files().iter().cloned());
    Ok((suite, inputs))
}

/// Hands memory freed so far back to the system. Reading a corpus frees the runs it parsed, but
/// glibc keeps the freed memory in the reading thread's arena, which the runner's threads do not
/// allocate from: without this, the evaluation's peak is the reading's and the running's added.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's own arenas to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Writes `--junit` atomically from `rows`, which are gone through twice and never held together.
fn write_junit_file<T>(
    path: &Path,
    results: &ResultsFile<T>,
    rows: &(impl EachRow + ?Sized),
) -> Result<(), CliError> {
    let failed =
        |err: String| CliError::internal(format!("failed to write `{}`: {err}", path.display()));
    let mut replacement =
        looptrace::output::Replacement::begin(path).map_err(|e| failed(e.to_string()))?;
    let mut out = std::io::BufWriter::new(replacement.writer());
    write_junit(&mut out, &results.suite.name, &results.created_at, rows).map_err(failed)?;
    out.flush().map_err(|e| failed(e.to_string()))?;
    drop(out);
    replacement.commit().map_err(|e| failed(e.to_string()))
}

/// Prints the report; `pass_rates`, when given, are those of rows the results do not hold.
pub(super) fn print_report<'a>(
    results: &'a ResultsFile,
    comparison: Option<&'a Comparison>,
    pass_rates: Option<Vec<PassRate<'a>>>,
    stats: &looptrace::stats::StatsOptions,
    flaky: &'a [looptrace::eval::FlakyTask],
    format: FormatArg,
    quiet: bool,
) -> Result<(), CliError> {
    let text = if quiet {
        summary_line(results, comparison, pass_rates)
    } else {
        let style = super::common::stdout_style();
        looptrace::eval::render_report_full(
            results,
            comparison,
            pass_rates,
            stats,
            flaky,
            format.into(),
            style,
        )
    };
    let mut out = super::common::outcome_stdout();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

pub(super) fn verdict(results: &ResultsFile, comparison: Option<&Comparison>) -> Outcome {
    // Interrupted results lack the runs the evaluation did not reach.
    if results.interrupted {
        return Outcome::Failures;
    }
    verdict_of_rows(results, comparison)
}

/// Runs the paired regression test of `--baseline` (`--regression-test` at `--confidence`).
pub(super) fn judge(
    comparison: &mut Option<Comparison>,
    stats: &super::stats_args::StatsArgs,
) -> Result<(), CliError> {
    match comparison {
        Some(c) => c
            .judge(stats.test(), stats.confidence)
            .map_err(CliError::Input),
        None => Ok(()),
    }
}

/// The verdict of the rows alone, whether or not the results were interrupted. Under a
/// statistical test (`--baseline` without `--regression-test none`), only a statistically clear
/// regression or an internal error a task did not expect fails it: a task failing as it failed
/// before does not.
fn verdict_of_rows(results: &ResultsFile, comparison: Option<&Comparison>) -> Outcome {
    let failed = if comparison.is_some_and(Comparison::tested) {
        results.tasks.iter().any(|t| {
            t.exit_reason == looptrace::run::ExitReason::InternalError
                && t.expectation != looptrace::eval::Verdict::Met
        })
    } else {
        results.tasks.iter().any(|t| t.fails())
    };
    let regressed = comparison.is_some_and(Comparison::regressed);
    if failed || regressed {
        Outcome::Failures
    } else {
        Outcome::Success
    }
}

/// A folder name from a suite name: path separators and other odd characters become `_`.
fn folder_name(name: &str) -> String {
    let clean = looptrace::eval::TaskId::sanitize(name);
    match clean.trim_matches('.') {
        "" => "suite".to_owned(),
        _ => clean,
    }
}

/// Fails when `--junit` (or `--html`) names this eval's view (`results.json`) or a file under
/// `DIR/runs/`, which only eval writes, each file once.
fn refuse_report_clash(
    flag: &str,
    report: &Path,
    view: &Path,
    runs: &Path,
) -> Result<(), CliError> {
    if same_file(report, view) {
        return Err(CliError::input(format!(
            "{flag} `{}` is the output `{}` of this eval: choose another file",
            report.display(),
            view.display()
        )));
    }
    if let (Some(folder), Some(runs)) = (resolve(&folder_of(report)), resolve(runs))
        && folder.starts_with(&runs)
    {
        return Err(CliError::input(format!(
            "{flag} `{}` is inside `{}`, where eval writes its runs: choose another file",
            report.display(),
            runs.display()
        )));
    }
    Ok(())
}

/// `--progress MODE`.
fn parse_progress(text: &str) -> Result<ProgressMode, String> {
    text.parse()
}
