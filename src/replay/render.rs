//! Replay output: readable text and JSON, pure functions from results to text. Every text from a
//! trace in the readable output is escaped ([`crate::text::escape`]).

use std::fmt::Write;

use serde::Serialize;

use super::runner::{ModelSource, ToolMode};
use super::verdict::{Divergence, NotCompared, RunCheck, RunReplay, Verdict};
use crate::text::escape;

/// What was replayed and how, with every run's result: the JSON document of `--format json`.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport<'a> {
    /// The trace's file name.
    pub source: &'a str,
    /// `live` or `recorded`.
    pub tools: ToolMode,
    /// `parsed` or `raw`.
    pub model: ModelSource,
    /// Runs that came out the same.
    pub faithful: usize,
    /// Runs that diverged.
    pub diverged: usize,
    /// Each run's replay.
    pub runs: &'a [RunReplay],
}

impl<'a> ReplayReport<'a> {
    /// A report of `runs`, counting the verdicts.
    pub fn new(
        source: &'a str,
        tools: ToolMode,
        model: ModelSource,
        runs: &'a [RunReplay],
    ) -> Self {
        let faithful = runs
            .iter()
            .filter(|r| r.verdict == Verdict::Faithful)
            .count();
        ReplayReport {
            source,
            tools,
            model,
            faithful,
            diverged: runs.len() - faithful,
            runs,
        }
    }
}

/// The readable report: one block per run, then a count.
pub fn render_text(report: &ReplayReport<'_>) -> String {
    let mut out = String::new();
    for run in report.runs {
        render_run_text(run, &mut out);
    }
    out.push_str(&summary_line(report));
    out
}

/// One run's block of the readable report, added to `out`: what [`render_text`] writes for it.
pub fn render_run_text(run: &RunReplay, out: &mut String) {
    match run.verdict {
        Verdict::Faithful => {
            let _ = writeln!(out, "{}: faithful ({})", escape(&run.run_id), run.actual);
        }
        Verdict::Diverged => {
            let _ = writeln!(
                out,
                "{}: diverged (recorded {}, rerun {})",
                escape(&run.run_id),
                run.recorded,
                run.actual
            );
        }
    }
    for divergence in &run.divergences {
        render_divergence(out, divergence);
    }
    if !run.not_compared.is_empty() {
        let _ = writeln!(
            out,
            "  not compared (the recording lacks them): {}",
            describe_not_compared(&run.not_compared)
        );
    }
    if run.stopped {
        let _ = writeln!(out, "  (stopped at the first divergence)");
    }
    if let Some(id) = &run.replay_run_id {
        let _ = writeln!(out, "  rerun recorded as run {id}");
    }
}

/// The report's last line, alone for `--quiet`: how many runs were replayed and how they came out.
pub fn summary_line(report: &ReplayReport<'_>) -> String {
    let model = match report.model {
        ModelSource::Parsed => "",
        ModelSource::Raw => " and raw model output",
    };
    format!(
        "{} of {} replayed with {} tools{model}: {} faithful, {} diverged\n",
        plural(report.faithful + report.diverged, "run"),
        escape(report.source),
        report.tools.as_str(),
        report.faithful,
        report.diverged
    )
}

