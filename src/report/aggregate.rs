//! Per-run state and the report's totals, built per chunk of input and merged in input order.
//!
//! Runs are keyed by `run_id` across all inputs. A chunk keeps, per run id, the run now open for
//! it. A run whose whole life lies in the chunk (it began there, with `run_started` or after an
//! earlier ending of the same id) is folded into the chunk's totals when it ends and forgotten.
//! Two kinds of partial runs leave the chunk as [`Piece`]s: the first part of an id that may
//! continue a run from earlier input, and every run still open at the end of the chunk. An id
//! whose first event in the chunk was `run_started` and that left no piece leaves a barrier: a
//! run of that id still open from earlier input ended there, incomplete. [`Merger`] takes chunk
//! results in input order and joins pieces by the same rules, so one file or many, one chunk or
//! many, give the same numbers.
//!
//! The rules, as if all inputs were one stream: `run_started` begins a new run (an open run of
//! the same id is then incomplete); an ending closes the run, and a later event of that id
//! begins a new one; a run never closed is `incomplete`. An observation without `tool_name`
//! belongs to the run's latest tool call.

use std::borrow::Cow;
use std::collections::hash_map::Entry;

use super::duration::DurationSketch;
use super::hash::{FastMap, Prehashed, PrehashedMap, fingerprint};
use super::histogram::Histogram;
use super::model::{
    BUDGETS, BudgetExhaustion, EndingCounts, FinishGateTotals, SpendStats, Verdicts,
};
use super::row_fold::{RowMode, RowState};
use super::rows::RunRow;
use super::spend::Spend;
use crate::run::{ExitReason, RunOutcome};
use crate::trace::{EventRef, EventRefKind, EventSpend};

/// A string taken from a trace: borrowed from the chunk while scanning, owned in pieces.
pub(crate) type Text<'a> = Cow<'a, [u8]>;

/// Counts keyed by a string.
pub(crate) type Counter<'a> = FastMap<Text<'a>, u64>;

/// The `error_kind` of an error recorded without one (older writers).
pub(crate) const UNCLASSIFIED: &[u8] = b"unclassified";

/// The tool of an observation with no `tool_name` and no earlier tool call in its run.
pub(crate) const UNKNOWN_TOOL: &[u8] = b"(unknown)";

/// Distinct unknown event types named one by one; the rest count as `(other)`.
const MAX_EVENT_TYPES: usize = 32;

fn bump<'a>(counter: &mut Counter<'a>, key: &Text<'a>, by: u64) {
    match counter.get_mut(key.as_ref()) {
        Some(count) => *count += by,
        None => {
            counter.insert(key.clone(), by);
        }
    }
}

