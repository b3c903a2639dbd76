//! `report --list SELECTOR`: the runs that ended a given way, one row each.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::rows::{RunRow, RunTable};
use crate::run::RunOutcome;
use crate::text::escape;

/// Which runs `--list` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// Runs with this ending (`finished`, ..., `incomplete`).
    Outcome(RunOutcome),
    /// Runs that recorded an error of this kind (their ending's, feedback's or a tool error's).
    ErrorKind(String),
    /// Runs that called this tool.
    Tool(String),
    /// Runs of this source format (`looptrace`, `codex`, ...).
    Source(String),
}

impl Selector {
    /// Reads `EXIT_REASON`, `error_kind=K`, `tool=T` or `source=F`.
    pub fn parse(text: &str) -> Result<Selector, String> {
        if let Some((key, value)) = text.split_once('=') {
            if value.is_empty() {
                return Err(format!("--list `{text}`: the value after `=` is empty"));
            }
            return match key {
                "error_kind" => Ok(Selector::ErrorKind(value.to_owned())),
                "tool" => Ok(Selector::Tool(value.to_owned())),
                "source" => Ok(Selector::Source(value.to_owned())),
                _ => Err(format!(
                    "--list `{text}`: unknown key `{key}` (expected error_kind=K, tool=T or source=F)"
                )),
            };
        }
        RunOutcome::ALL
            .into_iter()
            .find(|e| e.as_str() == text)
            .map(Selector::Outcome)
            .ok_or_else(|| {
                format!(
                    "--list `{text}`: expected an exit reason ({}), error_kind=K, tool=T or source=F",
                    RunOutcome::ALL.map(RunOutcome::as_str).join(", ")
                )
            })
    }

    /// Whether `row` is one of the runs selected.
    pub fn matches(&self, row: &RunRow) -> bool {
        match self {
            Selector::Outcome(ending) => row.ending == *ending,
            Selector::ErrorKind(kind) => row.error_kinds.iter().any(|k| k == kind),
            Selector::Tool(tool) => row.tools.iter().any(|t| t == tool),
            Selector::Source(source) => row.source == source,
        }
    }
}

/// The selected runs as a text table: file, run id, exit reason, steps, error kinds.
pub fn render_list_text(table: &RunTable, selector: &Selector) -> Vec<u8> {
    let header = ["file", "run id", "exit reason", "steps", "error kind"].map(str::to_owned);
    let mut lines = vec![header];
    for row in table.rows.iter().filter(|r| selector.matches(r)) {
        lines.push([
            escape(file_of(table, row)).into_owned(),
            escape(&row.run_id).into_owned(),
            row.ending.as_str().to_owned(),
            row.steps.to_string(),
            if row.error_kinds.is_empty() {
                "-".to_owned()
            } else {
                escape(&row.error_kinds.join(",")).into_owned()
            },
        ]);
    }
    let mut widths = [0; 5];
    for line in &lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for line in &lines {
        let mut text = String::new();
        for (i, (cell, width)) in line.iter().zip(widths).enumerate() {
            if i == 3 {
                let _ = write!(text, "{cell:>width$}  ");
            } else {
                let _ = write!(text, "{cell:<width$}  ");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "{} of {}",
        crate::plural(lines.len() as u64 - 1, "run", "runs"),
        table.rows.len()
    );
    out.into_bytes()
}

/// The selected runs as one JSON document: `{"runs": [{file, run_id, exit_reason, steps,
/// error_kind, error_kinds}]}`.
pub fn render_list_json(table: &RunTable, selector: &Selector) -> Vec<u8> {
    let runs: Vec<Value> = table
        .rows
        .iter()
        .filter(|r| selector.matches(r))
        .map(|row| {
            json!({
                "file": file_of(table, row),
                "run_id": row.run_id,
                "exit_reason": row.ending.as_str(),
                "steps": row.steps,
                "error_kind": row.error_kinds.first(),
                "error_kinds": row.error_kinds,
            })
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&json!({ "runs": runs })).unwrap_or_default();
    text.push('\n');
    text.into_bytes()
}

fn file_of<'a>(table: &'a RunTable, row: &RunRow) -> &'a str {
    table
        .files
        .get(row.file as usize)
        .map_or("", String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_read_every_form_and_refuse_others() {
        assert_eq!(
            Selector::parse("incomplete"),
            Ok(Selector::Outcome(RunOutcome::Incomplete))
        );
        assert_eq!(
            Selector::parse("tool=calc"),
            Ok(Selector::Tool("calc".into()))
        );
        assert_eq!(
            Selector::parse("error_kind=a=b"),
            Ok(Selector::ErrorKind("a=b".into()))
        );
        assert_eq!(
            Selector::parse("source=codex"),
            Ok(Selector::Source("codex".into()))
        );
        assert!(
            Selector::parse("finish")
                .unwrap_err()
                .contains("finished, max_steps")
        );
        assert!(
            Selector::parse("colour=red")
                .unwrap_err()
                .contains("unknown key `colour`")
        );
        assert!(Selector::parse("tool=").unwrap_err().contains("empty"));
    }
}
