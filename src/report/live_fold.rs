//! The report's fold fed runs as they are written: an evaluation hands each run's trace lines
//! over as its writer wrote them ([`crate::trace::RunTap`]), and they go through the same scan
//! and the same merge as a file's chunks, so the totals and rows of its HTML page need no second
//! reading of the files it just wrote. Only the totals and the runs' rows are kept; a run's
//! lines are dropped once it is folded.
//!
//! Each trace file gets a number when its first run comes; [`FoldedRuns::analyze`] gives the
//! files their places among the page's inputs (which may also name files on disk: the runs an
//! evaluation keeps from earlier ones) and finishes the report as [`super::analyze_runs`] would.
//! Anything the fold cannot mirror exactly (a failed write, a line the scanner refuses, a run id
//! in two files) marks it broken, and the caller reads the files instead, which says what is
//! wrong the way `report` does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::aggregate::Merger;
use super::analyze::{Folded, Options, analyze_after};
use super::chunk::{ScanSettings, scan_chunk};
use super::error::ReportError;
use super::input::Input;
use super::model::{Report, Warning};
use super::row_fold::RowMode;
use super::rows::RunTable;
use crate::trace::RunTap;

/// The fold of runs handed over as they are written, shared by the threads that write them.
#[derive(Debug)]
pub struct LiveFold {
    rows: RowMode,
    /// The longest line accepted, as a report of the files would.
    max_line: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    merger: Merger,
    /// The trace files in the order their first run came, with their lines so far.
    files: Vec<(PathBuf, u64)>,
    index: HashMap<PathBuf, u32>,
    /// The file each run id was seen in, by the fingerprint of the id.
    run_files: HashMap<u64, u32>,
    broken: bool,
}

impl LiveFold {
    /// An empty fold whose runs keep rows as `rows` says.
    pub fn new(rows: RowMode) -> Self {
        LiveFold {
            rows,
            // Taken once: the default options ask the system for its cores.
            max_line: Options::default().max_line,
            state: Mutex::new(State::default()),
        }
    }

    /// Folds `lines`, one run's (or part of one's) whole lines as written to `trace`.
    pub fn add(&self, trace: &Path, lines: &[u8]) {
        let file = {
            let mut state = self.lock();
            match state.index.get(trace) {
                Some(&file) => file,
                None => {
                    let file = u32::try_from(state.files.len()).unwrap_or(u32::MAX);
                    state.files.push((trace.to_path_buf(), 0));
                    state.index.insert(trace.to_path_buf(), file);
                    file
                }
            }
        };
        // Scanned outside the lock: runs end on several threads at once.
        let settings = ScanSettings {
            lenient: false,
            max_line: self.max_line,
            collect_ids: true,
            rows: self.rows,
        };
        let mut report = scan_chunk(lines, file, true, settings);
        let mut state = self.lock();
        let whole = report.error.is_none()
            && report.truncated.is_none()
            && report.cut_off.is_empty()
            && report.cut_at_end.is_none()
            && report.skipped == 0;
        if !whole || state.broken {
            state.broken = true;
            return;
        }
        for (key, _) in std::mem::take(&mut report.parts.run_ids) {
            if *state.run_files.entry(key).or_insert(file) != file {
                state.broken = true;
            }
        }
        state.files[file as usize].1 += report.lines;
        state.merger.add(report.parts);
    }

    /// What was written to `trace` no longer matches what the fold was given.
    pub fn break_off(&self) {
        self.lock().broken = true;
    }

    /// The runs folded, or `None` when the fold could not mirror what was written.
    pub fn finish(self) -> Option<FoldedRuns> {
        let state = self
            .state
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        (!state.broken).then_some(FoldedRuns {
            merger: Box::new(state.merger),
            files: state.files,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RunTap for LiveFold {
    fn run_written(&self, trace: &Path, lines: &[u8]) {
        self.add(trace, lines);
    }

    fn write_failed(&self, _trace: &Path) {
        self.break_off();
    }
}

/// The runs a [`LiveFold`] folded, waiting for their files' places among a report's inputs.
#[derive(Debug)]
pub struct FoldedRuns {
    merger: Box<Merger>,
    files: Vec<(PathBuf, u64)>,
}

impl FoldedRuns {
    /// The trace files folded, as named when their runs were added, in the order first seen.
    pub fn traces(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|(path, _)| path.as_path())
    }

    /// The report and rows of `inputs`, which hold the folded files at the places `at` gives
    /// (`at[i]` for the `i`-th of [`FoldedRuns::traces`]; those inputs are not read, so their
    /// sources should be empty) and any others to read, as [`super::analyze_runs`] computes them.
    pub fn analyze(
        mut self,
        inputs: &[Input],
        at: &[u32],
        options: &Options,
        warnings: Vec<Warning>,
    ) -> Result<(Report, RunTable), ReportError> {
        self.merger
            .renumber_inputs(&|file| at.get(file as usize).copied().unwrap_or(file));
        let mut lines = vec![0; inputs.len()];
        for ((_, count), &place) in self.files.iter().zip(at) {
            if let Some(slot) = lines.get_mut(place as usize) {
                *slot = *count;
            }
        }
        let folded = Folded {
            merger: *self.merger,
            lines,
        };
        analyze_after(inputs, options, warnings, folded)
    }
}
