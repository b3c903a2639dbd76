//! The batch runner: tasks in parallel on `jobs` worker threads, results in suite order. Each task
//! is isolated: a panic or internal error becomes that task's `internal_error` and the rest go on.
//! Per-suite costs (the tool registry and its compiled schemas, the output folder) are paid once.

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::agent::{AgentCommand, AgentOptions, AttemptSpec, RunLabel, run_attempt, write_ending};
use super::attempts::Attempts;
use super::expect::{Verdict, check};
use super::layout::{TraceFlush, TraceTarget, run_id, trace_path};
use super::results::{ChatName, TaskResult};
use super::scorers::{RunFacts, Score, ScoreEnv, failure_line, score_all};
use super::suite::{SuiteTask, TaskModel, TaskSource};
use crate::agent::{AgentError, RunEvent, RunObserver, RunOptions, run_agent_with};
use crate::gate::FinishGate;
use crate::model::live::{LiveConfig, LiveModel, api_key_from_env};
use crate::model::{CallRecord, JsonModelAdapter, Model, ScriptPlayer};
use crate::replay::Recording;
use crate::replay::ReplayModel;
use crate::run::{Action, ExitReason, RunResult, Task};
use crate::tools::{TaskTools, ToolRegistry, ToolRuntime};
use crate::trace::{
    Capture, KeptLines, RecordedRun, RecorderOptions, ReplayOf, RunTap, Summarizer, TraceRecorder,
    TraceWriter,
};

/// How to run a batch.
pub struct RunnerOptions<'a> {
    /// Worker threads.
    pub jobs: usize,
    /// Trace capture for every task.
    pub capture: Capture,
    /// How summaries are hashed.
    pub summarizer: Summarizer,
    /// This evaluation's id: each task's run id is `<task-id>.<eval-id>` (see [`run_id`]).
    pub eval_id: String,
    /// Where traces go; `None` writes no traces.
    pub traces: Option<TraceTarget>,
    /// What each row's `trace` starts with: the run's folder relative to the output folder
    /// (`runs/<eval-id>/`).
    pub trace_prefix: String,
    /// When trace events are written.
    pub flush: TraceFlush,
    /// `--repeat N`: how many times each task runs (names runs and traces).
    pub repeats: u32,
    /// Set from outside (SIGINT) to stop scheduling new tasks.
    pub stop: &'a AtomicBool,
    /// Called after each task with the number done and its result, for progress display.
    pub on_done: &'a (dyn Fn(usize, &TaskResult) + Sync),
    /// The suite's tools file, and the folder holding each task's working folder
    /// (`<folder>/<task-id>/`); `None` runs every task with the shared registry.
    pub task_tools: Option<(&'a TaskTools, PathBuf)>,
    /// `--retries N`: a run that ends `internal_error` with a provider failure that may pass
    /// ([`RETRIED_KINDS`]) runs again, up to N more times.
    pub retries: u32,
    /// Where agent tasks work and log, and what they replay; `None` runs no agent task.
    pub agents: Option<AgentOptions<'a>>,
    /// Who else reads each run's trace lines as they are written (the HTML page's fold); the
    /// file is named as the row's `trace` is.
    pub trace_tap: Option<Arc<dyn RunTap>>,
    /// With the single trace file: hand the lines of a run that starts nothing outside the
    /// process (a replay whose tools all run in it) to `on_row` with its row, unwritten, so the
    /// caller writes many such runs at once.
    pub keep_quick_runs: bool,
}

/// The `error_kind`s `--retries` runs a task again for: provider failures that another attempt
/// may not meet (a rate limit, an unavailable provider, a timeout, a failed connection). A
/// rejected request, failed authentication or exhausted quota would fail the same way again.
pub const RETRIED_KINDS: [&str; 4] = [
    "rate_limited",
    "provider_unavailable",
    "timeout",
    "connection_failed",
];

/// The task being run, which repeat, and which attempt of it (from 1; more with `--retries`).
struct Run<'t> {
    task: &'t SuiteTask,
    repeat: u32,
    attempt: u32,
    /// What names its files: the task id, or under a matrix `<id>@<model>`.
    name: String,
    /// Where its trace lines go when they are kept unwritten.
    kept: &'t KeptLines,
}