/// `observation.is_error (steps 1, 2), run_finished.error_kind (step 3)`: each field once, with
/// its steps.
fn describe_not_compared(fields: &[NotCompared]) -> String {
    let mut grouped: Vec<(String, Vec<u64>)> = Vec::new();
    for item in fields {
        let name = format!("{}.{}", item.event, item.field);
        match grouped.iter_mut().find(|(field, _)| *field == name) {
            Some((_, steps)) => steps.push(item.step),
            None => grouped.push((name, vec![item.step])),
        }
    }
    grouped
        .iter()
        .map(|(field, steps)| {
            let list: Vec<String> = steps.iter().map(u64::to_string).collect();
            let noun = if steps.len() == 1 { "step" } else { "steps" };
            format!("{field} ({noun} {})", list.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn render_divergence(out: &mut String, divergence: &Divergence) {
    let at = divergence
        .path
        .as_deref()
        .map(|path| format!(" at {}", escape(path)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  step {}  {} ({}){at}",
        divergence.step,
        divergence.what.describe(),
        divergence.what
    );
    // The values at a request's path are JSON already; other texts are quoted.
    let side = |value: &str, text: &Option<String>| match text {
        Some(text) if divergence.path.is_some() => escape(&format!("{value}  {text}")).into_owned(),
        Some(text) => escape(&format!("{value}  {text:?}")).into_owned(),
        None => escape(value).into_owned(),
    };
    let _ = writeln!(
        out,
        "    recorded: {}",
        side(&divergence.recorded, &divergence.recorded_text)
    );
    let _ = writeln!(
        out,
        "    actual:   {}",
        side(&divergence.actual, &divergence.actual_text)
    );
}

/// The report as one pretty-printed JSON document.
pub fn render_json(report: &ReplayReport<'_>) -> String {
    let mut text = serde_json::to_string_pretty(report).unwrap_or_default();
    text.push('\n');
    text
}

/// The JSON document of [`render_json`] up to its `runs` array's opening bracket, for a report
/// whose runs are written one at a time ([`render_run_json`], then [`json_runs_tail`]): `report`
/// has the counts and no runs.
pub fn json_runs_head(report: &ReplayReport<'_>) -> String {
    let mut text = serde_json::to_string_pretty(report).unwrap_or_default();
    // The document ends with its last field, the empty array: `"runs": []` and `}`.
    if text.ends_with("[]\n}") {
        text.truncate(text.len() - "]\n}".len());
    }
    text
}

/// One run of the `runs` array of [`render_json`] added to `out`, as the whole document has it:
/// the separator before it (none for the first run), then the run indented to its depth.
pub fn render_run_json(run: &RunReplay, first: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(if first { b"\n    " } else { b",\n    " });
    let text = serde_json::to_string_pretty(run).unwrap_or_default();
    // Pretty JSON has a line break only between its tokens (one inside a string is `\n`).
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.extend_from_slice(b"\n    ");
        }
        out.extend_from_slice(line.as_bytes());
    }
}

/// The end of the document [`json_runs_head`] began, after at least one run.
pub fn json_runs_tail() -> &'static str {
    "\n  ]\n}\n"
}

/// [`render_json`] written to `out` as it is made, never held whole.
pub fn write_json(report: &ReplayReport<'_>, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    out.write_all(b"\n")
}

/// The JSON document of `--check`.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport<'a> {
    /// The trace's file name.
    pub source: &'a str,
    /// Each run's check.
    pub runs: &'a [RunCheck],
}

/// The readable `--check` report: one line per run, then a count.
pub fn render_check_text(report: &CheckReport<'_>) -> String {
    let mut out = String::new();
    for run in report.runs {
        let _ = writeln!(
            out,
            "{}: replayable ({}, {}, max_steps {}, recorded {})",
            escape(&run.run_id),
            plural(run.model_turns, "model turn"),
            plural(run.observations, "observation"),
            run.max_steps,
            run.recorded
        );
    }
    out.push_str(&check_summary_line(report));
    out
}

/// The `--check` report's last line, alone for `--quiet`.
pub fn check_summary_line(report: &CheckReport<'_>) -> String {
    format!(
        "{} of {} can be replayed\n",
        plural(report.runs.len(), "run"),
        escape(report.source)
    )
}

/// The `--check` report as one pretty-printed JSON document.
pub fn render_check_json(report: &CheckReport<'_>) -> String {
    let mut text = serde_json::to_string_pretty(report).unwrap_or_default();
    text.push('\n');
    text
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{DivergenceKind, Ending};

    fn run(id: &str, diverged: bool) -> RunReplay {
        let mut divergence = Divergence::new(2, DivergenceKind::Observation, "chars=1", "chars=2");
        divergence.recorded_text = Some("line one\nline \"two\"\t{[".to_owned());
        RunReplay {
            run_id: id.to_owned(),
            verdict: if diverged {
                Verdict::Diverged
            } else {
                Verdict::Faithful
            },
            max_steps: 5,
            recorded: Ending {
                outcome: "finished",
                steps_used: Some(2),
            },
            actual: Ending {
                outcome: "finished",
                steps_used: None,
            },
            divergences: if diverged {
                vec![divergence]
            } else {
                Vec::new()
            },
            not_compared: vec![NotCompared {
                step: 1,
                event: "observation",
                field: "is_error",
            }],
            stopped: diverged,
            replay_run_id: diverged.then(|| "rerun-1".to_owned()),
        }
    }

    #[test]
    fn the_json_written_run_by_run_is_the_whole_documents_bytes() {
        for runs in [
            vec![run("a", false)],
            vec![run("a\n\u{1b}[31m", true), run("b", false), run("c", true)],
        ] {
            let report = ReplayReport::new("t.jsonl", ToolMode::Recorded, ModelSource::Raw, &runs);
            let mut pieces = json_runs_head(&ReplayReport {
                runs: &[],
                ..report.clone()
            })
            .into_bytes();
            for (i, run) in runs.iter().enumerate() {
                render_run_json(run, i == 0, &mut pieces);
            }
            pieces.extend_from_slice(json_runs_tail().as_bytes());
            assert_eq!(String::from_utf8(pieces).unwrap(), render_json(&report));
            let counted = ReplayReport {
                runs: &[],
                ..report.clone()
            };
            assert_eq!(summary_line(&counted), summary_line(&report));
        }
    }
}
