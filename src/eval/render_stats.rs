//! The statistics part of the evaluation report (`docs/report.md`, "Statistics"): each task's
//! success rate with its interval, pass@k and pass^k, the suite's means, and the paired test
//! against a baseline, in each of the report's formats. The numbers come from [`crate::stats`];
//! this file only lays them out.

use comfy_table::CellAlignment;
use serde_json::{Value, json};

use super::json_document::{Elements, JsonDocument};
use super::render_shared::{FAILED_SHOWN, TaskRates, percent};
use super::report_sink::ReportSink;
use crate::stats::{
    PairedVerdict, RegressionTest, StatsOptions, SuiteMean, SuiteStats, TaskStats,
    suite_statistics, task_stats,
};
use crate::terminal::Style;
use crate::text::markdown_cell;

/// The statistics of one report. Each task's figures are computed as its row is shown, so a
/// report of a million tasks holds no more than their counts.
pub(super) struct StatsView<'s, 'a> {
    rates: &'s TaskRates<'a>,
    suite: SuiteStats,
    options: StatsOptions,
}

impl<'s, 'a> StatsView<'s, 'a> {
    /// The statistics of `rates` (each task's passing runs and runs).
    pub(super) fn of(rates: &'s TaskRates<'a>, options: &StatsOptions) -> StatsView<'s, 'a> {
        StatsView {
            rates,
            suite: suite_statistics(rates.iter().map(|rate| (rate.runs, rate.passed)), options),
            options: options.clone(),
        }
    }

    /// The statistics of each task that ran, computed one at a time.
    fn tasks(&self) -> impl Iterator<Item = TaskStats> + '_ {
        (self.rates.iter())
            .filter(|rate| rate.runs > 0)
            .map(|rate| task_stats(&rate.counts(), &self.options))
    }

    fn confidence(&self) -> String {
        percent_label(self.options.confidence)
    }

    /// The k shown as columns: pass@1 and pass^1 are the rate itself.
    fn shown_k(&self) -> Vec<String> {
        self.options
            .pass_at
            .iter()
            .filter(|k| **k > 1)
            .map(u32::to_string)
            .collect()
    }

    /// The suite's lines, as sentences.
    fn suite_lines(&self) -> Vec<String> {
        let s = &self.suite;
        let mut lines = vec![format!(
            "Success rate: {} (mean over {}; {} of {} passed; {} Wilson interval)",
            mean_text(&s.rate),
            crate::plural(s.tasks as u64, "task", "tasks"),
            s.successes,
            crate::plural(s.runs, "run", "runs"),
            self.confidence()
        )];
        let mut estimates = Vec::new();
        for (name, means) in [("pass@", &s.pass_at), ("pass^", &s.pass_hat)] {
            // pass@1 and pass^1 are the rate itself.
            for k in self.options.pass_at.iter().filter(|k| **k > 1) {
                let Some(mean) = means.get(&k.to_string()) else {
                    continue;
                };
                let over = if mean.tasks < s.tasks {
                    format!(
                        " (over the {} with at least {k} runs)",
                        crate::plural(mean.tasks as u64, "task", "tasks")
                    )
                } else {
                    String::new()
                };
                estimates.push(format!("{name}{k} {}{over}", mean_text(mean)));
            }
        }
        if !estimates.is_empty() {
            lines.push(estimates.join("; "));
        }
        lines
    }

    fn header(&self) -> Vec<String> {
        let mut header = vec![
            "task".to_owned(),
            "model".to_owned(),
            "passed".to_owned(),
            "rate".to_owned(),
            format!("{} interval", self.confidence()),
        ];
        for k in self.shown_k() {
            header.push(format!("pass@{k}"));
        }
        for k in self.shown_k() {
            header.push(format!("pass^{k}"));
        }
        header
    }

    fn cells(&self, t: &TaskStats) -> Vec<String> {
        let mut cells = vec![
            t.id.clone(),
            t.model.clone(),
            format!("{}/{}", t.successes, t.runs),
            percent(t.rate),
            format!("{} to {}", percent(t.ci_low), percent(t.ci_high)),
        ];
        for k in self.shown_k() {
            cells.push(optional(t.pass_at.get(&k).copied().flatten()));
        }
        for k in self.shown_k() {
            cells.push(optional(t.pass_hat.get(&k).copied().flatten()));
        }
        cells
    }

    /// The section for a terminal: the suite's lines and, with repeats, a table per task (cut at
    /// [`FAILED_SHOWN`] rows when fitted to a terminal).
    pub(super) fn table(&self, style: &Style, repeated: bool) -> String {
        let mut out = String::from("\nStatistics:\n");
        for line in self.suite_lines() {
            out.push_str(&format!("  {line}\n"));
        }
        if !repeated || self.suite.tasks == 0 {
            return out;
        }
        let mut table = style.table(self.header().iter().map(String::as_str).collect());
        let shown = match style.width {
            Some(_) => FAILED_SHOWN,
            None => usize::MAX,
        };
        for t in self.tasks().take(shown) {
            style.add_row(&mut table, self.cells(&t));
        }
        for i in 2..table.column_count() {
            if let Some(column) = table.column_mut(i) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        out.push_str(&format!("{table}\n"));
        if self.suite.tasks > shown {
            out.push_str(&format!(
                "and {} more (see --format json)\n",
                self.suite.tasks - shown
            ));
        }
        out
    }

    /// The section in Markdown, added to `out`.
    pub(super) fn markdown(&self, out: &mut ReportSink<'_>, repeated: bool) {
        out.push_str("\n#### Statistics\n\n");
        for line in self.suite_lines() {
            out.push_str(&format!("- {}\n", markdown_cell(&line)));
        }
        if !repeated || self.suite.tasks == 0 {
            return;
        }
        let header = self.header();
        out.push_str(&format!("\n| {} |\n|", header.join(" | ")));
        for i in 0..header.len() {
            out.push_str(if i < 2 { "---|" } else { "---:|" });
        }
        out.push_str("\n");
        for t in self.tasks() {
            let mut cells = self.cells(&t);
            cells[0] = format!("`{}`", cells[0]);
            let cells: Vec<String> = cells.iter().map(|c| markdown_cell(c)).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }

    /// `statistics` in JSON: `{tasks, suite}`.
    pub(super) fn json(&self) -> JsonDocument<'_> {
        let mut document = JsonDocument::of(json!({"suite": self.suite}));
        let tasks: Elements<'_> = Box::new(|each| {
            for task in self.tasks() {
                if !each(serde_json::to_value(&task).unwrap_or(Value::Null)) {
                    break;
                }
            }
        });
        document.insert("tasks", JsonDocument::Each(tasks));
        document
    }

    /// CSV rows, added to `out`: `task_statistics` per task, `suite_statistics` per figure.
    pub(super) fn csv(&self, out: &mut ReportSink<'_>, row: &dyn Fn(&[&str]) -> String) {
        for t in self.tasks() {
            let mut detail = format!(
                "model={};runs={};ci_low={:.4};ci_high={:.4}",
                t.model, t.runs, t.ci_low, t.ci_high
            );
            for (name, values) in [("pass@", &t.pass_at), ("pass^", &t.pass_hat)] {
                for k in &self.options.pass_at {
                    let value = values.get(&k.to_string()).copied().flatten();
                    detail.push_str(&format!(
                        ";{name}{k}={}",
                        value.map_or("".to_owned(), |v| format!("{v:.4}"))
                    ));
                }
            }
            out.push_str(&row(&[
                "task_statistics",
                &t.id,
                &t.successes.to_string(),
                &format!("{:.4}", t.rate),
                &detail,
            ]));
        }
        let mut figures = vec![("rate".to_owned(), &self.suite.rate)];
        for (name, means) in [
            ("pass@", &self.suite.pass_at),
            ("pass^", &self.suite.pass_hat),
        ] {
            for k in &self.options.pass_at {
                if let Some(mean) = means.get(&k.to_string()) {
                    figures.push((format!("{name}{k}"), mean));
                }
            }
        }
        for (key, mean) in figures {
            let bound = |v: Option<f64>| v.map_or("".to_owned(), |v| format!("{v:.4}"));
            out.push_str(&row(&[
                "suite_statistics",
                &key,
                &mean.tasks.to_string(),
                &bound(mean.mean),
                &format!(
                    "ci_low={};ci_high={};confidence={}",
                    bound(mean.ci_low),
                    bound(mean.ci_high),
                    self.options.confidence
                ),
            ]));
        }
    }
}

