//! The statistics section: each task's success rate as a dot with its interval as an error bar,
//! the suite's mean the same way, pass@k and pass^k, and the paired test against a baseline.
//! Every label goes through [`html`].

use std::fmt::Write as _;

use super::Statistics;
use super::charts::shorten;
use super::escape::html;
use crate::stats::SuiteMean;

const LABEL_W: usize = 210;
const AXIS_W: usize = 330;
const ROW_H: usize = 22;
/// Tasks drawn; the rest are counted below the chart (every task is in the JSON report).
const DRAWN: usize = 200;

fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// One row of the chart: a label, a rate and its interval, in [0, 1].
fn error_bar(out: &mut String, y: usize, label: &str, rate: f64, low: f64, high: f64, class: &str) {
    let x = |v: f64| LABEL_W as f64 + v.clamp(0.0, 1.0) * AXIS_W as f64;
    let mid = y + ROW_H / 2;
    let _ = write!(
        out,
        "<g class=\"ci {class}\"><title>{title}: {rate} ({low} to {high})</title>\
         <text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{label}</text>\
         <line class=\"whisker\" x1=\"{x1:.1}\" y1=\"{mid}\" x2=\"{x2:.1}\" y2=\"{mid}\"></line>\
         <line class=\"whisker\" x1=\"{x1:.1}\" y1=\"{t0}\" x2=\"{x1:.1}\" y2=\"{t1}\"></line>\
         <line class=\"whisker\" x1=\"{x2:.1}\" y1=\"{t0}\" x2=\"{x2:.1}\" y2=\"{t1}\"></line>\
         <circle cx=\"{cx:.1}\" cy=\"{mid}\" r=\"4\"></circle>\
         <text class=\"count\" x=\"{vx}\" y=\"{ty}\">{rate} ({low} to {high})</text></g>",
        title = html(label),
        label = html(&shorten(label)),
        rate = percent(rate),
        low = percent(low),
        high = percent(high),
        lx = LABEL_W - 8,
        ty = y + 15,
        x1 = x(low),
        x2 = x(high),
        t0 = mid - 5,
        t1 = mid + 5,
        cx = x(rate),
        vx = LABEL_W + AXIS_W + 8,
    );
}

fn mean_text(mean: &SuiteMean) -> String {
    match (mean.mean, mean.ci_low, mean.ci_high) {
        (Some(m), Some(low), Some(high)) => format!(
            "{} ({} to {}) over {} tasks",
            percent(m),
            percent(low),
            percent(high),
            mean.tasks
        ),
        _ => "-".to_owned(),
    }
}

/// The section.
pub fn section(stats: &Statistics<'_>) -> String {
    let suite = stats.suite;
    let drawn = stats.tasks.len().min(DRAWN);
    let rows = drawn + 2;
    let height = rows * ROW_H + 24;
    let width = LABEL_W + AXIS_W + 220;
    let mut svg = format!(
        "<svg class=\"chart intervals\" role=\"img\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    // The axis: 0%, 50%, 100%.
    for (tick, text) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
        let x = LABEL_W as f64 + tick * AXIS_W as f64;
        let _ = write!(
            svg,
            "<line class=\"grid\" x1=\"{x:.1}\" y1=\"0\" x2=\"{x:.1}\" y2=\"{gy}\"></line>\
             <text class=\"axis\" x=\"{x:.1}\" y=\"{ty}\" text-anchor=\"middle\">{text}</text>",
            gy = rows * ROW_H,
            ty = rows * ROW_H + 16,
        );
    }
    if let (Some(m), Some(low), Some(high)) =
        (suite.rate.mean, suite.rate.ci_low, suite.rate.ci_high)
    {
        error_bar(
            &mut svg,
            0,
            "suite (mean of the tasks)",
            m,
            low,
            high,
            "suite",
        );
    }
    for (i, t) in stats.tasks.iter().take(drawn).enumerate() {
        let label = if t.model.is_empty() {
            t.id.clone()
        } else {
            format!("{} [{}]", t.id, t.model)
        };
        error_bar(
            &mut svg,
            (i + 2) * ROW_H,
            &label,
            t.rate,
            t.ci_low,
            t.ci_high,
            "task",
        );
    }
    svg.push_str("</svg>");
    let mut body = format!(
        "<p>Each task's success rate (runs that passed) with its {} Wilson interval; the suite's mean over its tasks with its interval. {} of {} runs passed.</p>{svg}",
        html(&confidence_label(suite.confidence)),
        suite.successes,
        suite.runs
    );
    if stats.tasks.len() > drawn {
        let _ = write!(
            body,
            "<p>and {} more tasks (the JSON report lists every task)</p>",
            stats.tasks.len() - drawn
        );
    }
    let mut estimates = String::new();
    for (name, means) in [("pass@", &suite.pass_at), ("pass^", &suite.pass_hat)] {
        for (k, mean) in means {
            let _ = write!(
                estimates,
                "<li>{}{}: {}</li>",
                name,
                html(k),
                html(&mean_text(mean))
            );
        }
    }
    if !estimates.is_empty() {
        let _ = write!(body, "<ul class=\"estimates\">{estimates}</ul>");
    }
    if let Some(v) = stats.paired {
        let verdict = match v.p_value {
            Some(p) if v.regression => format!("a statistically clear regression (p = {p:.4})"),
            Some(p) if v.improvement => format!("a statistically clear improvement (p = {p:.4})"),
            Some(p) => format!("no statistically clear change (p = {p:.4})"),
            None => "no test (--regression-test none)".to_owned(),
        };
        let _ = write!(
            body,
            "<p class=\"paired\">Against the baseline ({} test, {} tasks: {} worse, {} better, {} unchanged): {}. Success rate {} before, {} now; difference {:+.1}% ({:+.1}% to {:+.1}%).</p>",
            html(v.test.as_str()),
            v.tasks,
            v.worse,
            v.better,
            v.ties,
            html(&verdict),
            percent(v.rate_before),
            percent(v.rate_now),
            v.difference * 100.0,
            v.ci_low * 100.0,
            v.ci_high * 100.0,
        );
    }
    format!("<section id=\"statistics\"><h2>Success rates with intervals</h2>{body}</section>")
}

fn confidence_label(confidence: f64) -> String {
    let text = format!("{:.4}", confidence * 100.0);
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}
