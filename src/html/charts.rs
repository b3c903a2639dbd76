//! The aggregate report's sections as inline SVG bar charts and small tables; the heat map of
//! transitions since a baseline. Every label goes through [`html`].

use std::fmt::Write as _;

use super::Baseline;
use super::escape::html;
use crate::report::{BUDGETS, Report};
use crate::run::{ExitReason, RunOutcome};

/// One bar: its label, its length (a fraction of the longest), what is written after it.
struct Bar {
    label: String,
    value: f64,
    text: String,
    /// `data-exit-reason` of an exit-reason row: the page filters the runs by it on a click.
    ending: Option<RunOutcome>,
}

const LABEL_W: usize = 210;
const BAR_W: usize = 330;
const ROW_H: usize = 22;

fn bar_chart(class: &str, bars: &[Bar]) -> String {
    let max = bars.iter().map(|b| b.value).fold(0.0, f64::max);
    let height = bars.len() * ROW_H + 4;
    let width = LABEL_W + BAR_W + 200;
    let mut out = format!(
        "<svg class=\"chart {class}\" role=\"img\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    for (i, bar) in bars.iter().enumerate() {
        let y = i * ROW_H + 2;
        let len = if max > 0.0 {
            (bar.value / max * BAR_W as f64).round() as usize
        } else {
            0
        };
        let (open, class) = match bar.ending {
            Some(e) => (
                format!(
                    "<g class=\"bar clickable end-{0}\" data-exit-reason=\"{0}\" tabindex=\"0\">",
                    e.as_str()
                ),
                format!("count end-{}", e.as_str()),
            ),
            None => ("<g class=\"bar\">".to_owned(), "count".to_owned()),
        };
        let _ = write!(
            out,
            "{open}<title>{title}</title><text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{label}</text>\
             <rect x=\"{bx}\" y=\"{y}\" width=\"{len}\" height=\"{h}\" rx=\"2\"></rect>\
             <text class=\"{class}\" x=\"{vx}\" y=\"{ty}\">{text}</text></g>",
            lx = LABEL_W - 8,
            ty = y + 15,
            title = html(&bar.label),
            label = html(&shorten(&bar.label)),
            bx = LABEL_W,
            h = ROW_H - 6,
            vx = LABEL_W + len + 6,
            text = html(&bar.text),
        );
    }
    out.push_str("</svg>");
    out
}

