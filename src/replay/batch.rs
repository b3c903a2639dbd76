//! Replaying the runs of a trace file as one command does: a [`ReplayRequest`] (the file, which
//! runs, live or recorded tools, where reruns are recorded) becomes a [`ReplayPlan`] (every
//! check made, the tools file loaded, nothing written), which [`ReplayPlan::execute`] runs run by
//! run as the file streams in, telling a [`ReplayObserver`], and which gives a [`ReplayOutcome`].

use std::path::{Path, PathBuf};

use super::{
    PreparedReplay, Recording, ReplayOptions, ReplaySetupError, RunCheck, RunIds, RunReplay,
    ToolMode, ToolSource, Verdict, WireSettings, times,
};
use crate::agent::NoObserver;
use crate::gate::{CommandGate, FinishGate};
use crate::run::RunId;
use crate::text::escape;
use crate::tools::{TaskToolSet, TaskTools, ToolRegistry, ToolsFile, temp_workdir};
use crate::trace::{
    Capture, ReadOptions, RecorderOptions, ReplayOf, RunStream, StreamedRun, Summarizer,
    TraceRecorder, TraceWriter,
};

/// Why a replay could not be planned or run. [`ReplayPlanError::is_internal`] is exit 3; the rest
/// are bad input or usage (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ReplayPlanError {
    /// A flag's value, or a combination of flags, that cannot be replayed.
    #[error("{message}")]
    Usage {
        /// The flag the problem is about.
        flag: String,
        /// What is wrong, naming the flag.
        message: String,
    },
    /// The trace (or tools file) cannot be read or replayed.
    #[error("{message}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the file (and the run).
        message: String,
    },
    /// A bug or a failing system underneath (a tool runtime that cannot start, a write).
    #[error("{0}")]
    Internal(String),
}

impl ReplayPlanError {
    fn usage(flag: &str, message: impl std::fmt::Display) -> Self {
        ReplayPlanError::Usage {
            flag: flag.to_owned(),
            message: message.to_string(),
        }
    }

    fn input(path: &Path, message: impl std::fmt::Display) -> Self {
        ReplayPlanError::Input {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }

    /// Whether this is an internal error (exit 3) rather than bad input or usage (exit 2).
    pub fn is_internal(&self) -> bool {
        matches!(self, ReplayPlanError::Internal(_))
    }
}

/// What to replay, as plain values: `looptrace replay`'s flags.
#[derive(Debug)]
pub struct ReplayRequest {
    /// The recorded trace (full capture).
    pub trace: PathBuf,
    /// Only this run, and which of the runs with that id (from 1; `None`: the 1st, with a note
    /// when there are more).
    pub run: Option<(String, Option<u32>)>,
    /// Run the tools again or serve the recorded observations.
    pub tools: ToolMode,
    /// The step budget, divergence handling and model source.
    pub options: ReplayOptions,
    /// What a live run's requests carry (`--raw`).
    pub wire: WireSettings,
    /// Append the reruns, with full capture, to this trace.
    pub trace_out: Option<PathBuf>,
    /// The finish gate to rerun (live tools only).
    pub gate: Option<CommandGate>,
    /// The tools file the runs were recorded with.
    pub tools_file: Option<PathBuf>,
    /// Where MCP servers write their logs.
    pub log_dir: Option<PathBuf>,
}

impl ReplayRequest {
    /// Replays every run of `trace` with live tools and the recorded budgets.
    pub fn new(trace: impl Into<PathBuf>) -> ReplayRequest {
        ReplayRequest {
            trace: trace.into(),
            run: None,
            tools: ToolMode::Live,
            options: ReplayOptions::default(),
            wire: WireSettings::default(),
            trace_out: None,
            gate: None,
            tools_file: None,
            log_dir: None,
        }
    }
}

/// Hears what a replay finds while it runs. Calls come in file order, one run at a time.
pub trait ReplayObserver {
    /// A run was selected and is about to be replayed.
    fn run_selected(&mut self, run: &StreamedRun) -> Result<(), ReplayPlanError> {
        let _ = run;
        Ok(())
    }

    /// Something the user should know that changes no verdict (a tool changed since the
    /// recording, a line the reader skipped); printed as a warning.
    fn warning(&mut self, message: &str) {
        let _ = message;
    }

