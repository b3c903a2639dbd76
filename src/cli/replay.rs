//! `looptrace replay`: rerun recorded runs and report whether each still comes out the same.
//! Runs are streamed: each is replayed as soon as it ends in the file, and only its verdict is
//! kept, so memory does not grow with the trace.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::common::{GateArgs, ToolsFileArgs, open_trace_writer};
use super::show::RunIds;
use super::{CliError, CliResult, Outcome};
use looptrace::agent::NoObserver;
use looptrace::gate::{CommandGate, FinishGate};
use looptrace::html::Page;
use looptrace::replay::Recording;
use looptrace::replay::{
    CheckReport, ModelSource, OnDivergence, PreparedReplay, ReplayOptions, ReplayReport, RunCheck,
    RunReplay, ToolSource, Verdict, WireSettings, check_summary_line, render_check_json,
    render_check_text, render_json, render_text, summary_line,
};
use looptrace::report::{Input, Options, RunRow, RunTable, TEXT_LIMIT};
use looptrace::run::RunId;
use looptrace::text::escape;
use looptrace::tools::{TaskToolSet, TaskTools, ToolRegistry, temp_workdir};
use looptrace::trace::{
    Capture, ReadOptions, RecorderOptions, ReplayOf, RunStream, StreamedRun, Summarizer,
    TraceRecorder, TraceWriter,
};

/// Arguments of `looptrace replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recorded trace (full capture).
    pub trace: PathBuf,
    /// Replay only this run (default: every run in the file).
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// With `--run`, the how-many-th run with that id (from 1), for a reused id.
    #[arg(long, value_name = "N", requires = "run", value_parser = clap::value_parser!(u32).range(1..))]
    pub occurrence: Option<u32>,
    /// Run the tools again (`live`) or serve the recorded observations (`recorded`).
    #[arg(long, value_enum, default_value_t = ToolsArg::Live)]
    pub tools: ToolsArg,
    /// Replay under this step budget instead of the recorded one.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
    /// Append the reruns, with full capture, to this trace; it must not be the input.
    #[arg(long = "trace", value_name = "OUT")]
    pub trace_out: Option<PathBuf>,
    /// Only check that the runs can be replayed; run nothing.
    #[arg(long)]
    pub check: bool,
    /// Stop at the first divergence of a run, or report them all.
    #[arg(long, value_enum, default_value_t = OnDivergenceArg::Stop)]
    pub on_divergence: OnDivergenceArg,
    /// `text` for people, `json` for one JSON document.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Print only errors and a one-line summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Write the report to FILE (replaced as a whole, only once complete) instead of standard
    /// output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Parse the recorded raw model output again with today's adapter instead of replaying the
    /// recorded actions; a live run's response bodies go through its wire format's adapter and
    /// every request is compared with the recorded hash.
    #[arg(long)]
    pub raw: bool,
    /// With `--raw` on a live run: the system prompt the requests carry (as `run --system`).
    #[arg(long, value_name = "TEXT", requires = "raw")]
    pub system: Option<String>,
    /// With `--raw` on a live run: the sampling temperature the requests carry.
    #[arg(long, value_name = "T", requires = "raw")]
    pub temperature: Option<f64>,
    /// With `--raw` on a live run: the output token limit the requests carry.
    #[arg(long, value_name = "N", requires = "raw")]
    pub max_output_tokens: Option<u32>,
    /// With `--tools live`, rerun this finish gate and compare its verdicts with the recorded ones.
    #[command(flatten)]
    pub gate: GateArgs,
    /// The tools file the runs were recorded with: its tools run again with `--tools live`, each
    /// run in a fresh copy of its working-folder template.
    #[command(flatten)]
    pub tools_file: ToolsFileArgs,
}

/// `--tools live|recorded`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ToolsArg {
    /// Run the tools again (built-in, and a tools file's) and compare every observation.
    Live,
    /// Serve the recorded observations in order.
    Recorded,
}

/// `--on-divergence stop|continue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnDivergenceArg {
    /// End a run's replay at its first divergence.
    Stop,
    /// Replay to the end and report every divergence.
    Continue,
}

/// `--format text|json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Readable text.
    Text,
    /// One JSON document.
    Json,
    /// One self-contained HTML page: the replayed runs' report and timelines, each run's first
    /// divergence marked.
    Html,
}

