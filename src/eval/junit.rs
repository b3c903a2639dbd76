//! JUnit XML, one testcase per task, so CI systems show an evaluation natively: a failed
//! expectation is a `failure`, an internal error that was not expected is an `error`.

use std::io::Write;

use super::expect::Verdict;
use super::results::{ResultsFile, TaskResult};
use super::rows_on_disk::RowsOnDisk;
use crate::run::ExitReason;

/// Rows that can be gone through more than once without being held together: the rows of a
/// results file in memory, or an evaluation's rows set aside in order ([`RowsOnDisk`]).
pub trait EachRow {
    /// Calls `each` with every row, in order.
    fn each_row(
        &self,
        each: &mut dyn FnMut(&TaskResult) -> Result<(), String>,
    ) -> Result<(), String>;
}

impl EachRow for [TaskResult] {
    fn each_row(
        &self,
        each: &mut dyn FnMut(&TaskResult) -> Result<(), String>,
    ) -> Result<(), String> {
        self.iter().try_for_each(each)
    }
}

impl EachRow for RowsOnDisk {
    fn each_row(
        &self,
        each: &mut dyn FnMut(&TaskResult) -> Result<(), String>,
    ) -> Result<(), String> {
        self.for_each(|row| each(&row))
    }
}

/// Renders the results as a JUnit XML document.
pub fn render_junit(results: &ResultsFile) -> String {
    let mut out = Vec::new();
    // Writing to memory fails only if a row does, and rows in memory never do.
    let _ = write_junit(
        &mut out,
        &results.suite.name,
        &results.created_at,
        &results.tasks[..],
    );
    String::from_utf8(out).unwrap_or_default()
}

/// Writes the JUnit XML document for `rows` to `out`, going through the rows twice (to count,
/// then to write), so a large evaluation's rows are never held together.
pub fn write_junit(
    out: &mut dyn Write,
    suite_name: &str,
    created_at: &str,
    rows: &(impl EachRow + ?Sized),
) -> Result<(), String> {
    let (mut tests, mut failures, mut errors, mut millis) = (0usize, 0usize, 0usize, 0.0f64);
    rows.each_row(&mut |task| {
        tests += 1;
        match outcome(task) {
            Outcome::Failure => failures += 1,
            Outcome::Error => errors += 1,
            Outcome::Pass => {}
        }
        millis += task.duration_ms;
        Ok(())
    })?;
    let seconds = millis / 1000.0;
    let suite = xml_escape(suite_name);
    let failed = |err: std::io::Error| err.to_string();
    write!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"looptrace\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{seconds:.3}\">\n\
         \x20 <testsuite name=\"{suite}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{seconds:.3}\" timestamp=\"{}\">\n",
        xml_escape(created_at)
    )
    .map_err(failed)?;
    rows.each_row(&mut |task| write_case(out, &suite, task).map_err(failed))?;
    out.write_all(b"  </testsuite>\n</testsuites>\n")
        .map_err(failed)
}

/// One task's `testcase`.
fn write_case(out: &mut dyn Write, suite: &str, task: &TaskResult) -> std::io::Result<()> {
    let head = format!(
        "    <testcase name=\"{}\" classname=\"{suite}\" time=\"{:.3}\"",
        xml_escape(&task.label()),
        task.duration_ms / 1000.0
    );
    let properties = properties(task);
    match outcome(task) {
        Outcome::Pass if properties.is_empty() => writeln!(out, "{head}/>"),
        Outcome::Pass => writeln!(out, "{head}>\n{properties}    </testcase>"),
        Outcome::Failure => writeln!(
            out,
            "{head}>\n{properties}      <failure type=\"expectation\" message=\"{}\">exit reason: {}, steps used: {}</failure>\n    </testcase>",
            xml_escape(&task.failures.join("; ")),
            task.exit_reason,
            task.steps_used
        ),
        Outcome::Error => writeln!(
            out,
            "{head}>\n{properties}      <error type=\"internal_error\" message=\"{}\">{}</error>\n    </testcase>",
            xml_escape(task.error_kind.as_deref().unwrap_or("unclassified")),
            xml_escape(task.error.as_deref().unwrap_or(""))
        ),
    }
}

/// The model a row ran against, as `<properties>`: the model as given, its kind, and for a
/// live model its wire format, model name and server. None for a task's own scripted model.
fn properties(task: &TaskResult) -> String {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    if task.given_model().is_some() || task.chat.is_some() {
        pairs.push(("model", &task.model));
        if let Some(kind) = &task.model_kind {
            pairs.push(("model_kind", kind));
        }
    }
    if let Some(chat) = &task.chat {
        pairs.push(("api", &chat.api));
        pairs.push(("model_name", &chat.model));
        if let Some(provider) = &chat.provider {
            pairs.push(("provider", provider));
        }
    }
    if pairs.is_empty() {
        return String::new();
    }
    let mut out = String::from("      <properties>\n");
    for (name, value) in pairs {
        out.push_str(&format!(
            "        <property name=\"{name}\" value=\"{}\"/>\n",
            xml_escape(value)
        ));
    }
    out.push_str("      </properties>\n");
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pass,
    Failure,
    Error,
}

fn outcome(task: &TaskResult) -> Outcome {
    if task.exit_reason == ExitReason::InternalError && task.expectation != Verdict::Met {
        Outcome::Error
    } else if task.expectation == Verdict::Failed {
        Outcome::Failure
    } else {
        Outcome::Pass
    }
}

/// Escapes text for XML attributes and content; drops characters XML 1.0 cannot carry.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}
