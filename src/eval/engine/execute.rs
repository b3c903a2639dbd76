//! Running a plan: the run folder is created new (`DIR/runs/<eval-id>/`), every row is appended
//! to its log as its run ends and told to the observer, the log is sealed, and the view
//! (`results.json`) and JUnit file are written from the rows, put back in output order.

use std::collections::HashSet;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use super::EvalError;
use super::observer::EvalObserver;
use super::outcome::{EvalOutcome, EvalVerdict, Notice, adaptive_verdict, verdict};
use super::plan::{EvalPlan, Planned};
use super::quick_runs::QuickRuns;
use crate::eval::agent::AgentOptions;
use crate::eval::store::{
    RESULTS_NAME, RUNS_DIR, RowKey, RunFolder, RunFormat, RunHeader, RunKind, Seal, copy_runs,
    rebuild_view as fold_view,
};
use crate::eval::{
    Attempt, Attempts, EachRow, OutcomeCounts, ResultsFile, RowsOnDisk, RunnerOptions, Selected,
    Suite, SuiteTasks, TaskResult, TraceLayout, TraceTarget, compare, compare_counted, for_console,
    now_rfc3339, run_tasks, still_owed, suite_info, write_junit, write_results,
};
use crate::eval::{PassCounts, PassCountsLog};
use crate::replay::InOrder;
use crate::stats::{AdaptiveRule, Decision};
use crate::tools::TaskTools;
use crate::trace::Summarizer;

