//! An evaluation checked and ready to run: [`EvalPlan::new`] loads the suite (or corpus), the
//! baseline and the results a rerun reads, selects and shards the tasks, resolves and checks
//! every output path, takes the output folder's lock and finds the run a resume continues.
//! Nothing is written before it returns but the output folder itself (made to hold the lock).

use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::EvalError;
use super::flag_checks::{adaptive_rule, check_stats, read_baseline};
use super::outcome::{EvalVerdict, Notice, verdict, verdict_of_rows};
use super::paths::{
    check_output, folder_of, is_device, probe_writable, refuse_own_folder_elsewhere,
    refuse_traces_as_outputs,
};
use super::recorded_models;
use super::request::{EvalRequest, EvalSource};
use super::resume::{Resumable, format_1, read_rerun, resumable, settings};
use crate::eval::agent::ModelRecordings;
use crate::eval::store::{RESULTS_NAME, RUNS_DIR, RowKey, RunKind};
use crate::eval::{
    Attempt, Attempts, Epochs, FolderLock, Holding, LoadOptions, ResultsFile, SelectError,
    Selected, Selection, Suite, SuiteTasks, TaskResult, TraceLayout, apply_models, corpus_suite,
    failed_ids, load_suite_with_text_for, lock_output, resolve_models, select_tasks, still_owed,
    suite_info,
};
use crate::output::{resolve, same_file};
use crate::stats::AdaptiveRule;
use crate::tools::{ToolRegistry, ToolsFile};

/// The most repeats `--repeat` takes.
const MAX_REPEATS: u32 = 10_000;

/// An evaluation planned: run it with [`EvalPlan::execute`].
pub struct EvalPlan {
    pub(super) request: EvalRequest,
    /// Held until the process ends: freeing a large suite task by task would only delay the exit.
    pub(super) suite: ManuallyDrop<Suite>,
    /// The positions in the suite of the tasks to run (`None`: every task). Further task
    /// sources (a sample, a model matrix) narrow or widen this list.
    pub(super) positions: Option<Vec<usize>>,
    pub(super) tools: ToolRegistry,
    pub(super) baseline: Option<ResultsFile>,
    /// The results `--rerun-failed` updates.
    pub(super) previous: Option<ResultsFile>,
    /// Whether a rerun writes into another folder than its results' (it copies their runs first).
    pub(super) rerun_elsewhere: bool,
    pub(super) layout: TraceLayout,
    pub(super) out: PathBuf,
    pub(super) selection: Option<Selection>,
    pub(super) repeats: u32,
    pub(super) adaptive: Option<AdaptiveRule>,
    /// The rows a resume keeps, by output position.
    pub(super) kept: Vec<Option<TaskResult>>,
    /// The runs this one continues.
    pub(super) parents: Vec<String>,
    /// The runs to make in the first (or only) epoch.
    pub(super) attempts: Planned,
    pub(super) notices: Vec<Notice>,
    pub(super) stop: Arc<AtomicBool>,
    /// Set when there is nothing to run: the results that stand, and their verdict.
    pub(super) nothing: Option<(ResultsFile, EvalVerdict)>,
    /// `--replay-models`: the earlier runs agent tasks replay.
    pub(super) agent_replay: Option<ModelRecordings>,
    /// The output folder's lock (an in-place rerun's since it began); the outcome holds it on,
    /// so no other evaluation or `gc` changes the folder while the caller still reads it.
    pub(super) locks: Option<FolderLock>,
}