    /// A note on how the replay runs (which verdicts are served).
    fn note(&mut self, message: &str) {
        let _ = message;
    }
}

/// An observer that ignores everything.
impl ReplayObserver for () {}

/// The replays of a file, in order of each run's first appearance.
#[derive(Debug)]
pub struct ReplayOutcome {
    /// Each run's replay.
    pub replays: Vec<RunReplay>,
    /// Whether tools ran again.
    pub mode: ToolMode,
}

impl ReplayOutcome {
    /// Whether every run came out the same.
    pub fn faithful(&self) -> bool {
        self.replays.iter().all(|r| r.verdict == Verdict::Faithful)
    }
}

/// A replay checked and ready to run.
pub struct ReplayPlan {
    request: ReplayRequest,
    summarizer: Summarizer,
    task_tools: Option<TaskTools>,
}

impl ReplayPlan {
    /// Checks the request: the budget, a gate with recorded tools, an output that is the input,
    /// an input that is not a regular file, the tools file.
    pub fn new(request: ReplayRequest) -> Result<ReplayPlan, ReplayPlanError> {
        if request.options.max_steps == Some(0) {
            return Err(ReplayPlanError::usage(
                "--max-steps",
                "--max-steps must be at least 1",
            ));
        }
        if request.gate.is_some() && request.tools == ToolMode::Recorded {
            return Err(ReplayPlanError::usage(
                "--finish-gate",
                "--finish-gate reruns the gate, which needs --tools live; --tools recorded serves the recorded verdicts",
            ));
        }
        if let Some(out) = &request.trace_out {
            refuse_same_file(&request.trace, out)?;
        }
        refuse_non_regular(&request.trace)?;
        Ok(ReplayPlan {
            request,
            summarizer: Summarizer::from_env(),
            task_tools: None,
        })
    }

    /// Checks that each selected run can be replayed, and runs nothing.
    pub fn check(
        &self,
        observer: &mut dyn ReplayObserver,
    ) -> Result<Vec<RunCheck>, ReplayPlanError> {
        let mut checks: Vec<(u64, RunCheck)> = Vec::new();
        self.each_selected_run(observer, &mut |_, run| {
            checks.push((run.index, self.prepare(&run)?.check()));
            Ok(())
        })?;
        checks.sort_by_key(|(index, _)| *index);
        Ok(checks.into_iter().map(|(_, check)| check).collect())
    }

    /// Replays every selected run; with `trace_out`, every run is checked before any rerun is
    /// written, so bad input writes nothing. The replays are in order of each run's first
    /// appearance and all held: [`ReplayPlan::execute_each`] hands them over one at a time.
    pub fn execute(
        self,
        observer: &mut dyn ReplayObserver,
    ) -> Result<ReplayOutcome, ReplayPlanError> {
        let mut replays: Vec<(u64, RunReplay)> = Vec::new();
        let mode = self.execute_each(observer, &mut |index, replay| {
            replays.push((index, replay));
            Ok(())
        })?;
        // Reports list runs in order of first appearance, whatever order they ended in.
        replays.sort_by_key(|(index, _)| *index);
        Ok(ReplayOutcome {
            replays: replays.into_iter().map(|(_, replay)| replay).collect(),
            mode,
        })
    }

