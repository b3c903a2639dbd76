//! The checks `eval` and `merge` make on their flags' values and on the baseline before anything
//! runs: statistics options that cannot be computed, an adaptive stopping rule out of range, a
//! baseline that cannot be compared with.

use std::path::Path;

use super::EvalError;
use crate::eval::{ResultsFile, check_rows, list_shards, read_results};
use crate::stats::{AdaptiveRule, RegressionTest, StatsOptions};

/// Refuses a `--pass-at` k above the runs every task will have (`repeats`), and
/// `--regression-test mcnemar` when either side has repeats.
pub fn check_stats(
    stats: &StatsOptions,
    test: Option<RegressionTest>,
    repeats: u32,
    baseline: Option<&ResultsFile>,
) -> Result<(), EvalError> {
    if let Some(k) = stats.pass_at.iter().find(|k| **k > repeats) {
        return Err(EvalError::usage(
            "--pass-at",
            format!(
                "--pass-at {k} needs at least {k} runs of each task, but --repeat is {repeats} (pass@k and pass^k are not defined for k above the runs)"
            ),
        ));
    }
    check_regression_test(test, repeats, baseline)
}

/// Refuses `--regression-test mcnemar` when either side has repeats (`repeats` runs per task
/// now), before anything is written.
pub fn check_regression_test(
    test: Option<RegressionTest>,
    repeats: u32,
    baseline: Option<&ResultsFile>,
) -> Result<(), EvalError> {
    if test != Some(RegressionTest::Mcnemar) {
        return Ok(());
    }
    let baseline_repeats = baseline
        .is_some_and(|b| b.repeats.unwrap_or(1) > 1 || b.tasks.iter().any(|t| t.repeat.is_some()));
    if repeats > 1 || baseline_repeats {
        let side = if repeats > 1 {
            format!("this evaluation runs each task {repeats} times")
        } else {
            "the baseline has repeats".to_owned()
        };
        return Err(EvalError::usage(
            "--regression-test",
            format!(
                "--regression-test mcnemar needs one run a side, but {side}: use `sign` (the default with repeats)"
            ),
        ));
    }
    Ok(())
}

/// The stopping rule of `--repeat-until-decided MAX --pass-threshold P`, checked.
pub(crate) fn adaptive_rule(
    max: Option<u32>,
    threshold: Option<f64>,
    confidence: f64,
) -> Result<Option<AdaptiveRule>, EvalError> {
    let Some(max) = max else {
        return Ok(None);
    };
    if max < 2 {
        return Err(EvalError::usage(
            "--repeat-until-decided",
            "--repeat-until-decided must be at least 2 (one run decides nothing to repeat)",
        ));
    }
    let threshold = threshold.unwrap_or(0.5);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(EvalError::usage(
            "--pass-threshold",
            format!("--pass-threshold must be between 0 and 1, not {threshold}"),
        ));
    }
    Ok(Some(AdaptiveRule::new(max, threshold, confidence)))
}

/// Reads `--baseline` for suite `suite`: a partial merge cannot say what happened to the tasks it
/// lacks, and another suite's results are refused unless `any_suite` (`--baseline-any-suite`).
pub fn read_baseline(path: &Path, suite: &str, any_suite: bool) -> Result<ResultsFile, EvalError> {
    let baseline = read_results(path).map_err(|message| EvalError::input(path, message))?;
    let refuse = |message: String| Err(EvalError::input(path, message));
    // Two rows of one run would count it twice in the comparison.
    if let Err(problem) = check_rows(&baseline) {
        return refuse(format!("--baseline `{}` {problem}", path.display()));
    }
    if baseline.partial {
        return refuse(format!(
            "--baseline `{}` is a partial merge (shards {} missing): compare with complete results",
            path.display(),
            list_shards(&baseline.missing_shards)
        ));
    }
    if baseline.suite.name != suite && !any_suite {
        return refuse(format!(
            "--baseline `{}` is from suite {:?}, this is suite {:?} (--baseline-any-suite compares anyway)",
            path.display(),
            baseline.suite.name,
            suite
        ));
    }
    Ok(baseline)
}
