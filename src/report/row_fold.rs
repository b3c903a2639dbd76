//! The run rows of the views that name runs (the HTML page, `report --list`), built by the
//! report's own fold: each run's state ([`super::aggregate`]) carries a [`RowState`] when rows
//! are wanted, fed the same lines in the same pass, joined across chunks by the same rules and
//! finished into a [`RunRow`] when the fold counts the run. The runs the table shows are
//! therefore exactly the runs the totals count.

use std::collections::BTreeSet;

use super::rows::{RunRow, TimelineStep};
use crate::run::RunOutcome;
use crate::trace::{Event, EventKind};

/// Whether the fold keeps a row per run, and with its events' timeline or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RowMode {
    /// Totals only.
    #[default]
    Off,
    /// A row per run, without timelines (`report --list`).
    Rows,
    /// A row per run with its timeline (the HTML page).
    Timelines,
}

/// What a run's row has gathered so far (or a part of the run's, between chunks).
#[derive(Debug, Clone, Default)]
pub(crate) struct RowState {
    /// Where the run first appeared: the chunk (numbered in input order by the merge) and the
    /// event within it; rows are listed in this order.
    pub first: (u64, u64),
    /// The input it first appeared in.
    pub file: u32,
    run_id: String,
    task_id: Option<String>,
    /// The error kinds of its events in order, each once (the ending's is put first at the end).
    error_kinds: Vec<String>,
    tools: BTreeSet<String>,
    /// The finish gate's latest verdict.
    verdict: Option<&'static str>,
    timeline: Vec<TimelineStep>,
}

impl RowState {
    /// The row of a run first seen at event `at` of its chunk, in input `file`.
    pub(crate) fn new(run_id: &[u8], file: u32, at: u64) -> Box<RowState> {
        Box::new(RowState {
            first: (0, at),
            file,
            run_id: String::from_utf8_lossy(run_id).into_owned(),
            ..RowState::default()
        })
    }

    /// Adds one event of the run, read from its line. A line the scanner accepted and serde
    /// does not (the differential tests hold that to never happen) adds nothing to the row.
    pub(crate) fn add_line(&mut self, line: &[u8], mode: RowMode) {
        let Ok(event) = serde_json::from_slice::<Event>(line) else {
            return;
        };
        if let Some(kind) = event.error_kind()
            && !self.error_kinds.iter().any(|known| known == kind)
        {
            self.error_kinds.push(kind.to_owned());
        }
        match &event.kind {
            EventKind::RunStarted(started) if self.task_id.is_none() => {
                self.task_id.clone_from(&started.task_id);
            }
            EventKind::ModelAction(action) => {
                if let Some(tool) = &action.tool_name {
                    self.tools.insert(tool.clone());
                }
            }
            EventKind::FinishGate(gate) => {
                if let Some(accepted) = gate.accepted {
                    self.verdict = Some(if accepted { "accepted" } else { "rejected" });
                }
            }
            _ => {}
        }
        if mode == RowMode::Timelines {
            self.timeline.push(TimelineStep::of(&event));
        }
    }

    /// Appends the later part of the same run.
    pub(crate) fn absorb_later(&mut self, later: RowState) {
        if self.task_id.is_none() {
            self.task_id = later.task_id;
        }
        for kind in later.error_kinds {
            if !self.error_kinds.contains(&kind) {
                self.error_kinds.push(kind);
            }
        }
        self.tools.extend(later.tools);
        if later.verdict.is_some() {
            self.verdict = later.verdict;
        }
        self.timeline.extend(later.timeline);
    }

    /// The finished row: how the fold saw the run end, its steps, its ending's error kind and
    /// its duration.
    pub(crate) fn finish(
        self,
        ending: RunOutcome,
        steps: u64,
        ending_kind: Option<&[u8]>,
        duration_ms: Option<f64>,
    ) -> RunRow {
        let mut error_kinds = Vec::with_capacity(self.error_kinds.len() + 1);
        if let Some(kind) = ending_kind {
            error_kinds.push(String::from_utf8_lossy(kind).into_owned());
        }
        for kind in self.error_kinds {
            if !error_kinds.contains(&kind) {
                error_kinds.push(kind);
            }
        }
        RunRow {
            file: self.file,
            run_id: self.run_id,
            task_id: self.task_id,
            ending,
            steps: u32::try_from(steps).unwrap_or(u32::MAX),
            error_kinds,
            tools: self.tools.into_iter().collect(),
            verdict: self.verdict.map(str::to_owned),
            source: "looptrace",
            duration_ms,
            divergence: None,
            timeline: self.timeline,
        }
    }
}
