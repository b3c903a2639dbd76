//! Which earlier runs a new evaluation builds on: the run `--resume` continues (refused when it
//! was of another suite or other settings), the rows it keeps (those whose run is whole in its
//! trace; which rows are owed is [`crate::eval::store::owed`]), and the results `--rerun-failed`
//! reads (complete, of this suite, naming only traces in the runs beside it).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::outcome::Notice;
use super::{EvalError, folder_of, write_view};
use crate::eval::store::{
    Owing, RESULTS_NAME, ROWS_NAME, RUNS_DIR, RowKey, RowState, RunKind, RunRead, V1_PARTIAL_NAME,
    list_runs, owed, read_run, rebuild_view,
};
use crate::eval::{
    RESULTS_FORMAT_V1, ResultsFile, SINGLE_TRACE, Selected, Shard, Suite, SuiteInfo, TaskResult,
    TraceLayout, ends_with_finished_run, finished_runs, read_results,
};

/// The trace layout of the results a rerun updates (told by their rows' `trace`), which its new
/// run keeps unless `--trace-layout` is given.
pub(super) fn layout_of(previous: &ResultsFile) -> TraceLayout {
    let single = previous
        .tasks
        .iter()
        .filter_map(|t| t.trace.as_deref())
        .any(|trace| trace.ends_with(SINGLE_TRACE));
    if single {
        TraceLayout::Single
    } else {
        TraceLayout::PerTask
    }
}

/// What `--resume` found in the output folder.
pub(super) enum Resumable {
    /// The run to continue: the newest, which a crash or a signal stopped.
    Run(Box<RunRead>),
    /// The newest run ended with every row, and `results.json` is its view: nothing to do.
    Complete(Box<ResultsFile>),
    /// No run to continue: run everything.
    Nothing,
}

/// Finds the run `--resume` continues: the newest of `out`, unless it ended whole. A run of
/// another suite, capture, repeat count, trace layout, shard or selection is refused, as is an
/// interrupted rerun (the same rerun again continues it); a folder of results format 1 is refused
/// naming its conversion.
pub(super) fn resumable(
    out: &Path,
    info: &SuiteInfo,
    settings: &Settings<'_>,
    ((only, skip), narrowing): ((&[String], &[String]), crate::eval::Narrowing),
    notices: &mut Vec<Notice>,
) -> Result<Resumable, EvalError> {
    let ids = list_runs(out).map_err(|e| EvalError::store(out, e.to_string()))?;
    let results_path = out.join(RESULTS_NAME);
    let Some(newest) = ids.last() else {
        if out.join(V1_PARTIAL_NAME).exists()
            || read_results(&results_path).is_ok_and(|r| r.format == RESULTS_FORMAT_V1)
        {
            return Err(EvalError::store(
                out,
                format!(
                    "--resume: `{}` holds results format 1 (an output folder rewritten in place), which this looptrace does not continue: convert it with `looptrace eval --rebuild-view {}` and run again, or run without --resume",
                    out.display(),
                    out.display()
                ),
            ));
        }
        return Ok(Resumable::Nothing);
    };
    let run = read_run(out, newest).map_err(|e| EvalError::store(out, e.to_string()))?;
    let run_path = out.join(RUNS_DIR).join(newest);
    let refuse = |why: String| {
        Err(EvalError::store(
            &run_path,
            format!("--resume: the run `{}` {why}", run_path.display()),
        ))
    };
    let header = &run.header;
    let whole = run.seal.as_ref().is_some_and(|seal| !seal.interrupted);
    if whole {
        // A crash after the run ended but before its view was written: the view is all it owes.
        let view_is_older = read_results(&results_path).map_or(true, |view| {
            view.eval_id.as_deref() != Some(newest.as_str())
        });
        if view_is_older && header.suite == *info {
            write_view(out, newest)?;
            notices.push(Notice::info(format!(
                "the run `{}` ended whole: wrote its view `{}`",
                run_path.display(),
                results_path.display()
            )));
        }
        // Results of another suite (or of this one since edited) are no evaluation to resume:
        // every task runs, as on a Job's first attempt in a folder an earlier Job left.
        return Ok(match read_results(&results_path) {
            Ok(previous) if previous.suite != *info => {
                notices.push(Notice::info(format!(
                    "`{}` is from suite {:?} (fingerprint {}), this is suite {:?} (fingerprint {}): nothing of it to resume",
                    results_path.display(),
                    previous.suite.name,
                    previous.suite.short_fingerprint(),
                    info.name,
                    info.short_fingerprint()
                )));
                Resumable::Nothing
            }
            Ok(previous) if !previous.interrupted => Resumable::Complete(Box::new(previous)),
            _ => Resumable::Nothing,
        });
    }
    if header.kind == RunKind::Rerun {
        return refuse(format!(
            "was an interrupted `--rerun-failed {}`, whose rows --resume cannot continue: run that rerun again",
            header
                .selection
                .as_ref()
                .and_then(|s| s.rerun_failed.as_deref())
                .unwrap_or("RESULTS")
        ));
    }
    if header.suite != *info {
        return refuse(format!(
            "is from suite {:?} (fingerprint {}), this is suite {:?} (fingerprint {}): resume with the suite it came from, or run without --resume",
            header.suite.name,
            header.suite.short_fingerprint(),
            info.name,
            info.short_fingerprint()
        ));
    }
    // Another shard or selection too: the view would lose the first one's rows.
    let written = Settings {
        shard: header.shard,
        repeats: header.repeats,
        capture: header.capture,
        layout: &header.trace_layout,
    };
    if let Some(difference) = settings.difference(&written) {
        return refuse(format!("was {difference}"));
    }
    if header.only != only || header.skip != skip {
        return refuse(format!(
            "was written with {}, this eval has {}",
            patterns_text(&header.only, &header.skip),
            patterns_text(only, skip)
        ));
    }
    // Another `--limit` or `--sample` would mix two selections too.
    let written = crate::eval::Narrowing::of(header.selection.as_ref());
    if written != narrowing {
        return refuse(format!(
            "was written with {written}, this eval has {narrowing}"
        ));
    }
    if let Some(line) = run.torn_line {
        notices.push(Notice::warning(format!(
            "ignored the torn last line ({line}) of `{}`, cut short by a crash",
            run_path.join(ROWS_NAME).display()
        )));
    }
    Ok(Resumable::Run(Box::new(run)))
}