impl EvalPlan {
    /// Runs the plan, telling `observer` of each run as it ends, and returns what it found.
    /// A failure to write the run's files is an internal error; a run that fails is not an error
    /// but a row (and [`EvalVerdict::Failed`]).
    pub fn execute(mut self, observer: &dyn EvalObserver) -> Result<EvalOutcome, EvalError> {
        if let Some((results, verdict)) = self.nothing.take() {
            return Ok(self.standing(results, verdict));
        }
        let suite: &Suite = &self.suite;
        let selected = suite.tasks.select(self.positions.clone());
        let repeats = self.repeats;
        let position = |task: usize, repeat: u32| task * repeats as usize + (repeat as usize - 1);
        let out = self.out.clone();
        let results_path = out.join(RESULTS_NAME);
        let kind = self.kind();
        if let (Some(_), true) = (&self.previous, self.rerun_elsewhere) {
            let source = self
                .request
                .rerun_failed
                .as_deref()
                .map(super::folder_of)
                .unwrap_or_default();
            copy_runs(&source, &out, &self.parents).map_err(EvalError::internal)?;
        }
        let kept_count = self.kept.iter().flatten().count();
        let created_at = now_rfc3339();
        let eval_id = crate::run::unique_token();
        let info = suite_info(suite).map_err(EvalError::internal)?;
        // The view lists an evaluation's rows in suite order; a rerun's, every task of the suite.
        let order = match kind {
            RunKind::Rerun => TaskIds::Suite(&suite.tasks),
            _ => TaskIds::Selected(&selected),
        };
        let header = RunHeader {
            format: RunFormat::V1,
            eval_id: eval_id.clone(),
            looptrace_version: env!("CARGO_PKG_VERSION").to_owned(),
            created_at: created_at.clone(),
            kind,
            parents: self.parents.clone(),
            suite: info.clone(),
            capture: suite.capture,
            repeats,
            adaptive: self.adaptive.clone(),
            trace_layout: self.layout.as_str().to_owned(),
            shard: self.request.shard,
            models: self.request.models.clone(),
            selection: self.selection.clone(),
            tasks: order,
        };
        let run = RunFolder::create(&out, &header).map_err(EvalError::internal)?;
        let run_dir = run.dir.clone();
        let traces = trace_target(self.layout, &run_dir, repeats)?;
        let quick_runs = match &traces {
            TraceTarget::Single(file) => {
                let path = self.layout.root(&run_dir);
                Some(QuickRuns::new(std::sync::Arc::clone(file), path))
            }
            TraceTarget::PerTask(_) => None,
        };
        let task_tools = suite.tools.clone().map(|file| {
            let logs = self.request.log_dir.clone();
            TaskTools::new(file, Some(logs.unwrap_or_else(|| run_dir.join("logs"))))
        });
        let (agent_work, agent_logs) = (run_dir.join("work"), run_dir.join("logs"));
        let total = selected.len() * repeats as usize;
        let all = self.request.html.is_some() || kind != RunKind::Eval;
        // Rows the report lists, and each task's counts; a summary of totals needs neither
        // (but the repeats' title counts tasks, and adaptive repeats decide from the counts).
        let report_rows = all || !self.request.summary_only || self.baseline.is_some();
        let counted = report_rows || repeats > 1 || self.adaptive.is_some();
        let mut collected = Collected::new(
            total,
            kind == RunKind::Eval,
            if counted { selected.len() } else { 0 },
            repeats as usize,
            self.baseline.is_some() || kind != RunKind::Eval,
            all,
            report_rows,
        );
        for (pos, row) in self.kept.iter().enumerate() {
            if let Some(row) = row {
                collected.add(pos, None, row).map_err(EvalError::Internal)?;
            }
        }
        self.kept = Vec::new();
        // The runs of the epochs before this one, so observers count on across epochs.
        let done_before = AtomicUsize::new(0);
        let on_done = |done: usize, task: &TaskResult| {
            observer.run_finished(done_before.load(Ordering::SeqCst) + done, task);
        };
        let options = RunnerOptions {
            jobs: self
                .request
                .jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            capture: suite.capture,
            summarizer: Summarizer::from_env(),
            eval_id: eval_id.clone(),
            traces: Some(traces),
            trace_prefix: format!("{RUNS_DIR}/{eval_id}/"),
            flush: self.request.trace_flush,
            repeats,
            stop: &self.stop,
            on_done: &on_done,
            task_tools: task_tools
                .as_ref()
                .map(|tools| (tools, run_dir.join("work"))),
            retries: self.request.retries,
            agents: Some(AgentOptions {
                work_dir: &agent_work,
                log_dir: &agent_logs,
                replay: self.agent_replay.as_ref(),
            }),
            trace_tap: observer.trace_tap(),
            keep_quick_runs: quick_runs.is_some(),
        };
        let collected = Mutex::new(collected);
        let mut attempts = std::mem::replace(&mut self.attempts, Planned::Listed(Vec::new()));
        let mut planned = attempts.len();
        let mut decisions = None;
        let ran = loop {
            let batch = &attempts;
            let on_row = |i: usize, row: TaskResult, trace: &[u8]| {
                let attempt = batch
                    .get(i)
                    .ok_or_else(|| format!("no attempt {i} in the batch"))?;
                let line = match &quick_runs {
                    Some(quick_runs) if !trace.is_empty() => quick_runs.add(trace, &row, &run)?,
                    _ => run.append(&row).map_err(|err| err.to_string())?,
                };
                let mut collected = collected.lock().unwrap_or_else(PoisonError::into_inner);
                collected.add(position(attempt.task, attempt.repeat), Some(&line), &row)
            };
            let ran = run_tasks(&selected, batch, &self.tools, &options, &on_row);
            // The runs held are written whatever happened: each is whole, its row after it.
            let ran = match quick_runs.as_ref().map(|quick_runs| quick_runs.flush(&run)) {
                Some(Err(err)) => ran.and(Err(err)),
                _ => ran,
            };
            done_before.fetch_add(batch.len(), Ordering::SeqCst);
            let Some(rule) = &self.adaptive else {
                break ran;
            };
            if ran.is_err() || self.stop.load(Ordering::SeqCst) {
                break ran;
            }
            let counts = collected
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .passes
                .clone();
            let next = next_epoch(rule, &counts);
            decisions = Some(next.0);
            attempts = Planned::Listed(next.1);
            if attempts.is_empty() {
                break ran;
            }
            planned += attempts.len();
        };
        observer.finished();
        ran.map_err(EvalError::Internal)?;
        let mut collected = collected
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let rows_written = collected.totals.tasks;
        let interrupted = self.stop.load(Ordering::SeqCst)
            && match &self.adaptive {
                Some(_) => rows_written < planned || !attempts.is_empty() && decisions.is_none(),
                None => rows_written < total,
            };
        let mut notices = Vec::new();
        if let (Some(rule), Some(decisions)) = (&self.adaptive, &decisions) {
            notices.push(Notice::summary(adaptive_summary(
                rule,
                decisions,
                rows_written,
                selected.len(),
            )));
        }
        // With adaptive repeats, the verdict is the test's: every task that ran decided `pass`.
        let adaptive_passed = decisions.as_ref().map(|decisions| {
            decisions
                .iter()
                .zip(&collected.passes)
                .filter(|(_, (_, runs))| *runs > 0)
                .all(|(decision, _)| *decision == Decision::Pass)
        });
        if kept_count > 0 {
            notices.push(Notice::info(format!(
                "resumed: kept {} from `{}`, ran {}",
                crate::plural(kept_count as u64, "row", "rows"),
                out.join(RUNS_DIR).join(&header.parents[0]).display(),
                rows_written - kept_count
            )));
        }
        // Tasks the results owed a run (never reached by an interrupted evaluation, or added to
        // the suite since) that a rerun narrowed by `--only`/`--skip` left unrun: listed so the
        // next rerun runs them; interrupted results stay interrupted until it does.
        let mut not_reached = Vec::new();
        let mut seal = Seal {
            sealed: true,
            interrupted,
            not_reached: Vec::new(),
        };
        if let Some(previous) = &self.previous {
            // The rows its view will hold: those it ran, and the others carried over.
            let rows = previous.tasks.iter().chain(collected.rows.iter().flatten());
            not_reached = still_owed(previous, &rows.map(RowKey::of).collect(), suite);
            seal.interrupted = interrupted || (previous.interrupted && !not_reached.is_empty());
            seal.not_reached = not_reached.clone();
        }
        run.seal(&seal).map_err(EvalError::internal)?;
        let junit = self.request.junit.as_deref();
        // A plain evaluation's view is its own rows, copied as they were appended to its log and
        // put back in order; the others fold their rows over their parents'.
        let results = if let Some(in_order) = collected.in_order.take() {
            let rows = RowsOnDisk::new(in_order).map_err(EvalError::internal)?;
            let runs = match rows_written == 0 {
                true => Vec::new(),
                false => vec![eval_id.clone()],
            };
            let streamed = header.view(Some(&seal), runs, collected.totals.clone(), rows);
            write_results(&results_path, &streamed)
                .map_err(|e| EvalError::io("write", &results_path, e))?;
            if let Some(junit) = junit {
                write_junit_file(junit, &streamed, &streamed.tasks)?;
            }
            streamed.with_tasks(collected.kept_rows())
        } else {
            let results = fold_view(&out, &eval_id).map_err(EvalError::internal)?;
            write_results(&results_path, &results)
                .map_err(|e| EvalError::io("write", &results_path, e))?;
            // Last: a JUnit file that cannot be written leaves the folder as the results say.
            if let Some(junit) = junit {
                write_junit_file(junit, &results, &results.tasks[..])?;
            }
            results
        };
        // A rerun's or resume's report counts its pass rates from the rows of its view.
        let pass_counts = match kind {
            RunKind::Eval => collected
                .pass_counts(&selected)
                .map_err(EvalError::internal)?,
            _ => None,
        };
        // A rerun's results hold the tasks it carried over too: the baseline covers them too.
        let scoped = self.baseline.as_ref().map(|b| {
            let compared: HashSet<&str> = match &self.previous {
                Some(_) => results.tasks.iter().map(|t| t.id.as_str()).collect(),
                None => selected.entries().map(|t| t.id.as_str()).collect(),
            };
            in_scope(b, suite, &compared)
        });
        let mut comparison = scoped.as_ref().map(|b| {
            if kind != RunKind::Eval || collected.outcomes.is_empty() {
                return compare(b, &results);
            }
            // Under a model matrix a task's rows are compared per model.
            let keys: Vec<String> = selected.entries().map(|task| task.row_key()).collect();
            let ran = keys
                .iter()
                .zip(&collected.outcomes)
                .filter(|(_, counts)| counts.ran())
                .map(|(key, counts)| (key.as_str(), counts));
            compare_counted(b, ran)
        });
        if let Some(c) = &mut comparison {
            c.judge(self.request.regression_test, self.request.stats.confidence)
                .map_err(EvalError::flags)?;
        }
        let mut closing = Vec::new();
        if interrupted {
            let rest = match &self.previous {
                Some(_) => format!("--rerun-failed `{}` runs the rest", results_path.display()),
                None => "--resume runs the rest".to_owned(),
            };
            closing.push(Notice::info(format!(
                "interrupted: {} of {} ran; results and traces so far are in `{}` ({rest})",
                rows_written,
                crate::plural(total as u64, "run", "runs"),
                out.display()
            )));
        } else if !not_reached.is_empty() {
            let stays = if results.interrupted {
                format!("`{}` stays interrupted, and ", results_path.display())
            } else {
                String::new()
            };
            closing.push(Notice::info(format!(
                "not run yet: {} the results do not cover (not reached when interrupted, or added to the suite; left out by --only/--skip): {stays}--rerun-failed `{}` runs them",
                crate::plural(not_reached.len() as u64, "task", "tasks"),
                results_path.display()
            )));
        }
        let verdict = if interrupted {
            EvalVerdict::Failed
        } else {
            adaptive_passed
                .and_then(|passed| adaptive_verdict(&results, passed, comparison.as_ref()))
                .unwrap_or_else(|| match (report_rows, collected.failing_rows) {
                    (true, _) => verdict(&results, comparison.as_ref()),
                    // Counted, not kept (and no baseline): a failing row fails.
                    (false, 0) => EvalVerdict::Passed,
                    (false, _) => EvalVerdict::Failed,
                })
        };
        // The console shows the suite's expected values in full; the files keep their summaries.
        let shown = for_console(&results, suite, &options.summarizer);
        let traces = self.layout.root(&run_dir);
        Ok(EvalOutcome {
            results,
            shown,
            comparison,
            baseline: scoped,
            pass_counts,
            out,
            results_path,
            traces: Some(traces),
            interrupted,
            ran: rows_written,
            planned: total,
            notices,
            closing,
            verdict,
            _locks: std::mem::take(&mut self.locks),
        })
    }

