//! Integration tests: the library's public API and the built `looptrace` binary.

mod agent_loop;
mod json_adapter;
mod replay;
mod run_cli;
mod support;
mod tools;
mod samples;
mod traces;
mod eval;
