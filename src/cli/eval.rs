//! `looptrace eval`: turns the arguments into a request, plans and runs it through the library's
//! engine with the console's progress, the OTLP push and the HTML page's fold of the runs as
//! they are written as observers, then writes the HTML page and prints the report and the
//! messages.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use super::otlp_push::EvalPush;
use super::progress::{Progress, ProgressMode};
use super::{CliError, CliResult, Outcome};
use looptrace::eval::engine::{
    EvalObserver, EvalOutcome, EvalPlan, EvalVerdict, NoticeKind, rebuild_view,
};
use looptrace::eval::store::{RESULTS_NAME, RUNS_DIR};
use looptrace::eval::{Comparison, ResultsFile, TaskRates, TaskResult};
use looptrace::html::{PageRuns, ResultsPage};
use looptrace::report::{LiveFold, RowMode};
use looptrace::trace::RunTap;

pub use super::eval_args::{EvalArgs, FormatArg, VerdictArgs};

/// Runs `looptrace eval`.
pub fn run(args: EvalArgs) -> CliResult {
    if let Some(dir) = &args.rebuild_view {
        return rebuild(dir);
    }
    let request = args.request()?;
    let otlp = EvalPush::start(args.otlp_endpoint.as_deref())?;
    let plan = EvalPlan::new(request)?;
    print_notices(plan.notices(), args.quiet);
    // A first Ctrl-C or SIGTERM (what CI runners and `kill` send) stops scheduling; a second
    // signal ends the process at once, killing the process groups of running tools and gates
    // first. The shutdown hook is registered first so that it sees the flag as the previous
    // signal left it.
    let stop = plan.stop_flag();
    let signals = [
        (signal_hook::consts::SIGINT, 130),
        (signal_hook::consts::SIGTERM, 143),
    ];
    looptrace::process::groups::exit_on_signal(&signals, Some(Arc::clone(&stop)));
    for (signal, _) in signals {
        let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
    }
    let mode = match (args.quiet, args.progress) {
        (true, _) => ProgressMode::None,
        (false, Some(mode)) => mode,
        (false, None) => ProgressMode::for_stderr(),
    };
    let out = plan.out().to_path_buf();
    // The page is built from the runs as they are written, not from the files read again.
    let fold = args
        .verdicts
        .html
        .as_ref()
        .map(|_| Arc::new(LiveFold::new(RowMode::Timelines)));
    let console = Console {
        progress: Progress::new(plan.runs_planned(), plan.repeats(), mode),
        otlp: Some(&otlp),
        out: &out,
        quiet: args.quiet,
        fold: fold.clone(),
    };
    let outcome = plan.execute(&console)?;
    drop(console);
    print_notices(&outcome.notices, args.quiet);
    if let (Some(html), Some(_)) = (&args.verdicts.html, &outcome.traces) {
        write_html(html, &outcome, &args, fold)?;
    }
    let flaky = if args.quiet {
        Vec::new()
    } else {
        outcome.flaky_tasks()
    };
    print_report(
        &outcome.shown,
        outcome.comparison.as_ref(),
        outcome.pass_rates(),
        &args.verdicts.stats.options(),
        &flaky,
        args.format,
        args.quiet,
    )?;
    if let (Some(traces), false) = (&outcome.traces, args.quiet) {
        let (runs, bytes) = outcome.store_size();
        eprintln!(
            "results: {} (traces in {}; `{}` holds {}, {})",
            outcome.results_path.display(),
            traces.display(),
            outcome.out.join(RUNS_DIR).display(),
            looptrace::plural(runs as u64, "run", "runs"),
            looptrace::human_bytes(bytes)
        );
    }
    print_notices(&outcome.closing, false);
    Ok(outcome_of(outcome.verdict))
}

/// The console's observer: the progress line, and the OTLP push of each run as it ends.
struct Console<'a> {
    progress: Option<Progress>,
    otlp: Option<&'a EvalPush>,
    out: &'a Path,
    quiet: bool,
    /// The HTML page's fold of every run written, with `--html`.
    fold: Option<Arc<LiveFold>>,
}