    /// The outcome of a plan with nothing to run: the results that stand.
    fn standing(self, results: ResultsFile, verdict: EvalVerdict) -> EvalOutcome {
        EvalOutcome {
            shown: results.clone(),
            results,
            comparison: None,
            baseline: None,
            pass_counts: None,
            results_path: self.out.join(RESULTS_NAME),
            out: self.out,
            traces: None,
            interrupted: false,
            ran: 0,
            planned: 0,
            notices: Vec::new(),
            closing: Vec::new(),
            verdict,
            _locks: self.locks,
        }
    }
}

/// Creates where the run's traces go: `traces/` (with a folder per repeat) or one file.
fn trace_target(
    layout: TraceLayout,
    run_dir: &Path,
    repeats: u32,
) -> Result<TraceTarget, EvalError> {
    match layout {
        TraceLayout::PerTask => {
            let traces = layout.root(run_dir);
            std::fs::create_dir(&traces).map_err(|e| EvalError::io("create", &traces, e))?;
            for k in (1..=repeats).filter(|_| repeats > 1) {
                let folder = traces.join(format!("r{k}"));
                std::fs::create_dir(&folder).map_err(|e| EvalError::io("create", &folder, e))?;
            }
            Ok(TraceTarget::PerTask(run_dir.to_path_buf()))
        }
        TraceLayout::Single => {
            let path = layout.root(run_dir);
            let file = crate::output::create_new_append(&path)
                .map_err(|e| EvalError::io("write", &path, e))?;
            Ok(TraceTarget::Single(std::sync::Arc::new(file)))
        }
    }
}

