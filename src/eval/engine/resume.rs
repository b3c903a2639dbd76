//! Which earlier runs a new evaluation builds on: the run `--resume` continues (refused when it
//! was of another suite or other settings) and the rows it keeps (which rows are owed is
//! [`crate::eval::store::owed`]), and the results `--rerun-failed` reads (complete, of this
//! suite, with the runs they name beside them).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::outcome::Notice;
use super::{EvalError, folder_of, write_view};
use crate::eval::store::{
    Owing, RESULTS_NAME, ROWS_NAME, RUNS_DIR, RowKey, RunKind, is_run_id, list_runs, owed,
    read_run, rebuild_view,
};
use crate::eval::{
    Narrowing, RESULTS_FORMAT_V1, ResultsFile, Selected, Selection, Shard, Suite, SuiteInfo,
    TaskResult, read_results,
};
use crate::trace::Capture;

/// What `--resume` found in the output folder.
pub(super) enum Resumable {
    /// The run to continue: the newest, which a crash or a signal stopped, and the rows of its
    /// view the resume keeps, by output position.
    Run {
        /// The run's id, the resume's parent.
        parent: String,
        /// Each row of the selected tasks' repeats, unless the resume owes it ([`owed`]).
        kept: Vec<Option<TaskResult>>,
    },
    /// The newest run ended with every row, and `results.json` is its view: nothing to do.
    Complete(Box<ResultsFile>),
    /// No run to continue: run everything.
    Nothing,
}

/// What an evaluation ran with that `--resume` must find again, each as its flags read: the
/// shard, the repeat count, the capture, the trace layout (the four complete results are held
/// to), then `--only`/`--skip` and `--limit`/`--sample`.
pub(super) type Settings = [String; 6];

/// The settings of an evaluation with this shard, repeat count, capture, trace layout and
/// selection (as its results record it: `--only`, `--skip`, `--limit`, `--sample`).
pub(super) fn settings(
    shard: Option<Shard>,
    repeats: u32,
    capture: Capture,
    layout: &str,
    selection: Option<&Selection>,
) -> Settings {
    let (only, skip) = selection.map_or((&[][..], &[][..]), |s| (&s.only, &s.skip));
    let patterns: Vec<String> = (only.iter().map(|p| format!("--only {p:?}")))
        .chain(skip.iter().map(|p| format!("--skip {p:?}")))
        .collect();
    [
        shard.map_or("no --shard".to_owned(), |s| format!("--shard {s}")),
        format!("--repeat {repeats}"),
        capture.as_str().to_owned(),
        format!("--trace-layout {layout}"),
        match patterns.is_empty() {
            true => "no --only or --skip".to_owned(),
            false => patterns.join(" "),
        },
        Narrowing::of(selection).to_string(),
    ]
}

/// The first setting in which `was` (a run's) differs from `now` (this eval's), as
/// `written with --repeat 2, this eval has --repeat 1`, if any.
fn difference(now: &[String], was: &[String]) -> Option<String> {
    let (at, (now, was)) = (now.iter().zip(was).enumerate()).find(|(_, (now, was))| now != was)?;
    Some(match at {
        2 => format!("written with {was} capture, this eval uses {now}"),
        _ => format!("written with {was}, this eval has {now}"),
    })
}