/// The paired test's lines, as sentences.
pub(super) fn paired_lines(v: &PairedVerdict, confidence: f64) -> Vec<String> {
    let counts = format!(
        "{} worse, {} better, {} unchanged",
        v.worse, v.better, v.ties
    );
    let test = match v.test {
        RegressionTest::Mcnemar => "McNemar's exact test",
        RegressionTest::Sign => "exact sign test",
        RegressionTest::None => "none",
    };
    let first = match v.p_value {
        Some(p) => {
            let finding = if v.regression {
                "a statistically clear regression"
            } else if v.improvement {
                "a statistically clear improvement"
            } else {
                "no statistically clear change"
            };
            let below = if p < v.level { "below" } else { "not below" };
            format!(
                "Paired test ({test}, over {} both ran): {counts}; p = {}, {below} {}: {finding}.",
                crate::plural(v.tasks as u64, "task", "tasks"),
                p_text(p),
                trim(v.level)
            )
        }
        None => format!(
            "Paired test: none (--regression-test none): a task that moved down is a regression ({counts})."
        ),
    };
    vec![
        first,
        format!(
            "Success rate over those tasks: {} before, {} now; difference {} ({} to {}, {} interval).",
            percent(v.rate_before),
            percent(v.rate_now),
            signed_percent(v.difference),
            signed_percent(v.ci_low),
            signed_percent(v.ci_high),
            percent_label(confidence)
        ),
    ]
}

/// The regressions or improvements, each reason followed by its task's Fisher test.
pub(super) fn marked(
    items: &[(String, String)],
    paired: Option<&PairedVerdict>,
) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(id, why)| {
            let mark = paired
                .and_then(|v| v.change(id))
                .map(|c| {
                    format!(
                        " ({}, p = {})",
                        if c.significant {
                            "significant"
                        } else {
                            "not significant"
                        },
                        p_text(c.p_value)
                    )
                })
                .unwrap_or_default();
            (id.clone(), format!("{why}{mark}"))
        })
        .collect()
}

/// A p-value in four decimals, or `< 0.0001`.
pub(super) fn p_text(p: f64) -> String {
    if p < 0.0001 {
        "< 0.0001".to_owned()
    } else {
        format!("{p:.4}")
    }
}

fn trim(value: f64) -> String {
    let text = format!("{value:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn signed_percent(share: f64) -> String {
    format!("{:+.1}%", share * 100.0)
}

/// `95%`, `99.9%`.
fn percent_label(confidence: f64) -> String {
    format!("{}%", trim(confidence * 100.0))
}

fn optional(value: Option<f64>) -> String {
    value.map_or("-".to_owned(), percent)
}

fn mean_text(mean: &SuiteMean) -> String {
    match (mean.mean, mean.ci_low, mean.ci_high) {
        (Some(m), Some(low), Some(high)) => {
            format!("{} ({} to {})", percent(m), percent(low), percent(high))
        }
        _ => "-".to_owned(),
    }
}
