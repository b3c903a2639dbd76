//! Who else reads the lines a trace writer writes. An evaluation's HTML page folds each run's
//! lines as they are written instead of reading the files again: a [`TraceWriter`] given a tap
//! hands it every run's lines, exactly as they went to the file, once the run's `run_finished`
//! is written (or the writer is dropped, for a run that never finished).
//!
//! [`TraceWriter`]: super::TraceWriter

use std::path::Path;

/// Receives the lines written to trace files, a run at a time. Calls come from the threads that
/// run the runs.
pub trait RunTap: Send + Sync {
    /// `lines` (whole lines, each ending with `\n`, in the order written) were appended to the
    /// trace file `trace`: the events of one run, or of the part of it written by one writer.
    fn run_written(&self, trace: &Path, lines: &[u8]);

    /// A write to `trace` failed: the file may hold a line cut short that no tap was given, so
    /// what the tap was given no longer mirrors the file.
    fn write_failed(&self, trace: &Path);
}