/// Writes `--junit` atomically from `rows`, which are gone through twice and never held together.
fn write_junit_file<T>(
    path: &Path,
    results: &ResultsFile<T>,
    rows: &(impl EachRow + ?Sized),
) -> Result<(), EvalError> {
    let failed = |err: String| EvalError::io("write", path, err);
    let mut replacement =
        crate::output::Replacement::begin(path).map_err(|e| failed(e.to_string()))?;
    let mut out = std::io::BufWriter::new(replacement.writer());
    write_junit(&mut out, &results.suite.name, &results.created_at, rows).map_err(failed)?;
    out.flush().map_err(|e| failed(e.to_string()))?;
    drop(out);
    replacement.commit().map_err(|e| failed(e.to_string()))
}

/// The baseline's tasks this evaluation can speak about: those it ran (or, rerunning, carried
/// over), and those no longer in the suite at all. A shard leaves out the other shards' tasks,
/// which are neither.
fn in_scope(baseline: &ResultsFile, suite: &Suite, ran: &HashSet<&str>) -> ResultsFile {
    let in_suite: HashSet<&str> = suite
        .tasks
        .entries()
        .iter()
        .map(|t| t.id.as_str())
        .collect();
    let mut scoped = baseline.clone();
    scoped
        .tasks
        .retain(|t| ran.contains(t.id.as_str()) || !in_suite.contains(t.id.as_str()));
    scoped
}