impl Run<'_> {
    /// The run's id: [`run_id`] of its name, and `.a<k>` for a retry's attempt k.
    fn id(&self, options: &RunnerOptions<'_>) -> String {
        let id = run_id(&self.name, &options.eval_id, self.repeat, options.repeats);
        match self.attempt {
            1 => id,
            k => format!("{id}.a{k}"),
        }
    }

    /// The run's own working folder under `work_dir`: repeats of one task may run at once, so
    /// each gets its own.
    fn folder(&self, work_dir: &std::path::Path, repeats: u32) -> PathBuf {
        match repeats {
            1 => work_dir.join(&self.name),
            _ => work_dir.join(format!("r{}", self.repeat)).join(&self.name),
        }
    }
}

/// What receives each finished attempt: its position, its row and its lent trace lines.
pub type OnRow<'a> = dyn Fn(usize, TaskResult, &[u8]) -> Result<(), String> + Sync + 'a;

/// Runs `attempts` (of `tasks`, each read as a worker reaches it) and hands each result to
/// `on_row` with the attempt's position and the run's trace lines it kept unwritten
/// ([`RunnerOptions::keep_quick_runs`]; empty when they were written), in the order they finish,
/// from the worker that ran it. The lines are lent: each worker's buffer serves all its runs.
/// Attempts not started because `stop` was set are left out. The first error `on_row` returns,
/// or a task that can no longer be read, stops scheduling and is returned.
pub fn run_tasks(
    tasks: &(impl TaskSource + ?Sized),
    attempts: &(impl Attempts + ?Sized),
    tools: &ToolRegistry,
    options: &RunnerOptions<'_>,
    on_row: &OnRow<'_>,
) -> Result<(), String> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed: Mutex<Option<String>> = Mutex::new(None);
    let halt = AtomicBool::new(false);
    let jobs = options.jobs.clamp(1, Attempts::len(attempts).max(1));
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                let kept = KeptLines::default();
                loop {
                    if options.stop.load(Ordering::SeqCst) || halt.load(Ordering::SeqCst) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(attempt) = Attempts::get(attempts, i) else {
                        break;
                    };
                    let result = (tasks.task(attempt.task))
                        .map(|task| run_with_retries(&task, attempt.repeat, tools, options, &kept));
                    let row = result.and_then(|result| {
                        (options.on_done)(done.fetch_add(1, Ordering::SeqCst) + 1, &result);
                        // Emptied, not given away: a buffer handed to another thread would be
                        // freed there, and glibc's free then waits on this thread's arena.
                        let mut lines = kept.lock().unwrap_or_else(PoisonError::into_inner);
                        let row = on_row(i, result, &lines);
                        lines.clear();
                        row
                    });
                    if let Err(err) = row {
                        halt.store(true, Ordering::SeqCst);
                        failed
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .get_or_insert(err);
                        break;
                    }
                }
            });
        }
    });
    match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// Runs one repeat of a task, again while it ends in a provider failure another attempt may not
/// meet and `--retries` allows; the last attempt's row counts.
fn run_with_retries(
    task: &SuiteTask,
    repeat: u32,
    tools: &ToolRegistry,
    options: &RunnerOptions<'_>,
    kept: &KeptLines,
) -> TaskResult {
    let mut attempt = 1;
    loop {
        let run = Run {
            task,
            repeat,
            attempt,
            name: task.run_name(),
            kept,
        };
        let mut result = run_isolated(&run, tools, options);
        let retry = result.exit_reason == ExitReason::InternalError
            && result
                .error_kind
                .as_deref()
                .is_some_and(|kind| RETRIED_KINDS.contains(&kind));
        if !retry || attempt > options.retries || options.stop.load(Ordering::SeqCst) {
            result.retried = (attempt > 1).then_some(attempt - 1);
            return result;
        }
        attempt += 1;
    }
}