/// Runs `looptrace replay`.
pub fn run(args: ReplayArgs) -> CliResult {
    super::common::end_programs_on_signal();
    let style = super::common::output_style(args.output.as_deref());
    if args.max_steps == Some(0) {
        return Err(CliError::input("--max-steps must be at least 1"));
    }
    if args.gate.program.is_some() && args.tools == ToolsArg::Recorded {
        return Err(CliError::input(
            "--finish-gate reruns the gate, which needs --tools live; --tools recorded serves the recorded verdicts",
        ));
    }
    if let Some(out) = &args.trace_out {
        refuse_same_file(&args.trace, out)?;
    }
    if args.check && args.format == FormatArg::Html {
        return Err(CliError::input(
            "--check prints text or JSON (--format text or --format json)",
        ));
    }
    if let Some(output) = &args.output
        && super::common::same_file(output, &args.trace)
    {
        return Err(CliError::input(format!(
            "-o would overwrite the input `{}`",
            args.trace.display()
        )));
    }
    if let (Some(output), Some(out)) = (&args.output, &args.trace_out)
        && (output == out || super::common::same_file(output, out))
    {
        return Err(CliError::input(format!(
            "-o `{}` is the --trace output too: choose another file",
            output.display()
        )));
    }
    let inputs = [args.trace.as_path()];
    let options = ReplayOptions {
        max_steps: args.max_steps,
        on_divergence: match args.on_divergence {
            OnDivergenceArg::Stop => OnDivergence::Stop,
            OnDivergenceArg::Continue => OnDivergence::Continue,
        },
        model: if args.raw {
            ModelSource::Raw
        } else {
            ModelSource::Parsed
        },
    };
    let source = file_name(&args.trace);
    let wire = WireSettings {
        system: args.system.clone(),
        temperature: args.temperature,
        max_output_tokens: args.max_output_tokens,
        ..WireSettings::default()
    };
    let summarizer = Summarizer::from_env();
    let prepare = |run: &StreamedRun| {
        PreparedReplay::with_wire(&run.run, options, summarizer.clone(), &wire).map_err(|err| {
            CliError::input(escape(&format!("{}: {err}", args.trace.display())).into_owned())
        })
    };
    if args.check {
        let mut checks: Vec<(u64, RunCheck)> = Vec::new();
        each_selected_run(&args, |run| {
            checks.push((run.index, prepare(run)?.check()));
            Ok(())
        })?;
        checks.sort_by_key(|(index, _)| *index);
        let checks: Vec<RunCheck> = checks.into_iter().map(|(_, check)| check).collect();
        let report = CheckReport {
            source: &source,
            runs: &checks,
        };
        let text = match args.format {
            _ if args.quiet => check_summary_line(&report),
            FormatArg::Json => render_check_json(&report),
            _ => style.finish(&render_check_text(&report)),
        };
        return super::html::write_output(args.output.as_deref(), text.as_bytes(), &inputs);
    }
    let mut writer = match &args.trace_out {
        Some(path) => {
            // Every run is checked before any rerun is written, so bad input writes nothing.
            each_selected_run(&args, |run| prepare(run).map(drop))?;
            Some(open_trace_writer(path, false)?)
        }
        None => None,
    };
    let mut gate = args.gate.command_gate();
    let mut gate_noted = gate.is_some() || args.tools != ToolsArg::Live || args.quiet;
    let builtin = ToolRegistry::builtin();
    let tools_file = args.tools_file.load()?;
    if let (Some(file), Some(dir)) = (&tools_file, &args.tools_file.log_dir) {
        super::output_checks::refuse_blocked_logs("--log-dir", file, dir)?;
    }
    let task_tools = tools_file.map(|file| TaskTools::new(file, args.tools_file.log_dir.clone()));
    let mode = match args.tools {
        ToolsArg::Live => ToolSource::Live(&builtin).mode(),
        ToolsArg::Recorded => ToolSource::Recorded.mode(),
    };
    let mut replays: Vec<(u64, RunReplay)> = Vec::new();
    let html = args.format == FormatArg::Html;
    // The page shows the replayed runs: their rows, and (for one run) its lines for the totals.
    let mut rows: Vec<(u64, RunRow)> = Vec::new();
    let mut selected_lines: Vec<u8> = Vec::new();
    each_selected_run(&args, |run| {
        if html {
            rows.push((run.index, RunRow::of(&run.run, 0, "looptrace", true)));
            if args.run.is_some() {
                for (_, event) in &run.run.events {
                    serde_json::to_writer(&mut selected_lines, event)
                        .map_err(|err| CliError::internal(err.to_string()))?;
                    selected_lines.push(b'\n');
                }
            }
        }
        let replay = prepare(run)?;
        let live = args.tools == ToolsArg::Live;
        let run_tools = RunTools::new(task_tools.as_ref(), replay.recording(), live)?;
        let tool_source = match (args.tools, &run_tools.set) {
            (ToolsArg::Recorded, _) => ToolSource::Recorded,
            (ToolsArg::Live, Some(set)) => ToolSource::Live(&set.registry),
            (ToolsArg::Live, None) => ToolSource::Live(&builtin),
        };
        if !gate_noted && replay.recording().has_gate() {
            gate_noted = true;
            eprintln!(
                "note: no --finish-gate given: serving the recorded finish gate verdicts (tools run live)"
            );
        }
        let replay_run_id = writer.as_ref().map(|_| RunId::generate());
        let result = match (&mut writer, &replay_run_id) {
            (Some(writer), Some(id)) => {
                let options = RecorderOptions {
                    capture: Capture::Full,
                    summarizer: replay.recording().summarizer().clone(),
                    durations: true,
                    replay_of: Some(ReplayOf {
                        source: source.clone(),
                        run_id: replay.recording().run_id().to_owned(),
                    }),
                };
                let workdir_hash = task_tools
                    .as_ref()
                    .and_then(|tools| tools.file().template_hash())
                    .map(str::to_owned);
                let mut recorder: TraceRecorder<&mut TraceWriter> =
                    TraceRecorder::new(id.as_str(), options, writer)
                        .with_workdir_hash(workdir_hash);
                replay.run_with_gate(tool_source, live_gate(&mut gate), &mut recorder)
            }
            _ => replay.run_with_gate(tool_source, live_gate(&mut gate), &mut NoObserver),
        };
        let mut result = result.map_err(CliError::internal)?;
        result.replay_run_id = replay_run_id.map(|id| id.0);
        replays.push((run.index, result));
        Ok(())
    })?;
    // Reports list runs in order of first appearance, whatever order they ended in.
    replays.sort_by_key(|(index, _)| *index);
    let replays: Vec<RunReplay> = replays.into_iter().map(|(_, replay)| replay).collect();
    let report = ReplayReport::new(&source, mode, options.model, &replays);
    let bytes = match args.format {
        // The page is a file users asked for: `--quiet` quiets the terminal, not it.
        _ if args.quiet && !matches!(args.format, FormatArg::Html) => {
            summary_line(&report).into_bytes()
        }
        FormatArg::Text => style.finish(&render_text(&report)).into_bytes(),
        FormatArg::Json => render_json(&report).into_bytes(),
        FormatArg::Html => {
            rows.sort_by_key(|(index, _)| *index);
            let table = RunTable {
                files: vec![args.trace.display().to_string()],
                rows: rows
                    .into_iter()
                    .zip(&replays)
                    .map(|((_, row), replay)| with_verdict(row, replay))
                    .collect(),
            };
            let name = args.trace.display().to_string();
            let totals = if args.run.is_some() {
                looptrace::report::analyze_slice(&selected_lines, &name, false)
            } else {
                looptrace::report::analyze(
                    &[Input::path(&args.trace)],
                    &Options::default(),
                    Vec::new(),
                )
            }
            .map_err(CliError::input)?;
            let diverged = replays
                .iter()
                .filter(|r| r.verdict == Verdict::Diverged)
                .count();
            let context = vec![format!(
                "{} of {} replayed with {} tools: {} faithful, {diverged} diverged",
                looptrace::plural(replays.len() as u64, "run", "runs"),
                source,
                mode.as_str(),
                replays.len() - diverged
            )];
            let title = format!("looptrace replay: {source}");
            looptrace::html::render(&Page {
                models: None,
                scores: &[],
                title: &title,
                context: &context,
                report: &totals,
                runs: &table,
                verdict: "replay",
                baseline: None,
                statistics: None,
            })
        }
    };
    super::html::write_output(args.output.as_deref(), &bytes, &inputs)?;
    if replays.iter().all(|r| r.verdict == Verdict::Faithful) {
        Ok(Outcome::Success)
    } else {
        Ok(Outcome::Failures)
    }
}

