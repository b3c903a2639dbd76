//! The evaluation report in four formats, each a pure function of the results (and the baseline
//! comparison): a table for people, JSON for machines, Markdown for pull requests, CSV for
//! spreadsheets. All carry the same content.

use comfy_table::{CellAlignment, Table};
use serde_json::{Value, json};

use super::baseline::Comparison;
use super::expect::{Verdict, has_summary};
use super::flaky::FlakyTask;
use super::json_document::{Elements, JsonDocument};
use super::render_models::ModelMatrix;
use super::render_shared::{FAILED_SHOWN, PassRate, TaskRates, pass_rates, percent, share};
use super::render_stats::{StatsView, marked, paired_lines};
use super::report_sink::ReportSink;
use super::results::{ResultsFile, TaskResult};
use crate::plural;
use crate::run::ExitReason;
use crate::stats::StatsOptions;
use crate::terminal::Style;
use crate::text::markdown_cell;

/// Report formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    /// Tables for a terminal.
    Table,
    /// One JSON document.
    Json,
    /// Markdown tables.
    Markdown,
    /// Long-format CSV: `section,key,count,share,detail`.
    Csv,
}

/// Renders the report, the table as for a pipe.
pub fn render_report(
    results: &ResultsFile,
    comparison: Option<&Comparison>,
    format: ReportFormat,
) -> String {
    render_report_styled(results, comparison, format, Style::plain())
}

/// Renders the report, the table in `style`; with a width, the failed tasks shown are cut at
/// [`FAILED_SHOWN`].
pub fn render_report_styled(
    results: &ResultsFile,
    comparison: Option<&Comparison>,
    format: ReportFormat,
    style: Style,
) -> String {
    render_report_with(results, comparison, None, format, style)
}

/// [`render_report_styled`] with the pass rates of a repeated evaluation given, for results
/// that hold only some rows (an evaluation keeps its failing rows and each task's counts while
/// the rest stay on disk); without them, they are counted from the rows.
pub fn render_report_with<'a>(
    results: &'a ResultsFile,
    comparison: Option<&'a Comparison>,
    pass_rates: Option<Vec<PassRate<'a>>>,
    format: ReportFormat,
    style: Style,
) -> String {
    let stats = StatsOptions::default();
    let mut text = Vec::new();
    let written = write_report_full(
        results,
        comparison,
        pass_rates.map(TaskRates::Listed),
        &stats,
        &[],
        format,
        style,
        &mut text,
    );
    // Writing to memory does not fail, and every piece written is text.
    debug_assert!(written.is_ok());
    String::from_utf8(text).unwrap_or_default()
}

/// Writes the report as [`render_report_with`] renders it, to `out`, with the statistics'
/// options (`--confidence`, `--pass-at`) and the flaky tasks' divergences. The CSV, Markdown
/// and JSON reports are handed on a chunk at a time, their rows per task made as they go.
#[allow(clippy::too_many_arguments)]
pub fn write_report_full<'a>(
    results: &'a ResultsFile,
    comparison: Option<&'a Comparison>,
    pass_rates: Option<TaskRates<'a>>,
    stats: &StatsOptions,
    flaky: &'a [FlakyTask],
    format: ReportFormat,
    style: Style,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut report = Report::new(results, comparison);
    if pass_rates.is_some() {
        report.pass_rates = pass_rates;
    }
    report.stats = stats.clone();
    report.flaky = flaky;
    report.style = style;
    let mut sink = ReportSink::new(out);
    match format {
        ReportFormat::Table => sink.push_str(&report.table()),
        ReportFormat::Json => report.json(&mut sink),
        ReportFormat::Markdown => report.markdown(&mut sink),
        ReportFormat::Csv => report.csv(&mut sink),
    }
    sink.finish()
}