/// Runs one task; anything that escapes (a panic outside the tool boundary) becomes its
/// `internal_error`.
fn run_isolated(run: &Run<'_>, tools: &ToolRegistry, options: &RunnerOptions<'_>) -> TaskResult {
    let started = Instant::now();
    match catch_unwind(AssertUnwindSafe(|| run_one(run, tools, options, started))) {
        Ok(result) => result,
        Err(payload) => {
            let message = crate::tools::panic_text(payload.as_ref());
            let result = RunResult {
                exit_reason: ExitReason::InternalError,
                answer: None,
                steps_used: 0,
                error: Some(format!("task panicked: {message}")),
            };
            finish(
                run,
                options,
                result,
                Some("panic"),
                Counts::default(),
                started,
            )
        }
    }
}

fn run_one(
    run: &Run<'_>,
    tools: &ToolRegistry,
    options: &RunnerOptions<'_>,
    started: Instant,
) -> TaskResult {
    let task = run.task;
    if let Some(agent) = &task.agent {
        return run_agent_task(run, agent, options, started);
    }
    let own_tools = match &options.task_tools {
        Some((task_tools, work_dir)) => {
            match task_tools.for_task(&run.folder(work_dir, options.repeats)) {
                Ok(set) => Some(set.registry),
                Err(failure) => {
                    let result = internal(failure.message);
                    let prompt = Task::new(task.prompt.clone());
                    return failed_before_start(
                        run,
                        options,
                        &prompt,
                        result,
                        &failure.kind,
                        started,
                    );
                }
            }
        }
        None => None,
    };
    let tools = own_tools.as_ref().unwrap_or(tools);
    let workdir_hash = options
        .task_tools
        .as_ref()
        .and_then(|(task_tools, _)| task_tools.file().template_hash())
        .map(str::to_owned);
    let mut prompt = Task::new(task.prompt.clone());
    let mut replay_gate: Option<Box<dyn FinishGate>> = None;
    let mut model: Box<dyn Model> = match &task.model {
        TaskModel::Responses(responses) => Box::new(JsonModelAdapter::new(ScriptPlayer::new(
            responses.as_slice(),
        ))),
        TaskModel::Actions(actions) => Box::new(ScriptPlayer::new(actions.as_slice())),
        TaskModel::Unset => {
            let result = internal(
                "the task has no model: give `model`, `defaults.model` or `eval --model`"
                    .to_owned(),
            );
            return failed_before_start(run, options, &prompt, result, "no_model", started);
        }
        TaskModel::Chat {
            config,
            api_key_env,
            ..
        } => match api_key_from_env(api_key_env.as_deref()) {
            Ok(api_key) => {
                let mut config = LiveConfig::clone(config);
                config.api_key = api_key;
                let specs = tools.specs().into_iter().cloned().collect();
                Box::new(LiveModel::new(config, specs))
            }
            // Checked when the suite loaded; the variable changed since.
            Err(message) => {
                let result = internal(message);
                return failed_before_start(run, options, &prompt, result, "auth_failed", started);
            }
        },
        TaskModel::Replay { run: source, path } => match load_replay(source, path) {
            Ok((model, gate)) => {
                if source.prompt_from_recording() {
                    prompt = model.task().clone();
                }
                replay_gate = gate;
                Box::new(model)
            }
            Err(err) => {
                let result = internal(err);
                return failed_before_start(
                    run,
                    options,
                    &prompt,
                    result,
                    "not_replayable",
                    started,
                );
            }
        },
    };
    let run_options = RunOptions {
        max_steps: task.max_steps,
    };
    let mut counts = Counts::default();
    let mut gate: Option<Box<dyn FinishGate>> = match (&task.finish_gate, &task.model) {
        (Some(gate), _) => {
            // The gate gets the tools' allow-list, never more.
            let names = options
                .task_tools
                .as_ref()
                .map_or(&[][..], |(task_tools, _)| task_tools.file().env_names());
            Some(Box::new(gate.clone().with_env_names(names)))
        }
        (None, TaskModel::Replay { .. }) => replay_gate.take(),
        (None, _) => None,
    };
    let gated = gate.is_some();
    let scoring =
        |result: &RunResult, counts: &Counts| scores(run, options, result, counts, started, None);
    let gate = gate
        .as_mut()
        .map(|gate| gate.as_mut() as &mut dyn FinishGate);
    let outcome = match &options.traces {
        Some(target) => match open_trace(target, run, options, tools.runs_in_process()) {
            Ok(writer) => {
                let mut observer = Counting {
                    counts: &mut counts,
                    inner: recorder(run, options, writer, workdir_hash),
                    scoring: Some(&scoring),
                };
                run_agent_with(
                    &prompt,
                    model.as_mut(),
                    tools as &dyn ToolRuntime,
                    gate,
                    run_options,
                    task.limits,
                    &mut observer,
                )
            }
            Err(err) => {
                let result = internal(format!("failed to create the task's trace: {err}"));
                return finish(
                    run,
                    options,
                    result,
                    Some("trace_write_failed"),
                    counts,
                    started,
                );
            }
        },
        None => {
            let mut observer = Counting {
                counts: &mut counts,
                inner: crate::agent::NoObserver,
                scoring: Some(&scoring),
            };
            run_agent_with(
                &prompt,
                model.as_mut(),
                tools,
                gate,
                run_options,
                task.limits,
                &mut observer,
            )
        }
    };
    let (result, kind) = match outcome {
        Ok(result) => {
            let kind = counts.error_kind.clone();
            (result, kind)
        }
        Err(AgentError::Internal { result, cause }) => (result, Some(cause.kind().to_owned())),
        Err(AgentError::InvalidMaxSteps) => (
            internal("max_steps must be at least 1".to_owned()),
            Some("invalid_budget".to_owned()),
        ),
    };
    let kind = kind.clone();
    counts.gated = gated;
    finish(run, options, result, kind.as_deref(), counts, started)
}

