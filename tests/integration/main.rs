//! Integration tests: the library's public API and the built `looptrace` binary.

mod agent_loop;
mod eval;
mod json_adapter;
mod replay;
mod run_cli;
mod samples;
mod support;
mod tools;
mod traces;
