//! The agent loop: ask the model, run what it proposes through the tool runtime, keep the history,
//! enforce the step budget, and tell observers about every event as it happens.

mod events;
mod run_loop;

pub use events::{NoObserver, RunEvent, RunObserver};
pub use run_loop::{
    AgentError, CONTEXT_EXHAUSTED, InternalError, Limits, RunError, RunOptions, STEPS_EXHAUSTED,
    TIME_EXHAUSTED, TOKENS_EXHAUSTED, run_agent, run_agent_result, run_agent_with,
    run_agent_with_gate, run_agent_with_limits,
};