/// An agent task's attempt: its fresh working folder, its trace, the agent run through a proxy
/// of its own (recording, or replaying with `--replay-models`), then scored and its run ended.
fn run_agent_task(
    run: &Run<'_>,
    agent: &AgentCommand,
    options: &RunnerOptions<'_>,
    started: Instant,
) -> TaskResult {
    let task = run.task;
    let prompt = Task::new(task.prompt.clone());
    let before_start = |message: String, kind: &str| {
        failed_before_start(run, options, &prompt, internal(message), kind, started)
    };
    let TaskModel::Chat {
        config,
        api_key_env,
        ..
    } = &task.model
    else {
        return before_start(
            "an agent task needs the live model its agent calls: give `model`, `defaults.model` or `eval --model`".to_owned(),
            "no_model",
        );
    };
    let Some(agents) = &options.agents else {
        return before_start("this evaluation runs no agent task".to_owned(), "no_agents");
    };
    let workdir = match agent_workdir(run, options, agents) {
        Ok(dir) => dir,
        Err(err) => {
            let message = format!("cannot make the agent's working folder: {err}");
            return before_start(message, crate::tools::WORKDIR_FAILED);
        }
    };
    let row = (task.id.as_str(), task.model_label(), run.repeat);
    let (replay, api_key) = match agents.answers(row, &agent.ignore, api_key_env.as_deref()) {
        Ok(answers) => answers,
        Err((message, kind)) => return before_start(message, kind),
    };
    let sink = match &options.traces {
        Some(target) => match open_trace(target, run, options, false) {
            Ok(writer) => Some(writer),
            Err(err) => {
                let result = internal(format!("failed to create the task's trace: {err}"));
                let kind = Some("trace_write_failed");
                return finish(run, options, result, kind, Counts::default(), started);
            }
        },
        None => None,
    };
    let run_id = run.id(options);
    let spec = AttemptSpec {
        command: agent,
        run_id: run_id.clone(),
        task_id: task.id.as_str(),
        prompt: &task.prompt,
        workdir: &workdir,
        model: config,
        api_key,
        replay,
        log: Some(agents.log_of(&run_id)),
    };
    let outcome = match run_attempt(spec, sink) {
        Ok(outcome) => outcome,
        Err(message) => {
            return finish(
                run,
                options,
                internal(message),
                Some("proxy_failed"),
                Counts::default(),
                started,
            );
        }
    };
    let facts = outcome.facts;
    let verdict = outcome.verdict;
    let finished = verdict.exit_reason == ExitReason::Finished;
    let mut result = RunResult {
        exit_reason: verdict.exit_reason,
        answer: facts.answer.clone().filter(|_| finished),
        steps_used: outcome.run.as_ref().map_or(0, |r| r.turns),
        error: verdict.error.clone(),
    };
    let mut counts = Counts {
        tools: facts.tools,
        tokens: facts.tokens,
        tool_calls: facts.tool_calls,
        tool_errors: facts.tool_errors,
        feedback: facts.feedback,
        ..Counts::default()
    };
    let (scores, calls) = scores(run, options, &result, &counts, started, Some(&workdir));
    counts.scores = scores.clone();
    let mut error_kind = verdict.error_kind.clone();
    let label = RunLabel {
        run_id: &run_id,
        task_id: task.id.as_str(),
        prompt: &task.prompt,
    };
    let written = match outcome.sink {
        Some(sink) => write_ending(
            sink,
            &label,
            outcome.run.as_ref(),
            &verdict,
            scores,
            &calls,
            options.capture,
            &options.summarizer,
        )
        .map_err(|err| format!("failed to write the task's trace: {err}")),
        None => Ok(()),
    };
    if let Some(error) = outcome.write_error.or(written.err()) {
        result = internal(error);
        error_kind = Some("trace_write_failed".to_owned());
    }
    finish(run, options, result, error_kind.as_deref(), counts, started)
}

