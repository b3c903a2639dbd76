//! `looptrace eval` and `looptrace merge`: run a suite (or a corpus of recorded runs), write
//! traces, `results.json` and JUnit, and print the exit-reason report.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, ValueEnum};

use super::common::{CaptureArg, ToolsFileArgs, file_identity, resolve, same_file};
use super::progress::Progress;
use super::{CliError, CliResult, Outcome};
use looptrace::eval::{
    Comparison, RESULTS_FORMAT, ReportFormat, ResultsFile, RunnerOptions, Shard, Suite, SuiteTask,
    TaskModel, Totals, carry_over, compare, corpus_suite, failed_ids, list_shards, load_suite,
    merge_results, now_rfc3339, prepare_traces_dir, read_results, remove_stale_traces,
    render_junit, run_tasks, select_tasks, suite_info, summary_line, write_atomically,
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
    /// Trace capture, overriding the suite's default.
    #[arg(long, value_enum)]
    pub capture: Option<CaptureArg>,
    /// The tools file, for a suite that names none.
    #[command(flatten)]
    pub tools_file: ToolsFileArgs,
}

/// Arguments of `looptrace merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard results files to combine.
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Write the merged results here.
    #[arg(short = 'o', long, visible_alias = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Report format.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
    /// Print only errors and a one-line summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Merge even when shards are missing: the file is marked `"partial": true`, lists the
    /// missing shards, and the exit code is 1.
    #[arg(long)]
    pub allow_partial: bool,
    /// `--junit`, `--html`, `--baseline`, `--baseline-any-suite`, as `eval` has them.
    #[command(flatten)]
    pub verdicts: VerdictArgs,
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
    /// Compare with an earlier `results.json`.
    #[arg(long, value_name = "RESULTS")]
    pub baseline: Option<PathBuf>,
    /// Accept a baseline from a suite with another name.
    #[arg(long, requires = "baseline")]
    pub baseline_any_suite: bool,
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
pub fn run(args: EvalArgs) -> CliResult {
    if args.jobs == Some(0) {
        return Err(CliError::input("--jobs must be at least 1"));
    }
    // Built before the suite is loaded: the registry's allocations would otherwise first pay for
    // consolidating the freed parse tree of a large suite.
    let tools = ToolRegistry::builtin();
    let shard = args.shard.map(ShardArg::resolve).transpose()?;
    let (suite, inputs) = load(&args)?;
    let baseline = args
        .verdicts
        .baseline
        .as_deref()
        .map(|path| read_baseline(path, &suite.name, args.verdicts.baseline_any_suite))
        .transpose()?;
    let previous = match &args.rerun_failed {
        Some(path) => Some(read_rerun(path, &suite)?),
        None => None,
    };
    let out = match (&args.out, &args.rerun_failed) {
        (Some(out), _) => out.clone(),
        (None, Some(path)) => folder_of(path),
        (None, None) => Path::new("looptrace-runs").join(folder_name(&suite.name)),
    };
    let results_path = out.join("results.json");
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
                eprintln!(
                    "nothing to rerun: no selected task failed, errored or was interrupted in `{}` (left as it was)",
                    path.display()
                );
                print_report(previous, None, args.format, args.quiet)?;
                return Ok(verdict(previous, None));
            }
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
    let input_paths = &inputs;
    let inputs: HashMap<_, &PathBuf> = inputs
        .iter()
        .filter_map(|path| file_identity(path).map(|id| (id, path)))
        .collect();
    let trace_names: std::collections::HashSet<String> = selected
        .iter()
        .map(|task| format!("{}.jsonl", task.id))
        .collect();
    let existing_traces = std::fs::read_dir(out.join("traces"))
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok())
        .filter(|entry| trace_names.contains(entry.file_name().to_string_lossy().as_ref()))
        .map(|entry| ("--out", entry.path()));
    let outputs = [
        ("--out", Some(results_path.clone())),
        ("--junit", args.verdicts.junit.clone()),
        ("--html", args.verdicts.html.clone()),
    ];
    for (flag, output) in outputs
        .into_iter()
        .filter_map(|(flag, path)| path.map(|p| (flag, p)))
        .chain(existing_traces)
    {
        if looptrace::output::is_symlink(&output) {
            return Err(CliError::input(format!(
                "{flag}: `{}` is a symbolic link, and eval never writes through one (remove it or choose another path)",
                output.display()
            )));
        }
        if let Some(input) = file_identity(&output).and_then(|id| inputs.get(&id)) {
            return Err(CliError::input(format!(
                "{flag} would overwrite the input `{}` (with `{}`)",
                input.display(),
                output.display()
            )));
        }
    }
    // An eval removes the traces in `DIR/traces` it did not write: none may be an input.
    refuse_inputs_in_traces(input_paths, &out.join("traces"))?;
    if let Some(junit) = &args.verdicts.junit {
        refuse_output_clash(
            "--junit",
            junit,
            &results_path,
            &out.join("traces"),
            &trace_names,
        )?;
    }
    let junit_folder = args.verdicts.junit.as_deref().map(folder_of);
    if let (Some(junit), Some(folder)) = (&args.verdicts.junit, &junit_folder)
        && !folder.is_dir()
        && !same_path(folder, &out)
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
            &results_path,
            &out.join("traces"),
            &trace_names,
        )?;
        if args
            .verdicts
            .junit
            .as_deref()
            .is_some_and(|junit| same_path(junit, html))
        {
            return Err(CliError::input("--html and --junit name the same file"));
        }
        let folder = folder_of(html);
        if !folder.is_dir() && !same_path(&folder, &out) {
            return Err(CliError::input(format!(
                "--html `{}`: the folder does not exist",
                html.display()
            )));
        }
    }
    let traces_dir = prepare_traces_dir(&out).map_err(CliError::Input)?;
    // Every output is known to be writable before the first task runs, not after the last.
    probe_writable("--out", &out)?;
    probe_writable("--out", &traces_dir)?;
    refuse_folder("--out", &results_path)?;
    if let (Some(junit), Some(folder)) = (&args.verdicts.junit, &junit_folder) {
        probe_writable("--junit", folder)?;
        refuse_folder("--junit", junit)?;
    }
    if let Some(html) = &args.verdicts.html {
        probe_writable("--html", &folder_of(html))?;
        refuse_folder("--html", html)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    // A first Ctrl-C or SIGTERM (what CI runners and `kill` send) stops scheduling; a second
    // signal ends the process at once. The shutdown hook is registered first so that it sees
    // the flag as the previous signal left it.
    for (signal, code) in [
        (signal_hook::consts::SIGINT, 130),
        (signal_hook::consts::SIGTERM, 143),
    ] {
        let _ = signal_hook::flag::register_conditional_shutdown(signal, code, Arc::clone(&stop));
        let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
    }
    let task_tools = suite.tools.clone().map(|file| {
        let logs = args.tools_file.log_dir.clone();
        TaskTools::new(file, Some(logs.unwrap_or_else(|| out.join("logs"))))
    });
    let progress = Progress::new(selected.len()).filter(|_| !args.quiet);
    let on_done = |done: usize, task: &looptrace::eval::TaskResult| {
        if let Some(progress) = &progress {
            progress.task_done(done, task);
        }
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let created_at = now_rfc3339();
    let eval_id = looptrace::run::unique_token();
    let summarizer = Summarizer::from_env();
    let options = RunnerOptions {
        jobs,
        capture: suite.capture,
        summarizer,
        eval_id: eval_id.clone(),
        traces_dir: Some(traces_dir),
        stop: &stop,
        on_done: &on_done,
        task_tools: task_tools.as_ref().map(|tools| (tools, out.join("work"))),
    };
    let tasks = run_tasks(&selected, &tools, &options);
    if let Some(progress) = &progress {
        progress.finish();
    }
    let interrupted = stop.load(Ordering::SeqCst) && tasks.len() < selected.len();
    let tasks = match (&previous, &args.rerun_failed) {
        (Some(previous), Some(path)) => {
            let rows = carry_over(previous, tasks, &suite);
            copy_carried_traces(&rows, &folder_of(path), &out)?;
            rows
        }
        _ => tasks,
    };
    let results = ResultsFile {
        format: RESULTS_FORMAT.to_owned(),
        looptrace_version: env!("CARGO_PKG_VERSION").to_owned(),
        created_at,
        eval_id: Some(eval_id),
        suite: suite_info(&suite),
        shard,
        selection,
        capture: suite.capture,
        interrupted,
        partial: false,
        missing_shards: Vec::new(),
        totals: Totals::of(&tasks),
        tasks,
    };
    write_results(&results_path, &results).map_err(|err| {
        CliError::internal(format!(
            "failed to write `{}`: {err}",
            results_path.display()
        ))
    })?;
    if let Some(junit) = &args.verdicts.junit {
        write_atomically(junit, render_junit(&results).as_bytes()).map_err(|err| {
            CliError::internal(format!("failed to write `{}`: {err}", junit.display()))
        })?;
    }
    let written = results
        .tasks
        .iter()
        .map(|task| format!("{}.jsonl", task.id))
        .collect();
    report_stale(
        &out.join("traces"),
        &remove_stale_traces(&out.join("traces"), &written),
    );
    let scoped = baseline.as_ref().map(|b| in_scope(b, &suite, &selected));
    let comparison = scoped.as_ref().map(|b| compare(b, &results));
    if let Some(html) = &args.verdicts.html {
        let view = scoped
            .as_ref()
            .zip(comparison.as_ref())
            .map(|(b, c)| super::html::baseline_of(c, b, &results));
        let title = format!("looptrace eval: {}", results.suite.name);
        let folder = |_: &looptrace::eval::TaskResult| out.clone();
        super::html::write_results_page(html, &title, &results, &folder, view.as_ref())?;
    }
    // The console shows the suite's expected values in full; the files keep their summaries.
    let shown = looptrace::eval::for_console(&results, &suite, &options.summarizer);
    print_report(&shown, comparison.as_ref(), args.format, args.quiet)?;
    if !args.quiet {
        eprintln!(
            "results: {} (traces in {})",
            results_path.display(),
            out.join("traces").display()
        );
    }
    if interrupted {
        eprintln!(
            "interrupted: {} of {} ran; results and traces so far are in `{}`",
            results.tasks.len(),
            looptrace::plural(selected.len() as u64, "task", "tasks"),
            out.display()
        );
        return Ok(Outcome::Failures);
    }
    Ok(verdict(&results, comparison.as_ref()))
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

/// Runs `looptrace merge`.
pub fn merge(args: MergeArgs) -> CliResult {
    // Every output is checked before anything is read or written: none may be an input, a
    // symbolic link, a folder, or the other output.
    let inputs: Vec<&PathBuf> = args.results.iter().chain(&args.verdicts.baseline).collect();
    let outputs = [("--out", &args.out), ("--junit", &args.verdicts.junit)];
    for (flag, output) in outputs
        .iter()
        .filter_map(|(flag, path)| path.as_ref().map(|p| (*flag, p)))
    {
        if let Some(input) = inputs.iter().find(|input| same_file(input, output)) {
            return Err(CliError::input(format!(
                "{flag} would overwrite the input `{}`",
                input.display()
            )));
        }
        if looptrace::output::is_symlink(output) {
            return Err(CliError::input(format!(
                "{flag}: `{}`: it is a symbolic link, and merge never writes through one (remove it or choose another path)",
                output.display()
            )));
        }
        refuse_folder(flag, output)?;
        probe_writable(flag, &folder_of(output))?;
    }
    if let (Some(out), Some(junit)) = (&args.out, &args.verdicts.junit)
        && same_file(out, junit)
    {
        return Err(CliError::input(format!(
            "--junit `{}` is the --out file: choose another file",
            junit.display()
        )));
    }
    let mut results = Vec::new();
    for path in &args.results {
        results.push((
            path.display().to_string(),
            read_results(path).map_err(CliError::Input)?,
        ));
    }
    if let Some(html) = &args.verdicts.html {
        super::html::refuse_merge_clash(html, &args.results, args.out.as_deref())?;
    }
    let merged = merge_results(&results).map_err(CliError::Input)?;
    if merged.partial && !args.allow_partial {
        return Err(CliError::input(format!(
            "shards {} of the split are missing (give every shard, or --allow-partial to write a file marked partial)",
            list_shards(&merged.missing_shards)
        )));
    }
    let baseline = args
        .verdicts
        .baseline
        .as_deref()
        .map(|path| read_baseline(path, &merged.suite.name, args.verdicts.baseline_any_suite))
        .transpose()?;
    if let Some(out) = &args.out {
        write_results(out, &merged).map_err(|err| {
            CliError::input(format!("failed to write `{}`: {err}", out.display()))
        })?;
    }
    if let Some(junit) = &args.verdicts.junit {
        write_atomically(junit, render_junit(&merged).as_bytes()).map_err(|err| {
            CliError::input(format!("failed to write `{}`: {err}", junit.display()))
        })?;
    }
    let comparison = baseline
        .as_ref()
        .map(|b| compare(&merge_scope(b, &merged), &merged));
    if let Some(html) = &args.verdicts.html {
        super::html::write_merged_page(html, &merged, &results, &args.results)?;
    }
    print_report(&merged, comparison.as_ref(), args.format, args.quiet)?;
    if merged.partial {
        eprintln!(
            "partial: shards {} are missing",
            list_shards(&merged.missing_shards)
        );
        return Ok(Outcome::Failures);
    }
    Ok(verdict(&merged, comparison.as_ref()))
}

/// The baseline's tasks a merge can speak about, as [`in_scope`] chooses them for an unsharded
/// eval. Merge does not read the suite, so it knows the tasks the shards were to run only from
/// the results: the whole suite (every baseline task, one the merge lacks being no longer in the
/// suite), or the `selection`'s tasks (other baseline tasks are left out, removed from the suite
/// or not). A partial merge speaks only about the tasks it holds: the missing shards' are unknown.
fn merge_scope(baseline: &ResultsFile, merged: &ResultsFile) -> ResultsFile {
    let selected = match (&merged.selection, merged.partial) {
        (None, false) => return baseline.clone(),
        (Some(selection), false) => selection.tasks.as_slice(),
        (_, true) => &[],
    };
    let keep: std::collections::HashSet<&str> = merged
        .tasks
        .iter()
        .map(|t| t.id.as_str())
        .chain(selected.iter().map(String::as_str))
        .collect();
    let mut scoped = baseline.clone();
    scoped.tasks.retain(|t| keep.contains(t.id.as_str()));
    scoped
}

/// The baseline's tasks this evaluation can speak about: those it ran, and those no longer in
/// the suite at all. A shard leaves out the other shards' tasks, which are neither.
fn in_scope(baseline: &ResultsFile, suite: &Suite, selected: &[SuiteTask]) -> ResultsFile {
    let in_suite: std::collections::HashSet<&str> =
        suite.tasks.iter().map(|t| t.id.as_str()).collect();
    let ran: std::collections::HashSet<&str> = selected.iter().map(|t| t.id.as_str()).collect();
    let mut scoped = baseline.clone();
    scoped
        .tasks
        .retain(|t| ran.contains(t.id.as_str()) || !in_suite.contains(t.id.as_str()));
    scoped
}

/// Reads `--rerun-failed`: complete results of this suite as a whole (merge shards first).
fn read_rerun(path: &Path, suite: &Suite) -> Result<ResultsFile, CliError> {
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
    if let Some(shard) = previous.shard {
        return refuse(format!(
            "covers only shard {shard}: merge the shards, then rerun from the merged results"
        ));
    }
    Ok(previous)
}

/// With `--out` elsewhere than the folder of `--rerun-failed`, copies the traces of the rows
/// carried over, so the new folder's `results.json` describes the traces beside it.
fn copy_carried_traces(
    rows: &[looptrace::eval::TaskResult],
    from: &Path,
    to: &Path,
) -> Result<(), CliError> {
    if same_file(from, to) {
        return Ok(());
    }
    for trace in rows
        .iter()
        .filter(|row| row.carried_over)
        .filter_map(|row| row.trace.as_deref())
    {
        let source = from.join(trace);
        if source.is_file() {
            std::fs::copy(&source, to.join(trace)).map_err(|err| {
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
fn read_baseline(path: &Path, suite: &str, any_suite: bool) -> Result<ResultsFile, CliError> {
    let baseline = read_results(path).map_err(CliError::Input)?;
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
        load_suite(path).map_err(CliError::input)?
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
    let mut inputs: Vec<PathBuf> = args.suite.iter().cloned().collect();
    inputs.extend(args.verdicts.baseline.iter().cloned());
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

fn print_report(
    results: &ResultsFile,
    comparison: Option<&Comparison>,
    format: FormatArg,
    quiet: bool,
) -> Result<(), CliError> {
    let text = if quiet {
        summary_line(results, comparison)
    } else {
        let style = super::common::stdout_style();
        looptrace::eval::render_report_styled(results, comparison, format.into(), style)
    };
    let mut out = super::common::outcome_stdout();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn verdict(results: &ResultsFile, comparison: Option<&Comparison>) -> Outcome {
    let failed = results.tasks.iter().any(|t| t.fails());
    let regressed = comparison.is_some_and(|c| !c.regressions.is_empty());
    if failed || regressed {
        Outcome::Failures
    } else {
        Outcome::Success
    }
}

/// The folder a file is written in (`.` for a bare file name).
fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether two paths are written the same, `.` components aside (the folder need not exist).
fn same_path(a: &Path, b: &Path) -> bool {
    fn parts(p: &Path) -> Vec<std::path::Component<'_>> {
        p.components()
            .filter(|c| *c != std::path::Component::CurDir)
            .collect()
    }
    parts(a) == parts(b)
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

/// Fails when `--junit` (or `--html`) names the results file or a task's trace, however the path is written.
fn refuse_output_clash(
    flag: &str,
    junit: &Path,
    results: &Path,
    traces: &Path,
    trace_names: &std::collections::HashSet<String>,
) -> Result<(), CliError> {
    let clash = if same_file(junit, results) {
        Some(results.to_path_buf())
    } else {
        junit
            .file_name()
            .map(|name| name.to_string_lossy())
            .filter(|name| trace_names.contains(name.as_ref()))
            .filter(|_| same_file(&folder_of(junit), traces))
            .map(|name| traces.join(name.as_ref()))
    };
    match clash {
        Some(other) => Err(CliError::input(format!(
            "{flag} `{}` is the output `{}` of this eval: choose another file",
            junit.display(),
            other.display()
        ))),
        None => Ok(()),
    }
}

/// Fails unless a file can be created in `dir`: a read-only mount or a folder without write
/// permission is bad input, found before any task runs.
fn probe_writable(flag: &str, dir: &Path) -> Result<(), CliError> {
    let probe = dir.join(format!(".looptrace-probe-{}", std::process::id()));
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe);
    match created {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(err) => Err(CliError::input(format!(
            "{flag}: cannot write in `{}`: {err}",
            dir.display()
        ))),
    }
}

/// Fails when an output file's path is a folder.
fn refuse_folder(flag: &str, path: &Path) -> Result<(), CliError> {
    if path.is_dir() {
        return Err(CliError::input(format!(
            "{flag}: `{}` is a folder, not a file",
            path.display()
        )));
    }
    Ok(())
}

/// A folder name from a suite name: path separators and other odd characters become `_`.
fn folder_name(name: &str) -> String {
    let clean = looptrace::eval::TaskId::sanitize(name);
    match clean.trim_matches('.') {
        "" => "suite".to_owned(),
        _ => clean,
    }
}
