//! The streaming driver: runs come from a [`RunStream`] as each ends, are turned into spans and
//! written at once, so only the runs still open are held, whatever the size of the input.

use std::io::{Read, Write};

use super::build::{BuildOptions, build_run};
use super::ids::TraceIds;
use super::json::encode_run;
use crate::trace::{Capture, RunStream, TraceError};

/// What one export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Runs written, one line each.
    pub runs: u64,
    /// Spans written.
    pub spans: u64,
    /// Runs exported without content although content was asked for: not full capture.
    pub without_content: u64,
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The input is malformed or unreadable.
    #[error(transparent)]
    Input(#[from] TraceError),
    /// Writing the output failed.
    #[error("failed to write the export: {0}")]
    Write(std::io::Error),
}

/// Exports every run of `stream`, whose file is named `file`, to `out`, one line per run.
pub fn export_stream<R: Read>(
    stream: &mut RunStream<R>,
    file: &str,
    ids: &mut TraceIds,
    options: &BuildOptions,
    out: &mut dyn Write,
    stats: &mut ExportStats,
) -> Result<(), ExportError> {
    let mut line = Vec::with_capacity(64 * 1024);
    for run in stream {
        let streamed = run?;
        let run = &streamed.run;
        let trace_id = ids.assign(file, &run.run_id, streamed.occurrence);
        let exported = build_run(run, trace_id, file, options);
        if options.content && run.started().and_then(|e| e.capture) != Some(Capture::Full) {
            stats.without_content += 1;
        }
        line.clear();
        encode_run(&exported, &mut line);
        out.write_all(&line).map_err(ExportError::Write)?;
        stats.runs += 1;
        stats.spans += exported.spans.len() as u64;
    }
    Ok(())
}
