//! `looptrace replay`: rerun recorded runs and report whether each still comes out the same.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::common::{GateArgs, open_trace_writer};
use super::show::list_ids;
use super::{CliError, CliResult, Outcome};
use looptrace::agent::NoObserver;
use looptrace::gate::{CommandGate, FinishGate};
use looptrace::replay::{
    CheckReport, ModelSource, OnDivergence, PreparedReplay, ReplayOptions, ReplayReport, RunCheck,
    ToolSource, Verdict, render_check_json, render_check_text, render_json, render_text,
};
use looptrace::run::RunId;
use looptrace::tools::ToolRegistry;
use looptrace::trace::{
    Capture, ReadOptions, RecordedRun, RecorderOptions, ReplayOf, TraceRecorder, TraceWriter,
    read_trace,
};

/// Arguments of `looptrace replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recorded trace (full capture).
    pub trace: PathBuf,
    /// Replay only this run (default: every run in the file).
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
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
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Parse the recorded raw model output again with today's adapter instead of replaying the
    /// recorded actions.
    #[arg(long)]
    pub raw: bool,
    /// With `--tools live`, rerun this finish gate and compare its verdicts with the recorded ones.
    #[command(flatten)]
    pub gate: GateArgs,
}

/// `--tools live|recorded`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ToolsArg {
    /// Run the built-in tools again and compare every observation.
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
}

/// Runs `looptrace replay`.
pub fn run(args: ReplayArgs) -> CliResult {
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
    let contents = read_trace(&args.trace, ReadOptions::default()).map_err(CliError::input)?;
    let shown = args.trace.display().to_string();
    for warning in contents.stats.warnings(&shown) {
        eprintln!("warning: {warning}");
    }
    let runs: Vec<&RecordedRun> = match &args.run {
        Some(id) => match contents.run(id) {
            Some(run) => vec![run],
            None => {
                let ids: Vec<&str> = contents.runs.iter().map(|r| r.run_id.as_str()).collect();
                return Err(CliError::input(format!(
                    "no run {id:?} in `{shown}` (it has {})",
                    list_ids(&ids)
                )));
            }
        },
        None => contents.runs.iter().collect(),
    };
    if runs.is_empty() {
        return Err(CliError::input(format!("no runs in `{shown}`")));
    }
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
    // Every run is checked before any runs, so bad input writes nothing.
    let prepared = runs
        .iter()
        .map(|run| {
            PreparedReplay::new(run, options)
                .map_err(|err| CliError::input(format!("{}: {err}", args.trace.display())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let source = file_name(&args.trace);
    let mut out = super::common::outcome_stdout();
    if args.check {
        let checks: Vec<RunCheck> = prepared.iter().map(PreparedReplay::check).collect();
        let report = CheckReport {
            source: &source,
            runs: &checks,
        };
        let text = match args.format {
            FormatArg::Text => render_check_text(&report),
            FormatArg::Json => render_check_json(&report),
        };
        out.write_all(text.as_bytes())?;
        out.flush()?;
        return Ok(Outcome::Success);
    }
    let mut writer = match &args.trace_out {
        Some(path) => Some(open_trace_writer(path, false)?),
        None => None,
    };
    let mut gate = args.gate.command_gate();
    if gate.is_none()
        && args.tools == ToolsArg::Live
        && prepared.iter().any(|p| p.recording().has_gate())
    {
        eprintln!(
            "note: no --finish-gate given: serving the recorded finish gate verdicts (tools run live)"
        );
    }
    let tools = ToolRegistry::builtin();
    let tool_source = match args.tools {
        ToolsArg::Live => ToolSource::Live(&tools),
        ToolsArg::Recorded => ToolSource::Recorded,
    };
    let mut replays = Vec::with_capacity(prepared.len());
    for replay in prepared {
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
                let mut recorder: TraceRecorder<&mut TraceWriter> =
                    TraceRecorder::new(id.as_str(), options, writer);
                replay.run_with_gate(tool_source, live_gate(&mut gate), &mut recorder)
            }
            _ => replay.run_with_gate(tool_source, live_gate(&mut gate), &mut NoObserver),
        };
        let mut result = result.map_err(CliError::internal)?;
        result.replay_run_id = replay_run_id.map(|id| id.0);
        replays.push(result);
    }
    let report = ReplayReport::new(&source, tool_source.mode(), options.model, &replays);
    let text = match args.format {
        FormatArg::Text => render_text(&report),
        FormatArg::Json => render_json(&report),
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    if replays.iter().all(|r| r.verdict == Verdict::Faithful) {
        Ok(Outcome::Success)
    } else {
        Ok(Outcome::Failures)
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