/// An agent task's working folder, made fresh: a copy of the tools file's template when the
/// suite has one, else an empty folder under the run's `work/`.
fn agent_workdir(
    run: &Run<'_>,
    options: &RunnerOptions<'_>,
    agents: &AgentOptions<'_>,
) -> io::Result<PathBuf> {
    if let Some((task_tools, work_dir)) = &options.task_tools
        && task_tools.file().template_hash().is_some()
    {
        return task_tools
            .file()
            .prepare_workdir(&run.folder(work_dir, options.repeats));
    }
    let dir = run.folder(agents.work_dir, options.repeats);
    // A retry's attempt starts from nothing again, as its first did.
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    dir.canonicalize()
}

/// The trace recorder of `run`, writing to `writer`.
fn recorder(
    run: &Run<'_>,
    options: &RunnerOptions<'_>,
    writer: TraceWriter,
    workdir_hash: Option<String>,
) -> TraceRecorder<TraceWriter> {
    let task = run.task;
    let recorder_options = RecorderOptions {
        capture: options.capture,
        summarizer: options.summarizer.clone(),
        durations: true,
        replay_of: replay_of(&task.model),
    };
    TraceRecorder::new(run.id(options), recorder_options, writer)
        .with_task_id(task.id.as_str())
        .with_workdir_hash(workdir_hash)
}

/// A run that could not start (no working folder, no API key, no recording to replay) ends as
/// `internal_error` before its loop: its trace still records it, started and finished, so the
/// task's trace is this evaluation's run and not an earlier one's (or none).
fn failed_before_start(
    run: &Run<'_>,
    options: &RunnerOptions<'_>,
    prompt: &Task,
    result: RunResult,
    kind: &str,
    started: Instant,
) -> TaskResult {
    if let Some(target) = &options.traces {
        // A trace that cannot be written changes nothing: the row says the run failed already.
        let _ = open_trace(target, run, options, false).and_then(|writer| {
            let mut recorder = recorder(run, options, writer, None);
            recorder.on_event(&RunEvent::RunStarted {
                task: prompt,
                max_steps: run.task.max_steps,
                finish_gate_hash: None,
                live: None,
                tools: &[],
            })?;
            recorder.on_event(&RunEvent::RunFinished {
                result: &result,
                error_kind: Some(kind),
            })
        });
    }
    finish(run, options, result, Some(kind), Counts::default(), started)
}