fn counter_into_owned(counter: Counter<'_>) -> Counter<'static> {
    counter
        .into_iter()
        .map(|(key, count)| (Cow::Owned(key.into_owned()), count))
        .collect()
}

fn merge_counter(into: &mut Counter<'static>, from: Counter<'static>) {
    for (key, count) in from {
        *into.entry(key).or_default() += count;
    }
}

fn text_into_owned(text: Option<Text<'_>>) -> Option<Text<'static>> {
    text.map(|text| Cow::Owned(text.into_owned()))
}

/// Calls and error observations of one tool.
#[derive(Debug, Default, Clone)]
pub(crate) struct ToolTotals<'a> {
    /// `tool_call` model actions.
    pub calls: u64,
    /// Error observations.
    pub errors: u64,
    /// Error observations by `error_kind`.
    pub errors_by_kind: Counter<'a>,
    /// Observations whose writer recorded no error flag.
    pub unrecorded: u64,
}

/// Everything the report adds up; every part is a sum, so totals merge in any order.
#[derive(Debug, Default, Clone)]
pub(crate) struct Totals<'a> {
    /// Events read.
    pub events: u64,
    /// Runs per ending.
    pub endings: EndingCounts,
    /// Runs per ending per input index.
    pub by_file: FastMap<u32, EndingCounts>,
    /// Steps used per ending.
    pub steps: [Histogram; 5],
    /// The `max_steps_exceeded` runs.
    pub budget: BudgetExhaustion,
    /// Feedback events by `error_kind`.
    pub feedback_by_kind: Counter<'a>,
    /// `invalid_model_output` endings by `error_kind`.
    pub invalid_by_kind: Counter<'a>,
    /// `internal_error` endings by `error_kind`.
    pub internal_by_kind: Counter<'a>,
    /// Runs with at least one feedback event.
    pub runs_with_feedback: u64,
    /// Of those, the ones that ended `finished`.
    pub recovered: u64,
    /// Runs whose scores give a verdict, and those that passed.
    pub verdicts: Verdicts,
    /// Per tool.
    pub tools: FastMap<Text<'a>, ToolTotals<'a>>,
    /// Events of unknown types by `event_type`.
    pub unknown_types: Counter<'a>,
    /// The keys of `unknown_types` in the order first seen, so that the types named one by one
    /// are the first ones in input order.
    unknown_order: Vec<Text<'a>>,
    /// Runs with a finish gate, their rejections and attempts.
    pub finish_gate: FinishGateTotals,
    /// Tokens, cost and duration per ending.
    pub spend: [SpendStats; 5],
    /// Run durations per ending.
    pub durations: [DurationSketch; 5],
    /// The rows of the runs counted, with where each run first appeared, when rows are wanted.
    pub rows: Vec<((u64, u64), RunRow)>,
}