impl EvalObserver for Console<'_> {
    fn run_finished(&self, done: usize, row: &TaskResult) {
        if let Some(progress) = &self.progress {
            progress.task_done(done, row);
        }
        if let Some(otlp) = self.otlp {
            otlp.run_ended(self.out, row);
        }
    }

    fn finished(&self) {
        if let Some(progress) = &self.progress {
            progress.finish();
        }
        if let Some(otlp) = self.otlp {
            otlp.finish(self.quiet);
        }
    }

    fn trace_tap(&self) -> Option<Arc<dyn RunTap>> {
        self.fold
            .as_ref()
            .map(|fold| Arc::clone(fold) as Arc<dyn RunTap>)
    }
}

/// Prints notices on stderr; a quiet console leaves out the summaries.
fn print_notices(notices: &[looptrace::eval::engine::Notice], quiet: bool) {
    for notice in notices {
        if !(quiet && notice.kind == NoticeKind::Summary) {
            eprintln!("{notice}");
        }
    }
}

/// Writes `--html` from the outcome: every row, and the baseline's view when there is one. The
/// runs are those `fold` saw written (files are read only for rows kept from earlier runs).
fn write_html(
    path: &Path,
    outcome: &EvalOutcome,
    args: &EvalArgs,
    fold: Option<Arc<LiveFold>>,
) -> Result<(), CliError> {
    let results = &outcome.results;
    let view = outcome
        .baseline
        .as_ref()
        .zip(outcome.comparison.as_ref())
        .map(|(b, c)| looptrace::html::baseline_of(c, b, results));
    let title = format!("looptrace eval: {}", results.suite.name);
    let folder = |_: &TaskResult| outcome.out.clone();
    // Every writer is gone once the evaluation has returned; were one not, the files are read.
    let folded = fold
        .and_then(|fold| Arc::try_unwrap(fold).ok())
        .and_then(LiveFold::finish);
    let stats = args.verdicts.stats.options();
    let page = ResultsPage {
        title: &title,
        results,
        baseline: view.as_ref(),
        stats: &stats,
        paired: outcome.comparison.as_ref().and_then(|c| c.paired.as_ref()),
    };
    super::html::write_results_page(path, &page, &folder, PageRuns::Folded(folded))
}

/// `eval --rebuild-view DIR`.
fn rebuild(dir: &Path) -> CliResult {
    let (view, converted) = rebuild_view(dir)?;
    let (results_path, head) = (dir.join(RESULTS_NAME), view.eval_id.unwrap_or_default());
    if converted {
        eprintln!(
            "converted `{}` (results format 1) into the run `{}`",
            results_path.display(),
            dir.join(RUNS_DIR).join(&head).display()
        );
    }
    eprintln!(
        "rebuilt `{}` from the run `{head}` ({})",
        results_path.display(),
        looptrace::plural(view.tasks.len() as u64, "row", "rows")
    );
    Ok(Outcome::Success)
}

/// The exit code of a verdict.
pub(super) fn outcome_of(verdict: EvalVerdict) -> Outcome {
    match verdict {
        EvalVerdict::Passed => Outcome::Success,
        EvalVerdict::Failed => Outcome::Failures,
    }
}

/// Prints the report; `pass_rates`, when given, are those of rows the results do not hold.
pub(super) fn print_report<'a>(
    results: &'a ResultsFile,
    comparison: Option<&'a Comparison>,
    pass_rates: Option<TaskRates<'a>>,
    stats: &looptrace::stats::StatsOptions,
    flaky: &'a [looptrace::eval::FlakyTask],
    format: FormatArg,
    quiet: bool,
) -> Result<(), CliError> {
    let mut out = super::common::outcome_stdout();
    let packed = match &pass_rates {
        Some(TaskRates::Packed(counts)) => Some(*counts),
        _ => None,
    };
    if quiet {
        let line = looptrace::eval::summary_line(results, comparison, pass_rates);
        out.write_all(line.as_bytes())?;
    } else {
        let style = super::common::stdout_style();
        looptrace::eval::write_report_full(
            results,
            comparison,
            pass_rates,
            stats,
            flaky,
            format.into(),
            style,
            &mut out,
        )?;
    }
    out.flush()?;
    match packed.and_then(|counts| counts.unread()) {
        Some(why) => Err(CliError::internal(why)),
        None => Ok(()),
    }
}