impl EvalPlan {
    /// Checks `request` and prepares its evaluation; see the module's documentation.
    pub fn new(mut request: EvalRequest) -> Result<EvalPlan, EvalError> {
        if request.jobs == Some(0) {
            return Err(EvalError::usage("--jobs", "--jobs must be at least 1"));
        }
        if request.repeat == 0 {
            return Err(EvalError::usage("--repeat", "--repeat must be at least 1"));
        }
        let adaptive = adaptive_rule(
            request.repeat_until_decided,
            request.pass_threshold,
            request.stats.confidence,
        )?;
        let repeats = adaptive.as_ref().map_or(request.repeat, |rule| rule.max);
        // Each repeat gets its trace folder before any task runs: a mistyped count must not
        // create millions of them.
        if repeats > MAX_REPEATS {
            let flag = match adaptive {
                Some(_) => "--repeat-until-decided",
                None => "--repeat",
            };
            return Err(EvalError::usage(
                flag,
                format!("{flag} must be at most {MAX_REPEATS}"),
            ));
        }
        let mut notices = Vec::new();
        let mut models_used = Vec::new();
        // The registry (compiling its tools' schemas) is built on a thread of its own while the
        // suite is read, which leaves a core idle at its start and end.
        let (tools, loaded) = std::thread::scope(|scope| {
            let tools = std::thread::Builder::new()
                .spawn_scoped(scope, ToolRegistry::builtin)
                .ok();
            let loaded = load(&request, &mut notices, &mut models_used);
            (tools.and_then(|t| t.join().ok()), loaded)
        });
        let (suite, inputs) = loaded?;
        let agent_replay = agent_replay(&request)?;
        // The header records the models run, which a resume of this run applies again.
        request.models = models_used;
        let tools = tools.unwrap_or_else(ToolRegistry::builtin);
        let baseline = request
            .baseline
            .as_deref()
            .map(|path| read_baseline(path, &suite.name, request.baseline_any_suite))
            .transpose()?;
        check_stats(
            &request.stats,
            request.regression_test,
            repeats,
            baseline.as_ref(),
        )?;
        // A rerun takes its folders' locks before it reads the results: in place, it writes that
        // folder; into another, it reads it to its end (it copies the runs it builds on first).
        // Without `--out`, a rerun writes the results' folder.
        let rerun_elsewhere = match (&request.rerun_failed, &request.out) {
            (Some(path), Some(out)) => !same_file(&folder_of(path), out),
            _ => false,
        };
        // A folder that cannot be opened holds no results: reading them says so. A rerun into
        // another folder takes no lock there: it reads the view and the sealed runs it names.
        let rerun_lock = match &request.rerun_failed {
            Some(path) if !rerun_elsewhere && folder_of(path).is_dir() => {
                Some(lock_output("--rerun-failed", &folder_of(path))?)
            }
            _ => None,
        };
        let previous = match &request.rerun_failed {
            Some(path) => Some(read_rerun(path, &suite, repeats)?),
            None => None,
        };
        let layout = match (&previous, request.trace_layout) {
            (_, Some(given)) => given,
            (Some(previous), None) => TraceLayout::of_rows(&previous.tasks),
            // A corpus of recorded runs, often hundreds of thousands, becomes one trace file, not a
            // file per run: creating a file costs more than replaying a small run.
            (None, None) if matches!(request.source, EvalSource::Traces(_)) => TraceLayout::Single,
            (None, None) => TraceLayout::PerTask,
        };
        let out = match (&request.out, &request.rerun_failed) {
            (Some(out), _) => out.clone(),
            (None, Some(path)) => folder_of(path),
            (None, None) => Path::new("looptrace-runs").join(folder_name(&suite.name)),
        };
        let mut plan = EvalPlan {
            request,
            suite: ManuallyDrop::new(suite),
            positions: None,
            tools,
            baseline,
            previous,
            rerun_elsewhere,
            layout,
            out,
            selection: None,
            repeats,
            adaptive,
            kept: Vec::new(),
            parents: Vec::new(),
            attempts: Planned::Listed(Vec::new()),
            notices,
            stop: Arc::new(AtomicBool::new(false)),
            nothing: None,
            agent_replay,
            locks: rerun_lock,
        };
        if plan.choose_tasks()? {
            plan.check_outputs(inputs)?;
            plan.lock()?;
            plan.find_parents()?;
            plan.plan_attempts();
        }
        Ok(plan)
    }

