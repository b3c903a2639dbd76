//! The table of every run: its rows as compact JSON for the page's script (which builds, filters
//! and sorts them), and the filter controls, each listing the values the runs hold.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{Value, json};

use super::escape::html;
use super::timeline::round_ms;
use crate::report::RunTable;
use crate::run::RunOutcome;

/// `[file, run_id, task_id, ending, steps, error_kinds, tools, verdict, source, duration_ms,
/// divergence_step, divergence]` per run.
pub fn rows(runs: &RunTable) -> Value {
    Value::Array(
        runs.rows
            .iter()
            .map(|r| {
                json!([
                    r.file,
                    r.run_id,
                    r.task_id,
                    r.ending.index(),
                    r.steps,
                    r.error_kinds,
                    r.tools,
                    r.verdict,
                    r.source,
                    r.duration_ms.map(round_ms),
                    r.divergence.as_ref().map(|d| d.0),
                    r.divergence.as_ref().map(|d| d.1.as_str()),
                ])
            })
            .collect(),
    )
}

/// The filter controls and the empty table the script fills.
pub fn section(runs: &RunTable, verdict: &str) -> String {
    let mut kinds = BTreeSet::new();
    let mut tools = BTreeSet::new();
    let mut verdicts = BTreeSet::new();
    let mut sources = BTreeSet::new();
    for row in &runs.rows {
        kinds.extend(row.error_kinds.iter().map(String::as_str));
        tools.extend(row.tools.iter().map(String::as_str));
        verdicts.insert(row.verdict.as_deref().unwrap_or("-"));
        sources.insert(row.source);
    }
    let endings: Vec<&str> = RunOutcome::ALL.iter().map(|e| e.as_str()).collect();
    // A column every run holds the same value in (an eval's runs are all looptrace's) says
    // nothing: it and its filter are left out, and the script draws no cell for it.
    let (source_filter, source_head, table_class) = if sources.len() > 1 {
        (select("source", "source", sources), "<th>source</th>", "")
    } else {
        (String::new(), "", " class=\"one-source\"")
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "<section id=\"runs\"><h2>Runs</h2><div class=\"filters\">{}{}{}{}{source_filter}\
         <button type=\"button\" id=\"clear-filters\">clear filters</button></div>\
         <p id=\"shown\" class=\"note\"></p><div class=\"scroll\"><table id=\"runs-table\"{table_class}><thead><tr>\
         <th>file</th><th>run id</th><th>task</th><th>exit reason</th>\
         <th class=\"num sort\" data-sort=\"4\" tabindex=\"0\">steps</th>\
         <th class=\"num sort\" data-sort=\"9\" tabindex=\"0\">duration</th>\
         <th>error kinds</th><th>tools</th><th>{}</th>{source_head}</tr></thead>\
         <tbody id=\"runs-body\"></tbody></table></div>\
         <noscript><p>The runs table and timelines need JavaScript.</p></noscript></section>",
        select("ending", "exit reason", endings),
        select("kind", "error kind", kinds),
        select("tool", "tool", tools),
        select("verdict", &verdict_label(verdict), verdicts),
        html(&verdict_label(verdict)),
    );
    out
}

/// The verdict column's heading.
fn verdict_label(verdict: &str) -> String {
    match verdict {
        "gate" => "gate verdict".to_owned(),
        other => other.to_owned(),
    }
}

fn select<'a>(key: &str, label: &str, values: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = format!(
        "<label>{} <select data-filter=\"{key}\" id=\"filter-{key}\"><option value=\"\">all</option>",
        html(label)
    );
    for value in values {
        let value = html(value);
        let _ = write!(out, "<option value=\"{value}\">{value}</option>");
    }
    out.push_str("</select></label> ");
    out
}