    /// Replays every selected run as [`ReplayPlan::execute`] does, handing each run's replay to
    /// `each` as soon as it is done, with the run's place in the order of first appearance (from
    /// 0): runs come in the order they end in the file, and nothing of a run is kept once `each`
    /// has it. Gives whether tools ran again.
    pub fn execute_each(
        mut self,
        observer: &mut dyn ReplayObserver,
        each: &mut dyn FnMut(u64, RunReplay) -> Result<(), ReplayPlanError>,
    ) -> Result<ToolMode, ReplayPlanError> {
        let mut writer = match &self.request.trace_out {
            Some(path) => {
                self.each_selected_run(&mut (), &mut |_, run| self.prepare(&run).map(drop))?;
                Some(TraceWriter::append(path, false).map_err(|err| {
                    ReplayPlanError::input(
                        path,
                        format!(
                            "failed to open trace `{}` for appending: {err}",
                            path.display()
                        ),
                    )
                })?)
            }
            None => None,
        };
        self.task_tools = match &self.request.tools_file {
            Some(path) => {
                let file =
                    ToolsFile::load(path).map_err(|err| ReplayPlanError::input(path, err))?;
                if let Some(dir) = &self.request.log_dir {
                    let logs: Vec<PathBuf> =
                        file.mcp_servers().iter().map(|s| s.log_path(dir)).collect();
                    crate::output::refuse_blocked_logs("--log-dir", dir, &logs)
                        .map_err(|err| ReplayPlanError::usage("--log-dir", err))?;
                }
                Some(TaskTools::new(file, self.request.log_dir.clone()))
            }
            None => None,
        };
        let mut gate = self.request.gate.take();
        let live = self.request.tools == ToolMode::Live;
        let mut gate_noted = gate.is_some() || !live;
        let builtin = ToolRegistry::builtin();
        let source = file_name(&self.request.trace);
        self.each_selected_run(observer, &mut |observer, run| {
            observer.run_selected(&run)?;
            let index = run.index;
            let replay = self.prepare_owned(run)?;
            let run_tools = RunTools::new(
                self.task_tools.as_ref(),
                replay.recording(),
                live,
                observer,
            )?;
            let tool_source = match (live, &run_tools.set) {
                (false, _) => ToolSource::Recorded,
                (true, Some(set)) => ToolSource::Live(&set.registry),
                (true, None) => ToolSource::Live(&builtin),
            };
            if !gate_noted && replay.recording().has_gate() {
                gate_noted = true;
                observer.note(
                    "no --finish-gate given: serving the recorded finish gate verdicts (tools run live)",
                );
            }
            let gate = gate.as_mut().map(|gate| gate as &mut dyn FinishGate);
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
                    let workdir_hash = self
                        .task_tools
                        .as_ref()
                        .and_then(|tools| tools.file().template_hash())
                        .map(str::to_owned);
                    let mut recorder: TraceRecorder<&mut TraceWriter> =
                        TraceRecorder::new(id.as_str(), options, writer)
                            .with_workdir_hash(workdir_hash);
                    replay.run_with_gate(tool_source, gate, &mut recorder)
                }
                _ => replay.run_with_gate(tool_source, gate, &mut NoObserver),
            };
            let mut result = result.map_err(|err| ReplayPlanError::Internal(err.to_string()))?;
            result.replay_run_id = replay_run_id.map(|id| id.0);
            each(index, result)
        })?;
        Ok(self.request.tools)
    }

    /// The replay of one recorded run, refused when it cannot be replayed.
    fn prepare(&self, run: &StreamedRun) -> Result<PreparedReplay, ReplayPlanError> {
        PreparedReplay::with_wire(
            &run.run,
            self.request.options,
            self.summarizer.clone(),
            &self.request.wire,
        )
        .map_err(|err| self.refused(err))
    }

    /// [`ReplayPlan::prepare`], taking the run so that its texts are moved, not copied.
    fn prepare_owned(&self, run: StreamedRun) -> Result<PreparedReplay, ReplayPlanError> {
        PreparedReplay::with_wire_owned(
            run.run,
            self.request.options,
            self.summarizer.clone(),
            &self.request.wire,
        )
        .map_err(|err| self.refused(err))
    }

    /// A run that cannot be replayed, as bad input naming the trace.
    fn refused(&self, err: ReplaySetupError) -> ReplayPlanError {
        let trace = &self.request.trace;
        ReplayPlanError::input(
            trace,
            escape(&format!("{}: {err}", trace.display())).into_owned(),
        )
    }

    /// Streams the trace and calls `each` with every selected run as soon as it ends; then
    /// reports the reader's warnings and refuses a selection that matched nothing.
    fn each_selected_run(
        &self,
        observer: &mut dyn ReplayObserver,
        each: &mut dyn FnMut(&mut dyn ReplayObserver, StreamedRun) -> Result<(), ReplayPlanError>,
    ) -> Result<(), ReplayPlanError> {
        let path = &self.request.trace;
        let shown = path.display().to_string();
        // Runs of one id are yielded in the order they began (a reused id begins a new run only
        // once the one before has ended), so the wanted id's runs are counted here as they come
        // and the stream keeps nothing per run id: memory stays flat however many runs.
        // Read through mapped windows of the file rather than copies of it (as `show` reads).
        let mut stream = RunStream::<std::fs::File>::open_mapped(path, ReadOptions::default())
            .map_err(|err| ReplayPlanError::input(path, err))?
            .without_occurrences();
        let (wanted_id, occurrence) = match &self.request.run {
            Some((id, occurrence)) => (Some(id.as_str()), *occurrence),
            None => (None, None),
        };
        let wanted = occurrence.unwrap_or(1);
        let mut ids = RunIds::default();
        let mut selected = 0usize;
        for run in stream.by_ref() {
            let run = run.map_err(|err| ReplayPlanError::input(path, err))?;
            ids.note(&run.run.run_id, wanted_id);
            if let Some(id) = wanted_id
                && (run.run.run_id != id || ids.selected() != wanted)
            {
                continue;
            }
            selected += 1;
            each(observer, run)?;
        }
        for warning in stream.into_stats().warnings(&shown) {
            observer.warning(&escape(&warning));
        }
        if let (Some(id), None) = (wanted_id, occurrence)
            && ids.selected() > 1
        {
            observer.note(&format!(
                "run {:?} occurs {} in `{shown}`; replaying the 1st (choose with --occurrence N)",
                escape(id),
                times(ids.selected())
            ));
        }
        match wanted_id {
            Some(id) if selected == 0 => Err(ReplayPlanError::input(
                path,
                ids.not_found(id, wanted, &shown),
            )),
            None if selected == 0 => Err(ReplayPlanError::input(
                path,
                format!("no runs in `{shown}`"),
            )),
            _ => Ok(()),
        }
    }
}