impl<'a> Totals<'a> {
    fn tool(&mut self, name: &Text<'a>) -> &mut ToolTotals<'a> {
        self.tools.entry(name.clone()).or_default()
    }

    /// Counts observations of `tool`; `is_error: None` where the writer recorded no outcome.
    fn observation(
        &mut self,
        tool: &Text<'a>,
        is_error: Option<bool>,
        kind: &Text<'a>,
        count: u64,
    ) {
        if is_error.is_none() {
            self.tool(tool).unrecorded += count;
        } else if is_error == Some(true) {
            let totals = self.tool(tool);
            totals.errors += count;
            bump(&mut totals.errors_by_kind, kind, count);
        }
    }

    fn unknown_type(&mut self, event_type: Text<'a>) {
        // Every type is counted in the chunk (at most one per line); the cap applies when the
        // chunks are merged in input order, so a named type is counted in every chunk.
        match self.unknown_types.get_mut(event_type.as_ref()) {
            Some(count) => *count += 1,
            None => {
                self.unknown_order.push(event_type.clone());
                self.unknown_types.insert(event_type, 1);
            }
        }
    }

    /// Credits observations that waited for their tool name to `tool`.
    fn resolve_pending(&mut self, pending: &mut Pending<'a>, tool: &Text<'a>) {
        for (kind, count) in pending.errors.drain(..) {
            self.observation(tool, Some(true), &kind, count);
        }
    }

    /// Adds a run that is over (ended, or known to be incomplete), and its row if it has one.
    fn fold(&mut self, run: &mut RunState<'a>) {
        let closing = run.closing.as_ref();
        let ending = closing.map_or(RunOutcome::Incomplete, |closing| closing.ending);
        let steps = closing
            .and_then(|closing| closing.steps_used)
            .or(run.max_step)
            .unwrap_or(0);
        self.endings.add(ending, 1);
        self.by_file.entry(run.file).or_default().add(ending, 1);
        self.steps[ending.index()].record(steps);
        let kind = || {
            closing
                .and_then(|closing| closing.error_kind.clone())
                .unwrap_or(Cow::Borrowed(UNCLASSIFIED))
        };
        match ending {
            RunOutcome::Ended(ExitReason::MaxStepsExceeded) => {
                let budget = closing.and_then(|closing| closing.budget.as_deref());
                let at = match budget {
                    None => 0,
                    Some(name) => BUDGETS
                        .iter()
                        .position(|known| known.as_bytes() == name)
                        .unwrap_or(BUDGETS.len() - 1),
                };
                self.budget.by_budget[at] += 1;
                self.budget.runs += 1;
                self.budget.tool_successes += run.successes;
                self.budget.tool_errors += run.tool_errors;
                self.budget.feedback += run.feedback;
            }
            RunOutcome::Ended(ExitReason::InvalidModelOutput) => {
                bump(&mut self.invalid_by_kind, &kind(), 1)
            }
            RunOutcome::Ended(ExitReason::InternalError) => {
                bump(&mut self.internal_by_kind, &kind(), 1)
            }
            RunOutcome::Ended(ExitReason::Finished) | RunOutcome::Incomplete => {}
        }
        let duration = run.spend.fold_into(&mut self.spend[ending.index()]);
        if let Some(ms) = duration {
            self.durations[ending.index()].record(ms);
        }
        if let Some(row) = run.row.take() {
            let ending_kind = closing.and_then(|closing| closing.error_kind.as_deref());
            let first = row.first;
            self.rows
                .push((first, row.finish(ending, steps, ending_kind, duration)));
        }
        if run.gate_checks > 0 {
            self.finish_gate.runs.add(ending, 1);
            self.finish_gate.rejections.add(ending, run.gate_rejections);
            *self
                .finish_gate
                .runs_by_attempts
                .entry(run.gate_checks)
                .or_default() += 1;
        }
        if let Some(passed) = closing.and_then(|closing| closing.verdict) {
            self.verdicts.runs += 1;
            self.verdicts.passed += u64::from(passed);
        }
        if run.feedback > 0 {
            self.runs_with_feedback += 1;
            if ending == RunOutcome::Ended(ExitReason::Finished) {
                self.recovered += 1;
            }
        }
    }

    /// The same totals owning their strings.
    pub(crate) fn into_owned(self) -> Totals<'static> {
        Totals {
            events: self.events,
            endings: self.endings,
            by_file: self.by_file,
            steps: self.steps,
            budget: self.budget,
            feedback_by_kind: counter_into_owned(self.feedback_by_kind),
            invalid_by_kind: counter_into_owned(self.invalid_by_kind),
            internal_by_kind: counter_into_owned(self.internal_by_kind),
            runs_with_feedback: self.runs_with_feedback,
            recovered: self.recovered,
            verdicts: self.verdicts,
            tools: self
                .tools
                .into_iter()
                .map(|(name, tool)| {
                    let tool = ToolTotals {
                        calls: tool.calls,
                        errors: tool.errors,
                        errors_by_kind: counter_into_owned(tool.errors_by_kind),
                        unrecorded: tool.unrecorded,
                    };
                    (Cow::Owned(name.into_owned()), tool)
                })
                .collect(),
            unknown_types: counter_into_owned(self.unknown_types),
            unknown_order: self
                .unknown_order
                .into_iter()
                .map(|name| Cow::Owned(name.into_owned()))
                .collect(),
            finish_gate: self.finish_gate,
            spend: self.spend,
            durations: self.durations,
            rows: self.rows,
        }
    }
}

