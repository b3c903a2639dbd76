//! `looptrace merge`: shard results combined into the results of the whole suite, with proof that
//! every task ran exactly once per repeat, and the reports and comparisons `eval` makes. The
//! library's [`MergePlan`] does the work; this file writes the HTML page and prints.

use std::path::PathBuf;

use clap::Args;

use super::CliResult;
use super::eval::{FormatArg, VerdictArgs, outcome_of, print_report};
use looptrace::eval::engine::{MergePlan, MergeRequest};

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
    let request = MergeRequest {
        results: args.results.clone(),
        out: args.out.clone(),
        junit: args.verdicts.junit.clone(),
        html: args.verdicts.html.clone(),
        baseline: args.verdicts.baseline.clone(),
        baseline_any_suite: args.verdicts.baseline_any_suite,
        suite: args.suite.clone(),
        allow_partial: args.allow_partial,
        regression_test: args.verdicts.stats.test(),
        confidence: args.verdicts.stats.confidence,
    };
    let plan = MergePlan::new(request)?;
    for notice in plan.notices() {
        eprintln!("{notice}");
    }
    // The page first: it reads the shards' traces, and a trace it cannot read leaves nothing
    // written.
    if let Some(html) = &args.verdicts.html {
        super::html::write_merged_page(
            html,
            plan.merged(),
            plan.shards(),
            &args.results,
            &args.verdicts.stats.options(),
        )?;
    }
    let outcome = plan.execute()?;
    let flaky = if args.quiet {
        &[][..]
    } else {
        &outcome.flaky[..]
    };
    print_report(
        &outcome.shown,
        outcome.comparison.as_ref(),
        None,
        &args.verdicts.stats.options(),
        flaky,
        args.format,
        args.quiet,
    )?;
    for notice in &outcome.closing {
        eprintln!("{notice}");
    }
    Ok(outcome_of(outcome.verdict))
}
