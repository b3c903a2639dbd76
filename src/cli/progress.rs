//! `eval`'s progress on stderr, in the form that suits where it goes (`--progress`): a line per
//! finished attempt for CI logs (the default when stderr is not a terminal), a live bar on a
//! terminal, a periodic summary, or nothing. A CI log is never silent for long: while attempts
//! run and nothing else is printed, a line says how far the evaluation is every minute.

use std::io::{IsTerminal, Write};
use std::str::FromStr;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use looptrace::eval::TaskResult;
use looptrace::run::ExitReason;

/// How long a `lines` log may stay silent while attempts run.
const HEARTBEAT: Duration = Duration::from_secs(60);

/// `--progress`: how progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// One line per finished attempt (task id, model, exit reason, verdict, duration).
    Lines,
    /// A live bar with a tally, redrawn in place (terminals).
    Bar,
    /// A line with the counts every so often.
    Summary(Duration),
    /// Nothing.
    None,
}

impl ProgressMode {
    /// `lines` when stderr is not a terminal, else `bar`.
    pub fn for_stderr() -> ProgressMode {
        if std::io::stderr().is_terminal() {
            ProgressMode::Bar
        } else {
            ProgressMode::Lines
        }
    }
}

impl FromStr for ProgressMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "lines" => Ok(ProgressMode::Lines),
            "bar" => Ok(ProgressMode::Bar),
            "none" => Ok(ProgressMode::None),
            "summary" => Ok(ProgressMode::Summary(Duration::from_secs(30))),
            _ => match text.strip_prefix("summary=").map(str::parse::<f64>) {
                Some(Ok(seconds)) if seconds.is_finite() && seconds > 0.0 => Ok(
                    ProgressMode::Summary(Duration::from_secs_f64(seconds.min(86_400.0))),
                ),
                _ => Err(format!(
                    "expected `lines`, `bar`, `summary`, `summary=SECONDS` (a positive number) or `none`, got {text:?}"
                )),
            },
        }
    }
}

/// How the attempts done so far ended.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Attempts per exit reason, in the order of [`ExitReason::ALL`].
    pub reasons: [u64; 4],
    /// Attempts that failed (an unmet expectation, or an internal error without expectations).
    pub failed: u64,
}

impl Tally {
    /// Counts one attempt.
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

/// What the progress shows, shared with the thread that prints summaries and heartbeats.
struct State {
    tally: Tally,
    done: usize,
    /// When the last line was printed (lines and summary modes).
    last_line: Instant,
}

/// The progress of one evaluation.
pub struct Progress {
    mode: ProgressMode,
    len: usize,
    /// `tasks`, or `runs` when tasks repeat.
    unit: &'static str,
    started: Instant,
    state: Arc<Mutex<State>>,
    bar: Option<ProgressBar>,
    /// Stopped (its sender dropped) and joined by [`Progress::finish`].
    ticker: Mutex<Option<(Sender<()>, JoinHandle<()>)>>,
}

impl Progress {
    /// The progress of `len` attempts shown as `mode`; `None` for [`ProgressMode::None`] or
    /// when there is nothing to run.
    pub fn new(len: usize, repeats: u32, mode: ProgressMode) -> Option<Progress> {
        if mode == ProgressMode::None || len == 0 {
            return None;
        }
        let unit = if repeats > 1 { "runs" } else { "tasks" };
        let state = Arc::new(Mutex::new(State {
            tally: Tally::default(),
            done: 0,
            last_line: Instant::now(),
        }));
        let started = Instant::now();
        let bar = (mode == ProgressMode::Bar).then(|| bar(len, unit));
        let ticker = match mode {
            ProgressMode::Lines => Some(ticker(HEARTBEAT, Arc::clone(&state), len, unit, started)),
            ProgressMode::Summary(every) => {
                Some(ticker(every, Arc::clone(&state), len, unit, started))
            }
            ProgressMode::Bar | ProgressMode::None => None,
        };
        Some(Progress {
            mode,
            len,
            unit,
            started,
            state,
            bar,
            ticker: Mutex::new(ticker),
        })
    }

    /// Notes one attempt done, `done` in all.
    pub fn task_done(&self, done: usize, task: &TaskResult) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.tally.add(task);
        state.done = done;
        match self.mode {
            ProgressMode::Bar => {
                if let Some(bar) = &self.bar {
                    bar.set_message(state.tally.message());
                    bar.set_position(done as u64);
                }
            }
            ProgressMode::Lines => {
                state.last_line = Instant::now();
                // Printed under the lock, so lines from parallel workers never interleave.
                let _ = writeln!(std::io::stderr().lock(), "{}", attempt_line(task));
            }
            ProgressMode::Summary(_) | ProgressMode::None => {}
        }
    }

