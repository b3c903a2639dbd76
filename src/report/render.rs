//! Renderers: pure functions from a [`Report`] to bytes, one per output format.
//!
//! The table, Markdown and CSV formats render the same list of sections (a title, a header and
//! rows of typed cells), so they always hold the same content; JSON renders the report's
//! structure directly. Shares and rates are printed as percentages with one decimal in the
//! table and Markdown formats and as fractions with four decimals in CSV and JSON.

use std::fmt::Write as _;

use comfy_table::CellAlignment;
use serde_json::{Map, Value, json};

use super::model::{BUDGETS, DurationSummary, EndingCounts, Report, SpendStats, StepStats};
use crate::run::{ExitReason, RunOutcome};
use crate::terminal::Style;
use crate::text::{csv_text, escape};

/// An output format of `looptrace report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text tables for a terminal.
    Table,
    /// One JSON document.
    Json,
    /// Markdown headings and tables.
    Markdown,
    /// One CSV table in long form: `section,key,subkey,metric,value`.
    Csv,
}

/// What to include besides the sections every report has.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// The exit-reason table per input file as well.
    pub by_file: bool,
    /// The `by_file` entries name source formats (`report --by source`), not files.
    pub by_source: bool,
    /// Borders, width and colour of the table format.
    pub style: Style,
}

/// Renders `report` in `format`.
pub fn render(report: &Report, format: Format, options: RenderOptions) -> Vec<u8> {
    match format {
        Format::Table => render_table(report, options),
        Format::Json => render_json(report, options),
        Format::Markdown => render_markdown(report, options),
        Format::Csv => render_csv(report, options),
    }
}

/// The report in one line, for `--quiet`: runs per ending over all inputs.
pub fn summary_line(report: &Report) -> String {
    let counts = &report.exit_reasons;
    let endings: Vec<String> = RunOutcome::ALL
        .iter()
        .map(|&ending| format!("{} {ending}", counts.get(ending)))
        .collect();
    format!(
        "{} in {}: {}\n",
        plural(counts.total(), "run", "runs"),
        plural(report.input.files, "file", "files"),
        endings.join(", ")
    )
}

/// One cell of a section.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    /// A name.
    Text(String),
    /// A count.
    Count(u64),
    /// A fraction of a whole; `None` when the whole is zero.
    Share(Option<f64>),
    /// A mean; `None` over no runs.
    Mean(Option<f64>),
    /// A number of steps; `None` over no runs.
    Steps(Option<u64>),
    /// An amount (dollars, seconds) shown with this many decimals; `None` when not recorded.
    Amount(Option<f64>, usize),
}

impl Cell {
    fn is_numeric(&self) -> bool {
        !matches!(self, Cell::Text(_))
    }

    /// The cell for people: percentages, `-` for no value; text from traces escaped.
    fn human(&self) -> String {
        match self {
            Cell::Text(text) => escape(text).into_owned(),
            Cell::Count(count) => count.to_string(),
            Cell::Share(Some(share)) => format!("{:.1}%", share * 100.0),
            Cell::Mean(Some(mean)) => format!("{mean:.2}"),
            Cell::Steps(Some(steps)) => steps.to_string(),
            Cell::Amount(Some(amount), decimals) => format!("{amount:.decimals$}"),
            Cell::Share(None) | Cell::Mean(None) | Cell::Steps(None) | Cell::Amount(None, _) => {
                "-".to_owned()
            }
        }
    }

    /// The cell for programs: fractions, empty for no value; text from traces escaped, and never
    /// read as a formula by a spreadsheet.
    fn machine(&self) -> String {
        match self {
            Cell::Text(text) => csv_text(text).into_owned(),
            Cell::Count(count) => count.to_string(),
            Cell::Share(Some(share)) => format!("{share:.4}"),
            Cell::Mean(Some(mean)) => format!("{mean:.4}"),
            Cell::Steps(Some(steps)) => steps.to_string(),
            Cell::Amount(Some(amount), decimals) => format!("{amount:.decimals$}"),
            Cell::Share(None) | Cell::Mean(None) | Cell::Steps(None) | Cell::Amount(None, _) => {
                String::new()
            }
        }
    }
}

