//! `merge` as a library: a [`MergeRequest`] (the shard results, the outputs, the baseline)
//! becomes a [`MergePlan`] (every output checked, the shards read and folded, the coverage proved, the baseline read; nothing written), and
//! [`MergePlan::execute`] writes the merged results and JUnit and gives a [`MergeOutcome`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::EvalError;
use super::flag_checks::{check_regression_test, read_baseline};
use super::outcome::{EvalVerdict, Notice, adaptive_verdict, verdict};
use super::paths::{check_output, folder_of, is_device, probe_writable, refuse_traces_as_outputs};
use crate::eval::store::RowKey;
use crate::eval::{
    Comparison, FlakyTask, IncompleteShard, Merged, ResultsFile, Suite, compare, flaky_tasks,
    for_console, load_suite, merge_results_of, missing_sentence, pass_rates_of, read_results,
    render_junit, suite_info, write_atomically, write_results,
};
use crate::output::same_file;
use crate::stats::{Decision, RegressionTest};
use crate::trace::{HashAlgorithm, Summarizer};

/// What to merge, as `looptrace merge`'s flags.
#[derive(Clone, Debug, Default)]
pub struct MergeRequest {
    /// The shard results files.
    pub results: Vec<PathBuf>,
    /// Write the merged results here.
    pub out: Option<PathBuf>,
    /// Also write JUnit XML here.
    pub junit: Option<PathBuf>,
    /// The HTML page the caller writes (checked like every output).
    pub html: Option<PathBuf>,
    /// Compare with these earlier results.
    pub baseline: Option<PathBuf>,
    /// Accept a baseline from a suite with another name.
    pub baseline_any_suite: bool,
    /// The suite the shards ran: rows are placed and checked by task id.
    pub suite: Option<PathBuf>,
    /// Merge even when shards are missing or lack rows (the results are marked partial).
    pub allow_partial: bool,
    /// `--regression-test`.
    pub regression_test: Option<RegressionTest>,
    /// `--confidence`.
    pub confidence: f64,
}

/// A merge checked and folded, ready to write.
pub struct MergePlan {
    request: MergeRequest,
    shards: Vec<(String, ResultsFile)>,
    merged: ResultsFile,
    gaps: Vec<String>,
    baseline: Option<ResultsFile>,
    suite: Option<Suite>,
    notices: Vec<Notice>,
}

/// What a merge wrote and found.
#[derive(Debug)]
pub struct MergeOutcome {
    /// The merged results.
    pub merged: ResultsFile,
    /// The same with the suite's expected values in full (with `--suite`), for a console.
    pub shown: ResultsFile,
    /// The comparison with the baseline, judged.
    pub comparison: Option<Comparison>,
    /// Flaky tasks and where their runs parted (each row's trace read beside its shard).
    pub flaky: Vec<FlakyTask>,
    /// Messages for after the report (what a partial merge lacks).
    pub closing: Vec<Notice>,
    /// The verdict.
    pub verdict: EvalVerdict,
}

