//! Agent tasks: a suite task whose `agent` is a command (mini-swe-agent, an SDK loop, any agent
//! that takes a model base URL) does the task instead of looptrace's loop. Each attempt gets a
//! proxy of its own in-process: the agent's model calls go through it to the task's model
//! server, with the real key added there (the agent holds a placeholder), and become the task's
//! run in the evaluation's traces; with `eval --replay-models` they are answered from an
//! earlier evaluation's run of the same row instead, offline. The run's end is judged from the
//! recording and the command's exit status and timeout. `docs/suite-format.md` (`agent`)
//! describes the format, `docs/proxy.md` the replay workflow.

mod attempt;
mod command;
mod ending;
mod facts;
mod options;
mod placeholders;
mod recordings;
mod trace;

pub use attempt::{AttemptOutcome, AttemptSpec, run_attempt};
pub use command::{AgentCommand, DEFAULT_TIMEOUT, SET_VARS, refused_name};
pub use ending::{CommandEnd, Verdict, judge};
pub use facts::RunFacts;
pub use options::AgentOptions;
pub use placeholders::{NAMES as PLACEHOLDERS, Values, check as check_placeholders};
pub use recordings::ModelRecordings;
pub use trace::{RunLabel, write_ending};