/// The report in one line, for `--quiet`: the title, the tasks per exit reason, the
/// expectations and, with a baseline, the regressions. `pass_rates` as for
/// [`render_report_with`]: the title counts a repeated evaluation's tasks from them.
pub fn summary_line<'a>(
    results: &'a ResultsFile,
    comparison: Option<&'a Comparison>,
    pass_rates: Option<TaskRates<'a>>,
) -> String {
    let mut report = Report::new(results, comparison);
    if pass_rates.is_some() {
        report.pass_rates = pass_rates;
    }
    let reasons: Vec<String> = report
        .rows
        .iter()
        .map(|(reason, count, _)| format!("{count} {reason}"))
        .collect();
    let e = results.totals.expectations;
    let mut line = format!(
        "{}: {}; expectations {} met, {} failed, {} without",
        report.title(),
        reasons.join(", "),
        e.met,
        e.failed,
        e.none
    );
    if let Some(c) = comparison {
        line.push_str(&format!(
            "; {} against the baseline",
            plural(c.regressions.len() as u64, "regression", "regressions")
        ));
        if let Some(v) = c.paired.as_ref().filter(|_| c.tested()) {
            let finding = if v.regression {
                "statistically clear"
            } else {
                "not statistically clear"
            };
            line.push_str(&format!(
                " ({finding}: {} test p = {})",
                v.test.as_str(),
                super::render_stats::p_text(v.p_value.unwrap_or(1.0))
            ));
        }
    }
    line.push('\n');
    line
}

/// The label of an exit reason in reports: budget exhaustion says what it is.
pub fn reason_label(reason: ExitReason) -> &'static str {
    match reason {
        ExitReason::Finished => "finished",
        ExitReason::MaxStepsExceeded => "max_steps_exceeded (budget exhausted)",
        ExitReason::InvalidModelOutput => "invalid_model_output",
        ExitReason::InternalError => "internal_error",
    }
}

/// Said once under the failed tasks when a reason shows text only as its summary.
pub const SUMMARY_NOTE: &str =
    "Answers are shown as summaries (chars=N;sha256=...): run with --capture full to see them.";

struct Report<'a> {
    style: Style,
    results: &'a ResultsFile,
    comparison: Option<&'a Comparison>,
    rows: Vec<(ExitReason, usize, f64)>,
    /// The failing rows: the task (with its repeat, if any), exit reason and why.
    failed: Vec<(String, &'a TaskResult, String)>,
    /// Each task's passing runs and runs, in suite order (`None` only when given none to count).
    pass_rates: Option<TaskRates<'a>>,
    /// Whether tasks ran more than once (`--repeat`): the report then has its repeats section.
    repeated: bool,
    /// `--confidence` and `--pass-at`.
    stats: StatsOptions,
    /// The flaky tasks with where their runs diverged, when looked for.
    flaky: &'a [FlakyTask],
}

/// Whether the rows are repeats.
fn repeated(results: &ResultsFile) -> bool {
    results.repeats.unwrap_or(1) > 1 || results.tasks.iter().any(|t| t.repeat.is_some())
}

impl<'a> Report<'a> {
    fn new(results: &'a ResultsFile, comparison: Option<&'a Comparison>) -> Self {
        let total = results.totals.tasks;
        let rows = ExitReason::ALL
            .iter()
            .map(|r| {
                let count = results.totals.exit_reasons.get(r).copied().unwrap_or(0);
                (*r, count, share(count, total))
            })
            .collect();
        let failed = results
            .tasks
            .iter()
            .filter(|t| t.fails())
            .map(|t| {
                let why = if t.expectation == Verdict::Failed {
                    t.failures.join("; ")
                } else {
                    format!(
                        "internal error ({}) in a task without expectations",
                        t.error_kind.as_deref().unwrap_or("unclassified")
                    )
                };
                (t.label(), t, why)
            })
            .collect();
        Report {
            style: Style::plain(),
            results,
            comparison,
            rows,
            failed,
            pass_rates: pass_rates(results).map(TaskRates::Listed),
            repeated: repeated(results),
            stats: StatsOptions::default(),
            flaky: &[],
        }
    }

    /// The flaky tasks' divergences, one line each.
    fn divergence_lines(&self) -> Vec<String> {
        self.flaky
            .iter()
            .map(|f| {
                format!(
                    "{}: {} of {} passed; {}",
                    f.id,
                    f.passed,
                    plural(u64::from(f.runs), "run", "runs"),
                    f.divergence.describe()
                )
            })
            .collect()
    }

    /// The statistics of the tasks' pass rates.
    fn statistics(&self) -> Option<StatsView<'_, 'a>> {
        self.pass_rates
            .as_ref()
            .map(|rates| StatsView::of(rates, &self.stats))
    }