/// A recorded run's row with its replay's verdict and first divergence.
fn with_verdict(mut row: RunRow, replay: &RunReplay) -> RunRow {
    row.verdict = Some(replay.verdict.as_str().to_owned());
    row.divergence = replay.divergences.first().map(|d| {
        let at = d
            .path
            .as_deref()
            .map(|p| format!(" at {p}"))
            .unwrap_or_default();
        let side = |value: &str, text: &Option<String>| match text {
            Some(text) => format!("{value} {text:?}"),
            None => value.to_owned(),
        };
        let note = format!(
            "{} ({}){at}; recorded: {}; rerun: {}",
            d.what.describe(),
            d.what,
            side(&d.recorded, &d.recorded_text),
            side(&d.actual, &d.actual_text)
        );
        (d.step, note.chars().take(TEXT_LIMIT).collect())
    });
    row
}

/// The tools of one replayed run: with a tools file, a fresh working folder made from its
/// template (removed when the run's replay is done) and the registry running there.
struct RunTools {
    set: Option<TaskToolSet>,
    temp: Option<PathBuf>,
}

impl RunTools {
    /// Makes the run's tools and prints, before any step runs, every way they differ from the
    /// recording: a changed tool spec, a tool gone or added, a changed template. Without a tools
    /// file, a live replay (`live`) of a run that had one is warned that its tools cannot run;
    /// recorded tools need none.
    fn new(
        tools: Option<&TaskTools>,
        recording: &Recording,
        live: bool,
    ) -> Result<RunTools, CliError> {
        let run_id = escape(recording.run_id()).into_owned();
        let Some(tools) = tools else {
            let listed: Vec<&str> = recording
                .tools()
                .iter()
                .map(|t| t.name.as_str())
                .filter(|name| *name != "calculator")
                .collect();
            if live && !listed.is_empty() {
                eprintln!(
                    "warning: run {run_id} was recorded with tools from a tools file ({}); give --tools-file to run them",
                    escape(&listed.join(", "))
                );
            }
            return Ok(RunTools {
                set: None,
                temp: None,
            });
        };
        let temp = match tools.file().template() {
            Some(_) => Some(temp_workdir().map_err(|err| {
                CliError::internal(format!("cannot make a temporary working folder: {err}"))
            })?),
            None => None,
        };
        let mut run_tools = RunTools { set: None, temp };
        let dir = run_tools
            .temp
            .clone()
            .unwrap_or_else(|| tools.file().folder().to_path_buf());
        let set = tools.for_task(&dir).map_err(CliError::internal)?;
        for change in recording.tool_changes(&set.registry.all_spec_hashes()) {
            eprintln!("warning: run {run_id}: {}", escape(&change));
        }
        if let (Some(recorded), Some(now)) =
            (recording.workdir_hash(), tools.file().template_hash())
            && recorded != now
        {
            eprintln!(
                "warning: run {run_id}: the working-folder template changed since the recording ({recorded} now {now})"
            );
        }
        run_tools.set = Some(set);
        Ok(run_tools)
    }
}