    /// The flag that stops the evaluation: once set (by a signal handler, say), no new run
    /// starts, and the results say the evaluation was interrupted.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// The output folder.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// What the plan found that the user should read before the runs begin.
    pub fn notices(&self) -> &[Notice] {
        &self.notices
    }

    /// The most runs this evaluation makes (with adaptive repeats, every task's maximum).
    pub fn runs_planned(&self) -> usize {
        if self.nothing.is_some() {
            0
        } else if self.adaptive.is_some() {
            self.task_count() * self.repeats as usize
        } else {
            self.attempts.len()
        }
    }

    /// How many times each task runs at most.
    pub fn repeats(&self) -> u32 {
        self.repeats
    }

    /// The tasks this evaluation runs, in suite order (read as they run when the suite streams
    /// them from a tasks file).
    pub fn selected(&self) -> Selected<'_> {
        self.suite.tasks.select(self.positions.clone())
    }

    /// How many tasks this evaluation runs.
    fn task_count(&self) -> usize {
        self.positions
            .as_ref()
            .map_or(self.suite.tasks.len(), Vec::len)
    }

    /// `--only`/`--skip` choose the tasks first (a rerun: its failed ones); a shard then splits
    /// what they chose, so every shard of one split must be given the same patterns (merge
    /// checks). Returns false when a rerun has nothing to run.
    fn choose_tasks(&mut self) -> Result<bool, EvalError> {
        let request = &self.request;
        let narrowing = request.narrowing;
        // What compares ids at will holds them; a plain evaluation, whose report counts each
        // task's passes in order, reads a dataset's ids back where it needs them and holds none.
        if request.resume || self.previous.is_some() || self.baseline.is_some() {
            (self.suite.tasks.hold_entries()).map_err(EvalError::internal)?;
        }
        if !request.only.is_empty()
            || !request.skip.is_empty()
            || self.previous.is_some()
            || !narrowing.is_none()
        {
            let (mut tasks, mut selection) =
                select_tasks(&self.suite.tasks, &request.only, &request.skip).map_err(|err| {
                    match err {
                        SelectError::Flags(message) => EvalError::flags(message),
                        SelectError::Unread(message) => EvalError::internal(message),
                    }
                })?;
            // `--limit`/`--sample` narrow what the patterns chose, before a shard splits it.
            if !narrowing.is_none() {
                tasks = narrowing.apply(tasks);
                narrowing.record(&mut selection);
                selection.tasks = ids_at(&self.suite.tasks, &tasks)?;
            }
            if tasks.is_empty() {
                return Err(EvalError::flags(
                    "--only and --skip together select no task of the suite",
                ));
            }
            if let (Some(previous), Some(path)) = (&self.previous, &request.rerun_failed) {
                let entries = self.suite.tasks.entries();
                let failed = failed_ids(previous, &self.suite);
                tasks.retain(|&i| {
                    entries.get(i).is_some_and(|e| {
                        failed.contains(&(e.id.to_string(), e.model_name.map(str::to_owned)))
                    })
                });
                selection.tasks = ids_at(&self.suite.tasks, &tasks)?;
                selection.rerun_failed = Some(path.display().to_string());
                if tasks.is_empty() {
                    self.nothing_to_rerun(path.clone());
                    return Ok(false);
                }
            }
            self.positions = Some(tasks);
            self.selection = Some(selection);
        }
        if let Some(shard) = self.request.shard {
            let chosen = self
                .positions
                .take()
                .unwrap_or_else(|| (0..self.suite.tasks.len()).collect());
            self.positions = Some(shard.select(&chosen));
        }
        Ok(true)
    }

    /// A rerun whose results owe no run: they stand as they are.
    fn nothing_to_rerun(&mut self, path: PathBuf) {
        let Some(previous) = self.previous.take() else {
            return;
        };
        // Interrupted results owe runs only to tasks still in the suite: once those have left
        // it, the interruption is settled and the results stand as they are.
        let settled = previous.interrupted
            && still_owed(&previous, &keys_of(&previous), &self.suite).is_empty();
        let why = if settled {
            ", and the tasks its interrupted evaluation did not reach are no longer in the suite"
        } else {
            ""
        };
        self.notices.push(Notice::info(format!(
            "nothing to rerun: no selected task failed, errored or was interrupted in `{}`{why} (left as it was)",
            path.display()
        )));
        let passed = if settled {
            verdict_of_rows(&previous, None)
        } else {
            verdict(&previous, None)
        };
        self.nothing = Some((previous, passed));
    }

    /// Nothing eval writes may be one of its inputs (the suite, the baseline, a replayed
    /// recording, the results a rerun reads), whatever path or link leads there, or another of
    /// its outputs; and no output is written through a symbolic link. Everything below
    /// `DIR/runs/` is created new, so only the view and the report files can meet an existing
    /// file. Every output is known to be writable before the first task runs, not after the last.
    fn check_outputs(&self, mut input_paths: Vec<PathBuf>) -> Result<(), EvalError> {
        let request = &self.request;
        let results_path = self.out.join(RESULTS_NAME);
        input_paths.extend(request.rerun_failed.iter().cloned());
        let outputs = [
            ("--out", Some(results_path.clone())),
            ("--junit", request.junit.clone()),
            ("--html", request.html.clone()),
        ];
        for (flag, output) in outputs
            .iter()
            .filter_map(|(flag, path)| path.as_ref().map(|p| (*flag, p)))
        {
            // A rerun in place replaces the view it reads.
            let own_view = flag == "--out"
                && request
                    .rerun_failed
                    .as_ref()
                    .is_some_and(|r| same_file(r, output));
            let inputs = if own_view { &[][..] } else { &input_paths };
            check_output(flag, output, inputs)?;
        }
        // A plain eval replaces the view; a `results.json` beside no `runs/` is no view of this
        // looptrace's, and its rows are kept nowhere else.
        if !request.resume
            && request.rerun_failed.is_none()
            && results_path.exists()
            && !self.out.join(RUNS_DIR).is_dir()
        {
            let why = match crate::eval::read_results(&results_path) {
                Ok(results) if results.format == crate::eval::RESULTS_FORMAT_V1 => {
                    Some(format!("holds {}", format_1(&self.out)))
                }
                Ok(_) => None,
                Err(_) => Some(
                    "holds a `results.json` that is no looptrace results: choose another --out"
                        .to_owned(),
                ),
            };
            if let Some(why) = why {
                let message = format!("--out `{}` {why}", self.out.display());
                return Err(EvalError::output("--out", &self.out, message));
            }
        }
        // Through a link, eval would write files in another folder, out of that folder's lock.
        refuse_own_folder_elsewhere(
            "--out",
            &self.out.join(RUNS_DIR),
            "eval writes its runs there",
        )?;
        if let Some(tools) = &self.suite.tools
            && let Some(dir) = &request.log_dir
        {
            crate::output::refuse_blocked_logs("--log-dir", dir, &tools.log_paths(dir))?;
        }
        // Every task's working folder is a copy of the tools file's template: the output folder
        // (which holds the working folders) may not be inside it.
        if let Some(template) = self.suite.tools.as_ref().and_then(|t| t.template())
            && let (Some(template), Some(resolved)) = (resolve(template), resolve(&self.out))
            && resolved.starts_with(&template)
        {
            return Err(EvalError::output(
                "--out",
                &self.out,
                format!(
                    "--out `{}` is inside the tools file's working-folder template `{}`, which every task copies: choose another --out",
                    self.out.display(),
                    template.display()
                ),
            ));
        }
        let reports: Vec<(&str, &PathBuf)> =
            [("--junit", &request.junit), ("--html", &request.html)]
                .into_iter()
                .filter_map(|(flag, path)| path.as_ref().map(|p| (flag, p)))
                .collect();
        for &(flag, report) in &reports {
            refuse_report_clash(flag, report, &results_path, &self.out.join(RUNS_DIR))?;
            let folder = folder_of(report);
            if !folder.is_dir() && !same_file(&folder, &self.out) {
                return Err(EvalError::output(
                    flag,
                    report,
                    format!("{flag} `{}`: the folder does not exist", report.display()),
                ));
            }
        }
        // The traces the baseline's rows name are inputs, and so are those of the results a
        // rerun updates.
        if let (Some(baseline), Some(path)) = (&self.baseline, &request.baseline) {
            refuse_traces_as_outputs(&reports, baseline, path)?;
        }
        if let (Some(previous), Some(path)) = (&self.previous, &request.rerun_failed) {
            refuse_traces_as_outputs(&reports, previous, path)?;
        }
        // A device (`/dev/null`) takes both.
        if let (Some(junit), Some(html)) = (&request.junit, &request.html)
            && same_file(junit, html)
            && !is_device(html)
        {
            return Err(EvalError::output(
                "--html",
                html,
                "--html and --junit name the same file",
            ));
        }
        // The report files first where their folders exist already, so that refusing one leaves
        // no `--out` folder made for nothing.
        for (flag, path) in &reports {
            let folder = folder_of(path);
            if folder.is_dir() {
                probe_writable(flag, &folder)?;
            }
        }
        Ok(())
    }

    /// Takes the output folder's lock (an in-place rerun holds it since it began). Only the
    /// folder is made to take it: an evaluation refused because another holds it makes nothing
    /// inside.
    fn lock(&mut self) -> Result<(), EvalError> {
        if self.locks.is_none() {
            std::fs::create_dir_all(&self.out).map_err(|err| {
                EvalError::output(
                    "--out",
                    &self.out,
                    format!(
                        "failed to create the output folder `{}`: {err}",
                        self.out.display()
                    ),
                )
            })?;
            self.locks = Some(lock_output("--out", &self.out)?);
        }
        probe_writable("--out", &self.out)?;
        for (flag, path) in [
            ("--junit", &self.request.junit),
            ("--html", &self.request.html),
        ] {
            if let Some(path) = path {
                probe_writable(flag, &folder_of(path))?;
            }
        }
        Ok(())
    }

    /// The run a resume continues and the rows it keeps, or the runs a rerun builds on.
    fn find_parents(&mut self) -> Result<(), EvalError> {
        if let Some(previous) = &self.previous {
            self.parents = previous.runs.clone();
            return Ok(());
        }
        if !self.request.resume {
            return Ok(());
        }
        let info = suite_info(&self.suite).map_err(EvalError::internal)?;
        let request = &self.request;
        let settings = settings(
            request.shard,
            self.repeats,
            self.suite.capture,
            self.layout.as_str(),
            self.selection.as_ref(),
        );
        let selected = self.suite.tasks.select(self.positions.clone());
        match resumable(&self.out, &info, &settings, &selected, &mut self.notices)? {
            Resumable::Run { parent, kept } => (self.kept, self.parents) = (kept, vec![parent]),
            Resumable::Complete(previous) => {
                let passed = verdict(&previous, None);
                self.nothing = Some((*previous, passed));
            }
            Resumable::Nothing => self.notices.push(Notice::info(format!(
                "no run in `{}` to resume from: running every task",
                self.out.join(RUNS_DIR).display()
            ))),
        }
        Ok(())
    }

    /// Epochs: every task once, then every task again, so an early stop leaves whole epochs.
    /// With adaptive repeats, one epoch at a time: each next one runs the undecided tasks only.
    fn plan_attempts(&mut self) {
        let epochs = if self.adaptive.is_some() {
            1
        } else {
            self.repeats
        };
        let tasks = self.task_count();
        let repeats = self.repeats as usize;
        let kept = &self.kept;
        if kept.iter().all(Option::is_none) {
            self.attempts = Planned::Epochs(Epochs {
                tasks,
                first: 1,
                last: epochs,
            });
            return;
        }
        self.attempts = Planned::Listed(
            (1..=epochs)
                .flat_map(|repeat| (0..tasks).map(move |task| Attempt { task, repeat }))
                .filter(|a| {
                    kept.get(a.task * repeats + (a.repeat as usize - 1))
                        .is_none_or(Option::is_none)
                })
                .collect(),
        );
    }

    /// What kind of run this evaluation writes.
    pub(super) fn kind(&self) -> RunKind {
        match (&self.previous, self.parents.is_empty()) {
            (Some(_), _) => RunKind::Rerun,
            (None, false) => RunKind::Resume,
            (None, true) => RunKind::Eval,
        }
    }
}