/// One section of the report as a table.
#[derive(Debug, Clone, PartialEq)]
struct Section {
    /// The section's name in CSV.
    id: &'static str,
    /// The title, saying what shares are shares of.
    title: String,
    /// Column names; the first `keys` columns name the row.
    header: Vec<&'static str>,
    keys: usize,
    rows: Vec<Vec<Cell>>,
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

fn plural(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

fn ending_rows(counts: &EndingCounts) -> Vec<Vec<Cell>> {
    let total = counts.total();
    RunOutcome::ALL
        .iter()
        .map(|&ending| {
            let runs = counts.get(ending);
            vec![
                Cell::Text(ending.to_string()),
                Cell::Count(runs),
                Cell::Share(share(runs, total)),
            ]
        })
        .collect()
}

fn steps_cells(stats: &StepStats) -> [Cell; 4] {
    let summary = stats.summary;
    [
        Cell::Steps(summary.map(|s| s.min)),
        Cell::Steps(summary.map(|s| s.median)),
        Cell::Steps(summary.map(|s| s.p90)),
        Cell::Steps(summary.map(|s| s.max)),
    ]
}

/// The report as sections, in the order every text format shows them.
fn sections(report: &Report, options: RenderOptions) -> Vec<Section> {
    let runs = report.exit_reasons.total();
    let mut sections = Vec::new();
    let input = report.input;
    sections.push(Section {
        id: "input",
        title: "Input".to_owned(),
        header: vec!["measure", "count"],
        keys: 1,
        rows: [
            ("files", input.files),
            ("lines", input.lines),
            ("events", input.events),
            ("runs", runs),
            ("skipped_lines", input.skipped_lines),
        ]
        .into_iter()
        .map(|(name, count)| vec![Cell::Text(name.to_owned()), Cell::Count(count)])
        .collect(),
    });
    sections.push(Section {
        id: "exit_reasons",
        title: format!(
            "Exit reasons (share of all {})",
            plural(runs, "run", "runs")
        ),
        header: vec!["exit reason", "runs", "share"],
        keys: 1,
        rows: ending_rows(&report.exit_reasons),
    });
    if options.by_file {
        let mut rows = Vec::new();
        for file in &report.by_file {
            for mut row in ending_rows(&file.exit_reasons) {
                row.insert(0, Cell::Text(file.file.clone()));
                rows.push(row);
            }
        }
        sections.push(if options.by_source {
            Section {
                id: "exit_reasons_by_source",
                title: "Exit reasons by source format (share of each format's runs)".to_owned(),
                header: vec!["source", "exit reason", "runs", "share"],
                keys: 2,
                rows,
            }
        } else {
            Section {
            id: "exit_reasons_by_file",
            title: "Exit reasons by file (share of each file's runs; a run belongs to the file with its ending, or its last event if incomplete)".to_owned(),
            header: vec!["file", "exit reason", "runs", "share"],
            keys: 2,
            rows,
            }
        });
    }
    let budget = report.budget;
    let mean = |total: u64| (budget.runs > 0).then(|| total as f64 / budget.runs as f64);
    sections.push(Section {
        id: "budget_exhaustion",
        title: format!(
            "Budget exhaustion: the steps of the {} that ended max_steps_exceeded",
            plural(budget.runs, "run", "runs")
        ),
        header: vec!["spent on", "total", "mean per run"],
        keys: 1,
        rows: [
            ("tool calls that succeeded", budget.tool_successes),
            ("tool errors", budget.tool_errors),
            ("model feedback", budget.feedback),
        ]
        .into_iter()
        .map(|(name, total)| {
            vec![
                Cell::Text(name.to_owned()),
                Cell::Count(total),
                Cell::Mean(mean(total)),
            ]
        })
        .collect(),
    });
    sections.push(Section {
        id: "budget_by_kind",
        title: format!(
            "Budget exhaustion by budget (share of the {} that ended max_steps_exceeded)",
            plural(budget.runs, "run", "runs")
        ),
        header: vec!["budget", "runs", "share"],
        keys: 1,
        rows: BUDGETS
            .iter()
            .zip(budget.by_budget)
            .map(|(name, runs)| {
                vec![
                    Cell::Text((*name).to_owned()),
                    Cell::Count(runs),
                    Cell::Share(share(runs, budget.runs)),
                ]
            })
            .collect(),
    });
    let verdicts = report.verdicts;
    if verdicts.runs > 0 {
        sections.push(Section {
            id: "verdicts",
            title: format!(
                "Verdicts (share of the {} run(s) whose scores give one)",
                verdicts.runs
            ),
            header: vec!["runs", "count", "share"],
            keys: 1,
            rows: vec![
                vec![
                    Cell::Text("passed".to_owned()),
                    Cell::Count(verdicts.passed),
                    Cell::Share(share(verdicts.passed, verdicts.runs)),
                ],
                vec![
                    Cell::Text("failed".to_owned()),
                    Cell::Count(verdicts.runs - verdicts.passed),
                    Cell::Share(share(verdicts.runs - verdicts.passed, verdicts.runs)),
                ],
            ],
        });
    }
    if report.spend.iter().any(SpendStats::any) {
        sections.push(spend_section(report));
    }
    if report.durations.iter().any(Option::is_some) {
        sections.push(duration_section(report));
    }
    let invalid = &report.invalid_output;
    let mut kinds: Vec<&String> = invalid
        .feedback_by_kind
        .keys()
        .chain(invalid.endings_by_kind.keys())
        .collect();
    kinds.sort();
    kinds.dedup();
    sections.push(Section {
        id: "invalid_output",
        title: "Invalid model output by error_kind".to_owned(),
        header: vec![
            "error kind",
            "feedback events",
            "invalid_model_output endings",
        ],
        keys: 1,
        rows: kinds
            .into_iter()
            .map(|kind| {
                vec![
                    Cell::Text(kind.clone()),
                    Cell::Count(invalid.feedback_by_kind.get(kind).copied().unwrap_or(0)),
                    Cell::Count(invalid.endings_by_kind.get(kind).copied().unwrap_or(0)),
                ]
            })
            .collect(),
    });
    sections.push(Section {
        id: "feedback_recovery",
        title: "Recovery after feedback (share of runs with feedback)".to_owned(),
        header: vec!["runs", "count", "share"],
        keys: 1,
        rows: vec![
            vec![
                Cell::Text("with feedback".to_owned()),
                Cell::Count(invalid.runs_with_feedback),
                Cell::Share(share(
                    invalid.runs_with_feedback,
                    invalid.runs_with_feedback,
                )),
            ],
            vec![
                Cell::Text("recovered (still finished)".to_owned()),
                Cell::Count(invalid.recovered),
                Cell::Share(share(invalid.recovered, invalid.runs_with_feedback)),
            ],
        ],
    });
    sections.push(Section {
        id: "tools",
        title: "Tools (error rate: error observations per call)".to_owned(),
        header: vec!["tool", "calls", "errors", "error rate"],
        keys: 1,
        rows: report
            .tools
            .iter()
            .map(|tool| {
                vec![
                    Cell::Text(tool.name.clone()),
                    Cell::Count(tool.calls),
                    if errors_unrecorded(tool) {
                        Cell::Text("not recorded".to_owned())
                    } else {
                        Cell::Count(tool.errors)
                    },
                    if errors_unrecorded(tool) {
                        Cell::Share(None)
                    } else {
                        Cell::Share(share(tool.errors, tool.calls))
                    },
                ]
            })
            .collect(),
    });
    sections.push(Section {
        id: "tool_errors",
        title: "Tool errors by error_kind".to_owned(),
        header: vec!["tool", "error kind", "errors"],
        keys: 2,
        rows: report
            .tools
            .iter()
            .flat_map(|tool| {
                tool.errors_by_kind.iter().map(|(kind, &count)| {
                    vec![
                        Cell::Text(tool.name.clone()),
                        Cell::Text(kind.clone()),
                        Cell::Count(count),
                    ]
                })
            })
            .collect(),
    });
    sections.push(Section {
        id: "steps",
        title: "Steps used per exit reason (median and p90 by nearest rank)".to_owned(),
        header: vec!["exit reason", "runs", "min", "median", "p90", "max"],
        keys: 1,
        rows: RunOutcome::ALL
            .iter()
            .map(|&ending| {
                let stats = &report.steps[ending.index()];
                let mut row = vec![Cell::Text(ending.to_string()), Cell::Count(stats.runs)];
                row.extend(steps_cells(stats));
                row
            })
            .collect(),
    });
    let internal = report
        .exit_reasons
        .get(RunOutcome::Ended(ExitReason::InternalError));
    sections.push(Section {
        id: "internal_errors",
        title: format!(
            "Internal errors by error_kind (share of {})",
            plural(internal, "internal_error run", "internal_error runs")
        ),
        header: vec!["error kind", "runs", "share"],
        keys: 1,
        rows: report
            .internal_errors
            .iter()
            .map(|(kind, &count)| {
                vec![
                    Cell::Text(kind.clone()),
                    Cell::Count(count),
                    Cell::Share(share(count, internal)),
                ]
            })
            .collect(),
    });
    sections.extend(finish_gate_sections(report));
    sections.push(Section {
        id: "warnings",
        title: format!("Warnings ({})", report.warnings.len()),
        header: vec!["kind", "message"],
        keys: 1,
        rows: report
            .warnings
            .iter()
            .map(|warning| {
                vec![
                    Cell::Text(warning.kind().to_owned()),
                    Cell::Text(warning.to_string()),
                ]
            })
            .collect(),
    });
    sections
}

/// Tokens, cost and duration per exit reason, each over the runs that recorded it; only when some
/// run recorded any.
fn spend_section(report: &Report) -> Section {
    let rows = RunOutcome::ALL
        .iter()
        .map(|&ending| {
            let spend = &report.spend[ending.index()];
            let recorded = |runs: u64, value: f64| (runs > 0).then_some(value);
            let seconds = spend.duration_ms / 1000.0;
            vec![
                Cell::Text(ending.to_string()),
                Cell::Count(report.exit_reasons.get(ending)),
                Cell::Count(spend.runs_with_tokens),
                Cell::Steps((spend.runs_with_tokens > 0).then_some(spend.input_tokens)),
                Cell::Steps((spend.runs_with_tokens > 0).then_some(spend.output_tokens)),
                Cell::Count(spend.runs_with_cost),
                Cell::Amount(recorded(spend.runs_with_cost, spend.cost_usd), 4),
                Cell::Count(spend.runs_with_duration),
                Cell::Amount(recorded(spend.runs_with_duration, seconds), 3),
                Cell::Amount(
                    recorded(
                        spend.runs_with_duration,
                        seconds / spend.runs_with_duration.max(1) as f64,
                    ),
                    3,
                ),
            ]
        })
        .collect();
    Section {
        id: "spend",
        title: "Tokens, cost and duration per exit reason (each over the runs that recorded it)"
            .to_owned(),
        header: vec![
            "exit reason",
            "runs",
            "with tokens",
            "input tokens",
            "output tokens",
            "with cost",
            "cost (USD)",
            "with duration",
            "duration (s)",
            "mean duration (s)",
        ],
        keys: 1,
        rows,
    }
}

/// Duration percentiles per exit reason, over the runs that recorded a duration; only when some
/// run did.
fn duration_section(report: &Report) -> Section {
    let rows = RunOutcome::ALL
        .iter()
        .map(|&ending| {
            let summary = report.durations[ending.index()];
            let seconds = |pick: fn(&DurationSummary) -> f64| {
                Cell::Amount(summary.as_ref().map(|s| pick(s) / 1000.0), 3)
            };
            vec![
                Cell::Text(ending.to_string()),
                Cell::Count(report.spend[ending.index()].runs_with_duration),
                seconds(|s| s.p50_ms),
                seconds(|s| s.p90_ms),
                seconds(|s| s.p99_ms),
                seconds(|s| s.max_ms),
            ]
        })
        .collect();
    Section {
        id: "duration",
        title: "Duration per exit reason in seconds (over the runs that recorded one)".to_owned(),
        header: vec!["exit reason", "with duration", "p50", "p90", "p99", "max"],
        keys: 1,
        rows,
    }
}

/// The finish gate's sections, only when some run had a gate: rejections are wrong answers, kept
/// apart from invalid output.
fn finish_gate_sections(report: &Report) -> Vec<Section> {
    let gate = &report.finish_gate;
    let gated = gate.runs.total();
    if gated == 0 {
        return Vec::new();
    }
    let by_ending = Section {
        id: "finish_gate_rejections",
        title: format!(
            "Finish gate rejections per exit reason ({} with a gate)",
            plural(gated, "run", "runs")
        ),
        header: vec!["exit reason", "gated runs", "rejections"],
        keys: 1,
        rows: RunOutcome::ALL
            .iter()
            .map(|&ending| {
                vec![
                    Cell::Text(ending.to_string()),
                    Cell::Count(gate.runs.get(ending)),
                    Cell::Count(gate.rejections.get(ending)),
                ]
            })
            .collect(),
    };
    let attempts = Section {
        id: "finish_gate_attempts",
        title: "Gated runs by finish attempts (share of gated runs)".to_owned(),
        header: vec!["attempts", "runs", "share"],
        keys: 1,
        rows: gate
            .runs_by_attempts
            .iter()
            .map(|(&attempts, &runs)| {
                vec![
                    Cell::Text(attempts.to_string()),
                    Cell::Count(runs),
                    Cell::Share(share(runs, gated)),
                ]
            })
            .collect(),
    };
    vec![by_ending, attempts]
}

fn render_table(report: &Report, options: RenderOptions) -> Vec<u8> {
    let mut out = String::new();
    for (at, section) in sections(report, options).iter().enumerate() {
        if at > 0 {
            out.push('\n');
        }
        out.push_str(&section.title);
        out.push('\n');
        if section.rows.is_empty() {
            out.push_str("  none\n");
            continue;
        }
        let style = options.style;
        let rows: Vec<Vec<String>> = section
            .rows
            .iter()
            .map(|row| row.iter().map(Cell::human).collect())
            .collect();
        for columns in column_groups(section, &rows, style.width) {
            let header = columns.iter().map(|&i| section.header[i]).collect();
            let mut table = style.table(header);
            for row in &rows {
                style.add_row(
                    &mut table,
                    columns.iter().map(|&i| row[i].clone()).collect(),
                );
            }
            for (at, &index) in columns.iter().enumerate() {
                let numeric = section.rows[0][index].is_numeric();
                if numeric && let Some(column) = table.column_mut(at) {
                    column.set_cell_alignment(CellAlignment::Right);
                }
                // Numbers and the names of rows are never broken.
                if numeric || index < section.keys {
                    style.keep_whole(&mut table, at, rows.iter().map(|row| row[index].as_str()));
                }
            }
            let _ = writeln!(out, "{table}");
        }
    }
    options.style.finish(&out).into_bytes()
}

/// The columns of `section` to draw, as one table or, when they cannot fit `width` with every
/// header word whole, as several tables that each repeat the key columns. With a width, columns
/// that are empty (`-` or blank) in every row are left out. Without one, every column, one table:
/// pipes get the same bytes as ever.
fn column_groups(section: &Section, rows: &[Vec<String>], width: Option<u16>) -> Vec<Vec<usize>> {
    let all: Vec<usize> = (0..section.header.len()).collect();
    let Some(width) = width.map(usize::from) else {
        return vec![all];
    };
    let empty = |i: usize| rows.iter().all(|row| matches!(row[i].as_str(), "" | "-"));
    let kept: Vec<usize> = all
        .into_iter()
        .filter(|&i| i < section.keys || !empty(i))
        .collect();
    // A column's natural width: its widest cell or header, plus padding and its border.
    let natural = |i: usize| {
        let cells = rows
            .iter()
            .map(|row| crate::terminal::display_width(&row[i]));
        cells
            .chain(std::iter::once(crate::terminal::display_width(
                section.header[i],
            )))
            .max()
            .unwrap_or(0)
            + 3
    };
    let keys: Vec<usize> = kept.iter().copied().filter(|&i| i < section.keys).collect();
    let key_width: usize = 1 + keys.iter().map(|&i| natural(i)).sum::<usize>();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut current = keys.clone();
    let mut used = key_width;
    for i in kept.into_iter().filter(|&i| i >= section.keys) {
        let w = natural(i);
        if used + w > width && current.len() > keys.len() {
            groups.push(std::mem::replace(&mut current, keys.clone()));
            used = key_width;
        }
        current.push(i);
        used += w;
    }
    groups.push(current);
    groups
}

fn render_markdown(report: &Report, options: RenderOptions) -> Vec<u8> {
    let mut out = String::from("# looptrace report\n");
    for section in sections(report, options) {
        let _ = write!(
            out,
            "\n## {}\n\n",
            crate::text::markdown_cell(&section.title)
        );
        if section.rows.is_empty() {
            out.push_str("None.\n");
            continue;
        }
        let header: Vec<String> = section
            .header
            .iter()
            .map(|name| crate::text::markdown_cell(name))
            .collect();
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let rule: Vec<&str> = section.rows[0]
            .iter()
            .map(|cell| if cell.is_numeric() { "---:" } else { "---" })
            .collect();
        let _ = writeln!(out, "| {} |", rule.join(" | "));
        for row in &section.rows {
            let cells: Vec<String> = row
                .iter()
                .map(|cell| crate::text::markdown_cell(&cell.human()))
                .collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    out.into_bytes()
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn render_csv(report: &Report, options: RenderOptions) -> Vec<u8> {
    let mut out = String::from("section,key,subkey,metric,value\n");
    for section in sections(report, options) {
        for row in &section.rows {
            let key = row.first().map(Cell::machine).unwrap_or_default();
            let subkey = if section.keys > 1 {
                row.get(1).map(Cell::machine).unwrap_or_default()
            } else {
                String::new()
            };
            for (metric, cell) in section.header.iter().zip(row).skip(section.keys) {
                let fields = [
                    section.id.to_owned(),
                    key.clone(),
                    subkey.clone(),
                    metric.to_string(),
                    cell.machine(),
                ];
                let fields: Vec<String> = fields.iter().map(|field| csv_field(field)).collect();
                let _ = writeln!(out, "{}", fields.join(","));
            }
        }
    }
    out.into_bytes()
}

fn round4(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

/// Six decimals: sums of floats (dollars, milliseconds) without their last-bit noise.
fn round6(value: f64) -> f64 {
    (value * 1_000_000.0).round() / 1_000_000.0
}

fn share_value(part: u64, whole: u64) -> Value {
    share(part, whole).map_or(Value::Null, |share| json!(round4(share)))
}

fn endings_json(counts: &EndingCounts) -> Value {
    let total = counts.total();
    let rows: Vec<Value> = RunOutcome::ALL
        .iter()
        .map(|&ending| {
            let runs = counts.get(ending);
            json!({ "exit_reason": ending.as_str(), "runs": runs, "share": share_value(runs, total) })
        })
        .collect();
    json!({ "runs": total, "rows": rows })
}

fn counts_json(counts: &std::collections::BTreeMap<String, u64>) -> Value {
    Value::Object(
        counts
            .iter()
            .map(|(key, &count)| (key.clone(), json!(count)))
            .collect::<Map<_, _>>(),
    )
}

fn render_json(report: &Report, options: RenderOptions) -> Vec<u8> {
    let budget = report.budget;
    let mean = |total: u64| {
        if budget.runs > 0 {
            json!(round4(total as f64 / budget.runs as f64))
        } else {
            Value::Null
        }
    };
    let invalid = &report.invalid_output;
    let internal = report
        .exit_reasons
        .get(RunOutcome::Ended(ExitReason::InternalError));
    let mut document = json!({
        "input": {
            "files": report.input.files,
            "lines": report.input.lines,
            "events": report.input.events,
            "runs": report.exit_reasons.total(),
            "skipped_lines": report.input.skipped_lines,
        },
        "exit_reasons": endings_json(&report.exit_reasons),
        "budget_exhaustion": {
            "runs": budget.runs,
            "tool_successes": { "total": budget.tool_successes, "mean_per_run": mean(budget.tool_successes) },
            "tool_errors": { "total": budget.tool_errors, "mean_per_run": mean(budget.tool_errors) },
            "model_feedback": { "total": budget.feedback, "mean_per_run": mean(budget.feedback) },
            "by_budget": BUDGETS.iter().zip(budget.by_budget).map(|(name, runs)| json!({
                "budget": name,
                "runs": runs,
                "share": share_value(runs, budget.runs),
            })).collect::<Vec<_>>(),
        },
        "spend": RunOutcome::ALL.iter().map(|&ending| {
            let spend = &report.spend[ending.index()];
            let recorded = |runs: u64, value: Value| if runs > 0 { value } else { Value::Null };
            json!({
                "exit_reason": ending.as_str(),
                "runs": report.exit_reasons.get(ending),
                "runs_with_tokens": spend.runs_with_tokens,
                "input_tokens": recorded(spend.runs_with_tokens, json!(spend.input_tokens)),
                "output_tokens": recorded(spend.runs_with_tokens, json!(spend.output_tokens)),
                "runs_with_cost": spend.runs_with_cost,
                "cost_usd": recorded(spend.runs_with_cost, json!(round6(spend.cost_usd))),
                "runs_with_duration": spend.runs_with_duration,
                "duration_ms": recorded(spend.runs_with_duration, json!(round6(spend.duration_ms))),
            })
        }).collect::<Vec<_>>(),
        "durations": RunOutcome::ALL.iter().map(|&ending| {
            let summary = report.durations[ending.index()];
            let ms = |pick: fn(&DurationSummary) -> f64| summary.as_ref().map(|s| round6(pick(s)));
            json!({
                "exit_reason": ending.as_str(),
                "runs_with_duration": report.spend[ending.index()].runs_with_duration,
                "p50_ms": ms(|s| s.p50_ms),
                "p90_ms": ms(|s| s.p90_ms),
                "p99_ms": ms(|s| s.p99_ms),
                "max_ms": ms(|s| s.max_ms),
            })
        }).collect::<Vec<_>>(),
        "verdicts": {
            "runs": report.verdicts.runs,
            "passed": report.verdicts.passed,
            "pass_rate": share_value(report.verdicts.passed, report.verdicts.runs),
        },
        "invalid_output": {
            "feedback_by_kind": counts_json(&invalid.feedback_by_kind),
            "endings_by_kind": counts_json(&invalid.endings_by_kind),
            "runs_with_feedback": invalid.runs_with_feedback,
            "recovered": invalid.recovered,
            "recovered_share": share_value(invalid.recovered, invalid.runs_with_feedback),
        },
        "tools": report.tools.iter().map(|tool| json!({
            "tool": tool.name,
            "calls": tool.calls,
            "errors": (!errors_unrecorded(tool)).then_some(tool.errors),
            "error_rate": if errors_unrecorded(tool) { Value::Null } else { share_value(tool.errors, tool.calls) },
            "errors_by_kind": counts_json(&tool.errors_by_kind),
        })).collect::<Vec<_>>(),
        "steps": RunOutcome::ALL.iter().map(|&ending| {
            let stats = &report.steps[ending.index()];
            let summary = stats.summary;
            json!({
                "exit_reason": ending.as_str(),
                "runs": stats.runs,
                "min": summary.map(|s| s.min),
                "median": summary.map(|s| s.median),
                "p90": summary.map(|s| s.p90),
                "max": summary.map(|s| s.max),
            })
        }).collect::<Vec<_>>(),
        "internal_errors": {
            "runs": internal,
            "by_kind": counts_json(&report.internal_errors),
        },
        "warnings": report.warnings.iter().map(|warning| json!({
            "kind": warning.kind(),
            "message": warning.to_string(),
        })).collect::<Vec<_>>(),
    });
    let gate = &report.finish_gate;
    if gate.runs.total() > 0
        && let Value::Object(map) = &mut document
    {
        let attempts: serde_json::Map<String, Value> = gate
            .runs_by_attempts
            .iter()
            .map(|(attempts, runs)| (attempts.to_string(), json!(runs)))
            .collect();
        let by_exit_reason: Vec<Value> = RunOutcome::ALL
            .iter()
            .map(|&ending| {
                json!({
                    "exit_reason": ending.as_str(),
                    "runs": gate.runs.get(ending),
                    "rejections": gate.rejections.get(ending),
                })
            })
            .collect();
        let finish_gate = json!({
            "runs": gate.runs.total(),
            "rejections": gate.rejections.total(),
            "by_exit_reason": by_exit_reason,
            "runs_by_attempts": attempts,
        });
        map.insert("finish_gate".to_owned(), finish_gate);
    }
    if options.by_file
        && let Value::Object(map) = &mut document
    {
        let by_file: Vec<Value> = report
            .by_file
            .iter()
            .map(|file| json!({ "file": file.file, "exit_reasons": endings_json(&file.exit_reasons) }))
            .collect();
        let key = if options.by_source {
            "exit_reasons_by_source"
        } else {
            "exit_reasons_by_file"
        };
        map.insert(key.to_owned(), Value::Array(by_file));
    }
    let mut bytes = serde_json::to_vec_pretty(&document).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Whether a tool's errors are unknown: its source recorded no error flag and no error.
fn errors_unrecorded(tool: &super::model::ToolReport) -> bool {
    tool.unrecorded > 0 && tool.errors == 0
}