/// The rows of `parent`'s view a resume keeps, by output position: those whose run is whole in
/// its trace. Which rows are owed is [`owed`]; this reads the traces to say which are complete.
pub(super) fn kept_rows(
    out: &Path,
    parent: &RunRead,
    selected: &Selected<'_>,
    repeats: u32,
) -> Result<Vec<Option<TaskResult>>, EvalError> {
    let view = rebuild_view(out, &parent.header.eval_id)
        .map_err(|e| EvalError::store(out, e.to_string()))?;
    let mut finished_in: HashMap<String, HashSet<String>> = HashMap::new();
    let mut states = Vec::with_capacity(view.tasks.len());
    for row in &view.tasks {
        let (Some(run_id), Some(trace)) = (&row.run_id, &row.trace) else {
            continue;
        };
        let complete = if trace.ends_with(SINGLE_TRACE) {
            if !finished_in.contains_key(trace) {
                let path = out.join(trace);
                let finished = finished_runs(&path).map_err(|err| {
                    EvalError::input(&path, format!("failed to read `{}`: {err}", path.display()))
                })?;
                finished_in.insert(trace.clone(), finished);
            }
            finished_in[trace].contains(run_id)
        } else {
            ends_with_finished_run(&out.join(trace), run_id)
        };
        states.push(RowState {
            key: RowKey::of(row),
            passes: !row.fails(),
            complete,
        });
    }
    let scope: Vec<RowKey> = (1..=repeats)
        .flat_map(|repeat| selected.entries().map(move |t| RowKey::of_entry(t, repeat)))
        .collect();
    let owed: HashSet<RowKey> = owed(Owing::Resume, &scope, &states).into_iter().collect();
    // A row's place is its (task, model): under a model matrix a task has one per model.
    let index: HashMap<(&str, Option<&str>), usize> = selected
        .entries()
        .enumerate()
        .map(|(i, t)| ((t.id.as_str(), t.model_name), i))
        .collect();
    let mut rows = vec![None; selected.len() * repeats as usize];
    for row in view.tasks {
        let key = RowKey::of(&row);
        if let Some(&task) = index.get(&(key.task.as_str(), key.model.as_deref()))
            && !owed.contains(&key)
        {
            rows[task * repeats as usize + (key.repeat as usize - 1)] = Some(row);
        }
    }
    Ok(rows)
}

/// `--shard K/N` as given, for messages.
fn shard_text(shard: Option<Shard>) -> String {
    shard.map_or("no --shard".to_owned(), |s| format!("--shard {s}"))
}

/// `--only` and `--skip` as given, for messages.
fn patterns_text(only: &[String], skip: &[String]) -> String {
    let words: Vec<String> = only
        .iter()
        .map(|p| format!("--only {p:?}"))
        .chain(skip.iter().map(|p| format!("--skip {p:?}")))
        .collect();
    if words.is_empty() {
        "no --only or --skip".to_owned()
    } else {
        words.join(" ")
    }
}

/// What an evaluation ran with that `--resume` must find again, as its run's header or complete
/// results record it.
pub(super) struct Settings<'a> {
    pub(super) shard: Option<Shard>,
    pub(super) repeats: u32,
    pub(super) capture: crate::trace::Capture,
    /// `per-task` or `single`.
    pub(super) layout: &'a str,
}