/// A replay task's recorded run (read again from its file for `eval --traces`) as a model, and its
/// recorded finish gate verdicts if it was gated.
fn load_replay(
    run: &super::RunSource,
    path: &std::path::Path,
) -> Result<(ReplayModel, Option<Box<dyn FinishGate>>), String> {
    let run = run.load(path)?;
    let model = ReplayModel::from_run(&run).map_err(|err| err.to_string())?;
    Ok((model, recorded_gate(&run)))
}

/// A replayed recording that was checked by a finish gate gets its recorded verdicts, unless the
/// task names a gate to run.
fn recorded_gate(run: &RecordedRun) -> Option<Box<dyn FinishGate>> {
    // Most runs had no gate: say so without arranging the whole recording.
    if !Recording::may_have_gate(run) {
        return None;
    }
    let recording = Recording::from_run(run).ok()?;
    recording
        .has_gate()
        .then(|| Box::new(recording.recorded_gate()) as Box<dyn FinishGate>)
}

/// For replay tasks, which recording the run replays (the file name only: paths are not recorded).
fn replay_of(model: &TaskModel) -> Option<ReplayOf> {
    match model {
        TaskModel::Replay { path, run } => Some(ReplayOf {
            source: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            run_id: run.run_id().to_owned(),
        }),
        _ => None,
    }
}

fn internal(message: String) -> RunResult {
    RunResult {
        exit_reason: ExitReason::InternalError,
        answer: None,
        steps_used: 0,
        error: Some(message),
    }
}

fn open_trace(
    target: &TraceTarget,
    run: &Run<'_>,
    options: &RunnerOptions<'_>,
    tools_in_process: bool,
) -> io::Result<TraceWriter> {
    let writer = match target {
        TraceTarget::PerTask(run_dir) => {
            // The run's folder is new: each trace is a new file (`O_EXCL`), never one that was
            // there before.
            let path = run_dir.join(trace_path(target, &run.name, run.repeat, options.repeats));
            if run.attempt == 1 {
                TraceWriter::created(crate::output::create_new_append(&path)?, false)
            } else {
                // A retry's attempt follows the earlier attempts' runs in the task's trace.
                let file = std::fs::OpenOptions::new().append(true).open(&path)?;
                TraceWriter::shared(Arc::new(file), false)
            }
        }
        // Every worker appends to the one file through one handle: each line is one write on a
        // file opened for appending, so lines of parallel runs never mix. The file's end was
        // checked once when it was opened, before any worker wrote.
        TraceTarget::Single(file) => TraceWriter::shared(Arc::clone(file), false),
    };
    // A replayed run whose tools all run in this process starts nothing outside it: its events
    // are written when it ends, as one write, or handed over to be written with its row.
    let at_once = answers_at_once(run.task);
    let quick = at_once && tools_in_process;
    let writer = match options.flush {
        _ if quick && options.keep_quick_runs && matches!(target, TraceTarget::Single(_)) => {
            writer.keep_run_in(Arc::clone(run.kept))
        }
        TraceFlush::Event if quick => writer.hold_until_run_end(),
        TraceFlush::Event if at_once => writer.hold_until_tool_or_run_end(),
        TraceFlush::Event => writer,
        TraceFlush::Run => writer.hold_until_run_end(),
    };
    // The tap names the file as the run's row does (`trace`, relative to the output folder).
    Ok(match &options.trace_tap {
        Some(tap) => {
            let path = trace_path(target, &run.name, run.repeat, options.repeats);
            let row_trace = format!("{}{path}", options.trace_prefix);
            writer.with_tap(Arc::clone(tap), Path::new(&row_trace))
        }
        None => writer,
    })
}

/// Whether nothing but its tools can take time in the task's run: a replayed model with no
/// finish gate or scorer of the task's own. Its events are then written before each tool runs and
/// when the run ends rather than one at a time (docs/results-format.md, "Trace layout and
/// flushing"): a crash can lose only what the recording gave since the last tool started.
fn answers_at_once(task: &SuiteTask) -> bool {
    matches!(task.model, TaskModel::Replay { .. })
        && task.finish_gate.is_none()
        && task.expect.scorers.is_empty()
        && task.agent.is_none()
}

