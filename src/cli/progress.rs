//! `eval`'s progress line on stderr: tasks done of all, rate, time left, and a live tally of how
//! the finished tasks ended and how many failed.

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use looptrace::eval::TaskResult;
use looptrace::run::ExitReason;

/// How the tasks done so far ended.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Tasks per exit reason, in the order of [`ExitReason::ALL`].
    pub reasons: [u64; 4],
    /// Tasks that failed (an unmet expectation, or an internal error without expectations).
    pub failed: u64,
}

impl Tally {
    /// Counts one task.
    pub fn add(&mut self, task: &TaskResult) {
        if let Some(at) = ExitReason::ALL.iter().position(|r| *r == task.exit_reason) {
            self.reasons[at] += 1;
        }
        if task.fails() {
            self.failed += 1;
        }
    }

    /// `6 finished, 1 max_steps_exceeded, 3 failed`: the reasons seen so far and the failures.
    pub fn message(&self) -> String {
        let mut parts: Vec<String> = ExitReason::ALL
            .iter()
            .zip(self.reasons)
            .filter(|(_, n)| *n > 0)
            .map(|(reason, n)| format!("{n} {reason}"))
            .collect();
        parts.push(format!("{} failed", self.failed));
        parts.join(", ")
    }
}

/// The progress line, drawn only when stderr is a terminal.
pub struct Progress {
    bar: ProgressBar,
    tally: Mutex<Tally>,
}

impl Progress {
    /// A progress line for `len` tasks, or `None` when stderr is no terminal.
    pub fn new(len: usize) -> Option<Progress> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{pos}/{len} tasks {wide_bar} {per_sec} ETA {eta} | {msg}")
        {
            bar.set_style(style);
        }
        Some(Progress {
            bar,
            tally: Mutex::new(Tally::default()),
        })
    }

    /// Notes one task done, `done` in all.
    pub fn task_done(&self, done: usize, task: &TaskResult) {
        let message = match self.tally.lock() {
            Ok(mut tally) => {
                tally.add(task);
                tally.message()
            }
            Err(_) => return,
        };
        self.bar.set_message(message);
        self.bar.set_position(done as u64);
    }

    /// Removes the line before the report is printed.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_reasons_seen_and_the_failures() {
        let mut tally = Tally::default();
        assert_eq!(tally.message(), "0 failed");
        tally.reasons = [6, 0, 2, 1];
        tally.failed = 3;
        assert_eq!(
            tally.message(),
            "6 finished, 2 invalid_model_output, 1 internal_error, 3 failed"
        );
    }
}