/// What the evaluation keeps of its rows while they are written to its run's log: counts (per
/// task where the report wants them), and no row itself unless the caller wants the rows.
struct Collected {
    /// A plain evaluation's rows put in output order for its view, without being held.
    in_order: Option<InOrder>,
    /// Every row, by output position, when they are all wanted (a resume, a rerun, the HTML
    /// page); empty otherwise.
    rows: Vec<Option<TaskResult>>,
    /// Counts over the rows.
    totals: crate::eval::Totals,
    /// The rows that fail the evaluation, with their output positions, for the report (when
    /// it lists rows).
    failing: Vec<(usize, TaskResult)>,
    /// How many rows fail the evaluation.
    failing_rows: usize,
    /// Each task's repeats that passed and repeats that ran, for the report's pass rates (empty
    /// when not wanted).
    passes: Vec<(u32, u32)>,
    /// With `--baseline`: each task's runs counted for the comparison.
    outcomes: Vec<OutcomeCounts>,
    repeats: usize,
    /// Whether every row is held.
    all: bool,
    /// Whether the failing rows are held.
    listed: bool,
}

impl Collected {
    fn new(
        total: usize,
        in_order: bool,
        tasks: usize,
        repeats: usize,
        baseline: bool,
        all: bool,
        listed: bool,
    ) -> Self {
        let per_task = |wanted: bool| if wanted && !all { tasks } else { 0 };
        Collected {
            in_order: in_order.then(InOrder::default),
            rows: if all { vec![None; total] } else { Vec::new() },
            totals: crate::eval::Totals::zero(),
            failing: Vec::new(),
            failing_rows: 0,
            passes: vec![(0, 0); tasks],
            outcomes: vec![OutcomeCounts::default(); per_task(baseline)],
            repeats,
            all,
            listed,
        }
    }