    /// The paired test, when the comparison ran one.
    fn paired(&self) -> Option<&'a crate::stats::PairedVerdict> {
        self.comparison.and_then(|c| c.paired.as_ref())
    }

    /// The models side by side, when the rates name more than one.
    fn matrix(&self) -> Option<ModelMatrix> {
        (self.pass_rates.as_ref()).and_then(|rates| ModelMatrix::of_rates(rates.iter()))
    }

    /// The pass rates the repeats section shows: only when tasks ran more than once.
    fn repeat_rates(&self) -> Option<&TaskRates<'a>> {
        self.pass_rates.as_ref().filter(|_| self.repeated)
    }

    fn title(&self) -> String {
        let r = self.results;
        let mut title = format!(
            "Suite {:?}: {}",
            r.suite.name,
            plural(r.totals.tasks as u64, "task", "tasks")
        );
        if let Some(repeats) = r.repeats.filter(|n| *n > 1) {
            let runs = r.totals.tasks as u64;
            // The tasks that ran, counted: an interrupted run or a partial merge has tasks
            // with fewer repeats, so the runs divided by the repeats would miscount them.
            let tasks = self
                .pass_rates
                .as_ref()
                .map_or(runs / u64::from(repeats), |rates| rates.len() as u64);
            let matrix = self.matrix();
            let shape = if let Some(matrix) = matrix
                .filter(|m| (m.tasks.len() * m.models.len()) as u64 * u64::from(repeats) == runs)
            {
                format!(
                    "{} × {} × {repeats} repeats",
                    plural(matrix.tasks.len() as u64, "task", "tasks"),
                    plural(matrix.models.len() as u64, "model", "models")
                )
            } else if tasks * u64::from(repeats) == runs {
                format!("{} × {repeats} repeats", plural(tasks, "task", "tasks"))
            } else {
                format!(
                    "{}, up to {repeats} repeats each",
                    plural(tasks, "task", "tasks")
                )
            };
            title = format!(
                "Suite {:?}: {} ({shape})",
                r.suite.name,
                plural(runs, "run", "runs"),
            );
        }
        if let Some(shard) = r.shard {
            title.push_str(&format!(
                " (shard {}/{} of {})",
                shard.index, shard.count, r.suite.tasks
            ));
        }
        if r.interrupted {
            title.push_str(", interrupted before every task ran");
        }
        if r.partial {
            title.push_str(&format!(
                ", partial: shards {} missing",
                super::shard::list_shards(&r.missing_shards)
            ));
        }
        title
    }

    /// What a row of the results is: a task, or one run of a task when tasks repeat.
    fn unit(&self) -> (&'static str, &'static str) {
        if self.results.repeats.is_some_and(|n| n > 1) {
            ("run", "runs")
        } else {
            ("task", "tasks")
        }
    }

    fn denominator_note(&self) -> String {
        let (one, many) = self.unit();
        format!(
            "Shares are of all {}, internal errors included.",
            plural(self.results.totals.tasks as u64, one, many)
        )
    }

    fn expectations_line(&self) -> String {
        let e = self.results.totals.expectations;
        format!(
            "Expectations: {} met, {} failed, {} without expectations",
            e.met, e.failed, e.none
        )
    }

    fn pass_rate_line(&self, rates: &TaskRates<'_>) -> String {
        let every = rates.iter().filter(|r| r.passed == r.runs).count();
        let never = rates.iter().filter(|r| r.passed == 0).count();
        let flaky: Vec<String> = (rates.iter().filter(|r| r.flaky()))
            .map(|r| r.id.into_owned())
            .collect();
        let mut line = format!(
            "Repeats: {} passed every repeat, {} failed every repeat, {} flaky",
            plural(every as u64, "task", "tasks"),
            never,
            flaky.len()
        );
        if !flaky.is_empty() {
            line.push_str(&format!(" ({})", flaky.join(", ")));
        }
        line
    }

    fn transitions(&self) -> Vec<(ExitReason, ExitReason, usize)> {
        self.comparison
            .map(|c| {
                c.transitions
                    .iter()
                    .map(|((a, b), n)| (*a, *b, *n))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn table(&self) -> String {
        let style = self.style;
        let mut out = format!("{}\n\n", self.title());
        let mut table = style.table(vec!["exit reason", self.unit().1, "share"]);
        for (reason, count, share) in &self.rows {
            style.add_row(
                &mut table,
                vec![
                    reason_label(*reason).to_owned(),
                    count.to_string(),
                    percent(*share),
                ],
            );
        }
        align_right(&mut table, &[1, 2]);
        out.push_str(&format!(
            "{table}\n{}\n\n{}\n",
            self.denominator_note(),
            self.expectations_line()
        ));
        if !self.failed.is_empty() {
            let mut table = style.table(vec!["failed task", "exit reason", "why"]);
            let shown = match style.width {
                Some(_) => FAILED_SHOWN,
                None => usize::MAX,
            };
            for (id, task, why) in self.failed.iter().take(shown) {
                style.add_row(
                    &mut table,
                    vec![id.clone(), task.exit_reason.to_string(), why.clone()],
                );
            }
            out.push_str(&format!("\n{table}\n"));
            if self.failed.len() > shown {
                out.push_str(&format!(
                    "and {} more (see results.json)\n",
                    self.failed.len() - shown
                ));
            }
            if self.failed.iter().any(|(_, _, why)| has_summary(why)) {
                out.push_str(SUMMARY_NOTE);
                out.push('\n');
            }
        }
        if let Some(matrix) = self.matrix() {
            out.push_str("\nModels side by side (passing runs / runs):\n");
            let (header, rows) = matrix.cells();
            let mut table = style.table(header.iter().map(String::as_str).collect());
            for row in rows {
                style.add_row(&mut table, row);
            }
            let columns: Vec<usize> = (1..header.len()).collect();
            align_right(&mut table, &columns);
            out.push_str(&format!("{table}\n"));
        }
        if let Some(rates) = self.repeat_rates() {
            out.push_str(&format!("\n{}\n", self.pass_rate_line(rates)));
            for line in self.divergence_lines() {
                out.push_str(&format!("  {line}\n"));
            }
            let below: Vec<PassRate<'_>> = rates.iter().filter(|r| r.passed < r.runs).collect();
            if !below.is_empty() {
                let matrix = ModelMatrix::of_rates(rates.iter()).is_some();
                let mut table = style.table(vec!["task", "passed", "pass rate", "flaky"]);
                for r in below {
                    style.add_row(
                        &mut table,
                        vec![
                            if matrix {
                                format!("{}[{}]", r.id, r.model)
                            } else {
                                r.id.to_string()
                            },
                            format!("{}/{}", r.passed, r.runs),
                            percent(r.rate()),
                            if r.flaky() { "yes" } else { "" }.to_owned(),
                        ],
                    );
                }
                align_right(&mut table, &[1, 2]);
                out.push_str(&format!("{table}\n"));
            }
        }
        if let Some(view) = self.statistics() {
            out.push_str(&view.table(&style, self.repeated));
        }
        if let Some(c) = self.comparison {
            out.push_str("\nCompared with the baseline:\n");
            let mut table = style.table(vec!["baseline", "now", "tasks"]);
            for (a, b, n) in self.transitions() {
                style.add_row(
                    &mut table,
                    vec![a.to_string(), b.to_string(), n.to_string()],
                );
            }
            align_right(&mut table, &[2]);
            out.push_str(&format!("{table}\n"));
            if let Some(v) = self.paired() {
                for line in paired_lines(v, self.stats.confidence) {
                    out.push_str(&format!("{line}\n"));
                }
            }
            out.push_str(&list_block(
                "Regressions",
                &marked(&c.regressions, self.paired()),
            ));
            out.push_str(&list_block(
                "Improvements",
                &marked(&c.improvements, self.paired()),
            ));
            if !c.added.is_empty() {
                out.push_str(&format!("New tasks: {}\n", c.added.join(", ")));
            }
            if !c.removed.is_empty() {
                out.push_str(&format!(
                    "Tasks no longer in the suite: {}\n",
                    c.removed.join(", ")
                ));
            }
        }
        style.finish(&out)
    }

    fn markdown(&self, out: &mut ReportSink<'_>) {
        out.push_str(&format!(
            "### {}\n\n| exit reason | {} | share |\n|---|---:|---:|\n",
            markdown_cell(&self.title()),
            self.unit().1
        ));
        for (reason, count, share) in &self.rows {
            out.push_str(&format!(
                "| {} | {count} | {} |\n",
                reason_label(*reason),
                percent(*share)
            ));
        }
        out.push_str(&format!(
            "\n{}\n\n{}\n",
            self.denominator_note(),
            self.expectations_line()
        ));
        if !self.failed.is_empty() {
            out.push_str("\n| failed task | exit reason | why |\n|---|---|---|\n");
            for (id, task, why) in &self.failed {
                out.push_str(&format!(
                    "| `{id}` | {} | {} |\n",
                    task.exit_reason,
                    markdown_cell(why)
                ));
            }
        }
        if let Some(rates) = self.repeat_rates() {
            out.push_str(&format!("\n{}\n", self.pass_rate_line(rates)));
            for line in self.divergence_lines() {
                out.push_str(&format!("\n- {}\n", markdown_cell(&line)));
            }
            let below: Vec<PassRate<'_>> = rates.iter().filter(|r| r.passed < r.runs).collect();
            if !below.is_empty() {
                out.push_str("\n| task | passed | pass rate | flaky |\n|---|---:|---:|---|\n");
                for r in below {
                    out.push_str(&format!(
                        "| `{}` | {}/{} | {} | {} |\n",
                        r.id,
                        r.passed,
                        r.runs,
                        percent(r.rate()),
                        if r.flaky() { "yes" } else { "" }
                    ));
                }
            }
        }
        if let Some(view) = self.statistics() {
            view.markdown(out, self.repeated);
        }
        if let Some(c) = self.comparison {
            out.push_str(
                "\n#### Compared with the baseline\n\n| baseline | now | tasks |\n|---|---|---:|\n",
            );
            for (a, b, n) in self.transitions() {
                out.push_str(&format!("| {a} | {b} | {n} |\n"));
            }
            if let Some(v) = self.paired() {
                out.push_str("\n");
                for line in paired_lines(v, self.stats.confidence) {
                    out.push_str(&format!("{}\n\n", markdown_cell(&line)));
                }
            }
            for (title, items) in [
                ("Regressions", &marked(&c.regressions, self.paired())),
                ("Improvements", &marked(&c.improvements, self.paired())),
            ] {
                out.push_str(&format!(
                    "\n**{title}:**{}\n",
                    if items.is_empty() { " none" } else { "" }
                ));
                for (id, why) in items {
                    out.push_str(&format!("- `{id}`: {}\n", markdown_cell(why)));
                }
            }
            for (title, ids) in [
                ("New tasks", &c.added),
                ("Tasks no longer in the suite", &c.removed),
            ] {
                if !ids.is_empty() {
                    let ids: Vec<String> = ids.iter().map(|id| format!("`{id}`")).collect();
                    out.push_str(&format!("\n**{title}:** {}\n", ids.join(", ")));
                }
            }
        }
    }

    fn json(&self, out: &mut ReportSink<'_>) {
        let r = self.results;
        let mut value = json!({
            "suite": r.suite.name,
            "tasks": r.totals.tasks,
            "shard": r.shard.map(|s| json!({"index": s.index, "count": s.count})),
            "interrupted": r.interrupted,
            "exit_reasons": self.rows.iter().map(|(reason, count, share)| json!({
                "exit_reason": reason.as_str(),
                "label": reason_label(*reason),
                "tasks": count,
                "share": share,
            })).collect::<Vec<_>>(),
            "share_denominator": "all tasks, internal errors included",
            "expectations": r.totals.expectations,
            "failed_tasks": self.failed.iter().map(|(_, task, _)| {
                let mut row = json!({"id": task.id, "exit_reason": task.exit_reason.as_str(), "failures": task.failures});
                if let Some(k) = task.repeat {
                    row["repeat"] = json!(k);
                }
                row
            }).collect::<Vec<_>>(),
        });
        if let Some(rates) = self.repeat_rates() {
            value["repeats"] = json!(r.repeats);
            value["flaky_tasks"] = rates.iter().filter(|p| p.flaky()).map(|p| p.id).collect();
            if !self.flaky.is_empty() {
                value["flakiness"] = json!(self.flaky);
            }
        }
        if let Some(matrix) = self.matrix() {
            value["models"] = matrix.json();
        }
        if r.partial {
            value["partial"] = json!(true);
            value["missing_shards"] = json!(r.missing_shards);
        }
        if let Some(c) = self.comparison {
            value["baseline"] = json!({
                "transitions": self.transitions().iter().map(|(a, b, n)| json!({"from": a.as_str(), "to": b.as_str(), "tasks": n})).collect::<Vec<_>>(),
                "regressions": pairs(&c.regressions),
                "improvements": pairs(&c.improvements),
                "added": c.added,
                "removed": c.removed,
            });
            if let Some(v) = self.paired() {
                value["baseline"]["paired"] = json!(v);
            }
        }
        // The arrays with an element per task are made as the document is written.
        let view = self.statistics();
        let mut document = JsonDocument::of(value);
        if let Some(rates) = self.repeat_rates() {
            let each_rate: Elements<'_> = Box::new(move |each| {
                for p in rates {
                    let rate = json!({"id": p.id, "passed": p.passed, "runs": p.runs, "pass_rate": p.rate(), "flaky": p.flaky()});
                    if !each(rate) {
                        break;
                    }
                }
            });
            document.insert("pass_rates", JsonDocument::Each(each_rate));
        }
        if let Some(view) = &view {
            document.insert("statistics", view.json());
        }
        if serde_json::to_writer_pretty(&mut *out, &document).is_ok() {
            out.push_str("\n");
        }
    }

    fn csv(&self, out: &mut ReportSink<'_>) {
        out.push_str("section,key,count,share,detail\n");
        for (reason, count, share) in &self.rows {
            out.push_str(&csv_row(&[
                "exit_reason",
                reason.as_str(),
                &count.to_string(),
                &format!("{share:.4}"),
                reason_label(*reason),
            ]));
        }
        let e = self.results.totals.expectations;
        for (key, n) in [("met", e.met), ("failed", e.failed), ("none", e.none)] {
            out.push_str(&csv_row(&["expectations", key, &n.to_string(), "", ""]));
        }
        for (id, task, why) in &self.failed {
            out.push_str(&csv_row(&[
                "failed_task",
                id,
                "",
                "",
                &format!("{}: {why}", task.exit_reason),
            ]));
        }
        for rate in self.repeat_rates().into_iter().flatten() {
            out.push_str(&csv_row(&[
                "pass_rate",
                &rate.id,
                &rate.passed.to_string(),
                &format!("{:.4}", rate.rate()),
                &format!(
                    "{} runs{}",
                    rate.runs,
                    if rate.flaky() { ", flaky" } else { "" }
                ),
            ]));
        }
        for f in self.flaky {
            out.push_str(&csv_row(&[
                "flaky",
                &f.id,
                &f.passed.to_string(),
                &format!("{:.4}", f64::from(f.passed) / f64::from(f.runs.max(1))),
                &f.divergence.describe(),
            ]));
        }
        if let Some(view) = self.statistics() {
            view.csv(out, &|fields| csv_row(fields));
        }
        if let Some(c) = self.comparison {
            if let Some(v) = self.paired() {
                out.push_str(&csv_row(&[
                    "paired_test",
                    v.test.as_str(),
                    &v.tasks.to_string(),
                    &v.p_value.map_or(String::new(), |p| format!("{p:.6}")),
                    &format!(
                        "worse={};better={};ties={};regression={};difference={:.4};ci_low={:.4};ci_high={:.4}",
                        v.worse, v.better, v.ties, v.regression, v.difference, v.ci_low, v.ci_high
                    ),
                ]));
            }
            for (a, b, n) in self.transitions() {
                out.push_str(&csv_row(&[
                    "transition",
                    &format!("{a}->{b}"),
                    &n.to_string(),
                    "",
                    "",
                ]));
            }
            for (id, why) in &c.regressions {
                out.push_str(&csv_row(&["regression", id, "", "", why]));
            }
            for (id, why) in &c.improvements {
                out.push_str(&csv_row(&["improvement", id, "", "", why]));
            }
            for id in &c.added {
                out.push_str(&csv_row(&["added", id, "", "", ""]));
            }
            for id in &c.removed {
                out.push_str(&csv_row(&["removed", id, "", "", ""]));
            }
        }
    }
}

fn align_right(table: &mut Table, columns: &[usize]) {
    for &i in columns {
        if let Some(column) = table.column_mut(i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
}

fn list_block(title: &str, items: &[(String, String)]) -> String {
    if items.is_empty() {
        return format!("{title}: none\n");
    }
    let mut out = format!("{title}:\n");
    for (id, why) in items {
        out.push_str(&format!("  {id}: {why}\n"));
    }
    out
}

fn pairs(items: &[(String, String)]) -> Vec<Value> {
    items
        .iter()
        .map(|(id, why)| json!({"id": id, "why": why}))
        .collect()
}

/// One CSV row, quoting fields that need it (RFC 4180). Every cell goes through
/// [`crate::text::csv_text`]: task ids and reasons come from suites and traces, and a leading
/// `=`, `+`, `-` or `@` is a formula to spreadsheets.
fn csv_row(fields: &[&str]) -> String {
    let quoted: Vec<String> = fields
        .iter()
        .map(|f| crate::text::csv_text(f))
        .map(|f| {
            if f.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                f.into_owned()
            }
        })
        .collect();
    quoted.join(",") + "\n"
}