impl Totals<'static> {
    /// Adds every total of `other`.
    pub(crate) fn merge(&mut self, other: Totals<'static>) {
        self.events += other.events;
        self.endings.merge(&other.endings);
        for (file, counts) in other.by_file {
            self.by_file.entry(file).or_default().merge(&counts);
        }
        for (mine, theirs) in self.steps.iter_mut().zip(&other.steps) {
            mine.merge(theirs);
        }
        self.budget.runs += other.budget.runs;
        for (mine, theirs) in self.budget.by_budget.iter_mut().zip(other.budget.by_budget) {
            *mine += theirs;
        }
        for (mine, theirs) in self.spend.iter_mut().zip(&other.spend) {
            mine.merge(theirs);
        }
        for (mine, theirs) in self.durations.iter_mut().zip(&other.durations) {
            mine.merge(theirs);
        }
        self.budget.tool_successes += other.budget.tool_successes;
        self.budget.tool_errors += other.budget.tool_errors;
        self.budget.feedback += other.budget.feedback;
        merge_counter(&mut self.feedback_by_kind, other.feedback_by_kind);
        merge_counter(&mut self.invalid_by_kind, other.invalid_by_kind);
        merge_counter(&mut self.internal_by_kind, other.internal_by_kind);
        self.runs_with_feedback += other.runs_with_feedback;
        self.recovered += other.recovered;
        self.verdicts.runs += other.verdicts.runs;
        self.verdicts.passed += other.verdicts.passed;
        self.rows.extend(other.rows);
        self.finish_gate.runs.merge(&other.finish_gate.runs);
        self.finish_gate
            .rejections
            .merge(&other.finish_gate.rejections);
        for (attempts, runs) in other.finish_gate.runs_by_attempts {
            *self
                .finish_gate
                .runs_by_attempts
                .entry(attempts)
                .or_default() += runs;
        }
        for (name, tool) in other.tools {
            let mine = self.tools.entry(name).or_default();
            mine.calls += tool.calls;
            mine.errors += tool.errors;
            mine.unrecorded += tool.unrecorded;
            merge_counter(&mut mine.errors_by_kind, tool.errors_by_kind);
        }
        for event_type in other.unknown_order {
            let count = other.unknown_types.get(&event_type).copied().unwrap_or(0);
            let named = self.unknown_order.len() < MAX_EVENT_TYPES
                || self.unknown_types.contains_key(&event_type);
            let key = if named {
                event_type
            } else {
                Cow::Borrowed(&b"(other)"[..])
            };
            if !self.unknown_types.contains_key(&key) {
                self.unknown_order.push(key.clone());
            }
            bump(&mut self.unknown_types, &key, count);
        }
    }
}

/// How a run was closed.
#[derive(Debug, Clone)]
pub(crate) struct Closing<'a> {
    ending: RunOutcome,
    error_kind: Option<Text<'a>>,
    steps_used: Option<u64>,
    budget: Option<Text<'a>>,
    verdict: Option<bool>,
}

/// Error observations waiting for the tool name of a tool call in earlier input.
#[derive(Debug, Default, Clone)]
pub(crate) struct Pending<'a> {
    /// Error counts by `error_kind` (few kinds, and rarely any: a list is smaller than a map).
    errors: Vec<(Text<'a>, u64)>,
}

impl<'a> Pending<'a> {
    fn add_error(&mut self, kind: Text<'a>) {
        match self.errors.iter_mut().find(|(known, _)| *known == kind) {
            Some((_, count)) => *count += 1,
            None => self.errors.push((kind, 1)),
        }
    }
}

/// What the report needs of one run, or of a part of one.
#[derive(Debug, Clone)]
pub(crate) struct RunState<'a> {
    /// Whether this part may continue a run from earlier input (no `run_started`, and the
    /// first part of its id in its chunk).
    continues: bool,
    /// The input of its latest event.
    file: u32,
    max_step: Option<u64>,
    successes: u64,
    tool_errors: u64,
    feedback: u64,
    gate_checks: u64,
    gate_rejections: u64,
    last_tool: Option<Text<'a>>,
    pending: Pending<'a>,
    closing: Option<Closing<'a>>,
    spend: Spend,
    /// Its row, when rows are wanted.
    row: Option<Box<RowState>>,
}

impl<'a> RunState<'a> {
    fn new(continues: bool, file: u32) -> Self {
        RunState {
            continues,
            file,
            max_step: None,
            successes: 0,
            tool_errors: 0,
            feedback: 0,
            gate_checks: 0,
            gate_rejections: 0,
            last_tool: None,
            pending: Pending::default(),
            closing: None,
            spend: Spend::default(),
            row: None,
        }
    }

