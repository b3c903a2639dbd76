//! `--confidence`, `--pass-at` and `--regression-test`, which `eval` and `merge` take alike, and
//! the checks that refuse a combination before anything runs.

use clap::{Args, ValueEnum};

use super::CliError;
use looptrace::eval::ResultsFile;
use looptrace::stats::{RegressionTest, StatsOptions, check_confidence};

/// The statistics' options.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The confidence of every interval, and 1 minus the level of the regression test.
    #[arg(long, value_name = "LEVEL", default_value_t = looptrace::stats::DEFAULT_CONFIDENCE, value_parser = parse_confidence)]
    pub confidence: f64,
    /// Report pass@k and pass^k for these k (comma-separated, e.g. `1,5`; default 1).
    #[arg(long, value_name = "K,...", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub pass_at: Vec<u32>,
    /// How `--baseline` decides a regression: `sign` (default with repeats on either side),
    /// `mcnemar` (default without), or `none` (any task that moved down).
    #[arg(long, value_enum, value_name = "TEST", requires = "baseline")]
    pub regression_test: Option<RegressionTestArg>,
}

fn parse_confidence(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    check_confidence(value)
}

/// The stopping rule of `--repeat-until-decided MAX --pass-threshold P`, checked.
pub fn adaptive_rule(
    args: &super::eval::EvalArgs,
) -> Result<Option<looptrace::stats::AdaptiveRule>, CliError> {
    let Some(max) = args.repeat_until_decided else {
        return Ok(None);
    };
    if max < 2 {
        return Err(CliError::input(
            "--repeat-until-decided must be at least 2 (one run decides nothing to repeat)",
        ));
    }
    let threshold = args.pass_threshold.unwrap_or(0.5);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(CliError::input(format!(
            "--pass-threshold must be between 0 and 1, not {threshold}"
        )));
    }
    Ok(Some(looptrace::stats::AdaptiveRule::new(
        max,
        threshold,
        args.verdicts.stats.confidence,
    )))
}

/// `--regression-test mcnemar|sign|none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RegressionTestArg {
    /// McNemar's exact test on the tasks that changed (one run a side).
    Mcnemar,
    /// The exact sign test on the tasks' changes in success rate.
    Sign,
    /// No test: any task that moved down is a regression.
    None,
}

impl StatsArgs {
    /// The options of the statistics: each k once, in the order given.
    pub fn options(&self) -> StatsOptions {
        let mut pass_at: Vec<u32> = Vec::new();
        for k in &self.pass_at {
            if !pass_at.contains(k) {
                pass_at.push(*k);
            }
        }
        if pass_at.is_empty() {
            pass_at.push(1);
        }
        StatsOptions {
            confidence: self.confidence,
            pass_at,
        }
    }

    /// The test asked for, if any.
    pub fn test(&self) -> Option<RegressionTest> {
        self.regression_test.map(|t| match t {
            RegressionTestArg::Mcnemar => RegressionTest::Mcnemar,
            RegressionTestArg::Sign => RegressionTest::Sign,
            RegressionTestArg::None => RegressionTest::None,
        })
    }

    /// Refuses, before anything runs, `--regression-test mcnemar` when either side has repeats
    /// (`repeats` runs per task now), and a `--pass-at` k above the runs every task will have.
    pub fn check(&self, repeats: u32, baseline: Option<&ResultsFile>) -> Result<(), CliError> {
        if let Some(k) = self.pass_at.iter().find(|k| **k > repeats) {
            return Err(CliError::input(format!(
                "--pass-at {k} needs at least {k} runs of each task, but --repeat is {repeats} (pass@k and pass^k are not defined for k above the runs)"
            )));
        }
        self.check_test(repeats, baseline)
    }

    /// Refuses `--regression-test mcnemar` when either side has repeats (`repeats` runs per
    /// task now), before anything is written.
    pub fn check_test(&self, repeats: u32, baseline: Option<&ResultsFile>) -> Result<(), CliError> {
        if self.test() != Some(RegressionTest::Mcnemar) {
            return Ok(());
        }
        let baseline_repeats = baseline.is_some_and(|b| {
            b.repeats.unwrap_or(1) > 1 || b.tasks.iter().any(|t| t.repeat.is_some())
        });
        if repeats > 1 || baseline_repeats {
            let side = if repeats > 1 {
                format!("this evaluation runs each task {repeats} times")
            } else {
                "the baseline has repeats".to_owned()
            };
            return Err(CliError::input(format!(
                "--regression-test mcnemar needs one run a side, but {side}: use `sign` (the default with repeats)"
            )));
        }
        Ok(())
    }
}