impl Settings<'_> {
    /// The first way `written` differs from these (`written with --repeat 2, this eval has
    /// --repeat 1`), if any.
    pub(super) fn difference(&self, written: &Settings<'_>) -> Option<String> {
        let (was, now) = if written.shard != self.shard {
            (shard_text(written.shard), shard_text(self.shard))
        } else if written.repeats != self.repeats {
            (
                format!("--repeat {}", written.repeats),
                format!("--repeat {}", self.repeats),
            )
        } else if written.capture != self.capture {
            return Some(format!(
                "written with {} capture, this eval uses {}",
                written.capture.as_str(),
                self.capture.as_str()
            ));
        } else if written.layout != self.layout {
            (
                format!("--trace-layout {}", written.layout),
                format!("--trace-layout {}", self.layout),
            )
        } else {
            return None;
        };
        Some(format!("written with {was}, this eval has {now}"))
    }
}

/// Whether complete results are this command line's: the same shard, capture, repeat count and
/// trace layout, and rows for exactly the selected tasks. Says the first difference otherwise.
pub(super) fn same_runs(
    previous: &ResultsFile,
    settings: &Settings<'_>,
    selected: &Selected<'_>,
) -> Result<(), String> {
    let written = Settings {
        shard: previous.shard,
        repeats: previous.repeats.unwrap_or(1),
        capture: previous.capture,
        layout: layout_of(previous).as_str(),
    };
    if let Some(difference) = settings.difference(&written) {
        return Err(format!("it was {difference}"));
    }
    let repeats = settings.repeats;
    let runs = previous.tasks.iter().map(RowKey::of);
    let wanted = selected
        .entries()
        .flat_map(|task| (1..=repeats).map(move |repeat| RowKey::of_entry(task, repeat)));
    if !runs.eq(wanted) {
        return Err("its rows are not the tasks this eval selects (--only, --skip)".to_owned());
    }
    Ok(())
}

/// Reads `--rerun-failed`: complete results of this suite as a whole (merge shards first).
pub(super) fn read_rerun(
    path: &Path,
    suite: &Suite,
    repeats: u32,
) -> Result<ResultsFile, EvalError> {
    let previous = read_results(path).map_err(|message| EvalError::input(path, message))?;
    let refuse = |why: String| {
        Err(EvalError::input(
            path,
            format!("--rerun-failed `{}` {why}", path.display()),
        ))
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
    if previous.repeats.unwrap_or(1) != repeats {
        return refuse(format!(
            "ran each task {} time(s), this eval has --repeat {repeats}: give the same --repeat",
            previous.repeats.unwrap_or(1)
        ));
    }
    if let Some(shard) = previous.shard {
        return refuse(format!(
            "covers only shard {shard}: merge the shards, then rerun from the merged results"
        ));
    }
    // A row is one run of a task: two rows of one run would both be carried over.
    if let Err(problem) = crate::eval::check_rows(&previous) {
        return refuse(problem.to_string());
    }
    if previous.format == RESULTS_FORMAT_V1 {
        return refuse(format!(
            "is results format 1 (an output folder rewritten in place): convert its folder into a run store with `looptrace eval --rebuild-view {}`, then rerun from it",
            folder_of(path).display()
        ));
    }
    // Carried rows name their traces in the runs the results name: never a path that leads
    // elsewhere, since a rerun copies those runs and the report reads those traces.
    for (i, row) in previous.tasks.iter().enumerate() {
        let Some(trace) = row.trace.as_deref() else {
            continue;
        };
        let mut parts = Path::new(trace).components();
        let run = match (parts.next(), parts.next()) {
            (Some(std::path::Component::Normal(runs)), Some(std::path::Component::Normal(run)))
                if runs == RUNS_DIR =>
            {
                run.to_string_lossy()
            }
            _ => "".into(),
        };
        let plain = parts.all(|part| matches!(part, std::path::Component::Normal(_)));
        if !plain || !previous.runs.iter().any(|r| *r == run) {
            return Err(EvalError::Row {
                path: path.to_path_buf(),
                row: i,
                message: format!(
                    "--rerun-failed `{}` has `tasks[{i}].trace` {trace:?}, which is not a trace in one of the runs it names (`runs/<eval-id>/...`)",
                    path.display()
                ),
            });
        }
    }
    // The runs it builds on must be beside it: results merged from shards name the shards' runs.
    let folder = folder_of(path);
    if let Some(missing) = previous
        .runs
        .iter()
        .find(|run| !folder.join(RUNS_DIR).join(run).is_dir())
    {
        return refuse(format!(
            "names the run `{missing}`, which `{}` does not hold (results merged from shards name the shards' runs: gather them beside the merged file first, `cp -r shard*/runs {}/`)",
            folder.join(RUNS_DIR).display(),
            folder.display()
        ));
    }
    Ok(previous)
}
