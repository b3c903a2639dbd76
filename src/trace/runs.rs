//! Grouping a trace's events into runs by `run_id`, in order of first appearance. One file may hold
//! many runs, interleaved; a run id reused after its run ended (or restarted) starts a new run. A run without an ending event is `incomplete`: the process died.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use super::event::{EventType, TraceEvent};
use super::reader::{ReadOptions, ReadStats, TraceError, TraceReader};
use crate::run::ExitReason;

/// How a recorded run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunOutcome {
    /// It recorded an ending with this exit reason.
    Ended(ExitReason),
    /// It never recorded an ending: the process died or the file was cut.
    Incomplete,
}

impl RunOutcome {
    /// `finished`, ..., or `incomplete`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Ended(reason) => reason.as_str(),
            RunOutcome::Incomplete => "incomplete",
        }
    }
}

/// One run's events, in file order, with the line each came from.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRun {
    /// The run id.
    pub run_id: String,
    /// The events and their 1-based line numbers.
    pub events: Vec<(u64, TraceEvent)>,
}

impl RecordedRun {
    /// The run's outcome, from its first ending event.
    pub fn outcome(&self) -> RunOutcome {
        self.events
            .iter()
            .find_map(|(_, e)| e.ending())
            .map_or(RunOutcome::Incomplete, RunOutcome::Ended)
    }

    /// The `run_started` event, if it was recorded.
    pub fn started(&self) -> Option<&TraceEvent> {
        self.events
            .iter()
            .map(|(_, e)| e)
            .find(|e| e.event_type == EventType::RunStarted)
    }

    /// The ending event, if any.
    pub fn finished(&self) -> Option<&TraceEvent> {
        self.events
            .iter()
            .map(|(_, e)| e)
            .find(|e| e.ending().is_some())
    }
}

/// A whole trace file, grouped into runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceContents {
    /// Runs in order of first appearance.
    pub runs: Vec<RecordedRun>,
    /// What the reader noticed.
    pub stats: ReadStats,
}

impl TraceContents {
    /// Groups events from any reader.
    pub fn from_reader<R: std::io::Read>(reader: TraceReader<R>) -> Result<Self, TraceError> {
        // Per run id: the slot of its latest run, and whether that run has started and ended.
        let mut index: HashMap<String, (usize, bool, bool)> = HashMap::new();
        let mut runs: Vec<RecordedRun> = Vec::new();
        let mut reader = reader;
        for item in reader.by_ref() {
            let (line, event) = item?;
            let starts = event.event_type == EventType::RunStarted;
            let ends = event.ending().is_some();
            // A reused run id starts a new run once the old one has ended, and run_started
            // always starts one (events of the id before it were an incomplete run), the rule
            // of `docs/report.md` that `looptrace report` uses.
            let slot = match index.get_mut(&event.run_id) {
                Some((slot, started, ended)) if !(*ended || starts) => {
                    *started |= starts;
                    *ended |= ends;
                    *slot
                }
                _ => {
                    index.insert(event.run_id.clone(), (runs.len(), starts, ends));
                    runs.push(RecordedRun {
                        run_id: event.run_id.clone(),
                        events: Vec::new(),
                    });
                    runs.len() - 1
                }
            };
            runs[slot].events.push((line, event));
        }
        Ok(TraceContents {
            runs,
            stats: reader.into_stats(),
        })
    }

    /// The run with this id.
    pub fn run(&self, run_id: &str) -> Option<&RecordedRun> {
        self.runs.iter().find(|r| r.run_id == run_id)
    }
}

/// Reads and groups a trace file. The file is opened read-only.
pub fn read_trace(path: &Path, options: ReadOptions) -> Result<TraceContents, TraceError> {
    let file = File::open(path).map_err(|source| TraceError::Io {
        path: path.display().to_string(),
        source,
    })?;
    TraceContents::from_reader(TraceReader::new(file, path.display(), options))
}