/// What the counting observer saw.
#[derive(Clone, Debug, Default)]
struct Counts {
    /// The run's scores, made when it finished.
    scores: Vec<Score>,
    /// The tools called, once per call, in order.
    tools: Vec<String>,
    /// Input and output tokens the model reported, when it reported any.
    tokens: Option<(u64, u64)>,
    tool_calls: u32,
    tool_errors: u32,
    feedback: u32,
    gate_rejections: u32,
    gated: bool,
    error_kind: Option<String>,
}

impl Counts {
    fn add_usage(&mut self, record: Option<&crate::model::CallRecord>) {
        if let Some(usage) = record.and_then(|r| r.usage.as_ref()) {
            let (input, output) = self.tokens.get_or_insert((0, 0));
            *input = input.saturating_add(usage.input_tokens.unwrap_or(0));
            *output = output.saturating_add(usage.output_tokens.unwrap_or(0));
        }
    }
}

/// What scores a finished run: its scores, and the model calls scorers made.
type Scoring<'s> = dyn Fn(&RunResult, &Counts) -> (Vec<Score>, Vec<(String, CallRecord)>) + 's;

/// Where a run's scores go before its `run_finished`: into its trace, or nowhere.
trait ScoreSink: RunObserver {
    fn record_scores(
        &mut self,
        step: u32,
        scores: Vec<Score>,
        calls: &[(String, CallRecord)],
    ) -> io::Result<()>;
}

impl ScoreSink for TraceRecorder<TraceWriter> {
    fn record_scores(
        &mut self,
        step: u32,
        scores: Vec<Score>,
        calls: &[(String, CallRecord)],
    ) -> io::Result<()> {
        TraceRecorder::record_scores(self, step, scores, calls)
    }
}

impl ScoreSink for crate::agent::NoObserver {
    fn record_scores(
        &mut self,
        _: u32,
        _: Vec<Score>,
        _: &[(String, CallRecord)],
    ) -> io::Result<()> {
        Ok(())
    }
}

/// Counts tool calls, tool errors and feedback on the way to the real observer, and scores the
/// run when it finishes, before its `run_finished` is recorded.
struct Counting<'c, O> {
    counts: &'c mut Counts,
    inner: O,
    scoring: Option<&'c Scoring<'c>>,
}

impl<O: ScoreSink> RunObserver for Counting<'_, O> {
    fn on_event(&mut self, event: &RunEvent<'_>) -> io::Result<()> {
        match event {
            RunEvent::Observation { outcome, .. } => {
                self.counts.tool_calls += 1;
                if outcome.observation.is_error {
                    self.counts.tool_errors += 1;
                }
            }
            RunEvent::ModelAction { action, record, .. } => {
                if let Action::ToolCall(call) = action {
                    self.counts.tools.push(call.tool_name.clone());
                }
                self.counts.add_usage(*record);
            }
            RunEvent::ModelFeedback { record, .. } => {
                self.counts.feedback += 1;
                self.counts.add_usage(*record);
            }
            RunEvent::FinishGate { verdict, .. } if !verdict.accepted => {
                self.counts.gate_rejections += 1;
            }
            RunEvent::RunFinished { error_kind, result } => {
                self.counts.error_kind = error_kind.map(str::to_owned);
                if let Some(scoring) = self.scoring {
                    let (scores, calls) = scoring(result, self.counts);
                    self.counts.scores = scores.clone();
                    self.inner
                        .record_scores(result.steps_used, scores, &calls)?;
                }
            }
            _ => {}
        }
        self.inner.on_event(event)
    }
}