impl Drop for RunTools {
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = std::fs::remove_dir_all(temp);
        }
    }
}

/// Streams the trace and calls `each` with every selected run as soon as it ends; then prints
/// the reader's warnings and refuses a selection that matched nothing.
fn each_selected_run(
    args: &ReplayArgs,
    mut each: impl FnMut(&StreamedRun) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let shown = args.trace.display().to_string();
    refuse_non_regular(&args.trace)?;
    let mut stream =
        RunStream::open(&args.trace, ReadOptions::default()).map_err(CliError::input)?;
    let wanted = args.occurrence.unwrap_or(1);
    let mut ids = RunIds::default();
    let mut selected = 0usize;
    for run in stream.by_ref() {
        let run = run.map_err(CliError::input)?;
        ids.note(&run.run.run_id, args.run.as_deref());
        if let Some(id) = &args.run
            && (run.run.run_id != *id || run.occurrence != wanted)
        {
            continue;
        }
        selected += 1;
        each(&run)?;
    }
    for warning in stream.into_stats().warnings(&shown) {
        eprintln!("warning: {}", escape(&warning));
    }
    match &args.run {
        Some(id) if selected == 0 => Err(ids.not_found(id, wanted, &shown)),
        None if selected == 0 => Err(CliError::input(format!("no runs in `{shown}`"))),
        _ => Ok(()),
    }
}

/// A replay source must be a regular file: a FIFO or a device would block or never end.
fn refuse_non_regular(path: &Path) -> Result<(), CliError> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(CliError::input(format!(
            "`{}` is not a regular file: replay reads traces from regular files only",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// The gate to rerun, if one was given.
fn live_gate(gate: &mut Option<CommandGate>) -> Option<&mut dyn FinishGate> {
    gate.as_mut().map(|gate| gate as &mut dyn FinishGate)
}

/// The file name of a path, which is all a trace records of its source.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Refuses an output that is the input file itself, however it is named: the same path, another
/// relative path, a symlink or a hard link.
fn refuse_same_file(input: &Path, out: &Path) -> Result<(), CliError> {
    let refuse = || {
        Err(CliError::input(format!(
            "--trace `{}` is the input trace `{}`: replay never writes to its input; choose another file",
            out.display(),
            input.display()
        )))
    };
    let (Ok(input_meta), Ok(out_meta)) = (std::fs::metadata(input), std::fs::metadata(out)) else {
        // An output that does not exist yet cannot be the input.
        return Ok(());
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if input_meta.dev() == out_meta.dev() && input_meta.ino() == out_meta.ino() {
            return refuse();
        }
    }
    #[cfg(not(unix))]
    let _ = (&input_meta, &out_meta);
    match (std::fs::canonicalize(input), std::fs::canonicalize(out)) {
        (Ok(a), Ok(b)) if a == b => refuse(),
        _ => Ok(()),
    }
}