/// The tools of one replayed run: with a tools file, a fresh working folder made from its
/// template (removed when the run's replay is done) and the registry running there.
struct RunTools {
    set: Option<TaskToolSet>,
    temp: Option<PathBuf>,
}

impl RunTools {
    /// Makes the run's tools and tells, before any step runs, every way they differ from the
    /// recording: a changed tool spec, a tool gone or added, a changed template. Without a tools
    /// file, a live replay (`live`) of a run that had one is warned that its tools cannot run;
    /// recorded tools need none.
    fn new(
        tools: Option<&TaskTools>,
        recording: &Recording,
        live: bool,
        observer: &mut dyn ReplayObserver,
    ) -> Result<RunTools, ReplayPlanError> {
        let run_id = escape(recording.run_id()).into_owned();
        let Some(tools) = tools else {
            let listed: Vec<&str> = recording
                .tools()
                .iter()
                .map(|t| t.name.as_str())
                .filter(|name| *name != "calculator")
                .collect();
            if live && !listed.is_empty() {
                observer.warning(&format!(
                    "run {run_id} was recorded with tools from a tools file ({}); give --tools-file to run them",
                    escape(&listed.join(", "))
                ));
            }
            return Ok(RunTools {
                set: None,
                temp: None,
            });
        };
        let temp = match tools.file().template() {
            Some(_) => Some(temp_workdir().map_err(|err| {
                ReplayPlanError::Internal(format!("cannot make a temporary working folder: {err}"))
            })?),
            None => None,
        };
        let mut run_tools = RunTools { set: None, temp };
        let dir = run_tools
            .temp
            .clone()
            .unwrap_or_else(|| tools.file().folder().to_path_buf());
        let set = tools
            .for_task(&dir)
            .map_err(|err| ReplayPlanError::Internal(err.to_string()))?;
        for change in recording.tool_changes(&set.registry.all_spec_hashes()) {
            observer.warning(&format!("run {run_id}: {}", escape(&change)));
        }
        if let (Some(recorded), Some(now)) =
            (recording.workdir_hash(), tools.file().template_hash())
            && recorded != now
        {
            observer.warning(&format!(
                "run {run_id}: the working-folder template changed since the recording ({recorded} now {now})"
            ));
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

/// A replay source must be a regular file: a FIFO or a device would block or never end.
fn refuse_non_regular(path: &Path) -> Result<(), ReplayPlanError> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(ReplayPlanError::input(
            path,
            format!(
                "`{}` is not a regular file: replay reads traces from regular files only",
                path.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// The file name of a path, which is all a trace records of its source.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Refuses an output that is the input file itself, however it is named: the same path, another
/// relative path, a symlink or a hard link.
fn refuse_same_file(input: &Path, out: &Path) -> Result<(), ReplayPlanError> {
    let same = crate::output::file_identity(input)
        .is_some_and(|id| crate::output::file_identity(out) == Some(id))
        || matches!(
            (std::fs::canonicalize(input), std::fs::canonicalize(out)),
            (Ok(a), Ok(b)) if a == b
        );
    if same {
        return Err(ReplayPlanError::usage(
            "--trace",
            format!(
                "--trace `{}` is the input trace `{}`: replay never writes to its input; choose another file",
                out.display(),
                input.display()
            ),
        ));
    }
    Ok(())
}
