//! `looptrace merge`: shard results combined into the results of the whole suite, with proof that
//! every task ran exactly once per repeat, and the reports and comparisons `eval` makes.

use std::path::{Path, PathBuf};

use clap::Args;

use super::common::same_file;
use super::eval::{
    FormatArg, VerdictArgs, adaptive_outcome, judge, print_report, read_baseline, verdict,
};
use super::folder_locks::{lock_read, lock_read_linked};
use super::output_checks::{
    Inputs, folder_of, is_device, probe_writable, refuse_symlink, refuse_traces_as_outputs,
    refuse_wrong_kind,
};
use super::{CliError, CliResult, Outcome};
use looptrace::eval::{
    ResultsFile, Suite, compare, load_suite, merge_results_of, read_results, render_junit,
    suite_info, write_atomically, write_results,
};
use looptrace::trace::Summarizer;

/// Arguments of `looptrace merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard results files to combine.
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Write the merged results here.
    #[arg(short = 'o', long, visible_alias = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Report format.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
    /// Print only errors and a one-line summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Merge even when shards are missing or lack rows (interrupted, edited): the file is marked
    /// `"partial": true`, lists those shards, and the exit code is 1.
    #[arg(long)]
    pub allow_partial: bool,
    /// The suite the shards ran: rows are placed and checked by task id, and the report shows
    /// each failed expectation's expected value in full, as `eval` does (the merged file and
    /// JUnit keep the summaries the shards wrote).
    #[arg(long, value_name = "SUITE")]
    pub suite: Option<PathBuf>,
    /// `--junit`, `--html`, `--baseline`, `--baseline-any-suite`, as `eval` has them.
    #[command(flatten)]
    pub verdicts: VerdictArgs,
}