    fn into_owned(self) -> RunState<'static> {
        RunState {
            continues: self.continues,
            file: self.file,
            max_step: self.max_step,
            successes: self.successes,
            tool_errors: self.tool_errors,
            feedback: self.feedback,
            gate_checks: self.gate_checks,
            gate_rejections: self.gate_rejections,
            last_tool: text_into_owned(self.last_tool),
            pending: Pending {
                errors: self
                    .pending
                    .errors
                    .into_iter()
                    .map(|(kind, n)| (Cow::Owned(kind.into_owned()), n))
                    .collect(),
            },
            closing: self.closing.map(|closing| Closing {
                ending: closing.ending,
                error_kind: text_into_owned(closing.error_kind),
                steps_used: closing.steps_used,
                budget: text_into_owned(closing.budget),
                verdict: closing.verdict,
            }),
            spend: self.spend,
            row: self.row,
        }
    }

    /// Applies one event; returns whether it closed the run.
    fn apply(
        &mut self,
        step: u64,
        kind: EventRefKind<'a>,
        spend: &EventSpend,
        totals: &mut Totals<'a>,
    ) -> bool {
        self.max_step = Some(self.max_step.map_or(step, |max| max.max(step)));
        // A judge's tokens are the evaluation's, not the run's.
        if !matches!(kind, EventRefKind::ScorerCall) {
            self.spend
                .add(spend, matches!(kind, EventRefKind::Ended { .. }));
        }
        match kind {
            EventRefKind::RunStarted | EventRefKind::OtherAction => {}
            EventRefKind::FinishGate { accepted } => {
                self.gate_checks += 1;
                self.gate_rejections += u64::from(!accepted);
            }
            EventRefKind::ToolCall { tool_name } => {
                let name = tool_name.unwrap_or(Cow::Borrowed(UNKNOWN_TOOL));
                totals.tool(&name).calls += 1;
                self.last_tool = Some(name);
            }
            EventRefKind::Observation {
                tool_name,
                is_error,
                recorded,
                error_kind,
            } => {
                if is_error {
                    self.tool_errors += 1;
                } else {
                    self.successes += 1;
                }
                let kind = error_kind.unwrap_or(Cow::Borrowed(UNCLASSIFIED));
                let outcome = recorded.then_some(is_error);
                match tool_name.as_ref().or(self.last_tool.as_ref()) {
                    Some(tool) => totals.observation(tool, outcome, &kind, 1),
                    None if self.continues => {
                        if is_error {
                            self.pending.add_error(kind);
                        }
                    }
                    None => totals.observation(&Cow::Borrowed(UNKNOWN_TOOL), outcome, &kind, 1),
                }
            }
            EventRefKind::ModelFeedback { error_kind } => {
                self.feedback += 1;
                bump(
                    &mut totals.feedback_by_kind,
                    &error_kind.unwrap_or(Cow::Borrowed(UNCLASSIFIED)),
                    1,
                );
            }
            EventRefKind::Ended {
                exit_reason,
                error_kind,
                steps_used,
                budget,
                verdict,
            } => {
                self.closing = Some(Closing {
                    ending: RunOutcome::Ended(exit_reason),
                    error_kind,
                    steps_used,
                    budget,
                    verdict,
                });
                return true;
            }
            EventRefKind::ModelRetry | EventRefKind::ScorerCall => {}
            EventRefKind::Unknown { event_type } => totals.unknown_type(event_type),
        }
        false
    }
}

/// A partial run that leaves its chunk, to be joined with the rest of its run by [`Merger`].
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    /// The fingerprint of its run id.
    key: u64,
    state: RunState<'static>,
}

/// The runs of one id within a chunk.
#[derive(Debug)]
struct Slot<'a> {
    run_id: Text<'a>,
    /// The fingerprint of `run_id`.
    key: u64,
    /// The run now open, if any: boxed, so that a slot stays small (one per run id in the
    /// chunk) and a closed run's state can serve the next run (`ChunkState::spare`).
    open: Option<Box<RunState<'a>>>,
    /// Whether the id's first event in the chunk was `run_started`: then whatever run of the id
    /// earlier input left open ended there, incomplete.
    fresh: bool,
}

