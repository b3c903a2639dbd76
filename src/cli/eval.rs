//! `looptrace eval`: run a suite (or a corpus of recorded runs), write traces, `results.json` and
//! JUnit, and print the exit-reason report.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, ValueEnum};

use super::common::{CaptureArg, ToolsFileArgs, file_identity, resolve, same_file};
use super::crash_leftovers::{
    refuse_blocked_asides, remove_crash_leftovers, remove_crashed_rerun_partial,
    tidy_after_crashed_rerun, tidy_rerun_asides,
};
use super::folder_locks::{lock_output, lock_read, lock_read_linked, lock_rerun_in_place};
use super::output_checks::{
    Inputs, folder_of, is_device, named_traces, probe_writable, refuse_blocked_logs,
    refuse_not_regular, refuse_own_folder_elsewhere, refuse_symlink, refuse_traces_as_outputs,
    refuse_wrong_kind,
};
use super::progress::{Progress, ProgressMode};
use super::{CliError, CliResult, Outcome};
use looptrace::eval::{
    Attempt, Comparison, EachRow, OutcomeCounts, PARTIAL_FORMAT, PARTIAL_NAME, PartialHeader,
    PartialLog, PassRate, RESULTS_FORMAT, ReportFormat, ResultsFile, RowsOnDisk, RunnerOptions,
    SINGLE_TRACE, Shard, Suite, SuiteInfo, SuiteTask, TaskModel, TaskResult, Totals, TraceFlush,
    TraceLayout, TraceTarget, carry_over, combine_runs, combine_runs_synced, compare,
    compare_counted, corpus_suite, ends_with_finished_run, failed_ids, find_rerun_leftovers,
    finished_runs, join_aside, keep_runs, list_shards, load_suite_with_text, now_rfc3339,
    prepare_traces_dir, read_partial, read_results, remove_stale_traces, run_ids, run_tasks,
    select_tasks, still_owed, suite_info, summary_line, swap_in_aside, trace_path, write_junit,
    write_results,
};
use looptrace::tools::{TaskTools, ToolRegistry};
use looptrace::trace::Summarizer;

/// Arguments of `looptrace eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The suite file (JSON). Not needed with `--traces`.
    #[arg(required_unless_present = "traces", conflicts_with = "traces")]
    pub suite: Option<PathBuf>,
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
    /// `results.json`, updating it in place (the default `--out` is its folder).
    #[arg(long, value_name = "RESULTS", conflicts_with_all = ["shard", "traces"])]
    pub rerun_failed: Option<PathBuf>,
    /// Continue an evaluation into `--out` that crashed or was stopped: keep every task with a
    /// row in `DIR/results.partial.jsonl` and a complete trace, run the rest.
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

/// Runs `looptrace eval`.
/// The most repeats `--repeat` takes.
const MAX_REPEATS: u32 = 10_000;

