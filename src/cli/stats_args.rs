//! `--confidence`, `--pass-at` and `--regression-test`, which `eval` and `merge` take alike, and
//! the checks that refuse a combination before anything runs.

use clap::{Args, ValueEnum};

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
}