impl MergePlan {
    /// Checks every output, locks and reads the shards, folds them and proves their coverage
    /// (refused unless `allow_partial`), and reads the baseline. Nothing is written.
    pub fn new(request: MergeRequest) -> Result<MergePlan, EvalError> {
        // Every output is checked before anything is read or written: none may be an input, a
        // symbolic link, a folder, or another output.
        let inputs: Vec<PathBuf> = request
            .results
            .iter()
            .chain(&request.baseline)
            .chain(&request.suite)
            .cloned()
            .collect();
        let outputs = outputs_of(&request);
        for (n, &(flag, output)) in outputs.iter().enumerate() {
            check_output(flag, output, &inputs)?;
            probe_writable(flag, &folder_of(output))?;
            if let Some((earlier, _)) = outputs[..n]
                .iter()
                .find(|(_, other)| *other == output || same_file(other, output))
                // A device (`/dev/null`) takes any number of them.
                .filter(|_| !is_device(output))
            {
                return Err(EvalError::output(
                    flag,
                    output,
                    format!(
                        "{flag} `{}` is the {earlier} file too: choose another file",
                        output.display()
                    ),
                ));
            }
        }
        // No shard's folder is locked: merge reads its view, replaced whole, and the traces of
        // sealed runs, which are never written again.
        let mut shards = Vec::new();
        for path in &request.results {
            let shard = read_results(path).map_err(|message| EvalError::input(path, message))?;
            shards.push((path.display().to_string(), shard));
        }
        for ((_, shard), path) in shards.iter().zip(&request.results) {
            refuse_traces_as_outputs(&outputs, shard, path)?;
        }
        // With the suite, rows are placed and checked by task id.
        let suite = match (&request.suite, shards.first()) {
            (Some(path), Some((_, first))) => Some(suite_of(path, first)?),
            _ => None,
        };
        if let Some(suite) = &suite {
            refuse_suite_files_as_outputs(&outputs, suite)?;
        }
        let ids: Option<Vec<String>> = suite.as_ref().map(|suite| {
            suite
                .tasks
                .entries()
                .iter()
                .map(|t| t.id.to_string())
                .collect()
        });
        let Merged {
            results: merged,
            incomplete,
        } = merge_results_of(&shards, ids.as_deref()).map_err(EvalError::inputs)?;
        let mut notices = Vec::new();
        // Without a list of the split's tasks, a shard's rows are placed by their order in it,
        // which is exact only while it lacks none before the last it holds.
        if request.allow_partial && ids.is_none() && merged.selection.is_none() {
            notices.extend(incomplete.iter().map(|shard| Notice::warning(format!(
                "`{}` lacks rows of its share, and without --suite merge cannot tell which: its rows are placed in the order it holds them, as if those it lacks were its last (give --suite SUITE to place them by task id)",
                shard.name
            ))));
        }
        let gaps = coverage_gaps(&merged, &incomplete);
        if merged.partial && !request.allow_partial {
            let hint = if incomplete.is_empty() {
                "give every shard"
            } else {
                "give every shard whole (`eval --resume` runs the rest of an interrupted one)"
            };
            return Err(EvalError::inputs(format!(
                "{} ({hint}, or --allow-partial to write a file marked partial)",
                gaps.join("; ")
            )));
        }
        let baseline = request
            .baseline
            .as_deref()
            .map(|path| read_baseline(path, &merged.suite.name, request.baseline_any_suite))
            .transpose()?;
        if let (Some(baseline), Some(path)) = (&baseline, &request.baseline) {
            refuse_traces_as_outputs(&outputs, baseline, path)?;
        }
        // McNemar's test with repeats is refused before anything is written.
        let merged_repeats = if merged.tasks.iter().any(|t| t.repeat.is_some()) {
            merged.repeats.unwrap_or(1).max(2)
        } else {
            1
        };
        check_regression_test(request.regression_test, merged_repeats, baseline.as_ref())?;
        Ok(MergePlan {
            request,
            shards,
            merged,
            gaps,
            baseline,
            suite,
            notices,
        })
    }

    /// The merged results, before they are written (for a page written first).
    pub fn merged(&self) -> &ResultsFile {
        &self.merged
    }

    /// Each shard's results, named as given.
    pub fn shards(&self) -> &[(String, ResultsFile)] {
        &self.shards
    }

    /// What the plan found that the user should read.
    pub fn notices(&self) -> &[Notice] {
        &self.notices
    }

    /// Writes the merged results and JUnit, compares with the baseline, and gives the verdict.
    pub fn execute(self) -> Result<MergeOutcome, EvalError> {
        let merged = self.merged;
        if let Some(out) = &self.request.out {
            write_results(out, &merged).map_err(|err| {
                EvalError::input(out, format!("failed to write `{}`: {err}", out.display()))
            })?;
        }
        if let Some(junit) = &self.request.junit {
            write_atomically(junit, render_junit(&merged).as_bytes()).map_err(|err| {
                EvalError::input(
                    junit,
                    format!("failed to write `{}`: {err}", junit.display()),
                )
            })?;
        }
        let mut comparison = self
            .baseline
            .as_ref()
            .map(|b| compare(&merge_scope(b, &merged), &merged));
        if let Some(c) = &mut comparison {
            c.judge(self.request.regression_test, self.request.confidence)
                .map_err(EvalError::flags)?;
        }
        let mut closing = Vec::new();
        let shown = match &self.suite {
            Some(suite) => {
                let summarizer = Summarizer::from_env();
                if let Some(why) = other_hash(&merged, &summarizer) {
                    closing.push(Notice::warning(format!("--suite: {why}")));
                }
                for_console(&merged, suite, &summarizer)
            }
            None => merged.clone(),
        };
        // Each row's trace lies beside the shard results it came from.
        let folders: HashMap<RowKey, PathBuf> = self
            .shards
            .iter()
            .zip(&self.request.results)
            .flat_map(|((_, shard), path)| {
                let folder = folder_of(path);
                shard
                    .tasks
                    .iter()
                    .map(move |row| (RowKey::of(row), folder.clone()))
            })
            .collect();
        let flaky = flaky_tasks(&merged, &|row| {
            folders.get(&RowKey::of(row)).cloned().unwrap_or_default()
        });
        let verdict = if merged.partial {
            closing.extend(
                self.gaps
                    .iter()
                    .map(|gap| Notice::info(format!("partial: {gap}"))),
            );
            EvalVerdict::Failed
        } else {
            // Adaptive repeats: the sequential test's decisions, recomputed from the rows, decide.
            let adaptive = merged.adaptive.as_ref().and_then(|rule| {
                let sprt = rule.sprt();
                let passed = pass_rates_of(&merged)
                    .iter()
                    .all(|r| sprt.decide(r.passed, r.runs) == Decision::Pass);
                adaptive_verdict(&merged, passed, comparison.as_ref())
            });
            adaptive.unwrap_or_else(|| verdict(&merged, comparison.as_ref()))
        };
        Ok(MergeOutcome {
            merged,
            shown,
            comparison,
            flaky,
            closing,
            verdict,
        })
    }
}