    /// Counts `row` at output `position`, given as its line in the row log when it was written
    /// there (not a resume's kept row).
    fn add(
        &mut self,
        position: usize,
        line: Option<&[u8]>,
        row: &TaskResult,
    ) -> Result<(), String> {
        if let (Some(in_order), Some(line)) = (&mut self.in_order, line) {
            (in_order.push(position as u64, line))
                .map_err(|err| format!("failed to set a row aside: {err}"))?;
        }
        self.totals.add(row);
        if let Some((passed, runs)) = self.passes.get_mut(position / self.repeats) {
            *runs += 1;
            *passed += u32::from(row.passes());
        }
        if let Some(counts) = self.outcomes.get_mut(position / self.repeats) {
            counts.add(row, position);
        }
        self.failing_rows += usize::from(row.fails());
        if self.all {
            self.rows[position] = Some(row.clone());
        } else if row.fails() && self.listed {
            self.failing.push((position, row.clone()));
        }
        Ok(())
    }

    /// The rows held for the outcome: all of them, or the failing ones, in output order.
    fn kept_rows(&self) -> Vec<TaskResult> {
        if self.all {
            return self.rows.iter().flatten().cloned().collect();
        }
        let mut failing = self.failing.clone();
        failing.sort_by_key(|(position, _)| *position);
        failing.into_iter().map(|(_, row)| row).collect()
    }

    /// The pass counts of the tasks that ran, in suite order, when the report cannot count them
    /// from the rows it holds.
    /// A tasks file's or dataset's ids are read back in order, not held.
    fn pass_counts(&self, tasks: &Selected<'_>) -> Result<Option<PassCounts>, String> {
        if self.all || self.passes.is_empty() {
            return Ok(None);
        }
        let (mut counts, mut passes) = (PassCountsLog::default(), self.passes.iter());
        let mut written = Ok(());
        tasks.scan(|task| match passes.next() {
            Some(&(passed, runs)) if runs > 0 => {
                written = counts.push(task.id.as_str(), task.model_label(), passed, runs);
                match written {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                }
            }
            Some(_) => ControlFlow::Continue(()),
            None => ControlFlow::Break(()),
        })?;
        let unwritten =
            |err: std::io::Error| format!("failed to set each task's pass counts aside: {err}");
        written.map_err(unwritten)?;
        Ok(Some(counts.finish().map_err(unwritten)?))
    }
}

/// Task ids written as a JSON list as they are read, never gathered into one.
enum TaskIds<'a> {
    Suite(&'a SuiteTasks),
    Selected(&'a Selected<'a>),
}

impl serde::Serialize for TaskIds<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        use std::ops::ControlFlow;
        let mut seq = serializer.serialize_seq(None)?;
        let mut failed = None;
        let mut write = |id: &str| match seq.serialize_element(id) {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => {
                failed = Some(err);
                ControlFlow::Break(())
            }
        };
        let read = match self {
            TaskIds::Suite(tasks) => tasks.scan(0, |_, e| write(e.id.as_str())),
            TaskIds::Selected(selected) => selected.scan(|e| write(e.id.as_str())),
        };
        if let Some(err) = failed {
            return Err(err);
        }
        read.map_err(S::Error::custom)?;
        seq.end()
    }
}

/// After an epoch of adaptive repeats: each task's decision so far, and the next epoch's attempts
/// (the undecided tasks that have not yet run `rule.max` times).
fn next_epoch(rule: &AdaptiveRule, counts: &[(u32, u32)]) -> (Vec<Decision>, Vec<Attempt>) {
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
    rule: &AdaptiveRule,
    decisions: &[Decision],
    runs: usize,
    tasks: usize,
) -> String {
    let most = tasks * rule.max as usize;
    let saved = most.saturating_sub(runs);
    let count = |d: Decision| decisions.iter().filter(|x| **x == d).count();
    format!(
        "adaptive repeats (SPRT, pass rate at least {} vs below, error levels {}): {} of at most {most} ({saved} saved, {:.0}%); {} pass, {} fail, {} undecided",
        rule.pass_threshold,
        rule.alpha,
        crate::plural(runs as u64, "run", "runs"),
        if most == 0 {
            0.0
        } else {
            saved as f64 * 100.0 / most as f64
        },
        crate::plural(count(Decision::Pass) as u64, "task", "tasks"),
        count(Decision::Fail),
        count(Decision::Undecided)
    )
}
