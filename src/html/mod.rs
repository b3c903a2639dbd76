//! The HTML report: one self-contained page (inline CSS, script and SVG, nothing loaded from
//! anywhere) rendered as a pure function of the report data, like the other report formats.
//!
//! `page` assembles the shell, `charts` draws the sections of the aggregate report as SVG,
//! `stats` the success rates with their intervals as error bars,
//! `models` compares the models of a matrix, `scores` totals each scorer, `table` embeds the runs (filterable and sortable by the page's script), `timeline` their
//! events, and `escape` is the one way trace text reaches the page. `results_page` assembles
//! the page of an evaluation's results from its rows and its runs.

mod charts;
mod escape;
mod models;
mod page;
mod results_page;
mod scores;
mod stats;
mod table;
mod timeline;

use crate::report::{Report, RunTable};
use crate::run::RunOutcome;

pub use escape::{html as escape_html, script_json};
pub use page::render;
pub use results_page::{PageRuns, ResultsPage, baseline_of, render_results, results_runs};

/// Everything one HTML report shows.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// The page's title (`looptrace report`, `looptrace eval: SUITE`, ...).
    pub title: &'a str,
    /// Lines said under the title (inputs, suite, baseline).
    pub context: &'a [String],
    /// The aggregate report over the runs' traces.
    pub report: &'a Report,
    /// One row per run (or task), with its timeline.
    pub runs: &'a RunTable,
    /// What the verdict column holds: `gate` (finish gate verdicts), `expectation`, `replay`.
    pub verdict: &'a str,
    /// The comparison with a baseline, when there is one.
    pub baseline: Option<&'a Baseline>,
    /// The success rates with their intervals (`eval` and `merge` pages).
    pub statistics: Option<&'a Statistics<'a>>,
    /// Models side by side, under a model matrix.
    pub models: Option<&'a crate::eval::ModelMatrix>,
    /// Each scorer's totals (`eval` and `merge` pages whose runs were scored).
    pub scores: &'a [crate::eval::ScoreTotal],
}

/// The statistics an evaluation's page shows.
#[derive(Debug, Clone, Copy)]
pub struct Statistics<'a> {
    /// Each task's.
    pub tasks: &'a [crate::stats::TaskStats],
    /// The suite's.
    pub suite: &'a crate::stats::SuiteStats,
    /// The paired test against the baseline, when there is one.
    pub paired: Option<&'a crate::stats::PairedVerdict>,
}

/// How outcomes moved since a baseline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Baseline {
    /// Tasks per (baseline ending, current ending), for tasks in both.
    pub transitions: Vec<(RunOutcome, RunOutcome, u64)>,
    /// Tasks that got worse, with why.
    pub newly_failing: Vec<(String, String)>,
    /// Tasks that got better, with why.
    pub newly_fixed: Vec<(String, String)>,
    /// Tasks that failed in both.
    pub still_failing: Vec<String>,
}