/// The outputs given, with their flags.
fn outputs_of(request: &MergeRequest) -> Vec<(&'static str, &PathBuf)> {
    [
        ("--out", &request.out),
        ("--junit", &request.junit),
        ("--html", &request.html),
    ]
    .into_iter()
    .filter_map(|(flag, path)| path.as_ref().map(|p| (flag, p)))
    .collect()
}

/// Fails when an output is a file the suite reads: its tools file, or a recording one of its
/// replay tasks replays. Inputs too.
fn refuse_suite_files_as_outputs(
    outputs: &[(&str, &PathBuf)],
    suite: &Suite,
) -> Result<(), EvalError> {
    let read: Vec<PathBuf> = suite
        .tasks
        .read_files()
        .iter()
        .cloned()
        .chain(
            suite
                .tools
                .as_ref()
                .and_then(|t| t.path())
                .map(Path::to_path_buf),
        )
        .collect();
    for &(flag, output) in outputs {
        check_output(flag, output, &read)?;
    }
    Ok(())
}

/// The suite `merge --suite` names, if it is the one the results ran (same name and task
/// ids, as their fingerprint says).
fn suite_of(path: &Path, results: &ResultsFile) -> Result<Suite, EvalError> {
    let suite = load_suite(path).map_err(|message| EvalError::input(path, message))?;
    let info = suite_info(&suite).map_err(EvalError::internal)?;
    // Rows are placed and checked by task id at will: the ids are held.
    suite.tasks.hold_entries().map_err(EvalError::internal)?;
    if info.fingerprint != results.suite.fingerprint {
        return Err(EvalError::input(
            path,
            format!(
                "--suite `{}` is not the suite the results ran: {info}, the results are of {}",
                path.display(),
                results.suite
            ),
        ));
    }
    Ok(suite)
}

/// Why the summaries in `results`' failure reasons cannot match this process's, when their
/// hashes are of the other kind: the expected values then stay summaries. (A different key of
/// the same kind cannot be told from a changed value.)
fn other_hash(results: &ResultsFile, summarizer: &Summarizer) -> Option<&'static str> {
    let reasons = || results.tasks.iter().flat_map(|task| &task.failures);
    match summarizer.algorithm() {
        HashAlgorithm::Sha256 if reasons().any(|r| r.contains(";hmac-sha256=")) => Some(
            "the results' summaries are keyed (HMAC) and LOOPTRACE_HASH_KEY is not set: set it as the shards had it to see expected values in full",
        ),
        HashAlgorithm::HmacSha256 if reasons().any(|r| r.contains(";sha256=")) => Some(
            "the results' summaries are plain SHA-256 and LOOPTRACE_HASH_KEY is set: unset it to see expected values in full",
        ),
        _ => None,
    }
}

/// What a merge lacks, one sentence each: the shards not given, then each shard given without
/// all of its rows.
fn coverage_gaps(merged: &ResultsFile, incomplete: &[IncompleteShard]) -> Vec<String> {
    let absent: Vec<_> = merged
        .missing_shards
        .iter()
        .filter(|shard| shard.missing_rows.is_none())
        .copied()
        .collect();
    let mut gaps = Vec::new();
    if !absent.is_empty() {
        gaps.push(missing_sentence(&absent));
    }
    gaps.extend(incomplete.iter().map(ToString::to_string));
    gaps
}

/// The baseline's tasks a merge can speak about, as an unsharded eval chooses them. Merge does
/// not read the suite, so it knows the tasks the shards were to run only from the results: the
/// whole suite (every baseline task, one the merge lacks being no longer in the suite), or the
/// `selection`'s tasks (other baseline tasks are left out, removed from the suite or not). A
/// partial merge speaks only about the tasks it holds: the missing shards' are unknown.
fn merge_scope(baseline: &ResultsFile, merged: &ResultsFile) -> ResultsFile {
    let selected = match (&merged.selection, merged.partial) {
        (None, false) => return baseline.clone(),
        (Some(selection), false) => selection.tasks.as_slice(),
        (_, true) => &[],
    };
    let keep: HashSet<&str> = merged
        .tasks
        .iter()
        .map(|t| t.id.as_str())
        .chain(selected.iter().map(String::as_str))
        .collect();
    let mut scoped = baseline.clone();
    scoped.tasks.retain(|t| keep.contains(t.id.as_str()));
    scoped
}
