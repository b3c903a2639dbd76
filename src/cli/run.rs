//! `looptrace run`: one task, a file of raw model responses, the result and optionally a trace.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::common::{CaptureArg, GateArgs, open_trace_writer, read_responses, same_file};
use super::{CliError, CliResult, Outcome};
use looptrace::agent::{AgentError, run_agent_with_gate};
use looptrace::gate::FinishGate;
use looptrace::model::{JsonModelAdapter, ScriptedRawModel};
use looptrace::run::{ExitReason, RunId, RunResult, Task};
use looptrace::tools::ToolRegistry;
use looptrace::trace::{RecorderOptions, TraceRecorder, TraceWriter};

/// Arguments of `looptrace run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task text given to the model.
    #[arg(long)]
    pub task: String,
    /// A file with one raw model response per line (blank lines are skipped).
    #[arg(long, value_name = "FILE")]
    pub responses: PathBuf,
    /// The step budget.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub max_steps: u32,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Append the run's trace to this JSONL file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// What the trace keeps: summaries (default) or the full content.
    #[arg(long, value_enum, default_value_t = CaptureArg::Summary)]
    pub capture: CaptureArg,
    /// The run id in the trace (default: a fresh unique id).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Sync the trace to disk after every event.
    #[arg(long)]
    pub fsync: bool,
    /// Check every finish with this program before the run may end.
    #[command(flatten)]
    pub gate: GateArgs,
}

/// Runs `looptrace run`.
pub fn run(args: RunArgs) -> CliResult {
    if args.max_steps == 0 {
        return Err(CliError::input("--max-steps must be at least 1"));
    }
    let responses = read_responses(&args.responses)?;
    let run_id = match args.run_id {
        Some(id) if id.is_empty() => return Err(CliError::input("--run-id must not be empty")),
        Some(id) => RunId(id),
        None => RunId::generate(),
    };
    let task = Task::new(args.task);
    let tools = ToolRegistry::builtin();
    let mut model = JsonModelAdapter::new(ScriptedRawModel::new(responses));
    let options = looptrace::agent::RunOptions {
        max_steps: args.max_steps,
    };
    if let Some(trace) = &args.trace
        && same_file(trace, &args.responses)
    {
        return Err(CliError::input(format!(
            "--trace would overwrite the input `{}`",
            args.responses.display()
        )));
    }
    let mut gate = args.gate.command_gate();
    let gate = gate.as_mut().map(|gate| gate as &mut dyn FinishGate);
    let outcome = match &args.trace {
        Some(path) => {
            let writer: TraceWriter = open_trace_writer(path, args.fsync)?;
            let recorder_options = RecorderOptions {
                capture: args.capture.into(),
                ..RecorderOptions::default()
            };
            let mut recorder = TraceRecorder::new(run_id.as_str(), recorder_options, writer);
            run_agent_with_gate(&task, &mut model, &tools, gate, options, &mut recorder)
        }
        None => run_agent_with_gate(
            &task,
            &mut model,
            &tools,
            gate,
            options,
            &mut looptrace::agent::NoObserver,
        ),
    };
    let (result, cause) = match outcome {
        Ok(result) => (result, None),
        Err(AgentError::Internal { result, cause }) => (result, Some(cause.to_string())),
        Err(AgentError::InvalidMaxSteps) => {
            return Err(CliError::input("--max-steps must be at least 1"));
        }
    };
    let mut out = super::common::outcome_stdout();
    if args.json {
        let mut value = serde_json::to_value(&result).map_err(CliError::internal)?;
        value["run_id"] = serde_json::Value::String(run_id.0.clone());
        writeln!(out, "{value}")?;
    } else {
        write!(out, "{}", render_result(&result, &run_id))?;
    }
    out.flush()?;
    match (result.exit_reason, cause) {
        (_, Some(cause)) => Err(CliError::Internal(cause)),
        (ExitReason::Finished, None) => Ok(Outcome::Success),
        _ => Ok(Outcome::Failures),
    }
}

/// The readable result block.
pub fn render_result(result: &RunResult, run_id: &RunId) -> String {
    let dash = || "-".to_owned();
    format!(
        "exit_reason: {}\nanswer:      {}\nsteps_used:  {}\nerror:       {}\nrun_id:      {}\n",
        result.exit_reason,
        result.answer.clone().unwrap_or_else(dash),
        result.steps_used,
        result.error.clone().unwrap_or_else(dash),
        run_id
    )
}
