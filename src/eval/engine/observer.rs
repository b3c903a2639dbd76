//! What an evaluation tells while it runs. The console's progress line and the OTLP push
//! subscribe here; so can statistics or a page that updates as runs end, and the HTML page,
//! which folds each run's trace lines as they are written ([`EvalObserver::trace_tap`]). Every
//! method has an empty default, and runs finish on the runner's threads, so an observer is
//! `Sync`.

use std::sync::Arc;

use crate::eval::TaskResult;
use crate::trace::RunTap;

/// Receives an evaluation's progress. Calls come from the runner's worker threads.
pub trait EvalObserver: Sync {
    /// A run ended and its row was written to the run's log: `done` runs of this evaluation
    /// have ended so far (counted across adaptive epochs).
    fn run_finished(&self, done: usize, row: &TaskResult) {
        let _ = (done, row);
    }

    /// The last run ended (or the evaluation was stopped); nothing more will be reported.
    fn finished(&self) {}

    /// Who reads every run's trace lines as they are written to this evaluation's traces
    /// (asked once, before the first run); `None`, the default, copies nothing.
    fn trace_tap(&self) -> Option<Arc<dyn RunTap>> {
        None
    }
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl EvalObserver for Quiet {}

/// Several observers, each told everything in turn.
impl<A: EvalObserver, B: EvalObserver> EvalObserver for (A, B) {
    fn run_finished(&self, done: usize, row: &TaskResult) {
        self.0.run_finished(done, row);
        self.1.run_finished(done, row);
    }

    fn finished(&self) {
        self.0.finished();
        self.1.finished();
    }

    /// The first one's tap, else the second's: one tap reads the lines.
    fn trace_tap(&self) -> Option<Arc<dyn RunTap>> {
        self.0.trace_tap().or_else(|| self.1.trace_tap())
    }
}