/// Labels longer than fit beside the bars are cut at their end; the bar's tooltip holds the whole
/// label. The label is right-aligned against the bars, so a label wider than the space left of
/// them would lose its start off the chart's left edge: the budget is the label space at a
/// generous 7.5 px per column of 12 px text, wide characters counting two columns.
pub(super) fn shorten(label: &str) -> String {
    const FITS: usize = (LABEL_W - 8) * 2 / 15;
    if crate::terminal::display_width(label) <= FITS {
        return label.to_owned();
    }
    let mut used = 0;
    let mut out = String::new();
    for c in label.chars() {
        let w = crate::terminal::display_width(c.encode_utf8(&mut [0; 4]));
        if used + w > FITS - 1 {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

fn section(id: &str, title: &str, body: &str) -> String {
    format!(
        "<section id=\"{id}\"><h2>{}</h2>{body}</section>",
        html(title)
    )
}

/// Every section of the aggregate report that has something to show.
pub fn sections(report: &Report) -> String {
    let mut out = String::new();
    out.push_str(&exit_reasons(report));
    out.push_str(&budgets(report));
    out.push_str(&invalid_output(report));
    out.push_str(&finish_gate(report));
    out.push_str(&tools(report));
    out.push_str(&per_exit_reason(report));
    if !report.internal_errors.is_empty() {
        let bars = by_kind(report.internal_errors.iter());
        out.push_str(&section(
            "internal-errors",
            "Internal errors by kind",
            &bar_chart("kinds", &bars),
        ));
    }
    out
}

fn exit_reasons(report: &Report) -> String {
    let total = report.exit_reasons.total();
    let bars: Vec<Bar> = RunOutcome::ALL
        .iter()
        .map(|&e| {
            let n = report.exit_reasons.get(e);
            Bar {
                label: e.as_str().to_owned(),
                value: n as f64,
                text: format!("{n} ({})", percent(n, total)),
                ending: Some(e),
            }
        })
        .collect();
    section(
        "exit-reasons",
        &format!("Exit reasons (of {})", crate::plural(total, "run", "runs")),
        &format!(
            "{}<p class=\"note\">Click a row to list its runs below.</p>",
            bar_chart("exit-reasons", &bars)
        ),
    )
}

fn budgets(report: &Report) -> String {
    let budget = &report.budget;
    if budget.runs == 0 {
        return String::new();
    }
    let bars: Vec<Bar> = BUDGETS
        .iter()
        .zip(budget.by_budget)
        .map(|(name, n)| Bar {
            label: (*name).to_owned(),
            value: n as f64,
            text: format!("{n} ({})", percent(n, budget.runs)),
            ending: None,
        })
        .collect();
    let spent = format!(
        "<p class=\"note\">Their steps went to {} successful tool calls, {} tool errors and {} model feedback.</p>",
        budget.tool_successes, budget.tool_errors, budget.feedback
    );
    section(
        "budgets",
        &format!(
            "Budget exhaustion by budget (of {} max_steps_exceeded {})",
            budget.runs,
            if budget.runs == 1 { "run" } else { "runs" }
        ),
        &(bar_chart("budgets", &bars) + &spent),
    )
}

fn by_kind<'a>(kinds: impl Iterator<Item = (&'a String, &'a u64)>) -> Vec<Bar> {
    kinds
        .map(|(kind, &n)| Bar {
            label: kind.clone(),
            value: n as f64,
            text: n.to_string(),
            ending: None,
        })
        .collect()
}

fn invalid_output(report: &Report) -> String {
    let invalid = &report.invalid_output;
    if invalid.feedback_by_kind.is_empty() && invalid.endings_by_kind.is_empty() {
        return String::new();
    }
    let mut body = String::new();
    if !invalid.feedback_by_kind.is_empty() {
        body.push_str("<h3>Feedback by kind</h3>");
        body.push_str(&bar_chart(
            "kinds",
            &by_kind(invalid.feedback_by_kind.iter()),
        ));
    }
    if !invalid.endings_by_kind.is_empty() {
        body.push_str("<h3>invalid_model_output endings by kind</h3>");
        body.push_str(&bar_chart(
            "kinds",
            &by_kind(invalid.endings_by_kind.iter()),
        ));
    }
    let _ = write!(
        body,
        "<p class=\"note\">{} got feedback; {} of them still finished.</p>",
        crate::plural(invalid.runs_with_feedback, "run", "runs"),
        invalid.recovered
    );
    section("invalid-output", "Invalid model output by kind", &body)
}

fn finish_gate(report: &Report) -> String {
    let gate = &report.finish_gate;
    if gate.runs.total() == 0 {
        return String::new();
    }
    let bars: Vec<Bar> = RunOutcome::ALL
        .iter()
        .filter(|&&e| gate.runs.get(e) > 0)
        .map(|&e| Bar {
            label: e.as_str().to_owned(),
            value: gate.rejections.get(e) as f64,
            text: format!(
                "{} rejected in {}",
                gate.rejections.get(e),
                crate::plural(gate.runs.get(e), "gated run", "gated runs")
            ),
            ending: None,
        })
        .collect();
    section(
        "finish-gate",
        &format!(
            "Finish gate rejections (of {})",
            crate::plural(gate.runs.total(), "gated run", "gated runs")
        ),
        &bar_chart("gate", &bars),
    )
}

fn tools(report: &Report) -> String {
    if report.tools.is_empty() {
        return String::new();
    }
    let bars: Vec<Bar> = report
        .tools
        .iter()
        .map(|tool| {
            let recorded = tool.errors > 0 || tool.unrecorded == 0;
            let rate = (recorded && tool.calls > 0).then(|| tool.errors as f64 / tool.calls as f64);
            Bar {
                label: tool.name.clone(),
                value: rate.unwrap_or(0.0),
                text: match rate {
                    Some(rate) => format!(
                        "{:.1}% ({} in {})",
                        rate * 100.0,
                        crate::plural(tool.errors, "error", "errors"),
                        crate::plural(tool.calls, "call", "calls")
                    ),
                    None if !recorded => format!("errors not recorded ({} calls)", tool.calls),
                    None => format!(
                        "{}, no calls",
                        crate::plural(tool.errors, "error", "errors")
                    ),
                },
                ending: None,
            }
        })
        .collect();
    section("tools", "Tool error rates", &bar_chart("tools", &bars))
}

fn per_exit_reason(report: &Report) -> String {
    let tokens = report.spend.iter().any(|s| s.runs_with_tokens > 0);
    let cost = report.spend.iter().any(|s| s.runs_with_cost > 0);
    let duration = report.spend.iter().any(|s| s.runs_with_duration > 0);
    let mut out = String::from(
        "<table class=\"stats\"><thead><tr><th>exit reason</th><th class=\"num\">runs</th>\
         <th class=\"num\">min</th><th class=\"num\">median</th><th class=\"num\">p90</th><th class=\"num\">max</th>",
    );
    if tokens {
        out.push_str("<th class=\"num\">input tokens</th><th class=\"num\">output tokens</th>");
    }
    if duration {
        out.push_str("<th class=\"num\">mean duration</th>");
    }
    if cost {
        out.push_str("<th class=\"num\">cost</th>");
    }
    out.push_str("</tr></thead><tbody>");
    for e in RunOutcome::ALL {
        let steps = &report.steps[e.index()];
        let spend = &report.spend[e.index()];
        let cell = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
        let summary = steps.summary;
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
            e.as_str(),
            steps.runs,
            cell(summary.map(|s| s.min)),
            cell(summary.map(|s| s.median)),
            cell(summary.map(|s| s.p90)),
            cell(summary.map(|s| s.max)),
        );
        let of = |n: u64| {
            if n < report.exit_reasons.get(e) {
                format!(" <span class=\"note\">({n} runs)</span>")
            } else {
                String::new()
            }
        };
        // A figure only where some run of this ending recorded it, saying over how many runs.
        let mut figure = |runs: u64, text: &dyn Fn() -> String| {
            let shown = if runs > 0 { text() } else { "-".to_owned() };
            let _ = write!(out, "<td class=\"num\">{shown}</td>");
        };
        if tokens {
            let runs = spend.runs_with_tokens;
            figure(runs, &|| format!("{}{}", spend.input_tokens, of(runs)));
            figure(runs, &|| spend.output_tokens.to_string());
        }
        if duration {
            let runs = spend.runs_with_duration;
            figure(runs, &|| {
                let mean = spend.duration_ms / runs as f64 / 1000.0;
                format!("{mean:.2} s{}", of(runs))
            });
        }
        if cost {
            let runs = spend.runs_with_cost;
            figure(runs, &|| format!("${:.4}{}", spend.cost_usd, of(runs)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    // The title names every figure the table holds.
    let mut figures = vec!["Steps"];
    if tokens {
        figures.push("tokens");
    }
    if duration {
        figures.push("duration");
    }
    if cost {
        figures.push("cost");
    }
    let title = match figures.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => "Steps".to_owned(),
    };
    section(
        "per-exit-reason",
        &format!("{title} per exit reason (steps: nearest-rank percentiles)"),
        &out,
    )
}

/// The transition matrix as a heat map, and the tasks that moved.
pub fn baseline(baseline: &Baseline) -> String {
    let count = |from: RunOutcome, to: RunOutcome| {
        baseline
            .transitions
            .iter()
            .filter(|(f, t, _)| *f == from && *t == to)
            .map(|(_, _, n)| n)
            .sum::<u64>()
    };
    let max = baseline.transitions.iter().map(|t| t.2).max().unwrap_or(0);
    let cell = 64;
    let left = 180;
    let top = 110;
    let n = RunOutcome::ALL.len();
    let (width, height) = (left + n * cell + 10, top + n * cell + 10);
    let mut svg = format!(
        "<svg class=\"chart heatmap\" role=\"img\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">\
         <text x=\"{}\" y=\"14\" text-anchor=\"middle\" class=\"axis\">now</text>",
        left + n * cell / 2
    );
    for (j, to) in RunOutcome::ALL.iter().enumerate() {
        let x = left + j * cell + cell / 2;
        let _ = write!(
            svg,
            "<text transform=\"translate({x},{}) rotate(-40)\" class=\"axis\">{}</text>",
            top - 8,
            to.as_str()
        );
    }
    for (i, from) in RunOutcome::ALL.iter().enumerate() {
        let y = top + i * cell;
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"axis\">{} before</text>",
            left - 8,
            y + cell / 2 + 5,
            from.as_str()
        );
        for (j, to) in RunOutcome::ALL.iter().enumerate() {
            let n = count(*from, *to);
            let alpha = if max > 0 { n as f64 / max as f64 } else { 0.0 };
            let kind = if from == to {
                "same"
            } else if *to == RunOutcome::Ended(ExitReason::Finished) {
                "better"
            } else {
                "moved"
            };
            let _ = write!(
                svg,
                "<g class=\"cell {kind}\"><rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{w}\" fill-opacity=\"{a:.3}\"></rect>\
                 <text x=\"{tx}\" y=\"{ty}\" text-anchor=\"middle\">{n}</text></g>",
                x = left + j * cell,
                w = cell - 2,
                a = 0.08 + 0.92 * alpha,
                tx = left + j * cell + cell / 2,
                ty = y + cell / 2 + 5,
            );
        }
    }
    svg.push_str("</svg>");
    let list = |id: &str, title: &str, items: Vec<(String, String)>| {
        let mut out = format!(
            "<div class=\"bucket\" id=\"{id}\"><h3>{} ({})</h3><ul>",
            html(title),
            items.len()
        );
        for (task, why) in items {
            let _ = write!(out, "<li><code>{}</code> {}</li>", html(&task), html(&why));
        }
        out.push_str("</ul></div>");
        out
    };
    let body = format!(
        "{svg}<div class=\"buckets\">{}{}{}</div>",
        list(
            "newly-failing",
            "Newly failing",
            baseline.newly_failing.clone()
        ),
        list("newly-fixed", "Newly fixed", baseline.newly_fixed.clone()),
        list(
            "still-failing",
            "Still failing",
            baseline
                .still_failing
                .iter()
                .map(|t| (t.clone(), String::new()))
                .collect()
        ),
    );
    section(
        "baseline",
        "Since the baseline: exit reasons before and now",
        &body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::display_width;

    #[test]
    fn long_labels_are_cut_at_their_end_to_fit_left_of_the_bars() {
        let fits = (LABEL_W - 8) * 2 / 15;
        assert_eq!(shorten("calculator"), "calculator");
        let long = "mcp_filesystem_server_read_multiple_files_with_a_long_name";
        let short = shorten(long);
        assert!(
            short.starts_with("mcp_filesystem") && short.ends_with('…'),
            "{short}"
        );
        assert!(display_width(&short) <= fits, "{short}");
        // Wide characters count two columns.
        let wide = shorten(&"工具".repeat(20));
        assert!(display_width(&wide) <= fits, "{wide}");
    }
}