/// The state of one chunk: its open runs and its totals.
#[derive(Debug)]
pub(crate) struct ChunkState<'a> {
    file: u32,
    /// The slot of each run id seen in the chunk, keyed with the id's fingerprint as its hash.
    index: PrehashedMap<Text<'a>, usize>,
    /// One per run id, in the order first seen.
    slots: Vec<Slot<'a>>,
    /// The first part of an id in the chunk that may continue earlier input, once closed, with
    /// its slot (at most one per id).
    heads: Vec<(usize, Box<RunState<'a>>)>,
    /// States of closed runs, to be reset for the next runs that open: most runs close within
    /// their chunk, and their states are reused rather than allocated and moved.
    #[expect(
        clippy::vec_box,
        reason = "a box passes between a slot and here without a copy"
    )]
    spare: Vec<Box<RunState<'a>>>,
    /// The slot of the latest event: most events follow one of their own run.
    last: Option<usize>,
    totals: Totals<'a>,
    /// Whether runs keep rows.
    rows: RowMode,
    /// Events applied so far.
    seen: u64,
}

/// Bytes of trace per run at the least, roughly, to size a chunk's map of runs up front: a
/// table that grows rehashes every id it holds, while room never used costs only its control
/// bytes (the slots are not touched). Summary traces of short runs take about a kilobyte a run.
const BYTES_PER_RUN: usize = 1024;

/// What a chunk leaves for the merge.
#[derive(Debug, Default)]
pub(crate) struct ChunkParts {
    /// The totals of the runs whose whole life lay in the chunk, and of its events.
    pub totals: Totals<'static>,
    /// Fingerprints of the run ids whose first event in the chunk was `run_started` and that
    /// left no piece: a run of theirs still open from earlier input is incomplete.
    pub barriers: Vec<u64>,
    /// The partial runs, in the order they must be merged per id.
    pub pieces: Vec<Piece>,
    /// Fingerprints and names of the run ids seen, when duplicates across files are looked for.
    pub run_ids: Vec<(u64, Vec<u8>)>,
}

impl<'a> ChunkState<'a> {
    /// An empty state for a chunk of `len` bytes of input number `file`, its runs keeping rows
    /// as `rows` says.
    pub(crate) fn new(file: u32, len: usize, rows: RowMode) -> Self {
        let runs = (len / BYTES_PER_RUN).clamp(4, 1 << 16);
        ChunkState {
            file,
            index: PrehashedMap::with_capacity_and_hasher(runs, Default::default()),
            slots: Vec::with_capacity(runs),
            heads: Vec::new(),
            spare: Vec::new(),
            last: None,
            totals: Totals::default(),
            rows,
            seen: 0,
        }
    }

    /// Applies one event of the chunk, in order; `line` is the line it was read from.
    pub(crate) fn apply(&mut self, event: EventRef<'a>, line: &[u8]) {
        let ChunkState {
            file,
            index,
            slots,
            heads,
            spare,
            last,
            totals,
            rows,
            seen,
        } = self;
        totals.events += 1;
        *seen += 1;
        let (at, first_in_chunk) = match *last {
            Some(at) if same_bytes(&slots[at].run_id, &event.run_id) => (at, false),
            _ => match index.entry(Prehashed {
                hash: fingerprint(&event.run_id),
                key: event.run_id,
            }) {
                Entry::Occupied(entry) => (*entry.get(), false),
                Entry::Vacant(entry) => {
                    let fresh = event.kind == EventRefKind::RunStarted;
                    slots.push(Slot {
                        run_id: entry.key().key.clone(),
                        key: entry.key().hash,
                        open: None,
                        fresh,
                    });
                    entry.insert(slots.len() - 1);
                    (slots.len() - 1, true)
                }
            },
        };
        *last = Some(at);
        let Slot { run_id, open, .. } = &mut slots[at];
        if event.kind == EventRefKind::RunStarted {
            if let Some(mut previous) = open.take() {
                // Closed, as incomplete: a head piece must not be taken for an open run.
                previous.closing = Some(Closing {
                    ending: RunOutcome::Incomplete,
                    error_kind: None,
                    steps_used: None,
                    budget: None,
                    verdict: None,
                });
                close(at, previous, heads, totals, spare);
            }
            *open = Some(fresh_state(spare, false, *file));
        }
        let run = open.get_or_insert_with(|| fresh_state(spare, first_in_chunk, *file));
        if *rows != RowMode::Off {
            run.row
                .get_or_insert_with(|| RowState::new(run_id, *file, *seen))
                .add_line(line, *rows);
        }
        if run.apply(event.step, event.kind, &event.spend, totals)
            && let Some(run) = open.take()
        {
            close(at, run, heads, totals, spare);
        }
    }