fn finish(
    run: &Run<'_>,
    options: &RunnerOptions<'_>,
    result: RunResult,
    error_kind: Option<&str>,
    counts: Counts,
    started: Instant,
) -> TaskResult {
    let task = run.task;
    // An agent task's run is recorded whole (what a replay needs): its row shows it whole too.
    let capture = match task.agent {
        Some(_) => Capture::Full,
        None => options.capture,
    };
    let (mut expectation, mut failures) = check(
        &task.expect,
        &result,
        error_kind,
        capture,
        &options.summarizer,
    );
    if let Some(limit) = task.expect.max_gate_rejections
        && counts.gate_rejections > limit
    {
        failures.push(format!(
            "expected at most {limit} gate rejections, got {}",
            counts.gate_rejections
        ));
        expectation = Verdict::Failed;
    }
    let duration_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
    let scores = counts.scores;
    for score in scores.iter().filter(|s| s.passed != Some(true)) {
        failures.push(failure_line(score));
        expectation = Verdict::Failed;
    }
    if expectation == Verdict::None && !scores.is_empty() {
        expectation = Verdict::Met;
    }
    let shown = |text: &str| match capture {
        Capture::Full => text.to_owned(),
        Capture::Summary => options.summarizer.summarize(text),
    };
    let finished = result.exit_reason == ExitReason::Finished;
    TaskResult {
        id: task.id.to_string(),
        run_id: Some(run.id(options)),
        repeat: (options.repeats > 1).then_some(run.repeat),
        model: task.model_label().to_owned(),
        model_kind: Some(task.model.kind().to_owned()),
        chat: match &task.model {
            TaskModel::Chat { config, .. } => Some(ChatName {
                api: config.api.as_str().to_owned(),
                model: config.model.clone(),
                provider: Some(crate::model::live::provider_of(&config.base_url)),
            }),
            _ => None,
        },
        exit_reason: result.exit_reason,
        steps_used: result.steps_used,
        max_steps: task.max_steps,
        answer: result.answer.as_deref().map(shown),
        tool_calls: counts.tool_calls,
        tool_errors: counts.tool_errors,
        feedback: counts.feedback,
        gate_rejections: counts.gated.then_some(counts.gate_rejections),
        duration_ms,
        error_kind: if finished {
            None
        } else {
            error_kind.map(str::to_owned)
        },
        error: if finished {
            None
        } else {
            result.error.as_deref().map(shown)
        },
        expectation,
        failures,
        trace: options.traces.as_ref().map(|target| {
            let path = trace_path(target, &run.name, run.repeat, options.repeats);
            format!("{}{path}", options.trace_prefix)
        }),
        carried_over: false,
        retried: None,
        scores,
    }
}

/// The run's scores: every scorer of the task, after the run, in its working folder (`workdir`
/// for an agent task's, else the tools file's; else the suite's folder). A run that ended in an
/// internal error is not scored: it fails already, and a judge or a program would only read the
/// wreck.
fn scores(
    run: &Run<'_>,
    options: &RunnerOptions<'_>,
    result: &RunResult,
    counts: &Counts,
    started: Instant,
    workdir: Option<&Path>,
) -> (Vec<Score>, Vec<(String, CallRecord)>) {
    let task = run.task;
    if task.expect.scorers.is_empty() || result.exit_reason == ExitReason::InternalError {
        return (Vec::new(), Vec::new());
    }
    let cost_usd = match (&task.model, counts.tokens) {
        (_, None) => Some(0.0),
        (
            TaskModel::Chat {
                prices: Some(prices),
                ..
            },
            Some((input, output)),
        ) => Some(prices.cost(input, output)),
        (_, Some(_)) => None,
    };
    let facts = RunFacts {
        prompt: &task.prompt,
        result,
        tools_called: &counts.tools,
        tool_errors: counts.tool_errors,
        total_tokens: counts.tokens.map(|(i, o)| i.saturating_add(o)),
        cost_usd,
        duration_s: started.elapsed().as_secs_f64(),
    };
    let (work_dir, env_names) = match &options.task_tools {
        Some((task_tools, work_dir)) => (
            Some(run.folder(work_dir, options.repeats)),
            task_tools.file().env_names(),
        ),
        None => (None, &[][..]),
    };
    let work_dir = workdir.map(Path::to_path_buf).or(work_dir);
    let mut env = ScoreEnv {
        work_dir,
        env_names,
        capture: options.capture,
        summarizer: &options.summarizer,
        calls: Vec::new(),
    };
    let scores = score_all(&task.expect.scorers, &facts, &mut env);
    (scores, env.calls)
}