/// Runs `looptrace merge`.
pub fn merge(args: MergeArgs) -> CliResult {
    // Every output is checked before anything is read or written: none may be an input, a
    // symbolic link, a folder, or another output.
    let inputs: Vec<&PathBuf> = args
        .results
        .iter()
        .chain(&args.verdicts.baseline)
        .chain(&args.suite)
        .collect();
    let outputs: Vec<(&str, &PathBuf)> = [
        ("--out", &args.out),
        ("--junit", &args.verdicts.junit),
        ("--html", &args.verdicts.html),
    ]
    .into_iter()
    .filter_map(|(flag, path)| path.as_ref().map(|p| (flag, p)))
    .collect();
    let inputs = Inputs::of(inputs);
    for (n, &(flag, output)) in outputs.iter().enumerate() {
        inputs.refuse_overwriting(flag, output)?;
        refuse_symlink("merge", flag, output)?;
        refuse_wrong_kind(flag, output)?;
        probe_writable(flag, &folder_of(output))?;
        if let Some((earlier, _)) = outputs[..n]
            .iter()
            .find(|(_, other)| *other == output || same_file(other, output))
            // A device (`/dev/null`) takes any number of them.
            .filter(|_| !is_device(output))
        {
            return Err(CliError::input(format!(
                "{flag} `{}` is the {earlier} file too: choose another file",
                output.display()
            )));
        }
    }
    // Each shard's folder is read (its results, and its traces for `--html`) under a shared
    // lock, held to the end: not while an evaluation rewrites it.
    let mut reading = Vec::new();
    for path in &args.results {
        let folder = folder_of(path);
        if folder.is_dir() {
            reading.push(lock_read("merge:", &folder)?);
        }
        reading.extend(lock_read_linked("merge:", path)?);
    }
    let mut results = Vec::new();
    for path in &args.results {
        results.push((
            path.display().to_string(),
            read_results(path).map_err(CliError::Input)?,
        ));
    }
    for ((_, shard), path) in results.iter().zip(&args.results) {
        refuse_traces_as_outputs(&outputs, shard, path, "the shard")?;
    }
    // With the suite, rows are placed and checked by task id.
    let suite = match (&args.suite, results.first()) {
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
    let looptrace::eval::Merged {
        results: merged,
        incomplete,
    } = merge_results_of(&results, ids.as_deref()).map_err(CliError::Input)?;
    // Without a list of the split's tasks, a shard's rows are placed by their order in it, which
    // is exact only while it lacks none before the last it holds.
    if args.allow_partial && ids.is_none() && merged.selection.is_none() {
        for shard in &incomplete {
            eprintln!(
                "warning: `{}` lacks rows of its share, and without --suite merge cannot tell which: its rows are placed in the order it holds them, as if those it lacks were its last (give --suite SUITE to place them by task id)",
                shard.name
            );
        }
    }
    let gaps = coverage_gaps(&merged, &incomplete);
    if merged.partial && !args.allow_partial {
        let hint = if incomplete.is_empty() {
            "give every shard"
        } else {
            "give every shard whole (`eval --resume` runs the rest of an interrupted one)"
        };
        return Err(CliError::input(format!(
            "{} ({hint}, or --allow-partial to write a file marked partial)",
            gaps.join("; ")
        )));
    }
    let baseline = args
        .verdicts
        .baseline
        .as_deref()
        .map(|path| read_baseline(path, &merged.suite.name, args.verdicts.baseline_any_suite))
        .transpose()?;
    if let (Some(baseline), Some(path)) = (&baseline, &args.verdicts.baseline) {
        refuse_traces_as_outputs(&outputs, baseline, path, "the baseline")?;
    }
    // McNemar's test with repeats is refused before anything is written.
    let merged_repeats = if merged.tasks.iter().any(|t| t.repeat.is_some()) {
        merged.repeats.unwrap_or(1).max(2)
    } else {
        1
    };
    args.verdicts
        .stats
        .check_test(merged_repeats, baseline.as_ref())?;
    // The page first: it reads the shards' traces, and a trace it cannot read leaves nothing written.
    if let Some(html) = &args.verdicts.html {
        super::html::write_merged_page(
            html,
            &merged,
            &results,
            &args.results,
            &args.verdicts.stats.options(),
        )?;
    }
    if let Some(out) = &args.out {
        write_results(out, &merged).map_err(|err| {
            CliError::input(format!("failed to write `{}`: {err}", out.display()))
        })?;
    }
    if let Some(junit) = &args.verdicts.junit {
        write_atomically(junit, render_junit(&merged).as_bytes()).map_err(|err| {
            CliError::input(format!("failed to write `{}`: {err}", junit.display()))
        })?;
    }
    let mut comparison = baseline
        .as_ref()
        .map(|b| compare(&merge_scope(b, &merged), &merged));
    judge(&mut comparison, &args.verdicts.stats)?;
    let shown = match &suite {
        Some(suite) => {
            let summarizer = Summarizer::from_env();
            if let Some(why) = other_hash(&merged, &summarizer) {
                eprintln!("warning: --suite: {why}");
            }
            std::borrow::Cow::Owned(looptrace::eval::for_console(&merged, suite, &summarizer))
        }
        None => std::borrow::Cow::Borrowed(&merged),
    };
    // Each row's trace lies beside the shard results it came from.
    let folders: std::collections::HashMap<(&str, Option<u32>), std::path::PathBuf> = results
        .iter()
        .zip(&args.results)
        .flat_map(|((_, shard), path)| {
            let folder = super::output_checks::folder_of(path);
            shard
                .tasks
                .iter()
                .map(move |row| ((row.id.as_str(), row.repeat), folder.clone()))
        })
        .collect();
    let flaky = if args.quiet {
        Vec::new()
    } else {
        looptrace::eval::flaky_tasks(&merged, &|row| {
            folders
                .get(&(row.id.as_str(), row.repeat))
                .cloned()
                .unwrap_or_default()
        })
    };
    print_report(
        &shown,
        comparison.as_ref(),
        None,
        &args.verdicts.stats.options(),
        &flaky,
        args.format,
        args.quiet,
    )?;
    if merged.partial {
        for gap in &gaps {
            eprintln!("partial: {gap}");
        }
        return Ok(Outcome::Failures);
    }
    // Adaptive repeats: the sequential test's decisions, recomputed from the rows, decide.
    let adaptive = merged.adaptive.as_ref().and_then(|rule| {
        let sprt = rule.sprt();
        let passed = looptrace::eval::pass_rates_of(&merged)
            .iter()
            .all(|r| sprt.decide(r.passed, r.runs) == looptrace::stats::Decision::Pass);
        adaptive_outcome(&merged, passed, comparison.as_ref())
    });
    Ok(adaptive.unwrap_or_else(|| verdict(&merged, comparison.as_ref())))
}

/// Fails when an output is a file the suite reads: its tools file, or a recording one of its
/// replay tasks replays. Inputs too.
fn refuse_suite_files_as_outputs(
    outputs: &[(&str, &PathBuf)],
    suite: &Suite,
) -> Result<(), CliError> {
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
    let read = Inputs::of(&read);
    for &(flag, output) in outputs {
        read.refuse_overwriting(flag, output)?;
    }
    Ok(())
}

/// The suite `merge --suite` names, if it is the one the results ran (same name and task
/// ids, as their fingerprint says).
fn suite_of(path: &Path, results: &ResultsFile) -> Result<Suite, CliError> {
    let suite = load_suite(path).map_err(CliError::input)?;
    let info = suite_info(&suite);
    if info.fingerprint != results.suite.fingerprint {
        return Err(CliError::input(format!(
            "--suite `{}` is not the suite the results ran: {:?} (fingerprint {}), the results are of {:?} (fingerprint {})",
            path.display(),
            info.name,
            info.short_fingerprint(),
            results.suite.name,
            results.suite.short_fingerprint()
        )));
    }
    Ok(suite)
}

/// Why the summaries in `results`' failure reasons cannot match this process's, when their
/// hashes are of the other kind: the expected values then stay summaries. (A different key of
/// the same kind cannot be told from a changed value.)
fn other_hash(results: &ResultsFile, summarizer: &Summarizer) -> Option<&'static str> {
    let reasons = || results.tasks.iter().flat_map(|task| &task.failures);
    match summarizer.algorithm() {
        looptrace::trace::HashAlgorithm::Sha256
            if reasons().any(|r| r.contains(";hmac-sha256=")) =>
        {
            Some(
                "the results' summaries are keyed (HMAC) and LOOPTRACE_HASH_KEY is not set: set it as the shards had it to see expected values in full",
            )
        }
        looptrace::trace::HashAlgorithm::HmacSha256
            if reasons().any(|r| r.contains(";sha256=")) =>
        {
            Some(
                "the results' summaries are plain SHA-256 and LOOPTRACE_HASH_KEY is set: unset it to see expected values in full",
            )
        }
        _ => None,
    }
}

