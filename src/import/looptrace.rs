//! looptrace's own trace v1: events pass through unchanged, so `import` also normalizes and
//! concatenates looptrace files.

use std::io::BufRead;

use super::error::ImportError;
use super::importer::{Context, Imported, Importer, Sink, for_each_raw_line, head_text};
use crate::trace::parse_line;

/// `--from looptrace`.
pub struct Looptrace;

impl Importer for Looptrace {
    fn name(&self) -> &'static str {
        "looptrace"
    }

    fn probe(&self, _name: &str, head: &[u8]) -> u8 {
        let text = head_text(head);
        let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let has = |key: &str| line.contains(&format!("\"{key}\""));
        if has("run_id") && has("step") && has("event_type") {
            90
        } else {
            0
        }
    }

    fn import(
        &self,
        input: &mut dyn BufRead,
        context: &Context,
        out: &mut Sink<'_>,
    ) -> Result<(), ImportError> {
        for_each_raw_line(input, context, |number, line| match parse_line(line) {
            Ok(Some(event)) => out(Imported::Event(Box::new(event))),
            Ok(None) => Ok(()),
            Err(message) => Err(context.malformed(format!("line {number}"), message)),
        })
    }
}
