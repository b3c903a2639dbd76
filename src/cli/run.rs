//! `looptrace run`: one task, a file of raw model responses, the result and optionally a trace.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::common::{CaptureArg, GateArgs, ToolsFileArgs, open_trace_writer, read_responses};
use super::{CliError, CliResult, Outcome};
use std::time::Duration;

use looptrace::agent::{AgentError, Limits, run_agent_with};
use looptrace::gate::FinishGate;
use looptrace::model::live::{Api, LiveConfig, LiveModel, api_key_from_env};
use looptrace::model::{JsonModelAdapter, Model, ScriptedRawModel};
use looptrace::run::{ExitReason, RunId, RunResult, Task};
use looptrace::tools::{ToolRegistry, ToolsFile};
use looptrace::trace::{RecorderOptions, TraceRecorder, TraceWriter};

/// Arguments of `looptrace run`: the model is a responses file or a live server, one of them.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("model_source").required(true).args(["responses", "api"])))]
pub struct RunArgs {
    /// The task text given to the model.
    #[arg(long)]
    pub task: String,
    /// A file with one raw model response per line (blank lines are skipped); or give `--api`
    /// with `--base-url` and `--model` for a live model server.
    #[arg(long, value_name = "FILE", conflicts_with = "api")]
    pub responses: Option<PathBuf>,
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
    /// Tools beside the calculator.
    #[command(flatten)]
    pub tools_file: ToolsFileArgs,
    /// Keep the temporary working folder made from the tools file's template (its path is
    /// printed on stderr) instead of removing it after the run.
    #[arg(long, requires = "tools_file")]
    pub keep_workdir: bool,
    #[command(flatten)]
    pub live: LiveArgs,
}

/// The options of a run against a live model server.
#[derive(Debug, Args)]
pub struct LiveArgs {
    /// Talk to a live model server in this wire format instead of reading `--responses`.
    #[arg(long, value_enum, requires_all = ["base_url", "model"])]
    pub api: Option<ApiArg>,
    /// The server's base URL (`http://127.0.0.1:8080/v1` for openai-chat and openai-responses,
    /// the host root for anthropic-messages).
    #[arg(long, value_name = "URL", requires = "api")]
    pub base_url: Option<String>,
    /// The model name sent in every request.
    #[arg(long, value_name = "NAME", requires = "api")]
    pub model: Option<String>,
    /// The environment variable holding the API key (no auth header when not given).
    #[arg(long, value_name = "VAR", requires = "api")]
    pub api_key_env: Option<String>,
    /// End the run as max_steps_exceeded (budget tokens) once this many tokens are used.
    #[arg(long, value_name = "N")]
    pub max_total_tokens: Option<u64>,
    /// End the run as max_steps_exceeded (budget time) once this many seconds have passed.
    #[arg(long, value_name = "S")]
    pub max_seconds: Option<f64>,
    /// Sampling temperature.
    #[arg(long, value_name = "T", requires = "api")]
    pub temperature: Option<f64>,
    /// The output token limit per model call.
    #[arg(long, value_name = "N", requires = "api")]
    pub max_output_tokens: Option<u32>,
    /// Seconds one HTTP attempt may take.
    #[arg(long, value_name = "S", default_value_t = 120.0, requires = "api")]
    pub timeout_s: f64,
    /// Attempts after the first for rate limits, outages and timeouts.
    #[arg(long, value_name = "N", default_value_t = 4, requires = "api")]
    pub max_retries: u32,
    /// Seconds all attempts of one model call may take, waits included.
    #[arg(long, value_name = "S", default_value_t = 300.0, requires = "api")]
    pub retry_budget_s: f64,
    /// The system prompt (a short default when not given).
    #[arg(long, value_name = "TEXT", requires = "api")]
    pub system: Option<String>,
}

/// `--api openai-chat|anthropic-messages|openai-responses`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ApiArg {
    /// Chat Completions.
    OpenaiChat,
    /// Anthropic Messages.
    AnthropicMessages,
    /// OpenAI Responses.
    OpenaiResponses,
}

impl LiveArgs {
    /// The budgets beside the step budget, checked.
    fn limits(&self) -> Result<Limits, CliError> {
        if self.max_total_tokens == Some(0) {
            return Err(CliError::input("--max-total-tokens must be at least 1"));
        }
        if let Some(seconds) = self.max_seconds
            && !(seconds.is_finite() && seconds > 0.0)
        {
            return Err(CliError::input("--max-seconds must be a positive number"));
        }
        Ok(Limits {
            max_total_tokens: self.max_total_tokens,
            max_seconds: self.max_seconds,
        })
    }