    /// The chunk's totals, barriers and pieces; with `collect_ids`, also its distinct run ids.
    pub(crate) fn finish(mut self, collect_ids: bool) -> ChunkParts {
        let mut pieces = Vec::new();
        // A head goes before the open run of its id; pieces of different ids are independent.
        for (at, state) in self.heads {
            pieces.push(Piece {
                key: self.slots[at].key,
                state: (*state).into_owned(),
            });
        }
        let mut barriers = Vec::new();
        let mut run_ids = Vec::new();
        for slot in &mut self.slots {
            let key = slot.key;
            if collect_ids {
                run_ids.push((key, slot.run_id.to_vec()));
            }
            match slot.open.take().map(|state| *state) {
                Some(state) => pieces.push(Piece {
                    key,
                    state: state.into_owned(),
                }),
                None if slot.fresh => barriers.push(key),
                None => {}
            }
        }
        ChunkParts {
            totals: self.totals.into_owned(),
            barriers,
            pieces,
            run_ids,
        }
    }
}

/// Byte equality without a call into `memcmp`, for the short run ids compared once per event.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut at = 0;
    while let (Some(x), Some(y)) = (a[at..].first_chunk::<8>(), b[at..].first_chunk::<8>()) {
        if x != y {
            return false;
        }
        at += 8;
    }
    a[at..].iter().zip(&b[at..]).all(|(x, y)| x == y)
}

/// A run that is over within its chunk: folded (its state kept for the next run), or kept as
/// the head piece if it may continue earlier input.
fn close<'a>(
    at: usize,
    mut run: Box<RunState<'a>>,
    heads: &mut Vec<(usize, Box<RunState<'a>>)>,
    totals: &mut Totals<'a>,
    spare: &mut Vec<Box<RunState<'a>>>,
) {
    if run.continues {
        heads.push((at, run));
    } else {
        totals.fold(&mut run);
        spare.push(run);
    }
}

/// The state of a run that opens: a spare one reset, or a new one.
fn fresh_state<'a>(
    spare: &mut Vec<Box<RunState<'a>>>,
    continues: bool,
    file: u32,
) -> Box<RunState<'a>> {
    match spare.pop() {
        Some(mut state) => {
            *state = RunState::new(continues, file);
            state
        }
        None => Box::new(RunState::new(continues, file)),
    }
}

/// A run left open between chunks, kept small: a run that never ends stays open until the end
/// of the input, since only then is it known to be incomplete.
#[derive(Debug, Clone)]
struct OpenRun {
    file: u32,
    /// An index into [`Merger::tool_names`].
    last_tool: Option<u32>,
    max_step: Option<u64>,
    successes: u64,
    tool_errors: u64,
    feedback: u64,
    gate_checks: u64,
    gate_rejections: u64,
    spend: Spend,
    /// Its row so far, when rows are wanted.
    row: Option<Box<RowState>>,
}

impl OpenRun {
    /// The run as a state to fold (as incomplete).
    fn into_state(self) -> RunState<'static> {
        RunState {
            max_step: self.max_step,
            successes: self.successes,
            tool_errors: self.tool_errors,
            feedback: self.feedback,
            gate_checks: self.gate_checks,
            gate_rejections: self.gate_rejections,
            spend: self.spend,
            row: self.row,
            ..RunState::new(false, self.file)
        }
    }
}

/// Joins chunk results in input order.
#[derive(Debug, Default)]
pub(crate) struct Merger {
    /// The runs open so far, by fingerprint of their run id (two ids sharing a 64-bit
    /// fingerprint while both open is too unlikely to matter).
    open: FastMap<u64, OpenRun>,
    /// The tools named by open runs' latest calls.
    tool_names: Vec<Vec<u8>>,
    tool_index: FastMap<Vec<u8>, u32>,
    totals: Totals<'static>,
    /// Chunks added so far: rows are placed by the chunk they first appeared in.
    chunks: u64,
}

