//! What an evaluation tells while it runs. The console's progress line and the OTLP push
//! subscribe here; so can statistics or a page that updates as runs end. Every method has an
//! empty default, and runs finish on the runner's threads, so an observer is `Sync`.

use crate::eval::TaskResult;

/// Receives an evaluation's progress. Calls come from the runner's worker threads.
pub trait EvalObserver: Sync {
    /// A run ended and its row was written to the run's log: `done` runs of this evaluation
    /// have ended so far (counted across adaptive epochs).
    fn run_finished(&self, done: usize, row: &TaskResult) {
        let _ = (done, row);
    }

    /// The last run ended (or the evaluation was stopped); nothing more will be reported.
    fn finished(&self) {}
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
}