    /// The live model, with its key read from the environment before any request is made.
    fn model(&self, tools: &ToolRegistry) -> Result<Option<LiveModel>, CliError> {
        let (Some(api), Some(base_url), Some(model)) = (self.api, &self.base_url, &self.model)
        else {
            return Ok(None);
        };
        let seconds = |value: f64, flag: &str| {
            if value.is_finite() && value > 0.0 {
                // Held to 10^9 s (about 32 years), as in a suite: a longer wait is no limit, and
                // a `Duration` past a deadline's range would overflow.
                Ok(Duration::from_secs_f64(value.min(1e9)))
            } else {
                Err(CliError::input(format!("{flag} must be a positive number")))
            }
        };
        let api = match api {
            ApiArg::OpenaiChat => Api::OpenAiChat,
            ApiArg::AnthropicMessages => Api::AnthropicMessages,
            ApiArg::OpenaiResponses => Api::OpenAiResponses,
        };
        let mut config = LiveConfig::new(api, base_url.clone(), model.clone());
        config.api_key = api_key_from_env(self.api_key_env.as_deref()).map_err(CliError::input)?;
        if self.temperature.is_some_and(|t| !t.is_finite()) {
            return Err(CliError::input("--temperature must be a number"));
        }
        config.temperature = self.temperature;
        config.max_output_tokens = self.max_output_tokens;
        config.timeout = seconds(self.timeout_s, "--timeout-s")?;
        config.max_retries = self.max_retries;
        config.retry_budget = seconds(self.retry_budget_s, "--retry-budget-s")?;
        config.system = self.system.clone();
        let specs = tools.specs().into_iter().cloned().collect();
        Ok(Some(LiveModel::new(config, specs)))
    }
}

/// Runs `looptrace run`.
pub fn run(args: RunArgs) -> CliResult {
    super::common::end_programs_on_signal();
    if args.max_steps == 0 {
        return Err(CliError::input("--max-steps must be at least 1"));
    }
    let limits = args.live.limits()?;
    let run_id = match args.run_id.clone() {
        Some(id) if id.is_empty() => return Err(CliError::input("--run-id must not be empty")),
        Some(id) => RunId(id),
        None => RunId::generate(),
    };
    let task = Task::new(args.task.clone());
    let key_vars: Vec<String> = args.live.api_key_env.iter().cloned().collect();
    // Before any program starts: none of them may receive the key's variable.
    key_vars
        .iter()
        .for_each(|var| looptrace::secrets::forbid_var(var));
    let one_task = args.tools_file.one_task(&key_vars)?;
    let outcome = match &one_task {
        Some((tools, set, _)) => {
            let hash = tools.file().template_hash().map(str::to_owned);
            let file = tools.file();
            run_with_tools(
                &args,
                task,
                run_id,
                limits,
                Some((&set.registry, file)),
                hash,
            )
        }
        None => run_with_tools(&args, task, run_id, limits, None, None),
    };
    if let Some((_, _, Some(temp))) = &one_task {
        if args.keep_workdir {
            eprintln!("working folder kept: {}", temp.display());
        } else {
            let _ = std::fs::remove_dir_all(temp);
        }
    }
    outcome
}

fn run_with_tools(
    args: &RunArgs,
    task: Task,
    run_id: RunId,
    limits: Limits,
    tools: Option<(&ToolRegistry, &ToolsFile)>,
    workdir_hash: Option<String>,
) -> CliResult {
    let builtin;
    // The gate gets the tools' allow-list, never more.
    let env_names = tools.map_or(&[][..], |(_, file)| file.env_names());
    let tools = match tools {
        Some((tools, _)) => tools,
        None => {
            builtin = ToolRegistry::builtin();
            &builtin
        }
    };
    let mut model: Box<dyn Model> = match (args.live.model(tools)?, &args.responses) {
        (Some(live), _) => Box::new(live),
        (None, Some(responses)) => Box::new(JsonModelAdapter::new(ScriptedRawModel::new(
            read_responses(responses)?,
        ))),
        (None, None) => return Err(CliError::input("give --responses FILE or --api")),
    };
    let options = looptrace::agent::RunOptions {
        max_steps: args.max_steps,
    };
    if let Some(trace) = &args.trace {
        let inputs = [
            args.responses.as_deref(),
            args.tools_file.tools_file.as_deref(),
            args.gate.program_path(),
        ];
        super::common::refuse_overwrite("--trace", trace, inputs.into_iter().flatten())?;
    }
    let mut gate = args
        .gate
        .command_gate()
        .map(|gate| gate.with_env_names(env_names));
    let gate = gate.as_mut().map(|gate| gate as &mut dyn FinishGate);
    let outcome = match &args.trace {
        Some(path) => {
            let writer: TraceWriter = open_trace_writer(path, args.fsync)?;
            let recorder_options = RecorderOptions {
                capture: args.capture.into(),
                ..RecorderOptions::default()
            };
            let mut recorder = TraceRecorder::new(run_id.as_str(), recorder_options, writer)
                .with_workdir_hash(workdir_hash);
            run_agent_with(
                &task,
                model.as_mut(),
                tools,
                gate,
                options,
                limits,
                &mut recorder,
            )
        }
        None => run_agent_with(
            &task,
            model.as_mut(),
            tools,
            gate,
            options,
            limits,
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

/// The readable result block: the model's answer, the error and the run id escaped, one line
/// each.
pub fn render_result(result: &RunResult, run_id: &RunId) -> String {
    use looptrace::text::escape;
    format!(
        "exit_reason: {}\nanswer:      {}\nsteps_used:  {}\nerror:       {}\nrun_id:      {}\n",
        result.exit_reason,
        escape(result.answer.as_deref().unwrap_or("-")),
        result.steps_used,
        escape(result.error.as_deref().unwrap_or("-")),
        escape(&run_id.0)
    )
}