/// The runs an epoch makes: every task once per repeat (nothing held however many there are),
/// or the ones a resume still owes.
pub(super) enum Planned {
    Epochs(Epochs),
    Listed(Vec<Attempt>),
}

impl Attempts for Planned {
    fn len(&self) -> usize {
        match self {
            Planned::Epochs(epochs) => epochs.len(),
            Planned::Listed(list) => list.len(),
        }
    }

    fn get(&self, i: usize) -> Option<Attempt> {
        match self {
            Planned::Epochs(epochs) => epochs.get(i),
            Planned::Listed(list) => Attempts::get(list, i),
        }
    }
}

/// The suite (with `--capture` and `--tools-file` applied) and every file it reads (for the
/// output-path checks).
/// `--replay-models RESULTS`, read: the earlier results whose runs agent tasks replay.
fn agent_replay(request: &EvalRequest) -> Result<Option<ModelRecordings>, EvalError> {
    request
        .replay_models
        .as_deref()
        .map(|path| {
            ModelRecordings::read(path)
                .map_err(|message| EvalError::usage("--replay-models", message))
        })
        .transpose()
}

fn load(
    request: &EvalRequest,
    notices: &mut Vec<Notice>,
    models_used: &mut Vec<String>,
) -> Result<(Suite, Vec<PathBuf>), EvalError> {
    let mut inputs = Vec::new();
    let mut suite = match &request.source {
        EvalSource::Suite(path) => {
            let specs = models_to_run(request, path)?;
            if specs.is_empty() && request.api_key_env.is_some() {
                return Err(EvalError::usage(
                    "--api-key-env",
                    "--api-key-env needs --model (or a --resume or --rerun-failed of an evaluation that had them)",
                ));
            }
            let options = LoadOptions {
                models_given: !specs.is_empty(),
                holding: holding_for(request, &specs),
            };
            let (mut suite, text) = load_suite_with_text_for(path, options)
                .map_err(|message| EvalError::input(path, message))?;
            let models = resolve_models(&suite, &specs, request.api_key_env.as_deref())
                .map_err(EvalError::flags)?;
            apply_models(&mut suite, &models).map_err(EvalError::flags)?;
            if specs != request.models {
                notices.push(Notice::info(format!(
                    "running the models the evaluation it continues ran: {}",
                    specs.join(", ")
                )));
            }
            *models_used = specs;
            // Never freed, as the suite is not: freeing megabytes of pages would only delay the
            // exit.
            std::mem::forget(text);
            inputs.push(path.clone());
            suite
        }
        EvalSource::Traces(paths) => {
            let corpus =
                corpus_suite(paths, crate::trace::Capture::Summary).map_err(EvalError::inputs)?;
            notices.extend(
                corpus
                    .skipped
                    .iter()
                    .map(|skipped| Notice::warning(format!("skipped {skipped}"))),
            );
            release_freed_memory();
            corpus.suite
        }
    };
    if let Some(capture) = request.capture {
        suite.capture = capture;
    }
    if let Some(path) = &request.tools_file {
        let tools = ToolsFile::load(path).map_err(|message| EvalError::input(path, message))?;
        if suite.tools.is_some() {
            return Err(EvalError::flags(
                "the suite has `tools` and --tools-file was given: use one of them",
            ));
        }
        suite.tools = Some(tools);
    }
    if let Some(tools) = &suite.tools {
        tools
            .refuse_key_vars(&suite.key_vars())
            .map_err(EvalError::inputs)?;
    }
    inputs.extend(request.baseline.iter().cloned());
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

/// Whether the suite's inline tasks are held: not when a selection may leave most of them out
/// (then only those that run are read again), unless models from the command line are given to
/// every task (which needs them held).
fn holding_for(request: &EvalRequest, specs: &[String]) -> Holding {
    let selects = !request.only.is_empty()
        || !request.skip.is_empty()
        || request.rerun_failed.is_some()
        || !request.narrowing.is_none()
        || request.shard.is_some();
    if selects && specs.is_empty() {
        Holding::AsTheyRun
    } else {
        Holding::All
    }
}

/// The `--model`s to run: those given, or those the evaluation `--resume` or `--rerun-failed`
/// continues ran (refusing others). A resume's folder without `--out` is named after the suite,
/// which is read for its name first.
fn models_to_run(request: &EvalRequest, path: &Path) -> Result<Vec<String>, EvalError> {
    if let Some(results) = &request.rerun_failed {
        let recorded = recorded_models::of_matrix_results(results);
        return recorded_models::choose("--rerun-failed", &request.models, recorded);
    }
    if !request.resume {
        return Ok(request.models.clone());
    }
    let out = match &request.out {
        Some(out) => out.clone(),
        None => match load_suite_with_text_for(
            path,
            LoadOptions {
                models_given: true,
                holding: Holding::AsTheyRun,
            },
        ) {
            Ok((suite, _)) => Path::new("looptrace-runs").join(folder_name(&suite.name)),
            Err(_) => return Ok(request.models.clone()),
        },
    };
    let recorded = recorded_models::of_newest_run(&out);
    recorded_models::choose("--resume", &request.models, recorded)
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

/// The identities of the rows of `results`.
fn keys_of(results: &ResultsFile) -> std::collections::HashSet<RowKey> {
    results.tasks.iter().map(RowKey::of).collect()
}

/// The ids of the tasks at `positions` (suite order).
fn ids_at(tasks: &SuiteTasks, positions: &[usize]) -> Result<Vec<String>, EvalError> {
    let mut ids = Vec::with_capacity(positions.len());
    (tasks.select(Some(positions.to_vec())))
        .scan(|task| {
            ids.push(task.id.to_string());
            std::ops::ControlFlow::Continue(())
        })
        .map_err(EvalError::internal)?;
    Ok(ids)
}

/// A folder name from a suite name: path separators and other odd characters become `_`, and
/// a name is cut at 200 characters (a file system takes 255 bytes at most).
fn folder_name(name: &str) -> String {
    let mut clean = crate::eval::TaskId::sanitize(name);
    // Sanitized names are ASCII: any byte is a character boundary.
    clean.truncate(200);
    match clean.trim_matches('.') {
        "" => "suite".to_owned(),
        _ => clean,
    }
}

/// Fails when `--junit` (or `--html`) names this eval's view (`results.json`), its output
/// folder or `DIR/runs/` (which may not exist yet), or a file under `DIR/runs/`, which only eval
/// writes, each file once.
fn refuse_report_clash(
    flag: &str,
    report: &Path,
    view: &Path,
    runs: &Path,
) -> Result<(), EvalError> {
    if let Some(folder) = [folder_of(view), runs.to_path_buf()]
        .into_iter()
        .find(|folder| same_file(report, folder))
    {
        return Err(EvalError::output(
            flag,
            report,
            format!(
                "{flag} `{}` is the folder `{}` that this eval writes, not a file: choose a file",
                report.display(),
                folder.display()
            ),
        ));
    }
    if same_file(report, view) {
        return Err(EvalError::output(
            flag,
            report,
            format!(
                "{flag} `{}` is the output `{}` of this eval: choose another file",
                report.display(),
                view.display()
            ),
        ));
    }
    if let (Some(folder), Some(runs)) = (resolve(&folder_of(report)), resolve(runs))
        && folder.starts_with(&runs)
    {
        return Err(EvalError::output(
            flag,
            report,
            format!(
                "{flag} `{}` is inside `{}`, where eval writes its runs: choose another file",
                report.display(),
                runs.display()
            ),
        ));
    }
    Ok(())
}