/// Finds the run `--resume` continues: the newest of `out`, unless it ended whole. A run of
/// another suite or of other [`Settings`] than `wanted` is refused, as is an interrupted rerun (the same rerun
/// again continues it); a folder of results format 1 is refused naming its conversion.
pub(super) fn resumable(
    out: &Path,
    info: &SuiteInfo,
    wanted: &Settings,
    selected: &Selected<'_>,
    notices: &mut Vec<Notice>,
) -> Result<Resumable, EvalError> {
    let results_path = out.join(RESULTS_NAME);
    let results = results_path.display();
    let refuse = |path: &Path, why: String| Err(EvalError::store(path, format!("--resume: {why}")));
    let Some(newest) = list_runs(out)?.pop() else {
        // Format 1 left its rows in `results.partial.jsonl` until it wrote `results.json`.
        if out.join("results.partial.jsonl").exists()
            || read_results(&results_path).is_ok_and(|r| r.format == RESULTS_FORMAT_V1)
        {
            return refuse(out, format!("`{}` holds {}", out.display(), format_1(out)));
        }
        return Ok(Resumable::Nothing);
    };
    let run = read_run(out, &newest)?;
    let (h, run_path) = (&run.header, out.join(RUNS_DIR).join(&newest));
    let written = settings(
        h.shard,
        h.repeats,
        h.capture,
        &h.trace_layout,
        h.selection.as_ref(),
    );
    let suites = format!("from suite {}, this is suite {info}", h.suite);
    let whole = run.seal.as_ref().is_some_and(|seal| !seal.interrupted);
    // Results of another suite (or of this one since edited) are no evaluation to resume: every
    // task runs, as on a Job's first attempt in a folder an earlier Job left.
    if whole && h.suite != *info {
        let nothing = format!("`{results}` is {suites}: nothing of it to resume");
        notices.push(Notice::info(nothing));
        return Ok(Resumable::Nothing);
    }
    if whole {
        // A crash after the run ended but before its view was written: the view is all it owes.
        let view = match read_results(&results_path) {
            Ok(view) if view.eval_id.as_ref() == Some(&newest) => view,
            _ => {
                let run = run_path.display();
                let wrote = format!("the run `{run}` ended whole: wrote its view `{results}`");
                notices.push(Notice::info(wrote));
                write_view(out, &newest)?
            }
        };
        let rows = RowKey::scope(selected.entries(), h.repeats);
        let why = match difference(&wanted[..4], &written[..4]) {
            Some(difference) => format!("it was {difference}"),
            None if view.tasks.iter().map(RowKey::of).eq(rows) => {
                let complete =
                    format!("nothing to resume: `{results}` is complete (left as it was)");
                notices.push(Notice::info(complete));
                return Ok(Resumable::Complete(Box::new(view)));
            }
            None => "its rows are not the tasks this eval selects (--only, --skip)".to_owned(),
        };
        let why = format!("`{results}` is complete, but {why}: run without --resume to replace it");
        return refuse(&results_path, why);
    }
    let run_name = format!("the run `{}`", run_path.display());
    let why = if h.kind == RunKind::Rerun {
        let rerun = (h.selection.as_ref()).and_then(|s| s.rerun_failed.as_deref());
        let rerun = rerun.unwrap_or("RESULTS");
        format!(
            "{run_name} was an interrupted `--rerun-failed {rerun}`, whose rows --resume cannot continue: run that rerun again"
        )
    } else if h.suite != *info {
        format!(
            "{run_name} is {suites}: resume with the suite it came from, or run without --resume"
        )
    } else if let Some(difference) = difference(wanted, &written) {
        // Another shard or selection too: the view would lose the first one's rows.
        format!("{run_name} was {difference}")
    } else {
        if let Some(line) = run.torn_line {
            let rows = run_path.join(ROWS_NAME);
            notices.push(Notice::warning(format!(
                "ignored the torn last line ({line}) of `{}`, cut short by a crash",
                rows.display()
            )));
        }
        // Every row was appended after its run's trace was written whole: a row held is a run
        // recorded, and a resume owes only what has none.
        let view = rebuild_view(out, &newest)?;
        let mut held: HashMap<RowKey, TaskResult> = (view.tasks.into_iter())
            .map(|row| (RowKey::of(&row), row))
            .collect();
        let rows: Vec<(RowKey, bool)> = held.keys().map(|key| (key.clone(), true)).collect();
        // In output order: a task's repeats together; under a model matrix, a task once per model.
        let scope: Vec<RowKey> = RowKey::scope(selected.entries(), h.repeats).collect();
        let owed: HashSet<RowKey> = owed(Owing::Resume, &scope, &rows).into_iter().collect();
        let kept = (scope.iter())
            .map(|key| (!owed.contains(key)).then(|| held.remove(key)).flatten())
            .collect();
        return Ok(Resumable::Run {
            parent: newest,
            kept,
        });
    };
    refuse(&run_path, why)
}

/// Reads `--rerun-failed`: complete results of this suite as a whole (merge shards first), the
/// runs they name beside them. Their rows' traces are never followed: the new run's view takes
/// its parents' rows from their runs.
pub(super) fn read_rerun(
    path: &Path,
    suite: &Suite,
    repeats: u32,
) -> Result<ResultsFile, EvalError> {
    let previous = read_results(path).map_err(|message| EvalError::input(path, message))?;
    let (given, folder) = (previous.repeats.unwrap_or(1), folder_of(path));
    let (runs, shown) = (folder.join(RUNS_DIR), folder.display());
    let missing = (previous.runs.iter()).find(|run| !is_run_id(run) || !runs.join(run).is_dir());
    let why = if previous.suite.name != suite.name {
        let (was, now) = (&previous.suite.name, &suite.name);
        format!("is from suite {was:?}, this is suite {now:?}")
    } else if previous.partial {
        "is a partial merge: rerun from complete results".to_owned()
    } else if given != repeats {
        format!(
            "ran each task {given} time(s), this eval has --repeat {repeats}: give the same --repeat"
        )
    } else if let Some(shard) = previous.shard {
        format!("covers only shard {shard}: merge the shards, then rerun from the merged results")
    } else if let Err(problem) = crate::eval::check_rows(&previous) {
        // A row is one run of a task: two rows of one run would both be carried over.
        problem.to_string()
    } else if previous.format == RESULTS_FORMAT_V1 {
        format!("is {}", format_1(&folder))
    } else if let Some(missing) = missing {
        // Results merged from shards name the shards' runs.
        let runs = runs.display();
        format!(
            "names the run `{missing}`, which `{runs}` does not hold (results merged from shards name the shards' runs: gather them beside the merged file first, `cp -r shard*/runs {shown}/`)"
        )
    } else {
        return Ok(previous);
    };
    let message = format!("--rerun-failed `{}` {why}", path.display());
    Err(EvalError::input(path, message))
}

/// Why an output folder of results format 1 is not continued, naming its conversion.
pub(super) fn format_1(folder: &Path) -> String {
    let folder = folder.display();
    format!(
        "results format 1 (an output folder rewritten in place), which this looptrace does not continue: convert it into a run store with `looptrace eval --rebuild-view {folder}`, then run again"
    )
}