    /// Ends the progress: clears the bar, or prints the last summary line.
    pub fn finish(&self) {
        let ticker = self
            .ticker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((stop, thread)) = ticker {
            drop(stop);
            let _ = thread.join();
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if let ProgressMode::Summary(_) = self.mode {
            let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let line = summary_line(&state, self.len, self.unit, self.started.elapsed());
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
    }
}

/// The bar: `3/10 tasks [=====     ] 1.3 tasks/s ETA 5s | 3 finished, 0 failed`.
fn bar(len: usize, unit: &'static str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    let template = format!("{{pos}}/{{len}} {unit} {{wide_bar}} {{rate}} ETA {{eta}} | {{msg}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.with_key(
            "rate",
            move |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{}", rate(state.per_sec(), unit));
            },
        ));
    }
    bar
}

/// `1.3 tasks/s`: one decimal, the unit spelled out.
fn rate(per_second: f64, unit: &str) -> String {
    let per_second = if per_second.is_finite() {
        per_second
    } else {
        0.0
    };
    format!("{per_second:.1} {unit}/s")
}

/// `sum-1 r2  scripted  finished  passed  0.21s`: what a CI log shows of one finished attempt.
fn attempt_line(task: &TaskResult) -> String {
    let id = match task.repeat {
        Some(repeat) => format!("{} r{repeat}", task.id),
        None => task.id.clone(),
    };
    let model = match &task.chat {
        Some(chat) => format!("{}:{}", chat.api, chat.model),
        None => task.model.clone(),
    };
    let verdict = if task.fails() { "failed" } else { "passed" };
    let mut line = format!(
        "{id}  {model}  {}  {verdict}  {}",
        task.exit_reason,
        seconds(task.duration_ms / 1000.0)
    );
    if let Some(kind) = &task.error_kind {
        line.push_str(&format!("  ({kind})"));
    }
    looptrace::text::escape(&line).into_owned()
}

/// `0.21s`, `12.3s`, `4m05s`.
fn seconds(seconds: f64) -> String {
    let seconds = if seconds.is_finite() {
        seconds.max(0.0)
    } else {
        0.0
    };
    if seconds < 10.0 {
        format!("{seconds:.2}s")
    } else if seconds < 60.0 {
        format!("{seconds:.1}s")
    } else {
        let whole = seconds.round() as u64;
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

/// `3/10 tasks done after 1m00s (1.3 tasks/s): 3 finished, 0 failed`.
fn summary_line(state: &State, len: usize, unit: &str, elapsed: Duration) -> String {
    let per_second = state.done as f64 / elapsed.as_secs_f64().max(1e-3);
    format!(
        "{}/{len} {unit} done after {} ({}): {}",
        state.done,
        seconds(elapsed.as_secs_f64()),
        rate(per_second, unit),
        state.tally.message()
    )
}

/// A thread that prints the summary line whenever `every` has passed since the last line, until
/// its sender is dropped.
fn ticker(
    every: Duration,
    state: Arc<Mutex<State>>,
    len: usize,
    unit: &'static str,
    started: Instant,
) -> (Sender<()>, JoinHandle<()>) {
    let (stop, stopped) = mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        loop {
            let wait = {
                let state = state.lock().unwrap_or_else(PoisonError::into_inner);
                every.saturating_sub(state.last_line.elapsed())
            };
            match stopped.recv_timeout(wait) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.last_line.elapsed() >= every {
                state.last_line = Instant::now();
                let line = summary_line(&state, len, unit, started.elapsed());
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
        }
    });
    (stop, thread)
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

    #[test]
    fn modes_parse_with_a_summary_period() {
        assert_eq!("lines".parse(), Ok(ProgressMode::Lines));
        assert_eq!("bar".parse(), Ok(ProgressMode::Bar));
        assert_eq!("none".parse(), Ok(ProgressMode::None));
        assert_eq!(
            "summary".parse(),
            Ok(ProgressMode::Summary(Duration::from_secs(30)))
        );
        assert_eq!(
            "summary=2.5".parse(),
            Ok(ProgressMode::Summary(Duration::from_millis(2500)))
        );
        for bad in ["summary=0", "summary=x", "dots", "summary=-1"] {
            assert!(bad.parse::<ProgressMode>().is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_and_durations_read_as_words() {
        assert_eq!(rate(1.333_333, "tasks"), "1.3 tasks/s");
        assert_eq!(rate(f64::NAN, "runs"), "0.0 runs/s");
        assert_eq!(seconds(0.214), "0.21s");
        assert_eq!(seconds(12.34), "12.3s");
        assert_eq!(seconds(245.0), "4m05s");
    }
}
