//! The agent loop: ask the model, run what it proposes through the tool runtime, keep the history,
//! enforce the step budget, and tell observers about every event as it happens.

mod events;
mod run_loop;

pub use events::{NoObserver, RunEvent, RunObserver};
pub use run_loop::{
    AgentError, InternalError, RunError, RunOptions, run_agent, run_agent_result,
    run_agent_with_gate,
};
