//! `looptrace replay`: the arguments become a [`ReplayRequest`], the library replays the runs
//! (streamed: each as soon as it ends in the file, only its verdict kept), and the report is
//! printed as text, JSON or an HTML page.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::common::{GateArgs, ToolsFileArgs};
use super::{CliError, CliResult, Outcome};
use looptrace::html::Page;
use looptrace::replay::{
    CheckReport, InOrder, ModelSource, OnDivergence, ReplayObserver, ReplayOptions, ReplayOutcome,
    ReplayPlan, ReplayPlanError, ReplayReport, ReplayRequest, RunReplay, ToolMode, Verdict,
    WireSettings, check_summary_line, file_name, json_runs_head, json_runs_tail, render_check_json,
    render_check_text, render_run_json, render_run_text, summary_line,
};
use looptrace::report::{Input, Options, RunRow, RunTable, TEXT_LIMIT};
use looptrace::trace::StreamedRun;

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
    if args.check && args.format == FormatArg::Html {
        return Err(CliError::input(
            "--check prints text or JSON (--format text or --format json)",
        ));
    }
    let read = [
        Some(args.trace.as_path()),
        args.tools_file.tools_file.as_deref(),
        args.gate.program_path(),
    ];
    if let Some(output) = &args.output {
        super::common::refuse_overwrite("-o", output, read.into_iter().flatten())?;
    }
    if let Some(out) = &args.trace_out {
        // Over the trace itself, the replay's own check says more.
        super::common::refuse_overwrite("--trace", out, read[1..].iter().copied().flatten())?;
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
    let plan = ReplayPlan::new(request(&args))?;
    let source = file_name(&args.trace);
    let mut console = Console {
        html: args.format == FormatArg::Html,
        one_run: args.run.is_some(),
        rows: Vec::new(),
        lines: Vec::new(),
    };
    if args.check {
        let checks = plan.check(&mut console)?;
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
    let model = if args.raw {
        ModelSource::Raw
    } else {
        ModelSource::Parsed
    };
    if args.format == FormatArg::Html {
        // The page holds every run's row and timeline anyway.
        let outcome = plan.execute(&mut console)?;
        let bytes = page(&args, &source, console, &outcome)?;
        super::html::write_output(args.output.as_deref(), &bytes, &inputs)?;
        return Ok(verdict_outcome(outcome.faithful()));
    }
    // The text and JSON reports are made run by run as the runs end, put back in order of first
    // appearance with bounded memory, and written once every run is replayed (bad input found
    // late still writes nothing).
    let mut in_order = InOrder::default();
    let (mut faithful, mut diverged) = (0, 0);
    let mut block = String::new();
    let mut bytes = Vec::new();
    let one_run = args.run.is_some();
    let mode = plan.execute_each(&mut console, &mut |index, replay| {
        match replay.verdict {
            Verdict::Faithful => faithful += 1,
            Verdict::Diverged => diverged += 1,
        }
        if args.quiet {
            return Ok(());
        }
        bytes.clear();
        match args.format {
            FormatArg::Json => {
                // Every run is replayed (indices from 0), or only the one asked for.
                render_run_json(&replay, index == 0 || one_run, &mut bytes);
            }
            _ => {
                block.clear();
                render_run_text(&replay, &mut block);
                bytes.extend_from_slice(style.finish(&block).as_bytes());
            }
        }
        in_order
            .push(index, &bytes)
            .map_err(|err| ReplayPlanError::Internal(format!("failed to hold the report: {err}")))
    })?;
    let report = ReplayReport {
        source: &source,
        tools: mode,
        model,
        faithful,
        diverged,
        runs: &[],
    };
    if args.quiet {
        let line = summary_line(&report);
        super::html::write_output(args.output.as_deref(), line.as_bytes(), &inputs)?;
    } else {
        write_streamed(args.output.as_deref(), &inputs, |out| match args.format {
            FormatArg::Json => {
                out.write_all(json_runs_head(&report).as_bytes())?;
                in_order.finish(out)?;
                out.write_all(json_runs_tail().as_bytes())
            }
            _ => {
                in_order.finish(out)?;
                out.write_all(style.finish(&summary_line(&report)).as_bytes())
            }
        })?;
    }
    Ok(verdict_outcome(diverged == 0))
}

/// Exit code 0 when every run came out the same, else 1.
fn verdict_outcome(faithful: bool) -> Outcome {
    if faithful {
        Outcome::Success
    } else {
        Outcome::Failures
    }
}

/// Writes a report to `output` (replaced as a whole, only once complete) or standard output,
/// through a buffer, as `write` makes it.
fn write_streamed(
    output: Option<&Path>,
    inputs: &[&Path],
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), CliError> {
    let Some(path) = output else {
        let mut out = BufWriter::with_capacity(64 * 1024, super::common::outcome_stdout());
        write(&mut out)?;
        out.flush()?;
        return Ok(());
    };
    super::common::refuse_overwrite("-o", path, inputs.iter().copied())?;
    super::import::write_atomically(path, |out| {
        write(out)?;
        Ok(0)
    })?;
    Ok(())
}

/// The request the arguments make.
fn request(args: &ReplayArgs) -> ReplayRequest {
    let mut request = ReplayRequest::new(args.trace.clone());
    request.run = args.run.clone().map(|id| (id, args.occurrence));
    request.tools = match args.tools {
        ToolsArg::Live => ToolMode::Live,
        ToolsArg::Recorded => ToolMode::Recorded,
    };
    request.options = ReplayOptions {
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
    request.wire = WireSettings {
        system: args.system.clone(),
        temperature: args.temperature,
        max_output_tokens: args.max_output_tokens,
        ..WireSettings::default()
    };
    request.trace_out = args.trace_out.clone();
    request.gate = args.gate.command_gate();
    request.tools_file = args.tools_file.tools_file.clone();
    request.log_dir = args.tools_file.log_dir.clone();
    request
}

/// The console's observer: warnings and notes on stderr, and for the HTML page the replayed
/// runs' rows (and, for one run, its lines for the totals).
struct Console {
    html: bool,
    one_run: bool,
    rows: Vec<(u64, RunRow)>,
    lines: Vec<u8>,
}

impl ReplayObserver for Console {
    fn run_selected(&mut self, run: &StreamedRun) -> Result<(), ReplayPlanError> {
        if !self.html {
            return Ok(());
        }
        self.rows
            .push((run.index, RunRow::of(&run.run, 0, "looptrace", true)));
        if self.one_run {
            for (_, event) in &run.run.events {
                serde_json::to_writer(&mut self.lines, event)
                    .map_err(|err| ReplayPlanError::Internal(err.to_string()))?;
                self.lines.push(b'\n');
            }
        }
        Ok(())
    }

    fn warning(&mut self, message: &str) {
        eprintln!("warning: {message}");
    }

    fn note(&mut self, message: &str) {
        eprintln!("note: {message}");
    }
}

/// The HTML page of the replayed runs: their rows with verdicts, and the report's totals.
fn page(
    args: &ReplayArgs,
    source: &str,
    mut console: Console,
    outcome: &ReplayOutcome,
) -> Result<Vec<u8>, CliError> {
    let replays = &outcome.replays;
    console.rows.sort_by_key(|(index, _)| *index);
    let table = RunTable {
        files: vec![args.trace.display().to_string()],
        rows: console
            .rows
            .into_iter()
            .zip(replays)
            .map(|((_, row), replay)| with_verdict(row, replay))
            .collect(),
    };
    let name = args.trace.display().to_string();
    let totals = if args.run.is_some() {
        looptrace::report::analyze_slice(&console.lines, &name, false)
    } else {
        looptrace::report::analyze(&[Input::path(&args.trace)], &Options::default(), Vec::new())
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
        outcome.mode.as_str(),
        replays.len() - diverged
    )];
    let title = format!("looptrace replay: {source}");
    Ok(looptrace::html::render(&Page {
        models: None,
        scores: &[],
        title: &title,
        context: &context,
        report: &totals,
        runs: &table,
        verdict: "replay",
        baseline: None,
        statistics: None,
    }))
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
