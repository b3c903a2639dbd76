//! Replay: rerun a recorded run and report whether it still comes out the same. The recorded model
//! turns are fed back through the agent loop ([`ReplayModel`]), tools run again
//! (live) or are served from the recording ([`RecordedTools`]), and every event of the rerun is
//! compared with the recording as it happens: observations by their summary hash and `is_error`,
//! tool names, the end of the recording, the exit reason and steps used, and recorded turns never
//! reached. The verdict is `faithful` or `diverged`, with each divergence shown side by side.
//! Replay needs full capture; `docs/replay.md` describes the command.

mod batch;
mod compare;
mod in_order;
mod model;
mod recorded_tools;
mod recording;
mod render;
mod run_ids;
mod runner;
mod verdict;
mod wire;

pub use batch::{
    ReplayObserver, ReplayOutcome, ReplayPlan, ReplayPlanError, ReplayRequest, file_name,
};
pub use compare::{STOPPED, STOPPED_KIND};
pub use in_order::{HELD_BYTES, InOrder};
pub use model::{RecordedResponses, RecordedTurn, ReplayError, ReplayModel, end_of_recording};
pub use recorded_tools::{NOT_RECORDED, RecordedTools, TOOL_MISMATCH};
pub use recording::{
    RecordedEnding, RecordedObservation, RecordedStep, Recording, ReplaySetupError,
};
pub use render::{
    CheckReport, ReplayReport, check_summary_line, json_runs_head, json_runs_tail,
    render_check_json, render_check_text, render_json, render_run_json, render_run_text,
    render_text, summary_line, write_json,
};
pub use run_ids::{RunIds, list_ids, times};
pub use runner::{
    ModelSource, OnDivergence, PreparedReplay, ReplayFailure, ReplayOptions, ReplayRunError,
    ToolMode, ToolSource, replay_run,
};
pub use verdict::{
    Divergence, DivergenceKind, Ending, NotCompared, RunCheck, RunReplay, STOPPED_OUTCOME, Verdict,
};
pub use wire::{JsonDifference, WireSettings, first_difference, is_live};
