//! JUnit XML, one testcase per task, so CI systems show an evaluation natively: a failed
//! expectation is a `failure`, an internal error that was not expected is an `error`.

use super::expect::Verdict;
use super::results::ResultsFile;
use crate::run::ExitReason;

/// Renders the results as a JUnit XML document.
pub fn render_junit(results: &ResultsFile) -> String {
    let suite = xml_escape(&results.suite.name);
    let failures = results
        .tasks
        .iter()
        .filter(|t| outcome(t) == Outcome::Failure)
        .count();
    let errors = results
        .tasks
        .iter()
        .filter(|t| outcome(t) == Outcome::Error)
        .count();
    let seconds: f64 = results.tasks.iter().map(|t| t.duration_ms).sum::<f64>() / 1000.0;
    let tests = results.tasks.len();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"looptrace\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{seconds:.3}\">\n"
    ));
    out.push_str(&format!(
        "  <testsuite name=\"{suite}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{seconds:.3}\" timestamp=\"{}\">\n",
        xml_escape(&results.created_at)
    ));
    for task in &results.tasks {
        let head = format!(
            "    <testcase name=\"{}\" classname=\"{suite}\" time=\"{:.3}\"",
            xml_escape(&task.label()),
            task.duration_ms / 1000.0
        );
        match outcome(task) {
            Outcome::Pass => out.push_str(&format!("{head}/>\n")),
            Outcome::Failure => {
                let why = task.failures.join("; ");
                out.push_str(&format!(
                    "{head}>\n      <failure type=\"expectation\" message=\"{}\">exit reason: {}, steps used: {}</failure>\n    </testcase>\n",
                    xml_escape(&why),
                    task.exit_reason,
                    task.steps_used
                ));
            }
            Outcome::Error => {
                let kind = task.error_kind.as_deref().unwrap_or("unclassified");
                out.push_str(&format!(
                    "{head}>\n      <error type=\"internal_error\" message=\"{}\">{}</error>\n    </testcase>\n",
                    xml_escape(kind),
                    xml_escape(task.error.as_deref().unwrap_or(""))
                ));
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pass,
    Failure,
    Error,
}

fn outcome(task: &super::results::TaskResult) -> Outcome {
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