/// What a merge lacks, one sentence each: the shards not given, then each shard given without
/// all of its rows.
fn coverage_gaps(
    merged: &ResultsFile,
    incomplete: &[looptrace::eval::IncompleteShard],
) -> Vec<String> {
    let absent: Vec<_> = merged
        .missing_shards
        .iter()
        .filter(|shard| shard.missing_rows.is_none())
        .copied()
        .collect();
    let mut gaps = Vec::new();
    if !absent.is_empty() {
        gaps.push(looptrace::eval::missing_sentence(&absent));
    }
    gaps.extend(incomplete.iter().map(ToString::to_string));
    gaps
}

/// The baseline's tasks a merge can speak about, as [`in_scope`] chooses them for an unsharded
/// eval. Merge does not read the suite, so it knows the tasks the shards were to run only from
/// the results: the whole suite (every baseline task, one the merge lacks being no longer in the
/// suite), or the `selection`'s tasks (other baseline tasks are left out, removed from the suite
/// or not). A partial merge speaks only about the tasks it holds: the missing shards' are unknown.
fn merge_scope(baseline: &ResultsFile, merged: &ResultsFile) -> ResultsFile {
    let selected = match (&merged.selection, merged.partial) {
        (None, false) => return baseline.clone(),
        (Some(selection), false) => selection.tasks.as_slice(),
        (_, true) => &[],
    };
    let keep: std::collections::HashSet<&str> = merged
        .tasks
        .iter()
        .map(|t| t.id.as_str())
        .chain(selected.iter().map(String::as_str))
        .collect();
    let mut scoped = baseline.clone();
    scoped.tasks.retain(|t| keep.contains(t.id.as_str()));
    scoped
}