pub fn run(args: EvalArgs) -> CliResult {
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
    // The registry (compiling its tools' schemas) is built on a thread of its own while the suite
    // is read, which leaves a core idle at its start and end.
    let (tools, loaded) = std::thread::scope(|scope| {
        let tools = std::thread::Builder::new()
            .spawn_scoped(scope, ToolRegistry::builtin)
            .ok();
        let loaded = load(&args);
        (tools.and_then(|t| t.join().ok()), loaded)
    });
    let (suite, mut inputs) = loaded?;
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
    // A rerun takes its folders' locks before it reads the results: an evaluation finishing
    // in between would leave it carrying rows whose runs are gone. In place, it writes that
    // folder; into another, it reads it to its end (the carried traces are copied last).
    // Without `--out`, a rerun updates the results' folder in place.
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
    let layout = match (&previous, &args.rerun_failed) {
        (Some(previous), Some(path)) => {
            rerun_layout(previous, path, args.trace_layout.map(TraceLayout::from))?
        }
        _ => args
            .trace_layout
            .map_or(TraceLayout::PerTask, TraceLayout::from),
    };
    let out = match (&args.out, &args.rerun_failed) {
        (Some(out), _) => out.clone(),
        (None, Some(path)) => folder_of(path),
        (None, None) => Path::new("looptrace-runs").join(folder_name(&suite.name)),
    };
    let results_path = out.join("results.json");
    // A rerun of the folder's own results updates them in place (and reads them till its end).
    let updated_in_place = args
        .rerun_failed
        .as_ref()
        .is_some_and(|path| same_file(path, &results_path));
    // The flag that named the output folder, for what is said of it.
    let out_flag = if args.out.is_none() && args.rerun_failed.is_some() {
        "--rerun-failed"
    } else {
        "--out"
    };
    // `--only`/`--skip` choose the tasks first; a shard then splits what they chose, so every
    // shard of one split must be given the same patterns (merge checks).
    let (chosen, selection) = if args.only.is_empty() && args.skip.is_empty() && previous.is_none()
    {
        (std::borrow::Cow::Borrowed(suite.tasks.as_slice()), None)
    } else {
        let (mut tasks, mut selection) =
            select_tasks(&suite.tasks, &args.only, &args.skip).map_err(CliError::Input)?;
        if tasks.is_empty() {
            return Err(CliError::input(
                "--only and --skip together select no task of the suite",
            ));
        }
        if let (Some(previous), Some(path)) = (&previous, &args.rerun_failed) {
            let failed = failed_ids(previous, &suite);
            tasks.retain(|t| failed.contains(t.id.as_str()));
            selection.tasks = tasks.iter().map(|t| t.id.to_string()).collect();
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
                // Only the results a rerun replaces say which runs `traces.jsonl` must keep: an
                // older copy of them names fewer.
                let partial = out.join(PARTIAL_NAME);
                if updated_in_place {
                    match layout {
                        TraceLayout::Single => tidy_after_crashed_rerun(&out, previous)?,
                        TraceLayout::PerTask => {
                            refuse_own_folder_elsewhere(
                                "--rerun-failed",
                                &out.join("traces"),
                                "a rerun tidies the traces there",
                            )?;
                            let leftovers = find_rerun_leftovers(&out.join("traces"));
                            refuse_blocked_asides("--rerun-failed", &leftovers)?;
                            tidy_rerun_asides(&out, &leftovers, Some(previous))?
                        }
                    }
                    remove_crashed_rerun_partial(&partial);
                }
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
            let rerun: HashSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
            // The folder's own results name the runs its traces hold (evaluations keep them so);
            // a copy of them may not, and a rerun elsewhere copies what they name.
            refuse_missing_carried_traces(previous, path, &rerun, !updated_in_place)?;
        }
        (std::borrow::Cow::Owned(tasks), Some(selection))
    };
    let selected = match shard {
        Some(shard) => std::borrow::Cow::Owned(shard.select(&chosen)),
        None => chosen,
    };
    // Nothing eval writes may be one of its inputs (the suite, the baseline, a replayed recording),
    // whatever path or link leads there, or another of its outputs; and no output is written
    // through a symbolic link. Task traces are checked by listing `DIR/traces` once: only files
    // already there under a selected task's name can clash.
    // The results a rerun reads are an input too, unless the rerun replaces them.
    if let Some(path) = &args.rerun_failed
        && !same_file(path, &results_path)
    {
        inputs.push(path.clone());
    }
    let input_paths = &inputs;
    let inputs = Inputs::of(input_paths);
    // A rerun into another folder also writes there the traces of the rows it carries over.
    let carried_elsewhere = previous
        .as_ref()
        .filter(|_| rerun_elsewhere)
        .map(|previous| &previous.tasks);
    // Borrowed ids, not built file names: the set is as large as the suite.
    // Built only if a folder it is checked against holds files: a new one holds none.
    let trace_names = std::cell::LazyCell::new(|| -> HashSet<&str> {
        let carried = carried_elsewhere.into_iter().flatten();
        selected
            .iter()
            .map(|task| task.id.as_str())
            .chain(carried.map(|row| row.id.as_str()))
            .collect()
    });
    let trace_folders: Vec<PathBuf> = match (layout, repeats) {
        (TraceLayout::Single, _) => Vec::new(),
        (TraceLayout::PerTask, 1) => vec![out.join("traces")],
        (TraceLayout::PerTask, n) => (1..=n)
            .map(|k| out.join("traces").join(format!("r{k}")))
            .collect(),
    };
    // Each with its kind as the listing gives it, so that checking thousands costs no call each.
    let existing_traces: Vec<(PathBuf, Option<std::fs::FileType>)> = trace_folders
        .iter()
        .flat_map(|folder| std::fs::read_dir(folder).into_iter().flatten())
        .filter_map(|entry| entry.ok())
        .filter(|entry| is_trace_of(&trace_names, &entry.file_name().to_string_lossy()))
        .map(|entry| (entry.path(), entry.file_type().ok()))
        .collect();
    // A trace is written as a new file when it has other links (`output::create_fresh`), so only
    // its kind matters: a regular file is replaced or truncated, anything else is refused.
    for (trace, kind) in &existing_traces {
        if kind.is_none_or(|kind| !kind.is_file()) {
            refuse_symlink("eval", "--out", trace)?;
            refuse_not_regular("--out", trace)?;
        }
    }
    let partial_path = out.join(PARTIAL_NAME);
    let single_path = out.join(SINGLE_TRACE);
    let outputs = [
        ("--out", Some(results_path.clone())),
        ("--out", Some(partial_path.clone())),
        // Written with the single layout, removed with the per-task one: never an input.
        ("--out", Some(single_path.clone())),
        ("--junit", args.verdicts.junit.clone()),
        ("--html", args.verdicts.html.clone()),
    ];
    let outputs: Vec<(&str, PathBuf)> = outputs
        .into_iter()
        .filter_map(|(flag, path)| path.map(|p| (flag, p)))
        .collect();
    for (flag, output) in &outputs {
        refuse_symlink("eval", flag, output)?;
        refuse_wrong_kind(flag, output)?;
        inputs.refuse_overwriting(flag, output)?;
    }
    let outputs: Vec<(&str, PathBuf)> = outputs
        .into_iter()
        .chain(
            existing_traces
                .into_iter()
                .map(|(trace, _)| ("--out", trace)),
        )
        .collect();
    // Each repeat writes its traces in a folder of its own, and each task works in one under
    // `DIR/work` when the tools file has a template: all made once tasks run.
    for folder in trace_folders.iter().skip_while(|_| repeats == 1) {
        refuse_own_folder_elsewhere("--out", folder, "eval writes a repeat's traces there")?;
    }
    refuse_own_folder_elsewhere("--out", &out.join("traces"), "eval writes its traces there")?;
    if let Some(tools) = &suite.tools {
        if tools.template().is_some() {
            refuse_own_folder_elsewhere(
                "--out",
                &out.join("work"),
                "eval makes each task's working folder there",
            )?;
        }
        match &args.tools_file.log_dir {
            Some(dir) => refuse_blocked_logs("--log-dir", tools, dir)?,
            None => {
                let logs = out.join("logs");
                if !tools.mcp_servers().is_empty() {
                    refuse_own_folder_elsewhere(
                        "--out",
                        &logs,
                        "the MCP servers' logs are written there",
                    )?;
                }
                refuse_blocked_logs("--out", tools, &logs)?
            }
        }
    }
    // The traces the baseline's rows name are inputs too, and so are those of the results a rerun
    // updates, but for the runs it replaces in `--out`.
    let outputs: Vec<(&str, &PathBuf)> = outputs.iter().map(|(flag, path)| (*flag, path)).collect();
    if let (Some(baseline), Some(path)) = (&baseline, &args.verdicts.baseline) {
        refuse_traces_as_outputs(&outputs, baseline, path, "the baseline")?;
    }
    if let (Some(previous), Some(path)) = (&previous, &args.rerun_failed) {
        let reports: Vec<_> = outputs
            .iter()
            .filter(|(flag, _)| *flag != "--out")
            .copied()
            .collect();
        refuse_traces_as_outputs(&reports, previous, path, "the results")?;
        if rerun_elsewhere {
            refuse_traces_shared_with(previous, path, &out)?;
        }
    }
    // Every task's working folder is a copy of the tools file's template: the output folder
    // (which holds the working folders) may not be inside it, nor it inside the folders eval
    // replaces (the traces, the working folders).
    if let Some(template) = suite.tools.as_ref().and_then(|t| t.template())
        && let (Some(template), Some(resolved)) = (resolve(template), resolve(&out))
    {
        if resolved.starts_with(&template) {
            return Err(CliError::input(format!(
                "--out `{}` is inside the tools file's working-folder template `{}`, which every task copies: choose another --out",
                out.display(),
                template.display()
            )));
        }
        if ["traces", "work"]
            .iter()
            .any(|folder| template.starts_with(resolved.join(folder)))
        {
            return Err(CliError::input(format!(
                "the tools file's working-folder template `{}` is inside this eval's own `{}`, whose traces and working folders every eval replaces or removes: move it or choose another --out",
                template.display(),
                out.display()
            )));
        }
    }
    // An eval removes the traces in `DIR/traces` it did not write: none may be an input, nor a
    // trace the baseline's rows name.
    refuse_inputs_in_traces(input_paths, &out.join("traces"))?;
    if let (Some(baseline), Some(path)) = (&baseline, &args.verdicts.baseline) {
        let from = folder_of(path);
        let traces: Vec<PathBuf> = named_traces(baseline)
            .into_iter()
            .map(|trace| from.join(trace))
            .collect();
        refuse_inputs_in_traces(&traces, &out.join("traces"))?;
    }
    if let Some(junit) = &args.verdicts.junit {
        refuse_output_clash(
            "--junit",
            junit,
            &[&results_path, &partial_path, &single_path],
            &out.join("traces"),
        )?;
    }
    let junit_folder = args.verdicts.junit.as_deref().map(folder_of);
    if let (Some(junit), Some(folder)) = (&args.verdicts.junit, &junit_folder)
        && !folder.is_dir()
        && !same_file(folder, &out)
    {
        return Err(CliError::input(format!(
            "--junit `{}`: the folder does not exist",
            junit.display()
        )));
    }
    if let Some(html) = &args.verdicts.html {
        refuse_output_clash(
            "--html",
            html,
            &[&results_path, &partial_path, &single_path],
            &out.join("traces"),
        )?;
        // A device (`/dev/null`) takes both.
        if args
            .verdicts
            .junit
            .as_deref()
            .is_some_and(|junit| same_file(junit, html) && !is_device(html))
        {
            return Err(CliError::input("--html and --junit name the same file"));
        }
        let folder = folder_of(html);
        if !folder.is_dir() && !same_file(&folder, &out) {
            return Err(CliError::input(format!(
                "--html `{}`: the folder does not exist",
                html.display()
            )));
        }
    }
    // A traces folder that is new or empty holds no earlier evaluation's traces: none can be
    // stale at the end, so the folder (as large as the suite) is not listed again then.
    let had_traces = std::fs::read_dir(out.join("traces")).is_ok_and(|mut d| d.next().is_some());
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
    // The single layout writes `traces.jsonl` beside the results and makes no traces folder.
    if layout == TraceLayout::PerTask {
        let traces_dir = prepare_traces_dir(&out).map_err(CliError::Input)?;
        probe_writable("--out", &traces_dir)?;
    }
    probe_report_files(false)?;
    let info = suite_info(&suite);
    // The runs to make, in output order: suite order, a task's repeats together.
    let total = selected.len() * repeats as usize;
    let position = |task: usize, repeat: u32| task * repeats as usize + (repeat as usize - 1);
    let mut kept: Vec<Option<TaskResult>> = Vec::new();
    // What `--resume` must find the earlier evaluation run with.
    let settings = Settings {
        shard,
        repeats,
        capture: suite.capture,
        layout: layout.as_str(),
    };
    let resumable = if args.resume {
        Some(resume_rows(
            &partial_path,
            &out,
            &info,
            &selected,
            layout,
            &settings,
            (&args.only, &args.skip),
            &position,
        )?)
    } else {
        None
    };
    // What a crashed evaluation or rerun was writing aside (never a file results name): no
    // other evaluation writes here while this one holds the folder's lock.
    remove_crash_leftovers(&out);
    if let Some(resumable) = resumable {
        match resumable {
            Resumable::Rows(rows) => kept = rows,
            Resumable::Complete(previous) => {
                if let Err(why) = same_runs(&previous, &settings, &selected) {
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
                "no `{}` to resume from: running every task",
                partial_path.display()
            ),
        }
    }
    // Once a task runs, the traces here stop matching the results an earlier evaluation left:
    // those go first, so a crash leaves the partial file `--resume` continues, never results
    // naming runs the traces no longer hold. A rerun keeps the results it updates, and replaces
    // them at its end.
    // What a crashed rerun left beside per-task traces: refused first if it blocks, tidied below.
    let leftovers = find_rerun_leftovers(&out.join("traces"));
    refuse_blocked_asides(out_flag, &leftovers)?;
    if !updated_in_place {
        match std::fs::remove_file(&results_path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                return Err(CliError::internal(format!(
                    "failed to remove the earlier `{}`: {err}",
                    results_path.display()
                )));
            }
            _ => {}
        }
    }
    // The results a rerun in this folder carries rows of say which runs the per-task traces a
    // crashed rerun left beside theirs must keep; an evaluation that carries none replaces those
    // traces anyway, and a rerun into another folder copies only the runs it carries.
    tidy_rerun_asides(
        &out,
        &leftovers,
        previous.as_ref().filter(|_| !rerun_elsewhere),
    )?;
    // Per-task traces a rerun updates in place are written aside and swapped in at its end.
    let traces_aside = updated_in_place && layout == TraceLayout::PerTask;
    // Only a resumed evaluation has kept rows; the others never allocate a slot per run.
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
    let task_tools = suite.tools.clone().map(|file| {
        let logs = args.tools_file.log_dir.clone();
        TaskTools::new(file, Some(logs.unwrap_or_else(|| out.join("logs"))))
    });
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let created_at = now_rfc3339();
    let eval_id = looptrace::run::unique_token();
    let summarizer = Summarizer::from_env();
    let internal = |what: &str, path: &Path, err: std::io::Error| {
        CliError::internal(format!("failed to {what} `{}`: {err}", path.display()))
    };
    // A rerun with the single layout writes its runs aside: `traces.jsonl` stays as the results it
    // updates describe it until the runs it carries over and the runs it made are joined.
    let mut aside: Option<RunsAside> = None;
    let traces = match layout {
        TraceLayout::Single if previous.is_some() => {
            let (file, path) = looptrace::output::create_temp_beside(&single_path)
                .map_err(|e| internal("write", &single_path, e))?;
            drop(file);
            let runs = aside.insert(RunsAside(path));
            let file = looptrace::output::open_append(&runs.0)
                .map_err(|e| internal("write", &runs.0, e))?;
            TraceTarget::Single(file)
        }
        TraceLayout::PerTask => {
            for folder in trace_folders.iter().skip_while(|_| repeats == 1) {
                std::fs::create_dir_all(folder).map_err(|e| internal("create", folder, e))?;
            }
            if traces_aside {
                TraceTarget::PerTaskAside(out.clone())
            } else {
                TraceTarget::PerTask(out.clone())
            }
        }
        TraceLayout::Single => {
            // A resumed evaluation keeps the runs of the rows it keeps; a new one starts empty.
            let keep = run_ids(kept.iter().flatten());
            // Only a file there already holds runs to drop; a new one is created by appending.
            if std::fs::symlink_metadata(&single_path).is_ok() {
                keep_runs(&single_path, &keep).map_err(|e| internal("write", &single_path, e))?;
            }
            let mut file = looptrace::output::open_append(&single_path)
                .map_err(|e| internal("write", &single_path, e))?;
            looptrace::trace::finish_cut_line(&mut file)
                .map_err(|e| internal("write", &single_path, e))?;
            TraceTarget::Single(file)
        }
    };
    let header = PartialHeader {
        format: PARTIAL_FORMAT.to_owned(),
        suite: info.clone(),
        eval_id: eval_id.clone(),
        capture: suite.capture,
        repeats,
        trace_layout: layout.as_str().to_owned(),
        rerun_failed: args
            .rerun_failed
            .as_ref()
            .map(|path| path.display().to_string()),
        shard,
        only: args.only.clone(),
        skip: args.skip.clone(),
    };
    let (log, kept_offsets) = PartialLog::start(&partial_path, &header, kept.iter().flatten())
        .map_err(|e| internal("write", &partial_path, e))?;
    let mut collected = Collected::new(
        total,
        selected.len(),
        repeats as usize,
        baseline.is_some(),
        args.verdicts.html.is_some(),
    );
    let kept_rows = kept
        .iter()
        .enumerate()
        .filter_map(|(pos, row)| row.as_ref().map(|row| (pos, row)));
    for ((pos, row), offset) in kept_rows.zip(kept_offsets) {
        collected.add(pos, offset, row);
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
    };
    let options = RunnerOptions {
        jobs,
        capture: suite.capture,
        summarizer,
        eval_id: eval_id.clone(),
        traces: Some(traces),
        flush: args.trace_flush.into(),
        repeats,
        stop: &stop,
        on_done: &on_done,
        task_tools: task_tools.as_ref().map(|tools| (tools, out.join("work"))),
    };
    let collected = std::sync::Mutex::new(collected);
    let mut attempts = attempts;
    let mut planned = attempts.len();
    let mut decisions = None;
    let ran = loop {
        let batch = &attempts;
        let on_row = |i: usize, row: TaskResult| {
            let attempt = batch[i];
            let offset = log
                .append(&row)
                .map_err(|err| format!("failed to write `{}`: {err}", log.path().display()))?;
            let mut collected = collected
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            collected.add(position(attempt.task, attempt.repeat), offset, &row);
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
            partial_path.display(),
            rows_written - kept_count
        );
    }
    let offsets: Vec<u64> = collected.offsets.iter().flatten().copied().collect();
    let on_disk = RowsOnDisk {
        path: &partial_path,
        offsets: &offsets,
    };
    let results = ResultsFile {
        format: RESULTS_FORMAT.to_owned(),
        looptrace_version: env!("CARGO_PKG_VERSION").to_owned(),
        created_at,
        eval_id: Some(eval_id),
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
        totals: collected.totals.clone(),
        tasks: (),
    };
    let read_rows = || -> Result<Vec<TaskResult>, CliError> {
        let mut rows = Vec::with_capacity(offsets.len());
        RowsOnDisk {
            path: &partial_path,
            offsets: &offsets,
        }
        .for_each(|row| {
            rows.push(row);
            Ok(())
        })
        .map_err(CliError::internal)?;
        Ok(rows)
    };
    // A rerun's report counts its pass rates from the rows it puts together in memory.
    let pass_rates = match previous {
        Some(_) => None,
        None => collected.pass_rates(&selected),
    };
    // Each task's runs as counted for a baseline comparison, when the rows are not held.
    let counted = collected.outcomes;
    // Tasks the results owed a run (never reached by an interrupted evaluation, or added to the
    // suite since) that a rerun narrowed by `--only`/`--skip` left unrun: listed so the next rerun
    // runs them; interrupted results stay interrupted until it does.
    let mut not_reached = Vec::new();
    // With `--rerun-failed`, rows come from two files and are put together in memory; otherwise
    // `results.json` and JUnit are written straight from the partial file, and only what the
    // report, the HTML page and the baseline comparison need is read back.
    let results = match (&previous, &args.rerun_failed) {
        (Some(previous), Some(path)) => {
            let rows = carry_over(previous, read_rows()?, &suite);
            not_reached = still_owed(previous, &rows, &suite);
            // Until `results.json` is replaced, the traces hold the runs of both the earlier and
            // the new results: a crash between the renames leaves every run the results there
            // name, whole.
            let mut both = run_ids(&previous.tasks);
            both.extend(run_ids(&rows));
            // The per-task traces of the runs this rerun made in place, written aside.
            let swapped: Vec<PathBuf> = if traces_aside {
                rows.iter()
                    .filter(|row| !row.carried_over)
                    .filter_map(|row| row.trace.as_deref())
                    .map(|trace| out.join(trace))
                    .collect()
            } else {
                Vec::new()
            };
            match aside.take() {
                Some(runs) => {
                    let earlier = folder_of(path).join(SINGLE_TRACE);
                    combine_runs(&single_path, &[&earlier, &runs.0], &both)
                        .map_err(|e| internal("write", &single_path, e))?;
                }
                None => copy_carried_traces(&rows, &folder_of(path), &out)?,
            }
            for trace in &swapped {
                join_aside(trace, &both).map_err(|e| internal("write", trace, e))?;
            }
            let results = ResultsFile {
                totals: Totals::of(&rows),
                interrupted: interrupted || (previous.interrupted && !not_reached.is_empty()),
                not_reached: not_reached.clone(),
                ..results.with_tasks(rows)
            };
            write_results(&results_path, &results)
                .map_err(|e| internal("write", &results_path, e))?;
            // The rerun tasks' earlier runs go now that no results file names them.
            if layout == TraceLayout::Single {
                keep_runs(&single_path, &run_ids(&results.tasks))
                    .map_err(|e| internal("write", &single_path, e))?;
            }
            for trace in &swapped {
                swap_in_aside(trace).map_err(|e| internal("write", trace, e))?;
            }
            // Last: a JUnit file that cannot be written leaves the folder as the results say.
            if let Some(junit) = &args.verdicts.junit {
                write_junit_file(junit, &results, &results.tasks[..])?;
            }
            results
        }
        _ => {
            let streamed = results.with_tasks(on_disk);
            write_results(&results_path, &streamed)
                .map_err(|e| internal("write", &results_path, e))?;
            if let Some(junit) = &args.verdicts.junit {
                write_junit_file(junit, &streamed, &streamed.tasks)?;
            }
            let tasks = if collected.all {
                read_rows()?
            } else {
                let mut failing = collected.failing;
                failing.sort_by_key(|(position, _)| *position);
                failing.into_iter().map(|(_, row)| row).collect()
            };
            streamed.with_tasks(tasks)
        }
    };
    // The partial file served its purpose once `results.json` holds every row; an interrupted
    // evaluation keeps it for `--resume`.
    if !interrupted {
        let _ = std::fs::remove_file(&partial_path);
    }
    // Which trace files this evaluation's results name (paths relative to `DIR/traces`); told
    // from the rows' positions, so no set of names as large as the suite is built.
    let rerun_traces: HashSet<&str> = match &previous {
        Some(_) => results
            .tasks
            .iter()
            .filter_map(|row| row.trace.as_deref())
            .filter_map(|trace| trace.strip_prefix("traces/"))
            .collect(),
        None => HashSet::new(),
    };
    let index: HashMap<&str, usize> = match (&previous, layout) {
        (None, TraceLayout::PerTask) if had_traces => selected
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect(),
        _ => HashMap::new(),
    };
    let written = |name: &str| -> bool {
        if previous.is_some() {
            return rerun_traces.contains(name);
        }
        let (repeat, file) = match name.split_once('/') {
            Some((folder, file)) => match folder.strip_prefix('r').and_then(|k| k.parse().ok()) {
                Some(k) if repeats > 1 && (1..=repeats).contains(&k) => (k, file),
                _ => return false,
            },
            None if repeats == 1 => (1, name),
            None => return false,
        };
        file.strip_suffix(".jsonl")
            .and_then(|id| index.get(id))
            .is_some_and(|&task| collected.offsets[position(task, repeat)].is_some())
    };
    if had_traces {
        report_stale(
            &out.join("traces"),
            &remove_stale_traces(&out.join("traces"), &written),
        );
    }
    if layout == TraceLayout::PerTask && std::fs::symlink_metadata(&single_path).is_ok() {
        match std::fs::remove_file(&single_path) {
            Ok(()) => eprintln!(
                "removed `{}` of an earlier evaluation (this one wrote per-task traces)",
                single_path.display()
            ),
            Err(err) => eprintln!(
                "warning: failed to remove the earlier `{}`: {err}",
                single_path.display()
            ),
        }
    }
    // A rerun's results hold the tasks it carried over too: the baseline covers them as well.
    let scoped = baseline.as_ref().map(|b| {
        let compared: HashSet<&str> = match &previous {
            Some(_) => results.tasks.iter().map(|t| t.id.as_str()).collect(),
            None => selected.iter().map(|t| t.id.as_str()).collect(),
        };
        in_scope(b, &suite, &compared)
    });
    let mut comparison = scoped.as_ref().map(|b| {
        if previous.is_some() || counted.is_empty() {
            return compare(b, &results);
        }
        let ran = selected
            .iter()
            .zip(&counted)
            .filter(|(_, counts)| counts.ran())
            .map(|(task, counts)| (task.id.as_str(), counts));
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
        TraceLayout::PerTask => out.join("traces"),
        TraceLayout::Single => single_path.clone(),
    };
    if !args.quiet {
        eprintln!(
            "results: {} (traces in {})",
            results_path.display(),
            traces_shown.display()
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

/// What the evaluation keeps of its rows while they are written to the partial file.
struct Collected {
    /// Where each row starts in the partial file, by output position.
    offsets: Vec<Option<u64>>,
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
    /// Whether every row will be read back (for the HTML page).
    all: bool,
}

impl Collected {
    fn new(total: usize, tasks: usize, repeats: usize, baseline: bool, all: bool) -> Self {
        let per_task = |wanted: bool| if wanted && !all { tasks } else { 0 };
        Collected {
            offsets: vec![None; total],
            totals: Totals::zero(),
            failing: Vec::new(),
            passes: vec![(0, 0); tasks],
            outcomes: vec![OutcomeCounts::default(); per_task(baseline)],
            repeats,
            all,
        }
    }

    fn add(&mut self, position: usize, offset: u64, row: &TaskResult) {
        self.offsets[position] = Some(offset);
        self.totals.add(row);
        if let Some((passed, runs)) = self.passes.get_mut(position / self.repeats) {
            *runs += 1;
            *passed += u32::from(row.passes());
        }
        if let Some(counts) = self.outcomes.get_mut(position / self.repeats) {
            counts.add(row, position);
        }
        if !self.all && row.fails() {
            self.failing.push((position, row.clone()));
        }
    }

    /// The pass rates of the tasks that ran, in suite order, when the report cannot count them
    /// from the rows it holds.
    fn pass_rates<'a>(&self, tasks: &'a [SuiteTask]) -> Option<Vec<PassRate<'a>>> {
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
                    model: task.model.kind(),
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

/// Says on stderr which traces of earlier evaluations were removed from `DIR/traces`, and which
/// `.jsonl` files there were left because eval never writes such names, and which could not be
/// removed (the folder then disagrees with `results.json`, which the warning says).
fn report_stale(traces: &Path, stale: &looptrace::eval::StaleTraces) {
    const SHOWN: usize = 10;
    let list = |names: &[String]| {
        let mut text = names[..names.len().min(SHOWN)].join(", ");
        if names.len() > SHOWN {
            text.push_str(&format!(" and {} more", names.len() - SHOWN));
        }
        looptrace::text::escape(&text).into_owned()
    };
    if !stale.removed.is_empty() {
        eprintln!(
            "removed {} of earlier evaluations from `{}` (tasks this eval did not run): {}",
            looptrace::plural(stale.removed.len() as u64, "trace", "traces"),
            traces.display(),
            list(&stale.removed)
        );
    }
    if !stale.foreign.is_empty() {
        eprintln!(
            "warning: left {} in `{}` that eval does not write (not in results.json): {}",
            looptrace::plural(stale.foreign.len() as u64, "file", "files"),
            traces.display(),
            list(&stale.foreign)
        );
    }
    for (name, err) in &stale.failed {
        eprintln!(
            "warning: failed to remove the earlier trace `{}` (not in results.json): {err}",
            looptrace::text::escape(&traces.join(name).display().to_string())
        );
    }
}

/// The baseline's tasks this evaluation can speak about: those it ran (or, rerunning, carried
/// over), and those no longer in the suite at all. A shard leaves out the other shards' tasks, which are neither.
fn in_scope(baseline: &ResultsFile, suite: &Suite, ran: &HashSet<&str>) -> ResultsFile {
    let in_suite: HashSet<&str> = suite.tasks.iter().map(|t| t.id.as_str()).collect();
    let mut scoped = baseline.clone();
    scoped
        .tasks
        .retain(|t| ran.contains(t.id.as_str()) || !in_suite.contains(t.id.as_str()));
    scoped
}

/// A rerun's new runs of the single layout, written beside `traces.jsonl` until they join it.
/// Removed however the evaluation ends; what a crash leaves, the next rerun or `--resume` removes.
struct RunsAside(PathBuf);

impl Drop for RunsAside {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The trace layout of a rerun: that of the results it updates (told by their rows' `trace`),
/// which `--trace-layout`, when given, must name. Rows without a trace say nothing.
fn rerun_layout(
    previous: &ResultsFile,
    path: &Path,
    given: Option<TraceLayout>,
) -> Result<TraceLayout, CliError> {
    let mut found = None;
    for trace in previous.tasks.iter().filter_map(|t| t.trace.as_deref()) {
        let layout = if trace == SINGLE_TRACE {
            TraceLayout::Single
        } else {
            TraceLayout::PerTask
        };
        match found {
            None => found = Some(layout),
            Some(other) if other != layout => {
                return Err(CliError::input(format!(
                    "--rerun-failed `{}` names both `{SINGLE_TRACE}` and per-task traces: not results eval writes",
                    path.display()
                )));
            }
            Some(_) => {}
        }
    }
    match (found, given) {
        (Some(found), Some(given)) if found != given => Err(CliError::input(format!(
            "--rerun-failed `{}` was written with --trace-layout {}, and a rerun updates its traces in place: give --trace-layout {} or none (to change the layout, run the whole suite again)",
            path.display(),
            found.as_str(),
            found.as_str()
        ))),
        (Some(layout), _) | (None, Some(layout)) => Ok(layout),
        (None, None) => Ok(TraceLayout::PerTask),
    }
}

/// What `--resume` found in the output folder.
enum Resumable {
    /// The rows to keep, by output position (`None`: run it).
    Rows(Vec<Option<TaskResult>>),
    /// No partial file, and a complete `results.json` of this suite: nothing to do.
    Complete(Box<ResultsFile>),
    /// Neither: run everything.
    Nothing,
}

/// Reads the partial file for `--resume`: the rows of this suite's selected runs whose trace is
/// complete. A partial file of another suite, capture, repeat count, trace layout, shard or
/// selection is refused.
#[allow(clippy::too_many_arguments)]
fn resume_rows(
    partial_path: &Path,
    out: &Path,
    info: &SuiteInfo,
    selected: &[SuiteTask],
    layout: TraceLayout,
    settings: &Settings<'_>,
    (only, skip): (&[String], &[String]),
    position: &dyn Fn(usize, u32) -> usize,
) -> Result<Resumable, CliError> {
    let repeats = settings.repeats;
    let Some(partial) = read_partial(partial_path).map_err(CliError::Input)? else {
        let results_path = out.join("results.json");
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
    };
    let header = &partial.header;
    let refuse = |why: String| {
        Err(CliError::input(format!(
            "--resume: `{}` {why}",
            partial_path.display()
        )))
    };
    if let Some(rerun) = &header.rerun_failed {
        return refuse(format!(
            "was left by an interrupted `--rerun-failed {rerun}`, whose rows --resume cannot continue: run that rerun again"
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
    // Another shard or selection too: resuming would drop the first one's rows and traces.
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
    if let Some(line) = partial.torn_line {
        eprintln!(
            "warning: ignored the torn last line ({line}) of `{}`, cut short by a crash",
            partial_path.display()
        );
    }
    let finished = match layout {
        TraceLayout::Single => finished_runs(&out.join(SINGLE_TRACE)).map_err(|err| {
            CliError::input(format!(
                "failed to read `{}`: {err}",
                out.join(SINGLE_TRACE).display()
            ))
        })?,
        TraceLayout::PerTask => HashSet::new(),
    };
    let index: HashMap<&str, usize> = selected
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut rows: Vec<Option<TaskResult>> = vec![None; selected.len() * repeats as usize];
    // Rows this evaluation never writes (a task it does not run, a `repeat` it does not give, a
    // run twice): the file was edited. They are not kept, so results keep the rule of rows.
    let mut foreign = 0usize;
    let mut seen = vec![false; rows.len()];
    for row in partial.rows {
        let repeat = row.repeat.unwrap_or(1);
        let fits = looptrace::eval::repeat_fits(row.repeat, repeats);
        let Some(&task) = index.get(row.id.as_str()).filter(|_| fits) else {
            foreign += 1;
            continue;
        };
        if std::mem::replace(&mut seen[position(task, repeat)], true) {
            // The run twice: neither row is kept, so the run runs again.
            foreign += 1;
            rows[position(task, repeat)] = None;
            continue;
        }
        let (Some(run_id), Some(trace)) = (&row.run_id, &row.trace) else {
            continue;
        };
        let complete = match layout {
            TraceLayout::Single => finished.contains(run_id),
            TraceLayout::PerTask => {
                trace == &trace_path(layout, row.id.as_str(), repeat, repeats)
                    && ends_with_finished_run(&out.join(trace), run_id)
            }
        };
        if complete {
            rows[position(task, repeat)] = Some(row);
        }
    }
    if foreign > 0 {
        eprintln!(
            "warning: `{}` holds {} this evaluation never writes (a task it does not run, a `repeat` it does not give, or a run twice; the file was edited): not kept, those runs run again",
            partial_path.display(),
            looptrace::plural(foreign as u64, "row", "rows")
        );
    }
    Ok(Resumable::Rows(rows))
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
    selected: &[SuiteTask],
) -> Result<(), String> {
    let written = Settings {
        shard: previous.shard,
        repeats: previous.repeats.unwrap_or(1),
        capture: previous.capture,
        layout: match previous.tasks.first().and_then(|row| row.trace.as_deref()) {
            Some(SINGLE_TRACE) => TraceLayout::Single.as_str(),
            _ => TraceLayout::PerTask.as_str(),
        },
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
    // Carried rows' traces are kept, copied or tidied by these paths: only the paths eval
    // writes are followed, never one that leads out of the folder.
    for (i, row) in previous.tasks.iter().enumerate() {
        let Some(trace) = row.trace.as_deref() else {
            continue;
        };
        let repeat = row.repeat.unwrap_or(1);
        let own = looptrace::eval::TaskId::parse(&row.id).is_ok()
            && (trace == SINGLE_TRACE
                || trace == trace_path(TraceLayout::PerTask, &row.id, repeat, repeats));
        if !own {
            return refuse(format!(
                "has `tasks[{i}].trace` {trace:?}, which is not where eval writes that run's trace (`{}` or `{SINGLE_TRACE}`)",
                trace_path(TraceLayout::PerTask, &row.id, repeat, repeats)
            ));
        }
    }
    Ok(previous)
}

/// Fails when a rerun into another folder would write or copy a trace onto the one the results
/// it reads name (a `traces` folder linked to theirs, a hard link): copying a file onto itself
/// empties it. Only files that exist already can be one.
fn refuse_traces_shared_with(
    previous: &ResultsFile,
    path: &Path,
    out: &Path,
) -> Result<(), CliError> {
    let from = folder_of(path);
    for trace in named_traces(previous) {
        let (source, target) = (from.join(trace), out.join(trace));
        if file_identity(&target).is_some_and(|id| file_identity(&source) == Some(id)) {
            return Err(CliError::input(format!(
                "--out: `{}` is the trace `{}` of the results `{}` (the folders share their traces): choose another --out",
                target.display(),
                source.display(),
                path.display()
            )));
        }
    }
    Ok(())
}

/// Fails unless the trace of every row a rerun carries over is beside its results: merged
/// results name traces in their shards' folders, and a rerun that carried such rows would leave
/// results naming traces that are not there. With `check_runs`, each trace must also hold its
/// row's run.
fn refuse_missing_carried_traces(
    previous: &ResultsFile,
    path: &Path,
    rerun: &HashSet<&str>,
    check_runs: bool,
) -> Result<(), CliError> {
    let folder = folder_of(path);
    let carried = previous
        .tasks
        .iter()
        .filter(|row| !rerun.contains(row.id.as_str()))
        .filter_map(|row| row.trace.as_deref());
    let mut missing = std::collections::BTreeSet::new();
    for trace in carried {
        let path = folder.join(trace);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => {}
            // Copied or read, a pipe would wait for a writer: it is there, but no trace.
            Ok(meta) => {
                return Err(CliError::input(format!(
                    "--rerun-failed: `{}`, the trace of a row it carries over, is {}, not a regular file",
                    path.display(),
                    looptrace::output::special_kind(meta.file_type()).unwrap_or("a folder")
                )));
            }
            Err(_) => {
                missing.insert(trace);
            }
        }
    }
    if let Some(first) = missing.first() {
        return Err(missing_carried_traces(path, &folder, first, missing.len()));
    }
    if !check_runs {
        return Ok(());
    }
    // Each carried row's run must be in its trace: results kept while their folder was
    // evaluated again (a copy of them) would carry rows whose runs are gone.
    let mut held: HashMap<&str, HashSet<String>> = HashMap::new();
    for (i, row) in previous.tasks.iter().enumerate() {
        let (Some(trace), Some(run)) = (row.trace.as_deref(), row.run_id.as_deref()) else {
            continue;
        };
        if rerun.contains(row.id.as_str()) {
            continue;
        }
        let trace_path = folder.join(trace);
        let runs = held
            .entry(trace)
            .or_insert_with(|| looptrace::eval::runs_in(&trace_path).unwrap_or_default());
        if !runs.contains(run) {
            return Err(CliError::input(format!(
                "--rerun-failed `{}`: `tasks[{i}]` ({:?}) carries over run `{run}`, which its trace `{}` does not hold: the folder was evaluated again since these results were written; rerun from the results it holds now",
                path.display(),
                row.id,
                trace_path.display()
            )));
        }
    }
    Ok(())
}

/// What a rerun is told when traces of rows it carries over are not beside the results.
fn missing_carried_traces(path: &Path, folder: &Path, first: &str, count: usize) -> CliError {
    CliError::input(format!(
        "--rerun-failed `{}`: {} of the rows it carries over {} not beside it (`{}` first): results merged from shards name traces in the shards' folders; gather them next to the merged results first (`cp -r SHARD/traces {}/` for each shard, or `cat SHARD/traces.jsonl >> {}/traces.jsonl`)",
        path.display(),
        looptrace::plural(count as u64, "trace", "traces"),
        if count == 1 { "is" } else { "are" },
        folder.join(first).display(),
        folder.display(),
        folder.display()
    ))
}

/// With `--out` elsewhere than the folder of `--rerun-failed`, copies the traces of the rows
/// carried over, so the new folder's `results.json` describes the traces beside it.
fn copy_carried_traces(rows: &[TaskResult], from: &Path, to: &Path) -> Result<(), CliError> {
    if same_file(from, to) {
        return Ok(());
    }
    for (row, trace) in rows
        .iter()
        .filter(|row| row.carried_over)
        .filter_map(|row| row.trace.as_deref().map(|trace| (row, trace)))
    {
        let source = from.join(trace);
        if source.is_file() {
            // A new file renamed over the one there, not written into: it may share its content
            // with another folder's by a hard link. Only the carried run: a rerun in place that
            // crashed may have left a trace holding another beside it.
            let copied = match &row.run_id {
                Some(run) => combine_runs_synced(
                    &to.join(trace),
                    &[&source],
                    &HashSet::from([run.clone()]),
                    false,
                ),
                None => std::fs::File::open(&source).and_then(|mut file| {
                    let mut copy = looptrace::output::create_fresh(&to.join(trace))?;
                    std::io::copy(&mut file, &mut copy).map(|_| ())
                }),
            };
            copied.map_err(|err| {
                CliError::internal(format!(
                    "failed to copy the trace `{}` to `{}`: {err}",
                    source.display(),
                    to.display()
                ))
            })?;
        }
    }
    Ok(())
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
        let (suite, text) = load_suite_with_text(path).map_err(CliError::input)?;
        // Never freed, as the suite is not: freeing megabytes of pages would only delay the exit.
        std::mem::forget(text);
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
    for task in &suite.tasks {
        if let TaskModel::Replay { path, .. } = &task.model {
            inputs.push(path.clone());
        }
    }
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

/// Fails when an input file (a `--traces` recording, a suite's replay source, the suite, the
/// baseline) lies in `traces`, however it is named; folders are resolved once each.
fn refuse_inputs_in_traces(inputs: &[PathBuf], traces: &Path) -> Result<(), CliError> {
    let Some(traces_resolved) = resolve(traces) else {
        return Ok(());
    };
    let mut inside: HashMap<PathBuf, bool> = HashMap::new();
    for input in inputs {
        let folder = folder_of(input);
        let is_inside = *inside.entry(folder.clone()).or_insert_with(|| {
            resolve(&folder).is_some_and(|folder| folder.starts_with(&traces_resolved))
        });
        if is_inside {
            return Err(CliError::input(format!(
                "the input `{}` is in this eval's own `{}`, whose traces every eval replaces or removes: copy it elsewhere or choose another --out",
                input.display(),
                traces.display()
            )));
        }
    }
    Ok(())
}

/// Whether `name` is the trace file name (`<task-id>.jsonl`) of one of `ids`.
fn is_trace_of(ids: &HashSet<&str>, name: &str) -> bool {
    name.strip_suffix(".jsonl")
        .is_some_and(|stem| ids.contains(stem))
}

/// Fails when `--junit` (or `--html`) names one of the eval's own files (`results.json`, the
/// partial file, `traces.jsonl`) or a file named as a task's trace (`<task-id>.jsonl`) in
/// `traces` or its `r<k>` folders, however the path is written: whether or not this eval runs
/// that task, such a file is one a rerun carries over or copies, or one the eval removes as an
/// earlier evaluation's.
fn refuse_output_clash(
    flag: &str,
    junit: &Path,
    own_files: &[&PathBuf],
    traces: &Path,
) -> Result<(), CliError> {
    let in_traces = |folder: &Path| {
        same_file(folder, traces)
            || folder
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(looptrace::eval::is_repeat_folder)
                && same_file(&folder_of(folder), traces)
    };
    let clash = if let Some(own) = own_files.iter().find(|own| same_file(junit, own)) {
        Some((own.to_path_buf(), ""))
    } else {
        let folder = folder_of(junit);
        junit
            .file_name()
            .map(|name| name.to_string_lossy())
            .filter(|name| {
                name.strip_suffix(".jsonl")
                    .is_some_and(|stem| looptrace::eval::TaskId::parse(stem).is_ok())
            })
            .filter(|_| in_traces(&folder))
            .map(|name| {
                (
                    folder.join(name.as_ref()),
                    " (a task trace's name in its traces folder, which it writes or removes)",
                )
            })
    };
    match clash {
        Some((other, why)) => Err(CliError::input(format!(
            "{flag} `{}` is the output `{}` of this eval{why}: choose another file",
            junit.display(),
            other.display()
        ))),
        None => Ok(()),
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

/// `--progress MODE`.
fn parse_progress(text: &str) -> Result<ProgressMode, String> {
    text.parse()
}