impl Merger {
    /// Adds the next chunk's results.
    pub(crate) fn add(&mut self, mut parts: ChunkParts) {
        let chunk = self.chunks;
        self.chunks += 1;
        for (first, _) in &mut parts.totals.rows {
            first.0 = chunk;
        }
        for piece in &mut parts.pieces {
            if let Some(row) = &mut piece.state.row {
                row.first.0 = chunk;
            }
        }
        self.totals.merge(parts.totals);
        // Most runs lie within one chunk: their barriers only matter when a run is open.
        let barriers = if self.open.is_empty() {
            Vec::new()
        } else {
            parts.barriers
        };
        for key in barriers {
            if let Some(previous) = self.open.remove(&key) {
                self.totals.fold(&mut previous.into_state());
            }
        }
        for piece in parts.pieces {
            self.add_piece(piece);
        }
    }

    fn add_piece(&mut self, piece: Piece) {
        let Piece { key, mut state } = piece;
        let previous = self.open.remove(&key);
        if state.continues {
            let tool = match previous.as_ref().and_then(|previous| previous.last_tool) {
                Some(at) => Cow::Owned(self.tool_names[at as usize].clone()),
                None => Cow::Borrowed(UNKNOWN_TOOL),
            };
            self.totals.resolve_pending(&mut state.pending, &tool);
            if let Some(previous) = previous {
                state.max_step = match (previous.max_step, state.max_step) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                state.successes += previous.successes;
                state.tool_errors += previous.tool_errors;
                state.feedback += previous.feedback;
                state.gate_checks += previous.gate_checks;
                state.gate_rejections += previous.gate_rejections;
                state.spend.absorb_earlier(&previous.spend);
                if state.last_tool.is_none() && previous.last_tool.is_some() {
                    state.last_tool = Some(tool);
                }
                state.row = match (previous.row, state.row.take()) {
                    (Some(mut earlier), Some(later)) => {
                        earlier.absorb_later(*later);
                        Some(earlier)
                    }
                    (earlier, later) => earlier.or(later),
                };
            }
            state.continues = false;
        } else if let Some(previous) = previous {
            self.totals.fold(&mut previous.into_state());
        }
        if state.closing.is_some() {
            self.totals.fold(&mut state);
            return;
        }
        let last_tool = state
            .last_tool
            .map(|name| match self.tool_index.get(name.as_ref()) {
                Some(&at) => at,
                None => {
                    let at = self.tool_names.len() as u32;
                    self.tool_names.push(name.to_vec());
                    self.tool_index.insert(name.into_owned(), at);
                    at
                }
            });
        let open = OpenRun {
            file: state.file,
            last_tool,
            max_step: state.max_step,
            successes: state.successes,
            tool_errors: state.tool_errors,
            feedback: state.feedback,
            gate_checks: state.gate_checks,
            gate_rejections: state.gate_rejections,
            spend: state.spend,
            row: state.row,
        };
        self.open.insert(key, open);
    }

    /// Gives every input number `n` seen so far the number `to(n)`: runs folded before their
    /// inputs' places were known (an evaluation's, as they were written) take those places.
    pub(crate) fn renumber_inputs(&mut self, to: &dyn Fn(u32) -> u32) {
        let by_file = std::mem::take(&mut self.totals.by_file);
        self.totals.by_file = by_file.into_iter().map(|(n, e)| (to(n), e)).collect();
        for (_, row) in &mut self.totals.rows {
            row.file = to(row.file);
        }
        for run in self.open.values_mut() {
            run.file = to(run.file);
            if let Some(row) = &mut run.row {
                row.file = to(row.file);
            }
        }
    }

    /// The totals, with every run still open counted as incomplete.
    pub(crate) fn finish(mut self) -> Totals<'static> {
        for (_, run) in std::mem::take(&mut self.open) {
            self.totals.fold(&mut run.into_state());
        }
        self.totals
    }
}
