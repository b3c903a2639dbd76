//! Integration tests: the library's public API and the built `looptrace` binary.

mod agent_loop;
mod bad_inputs;
mod content_safety;
mod differential;
mod disk_full;
mod eval;
mod eval_load;
mod faults;
mod finish_gate;
mod import;
mod json_adapter;
mod live_model;
mod live_model_server;
mod mcp;
mod properties;
mod real_traces;
mod replay;
mod report;
mod run_cli;
mod samples;
mod support;
mod tool_kinds;
mod tools;
mod traces;
